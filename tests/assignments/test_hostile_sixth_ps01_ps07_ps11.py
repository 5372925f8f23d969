"""A sixth pass of hostile and honest students against ps01 (finite differences), ps07 (VJPs by
hand) and ps11 (the cheap-gradient ratio), beyond the earlier test_hostile_*.py.

Found: ``get_ipython().user_ns``, the cells' namespace in Jupyter (an answer reading a class by
name there, ``get_ipython().user_ns["Num"]``), was missing from the grader's ``get_ipython()``:
ps11's ``gradient_by_differences`` scored 0/2 graded ("'Shell' object has no attribute
'user_ns'"), 2/2 in Jupyter (``jupyter_points``). The grader's shell now has ``user_ns`` (and
``user_global_ns``), the cells' own namespace, which their code reaches with ``globals()`` anyway.

Tried, and held (graded as in Jupyter, checked with ``idioms.differences``: full marks both ways):
ps01 with the test's function wrapped in ``functools.lru_cache``, called by a
``ThreadPoolExecutor``'s ``map``, through ``functools.partial`` and ``operator.sub`` in ``map``;
a gradient over a Fortran-ordered copy with steps from a strided view of ``np.eye``, each point
read-only, gathered by ``np.fromiter``, and one by ``np.fromfunction`` over ``np.vectorize`` as a
masked array; ``np.longdouble`` points; errors cached by ``functools.cache`` and read through a
``memoryview``; an order by ``fractions.Fraction`` of errors floored at ``sys.float_info.min``, and
one from a ``yield from`` generator after ``inspect.getsource(method)`` under ``try``; the test's
function's ``__doc__`` and ``__module__`` read for a log line. ps07 with ``np.matrix`` results,
``unbroadcast`` over a Fortran-ordered masked array with its axes from ``yield from``,
``np.longdouble`` products, a cross-entropy over a read-only Fortran copy under
``np.errstate(over/invalid/divide="raise")`` with a ``math.fsum`` loss as a ``Fraction`` and a
read-only reversed view as its gradient, a ``Decimal`` loss and a ``memoryview`` bias gradient.
ps11 with shifted points made through ``Fraction``, the test's ``f`` mapped by a thread pool,
values read by ``operator.attrgetter`` and summed by ``math.fsum``; passes from ``map`` over a
``functools.partial`` with ``np.longdouble`` seeds, tangents read by ``attrgetter("tangent.value")``
into a masked array; ``backward`` run in a worker thread, grads in an ``array.array``; f's cost
cached by ``functools.lru_cache`` on (f, tuple(x)), the ratio a ``Fraction``; the bound by
``functools.reduce(max, ...)`` over a generator from ``np.int64(0)``; and the notebook's names
reached through ``__main__.backward``, ``sys.modules["__main__"].count_ops`` and
``eval("count_ops")`` (the sweeps still counted).
Hostile: a ``best_step`` that made ps01's ``central`` (course_lib's ``numerical_grad``, run in the
judge) recurse ten deep through the student's function on 5,000,000-number arrays, to exhaust the
judge's 1.5 GB heap, cost its own part only (a time-out; 7,000,000 numbers exceed the message cap),
and the parts graded beside it scored as alone.

Each case grades a crafted hand-in in the real sandbox (``grade`` of test_verdict_seams.py) and
asserts the fair score: what the notebook scores when it runs top to bottom in Jupyter.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS01, PS07, PS11 = "ps01_finite_differences", "ps07_tensor_vjps", "ps11_cheap_gradient"


def points(got: dict) -> dict:
    return {part: score for part, (score, _) in got.items()}


# ps11, honest: an answer that reads the notebook's class through get_ipython().user_ns. Graded
# 0/2 before (the grader's get_ipython() had no user_ns), 2/2 in Jupyter.
USER_NS = """
def gradient_by_differences(f, x, h=1e-5):
    ns = get_ipython().user_ns
    gradient = []
    for i in range(len(x)):
        up = [ns["Num"](v + h) if j == i else Num(v) for j, v in enumerate(x)]
        down = [Num(v - h) if j == i else Num(v) for j, v in enumerate(x)]
        gradient.append(((f(up) - f(down)) / (2 * h)).value)
    return gradient
"""


def test_ps11_get_ipython_user_ns_is_the_cells_namespace():
    got = grade(PS11, {"gradient_by_differences": USER_NS}, {"test_gradient_by_differences"})
    assert points(got) == {"test_gradient_by_differences": 2.0}, got


# Held: honest idioms, full marks graded and in Jupyter.
PS01_THREADS_AND_CACHES = {
    "forward_difference": """
