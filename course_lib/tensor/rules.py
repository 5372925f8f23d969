"""The VJP rules of every Tensor op, registered once in the op table.

A VJP rule for argument ``i`` of an op is a function ``rule(g, out, *args)``: ``g`` is
the gradient arriving at the op's output ``out`` and ``args`` are the op's parents
followed by its parameters; it returns ``g`` pulled back to argument ``i`` (a Tensor of
that argument's shape). Rules are written with Tensor operations, so the backward pass
(``course_lib.tensor.backprop``) can either run them with recording switched off (the fast
path of ``backward()``) or record them like any other computation, which is what makes
higher derivatives work. A rule registered as first-order (``order=1``, written with
NumPy) is differentiated once; differentiating its result again raises.

Each ``defvjp`` row names the op's forward too: the Tensor method of the op's name unless
``call=`` says otherwise, so an op's forward and its VJP are found in one row of the
table. How the test suite samples and checks each op lives with the tests
(``tests/engine/op_samples.py``), not here.
"""

from __future__ import annotations

import operator
from functools import partial
from typing import Any

import numpy as np

from course_lib.tensor.combine import affine, stack, where
from course_lib.tensor.core import Tensor, record
from course_lib.tensor.table import defvjp, defvjp_argnum

__all__ = ["unbroadcast"]


