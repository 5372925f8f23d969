"""Integrated Gradients: quadrature rules, the axioms, AD vs finite differences, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import ig
from course_lib.datasets import load_iris
from course_lib.ig import METHODS, batched, completeness_errors, integrated_gradients, path_points, quadrature
from course_lib.nn import MLP, SGD, cross_entropy
from course_lib.physics import START_SHOT, fit_shot, shot_height
from course_lib.tensor import Tensor

# The axiom and convergence tests use deliberately coarse rules: their completeness warning
# is expected there (it has tests of its own below).
pytestmark = pytest.mark.filterwarnings("ignore:Integrated Gradients. the attributions sum to:RuntimeWarning")

RNG = np.random.default_rng(0)
floats = st.floats(-2.0, 2.0, allow_nan=False)
vectors = st.lists(floats, min_size=3, max_size=3).map(np.array)


# --- models on batches of shape (m, 3) -------------------------------------------------


def smooth(X: Tensor) -> Tensor:
    """A smooth, non-polynomial function of three features."""
    return (X[:, 0] * X[:, 1]).sin() + (0.5 * X[:, 2]).exp() + X[:, 0] ** 2 * X[:, 2]


def smooth_np(X: np.ndarray) -> np.ndarray:
    return np.sin(X[:, 0] * X[:, 1]) + np.exp(0.5 * X[:, 2]) + X[:, 0] ** 2 * X[:, 2]


A = np.array([[2.0, 1.0, 0.0], [1.0, -1.0, 0.5], [0.0, 0.5, 3.0]])
C = np.array([0.3, -1.0, 2.0])


def quadratic(X: Tensor) -> Tensor:
    """0.5 x^T A x + c^T x: its gradient is linear along a straight path."""
    return 0.5 * ((X @ A) * X).sum(axis=1) + X @ C


def quadratic_ig(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact IG of ``quadratic``: the gradient averaged over the path is its value at the middle."""
    return (x - b) * (A @ ((x + b) / 2) + C)


X0 = np.array([0.8, -1.3, 0.6])
B0 = np.array([-0.2, 0.4, -0.5])


# --- quadrature ---------------------------------------------------------------------


