"""course_lib.figures.tensors: every figure of chapters 8 to 12 is drawn from the data it is
given, and graph drawings are readable at the page width (labels in 14 pt, at most 7 in wide)."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from course_lib.figures import tensors as figures  # noqa: E402


class Node:
    """A node like chapter 8's miniature: a name, parents and one VJP function per parent."""

    def __init__(self, name, parents=(), vjps=()):
        self.name, self.parents, self.vjps = name, parents, vjps


def seed_trace():
    """The trace of y = sin(x1 + x2) * x3 at (0.5, 1.0, 2.0), built by hand."""
    x1, x2, x3 = Node("x1"), Node("x2"), Node("x3")
    add = Node("add", (x1, x2), (lambda g: g, lambda g: g))
    sin = Node("sin", (add,), (lambda g: g * np.cos(1.5),))
    return Node("mul", (sin, x3), (lambda g: g * 2.0, lambda g: g * np.sin(1.5)))


def svg_of(dot) -> str:
    return dot.pipe(format="svg").decode()


@pytest.mark.parametrize(
    "dot", [figures.engine_flowchart(), figures.trace_diagram(seed_trace(), gradients=True)], ids=["flowchart", "trace"]
)
def test_graph_drawings_are_readable_at_page_width(dot):
    svg = svg_of(dot)
    sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', svg)]
    assert sizes and min(sizes) >= 14.0, "labels as large as the body text"
    width_pt = float(re.search(r'<svg width="([\d.]+)pt"', svg).group(1))
    assert width_pt <= 7 * 72, f"{width_pt} pt: the page would scale the labels down"


def test_flowchart_has_both_phases_and_the_registry():
    source = figures.engine_flowchart().source
    for piece in ["1. trace", "2. backward pass", "registry of\nVJP rules", "child-count order", "Box(x, start node)"]:
        assert piece in source, piece


def test_trace_diagram_numbers_nodes_in_child_count_order_with_their_gradients():
    plain = figures.trace_diagram(seed_trace()).source
    assert "grad" not in plain and plain.count("->") == 5
    source = figures.trace_diagram(seed_trace(), gradients=True).source
    assert "1. mul\ngrad 1.000" in source and "2. x3\ngrad 0.997" in source and "3. sin\ngrad 2.000" in source
    assert "4. add\ngrad 0.141" in source and "x1\ngrad 0.141" in source and "x2\ngrad 0.141" in source
    assert 'label=" ×0.071"' in source  # the local derivative cos(1.5) on the edge sin -> add


def test_nested_derivatives_draws_reference_and_curves():
    xs = np.linspace(0, 1, 5)
    fig = figures.nested_derivatives(xs, {"a": xs, "b": 2 * xs}, xs**2, "ref", "title")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["ref", "a", "b"] and ax.get_title() == "title"
    assert np.array_equal(ax.lines[2].get_ydata(), 2 * xs)


# ---- chapter 9 ------------------------------------------------------------------------------


def test_jacobian_memory_crosses_16_gb_where_the_chapter_says():
    widths = np.logspace(1, 6, 51)
    ax = figures.jacobian_memory(widths, batch=64).axes[0]
    matmul, elementwise = ax.lines[0].get_ydata(), ax.lines[1].get_ydata()
    assert np.allclose(matmul, 64 * widths**3 * 8) and np.allclose(elementwise, 64 * widths**2 * 8)
    # "passes 16 GB at a width of about 300, the elementwise Jacobians at about 5,600"
    assert 250 < (16e9 / (64 * 8)) ** (1 / 3) < 350 and 5000 < (16e9 / (64 * 8)) ** 0.5 < 6000


def test_unbroadcast_picture_shows_the_gradients_it_is_given():
    G = np.arange(1.0, 13.0).reshape(4, 3)
    fig = figures.unbroadcast_picture(G, {(3,): G.sum(axis=0), (4, 1): G.sum(axis=1, keepdims=True)})
    top, bottom = fig.axes
    assert {"22", "26", "30"} <= {t.get_text() for t in top.texts}
    assert {"6", "15", "24", "33"} <= {t.get_text() for t in bottom.texts}
    assert "operand.grad (4, 1)" in {t.get_text() for t in bottom.texts}


