"""A fourth pass of hostile and honest students against ps06 (custom rules and Jacobians), ps07
(VJPs by hand), ps09 (Integrated Gradients) and ps10 (course_lib against PyTorch).

Tried, and held (graded as in Jupyter, checked with ``idioms.differences``): honest answers in
idioms the fuzzer does not write. ps06: a forward pass into an ``out=`` buffer or a copy of
``x.numpy()``, a rule by ``operator.methodcaller``, rules mixing ``.data`` arrays with the test's
Tensor ``g`` on either side (``a.data / out.data * g``), ``type(g)(...)`` and ``g.__class__(...)``,
``functools.reduce``/``partial`` of rules, ``np.apply_along_axis`` over a VJP, a ``stack`` of
Tensor rows from a ``functools.partial`` of the test's ``f``, columns pushed by a thread pool with
``jvp`` through a lambda, put together by ``np.vectorize`` or ``np.einsum``, and ``jvp`` rebound
to a wrapper of the given one. ps07: ``np.matmul(..., out=)``, ``np.tensordot``, ``np.einsum``,
``np.add.reduce``, in-place ``np.exp(z, out=z)`` on a copy, ``np.put_along_axis``; a global
``np.seterr(all="raise")`` (0/3 both ways: the hidden test's own cross-entropy underflows too).
ps09: alphas as an ``array.array``, a path returned as a ``memoryview`` of an ``out=`` buffer,
gradients by ``np.apply_along_axis`` over a ``functools.partial`` of ``f_grad``, a gap by
``math.fsum`` under ``np.errstate(all="raise")``, a hit cached by ``functools.lru_cache``. ps10:
Tensors made by ``functools.partial(ct.Tensor, ...)``, leaves by ``torch.from_numpy(...)
.requires_grad_()`` and ``torch.autograd.grad``, ``torch.inference_mode``, ``torch.nn.Parameter``
with ``torch.optim.SGD``, losses as a list of 0-d tensors. Hostile: ps10's
``max_relative_difference`` returning the test cell's own ``reference_difference`` scores 1/1 in
Jupyter (the cell defines it before calling the answer) and 0/1 graded, which is fair (the
runner runs only earlier test cells' lines).

Found: ``inspect.signature`` of a test's function (a tracer that names the arguments it passes
with ``signature(f).bind``) raised on the student's side, where the function is a stand-in: 0/3
where 3/3 is fair. The judge now sends a function's signature; a hidden test's own function's
with its parameters numbered and its defaults a placeholder, since they hold the test's inputs
and counters (ps06's ``lambda x, f=f: ...``).
Each case grades a crafted hand-in in the real sandbox (``grade`` of test_verdict_seams.py) and
asserts the fair score: what the notebook scores when it runs top to bottom in Jupyter.
"""

from __future__ import annotations

from test_verdict_seams import grade

PS06, PS07 = "ps06_custom_rules_jacobians", "ps07_tensor_vjps"
PS09, PS10 = "ps09_integrated_gradients", "ps10_pytorch_comparison"


def points(got: dict) -> dict:
    return {part: score for part, (score, _) in got.items()}


# ps06, honest, every part (held): the test's Tensor g handled in NumPy and by its own type, rows
# of a Tensor stack, columns from a thread pool. Fair: 10/10.
PS06_ANSWERS = {
    "softplus": """
def softplus(x):
    values = x.numpy().copy()
    np.logaddexp(0.0, values, out=values)
    return record("softplus", values, (x,))
""",
    "softplus_vjp": """
import operator

_sigmoid = operator.methodcaller("sigmoid")


def softplus_vjp(g, out, x):
    return g * _sigmoid(x)
""",
    "hypot_vjps": """
def hypot_vjp_a(g, out, a, b):
    return unbroadcast(a.data / out.data * g, a.shape)


def hypot_vjp_b(g, out, a, b):
    return unbroadcast(g.__class__(np.divide(np.multiply(g.data, b.data), out.data)), b.shape)
""",
    "jacobian_by_vjps": """
import functools


def jacobian_by_vjps(f, x):
    y, vjp_fn = vjp(functools.partial(f), x)
    return stack([vjp_fn(e) for e in np.eye(len(y))])
""",
    "jacobian_by_jvps": """
from concurrent.futures import ThreadPoolExecutor


def jacobian_by_jvps(f, x):
    with ThreadPoolExecutor(4) as pool:
        columns = list(pool.map(lambda e: jvp(lambda t: f(t), (x,), (e,))[1].numpy(), np.eye(len(x))))
    return np.einsum("ji->ij", np.array(columns))
""",
}


