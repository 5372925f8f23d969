"""Hostile students against ps13 and ps08, red team 24, the third pass: what the judge reads from a network
the student's own class makes (``student_side(MLP, ...)`` now calls a subclass bound to ``MLP``).

One grading run of the real sandbox; each case asserts the fair score (the one the notebook gets in Jupyter,
top to bottom, or less where the shortcut also passes there).
"""

from __future__ import annotations

import nbformat
import pytest
from nbgrader_helpers import ROOT
from test_verdict_seams import PS13, grade

SOURCE = nbformat.read(ROOT / "solutions" / PS13 / f"{PS13}.ipynb", as_version=4)


def _answer(grade_id: str) -> str:
    return next(c.source for c in SOURCE.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


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
    answer = _answer("step_program")
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
