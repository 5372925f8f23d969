"""The numbers chapters 11 (differentiable physics) and 12 (Integrated Gradients) print,
recomputed with ``course_lib`` and looked up in the committed notebooks; and chapter 12's
teaching version (the cell tagged ``teaching-version``) checked against the engine."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from course_lib import ig
from course_lib.check import numerical_grad
from course_lib.datasets import load_iris
from course_lib.nn import MLP, SGD, cross_entropy
from course_lib.physics import HOOP, START_SHOT, fit_shot, height_at, shot_height
from course_lib.tensor import Tensor, no_grad
from notebook_text import markdown, shown, tagged

ROOT = Path(__file__).resolve().parents[1]
CH11 = ROOT / "book" / "11_differentiable_physics.ipynb"
CH12 = ROOT / "book" / "12_integrated_gradients.ipynb"
PS07_LINK = "../exercises/ps07_integrated_gradients/ps07_integrated_gradients.ipynb"


def tiny(number: float, below: float = 1e-12) -> str:
    """Chapter 12's format for numbers that may be at the level of rounding errors."""
    return f"< {below:.0e}" if abs(number) < below else f"{number:.3e}"


def gradient(p) -> np.ndarray:
    point = Tensor(np.asarray(p, dtype=float), requires_grad=True)
    shot_height(point).backward()
    return point.grad


@pytest.fixture(scope="module")
def history():
    return fit_shot()


@pytest.fixture(scope="module")
def hit(history):
    return np.array([history.v[-1], history.theta[-1]])


# ---------------------------------------------------------------- chapter 11

def test_ch11_gradients_through_the_simulator():
    v0, theta0 = START_SHOT
    assert height_at(v0, theta0).item() == pytest.approx(1.2630, abs=5e-5)
    grad = gradient(START_SHOT)
    x = HOOP[0]
    formula = [9.81 * x**2 / (v0**3 * math.cos(theta0) ** 2),
               (x - 9.81 * x**2 * math.tan(theta0) / v0**2) / math.cos(theta0) ** 2]
    assert grad == pytest.approx(formula, rel=1e-14)
    assert grad == pytest.approx(numerical_grad(lambda p: shot_height(p).item(), np.array(START_SHOT)), abs=1e-8)
    assert grad == pytest.approx([0.20928, 4.1250546900], abs=1e-10)
    text = shown(CH11)
    assert "height at the hoop: 1.2630 m, a miss of -1.8370 m" in text
    assert "dy/dv       0.2092800000  0.2092800000" in text
    assert "dy/dtheta   4.1250546900  4.1250546900" in text


def test_ch11_descent_hits_the_hoop_in_11_steps(history):
    assert history.converged and history.steps == 11
    assert abs(history.height[-1] - HOOP[1]) == pytest.approx(5.3e-4, abs=5e-5)
    assert history.v[-1] == pytest.approx(10.023, abs=5e-4)
    assert math.degrees(history.theta[-1]) == pytest.approx(52.44, abs=5e-3)
    assert np.all(np.diff(history.loss) < 0), "the loss falls at every step at lr 0.01"
    text = shown(CH11)
    assert "learning rate 0.01: converged = True after 11 steps" in text
    assert "hit: v = 10.023 m/s, theta = 52.44 deg, |y - 3.1| = 5.3e-04 m" in text
    for k in range(history.steps + 1):
        row = (f"{k:4d} {history.v[k]:10.4f} {math.degrees(history.theta[k]):12.4f} {history.height[k]:11.5f} "
               f"{history.height[k] - HOOP[1]:+10.5f} {history.loss[k]:10.2e}")
        assert row in text, f"step {k} of the descent table is not shown: {row!r}"


def test_ch11_curve_of_hits():
    reach = HOOP[1] + math.hypot(*HOOP)
    v_min, theta_min = math.sqrt(9.81 * reach), math.atan(reach / HOOP[0])
    assert height_at(v_min, theta_min).item() == pytest.approx(HOOP[1], abs=1e-12)
    # No slower throw reaches the hoop's height at any angle.
    angles = np.radians(np.linspace(38.0, 89.0, 2000))
    assert np.all(height_at(v_min * 0.999, angles).data < HOOP[1])
    text = shown(CH11)
    assert "hits need theta > 37.78 deg" in text
    assert f"slowest hit: v = {v_min:.3f} m/s at theta = {math.degrees(theta_min):.2f} deg" in text
    assert "slowest hit: v = 8.947 m/s at theta = 63.89 deg" in text