# ---- chapter 10 -----------------------------------------------------------------------------


def test_iris_scatter_draws_each_species_in_both_panels():
    from course_lib.datasets import load_iris

    X, y, features, targets = load_iris()
    fig = figures.iris_scatter(X, y, features, targets)
    assert [len(ax.collections) for ax in fig.axes] == [3, 3]
    assert fig.axes[1].get_xlabel() == features[2].replace("_", " ")


def test_training_curves_average_each_epoch():
    losses = np.arange(1.0, 13.0)  # 3 epochs of 4 steps
    fig = figures.training_curves(losses, [0.5, 0.7, 0.9], [0.4, 0.6, 0.8], lr=0.1)
    ax_loss, ax_acc = fig.axes
    assert np.allclose(ax_loss.lines[1].get_ydata(), [2.5, 6.5, 10.5])
    assert ax_loss.get_title() == "Training loss (course_lib, SGD, lr = 0.1)"
    assert np.allclose(ax_acc.lines[1].get_ydata(), [0.4, 0.6, 0.8])


def test_loss_gap_is_drawn_in_units_of_epsilon():
    eps = np.finfo(float).eps
    ax = figures.loss_gap(np.array([0.0, eps, 2 * eps])).axes[0]
    assert np.allclose(ax.lines[0].get_ydata(), [0, 1, 2])


# ---- chapter 12 -----------------------------------------------------------------------------


def test_ig_path_draws_output_and_each_partial_derivative():
    alphas = np.linspace(0, 1, 11)
    grads = np.column_stack([1 - alphas, 2 * (1 - alphas)])
    fig = figures.ig_path(alphas, alphas**2, grads)
    ax_f, ax_g = fig.axes
    assert np.allclose(ax_f.lines[0].get_ydata(), alphas**2)
    assert [line.get_label() for line in ax_g.lines][:2] == [r"$\partial f/\partial x_1$", r"$\partial f/\partial x_2$"]


def test_quadrature_errors_draws_every_rule_and_hides_zero_errors():
    steps = np.array([2, 16, 256])
    errors = {
        m: {int(s): 1.0 / s for s in steps}
        for m in ["riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid", "gausslegendre"]
    }
    errors["gausslegendre"][256] = 0.0
    ax = figures.quadrature_errors(steps, errors, [0.1, 0.05, 0.02], rise=1.8).axes[0]
    gauss = next(line for line in ax.lines if line.get_label() == "gausslegendre")
    assert np.isnan(gauss.get_ydata()[-1]) and ax.get_xscale() == "log"


def test_attribution_bars_show_each_split_and_its_sum():
    splits = {"a": np.array([0.1, 1.5]), "b": np.array([0.2, 2.0]), "IG": np.array([0.05, 1.78])}
    ax = figures.attribution_bars(splits, rise=1.83).axes[0]
    heights = [round(p.get_height(), 2) for p in ax.patches]
    assert heights == [0.1, 1.5, 1.6, 0.2, 2.0, 2.2, 0.05, 1.78, 1.83]
    assert ax.get_title() == "Why did the hit pass 1.83 m higher than the first throw?"


def test_iris_attributions_one_panel_per_target():
    names = ["sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm"]
    fig = figures.iris_attributions(
        {1: np.array([0.5, -0.2, 1.0, 0.3]), 2: np.array([-0.1, 0.2, -1.0, 0.4])},
        names,
        ["setosa", "versicolor", "virginica"],
        predicted=1,
        title="flower",
    )
    left, right = fig.axes
    assert left.get_title().startswith("target 1: versicolor (predicted class)")
    assert right.get_title().startswith("target 2: virginica (true class)")
    assert [t.get_text() for t in left.get_xticklabels()][2] == "petal\nlength"
