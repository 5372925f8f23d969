"""The differentiable projectile: values, gradients against PyTorch, descent to the hoop, IG."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.ig import integrated_gradients
from course_lib.physics import (
    HOOP,
    LEARNING_RATE,
    START_SHOT,
    G,
    fit_shot,
    height_at,
    hoop_loss,
    shot_height,
    trajectory,
)
from course_lib.tensor import Tensor

speeds = st.floats(3.0, 20.0)
angles = st.floats(-1.2, 1.2)


def torch_height(v, theta, x=HOOP[0], h0=0.0):
    return h0 + x * torch.tan(theta) - G * x**2 / (2 * v**2 * torch.cos(theta) ** 2)


def test_constants():
    assert HOOP == (4.0, 3.1)
    assert G == 9.81


def test_height_matches_the_closed_form():
    v, theta = 10.0, math.pi / 6
    expected = 4.0 * math.tan(theta) - 9.81 * 16.0 / (2 * 100.0 * math.cos(theta) ** 2)
    assert float(height_at(v, theta).data) == pytest.approx(expected, rel=1e-14)
    assert float(height_at(v, theta, h0=2.0).data) == pytest.approx(expected + 2.0, rel=1e-14)
    assert float(shot_height(np.array([v, theta])).data) == pytest.approx(expected, rel=1e-14)
    assert float(hoop_loss(v, theta).data) == pytest.approx((expected - 3.1) ** 2, rel=1e-14)


def test_batches_of_shots():
    shots = np.array([[8.0, 0.9], [10.0, 0.5], [12.0, 1.1]])
    heights = shot_height(Tensor(shots))
    assert heights.data.shape == (3,)
    for (v, theta), y in zip(shots, heights.data):
        assert y == pytest.approx(float(height_at(v, theta).data), rel=1e-14)
    np.testing.assert_allclose(height_at(Tensor(shots[:, 0]), Tensor(shots[:, 1])).data, heights.data, rtol=1e-14)


@settings(max_examples=30, deadline=None)
@given(v=speeds, theta=angles, h0=st.floats(0.0, 3.0))
def test_gradients_match_pytorch(v, theta, h0):
    shot = Tensor(np.array([v, theta]), requires_grad=True)
    loss = (shot_height(shot, h0=h0) - HOOP[1]) ** 2
    loss.backward()
    tv = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    tt = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    torch_loss = (torch_height(tv, tt, h0=h0) - HOOP[1]) ** 2
    torch_loss.backward()
    assert float(loss.data) == pytest.approx(torch_loss.item(), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(shot.grad, [tv.grad.item(), tt.grad.item()], rtol=1e-10, atol=1e-10)


def test_batched_gradients_match_pytorch():
    rng = np.random.default_rng(0)
    shots = np.column_stack([rng.uniform(5, 15, 20), rng.uniform(0.2, 1.3, 20)])
    batch = Tensor(shots, requires_grad=True)
    shot_height(batch).sum().backward()
    tshots = torch.tensor(shots, requires_grad=True)
    torch_height(tshots[:, 0], tshots[:, 1]).sum().backward()
    np.testing.assert_allclose(batch.grad, tshots.grad.numpy(), rtol=1e-11)


def test_separate_speed_and_angle_tensors_get_their_gradients():
    v, theta = Tensor(np.array(9.0), requires_grad=True), Tensor(np.array(0.9), requires_grad=True)
    hoop_loss(v, theta).backward()
    tv = torch.tensor(9.0, dtype=torch.float64, requires_grad=True)
    tt = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
    ((torch_height(tv, tt) - 3.1) ** 2).backward()
    assert float(v.grad) == pytest.approx(tv.grad.item(), rel=1e-12)
    assert float(theta.grad) == pytest.approx(tt.grad.item(), rel=1e-12)


def test_start_shot_misses_low():
    y0 = float(shot_height(np.array(START_SHOT)).data)
    assert y0 == pytest.approx(1.2631, abs=1e-4)
    assert HOOP[1] - y0 > 1.0


def test_descent_reaches_the_hoop():
    history = fit_shot()
    assert history.converged
    assert abs(history.height[-1] - HOOP[1]) < 1e-3
    assert 3 <= history.steps <= 30
    assert history.v[0] == START_SHOT[0] and history.theta[0] == START_SHOT[1]
    assert np.all(np.diff(history.loss) < 0)  # the step size is small enough: every step helps
    assert len(history.v) == len(history.theta) == len(history.height) == len(history.loss) == history.steps + 1
    # The recorded heights are the model's: the last shot really passes through the hoop.
    xs, ys = trajectory(history.v[-1], history.theta[-1], x_max=HOOP[0], n=50)
    assert xs[-1] == HOOP[0] and abs(ys[-1] - HOOP[1]) < 1e-3


def test_descent_history_matches_a_pytorch_descent():
    history = fit_shot()
    params = torch.tensor(START_SHOT, dtype=torch.float64, requires_grad=True)
    for _ in range(history.steps):
        loss = (torch_height(params[0], params[1]) - HOOP[1]) ** 2
        (grad,) = torch.autograd.grad(loss, params)
        params = (params - LEARNING_RATE * grad).detach().requires_grad_(True)
    np.testing.assert_allclose([history.v[-1], history.theta[-1]], params.detach().numpy(), rtol=1e-10)


def test_too_large_a_step_does_not_converge():
    history = fit_shot(lr=0.2, max_steps=40)
    assert not history.converged and history.steps == 40


def test_trajectory_for_plotting():
    xs, ys = trajectory(10.0, math.pi / 4, n=100)
    assert isinstance(xs, np.ndarray) and isinstance(ys, np.ndarray)
    assert xs.shape == ys.shape == (100,)
    assert xs[-1] == pytest.approx(100.0 / G)  # range v^2 sin(2 theta) / g
    assert ys[0] == 0.0 and abs(ys[-1]) < 1e-12
    assert ys.max() == pytest.approx(100.0 * 0.5 / (2 * G), rel=1e-3)  # apex v^2 sin^2 / (2g)
    xs, ys = trajectory(Tensor(np.array(8.0)), 0.3, h0=2.0)
    assert ys[0] == 2.0 and abs(ys[-1]) < 1e-12
    with pytest.raises(ValueError, match="v > 0"):
        trajectory(0.0, 0.5)
    with pytest.raises(ValueError, match="pi/2"):
        trajectory(5.0, 2.0)


def test_integrated_gradients_of_the_shot_explain_the_height_gain():
    history = fit_shot()
    hit, miss = np.array([history.v[-1], history.theta[-1]]), np.array(START_SHOT)
    attributions, delta = integrated_gradients(
        shot_height, hit, miss, steps=8, method="gausslegendre", return_delta=True
    )
    gain = history.height[-1] - history.height[0]
    assert abs(delta) < 1e-9 * gain
    assert attributions.sum() == pytest.approx(gain, rel=1e-9)
    # The descent mostly steepened the shot: the angle carries nearly all of the gain.
    assert attributions[1] > 0.9 * gain
    # shot_height also takes ndarrays (and returns a Tensor): the finite-difference mode accepts it.
    fd = integrated_gradients(shot_height, hit, miss, steps=8, method="gausslegendre", grad_method="fd")
    np.testing.assert_allclose(fd, attributions, rtol=1e-7)