def unbroadcast(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape``: the VJP of broadcasting.

    Broadcasting copies a value along the leading axes it adds and along axes where
    ``shape`` has size 1; each copy sends back a gradient, so those axes are summed.
    """
    g_shape = g.shape
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g_shape[lead + i] != 1)
    return g.sum(axis=axes).reshape(shape)


def _kept_shape(shape: tuple[int, ...], axis: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """``shape`` after a reduction over ``axis`` with ``keepdims=True``."""
    if axis is None:
        return (1,) * len(shape)
    axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _expand(g: Tensor, shape: tuple[int, ...], axis: Any, keepdims: bool) -> Tensor:
    """Undo a reduction's shape: put the reduced axes back (size 1), then broadcast to ``shape``."""
    if not keepdims:
        g = g.reshape(_kept_shape(shape, axis))
    return g.broadcast_to(shape)


def _max_vjp(g: Tensor, out: Tensor, a: Tensor, axis: Any, keepdims: bool) -> Tensor:
    peak = out if keepdims else out.reshape(_kept_shape(a.shape, axis))
    hits = a.ge(peak)  # a <= peak everywhere, so this marks the maxima
    return _expand(g, a.shape, axis, keepdims) * (hits / hits.sum(axis=axis, keepdims=True))


def _matmul_vjp(argnum: int, g: Tensor, out: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """dA = G Bᵀ and dB = Aᵀ G, on the last two axes, summed over broadcast batch axes.

    A 1-D left operand acts as a row (1, k) and a 1-D right operand as a column (k, 1);
    ``g`` gets the matching size-1 axis back first.
    """
    if a.ndim == 1 or b.ndim == 1:
        shape = g.shape + (1,) if b.ndim == 1 else g.shape
        shape = shape[:-1] + (1,) + shape[-1:] if a.ndim == 1 else shape
        g = g.reshape(shape)
        a, b = (a.reshape(1, -1) if a.ndim == 1 else a), (b.reshape(-1, 1) if b.ndim == 1 else b)
    if argnum == 0:
        return unbroadcast(g @ b.mT, a.shape).reshape(out._parents[0].shape)
    return unbroadcast(a.mT @ g, b.shape).reshape(out._parents[1].shape)


def _pow_vjp_base(g: Tensor, out: Tensor, a: Tensor, b: Tensor) -> Tensor:
    if not b.requires_grad and not b.data.any():
        # a ** 0 is constant. (The formula would give 0 * a ** -1: NaN at a = 0, which is
        # where the third derivative of x ** 2 lands, since its second one is 2 * x ** 0.)
        return record("", np.zeros(a.shape), ())
    return unbroadcast(g * b * a ** (b - 1), a.shape)


def _stack_vjp(i: int, g: Tensor, out: Tensor, *args: Any) -> Tensor:
    axis = args[-1]  # args: the stacked tensors, then the axis
    return g[(slice(None),) * axis + (i,)]


def _first_order_vjp(i: int, g: Tensor, out: Tensor, *args: Any) -> Tensor:
    raise RuntimeError(
        f"op {args[-1]!r} has a first-order VJP rule (registered with order=1, or a rule that returns a NumPy "
        "array): its gradient can be computed but not differentiated again, so this second derivative (or "
        "jvp) is not available. Write the rule with Tensor operations to get higher derivatives"
    )


def _scatter_add(g: Tensor, index: Any, shape: tuple[int, ...]) -> Tensor:
    """A zero array of ``shape`` with ``g`` added at ``index`` (repeated indices add up)."""
    data = np.zeros(shape)
    np.add.at(data, index, g._data)
    return record("scatter_add", data, (g,), (index, shape))


defvjp("add", lambda g, out, a, b: unbroadcast(g, a.shape), lambda g, out, a, b: unbroadcast(g, b.shape))
defvjp("sub", lambda g, out, a, b: unbroadcast(g, a.shape), lambda g, out, a, b: unbroadcast(-g, b.shape))
defvjp("mul", lambda g, out, a, b: unbroadcast(g * b, a.shape), lambda g, out, a, b: unbroadcast(g * a, b.shape))
defvjp(
    "div",
    lambda g, out, a, b: unbroadcast(g / b, a.shape),
    lambda g, out, a, b: unbroadcast(-g * out / b, b.shape),
    call=operator.truediv,
)
defvjp("pow", _pow_vjp_base, lambda g, out, a, b: unbroadcast(g * out * a.log(), b.shape))
defvjp("matmul", partial(_matmul_vjp, 0), partial(_matmul_vjp, 1))
defvjp(
    "affine",
    lambda g, out, x, weight, bias: _matmul_vjp(0, g, out, x, weight),
    lambda g, out, x, weight, bias: _matmul_vjp(1, g, out, x, weight),
    lambda g, out, x, weight, bias: unbroadcast(g, bias.shape),
    call=affine,
)
defvjp("neg", lambda g, out, a: -g)
defvjp("exp", lambda g, out, a: g * out, function=True)
defvjp("log", lambda g, out, a: g / a, function=True)
defvjp("sin", lambda g, out, a: g * a.cos(), function=True)
defvjp("cos", lambda g, out, a: -g * a.sin(), function=True)
defvjp("tanh", lambda g, out, a: g * (1.0 - out * out), function=True)
defvjp("sigmoid", lambda g, out, a: g * out * (1.0 - out), function=True)
defvjp("relu", lambda g, out, a: g * out.sign(), function=True)  # sign(relu(a)) is the mask a > 0
defvjp("sqrt", lambda g, out, a: g / (2.0 * out), function=True)
defvjp("abs", lambda g, out, a: g * a.sign())
defvjp("sign", lambda g, out, a: g * 0.0, function=True)
defvjp("clip", lambda g, out, a, low, high: g * (a.ge(low) * (-a).ge(-high)))
defvjp("ge", lambda g, out, a, b: unbroadcast(g * 0.0, a.shape), lambda g, out, a, b: unbroadcast(g * 0.0, b.shape))
defvjp(
    "where",
    lambda g, out, x, y, cond: unbroadcast(where(cond, g, 0.0), x.shape),
    lambda g, out, x, y, cond: unbroadcast(where(cond, 0.0, g), y.shape),
    call=lambda x, y, cond: where(cond, x, y),
)
defvjp("sum", lambda g, out, a, axis, keepdims: _expand(g, a.shape, axis, keepdims))
defvjp("mean", lambda g, out, a, axis, keepdims: _expand(g, a.shape, axis, keepdims) * (out.size / max(a.size, 1)))
defvjp("max", _max_vjp)
defvjp("softmax", lambda g, out, a, axis: out * (g - (g * out).sum(axis=axis, keepdims=True)), function=True)
defvjp("log_softmax", lambda g, out, a, axis: g - out.exp() * g.sum(axis=axis, keepdims=True), function=True)
defvjp("reshape", lambda g, out, a: g.reshape(a.shape), call=lambda a, shape: a.reshape(shape))
defvjp("transpose", lambda g, out, a, axes: g.transpose(*np.argsort(axes)), call=lambda a, axes: a.transpose(axes))
defvjp("broadcast_to", lambda g, out, a: unbroadcast(g, a.shape), call=lambda a, shape: a.broadcast_to(shape))
defvjp("getitem", lambda g, out, a, index: _scatter_add(g, index, a.shape), call=lambda a, index: a[index])
defvjp("scatter_add", lambda g, out, src, index, shape: g[index], call=_scatter_add)
defvjp("identity", lambda g, out, a: g, call=lambda a: record("identity", a._data, (a,)))
# A stop-gradient, recorded only while tracing (detach(), no_grad()): the backward sweep passes no gradient through it.
defvjp("detach", call=lambda a: a.detach())
defvjp_argnum("stack", _stack_vjp, call=lambda *parts, axis: stack(parts, axis=axis))
defvjp_argnum("first_order", _first_order_vjp)
