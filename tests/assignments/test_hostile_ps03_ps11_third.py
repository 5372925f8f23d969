"""A third pass of hostile and honest students against ps03 (reverse mode) and ps11 (the
cheap-gradient ratio), beyond test_hostile_ps03_ps10*.py and test_hostile_ps08_ps11*.py.

The grader held against what this pass tried (the tests' own Num, Dual and Var, the probes of
parts 2 and 3, the runner's kept reads of the judge's objects, operators added to the set-up
classes); the one case left is an honest redefinition of a given function that ``calls_to``
bypasses. It grades a crafted hand-in in the real sandbox (``grade`` of test_verdict_seams.py)
and asserts the fair score: what the notebook scores when it runs top to bottom in Jupyter.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS11 = "ps11_cheap_gradient"

# ps11 part 3, honest: the given backward redefined to hand back the output it swept (the given
# sweep runs once, under the name the test counts), and the answer relies on that return value.
# In Jupyter the notebook's calls_to wraps the student's binding of `backward`: 2/2. Graded, the
# judge's calls_to runs the set-up cells' backward instead (so that a `backward` of the student's
# cannot do uncounted work as one sweep), which returns None: 0/2.
BACKWARD_THAT_RETURNS = """
_given_backward = backward


def backward(out):
    \"\"\"The given sweep, handing back the output it swept (to chain calls).\"\"\"
    _given_backward(out)
    return out


def gradient_by_reverse_mode(f, x):
    leaves = [Var(Num(v)) for v in x]
    out = backward(f(leaves))
    return [leaf.grad.value for leaf in leaves] if out is not None else None
"""


@pytest.mark.xfail(
    strict=True,
    reason="calls_to runs the set-up cells' backward, not a redefinition of the student's (README, Not guaranteed)",
)
def test_ps11_a_redefined_backward_that_returns_its_output_keeps_its_points():
    """Fair: 2 (Jupyter)."""
    got = grade(PS11, {"gradient_by_reverse_mode": BACKWARD_THAT_RETURNS}, {"test_gradient_by_reverse_mode"})
    assert got["test_gradient_by_reverse_mode"][0] == 2, got
