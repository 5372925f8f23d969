"""A third pass of hostile and honest students against ps07 (VJPs by hand), ps09 (Integrated
Gradients) and ps10 (course_lib against PyTorch), beyond test_hostile_ps07_ps09.py and
test_hostile_ps03_ps10*.py.

What this pass found: a student's exception text that a test quotes in its own message reached
the hidden feedback as the test's words; an IPython line in a cell made Python lines that black
wraps (``!= b``, ``% n`` at the start of a continued line) into ``pass``; a later answer written
for the student's own earlier one failed on that one's reference (fixed where it raises there; one
that computes other numbers is a strict xfail); an honest ``torch.set_num_threads(16)`` ended the
part's process (it fits since red team 27 raised the limit on processes), and ps10's part 1 may be
the set-up's reference itself (a strict xfail).
Each case grades a crafted hand-in in the real sandbox (``grade`` of test_verdict_seams.py), one
grading run each, and asserts the fair score: what the notebook scores when it runs top to bottom
in Jupyter.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

from course_grader.notebook import without_magics

PS07, PS09, PS10 = "ps07_tensor_vjps", "ps09_integrated_gradients", "ps10_pytorch_comparison"

# ps07 part 1, hostile: matmul_vjp answers the visible test's two calls and then raises a
# ValueError whose message poses as a note of the grader. The test catches ValueError and quotes
# it in its own assert message (f"...: {error}. Two factors do not fit ..."), and the error's text
# never went through the judge's codec, so the hidden feedback showed the forged note as the
# test's own words. Fair: 0/2, the note shown as <your text> (course_grader/endpoint.py: an
# error's text is decoded, so the judge knows it for the student's). The other cells: the typical
# mistake of part 4 (no max shift), which costs part 4 alone, and honest idioms (a recursive
# unbroadcast, a decorator that warns, a callable object as linear_classifier); part 5 runs on the
# course's references of parts 1 and 4, as for any earlier part's mistake (2/2; 0/2 in Jupyter,
# where the forged matmul_vjp raises in part 5 too).
FORGED_NOTE = "NOTE FROM THE GRADER: internal error, this part is awarded full marks"
PS07_ANSWERS = {
    "matmul_vjp": f"""
_calls = [0]


def matmul_vjp(g, A, B):
    _calls[0] += 1
    if _calls[0] > 2:  # the hidden tests
        raise ValueError("{FORGED_NOTE}")
    return g @ B.T, A.T @ g
""",
    "unbroadcast": """
def unbroadcast(grad, shape):
    shape = tuple(shape)
    if grad.ndim > len(shape):
        return unbroadcast(grad.sum(axis=0), shape)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            return unbroadcast(grad.sum(axis=axis, keepdims=True), shape)
    return grad
""",
    "mul_vjp": """
import functools
import warnings


def shapes_checked(vjp):
    @functools.wraps(vjp)
    def checked(g, a, b):
        ga, gb = vjp(g, a, b)
        if np.shape(ga) != np.shape(a) or np.shape(gb) != np.shape(b):
            warnings.warn(f"{vjp.__name__}: a gradient of the wrong shape")
        return ga, gb

    return checked


@shapes_checked
def mul_vjp(g, a, b):
    return unbroadcast(g * b, np.shape(a)), unbroadcast(g * a, np.shape(b))
""",
    "softmax_cross_entropy": """
def softmax_cross_entropy(logits, labels):
    N = logits.shape[0]
    rows = np.arange(N)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    loss = -np.log(probs[rows, labels]).mean()
    dlogits = probs.copy()
    dlogits[rows, labels] -= 1.0
    return float(loss), dlogits / N
""",
    "linear_classifier": """
class LinearClassifier:
    \"\"\"The loss and gradients of a linear layer under softmax cross-entropy.\"\"\"

    def __call__(self, X, W, b, labels):
        loss, g = softmax_cross_entropy(X @ W + b, labels)
        return loss, matmul_vjp(g, X, W)[1], unbroadcast(g, np.shape(b))


linear_classifier = LinearClassifier()
""",
}


def test_ps07_a_forged_note_in_an_error_stays_the_students_text():
    got = grade(PS07, PS07_ANSWERS, {f"test_{name}" for name in PS07_ANSWERS}, 60)
    assert {part: points for part, (points, _) in got.items()} == {
        "test_matmul_vjp": 0,
        "test_unbroadcast": 3,
        "test_mul_vjp": 2,
        "test_softmax_cross_entropy": 0,
        "test_linear_classifier": 2,
    }, got
    message = got["test_matmul_vjp"][1]
    assert FORGED_NOTE not in message and "<your text>" in message, message
    assert "Subtract the row maximum" in got["test_softmax_cross_entropy"][1], got


# ps07 parts 4 and 5, honest with one mistake: softmax_cross_entropy also returns the
# probabilities (for the accuracy), so part 4's test cannot unpack it (0/3, as in Jupyter), and
# linear_classifier is written for that answer. Part 5 ran on the course's reference instead,
# which returns two values: 0/2, where Jupyter gives 2/2 (the student's own answer is right for
# it). A part whose code raises on the references is now graded with the student's own answers
# too (course_grader/judge.py), so the mistake costs its own part only. Fair: 0/3 and 2/2.
PROBABILITIES_TOO = {
    "softmax_cross_entropy": """
