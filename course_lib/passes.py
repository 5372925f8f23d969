"""Program passes: each takes a :class:`~course_lib.program.Program` and returns a simpler
one computing the same numbers (bit for bit: no pass reorders or changes a float operation).

- :func:`remove_noops`: ops that return their argument unchanged: ``identity``,
  multiplying by a constant one, reshaping, broadcasting or transposing to the same
  shape and order, summing over no axes.
- :func:`eliminate_common_subexpressions`: an op applied twice to the same arguments
  with the same parameters is computed once.
- :func:`eliminate_dead_code`: equations no output depends on are dropped.
- :func:`simplify`: the three, in that order.
- :func:`fold_row_sums`: the row sums of ``put`` of a constant with one value per row (the
  gradient of ``cross_entropy`` with traced labels) are that constant, whatever the labels.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from course_lib.program import Atom, Equation, Program, Var
from course_lib.tensor.gather import Slot

__all__ = ["remove_noops", "eliminate_common_subexpressions", "eliminate_dead_code", "simplify", "fold_row_sums"]


def _is_one(x: Atom) -> bool:
    return isinstance(x, np.ndarray) and x.size <= 64 and bool(np.all(x == 1.0))


def _shape(x: Atom) -> tuple[int, ...]:
    return x.shape


def _noop_argument(e: Equation) -> Atom | None:
    """The argument ``e`` returns unchanged, or None."""
    a = e.args[0]
    if e.op == "identity":
        return a
    if e.op in ("reshape", "broadcast_to") and _shape(a) == e.out.shape:
        return a
    if e.op == "transpose" and tuple(e.params[0]) == tuple(range(len(e.out.shape))):
        return a
    if e.op == "sum" and e.params[0] == () and _shape(a) == e.out.shape:
        return a
    if e.op == "mul":
        for x, y in (e.args, e.args[::-1]):
            if _is_one(y) and _shape(x) == e.out.shape:
                return x
    return None


def _substituted(program: Program, equations: list[Equation], same_as: dict[int, Atom]) -> Program:
    def sub(x: Atom) -> Atom:
        return same_as.get(id(x), x)

    for e in equations:
        e.args = [sub(a) for a in e.args]
    return replace(program, equations=equations, outputs=[sub(o) for o in program.outputs])


def remove_noops(program: Program) -> Program:
    """Drop the equations that return an argument unchanged, using that argument instead."""
    same_as: dict[int, Atom] = {}
    kept = []
    for e in program.equations:
        e = Equation(e.op, [same_as.get(id(a), a) for a in e.args], e.params, e.out)
        same = _noop_argument(e)
        if same is None:
            kept.append(e)
        else:
            same_as[id(e.out)] = same
    return _substituted(program, kept, same_as)


def _key(x: Any) -> Any:
    """A hashable stand-in for an argument or parameter (small arrays by value)."""
    if isinstance(x, Var):
        return ("var", id(x))
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes()) if x.size <= 64 else ("array", id(x))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_key(y) for y in x))
    if isinstance(x, slice):
        return ("slice", x.start, x.stop, x.step)
    return (type(x).__name__, x)


def eliminate_common_subexpressions(program: Program) -> Program:
    """Compute each distinct ``op(args; params)`` once (later copies use the first result)."""
    seen: dict[Any, Var] = {}
    same_as: dict[int, Atom] = {}
    kept = []
    for e in program.equations:
        e = Equation(e.op, [same_as.get(id(a), a) for a in e.args], e.params, e.out)
        key = (e.op, _key(e.args), _key(e.params))
        if key in seen:
            same_as[id(e.out)] = seen[key]
        else:
            seen[key] = e.out
            kept.append(e)
    return _substituted(program, kept, same_as)


def eliminate_dead_code(program: Program) -> Program:
    """Keep only the equations some output depends on."""
    live = {id(o) for o in program.outputs}
    kept = []
    for e in reversed(program.equations):
        if id(e.out) in live:
            kept.append(e)
            live.update(id(a) for a in e.args)
    return replace(program, equations=kept[::-1])


def simplify(program: Program) -> Program:
    """No-ops removed, common subexpressions shared, dead code dropped."""
    return eliminate_dead_code(eliminate_common_subexpressions(remove_noops(program)))


def _one_per_row(e: Equation) -> bool:
    """Whether ``put`` writes one value into each row of a matrix, whatever the labels: its index
    is (a permutation of the rows, the labels), as cross_entropy's gradient has."""
    template, shape = e.params
    rows = template[0] if len(template) == 2 and type(template[1]) is Slot else None
    return (
        isinstance(rows, np.ndarray)
        and len(shape) == 2
        and rows.shape == (shape[0],) == e.args[1].shape
        and np.array_equal(np.sort(rows), np.arange(shape[0]))
    )


def fold_row_sums(program: Program) -> Program:
    """Replace ``put(g; rows, labels).sum(axis=1)`` by its value when ``g`` is a constant: with
    one value in each row the sum of the row is that value (+ 0.0, the zeros added), whatever
    the labels. (With static labels the whole gradient of cross_entropy was a constant; with
    traced ones this part still is.)"""
    puts = {id(e.out): e for e in program.equations if e.op == "put" and isinstance(e.args[0], np.ndarray)}
    kept, same_as = [], {}
    for e in program.equations:
        put = puts.get(id(e.args[0])) if e.op == "sum" and e.params[0] in (1, -1, (1,), (-1,)) else None
        if put is not None and _one_per_row(put):
            value = np.zeros(put.params[1][0])
            value[put.params[0][0]] = np.asarray(put.args[0]) + 0.0
            same_as[id(e.out)] = value.reshape(e.out.shape)
        else:
            kept.append(e)
    if not same_as:
        return program
    return replace(
        program,
        equations=[Equation(e.op, [same_as.get(id(a), a) for a in e.args], e.params, e.out) for e in kept],
        outputs=[same_as.get(id(o), o) for o in program.outputs],
    )
