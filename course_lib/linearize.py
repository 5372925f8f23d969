"""Reverse mode as forward mode, transposed.

:func:`linearize` runs a program forward with *JVP rules* (``JVP[op]``): the primal
values are computed, and only the tangent computation is traced, so the result is a
*linear* program from input tangents to output tangents. :func:`transpose` runs a
linear program backwards: every equation of it is a linear op with one linear argument
(or several, added), and the transpose of a linear op is its VJP, the op table's rule.
``transpose(linearize(f, x))`` applied to 1 is the gradient of ``f`` at ``x``: the
same numbers as the gradient program, found without a single reverse-mode rule written
for the purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from course_lib.program import SHAPE_PARAMS, Atom, Program, Var, call_op, evaluate
from course_lib.tensor import OPS, Tensor, no_grad, record
from course_lib.tensor.gather import integer_tensor
from course_lib.trace import Tracer, make_program

__all__ = ["JVP", "LINEAR", "linearize", "transpose"]

Jvp = Callable[[list[Tensor], list[Tensor], Tensor, tuple], Tensor]
"""A JVP rule: ``rule(primals, tangents, out, params)``, the tangent of the output
(linear in the tangents; primals and ``out`` are known values)."""


def _mask(condition: np.ndarray) -> Tensor:
    return record("", condition.astype(np.float64), ())


def _max_jvp(p: list[Tensor], t: list[Tensor], out: Tensor, params: tuple) -> Tensor:
    axis, keepdims = params
    hits = p[0]._data == p[0]._data.max(axis=axis, keepdims=True)
    return (t[0] * _mask(hits / hits.sum(axis=axis, keepdims=True))).sum(axis=axis, keepdims=keepdims)


def _linear_jvp(op: str, p: list[Tensor], t: list[Tensor], out: Tensor, params: tuple) -> Tensor:
    """A linear op's JVP: the op itself, applied to the tangents."""
    return call_op(op, t, params)


def _zero(t: Tensor) -> bool:
    """Whether a tangent is a known zero (a constant's, made by :func:`_tangents`, not traced)."""
    return type(t) is not Tracer


def _pow_jvp(p: list[Tensor], t: list[Tensor], out: Tensor, params: tuple) -> Tensor:
    """The base's term, and the exponent's unless its tangent is a known zero: ``0 * log(x)``
    would be NaN at ``x <= 0``, where ``x ** 2.0`` has the tangent ``2 x``."""
    base = t[0] * p[1] * p[0] ** (p[1] - 1.0)
    return base if _zero(t[1]) else base + t[1] * out * p[0].log()


def _div_jvp(p: list[Tensor], t: list[Tensor], out: Tensor, params: tuple) -> Tensor:
    """As for pow: the divisor's term only when its tangent is not a known zero (``0 * inf``)."""
    numerator = t[0] / p[1]
    return numerator if _zero(t[1]) else numerator - t[1] * out / p[1]


LINEAR = (
    "add", "sub", "neg", "sum", "mean", "reshape", "transpose", "broadcast_to",
    "getitem", "scatter_add", "identity", "stack", "where",
)  # fmt: skip
"""Ops linear in all their Tensor arguments together (``mul``, ``div`` and ``matmul`` are
linear in each argument alone: a linear program feeds a tangent to one and a constant to the other)."""

JVP: dict[str, Jvp] = {
    **{op: partial(_linear_jvp, op) for op in LINEAR},
    "mul": lambda p, t, out, params: t[0] * p[1] + p[0] * t[1],
    "div": _div_jvp,
    "pow": _pow_jvp,
    "matmul": lambda p, t, out, params: t[0] @ p[1] + p[0] @ t[1],
    "affine": lambda p, t, out, params: t[0] @ p[1] + p[0] @ t[1] + t[2],
    "exp": lambda p, t, out, params: t[0] * out,
    "log": lambda p, t, out, params: t[0] / p[0],
    "sin": lambda p, t, out, params: t[0] * p[0].cos(),
    "cos": lambda p, t, out, params: -t[0] * p[0].sin(),
    "tanh": lambda p, t, out, params: t[0] * (1.0 - out * out),
    "sigmoid": lambda p, t, out, params: t[0] * (out * (1.0 - out)),
    "relu": lambda p, t, out, params: t[0] * out.sign(),
    "sqrt": lambda p, t, out, params: t[0] / (2.0 * out),
    "abs": lambda p, t, out, params: t[0] * p[0].sign(),
    "sign": lambda p, t, out, params: t[0] * 0.0,
    "ge": lambda p, t, out, params: t[0] * 0.0 + t[1] * 0.0,
    "detach": lambda p, t, out, params: t[0] * 0.0,
    "clip": lambda p, t, out, params: t[0] * _mask((p[0]._data >= params[0]) & (p[0]._data <= params[1])),
    "max": _max_jvp,
    # Linear in the Tensor argument; the integer index arguments stay as they are.
    "take": lambda p, t, out, params: call_op("take", [t[0], *p[1:]], params),
    "put": lambda p, t, out, params: call_op("put", [t[0], *p[1:]], params),
    "softmax": lambda p, t, out, params: out * (t[0] - (t[0] * out).sum(axis=params[0], keepdims=True)),
    "log_softmax": lambda p, t, out, params: t[0] - (t[0] * out.exp()).sum(axis=params[0], keepdims=True),
}
"""op name -> its JVP rule, written with Tensor operations."""