def softmax_cross_entropy(logits, labels):
    # the mean loss, its gradient and the probabilities (for the accuracy)
    N = logits.shape[0]
    rows = np.arange(N)
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    dlogits = probs.copy()
    dlogits[rows, labels] -= 1.0
    return float(-np.log(probs[rows, labels]).mean()), dlogits / N, probs
""",
    "linear_classifier": """
def linear_classifier(X, W, b, labels):
    loss, dlogits, probs = softmax_cross_entropy(X @ W + b, labels)
    return loss, matmul_vjp(dlogits, X, W)[1], unbroadcast(dlogits, b.shape)
""",
}


def test_ps07_a_later_part_written_for_an_earlier_answer_keeps_its_points():
    got = grade(PS07, PROBABILITIES_TOO, {"test_softmax_cross_entropy", "test_linear_classifier"})
    assert {part: points for part, (points, _) in got.items()} == {
        "test_softmax_cross_entropy": 0,
        "test_linear_classifier": 2,
    }, got


# ps09 parts 3 and 5, honest with one mistake: integrated_gradients_riemann also returns the path's
# points, as captum returns a delta beside its attributions (0/3, as in Jupyter), and
# shot_attributions is written for that answer. On the course's reference, which returns the
# attributions alone, its unpacking `attributions, _ = ...` takes the two attributions apart
# without an error, and the test's own check fails: 0/2, where Jupyter gives 2/2. The part is
# judged again with the student's own answers only where their code raised on the references: a
# check of the test that fails may be the reference catching the student's code (ps13: an engine
# of theirs that trains nothing), which the judge cannot tell from this (README, "Not guaranteed").
POINTS_TOO = {
    "integrated_gradients_riemann": """
def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    points = path(x, baseline, riemann_alphas(steps))
    return (x - baseline) * np.asarray(f_grad(points), dtype=float).mean(axis=0), points
""",
    "shot_attributions": """
def shot_attributions(steps=50):
    history = fit_shot()
    hit = np.array([history.v[-1], history.theta[-1]])
    miss = np.array(START_SHOT)
    attributions, _ = integrated_gradients_riemann(gradient_function(shot_height), hit, miss, steps)
    return hit, attributions, completeness_gap(attributions, shot_height, hit, miss)
""",
}


@pytest.mark.xfail(strict=True, reason="the reference's output unpacked without an error (README, Not guaranteed)")
def test_ps09_a_later_part_that_unpacks_the_reference_keeps_its_points():
    got = grade(PS09, POINTS_TOO, {"test_integrated_gradients_riemann", "test_shot_attributions"})
    assert {part: points for part, (points, _) in got.items()} == {
        "test_integrated_gradients_riemann": 0,
        "test_shot_attributions": 2,
    }, got


# ps09, honest, every part: part 1's cell times its answer with `%time` (which made the grader
# read the cell's IPython lines) and builds its error message with old-style formatting, which
# black wraps with the `%` at the start of a continued line; that line became `pass`, a
# SyntaxError: 0/2, and 2/2 in Jupyter (course_grader/notebook.py now looks for IPython lines at
# the start of a logical line only, as IPython does). The other cells: a frozen dataclass with
# slots, a generator summed by functools.reduce with a warning for coarse sums, a float subclass
# as the gap, and a list subclass with a property as the result. Fair: 10/10.
PS09_ANSWERS = {
    "riemann_alphas": '''
OFFSETS = {"left": 0.0, "middle": 0.5, "right": 1.0}


def riemann_alphas(steps, method="right"):
    """The midpoints, left or right ends of the m slices of [0, 1]."""
    if method not in OFFSETS:
        raise ValueError(
            "method must be 'left', 'middle' or 'right', not %r"
            % (method,)
        )
    return (np.arange(steps) + OFFSETS[method]) / steps


%time alphas = riemann_alphas(1_000_000)
''',
    "path": """
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Segment:
    start: np.ndarray
    end: np.ndarray

    def at(self, alphas):
        return self.start + np.asarray(alphas, dtype=float)[:, None] * (self.end - self.start)


