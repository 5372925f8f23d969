"""The numbers chapters 6 (topological order) and 7 (optimisation) print, recomputed with
``course_lib`` and looked up in the committed notebooks; and the chapters' teaching versions
(cells tagged ``teaching-version``) checked against the engine."""

from __future__ import annotations

import contextlib
import gc
import io
import itertools
import math
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from notebook_text import shown, tagged
from paths import ROOT
from prose_numbers import lines_with, listed, shows

from course_lib import toposort
from course_lib.check import GradcheckError, gradcheck, numerical_grad
from course_lib.scalar import Value, record

CH06 = ROOT / "book" / "06_topological_order.ipynb"
CH07 = ROOT / "book" / "07_optimisation.ipynb"


def parents(v: Value) -> tuple:
    return v._parents


def teaching_version(path: Path, namespace: dict) -> dict:
    """Run the notebook's cells tagged ``teaching-version`` in ``namespace``."""
    for cell in tagged(path, "teaching-version"):
        exec(cell.source, namespace)
    return namespace


def labelled(v: Value, label: str) -> Value:
    v.label = label
    return v


def chapter2_graph() -> tuple[Value, Value, Value]:
    """f(x1, x2) = log x1 + x1 x2 - sin x2 at (2, 5), labelled as in chapter 6."""
    x1, x2 = Value(2.0, "x1"), Value(5.0, "x2")
    v1 = labelled(x1.log(), "v1")
    v2 = labelled(x1 * x2, "v2")
    v3 = labelled(x2.sin(), "v3")
    v4 = labelled(v1 + v2, "v4")
    y = labelled(v4 - v3, "y")
    y._parents[1].label = "-v3"
    return y, x1, x2


def respects_edges(order: list) -> bool:
    position = {id(v): k for k, v in enumerate(order)}
    return all(position[id(p)] < position[id(v)] for v in order for p in parents(v))


def random_value_graph(seed: int, size: int = 40) -> Value:
    rng = random.Random(seed)
    nodes = [Value(rng.uniform(0.5, 1.5), f"x{i}") for i in range(3)]
    while len(nodes) < size:
        a, b = rng.choice(nodes[-5:]), rng.choice(nodes)
        nodes.append(labelled(rng.choice([a + b, a * b, a.sin()]), f"v{len(nodes)}"))
    return nodes[-1]


# ---------------------------------------------------------------- chapter 6


def test_ch06_running_example_and_its_orders():
    y, x1, x2 = chapter2_graph()
    y.backward()
    assert math.isclose(y.data, 11.652, abs_tol=5e-4)
    assert x1.grad == 5.5 and math.isclose(x2.grad, 1.716, abs_tol=5e-4)

    nodes = toposort.postorder(y, parents)
    valid = sum(respects_edges(list(p)) for p in itertools.permutations(nodes))
    assert (valid, len(nodes)) == (56, 8)

    recursive = [v.label for v in toposort.postorder_recursive(y, parents)]
    iterative = [v.label for v in toposort.postorder(y, parents)]
    kahn = [v.label for v in toposort.child_count_order(y, parents)]
    assert recursive == ["x1", "v1", "x2", "v2", "v4", "v3", "-v3", "y"]
    assert iterative == ["x2", "v3", "-v3", "x1", "v2", "v1", "v4", "y"]
    assert kahn == ["y", "-v3", "v3", "v4", "v2", "x2", "v1", "x1"]
    assert respects_edges(toposort.child_count_order(y, parents)[::-1])

    text = shown(CH06)
    assert shows(text, "y =", y.data, x1.grad, x2.grad)  # y, dy/dx1, dy/dx2
    assert shows(lines_with(text, "orderings"), "", valid, math.factorial(len(nodes)), len(nodes))
    assert listed(text, "post-order:") == recursive
    assert listed(text, "backward schedule:") == recursive[::-1]
    assert listed(text, "child-count order:") == kahn
    assert listed(text, "DFS order:") == iterative[::-1]
    assert shows(text, "its parents:", respects_edges(toposort.child_count_order(y, parents)[::-1]))


