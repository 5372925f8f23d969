"""Hostile and honest students against ps07 (VJPs by hand) and ps09 (Integrated Gradients), second pass.

The seams found elsewhere this round, tried here: a set-up name an answer cell rebinds to a class
of its own (ps09's ``Tensor``, which builds the hidden tests' models) or to a lenient stand-in
(``np``, whose ``allclose`` the tests call); and honest answers in unusual idioms (exact
fractions, NamedTuples, dataclasses, lists where arrays are expected, a 0-d array for a float,
printing to stderr, a model evaluated on a batch of points). One graded run per assignment, an
attack and honest idioms side by side in different cells; each asserts the fair score.
"""

from __future__ import annotations

from test_verdict_seams import grade

PS07, PS09 = "ps07_tensor_vjps", "ps09_integrated_gradients"

# ps07 part 1, hostile: `np` rebound to an object whose allclose and isclose say yes to everything
# (everything else is NumPy's), with matmul_vjp returning zeros. Held: the tests' `np` is the
# judge's own. Fair: 0/2. The other cells are honest idioms: a NamedTuple, einsum, a list for a
# pair, a 0-d array as the loss, dlogits as nested lists, a print to stderr, a dataclass; part 5
# calls the failing matmul_vjp, whose reference stands in (2/2).
LENIENT_NUMPY = """
import numpy


class _Lenient:
    def __getattr__(self, name):
        return getattr(numpy, name)

    @staticmethod
    def allclose(*args, **kwargs):
        return True

    @staticmethod
    def isclose(*args, **kwargs):
        return True


np = _Lenient()


def matmul_vjp(g, A, B):
    return numpy.zeros(A.shape), numpy.zeros(B.shape)
"""
PS07_HONEST = {
    "unbroadcast": """
def unbroadcast(grad, shape):
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad
""",
    "mul_vjp": """
from typing import NamedTuple


class Pair(NamedTuple):
    ga: object
    gb: object


def mul_vjp(g, a, b):
    return Pair(unbroadcast(np.einsum("...,...->...", g, b), np.shape(a)), unbroadcast(g * a, np.shape(b)))
""",
    "softmax_cross_entropy": """
import sys


def softmax_cross_entropy(logits, labels):
    N, C = logits.shape
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    onehot = np.eye(C)[labels]
    loss = np.mean(np.log(np.exp(z).sum(axis=1)) - (z * onehot).sum(axis=1))
    print("loss", loss, file=sys.stderr)
    return np.array(loss), ((p - onehot) / N).tolist()
""",
    "linear_classifier": """
from dataclasses import dataclass


@dataclass
class Step:
    loss: float
    dW: np.ndarray
    db: np.ndarray


def linear_classifier(X, W, b, labels):
    loss, dlogits = softmax_cross_entropy(X @ W + b, labels)
    dlogits = np.asarray(dlogits)
    _, dW = matmul_vjp(dlogits, X, W)
    step = Step(float(loss), dW, unbroadcast(dlogits, np.shape(b)))
    return [step.loss, step.dW, step.db]
""",
}


def test_ps07_a_lenient_np_of_the_students_and_honest_idioms():
    answers = {"matmul_vjp": LENIENT_NUMPY, **PS07_HONEST}
    got = grade(PS07, answers, {f"test_{name}" for name in answers}, 60)
    assert {part: points for part, (points, _) in got.items()} == {
        "test_matmul_vjp": 0,
        "test_unbroadcast": 3,
        "test_mul_vjp": 2,
        "test_softmax_cross_entropy": 3,
        "test_linear_classifier": 2,
    }, got


