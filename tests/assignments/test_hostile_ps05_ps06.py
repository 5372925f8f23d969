"""Hostile students against ps05 (optimisation) and ps06 (custom rules, Jacobians), a second pass.

Each case grades one part of a crafted hand-in in the real sandbox (``grade`` of
test_verdict_seams.py) and asserts the fair score.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS06 = "ps06_custom_rules_jacobians"

# ps06 part 4 asks for the Jacobian by reverse mode, one VJP per row, and its hidden test caught
# columns by JVPs by counting f's evaluations (jvp evaluates f once per column). Columns pushed
# forward while f is evaluated once passed that count: 2/2 each, where 0/2 is fair: a batched JVP
# (vmap of jvp), the same with jvp under another name (the test's count of jvp's calls sees only
# the notebook's name), and linearize (f traced once, every column through its linear program).
# The hidden f now goes through square_reverse_only, a node whose rule only reverse mode can use
# (jvp's two reverse sweeps need its rule differentiated); rules.toml rules out linearize.
BATCHED_JVPS = """
from course_lib.vmap import vmap


def jacobian_by_vjps(f, x):
    columns = vmap(lambda t: jvp(f, (x,), (t,))[1])(np.eye(len(x)))
    return columns.data.T
"""

ALIASED_JVPS = """
from course_lib.functional import jvp as push
from course_lib.vmap import vmap


def jacobian_by_vjps(f, x):
    columns = vmap(lambda t: push(f, (x,), (t,))[1])(np.eye(len(x)))
    return columns.data.T
"""

LINEARIZED = """
from course_lib.linearize import linearize
from course_lib.program import evaluate


def jacobian_by_vjps(f, x):
    (y,), linear = linearize(f, np.asarray(x, dtype=float))
    return np.stack([evaluate(linear, e)[0] for e in np.eye(len(x))], axis=1)
"""

# Honest: every row at once, the VJP batched with vmap (as BATCHED_JVPS in
# test_hostile_ps06_ps12.py does for part 5): reverse mode, f evaluated once.
BATCHED_VJPS = """
from course_lib.vmap import vmap


def jacobian_by_vjps(f, x):
    y, vjp_fn = vjp(f, x)
    return vmap(vjp_fn)(np.eye(y.shape[0])).data
"""


@pytest.mark.parametrize(
    "answer, fair",
    [(BATCHED_JVPS, 0), (ALIASED_JVPS, 0), (LINEARIZED, 0), (BATCHED_VJPS, 2)],
    ids=["batched-jvps", "batched-jvps-by-another-name", "linearize", "honest-batched-vjps"],
)
def test_ps06_jacobian_by_vjps_pulls_rows_back(answer, fair):
    points, message = grade(PS06, {"jacobian_by_vjps": answer}, {"test_jacobian_by_vjps"}, 60)["test_jacobian_by_vjps"]
    assert points == fair, message
