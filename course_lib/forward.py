"""Forward mode with dual numbers.

A :class:`Dual` carries a value (``primal``) and a directional derivative
(``tangent``) through a computation; every operation applies the chain rule to the
tangent as it computes the value. ``derivative`` and ``jvp`` seed the inputs' tangents
and read the output's tangent.

Nesting (a derivative inside a function that is itself differentiated) needs care: the
inner call must not mistake the outer call's perturbation for its own, the bug known as
*perturbation confusion*. So each ``derivative``/``jvp`` call makes a fresh *tag*, and
every Dual carries the tag of the call that created it. Tags grow with each call, so
the larger tag is always the inner level. When two Duals with different tags meet, the
one with the smaller (outer) tag is a constant for the inner level; it lives on inside
the inner Dual's ``primal`` and ``tangent``, which may themselves be Duals of outer levels.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Union

__all__ = ["Dual", "sin", "cos", "exp", "log", "tanh", "jvp", "derivative"]

Scalar = Union["Dual", float]
_fresh_tags = itertools.count(1)  # tag 0: a Dual you make yourself, the outermost level


class Dual:
    """``primal + tangent·ε`` with ε² = 0, at perturbation level ``tag``."""

    __slots__ = ("primal", "tangent", "tag")
    primal: Scalar
    tangent: Scalar
    tag: int

    def __init__(self, primal: Scalar, tangent: Scalar = 0.0, tag: int = 0) -> None:
        for part in (primal, tangent):
            if isinstance(part, Dual):
                if part.tag >= tag:
                    raise TypeError(
                        "a Dual's primal and tangent must be numbers: nested Duals come from "
                        "nesting derivative() or jvp() calls."
                    )
            elif not isinstance(part, (float, numbers.Real)):
                raise TypeError(f"Dual() takes numbers, got {type(part).__name__}.")
        self.primal = primal
        self.tangent = tangent
        self.tag = tag

    def __repr__(self) -> str:
        tag = f", tag={self.tag}" if self.tag else ""
        return f"Dual({self.primal!r}, {self.tangent!r}{tag})"

    # Each rule (_add, _sub, ... below) is written once for two operands, either of which
    # may be a plain number, so x + 2 and 2 + x share it.
    def __add__(self, other: Scalar) -> Dual:
        return _add(self, other) if _is_operand(other) else NotImplemented

    def __radd__(self, other: float) -> Dual:
        return _add(other, self) if _is_operand(other) else NotImplemented

    def __sub__(self, other: Scalar) -> Dual:
        return _sub(self, other) if _is_operand(other) else NotImplemented

    def __rsub__(self, other: float) -> Dual:
        return _sub(other, self) if _is_operand(other) else NotImplemented

    def __mul__(self, other: Scalar) -> Dual:
        return _mul(self, other) if _is_operand(other) else NotImplemented

    def __rmul__(self, other: float) -> Dual:
        return _mul(other, self) if _is_operand(other) else NotImplemented

    def __truediv__(self, other: Scalar) -> Dual:
        return _div(self, other) if _is_operand(other) else NotImplemented

    def __rtruediv__(self, other: float) -> Dual:
        return _div(other, self) if _is_operand(other) else NotImplemented

    def __pow__(self, other: Scalar) -> Dual:
        return _pow(self, other) if _is_operand(other) else NotImplemented

    def __rpow__(self, other: float) -> Dual:
        return _pow(other, self) if _is_operand(other) else NotImplemented

    def __neg__(self) -> Dual:
        return Dual(-self.primal, -self.tangent, self.tag)

    # ---- elementary functions: value and chain rule ------------------------------------

    def sin(self) -> Dual:
        return Dual(sin(self.primal), cos(self.primal) * self.tangent, self.tag)

    def cos(self) -> Dual:
        return Dual(cos(self.primal), -sin(self.primal) * self.tangent, self.tag)

    def exp(self) -> Dual:
        value = exp(self.primal)
        return Dual(value, value * self.tangent, self.tag)

    def log(self) -> Dual:
        return Dual(log(self.primal), self.tangent / self.primal, self.tag)

    def tanh(self) -> Dual:
        value = tanh(self.primal)
        return Dual(value, (1 - value * value) * self.tangent, self.tag)


def _is_operand(x: object) -> bool:
    return isinstance(x, (Dual, numbers.Real))


def _level(a: Scalar, b: Scalar) -> int:
    """The innermost perturbation level among two operands."""
    return max(a.tag if isinstance(a, Dual) else 0, b.tag if isinstance(b, Dual) else 0)


def _split(x: Scalar, tag: int) -> tuple[Scalar, Scalar]:
    """``x`` as (primal, tangent) at level ``tag``: anything else is a constant there."""
    if isinstance(x, Dual) and x.tag == tag:
        return x.primal, x.tangent
    return x, 0.0


# The rules: split both operands at the innermost level, then apply the chain rule.


def _add(x: Scalar, y: Scalar) -> Dual:
    tag = _level(x, y)
    (a, da), (b, db) = _split(x, tag), _split(y, tag)
    return Dual(a + b, da + db, tag)


def _sub(x: Scalar, y: Scalar) -> Dual:
    tag = _level(x, y)
    (a, da), (b, db) = _split(x, tag), _split(y, tag)
    return Dual(a - b, da - db, tag)


def _mul(x: Scalar, y: Scalar) -> Dual:
    tag = _level(x, y)
    (a, da), (b, db) = _split(x, tag), _split(y, tag)
    return Dual(a * b, da * b + a * db, tag)


def _div(x: Scalar, y: Scalar) -> Dual:
    tag = _level(x, y)
    (a, da), (b, db) = _split(x, tag), _split(y, tag)
    q = a / b
    return Dual(q, (da - q * db) / b, tag)  # (a/b)' = (a' - (a/b) b') / b


def _pow(x: Scalar, y: Scalar) -> Dual:
    tag = _level(x, y)
    (a, da), (b, db) = _split(x, tag), _split(y, tag)
    value = _real_power(a, b)
    if isinstance(db, numbers.Real) and db == 0:  # exponent constant at this level: power rule
        return Dual(value, b * _real_power(a, b - 1) * da, tag)
    return Dual(value, value * (db * log(a) + b * da / a), tag)  # a**b = exp(b log a)


def _real_power(a: Scalar, b: Scalar) -> Scalar:
    value = a**b
    if isinstance(value, complex):
        raise ValueError(f"{a} ** {b} is not a real number: a negative base needs an integer exponent.")
    return value


# The elementary functions for numbers and Duals alike (a Dual's parts may be Duals).


def sin(x: Scalar) -> Scalar:
    """``sin`` of a number, or of a Dual (carrying its tangent along)."""
    return x.sin() if isinstance(x, Dual) else math.sin(x)


def cos(x: Scalar) -> Scalar:
    """``cos`` of a number, or of a Dual (carrying its tangent along)."""
    return x.cos() if isinstance(x, Dual) else math.cos(x)


def exp(x: Scalar) -> Scalar:
    """``exp`` of a number, or of a Dual (carrying its tangent along)."""
    return x.exp() if isinstance(x, Dual) else math.exp(x)


def log(x: Scalar) -> Scalar:
    """``log`` of a positive number, or of a Dual (carrying its tangent along)."""
    if isinstance(x, Dual):
        return x.log()
    if x <= 0:
        raise ValueError(f"log() needs a positive input, got {x}.")
    return math.log(x)


def tanh(x: Scalar) -> Scalar:
    """``tanh`` of a number, or of a Dual (carrying its tangent along)."""
    return x.tanh() if isinstance(x, Dual) else math.tanh(x)


# ---- derivatives ------------------------------------------------------------------------


def jvp(f: Callable[..., Scalar], primals: Sequence[Scalar], tangents: Sequence[Scalar]) -> tuple[Scalar, Scalar]:
    """Evaluate ``f(*primals)`` and its derivative in the direction ``tangents`` in one pass.

    Same convention as ``jax.jvp``: ``f`` takes positional arguments, ``primals`` and
    ``tangents`` are tuples of the same length, and the result is
    ``(f(*primals), J · tangents)``, as floats (as Duals of the outer level when nested).
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp() takes primals and tangents as tuples, e.g. jvp(f, (2.0,), (1.0,)).")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp() got {len(primals)} primals but {len(tangents)} tangents: give one tangent per primal.")
    for name, values in (("primals", primals), ("tangents", tangents)):
        for value in values:
            if not _is_operand(value):
                raise TypeError(f"jvp() needs numbers as {name}, got {type(value).__name__}.")
    tag = next(_fresh_tags)
    out = f(*(Dual(p, t, tag) for p, t in zip(primals, tangents)))
    value, tangent = _read(out, tag, "jvp")
    return _plain(value), _plain(tangent)


