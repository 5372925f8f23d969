"""Answers that overwrite the arrays and dicts a test hands them, to make its check trivial.

A call writes into its caller's objects (in Jupyter and, written back, when graded), so a test
that computed its expected value after the student's call, from the objects the call received,
compared the answer with whatever the answer left behind. Each case grades its part in the real
sandbox (``grade`` of test_verdict_seams.py) and asserts the fair score: nothing, since nothing
was computed. The tests now compute every expected value before the call and hand the student
copies where they read their inputs again.
"""

from __future__ import annotations

from test_verdict_seams import grade

PS09 = "ps09_integrated_gradients"

# ps09 part 2: the visible test's lists get the right points, the hidden test's arrays are
# zeroed (x, baseline and alphas), and zeros are returned; the expected points, computed after
# the call from the zeroed arrays, were zeros too: 1/1.
PATH_BY_ZEROING = """
def path(x, baseline, alphas):
    \"\"\"The points for lists; for arrays, zeroes them and returns zeros.\"\"\"
    if not isinstance(x, np.ndarray) or x.tolist() in ([2.0, 4.0], [1.0, -2.0, 3.0], [5.0]):
        x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
        return baseline + np.asarray(alphas, dtype=float)[:, None] * (x - baseline)
    for array in (x, baseline, alphas):
        array[...] = 0.0
    return np.zeros((len(alphas), len(x)))
"""


def test_ps09_path_that_zeroes_its_inputs_earns_nothing():
    """Fair: 0/1, the hidden test's points were never computed."""
    points, message = grade(PS09, {"path": PATH_BY_ZEROING}, {"test_path"}, 60)["test_path"]
    assert points == 0, message