import functools
def forward_difference(f, x, h):
    cached = functools.lru_cache(maxsize=None)(f)
    return (cached(x + h) - cached(x)) / h
""",
    "central_difference": """
import concurrent.futures
def central_difference(f, x, h):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        up, down = pool.map(f, [x + h, x - h])
    return (up - down) / (2 * h)
""",
    "gradient_fd": """
def gradient_fd(f, x, h=1e-6):
    x = np.asfortranarray(x)
    basis = np.eye(x.size * 2)[::2, ::2]
    def partial(i):
        step = (h * basis[i]).reshape(x.shape, order="F")
        up = x + step
        up.setflags(write=False)
        return (f(up) - f(x - step)) / (2 * h)
    return np.fromiter(map(partial, range(x.size)), float, x.size).reshape(x.shape, order="F")
""",
    "best_step": """
import concurrent.futures, functools, operator
def best_step(f, x, f_prime, hs, method):
    estimate = functools.partial(method, f, x)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        errors = list(map(abs, map(operator.sub, pool.map(estimate, hs), [f_prime] * len(hs))))
    return hs[min(range(len(hs)), key=errors.__getitem__)]
""",
    "observed_order": """
import fractions, math, sys
def observed_order(f, x, f_prime, method, h):
    errors = [abs(method(f, x, s) - f_prime) for s in (h, h / 10)]
    big, small = (max(e, sys.float_info.min) for e in errors)
    return math.log10(fractions.Fraction(big) / fractions.Fraction(small))
""",
}

PS01_VIEWS_AND_GENERATORS = {
    "forward_difference": """
import logging
log = logging.getLogger("fd")
def forward_difference(f, x, h):
    log.debug("differencing %s (%s) from %s", f.__name__, f.__doc__, f.__module__)
    return (f(x + h) - f(x)) / h
""",
    "central_difference": """
def central_difference(f, x, h):
    x, h = np.longdouble(x), np.longdouble(h)
    return float((f(x + h) - f(x - h)) / (2 * h))
""",
    "gradient_fd": """
def gradient_fd(f, x, h=1e-6):
    flat = x.ravel()
    def one(i):
        step = np.zeros_like(flat)
        step[int(i)] = h
        return (f((flat + step).reshape(x.shape)) - f((flat - step).reshape(x.shape))) / (2 * h)
    grad = np.ma.masked_array(np.fromfunction(np.vectorize(one), (flat.size,)), mask=False)
    return grad.reshape(x.shape)
""",
    "best_step": """
import functools
def best_step(f, x, f_prime, hs, method):
    @functools.cache
    def error(h):
        return abs(method(f, x, h) - f_prime)
    errors = np.array(memoryview(np.array([error(h) for h in hs])))
    return hs[int(np.argmin(errors))]
""",
    "observed_order": """
import inspect
def observed_order(f, x, f_prime, method, h):
    try:
        print(inspect.getsource(method))
    except (OSError, TypeError):
        pass
    def errors():
        yield from (abs(method(f, x, s) - f_prime) for s in (h, h / 10))
    big, small = errors()
    return float(np.log10(big / small))
""",
}

PS07_MATRICES_AND_EXACT_LOSSES = {
    "matmul_vjp": """
def matmul_vjp(g, A, B):
    G = np.asmatrix(g)
    return G * np.asmatrix(B).T, np.asmatrix(A).T * G
""",
    "unbroadcast": """
def _axes(grad, shape):
    lead = grad.ndim - len(shape)
    yield from range(lead)
    yield from (lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1)

def unbroadcast(grad, shape):
    grad = np.ma.masked_array(np.asfortranarray(grad))
    summed = grad.sum(axis=tuple(_axes(grad, tuple(shape))), keepdims=True)
    return np.ma.getdata(summed).reshape(tuple(shape))
""",
    "mul_vjp": """
def mul_vjp(g, a, b):
    wide = np.multiply(g, b, dtype=np.longdouble), np.multiply(g, a, dtype=np.longdouble)
    ga, gb = (unbroadcast(p, np.shape(o)) for p, o in zip(wide, (a, b)))
    return ga, gb
""",
    "softmax_cross_entropy": """
import fractions, math
def softmax_cross_entropy(logits, labels):
    logits = np.array(logits, order="F")
    logits.setflags(write=False)
    N = logits.shape[0]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_z = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        log_probs = shifted - log_z
    loss = fractions.Fraction(-math.fsum(log_probs[np.arange(N), labels])) / N
    dlogits = np.exp(log_probs)
    dlogits[np.arange(N), labels] -= 1.0
    out = (dlogits / N)[:, ::-1][:, ::-1]
    out.setflags(write=False)
    return loss, out
