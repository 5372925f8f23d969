"""Finite differences and gradient checking.

``numerical_grad`` estimates a derivative with central differences of step ``h`` (the
argument ``eps``),

    f'(x) ~ (f(x + h) - f(x - h)) / (2 h),

whose truncation error shrinks like h**2 (a forward difference only shrinks like h).
``gradcheck`` compares an automatic-differentiation gradient with that estimate: the
standard test that a new backward rule is right.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_lib.scalar import Value

__all__ = ["GradcheckError", "numerical_grad", "gradcheck", "register_array_engine"]


class GradcheckError(AssertionError):
    """The AD gradient and the finite-difference gradient disagree."""


def numerical_grad(f: Callable[[Any], Any], x: float | np.ndarray, eps: float = 1e-6) -> float | np.ndarray:
    """Central-difference gradient of a scalar function ``f`` at ``x``.

    ``x`` is a number (returns a float) or an ndarray (returns an array of the same
    shape: element ``i`` is the derivative of ``f`` with respect to ``x[i]``, found by
    nudging that element alone). Costs two calls of ``f`` per element.
    """
    if isinstance(x, np.ndarray):
        x = x.astype(np.float64)
        grad = np.empty_like(x)
        for index in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[index] += eps
            minus[index] -= eps
            grad[index] = (_scalar_output(f(plus)) - _scalar_output(f(minus))) / (2 * eps)
        return grad
    if isinstance(x, numbers.Real):
        x = float(x)
        return (_scalar_output(f(x + eps)) - _scalar_output(f(x - eps))) / (2 * eps)
    raise TypeError(f"numerical_grad() needs x to be a number or a NumPy array, got {type(x).__name__}.")


def _scalar_output(out: Any) -> float:
    if np.size(out) != 1:
        raise ValueError(
            f"numerical_grad() needs f to return a scalar, but f returned shape {np.shape(out)}: "
            "reduce the output first (for example with .sum())."
        )
    return float(np.asarray(out).reshape(()))


Evaluate = Callable[[Callable[..., Any], Sequence[Any], bool], tuple[float, list]]
"""An engine's way to evaluate ``f`` at ``inputs``: its value and, if asked, the gradients."""

_array_engine: list[Evaluate] = []
"""The engine for array inputs: :mod:`course_lib.tensor` registers itself here when imported
(a scalar module never imports a tensor one)."""


def register_array_engine(evaluate: Evaluate) -> None:
    """Make ``gradcheck`` on arrays use ``evaluate`` (called once, by :mod:`course_lib.tensor`)."""
    _array_engine[:] = [evaluate]


def _value_and_grads(f: Callable[..., Any], inputs: Sequence[Any], with_grads: bool = True) -> tuple[float, list]:
    """Evaluate ``f`` at ``inputs`` with an AD engine: its value and (optionally) the
    gradient with respect to every input.

    This is the one place that chooses the engine: numbers go through ``scalar.Value``,
    arrays through the engine registered for them (``Tensor``).
    """
    if all(isinstance(x, numbers.Real) for x in inputs):
        leaves = [Value(x) for x in inputs]
        out = f(*leaves)
        if isinstance(out, numbers.Real):  # f ignores its inputs: every gradient is 0
            return float(out), [0.0] * len(leaves)
        if not isinstance(out, Value):
            raise TypeError(f"gradcheck() needs f to return a Value (or a number), got {type(out).__name__}.")
        if with_grads:
            out.backward()
        return out.data, [leaf.grad for leaf in leaves]
    if any(isinstance(x, np.ndarray) for x in inputs):
        if not _array_engine:
            raise TypeError("gradcheck() on arrays needs the Tensor engine: import course_lib.tensor first.")
        return _array_engine[0](f, inputs, with_grads)
    kinds = ", ".join(type(x).__name__ for x in inputs)
    raise TypeError(f"gradcheck() takes numbers as inputs, got: {kinds}.")


def gradcheck(f: Callable[..., Any], *inputs: Any, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Check AD gradients of ``f`` against central differences at ``inputs``.

    For number inputs ``f`` receives ``Value`` objects and returns a ``Value``. Passes
    when ``|ad - numerical| <= atol + rtol * |numerical|`` for every input (and every
    element); returns ``True`` or raises :class:`GradcheckError` naming the worst entry.
    """
    if not inputs:
        raise TypeError("gradcheck() needs at least one input, e.g. gradcheck(f, 2.0).")
    _, ad_grads = _value_and_grads(f, inputs)
    worst: tuple | None = None  # (excess over the tolerance, input index, element, ad, numerical)
    for i, x in enumerate(inputs):

        def f_i(xi: Any, i: int = i) -> float:
            shifted = list(inputs)
            shifted[i] = xi
            return _value_and_grads(f, shifted, with_grads=False)[0]

        ad = np.asarray(ad_grads[i], dtype=np.float64)
        num = np.asarray(numerical_grad(f_i, x, eps), dtype=np.float64)
        excess = np.abs(ad - num) - (atol + rtol * np.abs(num))
        excess = np.where(np.isnan(excess), np.inf, excess)  # a NaN gradient always fails
        element = np.unravel_index(np.argmax(excess), excess.shape)
        if worst is None or excess[element] > worst[0]:
            worst = (excess[element], i, element, ad[element], num[element])
    assert worst is not None  # there is at least one input
    excess, i, element, ad, num = worst
    if excess > 0:
        where = f"input {i}" + (f", element {tuple(int(k) for k in element)}" if element else "")
        raise GradcheckError(
            f"gradcheck failed at {where}: AD gradient {ad:.10g}, numerical gradient {num:.10g}, "
            f"error {abs(ad - num):.3g} > atol + rtol*|numerical| = {atol + rtol * abs(num):.3g}. "
            "Check the backward rule of the operations this input flows through."
        )
    return True