def test_ps06_numpy_beside_the_tests_tensors_and_pooled_columns_keep_their_points():
    got = grade(PS06, PS06_ANSWERS, {f"test_{name}" for name in PS06_ANSWERS}, 60)
    assert points(got) == {
        "test_softplus": 2,
        "test_softplus_vjp": 2,
        "test_hypot_vjps": 2,
        "test_jacobian_by_vjps": 2,
        "test_jacobian_by_jvps": 2,
    }, got


# ps09, honest, every part (held): a stdlib array of alphas, a memoryview of the path, gradients
# point by point through np.apply_along_axis, a gap by math.fsum. Fair: 10/10.
PS09_ANSWERS = {
    "riemann_alphas": """
from array import array


def riemann_alphas(steps, method="right"):
    offset = {"left": 0.0, "middle": 0.5, "right": 1.0}[method]
    return array("d", ((k + offset) / steps for k in range(steps)))
""",
    "path": """
def path(x, baseline, alphas):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    out = np.empty((len(alphas), len(x)))
    np.multiply.outer(np.asarray(alphas, dtype=float), x - baseline, out=out)
    out += baseline
    return memoryview(out)
""",
    "integrated_gradients_riemann": """
import functools


def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    points = np.asarray(path(x, baseline, riemann_alphas(steps)))
    at = functools.partial(f_grad)
    grads = np.apply_along_axis(lambda p: np.asarray(at(p[None]))[0], 1, points)
    return (x - baseline) * grads.mean(axis=0)
""",
    "completeness_gap": """
import math


def completeness_gap(attributions, f, x, baseline):
    with np.errstate(all="raise"):
        rise = np.subtract(*map(functools.partial(value, f), (x, baseline)))
    return math.fsum(np.ravel(attributions)) - rise
""",
    "shot_attributions": """
@functools.lru_cache(maxsize=None)
def _hit():
    history = fit_shot()
    return np.array([history.v[-1], history.theta[-1]])


def shot_attributions(steps=50):
    hit, miss = _hit().copy(), np.array(START_SHOT)
    attributions = integrated_gradients_riemann(gradient_function(shot_height), hit, miss, steps)
    return hit, attributions, completeness_gap(attributions, shot_height, hit, miss)
""",
}


def test_ps09_stdlib_buffers_and_gradients_point_by_point_keep_their_points():
    got = grade(PS09, PS09_ANSWERS, {f"test_{name}" for name in PS09_ANSWERS}, 60)
    assert points(got) == {
        "test_riemann_alphas": 2,
        "test_path": 1,
        "test_integrated_gradients_riemann": 3,
        "test_completeness_gap": 2,
        "test_shot_attributions": 2,
    }, got


# ps09 part 3, honest: the gradient function wrapped in a tracer that names the arguments it is
# called with, as a logging decorator does (inspect.signature(f).bind). In Jupyter the test's
# f_grad (made by the set-up's gradient_function) is a function with a signature: 3/3. Graded it
# was the stand-in of a function that lives in the judge, which inspect took for a builtin without
# a text signature: ValueError, 0/3. The judge now sends a function's signature (its defaults as
# objects the student's code may read but not call; a hidden test's own function's numbered).
SIGNATURE_OF_F_GRAD = {
    "integrated_gradients_riemann": """
import inspect


def traced(fn):
    signature = inspect.signature(fn)

    def call(*args, **kwargs):
        named = signature.bind(*args, **kwargs).arguments
        print(f"{fn.__name__}(" + ", ".join(f"{k}: {np.shape(v)}" for k, v in named.items()) + ")")
        return fn(*args, **kwargs)

    return call


def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    grads = np.asarray(traced(f_grad)(path(x, baseline, riemann_alphas(steps))), dtype=float)
    return (x - baseline) * grads.mean(axis=0)
""",
}


def test_ps09_the_signature_of_the_tests_function_reads_as_in_jupyter():
    got = grade(PS09, SIGNATURE_OF_F_GRAD, {"test_integrated_gradients_riemann"})
    assert points(got) == {"test_integrated_gradients_riemann": 3}, got


# ps06 part 4, hostile: counted_f, a lambda of the hidden test, keeps the uncounted f as its
# default (`lambda x, f=f: ...`). A hidden test's function shows its signature with its parameters
# numbered and its defaults a placeholder: the hand-in below answers right only when it cannot
# reach that f (nor its name), so 2/2 proves the masking.
READS_THE_HIDDEN_DEFAULTS = {
    "jacobian_by_vjps": """
import inspect


def jacobian_by_vjps(f, x):
    for parameter in inspect.signature(f).parameters.values():
        if parameter.name == "f" or parameter.default is not parameter.empty and callable(parameter.default):
            return np.zeros((1, 1))  # the hidden test's uncounted f reached: the check fails
    y, vjp_fn = vjp(f, np.asarray(x, dtype=float))
    m = int(np.prod(y.shape))
    return np.stack([vjp_fn(np.eye(m)[i]).data for i in range(m)])
""",
}