def test_ch11_learning_rates(hit):
    g = gradient(hit)
    curvature = float(g @ g)
    assert curvature == pytest.approx(28.23, abs=5e-3)
    runs = {lr: fit_shot(lr=lr, max_steps=100) for lr in (0.002, 0.01, 0.02, 0.05, 0.2)}
    assert [(run.converged, run.steps) for run in runs.values()] == [
        (True, 68), (True, 11), (True, 4), (False, 100), (False, 100)]
    assert np.any(runs[0.02].height > HOOP[1]), "lr 0.02 overshoots the hoop"
    assert np.all(runs[0.01].height < HOOP[1]), "lr 0.01 approaches from below"
    misses = runs[0.01].height - HOOP[1]
    assert misses[-1] / misses[-2] == pytest.approx(1 - 2 * 0.01 * curvature, abs=2e-3)
    text = shown(CH11)
    assert "||grad y||^2 at the hit = 28.23" in text
    assert "one-step learning rate 1/(2||grad y||^2) = 0.0177, stability limit 1/||grad y||^2 = 0.0354" in text
    assert " 0.010   0.435       True     11    10.023        52.44" in text
    assert " 0.020  -0.129       True      4    10.021        52.46" in text
    assert " 0.200 -10.292      False    100" in text


def test_ch11_sensitivities_and_path_average(hit):
    miss = np.array(START_SHOT)
    delta_p = hit - miss
    rise = shot_height(hit).item() - shot_height(miss).item()
    assert rise == pytest.approx(1.8365, abs=5e-5)
    assert float(gradient(miss) @ delta_p) == pytest.approx(1.6205, abs=5e-5)
    assert float(gradient(hit) @ delta_p) == pytest.approx(2.0842, abs=5e-5)
    exact = ig.integrated_gradients(shot_height, hit, miss, steps=20, method="gausslegendre")
    assert exact == pytest.approx([0.0066, 1.8299], abs=5e-5)
    text = shown(CH11)
    assert "dy/dv = 0.2093 m per m/s   dy/dtheta = 4.1251 m per rad = 0.0720 m per deg" in text
    assert "effect of +1% on each: v -> +0.0209 m, theta -> +0.0216 m" in text
    assert "dy/dtheta = 0 at theta = 68.57 deg (v = 10 m/s)" in text
    assert "gradient at the first throw        0.0048   1.6157   1.6205" in text
    assert "gradient at the hit                0.0096   2.0746   2.0842" in text
    assert "gradient averaged along path       0.0066   1.8299   1.8365" in text


# ---------------------------------------------------------------- chapter 12

PROJECTILE_ERRORS = {  # |delta| in metres at 5 / 20 / 50 steps, as chapter 12 prints them
    "riemann_left": ("4.605e-02", "1.157e-02", "4.634e-03"),
    "riemann_right": ("4.669e-02", "1.161e-02", "4.640e-03"),
    "riemann_middle": ("1.670e-04", "9.435e-06", "1.500e-06"),
    "riemann_trapezoid": ("5.158e-04", "2.085e-05", "3.123e-06"),
    "gausslegendre": ("3.124e-08", "< 1e-12", "< 1e-12"),
}


def test_ch12_completeness_errors_on_the_projectile(hit):
    table = ig.completeness_errors(shot_height, hit, START_SHOT, steps=(5, 20, 50))
    text = shown(CH12)
    for method, expected in PROJECTILE_ERRORS.items():
        assert tuple(tiny(table[method][m]) for m in (5, 20, 50)) == expected, method
        assert f"{method:18}" + "".join(f"{e:>12}" for e in expected) in text, f"{method} row not shown"
    # The orders of convergence the chapter reads off the figure.
    assert table["riemann_right"][5] / table["riemann_right"][50] == pytest.approx(10, rel=0.02)
    assert table["riemann_middle"][20] / table["riemann_middle"][50] == pytest.approx(6.25, rel=0.02)
    rise = shot_height(hit).item() - shot_height(np.array(START_SHOT)).item()
    biased = ig.integrated_gradients(shot_height, hit, START_SHOT, steps=50, method="riemann_trapezoid").sum() * 49 / 50
    assert abs(biased - rise) == pytest.approx(rise / 50, rel=0.01)
    assert abs(biased - rise) / table["riemann_trapezoid"][50] > 1e4
    assert "F(x) - F(x') = 1.8365 m" in text
    assert "weights 1/m     [0.125 0.25  0.25  0.125], sum 0.7500 = (m - 1)/m" in text


