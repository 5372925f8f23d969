"""The numbers of Chapters 2 and 3, computed by course_lib and shown by the executed notebooks,
and the chapters' inline teaching versions checked against course_lib."""

from __future__ import annotations

import math
import re

import nbformat
import numpy as np
import pytest
from notebook_text import markdown, shown, tagged
from paths import ROOT
from prose_numbers import shows

from course_lib import forward, graph
from course_lib.graph import Node

CH02 = ROOT / "book" / "02_computational_graphs.ipynb"
CH03 = ROOT / "book" / "03_forward_mode.ipynb"


def running_example() -> tuple[Node, Node, Node]:
    """f(x1, x2) = log x1 + x1 x2 - sin x2 at (2, 5), built as in the chapters."""
    x1, x2 = Node(2.0, "x1"), Node(5.0, "x2")
    y = graph.sub(graph.add(graph.log(x1), graph.mul(x1, x2)), graph.sin(x2))
    return x1, x2, y


def f(x1, x2):
    return x1.log() + x1 * x2 - x2.sin()


# ---- the plan's numbers, computed by course_lib ----------------------------------------------


def test_evaluation_trace_at_2_5():
    _, _, y = running_example()
    rows = graph.evaluation_trace(y)
    values = {name: value for name, _, value in rows}
    assert [name for name, _, _ in rows] == ["x1", "x2", "v1", "v2", "v3", "v4", "v5"]
    assert values["v1"] == pytest.approx(math.log(2))
    assert values["v2"] == 10.0
    assert values["v3"] == pytest.approx(math.sin(5))
    assert values["v4"] == pytest.approx(10.693, abs=5e-4)
    assert values["v5"] == pytest.approx(11.652, abs=5e-4)
    assert y.data == values["v5"]
    assert f"{y.data:.3f}" == "11.652"


def test_tangents_of_the_running_example():
    x1, x2, y = running_example()
    graph.forward(x1)
    assert y.partial_derivative == pytest.approx(5.5, abs=1e-12)
    graph.forward(x2)
    assert y.partial_derivative == pytest.approx(2 - math.cos(5), abs=1e-12)
    assert f"{y.partial_derivative:.3f}" == "1.716"
    rows = graph.tangent_table(x1, y)
    assert [round(value, 3) for _, _, value in rows] == [1.0, 0.0, 0.5, 5.0, 0.0, 5.5, 5.5]


def test_dual_numbers_and_jvp_give_the_same_tangents():
    assert forward.jvp(f, (2.0, 5.0), (1.0, 0.0))[1] == pytest.approx(5.5)
    assert forward.jvp(f, (2.0, 5.0), (0.0, 1.0))[1] == pytest.approx(2 - math.cos(5))
    value, tangent = forward.jvp(f, (2.0, 5.0), (1.0, 1.0))
    assert value == pytest.approx(11.652, abs=5e-4)
    assert tangent == pytest.approx(7.5 - math.cos(5))


def test_nested_derivative_has_no_perturbation_confusion():
    result = forward.derivative(lambda x: x * forward.derivative(lambda y: x + y, 1.0), 1.0)
    assert result == 1.0


# ---- the executed chapters show those numbers ----------------------------------------------


def test_chapter_2_shows_the_trace():
    text = shown(CH02)
    for number in ("0.693", "10.000", "-0.959", "10.693", "11.652", "2,097,151"):
        assert number in text, f"Chapter 2 should display {number}"


def test_chapter_2_says_where_its_drawing_puts_the_inputs():
    """The prose names the side of the graph drawing where the inputs and the output sit."""
    nb = nbformat.read(CH02, as_version=4)
    [cell] = [c for c in nb.cells if c.cell_type == "code" and c.source.strip().endswith("draw_graph(y)")]
    svg = next(out.data["image/svg+xml"] for out in cell.outputs if "image/svg+xml" in out.get("data", {}))
    labels = re.findall(r'<text[^>]* x="([-\d.]+)" y="([-\d.]+)"[^>]*>(x1|v5)</text>', svg)
    where = {name: (float(x), float(y)) for x, y, name in labels}
    (x_in, y_in), (x_out, y_out) = where["x1"], where["v5"]
    if abs(y_out - y_in) > abs(x_out - x_in):  # SVG's y grows downwards
        assert y_in < y_out
        expected = "Inputs sit at the top, the output at the bottom"
    else:
        assert x_in < x_out
        expected = "Inputs sit on the left, the output on the right"
    assert expected in " ".join(markdown(nb).split()), expected