def test_ps06_a_hidden_tests_function_shows_no_names_nor_defaults():
    got = grade(PS06, READS_THE_HIDDEN_DEFAULTS, {"test_jacobian_by_vjps"})
    assert points(got) == {"test_jacobian_by_vjps": 2}, got


# ps07 and ps10, honest (held): NumPy's out= buffers, einsum and tensordot; PyTorch's leaves from
# NumPy, autograd.grad, inference mode and SGD on Parameters. Fair: 12/12 and 8/8.
PS07_ANSWERS = {
    "matmul_vjp": """
def matmul_vjp(g, A, B):
    gA = np.empty(A.shape)
    np.matmul(g, B.T, out=gA)
    return gA, np.tensordot(A, g, axes=([0], [0]))
""",
    "unbroadcast": """
def unbroadcast(grad, shape):
    shape = tuple(shape)
    lead = grad.ndim - len(shape)
    stretched = (lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1)
    out = np.add.reduce(grad, axis=(*range(lead), *stretched), keepdims=True)
    return out.reshape(shape) if lead else out
""",
    "softmax_cross_entropy": """
def softmax_cross_entropy(logits, labels):
    N, picked = len(logits), np.asarray(labels)[:, None]
    z = np.array(logits, dtype=float, copy=True)
    z -= z.max(axis=1, keepdims=True)
    loss = np.mean(np.log(np.exp(z).sum(axis=1)) - np.take_along_axis(z, picked, axis=1)[:, 0])
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    np.put_along_axis(z, picked, np.take_along_axis(z, picked, axis=1) - 1.0, axis=1)
    return loss, z / N
""",
    "linear_classifier": """
def linear_classifier(X, W, b, labels):
    loss, g = softmax_cross_entropy(np.einsum("nd,dc->nc", X, W) + b, labels)
    return loss, matmul_vjp(g, X, W)[1], unbroadcast(g, b.shape)
""",
}

PS10_ANSWERS = {
    "course_loss_and_grads": """
import functools


def course_loss_and_grads(params, X, y):
    tensors = dict(zip(params, map(functools.partial(ct.Tensor, requires_grad=True), params.values())))
    loss = mlp_loss(tensors, *map(ct.Tensor, (X, y)))
    loss.backward()
    return loss.item(), {name: t.grad.copy() for name, t in tensors.items()}
""",
    "torch_loss_and_grads": """
def torch_loss_and_grads(params, X, y):
    leaves = {n: torch.from_numpy(np.asarray(v)).requires_grad_() for n, v in params.items()}
    loss = mlp_loss(leaves, torch.from_numpy(X), torch.from_numpy(y))
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return loss.item(), {n: g.numpy() for n, g in zip(leaves, grads)}
""",
    "max_relative_difference": """
def max_relative_difference(grads_a, grads_b):
    worst = 0.0
    for name in grads_b.keys() & grads_a.keys():
        a, b = (torch.as_tensor(d[name], dtype=torch.float64) for d in (grads_a, grads_b))
        with torch.inference_mode():
            scale = b.abs().max() if b.count_nonzero() else torch.ones(())
            worst = max(worst, ((a - b).abs().max() / scale).item())
    return worst
""",
    "torch_training": """
def torch_training(params, X, y, lr, steps):
    leaves = {n: torch.nn.Parameter(torch.tensor(v)) for n, v in params.items()}
    X_t, y_t = torch.from_numpy(X), torch.from_numpy(y)
    sgd = torch.optim.SGD(leaves.values(), lr=lr)
    losses = []
    for _ in range(steps):
        sgd.zero_grad()
        loss = mlp_loss(leaves, X_t, y_t)
        losses.append(loss.detach())
        loss.backward()
        sgd.step()
    with torch.inference_mode():
        losses.append(mlp_loss(leaves, X_t, y_t))
    return losses
""",
}


def test_ps07_and_ps10_out_buffers_einsum_and_pytorchs_own_tools_keep_their_points():
    got = grade(PS07, PS07_ANSWERS, {f"test_{name}" for name in PS07_ANSWERS}, 60)
    assert points(got) == {
        "test_matmul_vjp": 2,
        "test_unbroadcast": 3,
        "test_softmax_cross_entropy": 3,
        "test_linear_classifier": 2,
    }, got
    got = grade(PS10, PS10_ANSWERS, {f"test_{name}" for name in PS10_ANSWERS}, 60)
    assert points(got) == {
        "test_course_loss_and_grads": 2,
        "test_torch_loss_and_grads": 2,
        "test_max_relative_difference": 1,
        "test_torch_training": 3,
    }, got
