"""A sixth pass of honest and hostile students against ps02 (forward mode), ps05 (optimisation),
ps09 (integrated gradients) and ps10 (PyTorch comparison), red team 6c.

Nothing found: every hand-in below is graded in the real sandbox (``grade`` of
test_verdict_seams.py) with the points ``jupyter_points`` of idioms.py gave it in a plain kernel,
full marks (each sweep of ``PS02_SWEEPS`` too: 3/3 in Jupyter).

Tried and held, honest: ps02's ``MyDual`` as a ``dataclass(slots=True, frozen=True)`` with an
``__init_subclass__``, its ``__add__`` a ``match`` on ``MyDual(p, t)`` / ``numbers.Number()``, a
product by ``math.fsum``, ``operator.neg``; ``sin``/``cos``/``exp``/``log`` as
``functools.singledispatch`` with a ``MyDual`` overload (the hidden test's functions call them on
the student's duals); ``derivative`` as a ``match`` with ``case MyDual(tangent=t)`` on the test's
function's result, ``gradient`` with ``operator.attrgetter`` and ``typing.NamedTuple`` partials;
``tangent_sweep`` over the hidden test's course_lib Nodes by ``match`` with class patterns
``Node(_parents=ps, grad_wrt_parents=gs)`` and ``math.fsum(map(operator.mul, ...))`` and an
f-string ``{node!r:>10}``, a ``functools.singledispatch`` registered on ``Node`` with
``sum(..., start=0.0)`` over ``zip(strict=True)``, a ``__slots__`` class with a class-level memo
dict keyed by the test's nodes under ``contextlib.suppress`` and ``itertools.accumulate``, a
``runtime_checkable`` ``Protocol`` isinstance check with ``np.einsum``, a
``weakref.WeakKeyDictionary`` keyed by nodes read through a ``collections.ChainMap`` of the
seeds and ``dict.fromkeys(order)``, a ``functools.lru_cache`` recursion that ``setdefault``s and
``|=`` into the test's seeds dict and returns it, a vectorised sweep by ``id`` with ``np.dot``.
ps05: a ``dataclass(slots=True)`` result that unpacks, a ``Value`` subclass with ``__slots__``,
``inspect.signature`` of the hidden test's counted function and ``np.fromiter`` over
``attrgetter("grad")``; a module-level dict keyed by the test's function, its ``__name__`` in a
format spec; descent by ``itertools.accumulate(initial=...)`` and ``np.nditer``; momentum in a
``NamedTuple`` state with ``operator`` functions; the field by ``np.einsum`` over
``zip(strict=True)`` of a meshgrid; the stable rate from ``np.tensordot``. ps09: IG by
``np.einsum`` points, ``sum(..., start=np.zeros_like(x))`` and ``statistics.fmean``; the gap
calling the test's model on a ``Tensor`` directly, ``{f!r}`` and ``math.fsum``; the path written
through ``np.nditer`` with ``multi_index``. ps10: a ``NamedTuple`` (loss, grads) result with
``sorted(..., key=itemgetter(0))``; ``torch.from_numpy``/``torch.as_tensor`` on the test's
arrays; ``functools.reduce(max, ...)`` with ``math.prod`` of shapes; ``torch.optim.SGD``; and a
``torch_training`` that trains the test's own arrays in place through ``torch.from_numpy``
(Jupyter 3/3 too: every reference is computed before the student's call).

Hostile, held (no case: nothing crossed): reading the test's closures or caller frames from the
runner gives the runner's own frames; results of the student's own kinds (ndarray subclasses,
objects with ``detach``) cross as their numbers, so an overridden ``__array_function__`` or
``__eq__`` cannot answer the test's ``np.allclose``/``==``.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS02, PS05 = "ps02_forward_mode", "ps05_optimisation"
PS09, PS10 = "ps09_integrated_gradients", "ps10_pytorch_comparison"


def points(got: dict) -> dict:
    return {part: score for part, (score, _) in got.items()}


PS02_HONEST = {
    "dual_arithmetic": """import dataclasses, operator, numbers