def test_ch06_preorder_counterexample():
    x = Value(1.0, "x")
    u = labelled(x.sin(), "u")
    s, t = labelled(u + 1, "s"), labelled(u * 3, "t")
    e = labelled(s * t, "e")
    # Pre-order from e reaches u through s, before u's other child t.
    preorder = [e, s, u, x, s._parents[1], t, t._parents[1]]
    assert not respects_edges(preorder[::-1])
    for v in preorder:  # the backward rules run in pre-order: u runs before t has added its share
        v.grad = 0.0
    e.grad = 1.0
    for v in preorder:
        v._backward(v.grad)
    wrong = x.grad
    x.grad = 0.0  # a leaf keeps its gradient across backward() calls
    e.backward()
    right = 3 * math.cos(1.0) * (2 * math.sin(1.0) + 1)
    assert math.isclose(x.grad, right, rel_tol=1e-12) and abs(wrong - right) > 1
    assert math.isclose(wrong, 3 * math.sin(1.0) * math.cos(1.0), rel_tol=1e-12)
    text = shown(CH06)
    assert (
        listed(text, "from e:") == [v.label or f"{v.data:g}" for v in preorder] == ["e", "s", "u", "x", "1", "t", "3"]
    )
    assert shows(text, "its parents?", respects_edges(preorder[::-1]))  # False
    assert shows(text, "the pre-order:", wrong) and shows(text, "post-order:", right)  # de/dx along each
    # The check-yourself answer: the diamond (a + b)(b + 1) has 16 valid schedules.
    a, b = Value(2.0), Value(3.0)
    nodes = toposort.postorder((a + b) * (b + 1), parents)
    assert sum(respects_edges(list(p)) for p in itertools.permutations(nodes)) == 16


def test_ch06_recursive_sort_fails_at_the_default_limit_and_iterative_does_not():
    assert sys.getrecursionlimit() == 1000, "the chapter's claim is about Python's default limit"
    chain = Value(0.5, "x")
    for _ in range(2_000):
        chain = chain.sin()
    with pytest.raises(RecursionError):
        toposort.postorder_recursive(chain, parents)
    assert len(toposort.postorder(chain, parents)) == 2_001
    text = shown(CH06)
    assert shows(text, "recursion limit:", sys.getrecursionlimit())
    assert shows(text, "a chain of", 2_000) and "RecursionError" in lines_with(text, "a chain of")
    assert shows(text, "same chain", len(toposort.postorder(chain, parents)))
    assert shows(text, "the limit:", True)  # a few dozen nodes short of it


def test_ch06_million_node_chain_backward():
    n = 1_000_000
    x, rate = Value(1.0, "x"), Value(1 + 1 / n, "rate")
    gc.disable()
    try:
        y = x
        for _ in range(n):
            y = y * rate
        y.backward()
    finally:
        gc.enable()
    assert math.isclose(x.grad, (1 + 1 / n) ** n, rel_tol=1e-12)
    assert math.isclose(rate.grad, n * (1 + 1 / n) ** (n - 1), rel_tol=1e-9)
    assert abs(x.grad - math.e) < 2e-6
    text = shown(CH06)
    assert shows(text, "dy/dx", x.grad)
    assert shows(text, "dy/drate", rate.grad) and shows(text, "^(n-1)", n * (1 + 1 / n) ** (n - 1))


def test_ch06_diamond_ladder_is_sorted_with_one_lookup_per_node():
    w = Value(0.5, "w0")
    for _ in range(20):
        w = w.sin() + w.cos()
    calls = Counter()

    def counting(v):
        calls["n"] += 1
        return v._parents

    assert len(toposort.postorder(w, counting)) == 61 and calls["n"] == 61
    # diamonds, nodes, paths from the output to w0 (two per diamond), parent lookups
    assert shows(lines_with(shown(CH06), "diamonds"), "", 20, 61, 2**20, calls["n"])


def test_ch06_traced_teaching_version_returns_the_engines_order():
    traced = teaching_version(CH06, {})["postorder_traced"]
    graphs = [chapter2_graph()[0]] + [random_value_graph(seed) for seed in range(10)]
    ladder = Value(0.5)
    for _ in range(6):
        ladder = ladder.sin() * ladder.cos()
    square = Value(3.0)
    graphs += [ladder, square * square]
    for y in graphs:
        with contextlib.redirect_stdout(io.StringIO()):
            order = traced(y, parents, lambda v: v.label or v._op)
        assert order == toposort.postorder(y, parents)
    assert shows(shown(CH06), "toposort.postorder:", True)


# ---------------------------------------------------------------- chapter 7


def loss(a, b):
    return b * ((a + b) * (a - b))