def test_ch12_saturation_axioms_and_closed_form():
    w = Tensor(np.array([4.0, 1.0]))

    def neuron(points):
        return (points @ w).sigmoid()

    x = np.array([2.0, 1.0])
    a, delta = ig.integrated_gradients(neuron, x, steps=50, method="gausslegendre", return_delta=True)
    z = 9.0
    assert a == pytest.approx(np.array([8.0, 1.0]) / z * (1 / (1 + math.exp(-z)) - 0.5), abs=1e-14)
    assert abs(delta) < 1e-12
    text = shown(CH12)
    assert "f(x) = 0.99988, f(x') = 0.50000: the inputs raised the output by 0.49988" in text
    assert "gradient at x:          [0.00049352 0.00012338]" in text
    assert "IG (course_lib):  [0.44433476 0.05554185]" in text
    assert "f(2) - f(0) = 1, gradient at 2: 0" in text
    assert "ramp: IG = 1.000000 at x = 2 (the gradient there is 0); delta < 1e-12" in text
    assert "a model that ignores x2: IG = [0.49966465 0.        ]" in text
    assert "symmetry: IG of x1 * x2 at (3, 3) = [4.5 4.5]" in text


def test_ch12_projectile_attributions_and_baselines(hit):
    miss = np.array(START_SHOT)
    a = ig.integrated_gradients(shot_height, hit, miss, steps=50, method="gausslegendre")
    assert a == pytest.approx([0.00661, 1.82986], abs=5e-6)
    rise = shot_height(hit).item() - shot_height(miss).item()
    assert a[1] / rise == pytest.approx(0.9964, abs=5e-5)
    rng = np.random.default_rng(0)
    throws = np.column_stack([rng.uniform(8, 12, 1000), rng.uniform(math.radians(20), math.radians(60), 1000)])
    mean_throw = throws.mean(axis=0)
    a_mean = ig.integrated_gradients(shot_height, hit, mean_throw, steps=50, method="gausslegendre")
    assert a_mean == pytest.approx([-0.0145, 1.1381], abs=5e-5)
    flat = ig.integrated_gradients(shot_height, hit, [hit[0], 0.0], steps=50, method="gausslegendre")
    assert flat[0] == 0.0 and flat[1] == pytest.approx(3.8807, abs=5e-5)
    text = shown(CH12)
    assert "Integrated Gradients                         v  0.00661   theta  1.82986   sum  1.83647" in text
    assert "IG shares: speed 0.36%, angle 99.64%" in text
    assert "the first throw (a miss)      10.000   30.00      1.2630      0.0066      1.8299   < 1e-12" in text
    assert "mean of 1000 random throws    10.068   39.24      1.9759     -0.0145      1.1381   < 1e-12" in text
    assert "all zeros: v = 0, angle 0      0.000    0.00        -inf" in text


@pytest.fixture(scope="module")
def iris():
    """Chapter 10's classifier, retrained with its seeds, as chapter 12 does."""
    X, y, _, _ = load_iris()
    rng = np.random.default_rng(4)
    test_idx = np.sort(np.concatenate([rng.permutation(np.flatnonzero(y == c))[:10] for c in range(3)]))
    train_idx = np.setdiff1d(np.arange(len(y)), test_idx)
    mean, std = X[train_idx].mean(axis=0), X[train_idx].std(axis=0)
    Z = (X - mean) / std
    model = MLP([4, 16, 3], rng=0)
    optimiser = SGD(model.parameters(), lr=0.1)
    order_rng = np.random.default_rng(1)
    for _ in range(100):
        order = train_idx[order_rng.permutation(len(train_idx))]
        for start in range(0, len(order), 16):
            rows = order[start:start + 16]
            optimiser.zero_grad()
            cross_entropy(model(Z[rows]), y[rows]).backward()
            optimiser.step()
    with no_grad():
        logits = model(Z).data
    return model, Z, y, test_idx, train_idx, logits