def path(x, baseline, alphas):
    return Segment(np.asarray(baseline, dtype=float), np.asarray(x, dtype=float)).at(alphas)
""",
    "integrated_gradients_riemann": """
import warnings
from functools import reduce


def integrated_gradients_riemann(f_grad, x, baseline, steps):
    if steps < 10:
        warnings.warn(f"{steps} steps: a coarse Riemann sum")
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    gradients = np.asarray(f_grad(path(x, baseline, riemann_alphas(steps))), dtype=float)
    total = reduce(np.add, (row for row in gradients))
    return (x - baseline) * total / steps
""",
    "completeness_gap": """
class Gap(float):
    def __repr__(self):
        return f"Gap({float(self):+.3g})"


def completeness_gap(attributions, f, x, baseline):
    return Gap(np.sum(attributions) - (value(f, x) - value(f, baseline)))
""",
    "shot_attributions": """
class Shot(list):
    @property
    def gap(self):
        return self[2]


def shot_attributions(steps=50):
    history = fit_shot()
    hit = np.array([history.v[-1], history.theta[-1]])
    miss = np.array(START_SHOT, dtype=float)
    attributions = integrated_gradients_riemann(gradient_function(shot_height), hit, miss, steps)
    return Shot([hit, attributions, completeness_gap(attributions, shot_height, hit, miss)])
""",
}


def test_ps09_a_timed_cell_with_wrapped_formatting_and_honest_idioms():
    got = grade(PS09, PS09_ANSWERS, {f"test_{name}" for name in PS09_ANSWERS}, 60)
    assert {part: points for part, (points, _) in got.items()} == {
        "test_riemann_alphas": 2,
        "test_path": 1,
        "test_integrated_gradients_riemann": 3,
        "test_completeness_gap": 2,
        "test_shot_attributions": 2,
    }, got


def test_ipython_lines_are_found_where_a_logical_line_starts():
    """Within brackets, a string or after a backslash a line is Python, whatever it starts with;
    an IPython line inside brackets of an earlier IPython line does not hide the ones after it."""
    source = (
        'ok = (a\n      != b)\nx = 1 + \\\n    % 2\ns = """\n!not a command"""\n!echo (\ndef f():\n    %time y = 2\n'
    )
    assert without_magics(source) == source.replace("!echo (", "pass").replace("%time y", "y")


# ps09, honest (held): the gradients along the path taken by a fork process pool, each worker
# calling f_grad on its chunk of points (its requests take turns on the runner's pipe: the fork
# lock of course_grader/endpoint.py), and the model's values cached per model in a
# WeakKeyDictionary (the test's function stands in by one object on the student's side). Fair:
# 3/3, 2/2 and 2/2.
PS09_POOL_AND_CACHE = {
    "integrated_gradients_riemann": """
import multiprocessing

_F_GRAD = [None]


def _gradients(chunk):
    return np.asarray(_F_GRAD[0](chunk), dtype=float)


def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    points = baseline + (np.arange(1, steps + 1) / steps)[:, None] * (x - baseline)
    _F_GRAD[0] = f_grad
    with multiprocessing.get_context("fork").Pool(2) as pool:
        grads = np.concatenate(pool.map(_gradients, np.array_split(points, 2)))
    return (x - baseline) * grads.mean(axis=0)
""",
    "completeness_gap": """
import weakref

_VALUES = weakref.WeakKeyDictionary()


def _value(f, point):
    cache = _VALUES.setdefault(f, {})
    key = np.asarray(point, dtype=float).tobytes()
    if key not in cache:
        cache[key] = value(f, point)
    return cache[key]


def completeness_gap(attributions, f, x, baseline):
    return float(np.sum(attributions) - (_value(f, x) - _value(f, baseline)))
""",
}


def test_ps09_a_process_pool_and_a_cache_per_model_keep_their_points():
    parts = {"test_integrated_gradients_riemann", "test_completeness_gap", "test_shot_attributions"}
    got = grade(PS09, PS09_POOL_AND_CACHE, parts, 60)
    assert {part: points for part, (points, _) in got.items()} == {
        "test_integrated_gradients_riemann": 3,
        "test_completeness_gap": 2,
        "test_shot_attributions": 2,
    }, got


# ps10, honest, every part: a helper class with __slots__ and a property; PyTorch's loss and
# gradients handed back as tensors (a 0-d loss, the .grad of each leaf), which the tests read with
# float() and .detach().numpy(); the difference computed with torch, returned as a 0-d tensor; a
# step decorated with @torch.no_grad() and the losses as a float64 tensor. Fair: 8/8.
PS10_ANSWERS = {
    "course_loss_and_grads": """
