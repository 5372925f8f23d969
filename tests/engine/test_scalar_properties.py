"""Property tests: the scalar engines agree with each other and with PyTorch.

One list of expression builders (``BUILDERS``) is shared by every engine. Hypothesis
draws a random expression tree over two inputs x, y from it, and each engine evaluates
the same tree through a small adapter that says how to add, multiply, take a sine, ...
in that engine: ``scalar.Value`` (reverse mode), ``forward.Dual`` (forward mode),
``graph.Node`` (explicit graph, both sweeps), plain floats (finite differences) and
PyTorch in float64 (the oracle). Each builder keeps its arguments in a safe domain
(logs of positive numbers, no division by zero, no overflow), so any tree is valid for
inputs in [-2, 2].
"""

from __future__ import annotations

import math
import operator
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import graph
from course_lib.check import numerical_grad
from course_lib.forward import Dual, jvp
from course_lib.scalar import Value

torch = pytest.importorskip("torch")

# ---- engines: how each one spells the primitive operations ---------------------------------

OVERLOADED = SimpleNamespace(  # Value and Dual: Python operators and methods
    add=operator.add,
    sub=operator.sub,
    mul=operator.mul,
    div=operator.truediv,
    pow=operator.pow,
    log=lambda a: a.log(),
    sin=lambda a: a.sin(),
    cos=lambda a: a.cos(),
    exp=lambda a: a.exp(),
)
EXPLICIT = SimpleNamespace(  # graph.Node: wrapping functions; a power of a positive base via exp/log
    add=graph.add,
    sub=graph.sub,
    mul=graph.mul,
    div=graph.div,
    pow=lambda a, n: graph.exp(graph.mul(n, graph.log(a))),
    log=graph.log,
    sin=graph.sin,
    cos=graph.cos,
    exp=graph.exp,
)
FLOATS = SimpleNamespace(
    add=operator.add,
    sub=operator.sub,
    mul=operator.mul,
    div=operator.truediv,
    pow=operator.pow,
    log=math.log,
    sin=math.sin,
    cos=math.cos,
    exp=math.exp,
)
TORCH = SimpleNamespace(
    add=operator.add,
    sub=operator.sub,
    mul=operator.mul,
    div=operator.truediv,
    pow=operator.pow,
    log=torch.log,
    sin=torch.sin,
    cos=torch.cos,
    exp=torch.exp,
)


def _positive(E, a):
    """1 + a² > 0: the safe argument for log, division and fractional powers."""
    return E.add(E.mul(a, a), 1.0)


# ---- the ONE list of builders: (name, arity, build(E, *children, c)) ----------------------
# c is a random constant in [-2, 2]; constants sit on the left sometimes, to exercise the
# reflected operators (2 - x, 2 * x, 2 / x).
BUILDERS = [
    ("add", 2, lambda E, a, b, c: E.add(a, b)),
    ("sub", 2, lambda E, a, b, c: E.sub(a, b)),
    ("mul", 2, lambda E, a, b, c: E.mul(a, b)),
    ("div", 2, lambda E, a, b, c: E.div(a, _positive(E, b))),
    ("add_const", 1, lambda E, a, c: E.add(c, a)),
    ("const_minus", 1, lambda E, a, c: E.sub(c, a)),
    ("scale", 1, lambda E, a, c: E.mul(c, a)),
    ("const_over", 1, lambda E, a, c: E.div(c, _positive(E, a))),
    ("log", 1, lambda E, a, c: E.log(_positive(E, a))),
    ("sin", 1, lambda E, a, c: E.sin(a)),
    ("cos", 1, lambda E, a, c: E.cos(a)),
    ("exp", 1, lambda E, a, c: E.exp(E.sin(a))),
    ("pow", 1, lambda E, a, c: E.pow(_positive(E, a), c)),
]
BY_NAME = {name: (arity, build) for name, arity, build in BUILDERS}

constants = st.floats(-2, 2, allow_nan=False).map(lambda c: round(c, 3))
inputs = st.floats(-2, 2, allow_nan=False)
trees = st.recursive(
    st.sampled_from(["x", "y"]),
    lambda children: st.one_of(
        st.tuples(st.sampled_from([n for n, k, _ in BUILDERS if k == 1]), constants, children),
        st.tuples(st.sampled_from([n for n, k, _ in BUILDERS if k == 2]), constants, children, children),
    ),
    max_leaves=8,
)


