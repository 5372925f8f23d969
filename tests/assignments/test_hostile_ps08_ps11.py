"""Hostile and honest students against ps08 (training an MLP) and ps11 (the cheap-gradient ratio).

Each hand-in has read the grader's source and the visible tests; every case grades the parts it
concerns in the real sandbox (``grade`` of test_verdict_seams.py), an attack and an honest idiom
side by side where they live in different cells, and asserts the fair score: what a fair human
grader gives, which is also what the notebook scores in Jupyter since the fix.
"""

from __future__ import annotations

import weakref

import pytest
from test_verdict_seams import grade

from course_grader import stand_ins
from course_grader.stand_ins import JudgeCodec
from course_grader.test_tools import calls_to

PS08, PS11 = "ps08_training_mlp", "ps11_cheap_gradient"

# ps08 part 5: a network trained on the 30 held-out flowers (public, in the data cell) instead of
# the 120 training flowers. It classifies them all and also learns the shifted loss: 3/3 before.
# The hidden test now trains a fresh seed first with X_test_raw and y_test rebound to other
# flowers, then with the real ones, and requires the same network; a train that caches its
# networks by seed gives back the first, which fails the held-out accuracy.
TRAIN_ON_HELD_OUT = """
def train(seed):
    _, X_held_out = standardise(X_train_raw, X_test_raw)
    model = MLP([4, 16, 3], rng=seed)
    optimiser = SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(seed)
    for epoch in range(100):
        order = rng.permutation(len(y_test))
        for start in range(0, len(order), 16):
            rows = order[start:start + 16]
            train_step(model, optimiser, X_held_out[rows], y_test[rows])
    return model
"""

# ... and an honest train that reads the held-out flowers only to print how it is doing (with
# helper functions and the epochs in a generator): nothing it trains depends on them.
TRAIN_WATCHING_HELD_OUT = """
def minibatches(order, size=16):
    for start in range(0, len(order), size):
        yield order[start:start + size]


def train(seed, epochs=100):
    X_std, X_held_out = standardise(X_train_raw, X_test_raw)
    model = MLP([4, 16, 3], rng=seed)
    optimiser = SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        for rows in minibatches(rng.permutation(len(y_train))):
            train_step(model, optimiser, X_std[rows], y_train[rows])
        if epoch % 50 == 49:
            with no_grad():
                print(f"epoch {epoch + 1}: held-out accuracy {accuracy(model(X_held_out), y_test):.2f}")
    return model
"""


@pytest.mark.parametrize("cached", [False, True], ids=["fresh", "cached"])
def test_ps08_a_network_trained_on_the_held_out_flowers_scores_nothing(cached):
    """Fair: 0/3 (the part is a training run on the training flowers)."""
    answer = "import functools\n\n\n@functools.cache" + TRAIN_ON_HELD_OUT if cached else TRAIN_ON_HELD_OUT
    points, message = grade(PS08, {"train": answer}, {"test_train"}, 60)["test_train"]
    assert points == 0, message
    assert ("of 30 test flowers correctly" if cached else "were replaced by others") in message, message


def test_ps08_a_train_that_only_watches_the_held_out_flowers_scores_full_marks():
    points, message = grade(PS08, {"train": TRAIN_WATCHING_HELD_OUT}, {"test_train"}, 60)["test_train"]
    assert points == 3, message


# ps11 part 1: central differences answered with exact derivatives (n forward-mode passes with
# Duals, each padded with an evaluation on Nums to make the 2n evaluations the test counts). 2/2
# before; the hidden test now also hands a large step h, where central differences are not the
# derivative (bowl's are 3 x^2 - 2 x + h^2).
DIFFERENCES_BY_FORWARD_MODE = """
def gradient_by_differences(f, x, h=1e-5):
    gradient = []
    for i in range(len(x)):
        out = f([Dual(Num(v), Num(1.0 if j == i else 0.0)) for j, v in enumerate(x)])
        f([Num(v) for v in x])
        gradient.append(out.tangent.value)
    return gradient
"""

# ps11 part 2: forward mode answered by one reverse pass (the notebook's Var and backward),
# padded with n - 1 evaluations on Nums to make the n passes the test counts. 2/2 before; the
# test now reads the (primal, tangent) every pass hands to f: one pass per input, seeded e_i.
FORWARD_BY_REVERSE_MODE = """
def gradient_by_forward_mode(f, x):
    leaves = [Var(Num(v)) for v in x]
    backward(f(leaves))
    for _ in range(len(x) - 1):
        f([Num(v) for v in x])
    return [leaf.grad.value for leaf in leaves]
"""

# Honest: the points as NumPy arrays and the quotient of plain floats; forward mode with a Dual
# (its tangent a plain float) for the seeded input only, Nums for the others, in a tuple, the
# inputs seeded last to first.
HONEST_DIFFERENCES = """
def gradient_by_differences(f, x, h=1e-5):
    x = np.asarray(x, dtype=float)

    def at(point):
        return f([Num(v) for v in point]).value

    return [(at(x + h * e) - at(x - h * e)) / (2 * h) for e in np.eye(len(x))]
"""
HONEST_FORWARD = """
def gradient_by_forward_mode(f, x):
    partials = {}
    for i in reversed(range(len(x))):
        out = f(tuple(Dual(Num(v), 1.0) if j == i else Num(v) for j, v in enumerate(x)))
        partials[i] = out.tangent.value
    return [partials[i] for i in sorted(partials)]
"""
PS11_PARTS = {"test_gradient_by_differences", "test_gradient_by_forward_mode"}