def test_chapter_3_shows_the_tangents_and_the_confusion():
    text = shown(CH03)
    for number in ("5.500", "1.716", "7.216", "11.652"):
        assert number in text, f"Chapter 3 should display {number}"
    assert "5.5" in text
    # d/dx [x * d/dy (x + y)] at x = 1: 1.0 with tags, 2.0 when the two perturbations are confused
    assert shows(text, "untagged TinyDual:", 1, 2.0) and shows(text, "course_lib Dual:", 1, 1.0)


# ---- the teaching versions grown inline in Chapter 3 agree with course_lib --------------------


@pytest.fixture(scope="module")
def teaching() -> dict:
    """Execute the cells of Chapter 3 tagged 'teaching-version', in order, in one namespace."""
    cells = [c for c in tagged(CH03, "teaching-version") if c.cell_type == "code"]
    assert len(cells) >= 3, "Chapter 3 grows a pre-order DFS, a tangent sweep and a TinyDual inline"
    namespace: dict = {}
    for cell in cells:
        exec(compile(cell.source, str(CH03), "exec"), namespace)
    return namespace


def test_preorder_is_the_counterexample(teaching):
    x1, _, y = running_example()
    names = graph.node_names(graph.evaluation_order(y))
    pre = teaching["preorder_forward"](x1)
    assert [names[id(n)] for n in pre] == ["x1", "v1", "v4", "v5", "v2"]
    back = teaching["edges_pointing_back"](pre)
    assert [(names[id(p)], names[id(c)]) for p, c in back] == [("v2", "v4")]
    assert teaching["edges_pointing_back"](graph.topological_order_forward(x1)) == []


def random_graph(rng: np.random.Generator) -> tuple[list[Node], Node]:
    inputs = [Node(float(rng.uniform(0.5, 2.0))) for _ in range(3)]
    pool = list(inputs)
    for _ in range(12):
        a, b = pool[rng.integers(len(pool))], pool[rng.integers(len(pool))]
        op = int(rng.integers(4))
        pool.append(
            [graph.add, graph.sub, lambda u, v: graph.sin(graph.mul(u, v)), lambda u, v: graph.cos(u)][op](a, b)
        )
    return inputs, graph.add(pool[-1], pool[-2])


def test_teaching_sweep_agrees_with_graph_forward(teaching):
    sweep = teaching["tangent_sweep"]
    x1, x2, y = running_example()
    rng = np.random.default_rng(3)
    cases = [(x1, y), (x2, y)] + [(inputs[0], out) for inputs, out in (random_graph(rng) for _ in range(20))]
    for x, _ in cases:
        order = graph.topological_order_forward(x)
        mine = sweep(order)
        graph.forward(x)
        for node in order:
            assert mine[node] == pytest.approx(node.partial_derivative, rel=1e-12, abs=1e-12)
    assert sweep(graph.topological_order_forward(x1))[y] == pytest.approx(5.5)


def test_tiny_dual_agrees_with_course_lib(teaching):
    TinyDual, tiny_derivative = teaching["TinyDual"], teaching["tiny_derivative"]
    for seed in [(1.0, 0.0), (0.0, 1.0), (0.3, -2.0)]:
        mine = f(TinyDual(2.0, seed[0]), TinyDual(5.0, seed[1]))
        value, tangent = forward.jvp(f, (2.0, 5.0), seed)
        assert mine.primal == pytest.approx(value)
        assert mine.tangent == pytest.approx(tangent)
    assert f(TinyDual(2.0, 1.0), TinyDual(5.0, 0.0)).tangent == pytest.approx(5.5)
    functions = [lambda x: 3 + 2 * x * x, lambda x: x.sin() * x - x.log() + 1 + x - 4, lambda x: (x * x).sin()]
    for g in functions:
        for x in (0.4, 1.5, 3.0):
            assert tiny_derivative(g, x) == pytest.approx(forward.derivative(g, x), rel=1e-12)


def test_untagged_tiny_dual_shows_perturbation_confusion(teaching):
    tiny_derivative = teaching["tiny_derivative"]
    confused = tiny_derivative(lambda x: x * tiny_derivative(lambda y: x + y, 1.0), 1.0)
    assert confused == 2.0, "the untagged teaching dual is meant to give the wrong answer 2"