def test_ch12_iris_attributions(iris):
    model, Z, y, test_idx, train_idx, logits = iris
    assert int((logits[test_idx].argmax(axis=1) == y[test_idx]).sum()) == 29
    assert logits[133].argmax() == 1 and y[133] == 2
    expected = {1: [0.403, 0.037, -0.955, -0.926], 2: [0.095, 0.985, 2.917, 2.126]}
    text = shown(CH12)
    for target, values in expected.items():
        a, delta = ig.integrated_gradients(model, Z[133], np.zeros(4), steps=200, method="gausslegendre",
                                           target=target, return_delta=True)
        assert a == pytest.approx(values, abs=5e-4)
        assert abs(delta) < 5e-3
        shown_row = "   ".join(f"{name} {v:+.3f}" for name, v in zip(load_iris()[2], a))
        assert shown_row in text, f"the attributions for target {target} are not shown"
    assert "held-out accuracy: 29/30" in text
    assert "logits {'setosa': -3.971, 'versicolor': 2.816, 'virginica': 1.999}" in text
    setosa = Z[np.intersect1d(train_idx, np.flatnonzero(y == 0))].mean(axis=0)
    a_setosa = ig.integrated_gradients(model, Z[133], setosa, steps=200, method="gausslegendre", target=1)
    assert a_setosa == pytest.approx([1.679, 0.852, -0.105, -1.449], abs=5e-4)
    table = ig.completeness_errors(model, Z[133], np.zeros(4), steps=(5, 50), target=1)
    assert table["riemann_right"][50] == pytest.approx(4.6e-2, abs=5e-4)
    assert table["gausslegendre"][50] < table["riemann_right"][50] / 5


def test_ch12_one_batched_call_and_costs(iris, hit):
    model, Z, *_ = iris
    calls = []

    def counted(batch):
        calls.append(batch.shape)
        return model(batch)

    ig.integrated_gradients(counted, Z[133], steps=50, target=1, return_delta=True)
    assert calls == [(52, 4)]
    calls.clear()
    ig.integrated_gradients(counted, Z[133], steps=200, method="gausslegendre", target=1, grad_method="fd")
    assert len(calls) == 9 and sum(shape[0] for shape in calls) == 1800
    text = shown(CH12)
    assert "calls of the model: 1, batch shape (52, 4)" in text
    assert "Iris MLP, 4 inputs          fd           9    1800" in text
    assert "throw, 2 inputs             fd           5    1000" in text
    assert text.count("AD and FD agree to 1e-9: True") == 2


def test_ch12_teaching_version_matches_the_engine(iris, hit):
    cells = tagged(CH12, "teaching-version")
    assert len(cells) == 1
    model, Z, *_ = iris
    namespace = {"np": np, "integrated_gradients": ig.integrated_gradients, "model": model,
                 "x_flower": Z[133], "predicted": 1, "tiny": tiny, "print": lambda *args, **kwargs: None}
    exec(cells[0].source, namespace)
    chunked_ig = namespace["chunked_ig"]
    for f, x, base, target in [(model, Z[133], np.zeros(4), 1), (shot_height, hit, np.array(START_SHOT), None)]:
        for pieces, steps in [(1, 30), (5, 100), (10, 2000)]:
            whole = ig.integrated_gradients(f, x, base, steps=steps, target=target)
            assert chunked_ig(f, x, base, steps=steps, pieces=pieces, target=target) == pytest.approx(whole, abs=1e-12)


def test_chapters_link_the_assignment_and_cite_their_sources():
    assert (ROOT / "exercises" / "ps07_integrated_gradients" / "ps07_integrated_gradients.ipynb").exists()
    for path in (CH11, CH12):
        text = markdown(path)
        assert f"[Assignment ps07]({PS07_LINK})" in text
        assert "## Check yourself" in text and text.count(":::{dropdown} Answer") >= 3
    text12 = markdown(CH12)
    assert "Sundararajan, Taly and Yan (2017)" in text12 and "Fisher's (1936)" in text12
