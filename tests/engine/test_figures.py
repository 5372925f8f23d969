"""course_lib.figures: the stepper through a backward pass (one frame per node, one size and
layout, the step's edges highlighted, local derivatives on the edges, captions naming the nodes
summed from or sent to, the engine's own numbers), the Jacobian picture that marks one column and
one row, and every chapter figure drawing what it is given."""

from __future__ import annotations

import html
import math
import re
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import course_lib.figures.basics as figures  # noqa: E402
from course_lib import graph  # noqa: E402
from course_lib.figures.stepper import Frame, Stepper  # noqa: E402
from course_lib.figures.sweeps import backward_stepper, jacobian_columns_and_rows  # noqa: E402
from course_lib.graph import Node, add, log, mul, sin, sub  # noqa: E402
from course_lib.scalar import Value  # noqa: E402
from course_lib.viz import EDGE_HIGHLIGHT  # noqa: E402


@pytest.fixture
def shown(monkeypatch):
    """The figures passed to plt.show(), closed afterwards."""
    figs = []
    monkeypatch.setattr(plt, "show", lambda: figs.append(plt.gcf()))
    yield figs
    plt.close("all")


def running_example():
    x1, x2 = Node(2.0, "x1"), Node(5.0, "x2")
    return x1, x2, sub(add(log(x1), mul(x1, x2)), sin(x2))


def running_example_labelled():
    x1, x2, y = running_example()
    names = {"x1": x1, "x2": x2}
    v5 = y
    v4, v3 = v5._parents
    v1, v2 = v4._parents
    for name, node in {"v1": v1, "v2": v2, "v3": v3, "v4": v4, "v5": v5}.items():
        node.label = name
        names[name] = node
    return names


def value_example():
    a, b = Value(1.0, "a"), Value(2.0, "b")
    c = a + b
    c.label = "c"
    d = a - b
    d.label = "d"
    e = c * d
    e.label = "e"
    L = e * b
    L.label = "L"
    return a, b, L


