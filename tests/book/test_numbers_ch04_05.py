"""Numbers of chapters 4 (reverse mode) and 5 (a scalar engine).

The plan's numbers are computed here with ``course_lib`` and looked up in the executed
notebooks, and the teaching version of ``Value`` that chapter 5 grows inline (its cells are
tagged ``teaching-version``) is checked against ``course_lib.scalar.Value``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from notebook_text import markdown, printed_by, shown, solution, tagged
from paths import ROOT
from prose_numbers import agrees, lines_with, listed, mentions, mentions_all, readings, shows

from course_lib import graph
from course_lib.graph import Node, add, log, mul, sin, sub
from course_lib.scalar import Value

CH04 = ROOT / "book" / "04_reverse_mode.ipynb"
CH05 = ROOT / "book" / "05_scalar_engine.ipynb"


def running_example():
    x1, x2 = Node(2.0, "x1"), Node(5.0, "x2")
    v1 = log(x1)
    v2 = mul(x1, x2)
    v3 = sin(x2)
    v4 = add(v1, v2)
    v5 = sub(v4, v3)
    return x1, x2, (v1, v2, v3, v4, v5)


# ---- chapter 4: the explicit graph ---------------------------------------------------------


def test_adjoint_table_of_the_running_example():
    x1, x2, (v1, v2, v3, v4, v5) = running_example()
    assert v5.data == pytest.approx(11.652, abs=5e-4)
    graph.reverse(v5)
    assert [v.partial_derivative for v in (v5, v4, v3, v2, v1)] == [1.0, 1.0, -1.0, 1.0, 1.0]
    assert x1.partial_derivative == pytest.approx(5.5, rel=1e-12)
    assert x2.partial_derivative == pytest.approx(2 - math.cos(5.0), rel=1e-12)
    assert round(x2.partial_derivative, 3) == 1.716
    values = [row[2] for row in graph.adjoint_table(v5)]
    assert [round(v, 3) for v in values] == [1.0, 1.0, -1.0, 1.0, 1.0, 1.716, 5.5]


def test_an_extra_output_is_pruned():
    x1, x2, (v1, v2, v3, v4, v5) = running_example()
    v6 = mul(v4, x2)
    graph.reverse(v6)  # leave a non-zero adjoint on v6 that a careless sweep would pick up
    visited = graph.reverse(v5)
    assert all(node is not v6 for node in visited)
    assert len(visited) == 7
    assert v6.partial_derivative == 0.0
    assert x1.partial_derivative == pytest.approx(5.5)
    assert x2.partial_derivative == pytest.approx(1.716, abs=5e-4)


def test_reverse_order_puts_children_before_parents():
    _, _, nodes = running_example()
    order = graph.topological_order_reverse(nodes[-1])
    position = {id(n): k for k, n in enumerate(order)}
    assert order[0] is nodes[-1]
    assert all(position[id(n)] < position[id(p)] for n in order for p in n._parents)


def test_fan_out_examples_on_the_graph():
    a, b = Node(2.0), Node(3.0)
    e = mul(add(a, b), add(b, 1.0))
    graph.reverse(e)
    assert (a.partial_derivative, b.partial_derivative) == (4.0, 9.0)
    x = Node(5.0)
    f = mul(add(x, 3.0), x)
    graph.reverse(f)
    assert x.partial_derivative == 13.0


def test_cost_counts_of_the_chapter():
    """Reverse mode: 5n - 2 products for f_n (one sweep); forward mode grows like n**2."""

    def f_graph(xs):
        n = len(xs)
        total = mul(sin(xs[0]), xs[1 % n])
        for i in range(1, n):
            total = add(total, mul(sin(xs[i]), xs[(i + 1) % n]))
        return total

    for n in (2, 8, 64):
        xs = [Node(0.1 * (i + 1)) for i in range(n)]
        y = f_graph(xs)
        reverse_cost = sum(len(node._parents) for node in graph.reverse(y))
        forward_cost = sum(sum(len(node._parents) for node in graph.forward(x)[1:]) for x in xs)
        assert reverse_cost == 5 * n - 2
        assert forward_cost > n * n
    assert forward_cost > 10 * reverse_cost  # at n = 64 the gap is already more than tenfold


def test_chapter_4_displays_the_numbers():
    text = shown(CH04)
    assert re.search(r"x̄1 = .*=\s+5\.500", text)
    assert re.search(r"x̄2 = .*=\s+1\.716", text)
    x1, x2, (v1, v2, v3, v4, v5) = running_example()
    v6 = mul(v4, x2)
    graph.reverse(v6)
    visited = graph.reverse(v5)
    assert shows(text, "adjoint of v6:", v6.partial_derivative) and v6.partial_derivative == 0.0
    assert listed(text, "reverse(v5):") == ["v5", "v4", "v1", "v2", "x1", "v3", "x2"] and len(visited) == 7
    assert re.search(r"ā = c̄\s+=\s+4\.000", text)
    assert re.search(r"b̄ = c̄ \+ d̄ = 9\.000", text)
    assert re.search(r"x̄ = .*=\s+13\.000", text)
    assert re.search(r"^\s+256\s+767\s+256\s+\d+\s+1\s+1278$", text, re.M)


# ---- chapter 5: the scalar engine ----------------------------------------------------------


def test_manual_backward_example_and_accumulation():
    a, b = Value(1.0), Value(2.0)
    L = b * ((a + b) * (a - b))
    assert L.data == -6.0
    L.backward()
    assert (a.grad, b.grad) == (4.0, -11.0)
    L.backward()
    assert (a.grad, b.grad) == (8.0, -22.0)


def test_chapter_5_displays_the_numbers():
    text = shown(CH05)
    for name, adjoint in {"L": 1, "e": 2, "c": -2, "d": 6, "a": 4, "b": -11}.items():  # the backward pass by hand
        assert shows(text, f"dL/d{name}", adjoint), name
    a, b = Value(1.0), Value(2.0)
    L = b * ((a + b) * (a - b))
    L.backward()
    once = (a.grad, b.grad)
    assert shows(text, "dL/da", *once) >= 3 and shows(text, "one call:", *once) == 2  # with PyTorch
    L.backward()
    twice = (a.grad, b.grad)
    assert shows(text, "two calls:", *twice) == 2 and shows(text, "PyTorch,", *twice)
    assert shows(text, "backward():", *twice)  # after a second backward()
    assert shows(text, "after two calls:", 2 * twice[0], twice[0], 2 * twice[1], twice[1])  # shared children
    p, q = Value(2.0), Value(3.0)
    ((p + q) * (q + 1)).backward()
    assert shows(text, "de/da", p.grad, q.grad) and (p.grad, q.grad) == (4, 9)
    x = Value(5.0)
    ((x + 3) * x).backward()
    assert shows(text, "df/dx", x.grad) and x.grad == 13
    assert "'Value' and 'str'" in lines_with(text, "TypeError:")


def test_ch05_exercise_on_repeated_calls_states_the_numbers():
    """Exercise 3: three calls of the final backward() give 3x the gradient; the first version,
    which never resets the intermediate adjoints, gives a.grad 4, 16, 40 and b.grad -11, -44, -119."""
    namespace: dict = {"__name__": "teaching_version"}
    first_version = None
    for cell in tagged(CH05, "teaching-version"):
        exec(compile(cell.source, "<teaching-version>", "exec"), namespace)
        first_version = first_version or namespace.get("backward")
    final = namespace["backward"]
    assert first_version is not final
    seen = {}
    for name, backward in (("final", final), ("first", first_version)):
        Value5 = namespace["Value"]
        a, b = Value5(1.0), Value5(2.0)
        L = b * ((a + b) * (a - b))
        seen[name] = []
        for _ in range(3):
            backward(L)
            seen[name].append((a.grad, b.grad))
    assert seen["final"] == [(4.0, -11.0), (8.0, -22.0), (12.0, -33.0)]
    assert seen["first"] == [(4.0, -11.0), (16.0, -44.0), (40.0, -119.0)]
    answer = solution(CH05, "ch05-ex3")
    for a_grad, b_grad in seen["first"] + seen["final"][-1:]:
        assert mentions(answer, a_grad) and mentions(answer, b_grad), (a_grad, b_grad)
    assert mentions(answer, seen["first"][2][0] - seen["first"][1][0], near="third call", within=40)


def test_ch05_check_your_scalar_exercise():
    """S4's exercise: (a^3 - b^2) a - a b and the four-factor product, by hand and by the engine."""

    def engine(a, b, c):
        x, y = Value(a), Value(b)
        l1 = (x**3 - y**2) * x - x * y
        l1.backward()
        p, q, r = Value(a), Value(b), Value(c)
        l2 = (p + q + r) * (-p + q + r) * (p - q + r) * (p + q - r)
        l2.backward()
        return l1.data, l2.data, (x.grad, y.grad, p.grad, q.grad, r.grad)

    assert engine(1.0, 2.0, 3.0) == (-5.0, 0.0, (-2.0, -5.0, 48.0, 48.0, -48.0))
    assert engine(3.0, 4.0, 5.0) == (21.0, 576.0, (88.0, -27.0, 384.0, 288.0, 0.0))
    answer = solution(CH05, "ch05-check-scalar")
    assert mentions_all(answer, [-5, -2, -5], near="At $(1, 2, 3)$", within=60)
    assert mentions_all(answer, [0, 48, 48, -48, 6 * 4 * 2], near="flat", within=200)
    assert mentions_all(answer, [0, 384, 288], near="right angle", within=150)


