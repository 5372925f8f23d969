"""Hostile students against ps05 (optimisation) and ps06 (custom rules, Jacobians), a second pass.

Each case grades one part of a crafted hand-in in the real sandbox (``grade`` of
test_verdict_seams.py) and asserts the fair score.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS05, PS06 = "ps05_optimisation", "ps06_custom_rules_jacobians"

# ps05 part 1 asks for the gradient by one backward pass of the Value engine. Fourth-order central
# differences of f's values, each evaluated on Values (so `three`'s .sin() works), are exact to
# about 1e-11 and passed the test's rtol of 1e-10: 1/1 for no backward pass. The hidden test now
# counts f's evaluations (in the judge): one backward pass evaluates f once.
DIFFERENCES = """
def value_and_gradient(f, point):
    point = [float(p) for p in point]

    def at(q):
        return f(*[Value(v) for v in q]).data

    grads = []
    for i in range(len(point)):
        h = 1e-3 * max(1.0, abs(point[i]))
        terms = []
        for k in (-2, -1, 1, 2):
            q = list(point)
            q[i] += k * h
            terms.append(at(q))
        grads.append((terms[0] - 8 * terms[1] + 8 * terms[2] - terms[3]) / (12 * h))
    return at(point), np.array(grads)
"""

# Honest idioms that scored full marks and must keep them: the descent field from one vectorised
# call of grad_f on the whole grid, the stable step from the spectral norm
# (the largest eigenvalue of a symmetric positive definite Hessian).
FIELD_IN_ONE_CALL = """
def descent_field(grad_f, a_values, b_values):
    A, B = np.meshgrid(np.asarray(a_values, dtype=float), np.asarray(b_values, dtype=float))
    g = np.asarray(grad_f(np.array([A, B])), dtype=float)
    return -g[0], -g[1]
"""

SPECTRAL_NORM = """
def largest_stable_lr(hessian):
    return 2.0 / np.linalg.norm(np.asarray(hessian, dtype=float), 2)
"""


def test_ps05_differences_are_not_a_backward_pass_and_honest_idioms_keep_their_points():
    got = grade(
        PS05,
        {"value_and_gradient": DIFFERENCES, "descent_field": FIELD_IN_ONE_CALL, "largest_stable_lr": SPECTRAL_NORM},
        {"test_value_and_gradient", "test_descent_field", "test_largest_stable_lr"},
        60,
    )
    assert got["test_value_and_gradient"][0] == 0 and "evaluated" in got["test_value_and_gradient"][1], got
    assert got["test_descent_field"][0] == 2 and got["test_largest_stable_lr"][0] == 2, got


# ps05 part 1: forward mode on a dual number class of the student's, one tangent per coordinate,
# f evaluated once (1/1, fair 0: no backward pass, no Value engine). The hidden test now checks that
# f is handed Values. A subclass of Value with the same forward-mode arithmetic is taken for a Value
# (README, "Claims about classes") and passed that check: the hidden test now also has a probe, a
# node whose backward (set by the test) passes back twice its gradient, which forward mode misses
# (test_hostile_ps02_ps05_ps06_third.py).
OWN_DUAL = """
import math


class _D:
    # A dual number with a vector of tangents: forward mode, every partial derivative at once.

    def __init__(self, v, t):
        self.v, self.t = v, np.asarray(t, dtype=float)

    def _w(self, o):
        return o if isinstance(o, _D) else _D(float(o), np.zeros_like(self.t))

    def __add__(self, o):
        o = self._w(o)
        return _D(self.v + o.v, self.t + o.t)

    __radd__ = __add__

    def __sub__(self, o):
        o = self._w(o)
        return _D(self.v - o.v, self.t - o.t)

    def __rsub__(self, o):
        return self._w(o) - self

    def __mul__(self, o):
        o = self._w(o)
        return _D(self.v * o.v, self.t * o.v + o.t * self.v)

    __rmul__ = __mul__

    def __pow__(self, n):
        return _D(self.v ** n, n * self.v ** (n - 1) * self.t)

    def sin(self):
        return _D(math.sin(self.v), math.cos(self.v) * self.t)

    def exp(self):
        e = math.exp(self.v)
        return _D(e, e * self.t)


def value_and_gradient(f, point):
    d = len(point)
    out = f(*[_D(float(p), np.eye(d)[i]) for i, p in enumerate(point)])
    return out.v, out.t
"""

DUAL_POSING_AS_VALUE = OWN_DUAL.replace("class _D:", 'class _D(Value):\n    __slots__ = ("v", "t")\n').replace(
    "        self.v, self.t = v,", "        super().__init__(v)\n        self.v, self.t = v,"
)


@pytest.mark.parametrize(
    "answer",
    [
        OWN_DUAL,
        DUAL_POSING_AS_VALUE,
    ],
    ids=["own-dual-class", "dual-subclassing-value"],
)
def test_ps05_forward_mode_on_a_dual_class_is_not_the_backward_pass(answer):
    points, message = grade(PS05, {"value_and_gradient": answer}, {"test_value_and_gradient"}, 60)[
        "test_value_and_gradient"
    ]
    assert points == 0, message


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