def _tangents(program: Program, primals: list[np.ndarray], tangents: list[Tensor]) -> list[Tensor]:
    """The output tangents of ``program`` at ``primals`` in the directions ``tangents``
    (a closed-over Tensor is a constant: its tangent is zero)."""
    values: dict[int, Tensor] = {
        id(v): record("", x, ()) if v.dtype == "f64" else integer_tensor(x) for v, x in zip(program.inputs, primals)
    }
    values.update((id(v), record("", c._data, ())) for v, c in zip(program.constvars, program.consts))
    dots: dict[int, Tensor] = {id(v): t for v, t in zip(program.inputs, tangents)}

    def dot(x: Atom) -> Tensor:
        known = dots.get(id(x)) if isinstance(x, Var) else None
        return record("", np.zeros(x.shape), ()) if known is None else known

    for e in program.equations:
        args = [values[id(a)] if isinstance(a, Var) else record("", a, ()) for a in e.args]
        with no_grad():
            out = call_op(e.op, args, e.params)
        rule = JVP.get(e.op)
        if rule is None:
            raise NotImplementedError(f"linearize: op {e.op!r} has no JVP rule: add one to course_lib.linearize.JVP")
        values[id(e.out)], dots[id(e.out)] = out, rule(args, [dot(a) for a in e.args], out, e.params)
    return [dot(o) for o in program.outputs]


def _primal(a: Any) -> np.ndarray:
    """An argument of :func:`linearize` as the float64 array it is linearised at."""
    if isinstance(a, Tensor):
        return a._data
    if isinstance(a, (float, np.floating)) or (isinstance(a, np.ndarray) and a.dtype.kind == "f"):
        return np.asarray(a, dtype=np.float64)
    raise TypeError(
        f"linearize takes Tensors, float arrays or floats, one per argument of f; got a {type(a).__name__} "
        "(a container, or a static value such as an int: bind it first, e.g. linearize(partial(f, n=3), x))"
    )


def linearize(f: Callable[..., Any], *args: Any) -> tuple[list[np.ndarray], Program]:
    """``f``'s outputs at ``args`` and its linear program: tangents of the inputs -> tangents of the outputs."""
    primals = [_primal(a) for a in args]
    program = make_program(f, *primals)
    linear = make_program(lambda *ts: _tangents(program, primals, list(ts)), *[np.zeros(p.shape) for p in primals])
    return evaluate(program, *primals), linear


def _placeholder(x: Atom) -> Tensor:
    """A linear argument's stand-in: only its shape is read by a linear op's transpose."""
    return record("", np.zeros(x.shape), ()) if isinstance(x, Var) else record("", x, ())


def _linear_use(e: Any, linear: set[int]) -> bool:
    """Whether equation ``e`` is linear in the arguments that depend on the program's inputs
    (``linear``: their ids); raises if it is not linear in them."""
    uses = [i for i, a in enumerate(e.args) if id(a) in linear]
    if not uses:
        return False
    if e.op in LINEAR or (e.op in ("mul", "matmul") and len(uses) == 1) or (e.op == "div" and uses == [0]):
        return True
    if e.op == "affine" and uses != [0, 1] and uses[:2] != [0, 1]:
        return True
    raise ValueError(
        f"transpose needs a linear program, but op {e.op!r} is applied to a value that depends on the inputs "
        "in a way that is not linear (as jax.linear_transpose, it refuses rather than give a wrong answer)"
    )


def _pulled(cotangents: list[Tensor], linear: Program) -> list[Tensor]:
    """The linear program run backwards: the cotangents of its inputs."""
    depends = {id(v) for v in linear.inputs}
    values: dict[int, Tensor] = {id(v): record("", c._data, ()) for v, c in zip(linear.constvars, linear.consts)}
    for e in linear.equations:  # forward: which values are linear, and the others' values
        if _linear_use(e, depends):
            depends.add(id(e.out))
        else:
            values[id(e.out)] = call_op(e.op, [_value(a, values) for a in e.args], e.params)
    cts: dict[int, Tensor] = {}
    for o, c in zip(linear.outputs, cotangents):
        if id(o) in depends:  # an output appearing twice gets both cotangents
            cts[id(o)] = c if id(o) not in cts else cts[id(o)] + c
    for e in reversed(linear.equations):
        ct = cts.pop(id(e.out), None)
        if ct is None:
            continue
        args = [record("", np.zeros(a.shape), ()) if id(a) in depends else _value(a, values) for a in e.args]
        out = record("", np.zeros(e.out.shape), ())
        out._parents = tuple(args)  # the matmul rule reads its arguments' shapes from the output's node
        for i, a in enumerate(e.args):
            if id(a) in depends:
                params = () if e.op in SHAPE_PARAMS else e.params
                contribution = OPS[e.op].rules[i](ct, out, *args, *params)
                cts[id(a)] = contribution if id(a) not in cts else cts[id(a)] + contribution
    return [cts.get(id(v), record("", np.zeros(v.shape), ())) for v in linear.inputs]


def _value(a: Atom, values: dict[int, Tensor]) -> Tensor:
    """The value of an argument that does not depend on the inputs (a constant)."""
    return values[id(a)] if isinstance(a, Var) else record("", a, ())


def transpose(linear: Program) -> Program:
    """The transposed program: cotangents of the outputs -> cotangents of the inputs."""
    shapes = [np.zeros(o.shape) for o in linear.outputs]
    return make_program(lambda *cts: _pulled(list(cts), linear), *shapes)
