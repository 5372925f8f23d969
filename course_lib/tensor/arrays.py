"""Checks on the arrays that go into Tensors, with errors that say what to do.

Nothing here knows a Tensor: these helpers take and return NumPy arrays and shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["broadcasting", "matmul", "real_array", "checked_axes"]


def broadcasting(symbol: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable:
    """``fn`` with an error that says what to do when the operands' shapes do not broadcast."""

    def apply(a: Any, b: Any) -> np.ndarray:
        try:
            return fn(a, b)
        except ValueError:
            if _broadcastable(np.shape(a), np.shape(b)):
                raise
            raise ValueError(
                f"shapes {np.shape(a)} and {np.shape(b)} do not broadcast for '{symbol}': axes are matched "
                "from the right and each pair must be equal or 1; reshape an operand so they line up "
                "(e.g. x[:, None] for a column, x.reshape(1, -1) for a row)"
            ) from None

    return apply


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(m == n or 1 in (m, n) for m, n in zip(a[::-1], b[::-1]))


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``, or an error that says which axes do not fit."""
    try:
        return np.matmul(a, b)
    except ValueError:
        pass
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"matmul needs operands with at least one axis, got shapes {a.shape} and {b.shape}: "
            "use * to scale by a number"
        )
    inner = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if a.shape[-1] != inner:
        which = "first" if b.ndim == 1 else "second-to-last"
        raise ValueError(
            f"matmul shapes {a.shape} and {b.shape} do not fit: the last axis of the left operand "
            f"({a.shape[-1]}) must equal the {which} axis of the right operand ({inner})"
        )
    raise ValueError(
        f"matmul shapes {a.shape} and {b.shape} do not fit: "
        f"their batch axes {a.shape[:-2]} and {b.shape[:-2]} do not broadcast"
    )


def real_array(data: Any, where: str) -> np.ndarray:
    """``data`` as an array of real numbers (bool, integer or float), or a clear TypeError."""
    array = np.asarray(data)
    if array.dtype.kind not in "biuf":
        kind = "complex numbers" if array.dtype.kind == "c" else f"{type(data).__name__} (dtype {array.dtype})"
        raise TypeError(
            f"{where} needs real numbers (numbers, nested lists or real arrays), got {kind}"
            + (
                ": pass the real and imaginary parts as separate Tensors"
                if array.dtype.kind == "c"
                else ": convert text with float(...) first"
                if array.dtype.kind in "US"
                else ""
            )
        )
    return array


def checked_axes(axis: Any, ndim: int, op: str) -> Any:
    """``axis`` (None, an int or a tuple of ints) checked against ``ndim`` axes, negative ones
    counted from the end; out of range is an error, never wrapped around."""
    if axis is None:
        return None
    for a in axis if isinstance(axis, tuple) else (axis,):
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise np.exceptions.AxisError(
                f"{op}: axis {a!r} is out of range for a Tensor with {ndim} axes (use 0..{ndim - 1} or -{ndim}..-1)"
            )
    return axis
