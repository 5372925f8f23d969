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
from course_lib.trace import make_program

__all__ = ["JVP", "LINEAR", "linearize", "transpose"]

Jvp = Callable[[list[Tensor], list[Tensor], Tensor, tuple], Tensor]
"""A JVP rule: ``rule(primals, tangents, out, params)``, the tangent of the output
(linear in the tangents; primals and ``out`` are known values)."""


def _mask(condition: np.ndarray) -> Tensor:
    return record("", condition.astype(np.float64), ())


def _linear_jvp(op: str, p: list[Tensor], t: list[Tensor], out: Tensor, params: tuple) -> Tensor:
    """A linear op's JVP: the op itself, applied to the tangents."""
    return call_op(op, t, params)


def _max_jvp(p: list[Tensor], t: list[Tensor], out: Tensor, params: tuple) -> Tensor:
    axis, keepdims = params
    hits = p[0]._data == p[0]._data.max(axis=axis, keepdims=True)
    return (t[0] * _mask(hits / hits.sum(axis=axis, keepdims=True))).sum(axis=axis, keepdims=keepdims)


LINEAR = (
    "add", "sub", "neg", "sum", "mean", "reshape", "transpose", "broadcast_to",
    "getitem", "scatter_add", "identity", "stack", "where",
)  # fmt: skip
"""Ops linear in all their Tensor arguments together (``mul``, ``div`` and ``matmul`` are
linear in each argument alone: a linear program feeds a tangent to one and a constant to the other)."""

JVP: dict[str, Jvp] = {
    **{op: partial(_linear_jvp, op) for op in LINEAR},
    "mul": lambda p, t, out, params: t[0] * p[1] + p[0] * t[1],
    "div": lambda p, t, out, params: t[0] / p[1] - t[1] * out / p[1],
    "pow": lambda p, t, out, params: t[0] * p[1] * p[0] ** (p[1] - 1.0) + t[1] * out * p[0].log(),
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
    "clip": lambda p, t, out, params: t[0] * _mask((p[0]._data >= params[0]) & (p[0]._data <= params[1])),
    "max": _max_jvp,
    "softmax": lambda p, t, out, params: out * (t[0] - (t[0] * out).sum(axis=params[0], keepdims=True)),
    "log_softmax": lambda p, t, out, params: t[0] - (t[0] * out.exp()).sum(axis=params[0], keepdims=True),
}
"""op name -> its JVP rule, written with Tensor operations."""


def _tangents(program: Program, primals: list[np.ndarray], tangents: list[Tensor]) -> list[Tensor]:
    """The output tangents of ``program`` at ``primals`` in the directions ``tangents``."""
    values: dict[int, Tensor] = {id(v): record("", x, ()) for v, x in zip(program.inputs, primals)}
    dots: dict[int, Tensor] = {id(v): t for v, t in zip(program.inputs, tangents)}

    def dot(x: Atom) -> Tensor:
        return dots[id(x)] if isinstance(x, Var) else record("", np.zeros(x.shape), ())

    for e in program.equations:
        args = [values[id(a)] if isinstance(a, Var) else record("", a, ()) for a in e.args]
        with no_grad():
            out = call_op(e.op, args, e.params)
        rule = JVP.get(e.op)
        if rule is None:
            raise NotImplementedError(f"linearize: op {e.op!r} has no JVP rule: add one to course_lib.linearize.JVP")
        values[id(e.out)], dots[id(e.out)] = out, rule(args, [dot(a) for a in e.args], out, e.params)
    return [dot(o) for o in program.outputs]


def linearize(f: Callable[..., Any], *args: Any) -> tuple[list[np.ndarray], Program]:
    """``f``'s outputs at ``args`` and its linear program: tangents of the inputs -> tangents of the outputs."""
    program = make_program(f, *args)
    primals = [np.asarray(a.data if isinstance(a, Tensor) else a, dtype=np.float64) for a in args]
    linear = make_program(lambda *ts: _tangents(program, primals, list(ts)), *[np.zeros(p.shape) for p in primals])
    return evaluate(program, *primals), linear


def _placeholder(x: Atom) -> Tensor:
    """A linear argument's stand-in: only its shape is read by a linear op's transpose."""
    return record("", np.zeros(x.shape), ()) if isinstance(x, Var) else record("", x, ())


def _pulled(cotangents: list[Tensor], linear: Program) -> list[Tensor]:
    """The linear program run backwards: the cotangents of its inputs."""
    cts: dict[int, Tensor] = {id(o): c for o, c in zip(linear.outputs, cotangents) if isinstance(o, Var)}
    for e in reversed(linear.equations):
        ct = cts.pop(id(e.out), None)
        if ct is None:
            continue
        args = [_placeholder(a) for a in e.args]
        out = record("", np.zeros(e.out.shape), ())
        out._parents = tuple(args)  # the matmul rule reads its arguments' shapes from the output's node
        for i, a in enumerate(e.args):
            if isinstance(a, Var):
                params = () if e.op in SHAPE_PARAMS else e.params
                contribution = OPS[e.op].rules[i](ct, out, *args, *params)
                cts[id(a)] = contribution if id(a) not in cts else cts[id(a)] + contribution
    return [cts.get(id(v), record("", np.zeros(v.shape), ())) for v in linear.inputs]


def transpose(linear: Program) -> Program:
    """The transposed program: cotangents of the outputs -> cotangents of the inputs."""
    shapes = [np.zeros(o.shape) for o in linear.outputs]
    return make_program(lambda *cts: _pulled(list(cts), linear), *shapes)
