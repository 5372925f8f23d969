"""Programs: a function of Tensors written down as a flat list of equations.

A :class:`Program` is the Wengert list of chapter 2 grown up (JAX calls it a jaxpr):
inputs with shapes, equations ``out = op(args; params)`` whose ``op`` is a row of the one
op table ``course_lib.tensor.OPS``, and outputs. An argument of an equation is a
:class:`Var` (an input or the result of an earlier equation) or a constant array.
:func:`evaluate` runs a program by calling each op's forward from the table, so it
computes exactly what the eager engine computes. Programs are made by tracing
(:mod:`course_lib.trace`), simplified by :mod:`course_lib.passes` and compiled by
:mod:`course_lib.jit`.
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course_lib.tensor import OPS, Tensor, no_grad, record
from course_lib.tensor.gather import integer_tensor

__all__ = ["Var", "Equation", "Program", "evaluate", "run", "call_op", "SHAPE_PARAMS"]

SHAPE_PARAMS = ("reshape", "broadcast_to")
"""Ops whose eager node records no parameter (the new shape is the node's own shape): an
equation keeps the shape as its parameter, and their VJP rules take none."""


@dataclass(eq=False)
class Var:
    """A value of the program: its shape, its printed name and its type (``f64``; ``i64`` for
    an integer array, which only indexes: the op ``take``)."""

    shape: tuple[int, ...]
    name: str = ""
    dtype: str = "f64"

    def __repr__(self) -> str:
        return self.name or f"Var{self.shape}"


Atom = Var | np.ndarray
"""An argument of an equation: a variable or a constant array."""


@dataclass(eq=False)
class Equation:
    """``out = op(*args; *params)``: one application of an op of the table."""

    op: str
    args: list[Atom]
    params: tuple
    out: Var


@dataclass(eq=False)
class Program:
    """Inputs, equations in the order they run, outputs (variables or constants).

    ``captured`` are values of an enclosing trace that the function closed over (a
    ``vmap`` inside ``jit``): they are the last ``len(captured)`` inputs. ``constvars``
    stand for ``consts``, the Tensors the function closed over (a model's parameters):
    every run reads their values afresh, so a program never holds stale ones.
    """

    inputs: list[Var]
    equations: list[Equation]
    outputs: list[Atom]
    captured: list[Any] = field(default_factory=list)
    constvars: list[Var] = field(default_factory=list)
    consts: list[Tensor] = field(default_factory=list)

    def __str__(self) -> str:
        return show(self)

    def __repr__(self) -> str:
        return show(self)


def _type(shape: tuple[int, ...], dtype: str = "f64") -> str:
    return dtype + "[" + ",".join(map(str, shape)) + "]"


def _names() -> Any:
    """a, b, ..., z, ba, bb, ...: jaxpr-style variable names (never a Python keyword, nor ``np``)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    n = 0
    while True:
        name, k = "", n
        while True:
            name = letters[k % 26] + name
            k //= 26
            if not k:
                break
        if not keyword.iskeyword(name) and name != "np":
            yield name
        n += 1


def _param(p: Any) -> str:
    if isinstance(p, np.ndarray):
        return f"array{_type(p.shape)[3:]}" if p.dtype != bool else f"mask{_type(p.shape)[3:]}"
    if isinstance(p, tuple):
        return "(" + ", ".join(_param(q) for q in p) + ("," if len(p) == 1 else "") + ")"
    return repr(p)


def show(program: Program) -> str:
    """The program as text, one equation a line: ``c:f64[16,3] = affine a w0 b0``.

    Closed-over Tensors (constvars) print as ``c0``, ``c1``, ..., listed with their shapes
    before the inputs; so do literal constants with more than one value, the others as
    their value.
    """
    names = _names()
    for v in program.inputs:
        v.name = next(names)
    for e in program.equations:
        e.out.name = next(names)
    for k, v in enumerate(program.constvars):
        v.name = f"c{k}"
    consts: dict[int, str] = {}

    def atom(x: Atom) -> str:
        if isinstance(x, Var):
            return x.name
        if x.size == 1:
            return f"{float(x.reshape(())):g}"
        return consts.setdefault(id(x), f"c{len(program.constvars) + len(consts)}")

    lines = []
    for e in program.equations:
        params = f"[{'; '.join(_param(p) for p in e.params)}]" if e.params else ""
        lines.append(
            f"    {e.out.name}:{_type(e.out.shape, e.out.dtype)} = {e.op}{params} " + " ".join(atom(a) for a in e.args)
        )
    outs = ", ".join(atom(o) for o in program.outputs)
    shown = {i: a for e in program.equations for a in e.args if not isinstance(a, Var) for i in [id(a)]}
    shown.update((id(o), o) for o in program.outputs if not isinstance(o, Var))
    header = " ".join(
        [f"{v.name}:{_type(v.shape)}" for v in program.constvars]
        + [f"{n}:{_type(shown[i].shape)}" for i, n in consts.items()]
    )
    inputs = " ".join(f"{v.name}:{_type(v.shape, v.dtype)}" for v in program.inputs)
    return "\n".join([f"{{ lambda {header + '; ' if header else ''}{inputs}. let", *lines, f"  in ({outs},) }}"])


def call_op(op: str, args: Sequence[Tensor], params: tuple) -> Tensor:
    """Apply op ``op`` of the table to Tensors, as the eager engine does (its row's ``call``)."""
    row = OPS[op]
    if row.call is None:
        raise NotImplementedError(f"op {op!r} has no forward in the op table, so a program cannot run it")
    if op == "stack":
        return row.call(*args, axis=params[0])
    if op in SHAPE_PARAMS and args[0].shape == params[0]:
        # Recorded, so the eager call made a node (reshape(-1) to the same shape): make one too, or a
        # replayed graph would add up its gradients in another order.
        return record(op, args[0]._data, (args[0],))
    return row.call(*args, *params)


def run(program: Program, inputs: Sequence[Tensor]) -> list[Tensor]:
    """Run ``program`` on Tensors with the eager engine, op by op: under ``no_grad`` this is
    :func:`evaluate`; with inputs (or closed-over Tensors) that require grad it records the
    graph, so a program can be differentiated like the function it was traced from."""
    env: dict[int, Tensor] = {id(v): x for v, x in zip(program.inputs, inputs)}
    env.update((id(v), c) for v, c in zip(program.constvars, program.consts))

    def read(x: Atom) -> Tensor:
        if not isinstance(x, Var):
            return record("", x, ())
        if id(x) not in env:
            which = f"variable {x.name}" if x.name else "a variable"
            raise ValueError(
                f"{which} of shape {x.shape} is used, but it is not an input and no earlier equation computes "
                "it: a pass that removes an equation must replace every use of its result, in later equations "
                "and in the outputs"
            )
        return env[id(x)]

    for e in program.equations:
        env[id(e.out)] = call_op(e.op, [read(a) for a in e.args], e.params)
    return [read(o) for o in program.outputs]


def evaluate(program: Program, *inputs: Any) -> list[np.ndarray]:
    """Run ``program`` on arrays (one per input, of the traced shapes), equation by
    equation with the eager engine's forwards: the same float operations, the same numbers.
    Closed-over Tensors (constvars) are read as they are now."""
    if len(inputs) != len(program.inputs):
        raise TypeError(f"the program takes {len(program.inputs)} input(s), got {len(inputs)}")
    tensors = []
    for v, x in zip(program.inputs, inputs):
        array = np.asarray(x.data if isinstance(x, Tensor) else x, dtype=np.float64 if v.dtype == "f64" else None)
        if array.shape != v.shape:
            raise ValueError(f"input {v.name or '?'} was traced with shape {v.shape}, got shape {array.shape}")
        tensors.append(record("", array, ()) if v.dtype == "f64" else integer_tensor(array))
    with no_grad():
        return [t._data for t in run(program, tensors)]
