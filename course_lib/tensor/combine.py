"""Ops of several Tensors, as functions: ``where``, ``stack`` and ``affine``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from course_lib.tensor.arrays import checked_axes, matmul
from course_lib.tensor.core import Tensor, _lift, record
from course_lib.tensor.grad_mode import _tracing

__all__ = ["where", "stack", "affine"]


def where(condition: Any, x: Any, y: Any) -> Tensor:
    """``x`` where ``condition`` holds, else ``y`` (broadcast like ``np.where``).

    ``condition`` is a boolean array (it is not differentiated); ``x`` and ``y`` are
    Tensors or numbers.
    """
    if isinstance(condition, Tensor) and _tracing.get() is not None:
        _tracing.get().condition(condition)
    cond = np.array(condition._data if isinstance(condition, Tensor) else condition, dtype=bool)
    x, y = _lift(x), _lift(y)
    if x is NotImplemented or y is NotImplemented:
        raise TypeError("where(condition, x, y) needs x and y to be Tensors, numbers or real arrays")
    return record("where", np.where(cond, x._data, y._data), (x, y), (cond,))


def stack(tensors: Iterable[Any], axis: int = 0) -> Tensor:
    """Join equally shaped Tensors along a new axis (like ``np.stack``)."""
    parts = tuple(_lift(t) for t in tensors)
    if not parts or any(p is NotImplemented for p in parts):
        raise TypeError("stack() needs a non-empty sequence of Tensors (or numbers / real arrays)")
    axis = checked_axes(axis, parts[0].ndim + 1, "stack") % (parts[0].ndim + 1)
    return record("stack", np.stack([p._data for p in parts], axis=axis), parts, (axis,))


def affine(x: Any, weight: Any, bias: Any) -> Tensor:
    """``x @ weight + bias`` as one op, like PyTorch's ``addmm``: the bias is added in place
    into the product's fresh buffer, so the graph gets one node and one array fewer.
    Its VJP is the matmul's for ``x`` and ``weight`` and the add's for ``bias``."""
    x, weight, bias = _lift(x), _lift(weight), _lift(bias)
    if x is NotImplemented or weight is NotImplemented or bias is NotImplemented:
        raise TypeError("affine(x, weight, bias) needs Tensors, numbers or real arrays")
    data = matmul(x._data, weight._data)
    if np.ndim(data) and np.broadcast_shapes(data.shape, bias._data.shape) == data.shape:
        data += bias._data
    else:  # the bias has more axes than the product, or the product is a number
        data = data + bias._data
    return record("affine", data, (x, weight, bias))