def evaluate(tree, E, x, y):
    """Build ``tree`` in engine ``E`` with inputs ``x`` and ``y`` (used as they are, so fan-out is shared)."""
    if tree == "x":
        return x
    if tree == "y":
        return y
    name, c, *children = tree
    arity, build = BY_NAME[name]
    return build(E, *(evaluate(child, E, x, y) for child in children), c)


def torch_value_and_grad(tree, x0, y0):
    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    y = torch.tensor(y0, dtype=torch.float64, requires_grad=True)
    out = evaluate(tree, TORCH, x, y)
    gx, gy = torch.autograd.grad(out, (x, y), allow_unused=True)
    as_float = lambda g: 0.0 if g is None else g.item()  # noqa: E731  (x or y unused: gradient 0)
    return out.item(), as_float(gx), as_float(gy)


def close(a, b, rel=1e-9, abs_=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


SETTINGS = settings(max_examples=60, deadline=None)


@SETTINGS
@given(trees, inputs, inputs)
def test_value_matches_torch(tree, x0, y0):
    value, gx, gy = torch_value_and_grad(tree, x0, y0)
    x, y = Value(x0), Value(y0)
    out = evaluate(tree, OVERLOADED, x, y)
    out.backward()
    assert close(out.data, value)
    assert close(x.grad, gx) and close(y.grad, gy)


@SETTINGS
@given(trees, inputs, inputs)
def test_dual_matches_torch(tree, x0, y0):
    value, gx, gy = torch_value_and_grad(tree, x0, y0)
    f = lambda x, y: evaluate(tree, OVERLOADED, x, y)  # noqa: E731
    value_x, dx = jvp(f, (x0, y0), (1.0, 0.0))
    value_y, dy = jvp(f, (x0, y0), (0.0, 1.0))
    assert close(value_x, value) and close(value_y, value)
    assert close(dx, gx) and close(dy, gy)


@SETTINGS
@given(trees, inputs, inputs)
def test_explicit_graph_matches_torch_both_sweeps(tree, x0, y0):
    value, gx, gy = torch_value_and_grad(tree, x0, y0)
    x, y = graph.Node(x0, "x"), graph.Node(y0, "y")
    out = evaluate(tree, EXPLICIT, x, y)
    assert close(out.data, value)
    graph.reverse(out)
    assert close(x.partial_derivative, gx) and close(y.partial_derivative, gy)
    for start, expected in ((x, gx), (y, gy)):  # the same derivatives, the other way round
        reached = graph.forward(start)  # out is untouched (and d out / d start = 0) if out is not reached
        assert close(out.partial_derivative if out in reached else 0.0, expected)


@SETTINGS
@given(trees, inputs, inputs)
def test_finite_differences_match_torch(tree, x0, y0):
    value, gx, gy = torch_value_and_grad(tree, x0, y0)
    fx = numerical_grad(lambda x: evaluate(tree, FLOATS, x, y0), x0)
    fy = numerical_grad(lambda y: evaluate(tree, FLOATS, x0, y), y0)
    # central differences: truncation ~ eps² f''', round-off ~ 1e-16 |f| / eps
    tolerance = 1e-5 * (1 + abs(value))
    assert close(fx, gx, rel=1e-5, abs_=tolerance) and close(fy, gy, rel=1e-5, abs_=tolerance)


@SETTINGS
@given(trees, inputs, inputs)
def test_dual_explicit_graph_and_value_agree_on_values(tree, x0, y0):
    """Every tree uses x or y, so each engine returns its own type, holding the same number."""
    v = evaluate(tree, OVERLOADED, Value(x0), Value(y0))
    d = evaluate(tree, OVERLOADED, Dual(x0), Dual(y0))
    n = evaluate(tree, EXPLICIT, graph.Node(x0), graph.Node(y0))
    f = evaluate(tree, FLOATS, x0, y0)
    assert close(v.data, f) and close(d.primal, f) and close(n.data, f)
