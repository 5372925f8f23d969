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
    assert "y = 11.652, dy/dx1 = 5.5, dy/dx2 = 1.716" in text
    assert "56 of 40,320 orderings of the 8 nodes are topological" in text
    assert f"post-order:         {recursive}" in text
    assert f"backward schedule:  {recursive[::-1]}" in text
    assert f"child-count order:     {kahn}" in text
    assert f"reversed DFS order:    {iterative[::-1]}" in text
    assert "both output first and every node before its parents: True" in text


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
    assert "pre-order from e: ['e', 's', 'u', 'x', '1', 't', '3']" in text
    assert "as a backward schedule, is every node before its parents? False" in text
    assert f"de/dx along the pre-order:           {wrong:.6f}" in text
    assert f"de/dx along the reversed post-order: {right:.6f}" in text
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
    assert "recursion limit: 1000" in text
    assert "postorder_recursive on a chain of 2,000 sines: RecursionError" in text
    assert "postorder on the same chain sorts 2001 nodes" in text
    assert "a few dozen nodes short of the limit: True" in text


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
    assert f"dy/dx    (engine)  = {x.grad:.12f}" in text
    assert f"dy/drate (engine)  = {rate.grad:,.2f}" in text
    assert f"n (1 + 1/n)^(n-1)  = {n * (1 + 1 / n) ** (n - 1):,.2f}" in text


def test_ch06_diamond_ladder_is_sorted_with_one_lookup_per_node():
    w = Value(0.5, "w0")
    for _ in range(20):
        w = w.sin() + w.cos()
    calls = Counter()

    def counting(v):
        calls["n"] += 1
        return v._parents

    assert len(toposort.postorder(w, counting)) == 61 and calls["n"] == 61
    assert "20 diamonds: 61 nodes, 1,048,576 paths from the output to w0, parents looked up 61 times" in shown(CH06)


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
    assert "the same as toposort.postorder: True" in shown(CH06)


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
    assert "L(1, 2) = -6.0" in text
    assert "dL/da = 4.0, dL/db = -11.0" in text


def test_ch07_one_step_and_accumulation():
    assert math.isclose(loss(0.96, 2.11), -7.449355, abs_tol=1e-9)
    a, b = Value(1.0), Value(2.0)
    L = loss(a, b)
    L.backward()
    L.backward()
    assert (a.grad, b.grad) == (8.0, -22.0)
    text = shown(CH07)
    assert "predicted L = -7.370000" in text and "actual    L = -7.449355" in text
    assert "after a second backward(): dL/da = 8.0, dL/db = -22.0" in text
    assert "after zero_grad():         dL/da = 4.0, dL/db = -11.0" in text


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
    assert "left the box after 16 steps; L decreased at every step: True" in text
    assert f"step 16: a = {path[16, 0]:7.4f}, b = {path[16, 1]:8.4f}, L = {losses[16]:10.3f}" in text


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
    assert "where the 40 runs went: {'down-left': 8, 'down-right': 14, 'still inside': 1, 'up': 17}" in text
    assert "the loss decreased at every step of every run: True" in text


def test_ch07_learning_rates_on_the_bowl(gradient_descent):
    text = shown(CH07)
    finals = {}
    for lr in (0.02, 0.1, 0.18, 0.21):
        run = gradient_descent(bowl, (3.0, 1.0), lr=lr, steps=40)
        q = bowl(run[:, 0], run[:, 1])
        finals[lr] = q[-1]
        # Exact: each coordinate is multiplied by (1 - lr * lambda) per step.
        assert np.allclose(run[-1], [3.0 * (1 - lr) ** 40, (1 - 10 * lr) ** 40], rtol=1e-9, atol=1e-15)
        assert f"Q after 40 steps = {q[-1]:.3g}" in text
        if lr < 0.2:
            assert np.all(np.diff(q) <= 0), f"lr = {lr} is stable, the loss must not increase"
    assert finals[0.18] < finals[0.1] < finals[0.02] < 1 < bowl(3.0, 1.0) < finals[0.21]


def test_ch07_rosenbrock(gradient_descent):
    run = gradient_descent(lambda a, b: (1 - a) ** 2 + 100 * (b - a * a) ** 2, (-1.5, 2.0), lr=1e-3, steps=20_000)
    distance = np.hypot(run[-1, 0] - 1, run[-1, 1] - 1)
    assert 1e-4 < distance < 1e-3
    assert f"distance to (1, 1) = {distance:.2e}" in shown(CH07)


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
    assert "Hessian eigenvalues at (1, 1): 0.399 and 1001.6; condition number 2,508" in text
    assert "stable near the minimum for alpha < 2 / 1001.6 = 0.00200" in text
    assert f"largest eigenvalue {start:.1f}, alpha times it = {1e-3 * start:.3f}" in text
    assert "largest eigenvalue 2092.2, alpha times it = 2.092" in text
    assert "steps taken where alpha times the largest eigenvalue exceeds 2: 1" in text
    assert f"a coordinate exceeds 1e6 after {len(far) - 1} steps" in text and len(far) - 1 == 4


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
    assert "buggy cube: gradcheck failed at input 1: AD gradient -7, numerical gradient -11" in text
    assert "fixed cube passes at 25 random points: True" in text
    assert "largest disagreement: 8.0 in component 1" in text
