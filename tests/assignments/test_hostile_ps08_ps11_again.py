"""A second pass of hostile and honest students against ps08 (training an MLP) and ps11 (the
cheap-gradient ratio), beyond test_hostile_ps08_ps11.py.

Each case grades a crafted hand-in in the real sandbox (``grade`` of test_verdict_seams.py),
attacks and honest idioms side by side where they live in different cells, and asserts the fair
score: what the notebook scores when it runs top to bottom in Jupyter.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS08, PS11 = "ps08_training_mlp", "ps11_cheap_gradient"

# ps11, one hand-in for all five parts.
# Part 1, honest: Num given a __float__ (a set-up class changed by an answer), the points as NumPy
# object arrays. The changed Num stood for the Tools cell's in the judge, whose counts of the
# reference methods (done in the student's process) read 0: parts 4 and 5 failed on 0 / 0, 6/10
# for a correct hand-in; and f, run in the judge on the object array, failed on bowl's x[1:].
FLOAT_NUM_OBJECT_ARRAYS = """
Num.__float__ = lambda self: self.value  # so that float() and NumPy read a Num


def gradient_by_differences(f, x, h=1e-5):
    x = np.asarray(x, dtype=float)
    estimates = np.empty(len(x))
    for i, e in enumerate(np.eye(len(x))):
        up = np.array([Num(v) for v in x + h * e], dtype=object)
        down = np.array([Num(v) for v in x - h * e], dtype=object)
        estimates[i] = float(f(up) - f(down)) / (2 * h)
    return estimates
"""

# Part 2, honest: Dual rebound to a subclass that also divides. The judge's reference forward
# mode (part 4) then made the student's Duals of its own Nums, whose methods the student's process
# may not call: part 4 failed with ReadOnly.
DUAL_SUBCLASS = """
class Dual(Dual):
    \"\"\"Dual numbers that also divide.\"\"\"
    __slots__ = ()

    def __truediv__(self, other):
        other = self._lift(other)
        quotient = self.primal / other.primal
        return Dual(quotient, (self.tangent - quotient * other.tangent) / other.primal)


def gradient_by_forward_mode(f, x):
    return [f([Dual(Num(v), Num(float(i == j))) for j, v in enumerate(x)]).tangent.value for i in range(len(x))]
"""

# Part 3, hostile: forward mode on vector tangents (plain floats, one pass of f), and a backward
# call on a tape of one leaf for the sweep the test counts: 2/2 before. A hidden probe now hands
# an f whose output passes back twice its gradient; a gradient not swept through f's tape does
# not double.
VECTOR_FORWARD_MODE = """
class Jet:
    \"\"\"A value and its whole gradient (a NumPy vector): every partial derivative in one pass.\"\"\"

    def __init__(self, primal, tangent):
        self.primal, self.tangent = primal, np.asarray(tangent, dtype=float)

    @staticmethod
    def _lift(other):
        return other if isinstance(other, Jet) else Jet(float(other), 0.0)

    def __add__(self, other):
        other = self._lift(other)
        return Jet(self.primal + other.primal, self.tangent + other.tangent)

    def __sub__(self, other):
        other = self._lift(other)
        return Jet(self.primal - other.primal, self.tangent - other.tangent)

    def __mul__(self, other):
        other = self._lift(other)
        return Jet(self.primal * other.primal, self.tangent * other.primal + self.primal * other.tangent)

    __radd__, __rmul__ = __add__, __mul__

    def __rsub__(self, other):
        return self._lift(other) - self

    def __neg__(self):
        return Jet(-self.primal, -self.tangent)

    def sin(self):
        return Jet(math.sin(self.primal), math.cos(self.primal) * self.tangent)

    def cos(self):
        return Jet(math.cos(self.primal), -math.sin(self.primal) * self.tangent)

    def exp(self):
        return Jet(math.exp(self.primal), math.exp(self.primal) * self.tangent)

    def tanh(self):
        t = math.tanh(self.primal)
        return Jet(t, (1 - t * t) * self.tangent)