def derivative(f: Callable[[Scalar], Scalar], x: Scalar) -> Scalar:
    """d f / d x at ``x`` for a function of one variable: one forward pass, seed 1.

    Returns a float, or a Dual of the outer level when called inside another
    ``derivative`` (so ``derivative(lambda x: derivative(f, x), x0)`` is f'' at x0).
    """
    if not _is_operand(x):
        raise TypeError(f"derivative() needs a number x, got {type(x).__name__}.")
    tag = next(_fresh_tags)
    _, tangent = _read(f(Dual(x, 1.0, tag)), tag, "derivative")
    return _plain(tangent)


def _read(out: Scalar, tag: int, caller: str) -> tuple[Scalar, Scalar]:
    """The value and the tangent of level ``tag`` in ``f``'s output."""
    if isinstance(out, Dual):
        if out.tag > tag:
            raise RuntimeError(
                f"the output of f carries the perturbation of a {caller}() call that has already "
                "returned: a Dual escaped from an inner call (stored in a variable outside f?)."
            )
        return _split(out, tag)
    if isinstance(out, numbers.Real):  # f does not depend on its inputs
        return out, 0.0
    raise TypeError(f"{caller}() needs f to return a number or a Dual, got {type(out).__name__}.")


def _plain(x: Scalar) -> Scalar:
    return x if isinstance(x, Dual) else float(x)