@dataclasses.dataclass(slots=True, frozen=True)
class MyDual:
    primal: float
    tangent: float = 0.0

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)

    def __add__(self, other):
        match other:
            case MyDual(p, t):
                return MyDual(self.primal + p, self.tangent + t)
            case numbers.Number():
                return MyDual(self.primal + other, self.tangent)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-as_dual(other))

    def __rsub__(self, other):
        return as_dual(other) - self

    def __neg__(self):
        return MyDual(operator.neg(self.primal), -self.tangent)

    def __mul__(self, other):
        o = as_dual(other)
        return MyDual(self.primal * o.primal, math.fsum([self.tangent * o.primal, self.primal * o.tangent]))

    __rmul__ = __mul__


def as_dual(x) -> MyDual:
    return x if isinstance(x, MyDual) else MyDual(x, 0.0)
""",
    "elementary_functions": """import functools, numbers

@functools.singledispatch
def sin(x):
    return math.sin(x)

@sin.register
def _(x: MyDual):
    return MyDual(math.sin(x.primal), math.cos(x.primal) * x.tangent)

@functools.singledispatch
def cos(x):
    return math.cos(x)

@cos.register
def _(x: MyDual):
    return MyDual(math.cos(x.primal), -math.sin(x.primal) * x.tangent)

@functools.singledispatch
def exp(x):
    return math.exp(x)

@exp.register
def _(x: MyDual):
    v = math.exp(x.primal)
    return MyDual(v, v * x.tangent)

@functools.singledispatch
def log(x):
    return math.log(x)

@log.register
def _(x: MyDual):
    return MyDual(math.log(x.primal), x.tangent / x.primal)
""",
    "derivative_gradient": """import operator, itertools
from typing import NamedTuple

class Partial(NamedTuple):
    index: int
    value: float

def derivative(f, x):
    match f(MyDual(x, 1.0)):
        case MyDual(tangent=t):
            return t
        case _:
            return 0.0

def gradient(f, point):
    tangent = operator.attrgetter("tangent")
    out = []
    for i in range(len(point)):
        seeded = [MyDual(p, float(j == i)) for j, p in enumerate(point)]
        y = f(*seeded)
        out.append(Partial(i, tangent(y) if isinstance(y, MyDual) else 0.0))
    return [p.value for p in sorted(out, key=operator.itemgetter(0))]
""",
    "tangent_sweep": """import operator, math
def tangent_sweep(order, seeds):
    tangent = {}
    for node in order:
        match node:
            case Node(_parents=[]) | Node(_parents=()):
                tangent[node] = seeds.get(node, 0.0)
            case Node(_parents=ps, grad_wrt_parents=gs):
                tangent[node] = math.fsum(map(operator.mul, gs, (tangent[p] for p in ps)))
            case _:
                raise TypeError(f"not a node: {node!r:>10}")
    return tangent
""",
}


PS02_SWEEPS = {
    "weak_chain": """import weakref, collections, math, sys
def tangent_sweep(order, seeds):
    tangent = weakref.WeakKeyDictionary()
    given = collections.ChainMap(dict(seeds), dict.fromkeys(order, 0.0))
    for node in order:
        if not node._parents:
            tangent[node] = given[node]
        else:
            prods = [tangent[p] for p in node._parents]
            if sys.version_info >= (3, 12):
                tangent[node] = math.sumprod(node.grad_wrt_parents, prods)
            else:
                tangent[node] = sum(a * b for a, b in zip(node.grad_wrt_parents, prods))
    return dict(tangent.items())
""",
    "mutate_seeds": """import functools
def tangent_sweep(order, seeds):
    @functools.lru_cache(maxsize=None)
    def t(node):
        if not node._parents:
            return seeds.setdefault(node, 0.0)
        return sum(l * t(p) for p, l in zip(node._parents, node.grad_wrt_parents))
    out = {n: t(n) for n in sorted(order, key=order.index)}
    seeds |= out
    return seeds