def drawn(svg: str) -> tuple[dict[str, str], dict[tuple[str, str], tuple[str, bool]]]:
    """What a graphviz frame shows: each node's first line of text (its name) by graphviz id,
    and each edge (tail id, head id) with its label and whether it is highlighted."""
    names, edges = {}, {}
    for kind, body in re.findall(r'<g id="[^"]*" class="(node|edge)">(.*?)</g>', svg, re.S):
        title = html.unescape(re.search(r"<title>(.*?)</title>", body).group(1))
        texts = [html.unescape(t).strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", body)]
        if kind == "node":
            names[title] = texts[0]
        else:
            tail, head = title.split("->")
            edges[tail, head] = (texts[0] if texts else "", EDGE_HIGHLIGHT in body)
    return names, edges


def highlighted(svg: str) -> set[tuple[str, str]]:
    """The highlighted edges of a frame, by the names of their ends (an operation as its symbol)."""
    names, edges = drawn(svg)
    return {(names[tail], names[head]) for (tail, head), (_, used) in edges.items() if used}


def boxes(svg: str) -> list[str]:
    """Where each node's outline sits: the layout, whatever the labels say."""
    return re.findall(r'class="node">\s*<title>[^<]*</title>\s*<(?:polygon|ellipse) fill="[^"]*" ([^>]*)/>', svg)


def test_pull_stepper_has_one_frame_per_node_all_of_one_size_and_layout():
    nodes = running_example_labelled()
    stepper = backward_stepper(nodes["v5"], name="ch04-sweep")
    order = graph.reverse(nodes["v5"])
    assert len(stepper) == len(order) == len(graph.evaluation_order(nodes["v5"])) == 7
    assert len({frame.size for frame in stepper.frames}) == 1
    assert len({re.search(r"<svg[^>]*>", frame.svg).group() for frame in stepper.frames}) == 1
    layouts = [boxes(frame.svg) for frame in stepper.frames]
    assert len(layouts[0]) == 7 and all(layout == layouts[0] for layout in layouts)
    filled = [
        re.findall(r'class="node">\s*<title>([^<]*)</title>\s*<polygon fill="#ffd27f"', f.svg) for f in stepper.frames
    ]
    assert all(len(f) == 1 for f in filled)  # one filled box per frame


def test_pull_frames_highlight_the_edges_to_the_children_and_label_every_edge():
    nodes = running_example_labelled()
    stepper = backward_stepper(nodes["v5"], name="ch04-sweep")
    order = [node.label for node in graph.reverse(nodes["v5"])]
    assert order == ["v5", "v4", "v1", "v2", "x1", "v3", "x2"]
    children = {"v5": set(), "v4": {"v5"}, "v1": {"v4"}, "v2": {"v4"}, "x1": {"v1", "v2"}, "v3": {"v5"}}
    children["x2"] = {"v2", "v3"}
    for name, frame in zip(order, stepper.frames):
        assert highlighted(frame.svg) == {(name, child) for child in children[name]}
    local = {("x1", "v1"): 0.5, ("x1", "v2"): 5.0, ("x2", "v2"): 2.0, ("x2", "v3"): math.cos(5.0)}
    local |= {("v1", "v4"): 1.0, ("v2", "v4"): 1.0, ("v4", "v5"): 1.0, ("v3", "v5"): -1.0}
    for frame in stepper.frames:
        names, edges = drawn(frame.svg)
        labels = {(names[t], names[h]): label for (t, h), (label, _) in edges.items()}
        assert labels == {edge: f"×{d:.3f}".replace("-", "−") for edge, d in local.items()}


def test_pull_captions_name_the_node_and_the_children_it_sums():
    nodes = running_example_labelled()
    captions = [frame.caption for frame in backward_stepper(nodes["v5"], name="ch04-sweep").frames]
    assert captions[0] == "Step 1 of 7: v5 is the output, so its adjoint is v̄5 = ∂v5/∂v5 = 1."
    assert captions[1] == "Step 2 of 7: v4 sums over its child v5: v̄4 = v̄5 × ∂v5/∂v4 = 1.000 × 1.000 = 1.000."
    assert captions[4] == (
        "Step 5 of 7: x1 sums over its children v1 and v2: x̄1 = v̄1 × ∂v1/∂x1 + v̄2 × ∂v2/∂x1 "
        "= 1.000 × 0.500 + 1.000 × 5.000 = 5.500."
    )
    assert captions[5].endswith("v̄3 = v̄5 × ∂v5/∂v3 = 1.000 × (−1.000) = −1.000.")
    assert captions[6].startswith("Step 7 of 7: x2 sums over its children v2 and v3: ")
    assert captions[6].endswith(f"= 1.000 × 2.000 − 1.000 × {math.cos(5.0):.3f} = {2 - math.cos(5.0):.3f}.")


def test_every_number_a_frame_draws_is_in_its_text_alternative():
    nodes = running_example_labelled()
    a, b, L = value_example()
    for stepper in (backward_stepper(nodes["v5"], name="pull"), backward_stepper(L, name="push")):
        for k, frame in enumerate(stepper.frames, start=1):
            texts = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", frame.svg)).replace("&#45;", "-")
            shown = {float(x.replace("−", "-")) for x in re.findall(r"[-−]?\d+\.\d+", texts)}
            said = {float(x.replace("−", "-")) for x in re.findall(r"[-−]?\d+\.\d+", frame.alt)}
            assert shown <= said, (stepper.name, k, shown - said)
            assert frame.alt.count("question mark") == ("?" in texts)


def test_push_stepper_replays_backward_one_frame_per_node():
    a, b, L = value_example()
    stepper = backward_stepper(L, name="ch05-sweep")
    assert (a.grad, b.grad) == (4.0, -11.0)  # the replay ran the engine's own closures
    assert len(stepper) == 7  # a, b, c, neg(b), d, e, L
    assert len({frame.size for frame in stepper.frames}) == 1
    layouts = [boxes(frame.svg) for frame in stepper.frames]
    assert all(layout == layouts[0] for layout in layouts)
    assert [frame.caption for frame in stepper.frames] == [
        "Step 1 of 7: L runs its _backward with its grad 1.000 (the seed, ∂L/∂L), and sends to its parents e and b: "
        "e.grad += 1.000 × 2.000 = 2.000; b.grad += 1.000 × (−3.000) = −3.000.",
        "Step 2 of 7: e runs its _backward with its grad 2.000, complete now, and sends to its parents c and d: "
        "c.grad += 2.000 × (−1.000) = −2.000; d.grad += 2.000 × 3.000 = 6.000.",
        "Step 3 of 7: c runs its _backward with its grad −2.000, complete now, and sends to its parents a and b: "
        "a.grad += −2.000 × 1.000 = −2.000; b.grad += −2.000 × 1.000 = −2.000 (now −5.000).",
        "Step 4 of 7: d runs its _backward with its grad 6.000, complete now, and sends to its parents a and neg(b): "
        "a.grad += 6.000 × 1.000 = 6.000 (now 4.000); neg(b).grad += 6.000 × 1.000 = 6.000.",
        "Step 5 of 7: a is a leaf: its grad 4.000 is complete, and it has no parents to send to.",
        "Step 6 of 7: neg(b) runs its _backward with its grad 6.000, complete now, and sends to its parent b: "
        "b.grad += 6.000 × (−1.000) = −6.000 (now −11.000).",
        "Step 7 of 7: b is a leaf: its grad −11.000 is complete, and it has no parents to send to.",
    ]
    # the step's edges: from each parent into the node's operation, and on into the node
    assert highlighted(stepper.frames[2].svg) == {("a", "+"), ("b", "+"), ("+", "c")}
    assert highlighted(stepper.frames[5].svg) == {("b", "neg"), ("neg", "data -2.000")}
    assert highlighted(stepper.frames[4].svg) == highlighted(stepper.frames[6].svg) == set()  # leaves
    L.backward()
    assert (a.grad, b.grad) == (8.0, -22.0)  # leaves accumulate as after a real backward()


def test_a_value_used_twice_gets_one_edge_with_the_summed_derivative():
    x = Value(3.0, "x")
    z = x * x
    z.label = "z"
    [frame, _] = backward_stepper(z, name="square").frames
    names, edges = drawn(frame.svg)
    assert [(names[t], label) for (t, h), (label, _) in edges.items() if names[h] == "*"] == [("x", "×6.000")]
    assert frame.caption.endswith("x.grad += 1.000 × 6.000 = 6.000.")
    node = Node(3.0, "x")
    [first, _] = backward_stepper(mul(node, node), name="square").frames
    assert [label for label, _ in drawn(first.svg)[1].values()] == ["×6.000"]


def heights(svg: str) -> dict[str, float]:
    """Each node's name and the y of its text in the SVG (smaller is higher on the page)."""
    found = {}
    for body in re.findall(r'<g id="[^"]*" class="node">(.*?)</g>', svg, re.S):
        y, text = re.search(r'<text[^>]*\by="(-?[\d.]+)"[^>]*>([^<]*)</text>', body).groups()
        found[html.unescape(text).strip()] = float(y)
    return found


def test_a_sweep_starts_on_top_next_to_the_controls_and_ends_next_to_them_too():
    """Chapters 4 and 5's frames are 735 and 969 px tall: the output, where the sweep starts, is
    drawn on top under the controls, and the buttons come again under the picture, where it ends
    (the pictures keep their size: their labels stay as large as the body text)."""
    for root, output, inputs in (
        (running_example_labelled()["v5"], "v5", ("x1", "x2")),
        (value_example()[2], "L", "ab"),
    ):
        stepper = backward_stepper(root, name="sweep")
        at = heights(stepper.frames[0].svg)
        assert all(at[output] < at[x] for x in inputs), at
        assert stepper.frames[0].caption.startswith(f"Step 1 of 7: {output} ")
        page = stepper.html()
        above, frames, below = re.fullmatch(
            r'<div class="course-stepper"[^>]*>(<div class="stepper-controls".*?</div>)'
            r'<div class="stepper-frames">(.*)</div>(<div class="stepper-controls".*?</div>)<script>.*',
            page,
            re.S,
        ).groups()
        assert frames.count('class="stepper-frame"') == 7 and 'style="max-width: 100%; height: auto"' in frames
        for bar in (above, below):
            assert '<button type="button" data-move="-1">Previous step</button>' in bar
            assert '<button type="button" data-move="1">Next step</button>' in bar and "<output" in bar
        assert page.count('type="range"') == 1 and 'type="range"' in above


def test_the_stepper_html_is_deterministic_and_its_ids_come_from_the_name():
    first = backward_stepper(running_example_labelled()["v5"], name="ch04-sweep").html()
    assert first == backward_stepper(running_example_labelled()["v5"], name="ch04-sweep").html()
    ids = re.findall(r'\bid="([^"]*)"', first)
    assert ids == ["ch04-sweep", "ch04-sweep-step"]
    assert '<label for="ch04-sweep-step">Step</label>' in first
    assert first.count("<img ") == 7 and first.count('alt="The graph of v5') == 7
    assert len(set(re.findall(r'<img [^>]*width="(\d+)" height="(\d+)"', first))) == 1
    assert "Generated by graphviz" not in first  # a tool's version would change the stored output
    assert not re.search(r'(src|href)="(?!data:)', first)  # nothing to fetch: the book steps offline


def test_the_slider_shows_the_frame_it_is_set_to():
    stepper = backward_stepper(running_example_labelled()["v5"], name="ch04-sweep")
    slider, picture = stepper.slider().children
    assert (slider.min, slider.max, slider.value) == (1, 7, 1)
    assert "Step 1 of 7" in picture.value
    slider.value = 5
    assert "Step 5 of 7: x1 sums over its children v1 and v2" in picture.value
    assert picture.value == stepper.frame_html(4)


def test_the_slider_says_how_to_get_ipywidgets(monkeypatch):
    stepper = backward_stepper(running_example_labelled()["v5"], name="ch04-sweep")
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(ImportError, match="pip install ipywidgets"):
        stepper.slider()


def test_steppers_refuse_bad_input():
    with pytest.raises(TypeError, match="takes a graph.Node or a scalar.Value, got float"):
        backward_stepper(1.0, name="sweep")
    frame = backward_stepper(Value(2.0, "x"), name="leaf").frames[0]
    with pytest.raises(ValueError, match="lower-case letters, digits and hyphens"):
        Stepper([frame], name="Sweep 1", title="t")
    with pytest.raises(ValueError, match="at least one frame"):
        Stepper([], name="sweep", title="t")
    wider = Frame(frame.svg.replace('<svg width="', '<svg width="1'), "caption", "alt")
    with pytest.raises(ValueError, match="one size"):
        Stepper([frame, wider], name="sweep", title="t")


def test_jacobian_picture_marks_one_column_and_one_row(shown):
    J = np.array([[5.0, 2.0], [math.cos(2.0), 0.0], [1.0, 10.0]])
    jacobian_columns_and_rows(J, column=0, row=2, inputs=["x1", "x2"], outputs=["y1", "y2", "y3"])
    left, right = shown[0].axes
    bold = [[t.get_text() for t in ax.texts if t.get_fontweight() == "bold"] for ax in (left, right)]
    assert bold == [["5.000", "-0.416", "1.000"], ["1.000", "10.000"]]
    assert "column 1" in left.get_title() and "row 3" in right.get_title()


def test_chapter_figures_draw_what_they_are_given(shown):
    f = lambda x: x**3 - 10 * x**2 + 5 * x - 2  # noqa: E731
    figures.tangent_and_secants(f, lambda x: 3 * x**2 - 20 * x + 5, 6.0)
    assert "slope $f'(x_0)=-7$" in shown[-1].axes[0].get_legend().get_texts()[1].get_text()
    figures.gradient_cost([1, 10], np.array([[2, 2, 8 / 3], [11, 20, 8 / 3]]))
    assert list(shown[-1].axes[0].lines[2].get_ydata()) == [8 / 3, 8 / 3]
    figures.graph_vs_tree([1, 2], [(2, 3), (3, 7)])
    figures.passes_per_direction([1, 2], [1, 2], [1, 1])
    figures.sweep_costs([(2, 5, 2, 14, 1, 8), (4, 11, 4, 42, 1, 18)])
    figures.recursion_limits([250, 500], [200, 450], 1_000_000)
    figures.step_sizes(
        lambda a, b: 0.5 * (a * a + 10 * b * b), {0.1: np.array([[3.0, 1.0], [2.7, 0.0]])}, {0.1: "good"}
    )
    from course_lib.check import numerical_grad

    figures.finite_difference_errors(f, 6.0, -7.0, 16.0, 6.0, (8e-8, 2.3e-5), numerical_grad)
    figures.gradients_on_a_grid(
        {"tanh(x)": lambda v: v.tanh(), "relu(x)": lambda v: v.relu()},
        {"tanh(x)": lambda x: 1 - np.tanh(x) ** 2, "relu(x)": lambda x: (x > 0) * 1.0},
    )
    engine_points = shown[-1].axes[0].lines[2]
    assert np.allclose(engine_points.get_ydata(), 1 - np.tanh(engine_points.get_xdata()) ** 2)
    figures.descent_runs(lambda a, b: b * ((a + b) * (a - b)), [np.array([[0.1, 0.2], [0.1, 3.5]])], ["up"], 0.01)
    assert len(shown) == 10 and all(fig.axes for fig in shown)


def test_descent_field_uses_the_engine_gradient(shown):
    figures.descent_field(lambda a, b: b * ((a + b) * (a - b)))
    quiver = next(c for c in shown[0].axes[0].collections if isinstance(c, matplotlib.quiver.Quiver))
    u, v = quiver.U, quiver.V
    assert u.shape == (144,) and np.allclose(np.hypot(u, v), 1.0)
