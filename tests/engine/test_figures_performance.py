"""course_lib.figures.performance: the figures of chapters 13 and 14 are drawn from the data
they are given (chapter 14's from the packaged benchmark record)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course_lib.figures import performance as figures  # noqa: E402

# ---- chapter 13 -----------------------------------------------------------------------------


def test_library_curves_draw_three_panels_and_the_error_bars():
    xs = np.linspace(-1, 1, 9)
    exact = [xs, np.ones_like(xs), np.zeros_like(xs)]
    curves = {"a": [xs, np.ones_like(xs), np.zeros_like(xs)], "b": [xs + 1e-15, np.ones_like(xs), np.zeros_like(xs)]}
    fig = figures.library_curves(xs, curves, exact)
    assert [ax.get_title() for ax in fig.axes][:3] == ["$f(x) = \\sin(3x)\\,e^{-x^2/4}$", "$f'(x)$", "$f''(x)$"]
    bars = [p.get_height() for p in fig.axes[3].patches]
    assert bars[:3] == [1e-18, 1e-18, 1e-18] and bars[3] == pytest.approx(1e-15, rel=0.1)


# ---- chapter 14, from the packaged benchmark record ---------------------------------------


@pytest.fixture(scope="module")
def results():
    import json
    from importlib import resources

    return json.loads(resources.files("course_lib").joinpath("data/benchmarks.json").read_text())


def test_gradient_cost_plots_every_method_against_n(results):
    cost = results["gradient_cost"]
    ax = figures.gradient_cost(cost).axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log" and len(ax.lines) == 5
    reverse = next(line for line in ax.lines if line.get_label().startswith("reverse mode: Value"))
    assert np.allclose(reverse.get_ydata(), cost["ratio_to_function"]["reverse mode"])


def test_mlp_step_leaves_out_the_forward_only_rows(results):
    ax = figures.mlp_step(results["mlp"]).axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names and not any("forward only" in n for n in names) and "course_lib" in names
    widths = {n: p.get_width() for n, p in zip(names, ax.patches)}
    assert widths["course_lib"] == pytest.approx(results["mlp"]["ratio_to_numpy_forward"]["course_lib"])


def test_per_op_overhead_sorts_engines_from_cheap_to_dear(results):
    per_op = results["per_op"]["microseconds_per_op"]
    ax = figures.per_op_overhead(per_op).axes[0]
    widths = [p.get_width() for p in ax.patches]
    assert widths == sorted(per_op.values()) and ax.get_xscale() == "log"


def test_deep_graphs_marks_where_micrograd_stops(results):
    deep = results["deep_graphs"]
    ax = figures.deep_graphs(deep).axes[0]
    assert any(f"at depth {deep['micrograd_fails_at']['depth']:,}" in t.get_text() for t in ax.texts)
    assert any(line.get_label() == "course_lib (Value): backward" for line in ax.lines)


def test_scalar_vs_tensor_draws_one_line_per_engine(results):
    svt = results["scalar_vs_tensor"]
    ax = figures.scalar_vs_tensor(svt).axes[0]
    assert sorted(line.get_label() for line in ax.lines) == sorted(svt["seconds"])