# ps09 part 3, hostile: `Tensor` rebound to a subclass whose tanh is the identity, so that the
# hidden tests' random tanh networks, if built with it, would be linear and one gradient at the
# midpoint would give their exact IG; the visible cases are looked up. Held: the hidden tests
# build their models with course_lib's Tensor in the judge. Fair: 0/3. The other cells are honest
# idioms: exact Fractions as alphas, the path as nested lists, a NamedTuple of results, f_grad
# handed a list of lists, the gap by math.fsum with the model evaluated once on both points.
TANH_IS_IDENTITY = """
_Given = Tensor


class Tensor(_Given):
    def tanh(self):
        return self


_VISIBLE = {((1.0, 2.0, 3.0), (-1.0, 0.0, 1.0), 4): [4.0, -2.0, 1.0],
            ((3.0, 1.0), (1.0, -1.0), 4): [4.5, 0.5],
            ((2.0, 1.0), (0.0, 0.0), 400): [0.441843, 0.055230]}


def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    key = (tuple(x.tolist()), tuple(baseline.tolist()), steps)
    if key in _VISIBLE:
        return np.array(_VISIBLE[key])
    middle = (x + baseline) / 2
    return (x - baseline) * np.asarray(f_grad(middle[None]), dtype=float)[0]
"""
PS09_HONEST = {
    "riemann_alphas": """
from fractions import Fraction


def riemann_alphas(steps, method="right"):
    start = {"left": Fraction(0), "middle": Fraction(1, 2), "right": Fraction(1)}[method]
    return [(k + start) / steps for k in range(steps)]
""",
    "path": """
def path(x, baseline, alphas):
    return [[b + a * (xi - b) for xi, b in zip(x, baseline)] for a in alphas]
""",
    "shot_attributions": """
import math
from typing import NamedTuple


class Attribution(NamedTuple):
    hit: tuple
    attributions: np.ndarray
    gap: float


def _ig_on_lists(f_grad, x, baseline, steps):
    points = [list(baseline + k / steps * (x - baseline)) for k in range(1, steps + 1)]
    return (x - baseline) * np.mean(f_grad(points), axis=0)


def shot_attributions(steps=50):
    history = fit_shot()
    hit = (float(history.v[-1]), float(history.theta[-1]))
    x, miss = np.array(hit), np.array(START_SHOT)
    attributions = _ig_on_lists(gradient_function(shot_height), x, miss, steps)
    heights = shot_height(Tensor(np.stack([x, miss]))).data  # both points in one batch
    return Attribution(hit, attributions, math.fsum(attributions) - (heights[0] - heights[1]))
""",
}


# ps09 part 4, hostile: completeness_gap reads the expected gap from the globals of the model the
# hidden test hands it (its lambda's namespace holds `delta`), and answers the visible models
# honestly. Held: a function of the judge's crosses as a handle without its globals. Fair: 0/2.
PEEK_AT_THE_TESTS_GLOBALS = """
def completeness_gap(attributions, f, x, baseline):
    if getattr(f, "__qualname__", "") in ("linear", "bowl"):
        return float(np.sum(attributions) - (value(f, x) - value(f, baseline)))
    for read in (lambda: f.__globals__["delta"], lambda: f.__closure__[0].cell_contents):
        try:
            return float(read())
        except Exception:
            pass
    return 0.0
"""


def test_ps09_a_tensor_of_the_students_builds_no_test_model_and_honest_idioms():
    answers = {
        "integrated_gradients_riemann": TANH_IS_IDENTITY,
        "completeness_gap": PEEK_AT_THE_TESTS_GLOBALS,
        **PS09_HONEST,
    }
    got = grade(PS09, answers, {f"test_{name}" for name in answers}, 60)
    assert {part: points for part, (points, _) in got.items()} == {
        "test_riemann_alphas": 2,
        "test_path": 1,
        "test_integrated_gradients_riemann": 0,
        "test_completeness_gap": 0,
        "test_shot_attributions": 2,
    }, got
    assert all("expected" in got[part][1] for part in ["test_integrated_gradients_riemann", "test_completeness_gap"])


# ps09 part 3, honest: the gradients along the path taken by a thread pool, each point its own call
# of f_grad (3/3 in Jupyter). Graded, each thread's call of the judge's f_grad read the replies to
# the others' and the runner ended ("ended the Python process itself"): 0/3. The runner's requests
# now take turns (course_grader/runner.py, TALKING).
IG_BY_A_THREAD_POOL = """
from concurrent.futures import ThreadPoolExecutor


def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    points = [baseline + k / steps * (x - baseline) for k in range(1, steps + 1)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        grads = list(pool.map(lambda point: np.asarray(f_grad(point[None]), dtype=float)[0], points))
    return (x - baseline) * np.mean(grads, axis=0)
"""


def test_ps09_a_thread_pool_calling_f_grad_keeps_its_points():
    got = grade(PS09, {"integrated_gradients_riemann": IG_BY_A_THREAD_POOL}, {"test_integrated_gradients_riemann"})
    assert got["test_integrated_gradients_riemann"][0] == 3, got
