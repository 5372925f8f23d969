"""The op table of the Tensor engine: every op's vector-Jacobian products, registered once.

A VJP rule for argument ``i`` of an op is a function ``rule(g, out, *args)``: ``g`` is
the gradient arriving at the op's output ``out`` and ``args`` are the op's parents
followed by its parameters; it returns ``g`` pulled back to argument ``i`` (a Tensor of
that argument's shape). Rules are written with Tensor operations, so the backward pass
(:mod:`course_lib.sweep`) can either run them with recording switched off (the fast
path of ``backward()``) or record them like any other computation, which is what makes
higher derivatives work. A rule registered as first-order (``order=1``, written with
NumPy) is differentiated once; differentiating its result again raises.

Each row of the table also says how to call the op, what inputs to test it on and what
PyTorch calls it, so ``tests/engine/test_ops.py`` checks every registered op by itself.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from course_lib.tensor import Tensor, affine, record, stack, where

__all__ = ["OPS", "VJP_RULES", "Op", "defvjp", "defvjp_argnum", "unbroadcast", "elementwise", "reduction", "along_axis"]


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


Sample = Callable[[np.random.Generator], tuple[list[np.ndarray], dict[str, Any]]]
"""Draws test inputs of an op: its argument arrays and its keyword parameters."""


class Op:
    """One row of the op table :data:`OPS`: everything the engine and its tests know about an op.

    - ``rules``: the VJP, ``rules[i](g, out, *parents, *params)`` for argument ``i``;
    - ``order``: ``None`` for rules written with Tensor operations (differentiable to any
      order), ``1`` for rules written with NumPy (differentiable once; a second
      derivative through them raises);
    - ``call(*tensors, **params)``: applies the op, as a user would;
    - ``sample(rng)``: random inputs from the op's domain, for the tests;
    - ``torch``: PyTorch's counterpart for the oracle test, a function name or
      ``f(torch, *tensors, **params)``; ``None`` when PyTorch has none.
    """

    __slots__ = ("name", "rules", "order", "call", "sample", "torch")

    def __init__(
        self,
        name: str,
        rules: Any,
        order: int | None,
        call: Callable[..., Tensor] | None,
        sample: Sample | None,
        torch: str | Callable | None,
    ) -> None:
        self.name, self.rules, self.order, self.call, self.sample, self.torch = name, rules, order, call, sample, torch

    def __repr__(self) -> str:
        return f"Op({self.name!r}" + (", order=1)" if self.order == 1 else ")")


OPS: dict[str, Op] = {}
"""op name -> :class:`Op`. A rule returns ``g`` itself, a view of ``g`` or a new Tensor,
never one it keeps elsewhere (the backward pass adds into new ones in place)."""
VJP_RULES = OPS
"""The op table under the name the chapters use for it (the same dict as :data:`OPS`)."""


def defvjp(
    op: str,
    *rules: Callable[..., Tensor],
    order: int | None = None,
    call: Callable[..., Tensor] | None = None,
    sample: Sample | None = None,
    torch: str | Callable | None = "",
) -> None:
    """Register ``op`` in the table: its VJP rules, one per argument, in argument order.

    ``order=1`` declares rules written with NumPy (first derivatives only). ``call``
    defaults to the Tensor method or ``operator`` module's function of that name, ``sample`` to
    arguments that broadcast against each other with values in [-2, 2], and ``torch`` to
    PyTorch's function of the same name. Every registered op is checked by the op-table
    test (gradients, second derivatives, PyTorch), so a wrong rule cannot go unnoticed.
    """
    _register(op, rules, order, call, sample or elementwise(*[(-2.0, 2.0)] * len(rules)), torch)


def _register(
    op: str,
    rules: Any,
    order: int | None,
    call: Callable[..., Tensor] | None,
    sample: Sample | None,
    torch: str | Callable | None,
) -> None:
    call = call or getattr(Tensor, op, None) or getattr(operator, op, None)
    OPS[op] = Op(op, rules, order, call, sample, op if torch == "" else torch)


class _EveryArgument:
    """The rules of an op with any number of arguments: argument ``i`` uses ``rule(i, g, out, *args)``."""

    def __init__(self, rule: Callable[..., Tensor]) -> None:
        self.rule = rule

    def __getitem__(self, i: int) -> Callable[..., Tensor]:
        return partial(self.rule, i)


def defvjp_argnum(
    op: str,
    rule: Callable[..., Tensor],
    order: int | None = None,
    call: Callable[..., Tensor] | None = None,
    sample: Sample | None = None,
    torch: str | Callable | None = "",
) -> None:
    """Register one rule ``rule(i, g, out, *args)`` serving every argument ``i`` of ``op``
    (an op with any number of arguments); the keywords are those of :func:`defvjp`."""
    _register(op, _EveryArgument(rule), order, call, sample, torch)


# ----------------------------------------------------------------------------- test domains
def _shape(rng: np.random.Generator, min_dims: int = 0, max_dims: int = 3) -> tuple[int, ...]:
    return tuple(int(n) for n in rng.integers(1, 4, rng.integers(min_dims, max_dims + 1)))


def elementwise(*ranges: tuple[float, float]) -> Sample:
    """Arguments whose shapes broadcast against each other (leading axes left out, axes of
    size 1), argument ``i`` uniform in ``ranges[i]``."""

    def sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        full = _shape(rng)
        arrays = []
        for k, (low, high) in enumerate(ranges):
            shape = (
                full
                if k == 0
                else tuple(1 if rng.random() < 0.3 else n for n in full[rng.integers(0, len(full) + 1) :])
            )
            arrays.append(rng.uniform(low, high, shape))
        return arrays, {}

    return sample


def _random_axis(rng: np.random.Generator, ndim: int) -> int | tuple[int, ...] | None:
    """None, one axis (maybe negative) or a tuple of distinct axes of an array with ``ndim`` axes."""
    kind = rng.integers(0, 3)
    if kind == 0 or ndim == 0:
        return None
    if kind == 1:
        return int(rng.integers(-ndim, ndim))
    return tuple(int(a) for a in rng.choice(ndim, rng.integers(1, ndim + 1), replace=False))


def reduction(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One array, an axis (None, one or several) and keepdims."""
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {
        "axis": _random_axis(rng, len(shape)),
        "keepdims": bool(rng.integers(0, 2)),
    }