def bowl(a, b):
    return 0.5 * (a * a + 10 * b * b)


@pytest.fixture(scope="module")
def gradient_descent():
    return teaching_version(CH07, {"np": np, "Value": Value})["gradient_descent"]


def test_ch07_gradient_at_1_2():
    a, b = Value(1.0), Value(2.0)
    L = loss(a, b)
    L.backward()
    assert (L.data, a.grad, b.grad) == (-6.0, 4.0, -11.0)
    assert np.allclose(numerical_grad(lambda p: loss(p[0], p[1]), np.array([1.0, 2.0])), [4.0, -11.0], atol=1e-8)
    text = shown(CH07)
    assert shows(text, "L(", 1, 2, L.data)
    assert shows(text, "dL/da", a.grad, b.grad)


def test_ch07_one_step_and_accumulation():
    assert math.isclose(loss(0.96, 2.11), -7.449355, abs_tol=1e-9)
    a, b = Value(1.0), Value(2.0)
    L = loss(a, b)
    L.backward()
    L.backward()
    assert (a.grad, b.grad) == (8.0, -22.0)
    text = shown(CH07)
    step = -0.01 * np.array([4.0, -11.0])  # one step of learning rate 0.01 from (1, 2)
    assert np.allclose(np.array([1.0, 2.0]) + step, [0.96, 2.11])
    predicted = loss(1.0, 2.0) + np.array([4.0, -11.0]) @ step  # first-order Taylor
    assert shows(text, "predicted L", predicted) and round(predicted, 6) == -7.37
    assert shows(text, "actual", loss(0.96, 2.11))
    assert shows(text, "backward():", a.grad, b.grad)  # after a second backward()
    assert shows(text, "dL/da", 4.0, -11.0) == 2 and shows(text, "zero_grad():", 4.0, -11.0)


def test_ch07_teaching_loop_agrees_with_central_differences(gradient_descent):
    for f, start, lr in [(loss, (1.0, 2.0), 0.01), (bowl, (3.0, 1.0), 0.1), (loss, (-1.3, 0.4), 0.02)]:
        path = gradient_descent(f, start, lr=lr, steps=8)
        point = np.array(start)
        for k in range(1, 9):
            point = point - lr * numerical_grad(lambda p, f=f: f(p[0], p[1]), point)
            assert np.allclose(path[k], point, rtol=1e-7, atol=1e-9)


def test_ch07_descent_from_1_2_leaves_the_box(gradient_descent):
    path = gradient_descent(loss, (1.0, 2.0), lr=0.01, steps=100, box=10)
    losses = loss(path[:, 0], path[:, 1])
    assert len(path) - 1 == 16 and np.all(np.diff(losses) < 0)
    assert np.allclose(path[1], [0.96, 2.11])
    assert abs(path[-1, 1]) > 10 >= np.max(np.abs(path[-2]))
    text = shown(CH07)
    assert shows(text, "left the box", len(path) - 1, True)  # after 16 steps; L decreased at every step
    assert shows(text, "step", 16, *path[16], losses[16])


def test_ch07_forty_random_starts(gradient_descent):
    rng = np.random.default_rng(0)
    starts = rng.uniform(-2.5, 2.5, size=(40, 2))
    ends = Counter()
    for start in starts:
        run = gradient_descent(loss, start, lr=0.01, steps=400, box=3)
        assert np.all(np.diff(loss(run[:, 0], run[:, 1])) < 0)
        a_end, b_end = run[-1]
        if max(abs(a_end), abs(b_end)) <= 3:
            ends["still inside"] += 1
        elif b_end > abs(a_end):
            ends["up"] += 1
        else:
            assert b_end < 0 and abs(a_end) > abs(b_end), "every escape goes down a valley where L < 0"
            ends["down-left" if a_end < 0 else "down-right"] += 1
    assert ends == {"up": 17, "down-left": 8, "down-right": 14, "still inside": 1}
    text = shown(CH07)
    assert shows(text, "where the", len(starts), ...) and listed(text, "runs went:") == ends
    assert shows(text, "every run:", True)