""",
    "linear_classifier": """
import decimal
def linear_classifier(X, W, b, labels):
    loss, g = softmax_cross_entropy(X @ W + b, labels)
    _, gW = matmul_vjp(g, X, W)
    return decimal.Decimal(float(loss)), gW, memoryview(np.ascontiguousarray(unbroadcast(g, b.shape)))
""",
}

PS11_THREADS_AND_FRACTIONS = {
    "gradient_by_differences": """
import concurrent.futures, functools, operator, fractions
def _shifted(x, i, step):
    return [Num(float(fractions.Fraction(v) + fractions.Fraction(step))) if j == i else Num(v) for j, v in enumerate(x)]

def gradient_by_differences(f, x, h=1e-5):
    points = [p for i in range(len(x)) for p in (_shifted(x, i, h), _shifted(x, i, -h))]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        outs = list(pool.map(f, points))
    values = list(map(operator.attrgetter("value"), outs))
    return np.fromiter((math.fsum([up, -down]) / (2 * h) for up, down in zip(values[::2], values[1::2])), float)
""",
    "gradient_by_forward_mode": """
import functools, operator
def _seeded(x, i):
    return [Dual(Num(np.float64(v)), Num(np.longdouble(j == i))) for j, v in enumerate(x)]

def gradient_by_forward_mode(f, x):
    passes = map(f, map(functools.partial(_seeded, x), range(len(x))))
    return np.ma.masked_array(list(map(operator.attrgetter("tangent.value"), passes)))
""",
    "gradient_by_reverse_mode": """
import concurrent.futures, operator
def gradient_by_reverse_mode(f, x):
    leaves = list(map(Var, map(Num, x)))
    out = f(leaves)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(backward, out).result()
    return array_of(leaf.grad.value for leaf in leaves)

def array_of(values):
    import array
    return array.array("d", values)
""",
    "cost_ratio": """
import functools, fractions
@functools.lru_cache(maxsize=None)
def _f_cost(f, xs):
    return count_ops(f, [Num(v) for v in xs])[1]

def cost_ratio(method, f, x):
    counted = functools.partial(count_ops, method)
    _, method_ops = counted(f, x)
    return fractions.Fraction(method_ops, _f_cost(f, tuple(x)))
""",
    "reverse_ratio_bound": """
import functools, operator
def _costs(costs):
    yield from (1 + l + 2 * p for p, l in costs.values())

def reverse_ratio_bound(costs):
    return functools.reduce(max, _costs(costs), np.int64(0))
""",
}

PS11_NAMES_THROUGH_MAIN = {
    "gradient_by_reverse_mode": """
import __main__
def gradient_by_reverse_mode(f, x):
    leaves = [Var(Num(v)) for v in x]
    __main__.backward(f(leaves))
    return [leaf.grad.value for leaf in leaves]
""",
    "cost_ratio": """
import sys
def cost_ratio(method, f, x):
    count = sys.modules["__main__"].count_ops
    _, method_ops = count(method, f, x)
    _, f_ops = eval("count_ops")(f, [Num(v) for v in x])
    return method_ops / f_ops
""",
}


FULL = {
    PS01: {
        "test_forward_difference": 2.0,
        "test_central_difference": 2.0,
        "test_gradient_fd": 2.0,
        "test_gradient_fd_leaves_x_alone": 1.0,
        "test_best_step": 2.0,
        "test_observed_order": 1.0,
    },
    PS07: {
        "test_matmul_vjp": 2.0,
        "test_unbroadcast": 3.0,
        "test_mul_vjp": 2.0,
        "test_softmax_cross_entropy": 3.0,
        "test_linear_classifier": 2.0,
    },
    PS11: {
        "test_gradient_by_differences": 2.0,
        "test_gradient_by_forward_mode": 2.0,
        "test_gradient_by_reverse_mode": 2.0,
        "test_cost_ratio": 2.0,
        "test_reverse_ratio_bound": 2.0,
    },
}


@pytest.mark.parametrize(
    ("assignment", "answers"),
    [
        (PS01, PS01_THREADS_AND_CACHES),
        (PS01, PS01_VIEWS_AND_GENERATORS),
        (PS07, PS07_MATRICES_AND_EXACT_LOSSES),
        (PS11, PS11_THREADS_AND_FRACTIONS),
        (PS11, PS11_NAMES_THROUGH_MAIN),
    ],
)
def test_honest_idioms_score_full_marks(assignment, answers):
    got = grade(assignment, answers, set(FULL[assignment]))
    assert points(got) == FULL[assignment], got