def along_axis(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One array and one axis (softmax and friends)."""
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {"axis": int(rng.integers(-len(shape), len(shape)))}


def _matmul_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, k, m, batch = (int(v) for v in rng.integers(1, 4, 4))
    a_shape, b_shape = [
        ((k,), (k, m)),
        ((n, k), (k,)),
        ((n, k), (k, m)),
        ((batch, n, k), (k, m)),
        ((batch, n, k), (1, k, m)),
        ((k,), (batch, k, m)),
    ][rng.integers(0, 6)]
    return [rng.uniform(-2.0, 2.0, a_shape), rng.uniform(-2.0, 2.0, b_shape)], {}


def _affine_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, k, m = (int(v) for v in rng.integers(1, 4, 3))
    x_shape = (n, k) if rng.integers(0, 2) else (k,)
    return [rng.uniform(-2.0, 2.0, s) for s in (x_shape, (k, m), (m,))], {}


def _reshape_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {"shape": (-1,) if rng.integers(0, 2) else shape[::-1]}


def _transpose_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng, 2)
    return [rng.uniform(-2.0, 2.0, shape)], {"axes": tuple(int(a) for a in rng.permutation(len(shape)))}


def _broadcast_to_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    target = (2,) + _shape(rng, 1)
    shape = tuple(1 if rng.random() < 0.5 else n for n in target[1:])
    return [rng.uniform(-2.0, 2.0, shape)], {"shape": target}


def _index(rng: np.random.Generator, shape: tuple[int, int]) -> Any:
    """An index into an array of ``shape``: repeated integers, a slice, a mask or a mix."""
    kind = rng.integers(0, 4)
    if kind == 0:
        return (rng.integers(0, shape[0], 4),)  # repeats: their gradients add up
    if kind == 1:
        return (slice(1, None), rng.integers(0, shape[1], 2))
    if kind == 2:
        return (rng.random(shape) < 0.5,)
    return (int(rng.integers(0, shape[0])), slice(None, None, 2))


def _getitem_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = (3, 4)
    return [rng.uniform(-2.0, 2.0, shape)], {"index": _index(rng, shape)}


def _scatter_add_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = (3, 4)
    index = _index(rng, shape)
    return [rng.uniform(-2.0, 2.0, np.zeros(shape)[index].shape)], {"index": index, "shape": shape}


def _where_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    arrays, _ = elementwise((-2.0, 2.0), (-2.0, 2.0))(rng)
    return arrays, {"cond": rng.random(arrays[0].shape) < 0.5}


def _stack_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng)
    return [rng.uniform(-2.0, 2.0, shape) for _ in range(rng.integers(1, 4))], {
        "axis": int(rng.integers(-len(shape) - 1, len(shape) + 1))
    }


def _torch_axis(a: Any, axis: Any) -> Any:
    """PyTorch's ``dim`` for a NumPy ``axis`` (``None``: every axis)."""
    return tuple(range(a.ndim)) if axis is None else axis


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
    peak = out.data if keepdims else out.data.reshape(_kept_shape(a.shape, axis))
    hits = a.data == peak
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
    sample=elementwise((-2.0, 2.0), (0.5, 2.0)),
)
defvjp(
    "pow",
    _pow_vjp_base,
    lambda g, out, a, b: unbroadcast(g * out * a.log(), b.shape),
    sample=elementwise((0.5, 2.0), (-2.0, 2.0)),
)
defvjp("matmul", partial(_matmul_vjp, 0), partial(_matmul_vjp, 1), sample=_matmul_sample)
defvjp(
    "affine",
    lambda g, out, x, weight, bias: _matmul_vjp(0, g, out, x, weight),
    lambda g, out, x, weight, bias: _matmul_vjp(1, g, out, x, weight),
    lambda g, out, x, weight, bias: unbroadcast(g, bias.shape),
    call=affine,
    sample=_affine_sample,
    torch=lambda torch, x, weight, bias: x @ weight + bias,
)
defvjp("neg", lambda g, out, a: -g)
defvjp("exp", lambda g, out, a: g * out)
defvjp("log", lambda g, out, a: g / a, sample=elementwise((0.1, 4.0)))
defvjp("sin", lambda g, out, a: g * a.cos())
defvjp("cos", lambda g, out, a: -g * a.sin())
defvjp("tanh", lambda g, out, a: g * (1.0 - out * out))
defvjp("sigmoid", lambda g, out, a: g * out * (1.0 - out))
defvjp("relu", lambda g, out, a: g * (a.data > 0))
defvjp("sqrt", lambda g, out, a: g / (2.0 * out), sample=elementwise((0.1, 4.0)))
defvjp("abs", lambda g, out, a: g * np.sign(a.data))
defvjp(
    "clip",
    lambda g, out, a, low, high: g * ((a.data >= low) & (a.data <= high)),
    sample=lambda rng: (elementwise((-2.0, 2.0))(rng)[0], {"low": -1.0, "high": 0.5}),
    torch=lambda torch, a, low, high: torch.clamp(a, low, high),
)
defvjp(
    "where",
    lambda g, out, x, y, cond: unbroadcast(where(cond, g, 0.0), x.shape),
    lambda g, out, x, y, cond: unbroadcast(where(cond, 0.0, g), y.shape),
    call=lambda x, y, cond: where(cond, x, y),
    sample=_where_sample,
    torch=lambda torch, x, y, cond: torch.where(torch.as_tensor(cond), x, y),
)
defvjp(
    "sum",
    lambda g, out, a, axis, keepdims: _expand(g, a.shape, axis, keepdims),
    sample=reduction,
    torch=lambda torch, a, axis, keepdims: torch.sum(a, dim=_torch_axis(a, axis), keepdim=keepdims),
)
defvjp(
    "mean",
    lambda g, out, a, axis, keepdims: _expand(g, a.shape, axis, keepdims) * (out.size / max(a.size, 1)),
    sample=reduction,
    torch=lambda torch, a, axis, keepdims: torch.mean(a, dim=_torch_axis(a, axis), keepdim=keepdims),
)
defvjp(
    "max",
    _max_vjp,
    sample=reduction,
    torch=lambda torch, a, axis, keepdims: torch.amax(a, dim=_torch_axis(a, axis), keepdim=keepdims),
)
defvjp(
    "softmax",
    lambda g, out, a, axis: out * (g - (g * out).sum(axis=axis, keepdims=True)),
    sample=along_axis,
    torch=lambda torch, a, axis: torch.softmax(a, dim=axis),
)
defvjp(
    "log_softmax",
    lambda g, out, a, axis: g - out.exp() * g.sum(axis=axis, keepdims=True),
    sample=along_axis,
    torch=lambda torch, a, axis: torch.log_softmax(a, dim=axis),
)
defvjp(
    "reshape",
    lambda g, out, a: g.reshape(a.shape),
    call=lambda a, shape: a.reshape(shape),
    sample=_reshape_sample,
    torch=lambda torch, a, shape: a.reshape(shape),
)
defvjp(
    "transpose",
    lambda g, out, a, axes: g.transpose(*np.argsort(axes)),
    call=lambda a, axes: a.transpose(axes),
    sample=_transpose_sample,
    torch=lambda torch, a, axes: a.permute(axes),
)
defvjp(
    "broadcast_to",
    lambda g, out, a: unbroadcast(g, a.shape),
    call=lambda a, shape: a.broadcast_to(shape),
    sample=_broadcast_to_sample,
    torch=lambda torch, a, shape: a.broadcast_to(shape),
)
defvjp(
    "getitem",
    lambda g, out, a, index: _scatter_add(g, index, a.shape),
    call=lambda a, index: a[index],
    sample=_getitem_sample,
    torch=lambda torch, a, index: a[tuple(torch.as_tensor(i) if isinstance(i, np.ndarray) else i for i in index)],
)
defvjp(
    "scatter_add", lambda g, out, src, index, shape: g[index], call=_scatter_add, sample=_scatter_add_sample, torch=None
)
defvjp("identity", lambda g, out, a: g, call=lambda a: record("identity", a._data, (a,)), torch=None)
defvjp_argnum(
    "stack",
    _stack_vjp,
    call=lambda *parts, axis: stack(parts, axis=axis),
    sample=_stack_sample,
    torch=lambda torch, *parts, axis: torch.stack(parts, dim=axis),
)
defvjp_argnum("first_order", _first_order_vjp, torch=None)  # wraps the results of order=1 rules
