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

# Part 2, honest: Dual rebound to a subclass that also divides, and the output's tangent read only
# where f gave a Dual. The judge's reference forward mode (part 4) then made the student's Duals
# of its own Nums, whose methods the student's process may not call: part 4 failed with ReadOnly.
# And the hidden probe's output (student_side(Dual, ...)) was the set-up cells' Dual, not the
# student's, as it is in Jupyter: isinstance said no, 0/2.
DUAL_SUBCLASS = """
class Dual(Dual):
    \"\"\"Dual numbers that also divide.\"\"\"
    __slots__ = ()

    def __truediv__(self, other):
        other = self._lift(other)
        quotient = self.primal / other.primal
        return Dual(quotient, (self.tangent - quotient * other.tangent) / other.primal)


def gradient_by_forward_mode(f, x):
    gradient = []
    for i in range(len(x)):
        out = f([Dual(Num(v), Num(float(i == j))) for j, v in enumerate(x)])
        gradient.append(out.tangent.value if isinstance(out, Dual) else 0.0)  # f may ignore its inputs
    return gradient
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


# ps08 part 4, honest: MLP rebound to a subclass with a method of the student's that train_step
# uses. The test's models (student_side(MLP, ...)) were course_lib's MLP, not the student's
# class as in Jupyter: 0/3 ("'MLP' object has no attribute 'loss'").
MLP_SUBCLASS = """
class MLP(MLP):
    \"\"\"course_lib's MLP with the loss of a minibatch as a method.\"\"\"

    def loss(self, X, y):
        return cross_entropy(self(X), y)


def train_step(model, optimiser, X, y):
    optimiser.zero_grad()
    loss = model.loss(X, y)
    loss.backward()
    optimiser.step()
    return loss.item()
"""

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


def test_ps08_a_subclass_of_mlp_keeps_its_points_and_training_on_all_150_flowers_scores_nothing():
    """Fair: 3/3 for train_step, 0/3 for train."""
    got = grade(
        PS08, {"train_step": MLP_SUBCLASS, "train": TRAIN_ON_ALL_FLOWERS}, {"test_train_step", "test_train"}, 60
    )
    assert got["test_train_step"][0] == 3, got
    assert got["test_train"][0] == 0 and "were replaced by others" in got["test_train"][1], got


# The probes of parts 2 and 3 check that the partial derivatives come off the output's tangent,
# or back through the output with backward; not how the student's own classes made that output.
# Part 2: a Dual subclass that records a tape on the side and reads an unseeded tangent off a
# reverse sweep of it (no forward mode at all). Part 3: forward mode on vector tangents whose
# output poses as a node of a tape with one edge to every leaf, the partial derivative as its
# local derivative. 2/2 each, graded and in Jupyter (README, "Not guaranteed": operations inside
# the student's process).
TANGENT_BY_A_SWEEP = """class Spy(Dual):
    \"\"\"Looks like a Dual to f; records a tape on the side, and its tangent, where nobody seeded
    one, is read off a reverse sweep of that tape.\"\"\"
    __slots__ = ("var", "seed", "context")

    def __init__(self, primal, tangent, var=None, context=None):
        self.var = Var(primal) if var is None else var
        self.context = context
        super().__init__(primal, tangent)

    @property
    def tangent(self):
        if self.seed is not None:
            return self.seed
        leaves, index = self.context
        backward(self.var)
        return leaves[index].var.grad

    @tangent.setter
    def tangent(self, value):
        self.seed = value

    def _with(self, var):
        return Spy(var.value, None, var, self.context)

    def __add__(self, other):
        return self._with(self.var + getattr(other, "var", other))

    def __sub__(self, other):
        return self._with(self.var - getattr(other, "var", other))

    def __mul__(self, other):
        return self._with(self.var * getattr(other, "var", other))

    __radd__, __rmul__ = __add__, __mul__

    def __rsub__(self, other):
        return self._with(other - self.var)

    def __neg__(self):
        return self._with(-self.var)

    def sin(self):
        return self._with(self.var.sin())

    def cos(self):
        return self._with(self.var.cos())

    def exp(self):
        return self._with(self.var.exp())

    def tanh(self):
        return self._with(self.var.tanh())


def gradient_by_forward_mode(f, x):
    gradient = []
    for i in range(len(x)):
        context = [[], i]
        spies = [Spy(Num(v), Num(1.0 if j == i else 0.0), context=context) for j, v in enumerate(x)]
        context[0] = spies
        gradient.append(f(spies).tangent.value)
    return gradient
"""
VECTOR_FORWARD_MODE_AS_A_TAPE = """class Jet:
    \"\"\"A value and its whole gradient (a NumPy vector), posing as a node of a tape: one edge to
    every leaf, with the partial derivative as its local derivative.\"\"\"

    def __init__(self, primal, tangent, leaves):
        self.primal, self.tangent, self.leaves, self.grad = primal, np.asarray(tangent, dtype=float), leaves, None

    @property
    def value(self):
        return Num(self.primal)

    @property
    def parents(self):
        return tuple((leaf, Num(float(d))) for leaf, d in zip(self.leaves, self.tangent))

    def _lift(self, other):
        return other if isinstance(other, Jet) else Jet(float(other), 0.0, self.leaves)

    def _new(self, primal, tangent):
        return Jet(primal, tangent, self.leaves)

    def __add__(self, other):
        other = self._lift(other)
        return self._new(self.primal + other.primal, self.tangent + other.tangent)

    def __sub__(self, other):
        other = self._lift(other)
        return self._new(self.primal - other.primal, self.tangent - other.tangent)

    def __mul__(self, other):
        other = self._lift(other)
        return self._new(self.primal * other.primal, self.tangent * other.primal + self.primal * other.tangent)

    __radd__, __rmul__ = __add__, __mul__

    def __rsub__(self, other):
        return self._lift(other) - self

    def __neg__(self):
        return self._new(-self.primal, -self.tangent)

    def sin(self):
        return self._new(math.sin(self.primal), math.cos(self.primal) * self.tangent)

    def cos(self):
        return self._new(math.cos(self.primal), -math.sin(self.primal) * self.tangent)

    def exp(self):
        return self._new(math.exp(self.primal), math.exp(self.primal) * self.tangent)

    def tanh(self):
        t = math.tanh(self.primal)
        return self._new(t, (1 - t * t) * self.tangent)


def gradient_by_reverse_mode(f, x):
    leaves = [Var(Num(v)) for v in x]
    backward(f([Jet(v, e, leaves) for v, e in zip(x, np.eye(len(x)))]))
    return [leaf.grad.value for leaf in leaves]
"""


@pytest.mark.xfail(strict=True, reason="what the student's classes do inside a pass is theirs (README, Not guaranteed)")
def test_ps11_gradients_made_another_way_inside_the_students_classes_score_nothing():
    answers = {
        "gradient_by_forward_mode": TANGENT_BY_A_SWEEP,
        "gradient_by_reverse_mode": VECTOR_FORWARD_MODE_AS_A_TAPE,
    }
    got = grade(PS11, answers, {f"test_{name}" for name in answers})
    assert got["test_gradient_by_forward_mode"][0] == 0, got
    assert got["test_gradient_by_reverse_mode"][0] == 0, got