def test_ch07_learning_rates_on_the_bowl(gradient_descent):
    text = shown(CH07)
    finals = {}
    for lr in (0.02, 0.1, 0.18, 0.21):
        run = gradient_descent(bowl, (3.0, 1.0), lr=lr, steps=40)
        q = bowl(run[:, 0], run[:, 1])
        finals[lr] = q[-1]
        # Exact: each coordinate is multiplied by (1 - lr * lambda) per step.
        assert np.allclose(run[-1], [3.0 * (1 - lr) ** 40, (1 - 10 * lr) ** 40], rtol=1e-9, atol=1e-15)
        rho = max(abs(1 - lr), abs(1 - 10 * lr))  # the contraction per step of the slower coordinate
        assert shows(text, "lr =", lr, rho, 40, q[-1]) == 1, lr
        if lr < 0.2:
            assert np.all(np.diff(q) <= 0), f"lr = {lr} is stable, the loss must not increase"
    assert finals[0.18] < finals[0.1] < finals[0.02] < 1 < bowl(3.0, 1.0) < finals[0.21]


def test_ch07_rosenbrock(gradient_descent):
    run = gradient_descent(lambda a, b: (1 - a) ** 2 + 100 * (b - a * a) ** 2, (-1.5, 2.0), lr=1e-3, steps=20_000)
    distance = np.hypot(run[-1, 0] - 1, run[-1, 1] - 1)
    assert 1e-4 < distance < 1e-3
    assert shows(shown(CH07), "step", 20_000, *run[-1], 1, 1, distance)  # (a, b), distance to (1, 1)


def rosenbrock_hessian(a, b):
    return np.array([[2 - 400 * b + 1200 * a * a, -400 * a], [-400 * a, 200.0]])


def test_ch07_rosenbrock_bound_is_local(gradient_descent):
    low, high = np.linalg.eigvalsh(rosenbrock_hessian(1.0, 1.0))
    start = np.linalg.eigvalsh(rosenbrock_hessian(-1.5, 2.0))[-1]
    assert (round(low, 3), round(high, 1), round(2 / high, 5)) == (0.399, 1001.6, 0.002)
    assert 1e-3 * start > 2 > 1e-3 * high  # unstable at the start, stable at the minimum
    run = gradient_descent(lambda a, b: (1 - a) ** 2 + 100 * (b - a * a) ** 2, (-1.5, 2.0), lr=1e-3, steps=20_000)
    over = [k for k, point in enumerate(run) if 1e-3 * np.linalg.eigvalsh(rosenbrock_hessian(*point))[-1] > 2]
    assert over == [0]
    far = gradient_descent(lambda a, b: (1 - a) ** 2 + 100 * (b - a * a) ** 2, (-3.0, 3.0), lr=1e-3, steps=100, box=1e6)
    [cell] = tagged(CH07, "ch07-rosenbrock")
    text = "".join(out.text for out in cell.outputs if out.output_type == "stream")
    assert shows(text, "Hessian eigenvalues", 1, 1, low, high, high / low) and round(high / low) == 2508
    assert shows(text, "stable near", 2, high, 2 / high)  # lr < 2 / largest eigenvalue
    assert shows(text, "at the start", -1.5, 2, start, 1e-3 * start)
    assert (round(start, 1), round(1e-3 * start, 3)) == (2092.2, 2.092)
    assert shows(text, "eigenvalue exceeds", 2, len(over))  # steps taken where lr times it exceeds 2
    assert shows(text, "lr from", -3, 3, 1e6, len(far) - 1) and len(far) - 1 == 4


def test_ch07_gradcheck_catches_a_wrong_backward_rule():
    def cube(v, wrong):
        out = record("cube", v.data**3, (v,))
        slope = (2 if wrong else 3) * v.data**2

        def _backward(grad):
            v.grad += slope * grad

        out._backward = _backward
        return out

    with pytest.raises(GradcheckError, match="input 1: AD gradient -7"):
        gradcheck(lambda a, b: a * a * b - cube(b, wrong=True), 1.0, 2.0)
    assert gradcheck(lambda a, b: a * a * b - cube(b, wrong=False), 1.0, 2.0)
    text = shown(CH07)
    ad, numerical = 1 - 2 * 2.0**2, 1 - 3 * 2.0**2  # d/db (a^2 b - b^3) at (1, 2), with 2 b^2 for 3 b^2
    assert shows(text, "buggy cube:", 1, ad, numerical, abs(numerical - ad), ...)  # input, AD, numerical, error
    assert shows(text, "passes at", 25, True)
    assert shows(text, "disagreement:", 8.0, 1)  # in component 1