# ---- chapter 5: the teaching version agrees with course_lib -----------------------------------


@pytest.fixture(scope="module")
def teaching_value():
    cells = [c for c in tagged(CH05, "teaching-version") if c.cell_type == "code"]
    assert len(cells) >= 4, "chapter 5 should tag the cells of its teaching version"
    namespace: dict = {"__name__": "teaching_version"}
    for cell in cells:
        exec(compile(cell.source, "<teaching-version>", "exec"), namespace)
    return namespace["Value"]


EXAMPLES = {
    "L = b((a+b)(a-b))": ((1.0, 2.0), lambda a, b: b * ((a + b) * (a - b))),
    "(a+b)(b+1)": ((2.0, 3.0), lambda a, b: (a + b) * (b + 1)),
    "(x+3)x": ((5.0,), lambda x: (x + 3) * x),
    "tanh": ((0.5,), lambda x: x.tanh()),
    "tanh from exp": ((0.5,), lambda x: ((2 * x).exp() - 1) / ((2 * x).exp() + 1)),
    "relu": ((-1.5, 2.0), lambda x, y: x.relu() + y.relu() * x),
    "exp and log": ((0.7,), lambda x: x.exp().log() + (x * x).log()),
    "powers": ((1.7,), lambda x: x**3 + x**-1 + x**0.5),
    "division": ((3.0, 4.0), lambda a, b: a / b + 2 / b - b / 5),
    "reflected": ((4.0,), lambda x: 2 * x + (1 - x) + (3 + x) - x * 0.5),
    "negation": ((1.5, -0.5), lambda x, y: -(x - y) * -y),
}


