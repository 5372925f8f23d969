"""course_lib.figures: the frames of a backward pass carry the engine's own numbers, the Jacobian
picture marks one column and one row, and every chapter figure draws what it is given."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import course_lib.figures.basics as figures  # noqa: E402
from course_lib import graph  # noqa: E402
from course_lib.figures.sweeps import Frames, backward_steps, jacobian_columns_and_rows  # noqa: E402
from course_lib.graph import Node, add, log, mul, sin, sub  # noqa: E402
from course_lib.scalar import Value  # noqa: E402


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


def test_pull_frames_follow_the_reverse_sweep_with_its_numbers():
    x1, x2, y = running_example()
    frames = backward_steps(y)
    order = graph.reverse(y)
    assert len(frames) == len(order) == 7
    captions = [frame.graph_attr["label"] for frame in frames]
    assert captions[0] == "step 1: the output's adjoint is 1"
    assert captions[4].endswith("= 1.000 × 0.500 + 1.000 × 5.000 = 5.500")  # x1 pulls from v1 and v2
    assert captions[6].endswith(f"= 1.000 × 2.000 − 1.000 × {math.cos(5.0):.3f} = 1.716")
    for k, frame in enumerate(frames):
        assert frame.source.count("style=filled") == 1
        assert frame.source.count("∂ ?") == 7 - (k + 1)  # nodes not reached yet
    assert "{x2 | value 5.000 | ∂ 1.716}" in frames[-1].source


def test_push_frames_replay_backward_and_end_with_its_gradients():
    a, b = Value(1.0, "a"), Value(2.0, "b")
    c = a + b
    c.label = "c"
    d = a - b
    d.label = "d"
    e = c * d
    e.label = "e"
    L = e * b
    L.label = "L"
    frames = backward_steps(L)
    assert (a.grad, b.grad) == (4.0, -11.0)  # the replay ran the engine's own closures
    captions = [frame.graph_attr["label"] for frame in frames]
    assert captions == [
        "step 1: L._backward() with grad 1.000\ne += 2.000, b += -3.000",
        "step 2: e._backward() with grad 2.000\nc += -2.000, d += 6.000",
        "step 3: c._backward() with grad -2.000\na += -2.000, b += -2.000",
        "step 4: d._backward() with grad 6.000\na += 6.000, (neg) += 6.000",
        "step 5: (neg)._backward() with grad 6.000\nb += -6.000",
    ]
    assert "{b | data 2.000 | grad -5.000}" in frames[2].source  # a partial sum: b is not done yet
    L.backward()
    assert (a.grad, b.grad) == (8.0, -22.0)  # leaves accumulate as after a real backward()


def test_frames_refuse_other_objects_and_display_one_by_one(monkeypatch):
    with pytest.raises(TypeError, match="takes a graph.Node or a scalar.Value, got float"):
        backward_steps(1.0)
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    Frames(["first", "second"])._ipython_display_()
    assert shown == ["first", "second"]


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
