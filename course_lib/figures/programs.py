"""Steppers through a program (chapter 15b): tracing it equation by equation, and transposing
a linear program, walking it backwards.

Both draw a small program of scalars as a graph, one box per variable: an input, or the
output of an equation, labelled with its line (``d = mul a b``) and a number. Constants
stay inside the line, as the printed program writes them.

- :func:`trace_stepper` replays what the tracer records, one frame per equation, in the
  program's order: the new line is filled, the arrows from its arguments highlighted, and
  its value, which a recording tracer computes as it goes, is shown; lines not yet
  recorded are dashed. Laid out top to bottom: the inputs, where the trace begins, sit
  next to the stepper's controls.
- :func:`transpose_stepper` runs a linear program backwards, one frame per equation from
  the last: the equation's cotangent is sent to its linear arguments, each times its
  coefficient (a linear equation of scalars is ``out = c1 u1 + c2 u2``), and added to
  what they already hold. Laid out bottom to top: the outputs, where the walk begins,
  are on top.

The numbers are the engine's: values from the op table's forwards, coefficients found by
running each equation on unit tangents (exact for a linear op).
"""

from __future__ import annotations

from typing import Any

import graphviz
import numpy as np

from course_lib.figures.stepper import Frame, Stepper
from course_lib.program import Atom, Program, Var, call_op, show
from course_lib.tensor import Tensor, no_grad, record
from course_lib.viz import EDGE_HIGHLIGHT, FONT_SIZE, HIGHLIGHT, fixed_boxes

__all__ = ["trace_stepper", "transpose_stepper"]

_USED = {"color": EDGE_HIGHLIGHT, "fontcolor": EDGE_HIGHLIGHT, "penwidth": "2.5"}


def _scalars_only(program: Program, what: str) -> None:
    shapes = {v.shape for v in program.inputs} | {e.out.shape for e in program.equations}
    if shapes != {()} or program.constvars:
        raise ValueError(
            f"{what} draws programs of scalars (every variable of shape ()) without closed-over Tensors; "
            f"this one has shapes {sorted(shapes)}: trace a scalar function, e.g. make_program(f, 2.0, 5.0)"
        )


def _atom(x: Atom) -> str:
    return x.name if isinstance(x, Var) else f"{float(x):g}"


def _line(e: Any) -> str:
    """An equation as the printed program writes it, without the type: ``d = mul a b``."""
    return f"{e.out.name} = {e.op} " + " ".join(_atom(a) for a in e.args)


def _number(x: float | None, digits: int) -> str:
    return "?" if x is None else f"{x:.{digits}f}"


def _drawing(
    program: Program,
    rankdir: str,
    fields: dict[int, str],
    filled: set[int],
    dashed: set[int],
    edges: dict[tuple[int, int], str],
    lit: set[tuple[int, int]],
) -> graphviz.Digraph:
    """The program as a graph: a box per input and per equation, ``fields[id(var)]`` under its line."""
    dot = graphviz.Digraph(
        graph_attr={"rankdir": rankdir, "ranksep": "0.3", "nodesep": "0.25"}, node_attr={"fontsize": FONT_SIZE}
    )
    outputs = {id(o) for o in program.outputs}

    def box(v: Var, line: str) -> None:
        label = line + (" (output)" if id(v) in outputs else "") + "\n" + fields[id(v)]
        style = ",".join(
            (["filled"] if id(v) in filled else []) + (["dashed"] if id(v) in dashed else []) + ["rounded"]
        )
        dot.node(v.name, label, shape="box", style=style, **({"fillcolor": HIGHLIGHT} if id(v) in filled else {}))

    for v in program.inputs:
        box(v, f"{v.name} (input)")
    for e in program.equations:
        box(e.out, _line(e))
        for a in dict.fromkeys(a for a in e.args if isinstance(a, Var)):
            key = (id(a), id(e.out))
            label = {"label": " " + edges[key], "fontsize": FONT_SIZE} if key in edges else {}
            dot.edge(a.name, e.out.name, **label, **(_USED if key in lit else {}))
    return dot


def _state(program: Program, fields: dict[int, str]) -> str:
    """What the boxes show, for the text alternative (a ``?`` said in words)."""
    variables = list(program.inputs) + [e.out for e in program.equations]
    said = "; ".join(f"{v.name}: {fields[id(v)]}" for v in variables).replace("?", "a question mark (not reached yet)")
    return f"The boxes show {said}."


def _stepper(
    program: Program, drawings: list[graphviz.Digraph], captions: list[str], states: list[str], name: str, title: str
) -> Stepper:
    structure = "The program, one box per variable: " + "; ".join(_line(e) for e in program.equations) + "."
    drawings = fixed_boxes(drawings)
    frames = [
        Frame(dot.pipe(format="svg", encoding="utf-8"), caption, f"{structure} {caption} {state}")
        for dot, caption, state in zip(drawings, captions, states)
    ]
    return Stepper(frames, name, title)


