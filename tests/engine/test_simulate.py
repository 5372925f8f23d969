"""The time-stepped projectile with drag: exactness without drag, PyTorch as an oracle for the
gradient through the time loop, convergence, checkpointing, batches and error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import simulate
from course_lib.check import gradcheck, numerical_grad
from course_lib.physics import HOOP, START_SHOT, height_at, shot_height
from course_lib.simulate import (
    DRAG,
    DT,
    G,
    checkpointed_gradient,
    drag_shot_height,
    fit_shot_with_drag,
    flight,
    graph_size,
    hoop_height,
    plain_gradient,
    steps_before,
)
from course_lib.tensor import Tensor, no_grad

speeds = st.floats(6.0, 20.0)
angles = st.floats(0.1, 1.2)
drags = st.floats(0.0, 0.08)
time_steps = st.sampled_from([0.002, 0.005, 0.01, 0.02, 0.05])


def closed_form_gradient(v: float, theta: float, h0: float = 0.0) -> np.ndarray:
    shot = Tensor(np.array([v, theta]), requires_grad=True)
    shot_height(shot, h0=h0).backward()
    return shot.grad


def simulated(v: float, theta: float, k: float, dt: float = DT, h0: float = 0.0) -> tuple[float, np.ndarray]:
    params = Tensor(np.array([v, theta, k]), requires_grad=True)
    y = drag_shot_height(params, dt=dt, h0=h0)
    y.backward()
    return y.item(), params.grad


# ----------------------------------------------------------------------------- PyTorch oracle
def torch_hoop_height(v, theta, k, dt=DT, x_hoop=HOOP[0]):
    """The same physics written independently with torch: Heun steps, then the shortened step."""

    def acc(vx, vy):
        speed = torch.sqrt(vx**2 + vy**2)
        return -k * speed * vx, -G - k * speed * vy

    x, y = torch.zeros((), dtype=torch.float64), torch.zeros((), dtype=torch.float64)
    vx, vy = v * torch.cos(theta), v * torch.sin(theta)
    while True:
        ax, ay = acc(vx, vy)
        if (x + dt * vx + 0.5 * dt**2 * ax).item() >= x_hoop:
            break
        bx, by = acc(vx + dt * ax, vy + dt * ay)
        x, y = x + dt * vx + 0.5 * dt**2 * ax, y + dt * vy + 0.5 * dt**2 * ay
        vx, vy = vx + 0.5 * dt * (ax + bx), vy + 0.5 * dt * (ay + by)
    d = x_hoop - x
    tau = 2 * d / (vx + torch.sqrt(vx**2 + 2 * ax * d))
    return y + tau * vy + 0.5 * tau**2 * ay


@settings(max_examples=20, deadline=None)
@given(v=speeds, theta=angles, k=drags, dt=st.sampled_from([0.005, 0.01, 0.02]))
def test_gradient_through_the_time_loop_matches_pytorch(v, theta, k, dt):
    y, grad = simulated(v, theta, k, dt)
    tp = torch.tensor([v, theta, k], dtype=torch.float64, requires_grad=True)
    ty = torch_hoop_height(tp[0], tp[1], tp[2], dt)
    ty.backward()
    assert y == pytest.approx(ty.item(), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, tp.grad.numpy(), rtol=1e-9, atol=1e-10)


# ----------------------------------------------------------------------------- no drag: exact
@settings(max_examples=30, deadline=None)
@given(v=speeds, theta=angles, dt=time_steps, h0=st.floats(0.0, 2.0))
def test_zero_drag_equals_the_closed_form_for_random_launches(v, theta, dt, h0):
    y, grad = simulated(v, theta, 0.0, dt, h0)
    assert y == pytest.approx(height_at(v, theta, h0=h0).item(), rel=1e-11, abs=1e-11)
    np.testing.assert_allclose(grad[:2], closed_form_gradient(v, theta, h0), rtol=1e-10, atol=1e-10)


def test_zero_drag_flight_samples_the_parabola():
    v, theta = 9.0, 0.8
    f = flight(v, theta, k=0.0, dt=0.02)
    np.testing.assert_allclose(f.t, np.arange(len(f.t)) * 0.02, atol=1e-12)
    np.testing.assert_allclose(f.x, v * math.cos(theta) * f.t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f.y, v * math.sin(theta) * f.t - G * f.t**2 / 2, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(f.vy, v * math.sin(theta) - G * f.t, rtol=1e-12, atol=1e-12)
    assert f.y[-1] < 0 <= f.y[-2], "the flight stops at the first sample below the launch height"


def test_drag_slows_the_ball_and_shortens_the_flight():
    vacuum, air = flight(10.0, 0.9, k=0.0), flight(10.0, 0.9, k=DRAG)
    assert air.x[-1] < vacuum.x[-1] and air.y.max() < vacuum.y.max()
    speed = np.hypot(air.vx, air.vy)
    assert speed[1] < speed[0]
    assert hoop_height(10.0, 0.9, DRAG).item() < hoop_height(10.0, 0.9, 0.0).item()


# ----------------------------------------------------------------------------- with drag
def test_heun_is_second_order_with_drag():
    reference = hoop_height(*START_SHOT, DRAG, dt=1e-4).item()
    errors = [hoop_height(*START_SHOT, DRAG, dt=dt).item() - reference for dt in (0.04, 0.02, 0.01, 0.005)]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    np.testing.assert_allclose(ratios, 4.0, atol=0.05)


def test_gradient_with_drag_matches_finite_differences():
    point = np.array([*START_SHOT, DRAG])
    y, grad = simulated(*point)
    np.testing.assert_allclose(grad, numerical_grad(lambda p: drag_shot_height(p).item(), point), rtol=1e-7)
    assert gradcheck(drag_shot_height, point)


def test_the_shortened_step_ends_on_the_hoop():
    state = simulate.launch(12.0, 0.6)
    for _ in range(steps_before(12.0, 0.6, DRAG)):
        state = simulate.heun_step(state, DRAG, DT)
    x, y, vx, vy = state
    ax, _ = simulate.acceleration(vx, vy, DRAG)
    d = HOOP[0] - x.item()
    tau = 2 * d / (vx.item() + math.sqrt(vx.item() ** 2 + 2 * ax.item() * d))
    assert 0 < tau <= DT
    end = simulate.heun_step(state, DRAG, tau)
    assert end[0].item() == pytest.approx(HOOP[0], abs=1e-13)
    assert simulate.final_step(state, DRAG).item() == pytest.approx(end[1].item(), abs=1e-13)


def test_the_gradient_needs_the_dependence_of_the_last_step_on_the_parameters():
    # If tau were a constant, the vacuum gradient would be wrong: the check in the chapter has teeth.
    state = simulate.launch(Tensor(10.0, requires_grad=True), Tensor(0.5, requires_grad=True))
    assert graph_size(simulate.final_step(state, 0.0)) > 10


def test_batches_fly_like_single_shots():
    shots = np.array([[8.0, 0.9, 0.0], [10.0, 0.5, 0.03], [12.0, 1.1, 0.05], [15.0, 0.2, 0.01], [9.5, 0.7, 0.1]])
    batch = Tensor(shots, requires_grad=True)
    heights = drag_shot_height(batch)
    heights.sum().backward()
    for row, y_batch, g_batch in zip(shots, heights.data, batch.grad):
        y, g = simulated(*row)
        assert y_batch == pytest.approx(y, rel=1e-13, abs=1e-13)
        np.testing.assert_allclose(g_batch, g, rtol=1e-12, atol=1e-12)


def test_steps_before_counts_the_full_steps():
    assert steps_before(*START_SHOT, 0.0) == 46 and steps_before(*START_SHOT, DRAG) == 49
    assert steps_before(*START_SHOT, DRAG, dt=0.001) == 493


def test_graph_grows_by_46_nodes_per_step():
    nodes = {dt: plain_gradient(*START_SHOT, DRAG, dt)[2] for dt in (0.01, 0.005)}
    steps = {dt: steps_before(*START_SHOT, DRAG, dt) for dt in nodes}
    assert (nodes[0.005] - nodes[0.01]) == 46 * (steps[0.005] - steps[0.01])


# ----------------------------------------------------------------------------- checkpointing
@pytest.mark.parametrize("every", [1, 2, 7, 10, 49, 50, 1000])
def test_checkpointing_gives_the_same_gradient(every):
    height, grad, nodes = plain_gradient(*START_SHOT, DRAG)
    run = checkpointed_gradient(*START_SHOT, DRAG, every=every)
    assert run.height == pytest.approx(height, abs=1e-14)
    np.testing.assert_allclose(run.grad, grad, rtol=1e-13, atol=1e-14)
    assert run.steps == 49 and run.steps_recomputed == 49
    assert run.checkpoints == math.ceil(49 / every)
    assert run.peak_nodes <= nodes
    if every < 49:
        assert run.peak_nodes < nodes / 2


@settings(max_examples=10, deadline=None)
@given(v=speeds, theta=angles, k=drags, every=st.integers(1, 80))
def test_checkpointing_property(v, theta, k, every):
    _, grad, _ = plain_gradient(v, theta, k, 0.02)
    np.testing.assert_allclose(checkpointed_gradient(v, theta, k, 0.02, every=every).grad, grad, rtol=1e-12, atol=1e-13)


def test_checkpointing_memory_model():
    runs = {c: checkpointed_gradient(*START_SHOT, DRAG, dt=0.001, every=c) for c in (1, 5, 7, 493)}
    stored = {c: 4 * r.checkpoints + r.peak_nodes for c, r in runs.items()}
    assert stored == {1: 2052, 5: 648, 7: 628, 493: 22720}
    assert plain_gradient(*START_SHOT, DRAG, 0.001)[2] == 22717


def test_hoop_within_the_first_step():
    # The hoop closer than one step: no full step, the launch is the only checkpoint.
    run = checkpointed_gradient(*START_SHOT, DRAG, dt=0.5, every=3)
    height, grad, _ = plain_gradient(*START_SHOT, DRAG, 0.5)
    assert run.steps == 0 and run.checkpoints == 1
    np.testing.assert_allclose(run.grad, grad, rtol=1e-13)
    assert run.height == pytest.approx(height)


# ----------------------------------------------------------------------------- descent and costs
def test_descent_with_drag_hits_the_hoop():
    history = fit_shot_with_drag()
    assert history.converged and history.steps == 18
    assert abs(history.height[-1] - HOOP[1]) < 1e-3
    assert np.all(np.diff(history.loss) < 0)
    assert hoop_height(history.v[-1], history.theta[-1], DRAG).item() == pytest.approx(history.height[-1], abs=1e-15)


def test_measured_costs_are_plausible():
    cost = simulate.backprop_cost(*START_SHOT, DRAG, dt=0.005, repeats=1)
    assert cost.steps == 98 and cost.nodes == 4547
    assert 100 < cost.graph_bytes / cost.nodes < 1000, "a scalar node is a few hundred bytes"
    assert cost.forward_seconds > 0 and cost.backward_seconds > 0
    result, peak = simulate.peak_bytes(lambda: plain_gradient(*START_SHOT, DRAG, 0.005))
    assert result[2] == 4547 and peak > cost.graph_bytes / 2


def test_peak_bytes_refuses_nested_tracing():
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="tracemalloc"):
            simulate.peak_bytes(lambda: None)
        with pytest.raises(RuntimeError, match="tracemalloc"):
            simulate.backprop_cost(*START_SHOT)
    finally:
        tracemalloc.stop()


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("dt", [0.0, -0.01, float("nan"), float("inf"), True, "0.01", None])
def test_a_bad_time_step_is_refused(dt):
    for call in (
        lambda: hoop_height(10.0, 0.5, dt=dt),
        lambda: flight(10.0, 0.5, dt=dt),
        lambda: steps_before(10.0, 0.5, dt=dt),
        lambda: checkpointed_gradient(10.0, 0.5, dt=dt),
    ):
        with pytest.raises(ValueError, match="time step dt must be a positive number"):
            call()


def test_other_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="every must be a positive whole number"):
        checkpointed_gradient(10.0, 0.5, every=0)
    with pytest.raises(ValueError, match="unreachable must be"):
        hoop_height(10.0, 0.5, unreachable="ignore")
    with pytest.raises(ValueError, match="max_time must be a positive"):
        hoop_height(10.0, 0.5, max_time=0)
    with pytest.raises(ValueError, match=r"3 entries \(v, theta, k\)"):
        drag_shot_height(np.array([10.0, 0.5]))


def test_a_throw_that_never_arrives():
    # Slow and steep: with drag the horizontal speed dies away before 4 m.
    with pytest.raises(ValueError, match="does not reach x = 4.0 m"):
        hoop_height(7.0, math.radians(80), DRAG, max_time=3.0)
    with pytest.raises(ValueError, match="does not reach"):
        steps_before(0.0, 0.5, DRAG, max_time=1.0)
    shots = Tensor(np.array([[7.0, math.radians(80), DRAG], [10.0, 0.9, DRAG]]), requires_grad=True)
    heights = hoop_height(shots[:, 0], shots[:, 1], shots[:, 2], max_time=3.0, unreachable="nan")
    assert math.isnan(heights.data[0]) and heights.data[1] == pytest.approx(hoop_height(10.0, 0.9, DRAG).item())
    heights[1].backward()
    np.testing.assert_allclose(shots.grad[1], simulated(10.0, 0.9, DRAG)[1], rtol=1e-12)
    assert np.all(shots.grad[0] == 0)


def test_values_only_under_no_grad():
    with no_grad():
        y = hoop_height(Tensor(10.0, requires_grad=True), 0.5, DRAG)
    assert not y.requires_grad and graph_size(y) == 1