""",
    "vec": """def tangent_sweep(order, seeds):
    index = {id(n): i for i, n in enumerate(order)}
    vals = np.zeros(len(order))
    for i, node in enumerate(order):
        if node._parents:
            parents = vals[[index[id(p)] for p in node._parents]]
            vals[i] = np.dot(np.asarray(node.grad_wrt_parents, dtype=float), parents)
        else:
            vals[i] = seeds[node] if node in seeds else 0.0
    return dict(zip(order, vals.tolist(), strict=True))
""",
    "singledispatch": """import functools

@functools.singledispatch
def _is_input(node):
    return not node._parents

@_is_input.register
def _(node: Node):
    return len(node._parents) == 0

def tangent_sweep(order, seeds):
    tangent = {}
    for node in order:
        if _is_input(node):
            tangent[node] = seeds.get(node, 0.0)
        else:
            pairs = zip(node._parents, node.grad_wrt_parents, strict=True)
            tangent[node] = sum((l * tangent[p] for p, l in pairs), start=0.0)
    return tangent
""",
    "cache_class": """import itertools, contextlib
class Sweeper:
    __slots__ = ("cache",)
    memo: dict = {}
    def __init__(self):
        self.cache = {}
    def __call__(self, order, seeds):
        for node in order:
            with contextlib.suppress(KeyError):
                Sweeper.memo[node] = None
            if not node._parents:
                self.cache[node] = seeds.get(node, 0.0)
            else:
                terms = [l * self.cache[p] for p, l in zip(node._parents, node.grad_wrt_parents)]
                self.cache[node] = list(itertools.accumulate(terms))[-1]
        return dict(self.cache)
def tangent_sweep(order, seeds):
    return Sweeper()(order, seeds)
""",
    "protocol": """from typing import Protocol, runtime_checkable
import abc, statistics, numpy as np

@runtime_checkable
class HasParents(Protocol):
    _parents: tuple
    grad_wrt_parents: tuple

def tangent_sweep(order, seeds):
    tangent = {}
    for node in order:
        assert isinstance(node, HasParents), f"{node!r}"
        if not node._parents:
            tangent[node] = seeds.get(node, 0.0)
        else:
            tangent[node] = float(np.einsum("i,i->", np.array(node.grad_wrt_parents, dtype=float),
                                            np.array([tangent[p] for p in node._parents])))
    return tangent
""",
}


PS05_HONEST = {
    "value_and_gradient": """import dataclasses, operator, inspect

@dataclasses.dataclass(slots=True)
class Result:
    value: float
    gradient: np.ndarray
    def __iter__(self):
        yield self.value
        yield self.gradient

class Leaf(Value):
    __slots__ = ()

def value_and_gradient(f, point):
    n = len(inspect.signature(f).parameters) if callable(f) else len(point)
    leaves = [Value(float(x)) for x in point]
    out = f(*leaves)
    out.backward()
    grads = np.fromiter(map(operator.attrgetter("grad"), leaves), dtype=float, count=len(leaves))
    return Result(out.data, grads)
""",
    "gradient_descent": """import itertools, functools

def gradient_descent(grad_f, start, lr, steps):
    step = lambda x, _: x - lr * np.asarray(grad_f(x))
    xs = itertools.accumulate(range(steps), step, initial=np.array(start, dtype=float))
    path = np.stack(list(xs))
    for row in np.nditer(path, flags=["external_loop"], order="C"):
        pass
    return path
""",
    "momentum_descent": """import operator
from typing import NamedTuple

class State(NamedTuple):
    x: np.ndarray
    v: np.ndarray