def grads(cls, inputs, f):
    leaves = [cls(x) for x in inputs]
    out = f(*leaves)
    out.backward()
    return out.data, [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("name", EXAMPLES)
def test_teaching_version_agrees_with_course_lib(teaching_value, name):
    inputs, f = EXAMPLES[name]
    value, gradient = grads(teaching_value, inputs, f)
    want_value, want_gradient = grads(Value, inputs, f)
    assert value == pytest.approx(want_value, rel=1e-12)
    assert gradient == pytest.approx(want_gradient, rel=1e-12, abs=1e-12)


def test_teaching_version_backward_twice_and_errors(teaching_value):
    a, b = teaching_value(1.0), teaching_value(2.0)
    L = b * ((a + b) * (a - b))
    L.backward()
    assert (a.grad, b.grad) == (4.0, -11.0)
    L.backward()
    assert (a.grad, b.grad) == (8.0, -22.0)
    for cls in (teaching_value, Value):
        with pytest.raises(TypeError):
            cls(2.0) + "3"
        with pytest.raises(TypeError):
            [1, 2] * cls(2.0)


OPS = ["add", "sub", "mul", "neg", "tanh", "exp_tanh", "square", "div"]


def apply(op, a, b):
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "neg": lambda: -a,
        "tanh": lambda: a.tanh(),
        "exp_tanh": lambda: a.tanh().exp(),
        "square": lambda: a**2,
        "div": lambda: a / (b * b + 1),
    }[op]()


