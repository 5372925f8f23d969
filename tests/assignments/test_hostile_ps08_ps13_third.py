"""Hostile students against ps13 and ps08, red team 24, the third pass: what the judge reads from a network
the student's own class makes (``student_side(MLP, ...)`` now calls a subclass bound to ``MLP``).

Two grading runs of the real sandbox; each case asserts the fair score (the one the notebook gets in Jupyter,
top to bottom, or less where the shortcut also passes there).
"""

from __future__ import annotations

import pytest
from nbgrader_helpers import solution_answer
from test_verdict_seams import PS13, grade

# Part 4: a step program without the relu rule (relu passes its gradient on unchanged), beside a subclass of the
# given MLP whose hidden pre-activations never go below 0 (hidden biases raised by 30, deeper hidden weights made
# positive): every relu lets everything through, so the program matched the eager step and course_lib's (which
# starts from the same parameters) on every batch the test drew. The network has the sizes' layers and shapes.
ALWAYS_ON = '''
class MLP(MLP):
    """The given network, started where no ReLU is ever off."""

    def __init__(self, sizes, seed=0):
        super().__init__(sizes, seed)
        for k, (W, b) in enumerate(self.layers[:-1]):
            if k:
                W.data = np.abs(W.data)
            b.data = np.abs(b.data) + 30.0
        self.layers[-1][0].data = self.layers[-1][0].data * 0.05
'''


def _without_relu_rule() -> str:
    answer = solution_answer(PS13, "step_program")
    rule = 'send(args[0], emit("*", g, emit("positive", args[0])))'
    assert rule in answer
    return ALWAYS_ON + "\n\n" + answer.replace(rule, "send(args[0], g)")


@pytest.fixture(scope="module")
def graded() -> dict:
    answers = {"step_program": _without_relu_rule()}
    return grade(PS13, answers, {"test_step_program"}, timeout=60)


def test_ps13_a_network_whose_relus_never_switch_off_spares_no_relu_rule(graded):
    """Fair: 0/4 (the program has no relu rule; it scored 4/4 beside the network's start)."""
    assert graded["test_step_program"][0] == 0, graded


# Honest, parts 4 to 6: programs in other containers. The program a dict subclass (an OrderedDict with a method of
# the student's), its equations NamedTuples with tuples of arguments, its inputs and outputs tuples; compile_program
# returns a NamedTuple (source, function). 9/9, as in Jupyter.
PROGRAM_TYPES = '''
from collections import OrderedDict
from typing import NamedTuple


class Equation(NamedTuple):
    out: str
    op: str
    args: tuple


class Program(OrderedDict):
    """A program: a dict that prints itself one equation a line."""

    def show(self):
        return "\\n".join(f"{e.out} = {e.op}{e.args}" for e in self["equations"])

'''

DEAD_CODE_AS_EQUATIONS = """
def eliminate_dead_code(program):
    needed, kept = set(program["outputs"]), []
    for equation in reversed(program["equations"]):
        out, op, args = equation
        if out in needed:
            kept.append(Equation(out, op, tuple(args)))
            needed |= set(args)
    return Program(inputs=tuple(program["inputs"]), equations=kept[::-1], outputs=tuple(program["outputs"]))
"""

COMPILED_AS_NAMED_TUPLE = """
class Compiled(NamedTuple):
    source: str
    function: object


def compile_program(program, name="compiled"):
    lines = [f"def {name}({', '.join(program['inputs'])}):"]
    for out, op, args in program["equations"]:
        lines.append(f"    {out} = {OPS[op][1].format(*args)}")
    lines.append(f"    return ({''.join(f'{o}, ' for o in program['outputs'])})")
    source = "\\n".join(lines) + "\\n"
    namespace = dict(np=np, unbroadcast=unbroadcast, cross_entropy_value=cross_entropy_value,
                     cross_entropy_vjp=cross_entropy_vjp)
    exec(source, namespace)
    return Compiled(source, namespace[name])
"""


def _in_other_containers() -> str:
    answer = solution_answer(PS13, "step_program")
    for old, new in [
        ("equations.append((out, op, list(args)))", "equations.append(Equation(out, op, tuple(args)))"),
        (
            'return {"inputs": [*(f"p{k}" for k in range(len(params))), "X", "y", "lr"],\n'
            '            "equations": equations, "outputs": [names[id(loss)], *updated]}',
            'return Program(inputs=(*(f"p{k}" for k in range(len(params))), "X", "y", "lr"),\n'
            "                   equations=equations, outputs=(names[id(loss)], *updated))",
        ),
    ]:
        assert old in answer
        answer = answer.replace(old, new)
    return PROGRAM_TYPES + answer


@pytest.fixture(scope="module")
def containers() -> dict:
    answers = {
        "step_program": _in_other_containers(),
        "eliminate_dead_code": DEAD_CODE_AS_EQUATIONS,
        "compile_program": COMPILED_AS_NAMED_TUPLE,
    }
    return grade(PS13, answers, {"test_step_program", "test_eliminate_dead_code", "test_compile_program"}, timeout=60)


def test_ps13_programs_in_other_containers_keep_their_points(containers):
    """Fair: 9/9."""
    assert {part: points for part, (points, _) in containers.items()} == {
        "test_step_program": 4,
        "test_eliminate_dead_code": 2,
        "test_compile_program": 3,
    }, containers