def momentum_descent(grad_f, start, lr, beta, steps):
    s = State(np.array(start, dtype=float), np.zeros(len(start)))
    path = [s.x]
    for _ in range(steps):
        v = operator.add(operator.mul(beta, s.v), grad_f(s.x))
        s = s._replace(x=operator.sub(s.x, lr * v), v=v)
        path.append(s.x)
    return np.vstack(path)
""",
    "descent_field": """def descent_field(grad_f, a_values, b_values):
    A, B = np.meshgrid(a_values, b_values)
    g = np.array([grad_f(np.array(ab)) for ab in zip(A.ravel(), B.ravel(), strict=True)])
    U, V = np.einsum("nk->kn", -g).reshape(2, *A.shape)
    return U, V
""",
    "largest_stable_lr": """
def largest_stable_lr(hessian):
    H = np.asarray(hessian, dtype=float)
    largest = max(np.linalg.eigvalsh(np.tensordot(H, np.eye(len(H)), axes=1)))
    return 2.0 / float(largest)
""",
}


PS05_NAMED = {
    "value_and_gradient": """import functools, contextlib
_calls = {}

def value_and_gradient(f, point):
    with contextlib.suppress(TypeError):
        _calls[f] = _calls.get(f, 0) + 1
    name = f"{f.__name__!s:>12}"
    leaves = [Value(float(x)) for x in point]
    out = f(*leaves)
    out.backward()
    return float(f"{out.data!r}"), np.array([leaf.grad for leaf in leaves])
"""
}


PS09_HONEST = {
    "integrated_gradients_riemann": """import statistics, math, functools

def integrated_gradients_riemann(f_grad, x, baseline, steps):
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    alphas = riemann_alphas(steps, "right")
    points = np.einsum("m,d->md", alphas, x - baseline) + baseline
    grads = f_grad(points)
    total = sum(np.asarray(grads, dtype=float), start=np.zeros_like(x))
    means = np.array([statistics.fmean(col) for col in np.asarray(grads, dtype=float).T])
    assert np.allclose(means, total / steps)
    return (x - baseline) * means
""",
    "completeness_gap": """import math, contextlib
def completeness_gap(attributions, f, x, baseline):
    fx, fb = (float(f(Tensor(np.asarray(p, dtype=float)[None, :])).data.reshape(-1)[0]) for p in (x, baseline))
    with contextlib.suppress(AttributeError):
        _ = f"{f!r}"
    return math.fsum(np.ravel(attributions)) - (fx - fb)
""",
    "path": """def path(x, baseline, alphas):
    x, baseline, alphas = (np.asarray(v, dtype=float) for v in (x, baseline, alphas))
    out = np.empty((len(alphas), len(x)))
    it = np.nditer([alphas[:, None], out], op_flags=[["readonly"], ["writeonly"]], flags=["multi_index"])
    for a, o in it:
        j = it.multi_index[1]
        o[...] = baseline[j] + a * (x[j] - baseline[j])
    return out
""",
}


PS10_HONEST = {
    "torch_training": """def torch_training(params, X, y, lr, steps):
    tensors = {k: torch.from_numpy(v).requires_grad_(True) for k, v in params.items()}
    X_t, y_t = torch.from_numpy(X), torch.from_numpy(y)
    losses = []
    for step in range(steps + 1):
        loss = mlp_loss(tensors, X_t, y_t)
        losses.append(loss.item())
        if step == steps:
            break
        loss.backward()
        with torch.no_grad():
            for p in tensors.values():
                p -= lr * p.grad
                p.grad = None
    return losses
""",
    "course_loss_and_grads": """import dataclasses, operator
from typing import NamedTuple

class LossAndGrads(NamedTuple):
    loss: float
    grads: dict

def course_loss_and_grads(params, X, y):
    tensors = {name: ct.Tensor(np.array(value, copy=True), requires_grad=True) for name, value in params.items()}
    loss = mlp_loss(tensors, ct.Tensor(X), ct.Tensor(y))
    loss.backward()
    ordered = sorted(tensors.items(), key=operator.itemgetter(0))
    return LossAndGrads(loss.item(), {name: np.array(t.grad) for name, t in ordered})