@settings(max_examples=60, deadline=None)
@given(
    inputs=st.lists(st.floats(-2, 2), min_size=2, max_size=3),
    steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=8),
)
def test_teaching_version_agrees_on_random_expressions(teaching_value, inputs, steps):
    def run(cls):
        nodes = [cls(x) for x in inputs]
        for op, i, j in steps:
            nodes.append(apply(op, nodes[i % len(nodes)], nodes[j % len(nodes)]))
        out = nodes[len(inputs)]
        for node in nodes[len(inputs) + 1 :]:
            out = out + node
        out.backward()
        return [leaf.grad for leaf in nodes[: len(inputs)]]

    assert run(teaching_value) == pytest.approx(run(Value), rel=1e-9, abs=1e-9)


# ---- issue 14: frames, the BFS counterexample, the Jacobian, node nudging ---------------------


def stepper_captions(path: Path, tag: str) -> list[str]:
    """The captions of the stepper that the cell tagged ``tag`` shows, one per frame, as the page shows them."""
    import html

    [cell] = tagged(path, tag)
    [page] = [out.data["text/html"] for out in cell.outputs if "text/html" in out.get("data", {})]
    return [html.unescape(text) for text in re.findall(r'<div class="stepper-frame"[^>]*><p[^>]*>(.*?)</p>', page)]


def test_ch04_stepper_shows_each_adjoint_with_the_children_it_sums():
    captions = stepper_captions(CH04, "ch04-frames")
    assert len(captions) == 7
    assert captions[4] == (
        "Step 5 of 7: x1 sums over its children v1 and v2: x̄1 = v̄1 × ∂v1/∂x1 + v̄2 × ∂v2/∂x1 "
        "= 1.000 × 0.500 + 1.000 × 5.000 = 5.500."
    )
    assert captions[6].startswith("Step 7 of 7: x2 sums over its children v2 and v3:")
    assert captions[6].endswith(f"= 1.000 × 2.000 − 1.000 × {math.cos(5.0):.3f} = {2 - math.cos(5.0):.3f}.")


def test_ch04_says_why_the_stepper_and_the_table_may_differ_in_order():
    """The prose names both orders: they are the engine's, they differ, and each puts every node
    after all of its children (a reverse topological order), which the prose gives as the reason."""
    prose = " ".join(markdown(CH04).split())
    found = re.search(r"The stepper visits \$([^$]*)\$; the adjoint table above lists \$([^$]*)\$", prose)
    assert found, "chapter 4 no longer states the stepper's and the table's orders"
    stated = [[name.strip().replace("_", "") for name in group.split(",")] for group in found.groups()]
    x1, x2, nodes = running_example()
    names = dict(zip(map(id, (x1, x2, *nodes)), ["x1", "x2", "v1", "v2", "v3", "v4", "v5"]))
    by_name = {names[id(node)]: node for node in (x1, x2, *nodes)}
    assert stated[0] == [names[id(node)] for node in graph.reverse(nodes[-1])]
    assert stated[1] == [row[0].replace("\u0304", "") for row in graph.adjoint_table(nodes[-1])]
    assert stated[0] != stated[1]
    for order in stated:
        position = {name: k for k, name in enumerate(order)}
        assert all(position[names[id(child)]] < position[name] for name in order for child in by_name[name]._children)
    assert "any *reverse topological order*" in prose