def gradient_by_reverse_mode(f, x):
    out = f([Jet(v, e) for v, e in zip(x, np.eye(len(x)))])
    backward(Var(Num(0.0)))  # the one sweep the test counts
    return list(out.tangent)
"""

# Parts 4 and 5, honest: the ratio as an exact Fraction, the bound with NumPy on the table.
FRACTION_RATIO = """
from fractions import Fraction


def cost_ratio(method, f, x):
    _, method_ops = count_ops(method, f, x)
    _, f_ops = count_ops(f, [Num(v) for v in x])
    return Fraction(method_ops, f_ops)
"""
NUMPY_BOUND = """
def reverse_ratio_bound(costs):
    table = np.array(list(costs.values()))
    return np.max(1 + table[:, 1] + 2 * table[:, 0])
"""


def test_ps11_changed_classes_keep_their_points_and_vector_forward_mode_is_not_reverse_mode():
    """Fair: 2, 2, 0, 2, 2."""
    answers = {
        "gradient_by_differences": FLOAT_NUM_OBJECT_ARRAYS,
        "gradient_by_forward_mode": DUAL_SUBCLASS,
        "gradient_by_reverse_mode": VECTOR_FORWARD_MODE,
        "cost_ratio": FRACTION_RATIO,
        "reverse_ratio_bound": NUMPY_BOUND,
    }
    got = grade(PS11, answers, {f"test_{name}" for name in answers})
    assert {part: points for part, (points, _) in got.items()} == {
        "test_gradient_by_differences": 2,
        "test_gradient_by_forward_mode": 2,
        "test_gradient_by_reverse_mode": 0,
        "test_cost_ratio": 2,
        "test_reverse_ratio_bound": 2,
    }, got


# ps08 part 5: the whole data set X, y (the held-out flowers among them) read when train is called:
# 3/3 before, since the blind run rebound only X_test_raw and y_test. It now rebinds X and y too.
TRAIN_ON_ALL_FLOWERS = """
def train(seed):
    mean, std = X_train_raw.mean(axis=0), X_train_raw.std(axis=0)
    X_all = (X - mean) / std
    model = MLP([4, 16, 3], rng=seed)
    optimiser = SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(seed)
    for epoch in range(40):
        order = rng.permutation(len(y))
        for start in range(0, len(order), 16):
            rows = order[start:start + 16]
            train_step(model, optimiser, X_all[rows], y[rows])
    return model
"""


def test_ps08_a_network_trained_on_all_150_flowers_scores_nothing():
    points, message = grade(PS08, {"train": TRAIN_ON_ALL_FLOWERS}, {"test_train"}, 60)["test_train"]
    assert points == 0 and "were replaced by others" in message, message


# ... but the held-out flowers read again from course_lib's data set, under a name of the
# student's, are the same whatever the test rebinds: 3/3, graded and in Jupyter (README, "Not
# guaranteed": the flowers are in the student's process).
TRAIN_ON_RELOADED_HELD_OUT = """
from course_lib.datasets import load_iris as _flowers


def train(seed):
    X_all, y_all, *_ = _flowers()
    _, held_out = stratified_split(y_all, 10, 4)
    mean, std = X_train_raw.mean(axis=0), X_train_raw.std(axis=0)
    X_fit, y_fit = (X_all[held_out] - mean) / std, y_all[held_out]
    model = MLP([4, 16, 3], rng=seed)
    optimiser = SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(seed)
    for epoch in range(100):
        order = rng.permutation(len(y_fit))
        for start in range(0, len(order), 16):
            rows = order[start:start + 16]
            train_step(model, optimiser, X_fit[rows], y_fit[rows])
    return model
"""


@pytest.mark.xfail(strict=True, reason="the held-out flowers live in the student's process (README, Not guaranteed)")
def test_ps08_held_out_flowers_read_again_score_nothing():
    points, message = grade(PS08, {"train": TRAIN_ON_RELOADED_HELD_OUT}, {"test_train"}, 60)["test_train"]
    assert points == 0, message