def test_quadrature_nodes_follow_the_stated_conventions():
    np.testing.assert_allclose(quadrature("riemann_right", 4)[0], [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(quadrature("riemann_left", 4)[0], [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_allclose(quadrature("riemann_middle", 4)[0], [0.125, 0.375, 0.625, 0.875])
    alphas, weights = quadrature("riemann_trapezoid", 5)
    np.testing.assert_allclose(alphas, [0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(weights, [0.125, 0.25, 0.25, 0.25, 0.125])
    alphas, weights = quadrature("gausslegendre", 2)
    np.testing.assert_allclose(alphas, [0.5 - 0.5 / np.sqrt(3), 0.5 + 0.5 / np.sqrt(3)])
    np.testing.assert_allclose(weights, [0.5, 0.5])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("steps", [2, 3, 7, 50])
def test_quadrature_has_steps_points_in_unit_interval_and_weights_summing_to_one(method, steps):
    alphas, weights = quadrature(method, steps)
    assert alphas.shape == weights.shape == (steps,)
    assert np.all((alphas >= 0) & (alphas <= 1))
    assert np.all(weights > 0)
    # Captum's trapezoid weights sum to (n-1)/n; ours integrate the constant 1 exactly.
    assert weights.sum() == pytest.approx(1.0, abs=1e-14)


def test_path_points_run_from_baseline_to_input():
    x = RNG.normal(size=(2, 3))
    b = RNG.normal(size=(2, 3))
    points = path_points(x, b, np.array([0.0, 0.25, 1.0]))
    assert points.shape == (3, 2, 3)
    np.testing.assert_allclose(points[0], b)
    np.testing.assert_allclose(points[1], b + 0.25 * (x - b))
    np.testing.assert_allclose(points[2], x)


# --- exactness and convergence ------------------------------------------------------------


@pytest.mark.parametrize("method,steps", [("riemann_trapezoid", 2), ("riemann_middle", 1), ("gausslegendre", 1)])
def test_rules_exact_for_gradients_linear_in_alpha(method, steps):
    attributions, delta = integrated_gradients(quadratic, X0, B0, steps=steps, method=method, return_delta=True)
    np.testing.assert_allclose(attributions, quadratic_ig(X0, B0), rtol=1e-12, atol=1e-12)
    assert abs(delta) < 1e-12


def test_riemann_right_is_not_exact_for_linear_gradients():
    attributions = integrated_gradients(quadratic, X0, B0, steps=2, method="riemann_right")
    assert np.max(np.abs(attributions - quadratic_ig(X0, B0))) > 1e-2


@pytest.mark.parametrize("nodes", [1, 2, 3, 5])
def test_gauss_legendre_exact_up_to_degree_2m_minus_1_integrands(nodes):
    powers = np.array([2 * nodes, 2 * nodes - 1, 2])  # f of degree 2m: gradient of degree 2m - 1 in alpha
    weights = np.array([0.7, -1.1, 0.4])

    def poly(X: Tensor) -> Tensor:
        return sum(w * X[:, i] ** int(p) for i, (w, p) in enumerate(zip(weights, powers)))

    exact = weights * (X0**powers - B0**powers)  # separable: IG_i = f_i(x_i) - f_i(b_i)
    attributions = integrated_gradients(poly, X0, B0, steps=nodes, method="gausslegendre")
    np.testing.assert_allclose(attributions, exact, rtol=1e-11, atol=1e-12)

    # One degree more and the rule is no longer exact (so the check above can fail).
    def poly_higher(X: Tensor) -> Tensor:
        return X[:, 0] ** (2 * nodes + 1)

    gap = integrated_gradients(poly_higher, X0, B0, steps=nodes, method="gausslegendre")[0] - (
        X0[0] ** (2 * nodes + 1) - B0[0] ** (2 * nodes + 1)
    )
    assert abs(gap) > 1e-6


def _log_slope(f, x, b, method, steps):
    errors = [abs(integrated_gradients(f, x, b, steps=m, method=method, return_delta=True)[1]) for m in steps]
    return np.polyfit(np.log(steps), np.log(errors), 1)[0]


@pytest.mark.parametrize(
    "method,order", [("riemann_left", 1), ("riemann_right", 1), ("riemann_middle", 2), ("riemann_trapezoid", 2)]
)
def test_convergence_order_of_riemann_rules(method, order):
    slope = _log_slope(smooth, X0, B0, method, [40, 80, 160, 320, 640])
    assert slope == pytest.approx(-order, abs=0.1)


def test_gauss_legendre_converges_much_faster():
    errors = completeness_errors(smooth, X0, B0, steps=(2, 4, 8), methods=("gausslegendre",))["gausslegendre"]
    assert errors[2] > 1e-4  # not exact: smooth() is no polynomial
    assert errors[8] < 1e-11
    assert errors[8] < errors[4] < errors[2]
    middle = completeness_errors(smooth, X0, B0, steps=(8,), methods=("riemann_middle",))["riemann_middle"][8]
    assert errors[8] < 1e-6 * middle


# --- the axioms ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_completeness_gap_shrinks_with_steps(method):
    errors = completeness_errors(smooth, X0, B0, steps=(5, 20, 80), methods=(method,))[method]
    assert errors[80] < errors[20] < errors[5] or errors[80] < 1e-13
    assert errors[80] < 2e-2


def test_sensitivity_ignored_feature_gets_exactly_zero():
    def ignores_last(X: Tensor) -> Tensor:
        return (X[:, 0] * X[:, 1]).tanh() + X[:, 1] ** 3

    attributions = integrated_gradients(ignores_last, X0, B0, steps=20)
    assert attributions[2] == 0.0
    assert np.all(attributions[:2] != 0.0)


def test_sensitivity_where_the_plain_gradient_is_zero():
    """f(x) = 1 - relu(1 - x) is flat at x = 2, yet f(2) != f(0): IG credits the input."""

    def saturating(X: Tensor) -> Tensor:
        return 1 - (1 - X[:, 0]).relu()

    x, baseline = np.array([2.0]), np.array([0.0])
    point = Tensor(x, requires_grad=True)
    saturating(point.reshape(1, 1)).sum().backward()
    assert point.grad[0] == 0.0
    attributions, delta = integrated_gradients(
        saturating, x, baseline, steps=200, method="riemann_middle", return_delta=True
    )
    assert attributions[0] == pytest.approx(1.0, abs=1e-12)
    assert abs(delta) < 1e-12


def _mlp(W1, b1, w2, activation):
    def f(X: Tensor) -> Tensor:
        return getattr(X @ W1 + b1, activation)() @ w2

    return f


def test_implementation_invariance():
    W1, b1, w2 = RNG.normal(size=(3, 5)), RNG.normal(size=5), RNG.normal(size=5)
    perm = RNG.permutation(5)
    # Same function, other parameters: hidden units permuted; relu rescaled (relu(2z)/2 = relu(z)).
    permuted = _mlp(W1[:, perm], b1[perm], w2[perm], "relu")
    rescaled = _mlp(2 * W1, 2 * b1, w2 / 2, "relu")
    original = _mlp(W1, b1, w2, "relu")

    def tanh_via_sigmoid(X: Tensor) -> Tensor:  # tanh(z) = 2 sigmoid(2z) - 1
        return (2 * (2 * (X @ W1 + b1)).sigmoid() - 1) @ w2

    x, b = RNG.normal(size=3), RNG.normal(size=3)
    reference = integrated_gradients(original, x, b, steps=30, method="riemann_trapezoid")
    for other in (permuted, rescaled):
        np.testing.assert_allclose(
            integrated_gradients(other, x, b, steps=30, method="riemann_trapezoid"), reference, rtol=1e-10, atol=1e-12
        )
    np.testing.assert_allclose(
        integrated_gradients(tanh_via_sigmoid, x, b, steps=30),
        integrated_gradients(_mlp(W1, b1, w2, "tanh"), x, b, steps=30),
        rtol=1e-9,
        atol=1e-12,
    )


def test_implementation_invariance_on_course_mlps():
    """An MLP and a copy with its hidden units shuffled compute the same function."""
    model, shuffled = MLP([3, 6, 2], rng=1), MLP([3, 6, 2], rng=2)
    perm = np.random.default_rng(3).permutation(6)
    first, last = model.layers
    shuffled.layers[0].weight.data = first.weight.data[:, perm]
    shuffled.layers[0].bias.data = first.bias.data[perm]
    shuffled.layers[1].weight.data = last.weight.data[perm]
    shuffled.layers[1].bias.data = last.bias.data.copy()
    x, b = RNG.normal(size=3), RNG.normal(size=3)
    for target in (0, 1):
        np.testing.assert_allclose(
            integrated_gradients(shuffled, x, b, target=target),
            integrated_gradients(model, x, b, target=target),
            rtol=1e-12,
            atol=1e-14,
        )


@settings(max_examples=25, deadline=None)
@given(x=vectors, b=vectors, a1=floats, a2=floats, method=st.sampled_from(METHODS))
def test_linearity(x, b, a1, a2, method):
    def combined(X: Tensor) -> Tensor:
        return a1 * smooth(X) + a2 * quadratic(X)

    lhs = integrated_gradients(combined, x, b, steps=7, method=method)
    rhs = a1 * integrated_gradients(smooth, x, b, steps=7, method=method) + a2 * integrated_gradients(
        quadratic, x, b, steps=7, method=method
    )
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(x=vectors, b=vectors, method=st.sampled_from(METHODS))
def test_symmetry_preservation(x, b, method):
    """f symmetric in features 0 and 1, x and baseline equal on them: equal attributions."""

    def symmetric(X: Tensor) -> Tensor:
        return (X[:, 0] * X[:, 1] + X[:, 2]).sin() + (X[:, 0] + X[:, 1]).exp()

    x, b = x.copy(), b.copy()
    x[1], b[1] = x[0], b[0]
    attributions = integrated_gradients(symmetric, x, b, steps=9, method=method)
    assert attributions[0] == pytest.approx(attributions[1], rel=1e-12, abs=1e-12)


# --- gradients: AD, finite differences, PyTorch --------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_ad_and_fd_agree(method):
    ad, ad_delta = integrated_gradients(smooth, X0, B0, steps=12, method=method, return_delta=True)
    fd, fd_delta = integrated_gradients(smooth_np, X0, B0, steps=12, method=method, return_delta=True, grad_method="fd")
    np.testing.assert_allclose(fd, ad, rtol=1e-7, atol=1e-8)
    assert fd_delta == pytest.approx(ad_delta, abs=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_matches_pytorch_gradients_on_a_softmax_classifier(method):
    W1, b1, W2 = RNG.normal(size=(4, 6)), RNG.normal(size=6), RNG.normal(size=(6, 3))
    x, b = RNG.normal(size=4), np.zeros(4)

    def classifier(X: Tensor) -> Tensor:
        return ((X @ W1 + b1).tanh() @ W2).softmax(axis=-1)

    alphas, weights = quadrature(method, 16)
    points = torch.tensor(path_points(x, b, alphas), dtype=torch.float64, requires_grad=True)
    torch_probs = torch.softmax(torch.tanh(points @ torch.tensor(W1) + torch.tensor(b1)) @ torch.tensor(W2), dim=-1)
    torch_probs[:, 2].sum().backward()
    expected = (x - b) * (torch.tensor(weights) @ points.grad).numpy()
    np.testing.assert_allclose(
        integrated_gradients(classifier, x, b, steps=16, method=method, target=2), expected, rtol=1e-10, atol=1e-13
    )


# --- one forward, one backward ----------------------------------------------------------


@pytest.mark.parametrize("return_delta", [False, True])
def test_all_path_points_go_through_one_call(return_delta):
    calls = []

    def counted(X: Tensor) -> Tensor:
        calls.append(X.data.shape)
        return smooth(X)

    integrated_gradients(counted, X0, B0, steps=37, method="gausslegendre", return_delta=return_delta)
    assert len(calls) == 1
    assert calls[0] == (39, 3)  # the 37 path points, then the baseline and x for the completeness check


def test_model_parameter_gradients_are_left_alone():
    model = MLP([3, 5, 2], rng=0)
    integrated_gradients(model, X0, target=1)
    assert all(p.grad is None for p in model.parameters())


def test_batched_wraps_a_function_of_one_point():
    def single(x: Tensor) -> Tensor:
        return (x[0] * x[1]).sin() + (0.5 * x[2]).exp() + x[0] ** 2 * x[2]

    def single_np(x: np.ndarray) -> float:
        return float(np.sin(x[0] * x[1]) + np.exp(0.5 * x[2]) + x[0] ** 2 * x[2])

    expected = integrated_gradients(smooth, X0, B0, steps=8)
    np.testing.assert_allclose(integrated_gradients(batched(single), X0, B0, steps=8), expected, rtol=1e-12)
    np.testing.assert_allclose(
        integrated_gradients(batched(single_np), X0, B0, steps=8, grad_method="fd"), expected, rtol=1e-7
    )


def test_target_picks_a_column_and_baseline_broadcasts():
    W = RNG.normal(size=(3, 4))

    def scores(X: Tensor) -> Tensor:
        return (X @ W).tanh()

    def column(X: Tensor) -> Tensor:
        return (X @ W[:, 1]).tanh()

    np.testing.assert_allclose(
        integrated_gradients(scores, X0, 0.5, target=1), integrated_gradients(column, X0, np.full(3, 0.5)), rtol=1e-13
    )


def test_inputs_of_any_shape_and_integer_inputs():
    x = np.arange(6).reshape(2, 3)  # integers become floats

    def f(X: Tensor) -> Tensor:
        return (X * X).sum(axis=(1, 2))

    attributions, delta = integrated_gradients(f, x, steps=3, method="riemann_trapezoid", return_delta=True)
    assert attributions.shape == (2, 3) and attributions.dtype == np.float64
    np.testing.assert_allclose(attributions, x.astype(float) ** 2)
    assert abs(delta) < 1e-12


def test_constant_function_gets_zero_attributions():
    attributions, delta = integrated_gradients(lambda X: X.sum(axis=1) * 0 + 3.0, X0, B0, return_delta=True)
    np.testing.assert_array_equal(attributions, np.zeros(3))
    assert delta == 0.0


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (
            {"method": "simpson"},
            ValueError,
            "riemann_left, riemann_right, riemann_middle, riemann_trapezoid, gausslegendre",
        ),
        ({"method": "riemann_trapezoid", "steps": 1}, ValueError, "steps >= 2"),
        ({"steps": 0}, ValueError, "positive integer"),
        ({"steps": 2.5}, ValueError, "positive integer"),
        ({"baseline": np.zeros(4)}, ValueError, r"baseline has shape \(4,\) but x has shape \(3,\)"),
        ({"grad_method": "symbolic"}, ValueError, "'ad'"),
        ({"target": 0}, ValueError, "drop target"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        integrated_gradients(smooth, X0, **kwargs)


def test_bad_outputs_and_targets_raise_clear_errors():
    def scores(X: Tensor) -> Tensor:
        return X @ np.ones((3, 4))

    with pytest.raises(ValueError, match="pass target"):
        integrated_gradients(scores, X0)
    with pytest.raises(ValueError, match=r"0\.\.3"):
        integrated_gradients(scores, X0, target=4)
    with pytest.raises(ValueError, match=r"shape \(52,\) or \(52, C\)"):
        integrated_gradients(lambda X: X.sum(), X0)
    with pytest.raises(TypeError, match="grad_method='fd'"):
        integrated_gradients(lambda X: X.data.sum(axis=1), X0)
    with pytest.raises(TypeError, match="real numbers"):
        integrated_gradients(smooth, np.array(["a", "b", "c"]))


# --- completeness on the projectile (numbers for chapter 12) -----------------------------------


def projectile_table() -> dict[str, dict[int, float]]:
    """|delta| per rule at 5, 20, 50 steps: IG of the hit's height relative to the first miss."""
    history = fit_shot()
    hit = np.array([history.v[-1], history.theta[-1]])
    return completeness_errors(shot_height, hit, np.array(START_SHOT))


def test_projectile_completeness_table(capsys):
    table = projectile_table()
    history = fit_shot()
    gain = history.height[-1] - history.height[0]
    with capsys.disabled():
        print(f"\ncompleteness |delta| on the projectile (height gain {gain:.4f} m):")
        for method, row in table.items():
            print(f"  {method:18s}" + "".join(f"  m={m}: {err:.3e} ({err / gain:.1e} rel)" for m, err in row.items()))
    for method in ("riemann_middle", "riemann_trapezoid"):
        assert table[method][50] < 1e-3 * gain
    assert table["gausslegendre"][5] < 1e-6 * gain
    assert table["riemann_right"][50] < 0.05 * gain
    for row in table.values():
        assert row[50] < row[5]


def iris_table() -> tuple[dict[str, dict[int, float]], float, np.ndarray]:
    """|delta| per rule at 5, 20, 50 steps for the predicted-class probability of a ReLU MLP
    trained on standardised Iris features (100 epochs), explaining flower 0 (a setosa)
    against the all-zeros baseline (the average flower)."""
    X, y, _, _ = load_iris()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    model = MLP([4, 16, 3], rng=0)
    optimizer = SGD(model.parameters(), lr=0.1)
    for _ in range(100):
        optimizer.zero_grad()
        cross_entropy(model(Tensor(X)), y).backward()
        optimizer.step()

    def probabilities(B: Tensor) -> Tensor:
        return model(B).softmax(axis=-1)

    x, baseline = X[0], np.zeros(4)
    gain = float(np.diff(probabilities(Tensor(np.stack([baseline, x]))).data[:, y[0]])[0])
    attributions = integrated_gradients(probabilities, x, baseline, target=int(y[0]))
    return completeness_errors(probabilities, x, baseline, target=int(y[0])), gain, attributions


def test_iris_completeness_table(capsys):
    table, gain, attributions = iris_table()
    with capsys.disabled():
        print(
            f"\ncompleteness |delta| on the Iris MLP, setosa probability (gain {gain:.4f}), "
            f"IG {np.round(attributions, 4)}:"
        )
        for method, row in table.items():
            print(f"  {method:18s}" + "".join(f"  m={m}: {err:.3e} ({err / gain:.1e} rel)" for m, err in row.items()))
    assert gain > 0.3
    for row in table.values():
        assert row[50] < 0.05 * gain
    # ReLU kinks make the integrand non-smooth: Gauss-Legendre loses its spectral accuracy.
    assert table["gausslegendre"][50] > 1e-6


def test_module_lists_its_rules():
    assert ig.METHODS == ("riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid", "gausslegendre")


# --- no silent zeros, no silently inaccurate attributions ---------------------------------------


def test_a_model_that_leaves_the_graph_is_an_error_not_zero_attributions():
    def detached(X: Tensor) -> Tensor:  # Tensor(X.data) cuts X off the graph
        return (Tensor(X.data) * np.array([1.0, 2.0])).sum(axis=1)

    def honest(X: Tensor) -> Tensor:
        return (X * np.array([1.0, 2.0])).sum(axis=1)

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(integrated_gradients(honest, x), [1.0, 4.0])
    with pytest.raises(ValueError, match="does not depend on input.*allow_unused=True"):
        integrated_gradients(detached, x)
    np.testing.assert_array_equal(integrated_gradients(detached, x, allow_unused=True), [0.0, 0.0])


def test_a_large_completeness_gap_warns_and_a_small_one_does_not():
    with pytest.warns(RuntimeWarning, match=r"completeness gap .* 3-step 'riemann_right' rule is too coarse"):
        integrated_gradients(smooth, X0, B0, steps=3, method="riemann_right")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        integrated_gradients(smooth, X0, B0, steps=20, method="gausslegendre")
        integrated_gradients(smooth, X0, B0, steps=3, method="riemann_right", completeness_rtol=None)
        _, delta = integrated_gradients(smooth, X0, B0, steps=3, method="riemann_right", return_delta=True)
    assert abs(delta) > 0.05 * abs(smooth(Tensor(X0[None])).item() - smooth(Tensor(B0[None])).item())