def trace_stepper(program: Program, *args: Any, name: str, digits: int = 3) -> Stepper:
    """What a recording tracer does on ``program``'s function at ``args``: one frame per
    equation, each computing its value as it is written down."""
    _scalars_only(program, "trace_stepper")
    show(program)  # names the variables as the printed program does
    values: dict[int, float] = {id(v): float(x) for v, x in zip(program.inputs, args)}
    tensors = {id(v): record("", np.asarray(x, dtype=np.float64), ()) for v, x in zip(program.inputs, args)}
    drawings, captions, states = [], [], []
    n = len(program.equations)
    for k, e in enumerate(program.equations):
        ins = [tensors[id(a)] if isinstance(a, Var) else record("", a, ()) for a in e.args]
        with no_grad():
            out = call_op(e.op, ins, e.params)
        tensors[id(e.out)], values[id(e.out)] = out, float(out.item())
        later = {id(f.out) for f in program.equations[k + 1 :]}
        fields = {i: "value " + _number(x, digits) for i, x in values.items()}
        fields.update((i, "not recorded yet") for i in later)
        named = ", ".join(f"{a.name} = {_number(values[id(a)], digits)}" for a in e.args if isinstance(a, Var))
        captions.append(
            f"Step {k + 1} of {n}: the tracer records {_line(e)}, from {named}, and computes its value at once: "
            f"{e.out.name} = {_number(values[id(e.out)], digits)}."
        )
        lit = {(id(a), id(e.out)) for a in e.args if isinstance(a, Var)}
        drawings.append(_drawing(program, "TB", fields, {id(e.out)}, later, {}, lit))
        states.append(_state(program, fields))
    return _stepper(program, drawings, captions, states, name, "Tracing, one equation per step")


def _coefficients(e: Any, linear: set[int], values: dict[int, Tensor]) -> dict[int, float]:
    """``out = sum of c_i u_i`` over the linear arguments ``u_i`` of scalar equation ``e``: each
    ``c_i``, by running the op with ``u_i = 1`` and the other linear arguments 0."""
    found: dict[int, float] = {}
    for a in dict.fromkeys(a for a in e.args if isinstance(a, Var) and id(a) in linear):
        args = [
            (record("", np.asarray(1.0 if x is a else 0.0), ()) if id(x) in linear else values[id(x)])
            if isinstance(x, Var)
            else record("", x, ())
            for x in e.args
        ]
        with no_grad():
            found[id(a)] = float(call_op(e.op, args, e.params).item())
    return found


def transpose_stepper(linear: Program, name: str, digits: int = 3) -> Stepper:
    """A linear program of scalars run backwards from cotangent 1 on each output: one frame
    per equation, last first, sending its cotangent to its linear arguments."""
    _scalars_only(linear, "transpose_stepper")
    show(linear)
    depends = {id(v) for v in linear.inputs}
    values: dict[int, Tensor] = {}
    coefficients: dict[int, dict[int, float]] = {}
    for e in linear.equations:
        if any(isinstance(a, Var) and id(a) in depends for a in e.args):
            depends.add(id(e.out))
            coefficients[id(e.out)] = _coefficients(e, depends, values)
        else:
            ins = [values[id(a)] if isinstance(a, Var) else record("", a, ()) for a in e.args]
            with no_grad():
                values[id(e.out)] = call_op(e.op, ins, e.params)
    cts: dict[int, float] = {id(o): 1.0 for o in linear.outputs if isinstance(o, Var)}
    labels = {(a, out): f"×{c:g}" for out, cs in coefficients.items() for a, c in cs.items()}
    walked = [e for e in reversed(linear.equations) if id(e.out) in coefficients]
    named = {id(v): v.name for v in linear.inputs} | {id(e.out): e.out.name for e in linear.equations}
    coefficients_said = (
        "Each arrow carries its coefficient: "
        + "; ".join(f"{named[out]} from {named[a]} {c:g}" for out, cs in coefficients.items() for a, c in cs.items())
        + "."
    )
    drawings, captions, states = [], [], []
    for k, e in enumerate(walked, start=1):
        ct = cts.get(id(e.out), 0.0)
        sent = []
        for a, c in coefficients[id(e.out)].items():
            cts[a] = cts.get(a, 0.0) + c * ct
            var = next(x for x in e.args if isinstance(x, Var) and id(x) == a)
            sent.append(f"{var.name}̄ += {_number(ct, digits)} × {c:g}, now {_number(cts[a], digits)}")
        fields = {id(v): "cotangent " + _number(cts.get(id(v)), digits) for v in linear.inputs}
        fields.update((id(f.out), "cotangent " + _number(cts.get(id(f.out)), digits)) for f in linear.equations)
        captions.append(
            f"Step {k} of {len(walked)}: {_line(e)} sends its cotangent {e.out.name}̄ back: " + "; ".join(sent) + "."
        )
        lit = {(a, id(e.out)) for a in coefficients[id(e.out)]}
        drawings.append(_drawing(linear, "BT", fields, {id(e.out)}, set(), labels, lit))
        states.append(f"{coefficients_said} {_state(linear, fields)}")
    names = ", ".join(f"{v.name}̄ = {_number(cts.get(id(v), 0.0), digits)}" for v in linear.inputs)
    captions[-1] += f" The walk is over: {names}."
    return _stepper(linear, drawings, captions, states, name, "Transposing, one equation per step from the last")