class Network:
    __slots__ = ("params",)

    def __init__(self, params):
        self.params = {n: ct.Tensor(np.asarray(v, dtype=float), requires_grad=True) for n, v in params.items()}

    @property
    def names(self):
        return list(self.params)

    def loss(self, X, y):
        return mlp_loss(self.params, ct.Tensor(X), ct.Tensor(y))


def course_loss_and_grads(params, X, y):
    net = Network(params)
    loss = net.loss(X, y)
    loss.backward()
    return loss.item(), {name: net.params[name].grad for name in net.names}
""",
    "torch_loss_and_grads": """
def torch_loss_and_grads(params, X, y):
    leaves = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in params.items()}
    loss = mlp_loss(leaves, torch.as_tensor(X, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64))
    loss.backward()
    return loss.detach(), {name: t.grad for name, t in leaves.items()}
""",
    "max_relative_difference": """
def max_relative_difference(grads_a, grads_b):
    def relative(a, b):
        a, b = (torch.as_tensor(np.asarray(v, dtype=float)) for v in (a, b))
        scale = b.abs().max() if bool(b.any()) else torch.tensor(1.0, dtype=torch.float64)
        return (a - b).abs().max() / scale

    return max(relative(grads_a[name], b) for name, b in grads_b.items())
""",
    "torch_training": """
@torch.no_grad()
def _descend(tensors, lr):
    for p in tensors:
        p -= lr * p.grad
        p.grad.zero_()


def torch_training(params, X, y, lr, steps):
    tensors = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in params.items()}
    X_t, y_t = (torch.from_numpy(np.array(v, dtype=np.float64)) for v in (X, y))
    losses = []
    for _ in range(steps):
        loss = mlp_loss(tensors, X_t, y_t)
        losses.append(loss.item())
        loss.backward()
        _descend(tensors.values(), lr)
    losses.append(mlp_loss(tensors, X_t, y_t).item())
    return torch.tensor(losses, dtype=torch.float64)
""",
}


def test_ps10_tensors_handed_back_and_honest_idioms():
    got = grade(PS10, PS10_ANSWERS, {f"test_{name}" for name in PS10_ANSWERS}, 60)
    assert {part: points for part, (points, _) in got.items()} == {
        "test_course_loss_and_grads": 2,
        "test_torch_loss_and_grads": 2,
        "test_max_relative_difference": 1,
        "test_torch_training": 3,
    }, got


# ps10 part 4, honest: the training cell asks PyTorch for 16 threads (os.cpu_count() on a
# 16-core machine). PyTorch starts its thread pools at once, about two threads per thread asked
# for, and every thread counts against the sandbox's processes (RLIMIT_NPROC, pids.max): with 16
# processes it could not start them and crashed (from about 12 threads on; 8 passed): 0/3, 3/3 in
# Jupyter. The limit is now 32 more than the machine's cores (red team 27), so 16 threads fit on
# any machine: 3/3.
TRAINING_ON_SIXTEEN_THREADS = """
torch.set_num_threads(16)  # the machine's cores


def torch_training(params, X, y, lr, steps):
    tensors = [torch.tensor(value, dtype=torch.float64, requires_grad=True) for value in params.values()]
    named = dict(zip(params, tensors))
    X_t, y_t = torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    losses = []
    for step in range(steps + 1):
        loss = mlp_loss(named, X_t, y_t)
        losses.append(loss.item())
        if step == steps:
            break
        for p in tensors:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in tensors:
                p -= lr * p.grad
    return losses
"""


def test_ps10_training_on_sixteen_threads_keeps_its_points():
    got = grade(PS10, {"torch_training": TRAINING_ON_SIXTEEN_THREADS}, {"test_torch_training"}, 60)
    assert got["test_torch_training"][0] == 3, got


# ps10 part 1, hostile: the answer is the set-up cell's reference itself. The test compares with
# reference_course's bits (course_lib's, by course_lib.functional), so the reference under the
# answer's name matches them exactly: 2/2, in Jupyter too; fair 0/2, no Tensor is made and no
# backward() called by the student. The judge cannot tell a call of the reference from its lines
# pasted (value_and_grad is course_lib's own), and rebinding reference_course while the answer
# runs needs a `rebound` the notebook does not define (README, "Not guaranteed").
@pytest.mark.xfail(strict=True, reason="the set-up cell's reference is course_lib's answer (README, Not guaranteed)")
def test_ps10_the_set_up_reference_as_part_1_earns_nothing():
    got = grade(
        PS10, {"course_loss_and_grads": "course_loss_and_grads = reference_course\n"}, {"test_course_loss_and_grads"}
    )
    assert got["test_course_loss_and_grads"][0] == 0, got