""",
    "torch_loss_and_grads": """def torch_loss_and_grads(params, X, y):
    tensors = {name: torch.from_numpy(np.asarray(v, dtype=np.float64)).requires_grad_() for name, v in params.items()}
    loss = mlp_loss(tensors, torch.as_tensor(X, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64))
    loss.backward()
    return loss.item(), {name: t.grad.detach().numpy() for name, t in tensors.items()}
""",
    "max_relative_difference": """import functools, math, itertools
def max_relative_difference(grads_a, grads_b):
    def one(name):
        a, b = np.asarray(grads_a[name], dtype=float), np.asarray(grads_b[name], dtype=float)
        if math.prod(b.shape) == 0:
            return 0.0
        scale = np.max(np.abs(b)) if np.any(b) else 1.0
        return float(np.max(np.abs(a - b)) / scale)
    return functools.reduce(max, map(one, sorted(grads_b)), 0.0)
""",
}


PS10_SGD = {
    "torch_training": """def torch_training(params, X, y, lr, steps):
    tensors = {k: torch.tensor(v, dtype=torch.float64).requires_grad_(True) for k, v in params.items()}
    opt = torch.optim.SGD(tensors.values(), lr=lr)
    X_t, y_t = map(lambda a: torch.tensor(a, dtype=torch.float64), (X, y))
    losses = []
    for step in range(steps + 1):
        opt.zero_grad()
        loss = mlp_loss(tensors, X_t, y_t)
        losses.append(loss.item())
        if step < steps:
            loss.backward()
            opt.step()
    return losses
"""
}


PS02_TESTS = {
    "test_dual_arithmetic": 3.0,
    "test_dual_division_power": 2.0,
    "test_elementary_functions": 2.0,
    "test_derivative_gradient": 2.0,
    "test_tangent_sweep": 3.0,
}


def test_ps02_dataclass_duals_singledispatch_and_match_hold():
    got = grade(PS02, PS02_HONEST, set(PS02_TESTS), timeout=60)
    assert points(got) == PS02_TESTS, got


@pytest.mark.parametrize("name", sorted(PS02_SWEEPS))
def test_ps02_tangent_sweeps_over_the_test_nodes_hold(name):
    got = grade(PS02, {"tangent_sweep": PS02_SWEEPS[name]}, {"test_tangent_sweep"}, timeout=60)
    assert points(got) == {"test_tangent_sweep": 3.0}, got


PS05_TESTS = {
    "test_value_and_gradient": 1.0,
    "test_gradient_descent": 2.0,
    "test_momentum_descent": 3.0,
    "test_descent_field": 2.0,
    "test_largest_stable_lr": 2.0,
}


@pytest.mark.parametrize("answers", [PS05_HONEST, PS05_NAMED], ids=["idioms", "keyed_by_function"])
def test_ps05_idioms_hold(answers):
    got = grade(PS05, answers, set(PS05_TESTS), timeout=60)
    assert points(got) == PS05_TESTS, got


def test_ps09_idioms_hold():
    tests = {"test_path": 1.0, "test_integrated_gradients_riemann": 3.0, "test_completeness_gap": 2.0}
    got = grade(PS09, PS09_HONEST, set(tests), timeout=60)
    assert points(got) == tests, got


PS10_TESTS = {
    "test_course_loss_and_grads": 2.0,
    "test_torch_loss_and_grads": 2.0,
    "test_max_relative_difference": 1.0,
    "test_torch_training": 3.0,
}


@pytest.mark.parametrize("answers", [PS10_HONEST, PS10_SGD], ids=["in_place_from_numpy", "optim_sgd"])
def test_ps10_idioms_hold(answers):
    got = grade(PS10, answers, set(PS10_TESTS), timeout=60)
    assert points(got) == PS10_TESTS, got