def test_ps11_differences_by_forward_mode_score_nothing_beside_honest_forward_mode():
    """Fair: 0/2 for part 1, 2/2 for part 2."""
    got = grade(
        PS11,
        {"gradient_by_differences": DIFFERENCES_BY_FORWARD_MODE, "gradient_by_forward_mode": HONEST_FORWARD},
        PS11_PARTS,
    )
    assert got["test_gradient_by_differences"][0] == 0, got
    assert "it is given (use that h)" in got["test_gradient_by_differences"][1], got
    assert got["test_gradient_by_forward_mode"][0] == 2, got


def test_ps11_forward_mode_by_a_reverse_pass_scores_nothing_beside_honest_differences():
    """Fair: 2/2 for part 1, 0/2 for part 2."""
    got = grade(
        PS11,
        {"gradient_by_differences": HONEST_DIFFERENCES, "gradient_by_forward_mode": FORWARD_BY_REVERSE_MODE},
        PS11_PARTS,
    )
    assert got["test_gradient_by_differences"][0] == 2, got
    assert got["test_gradient_by_forward_mode"][0] == 0, got
    assert "did not evaluate f on Duals of x" in got["test_gradient_by_forward_mode"][1], got


# ... but a train that binds the held-out flowers when it is defined (default arguments) trains
# on them whatever the test rebinds: 3/3, graded and in Jupyter (README, "Not guaranteed").
TRAIN_ON_HELD_OUT_BOUND = TRAIN_ON_HELD_OUT.replace(
    "def train(seed):\n    _, X_held_out = standardise(X_train_raw, X_test_raw)",
    "def train(seed, X_test=X_test_raw, y_test=y_test):\n    _, X_held_out = standardise(X_train_raw, X_test)",
)


@pytest.mark.xfail(strict=True, reason="the held-out flowers live in the student's process (README, Not guaranteed)")
def test_ps08_held_out_flowers_bound_at_definition_score_nothing():
    assert "X_test=X_test_raw" in TRAIN_ON_HELD_OUT_BOUND
    points, message = grade(PS08, {"train": TRAIN_ON_HELD_OUT_BOUND}, {"test_train"}, 60)["test_train"]
    assert points == 0, message


def test_calls_counted_by_the_judge_keep_nothing_the_call_sent(monkeypatch):
    """ps11's count of backward sweeps (calls_to) kept every call's arguments in the judge: a
    gradient that called backward with 1,900,000 numbers ten times took the judge to about 1 GB."""

    class Sent:  # stands for what one call brings (plain data decoded in the judge)
        pass

    class Channel:
        codec = JudgeCodec()

        def request(self, op, **fields):
            return (lambda *args: None) if op == "setup" else None

    channel = Channel()
    monkeypatch.setattr(stand_ins, "CHANNEL", channel, raising=False)
    with calls_to("backward") as calls:
        (recorded,) = [f for f in channel.codec.objects.values() if getattr(f, "__name__", "") == "recorded"]
        sent = Sent()
        left = weakref.ref(sent)
        recorded(sent)
        recorded(Sent())
        del sent
        assert len(calls) == 2 and left() is None, calls


# An endless loop inside a test's calls_to (or rebound) block: at the time limit the judge gave
# the notebook's name back, a request the student's process, still looping, never answered; the
# judge waited for the sandbox's CPU limit (300 s on a busy machine, graded "killed (out of
# memory?)") instead of the test's 3 s.
ENDLESS_REVERSE_MODE = """
def gradient_by_reverse_mode(f, x):
    leaves = [Var(Num(v)) for v in x]
    out = f(leaves)
    while out is not None:  # meant to walk the tape
        pass
    return [leaf.grad.value for leaf in leaves]
"""


def test_an_endless_loop_within_counted_calls_times_out_as_the_test():
    points, message = grade(
        PS11, {"gradient_by_reverse_mode": ENDLESS_REVERSE_MODE}, {"test_gradient_by_reverse_mode"}, 3
    )["test_gradient_by_reverse_mode"]
    assert points == 0 and "the test ran longer than 3 s" in message, message


# ps11 part 2: the student's own Dual class records a tape for a reverse sweep of its own while it
# looks like forward mode to f (n passes of Duals of x, seeded e_i): 2/2 before. Hidden trials now
# hand an f whose output carries twice its tangent (test_hostile_ps08_ps11_again.py has more).
TAPE_IN_DUALS = """
class Spy(Dual):
    __slots__ = ("var",)

    def __init__(self, primal, tangent, var=None):
        super().__init__(primal, tangent)
        self.var = Var(primal) if var is None else var

    def _with(self, var):
        return Spy(self.primal, self.tangent, var)

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
        spies = [Spy(Num(v), Num(1.0 if j == i else 0.0)) for j, v in enumerate(x)]
        out = f(spies)
        if i == 0:
            backward(out.var)
            gradient = [spy.var.grad.value for spy in spies]
    return gradient
"""


def test_ps11_a_tape_inside_the_students_duals_scores_nothing():
    points, message = grade(PS11, {"gradient_by_forward_mode": TAPE_IN_DUALS}, {"test_gradient_by_forward_mode"})[
        "test_gradient_by_forward_mode"
    ]
    assert points == 0, message