def test_ch04_breadth_first_order_gives_a_wrong_adjoint():
    x = Node(1.0, "x")
    out = mul(x, sin(add(x, 3.0)))
    graph.reverse(out)
    assert x.partial_derivative == pytest.approx(math.sin(4) + math.cos(4))
    wrong = math.sin(4)  # x pulled only from f: g had not passed its share back yet
    text = printed_by(CH04, "ch04-bfs")
    assert listed(text, "breadth-first order:") == ["f", "x", "s", "g", "3"]
    assert shows(text, "in that order:", wrong)
    assert shows(text, "graph.reverse:", x.partial_derivative, 4, 4, math.sin(4) + math.cos(4))


def test_ch04_jacobian_by_columns_equals_rows():
    text = printed_by(CH04, "ch04-jacobian")
    x1, x2 = 2.0, 5.0  # the Jacobian of (x1 x2, sin x1, x1 + x2^2), one printed row per output
    rows = [readings(line) for line in text.splitlines() if line.lstrip().startswith("[")]
    expected = [[x2, x1], [math.cos(x1), 0.0], [1.0, 2 * x2]]
    assert len(rows) == 3 and all(agrees(row, want) for row, want in zip(rows, expected))
    assert round(math.cos(2.0), 3) == -0.416
    assert shows(text, "reverse sweeps:", True)  # columns by forward sweeps == rows by reverse sweeps


def test_ch05_nudging_a_node_moves_L_by_its_adjoint():
    text = printed_by(CH05, "ch05-nudge")
    adjoints = {"L": 1, "e": 2, "c": -2, "d": 6, "a": 4, "b": -11}
    for name, adjoint in adjoints.items():
        assert re.search(rf"nudge {name} by h: L moves by +{adjoint:.4f} h +adjoint +{adjoint}$", text, re.M), name
    h = 0.1  # the exercise's claims: exact in c, d, e; 4 + 2h and -11 - 6h - h^2 in a and b
    L = lambda a, b: b * ((a + b) * (a - b))  # noqa: E731
    assert (L(1 + h, 2) - L(1, 2)) / h == pytest.approx(4 + 2 * h)
    assert (L(1, 2 + h) - L(1, 2)) / h == pytest.approx(-11 - 6 * h - h * h)
    assert (2.0 * 3.0 * (-1.0 + 0.01)) - (-6.0) == pytest.approx(0.06)


def test_ch05_stepper_lists_what_each_backward_sends_to_each_parent():
    captions = stepper_captions(CH05, "ch05-frames")
    steps = [re.match(r"Step \d of 7: (\S+) (runs|is a leaf)", caption).group(1) for caption in captions]
    assert steps == ["L", "e", "c", "d", "a", "neg(b)", "b"]
    assert captions[0].endswith(
        "sends to its parents e and b: e.grad += 1.000 × 2.000 = 2.000; b.grad += 1.000 × (−3.000) = −3.000."
    )
    assert captions[2].endswith("b.grad += −2.000 × 1.000 = −2.000 (now −5.000).")
    assert captions[3].endswith("a.grad += 6.000 × 1.000 = 6.000 (now 4.000); neg(b).grad += 6.000 × 1.000 = 6.000.")
    assert captions[5].endswith("b.grad += 6.000 × (−1.000) = −6.000 (now −11.000).")
    assert captions[6] == "Step 7 of 7: b is a leaf: its grad −11.000 is complete, and it has no parents to send to."
