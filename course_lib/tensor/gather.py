"""Indexing with integer arrays that are data: ``take`` and its VJP ``put``.

``x[index]`` records ``getitem`` with the index as a parameter: a fixed part of the node.
When the index holds integer arrays that are *values* of a traced program (class labels
passed to a jitted or vmapped function), the program must read them at every run, so
they are arguments of the op instead: ``take(a, *parts; template)`` is ``a[index]`` where
``index`` is ``template`` with each :class:`Slot` ``k`` filled by ``parts[k]``. Its VJP is
``put``: zeros with the gradient added at the same positions (repeated positions add up),
whose own VJP is ``take`` again. The integer parts get no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_lib.tensor.core import Tensor, constant, record
from course_lib.tensor.table import defvjp_argnum

__all__ = ["Slot", "take", "put", "integer_tensor", "filled", "advanced"]


class Slot:
    """The place of argument ``k + 1`` of ``take``/``put`` (an integer array) in the index."""

    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k

    def __eq__(self, other: object) -> bool:
        return type(other) is Slot and other.k == self.k

    def __hash__(self) -> int:
        return hash((Slot, self.k))

    def __repr__(self) -> str:
        return f"arg{self.k + 1}"


def integer_tensor(values: Any) -> Tensor:
    """A Tensor holding an integer array as it is (an index for ``take``; it never requires grad)."""
    out = constant(0.0)
    out._data = np.array(values, copy=True)
    return out


def filled(template: tuple, parts: list[Any]) -> tuple:
    """``template`` with each :class:`Slot` replaced by its array from ``parts``."""
    return tuple(parts[t.k] if type(t) is Slot else t for t in template)


def advanced(t: Any) -> bool:
    """Whether an entry of an index is an advanced one (an array, or an integer beside arrays)."""
    return type(t) is Slot or (isinstance(t, (np.ndarray, int, np.integer)) and not isinstance(t, bool))


def take(a: Tensor, *parts_and_template: Any) -> Tensor:
    """``a[index]``, the index being ``template`` filled with the integer Tensors ``parts``."""
    *parts, template = parts_and_template
    return record("take", a._data[filled(template, [p._data for p in parts])], (a, *parts), (template,))


def put(g: Tensor, *parts_template_shape: Any) -> Tensor:
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated positions add up): the VJP of ``take``."""
    *parts, template, shape = parts_template_shape
    data = np.zeros(shape)
    np.add.at(data, filled(template, [p._data for p in parts]), g._data)
    return record("put", data, (g, *parts), (template, shape))


def _take_vjp(i: int, g: Tensor, out: Tensor, a: Tensor, *rest: Any) -> Tensor:
    if i:
        raise TypeError("take: an integer index has no gradient")  # never reached: it requires no grad
    return put(g, *rest, a.shape)


def _put_vjp(i: int, g: Tensor, out: Tensor, src: Tensor, *rest: Any) -> Tensor:
    if i:
        raise TypeError("put: an integer index has no gradient")
    return take(g, *rest[:-1])


defvjp_argnum("take", _take_vjp, call=take)
defvjp_argnum("put", _put_vjp, call=put)
