"""A time-stepped projectile with air drag, differentiated through its whole time loop.

:mod:`course_lib.physics` writes the ball's height at the hoop as one closed formula. With
air drag there is no such formula, so here the flight is *simulated*: the state
``(x, y, vx, vy)`` is advanced in small time steps ``dt`` under gravity and quadratic drag::

    dvx/dt = -k |v| vx,        dvy/dt = -g - k |v| vy,        |v| = sqrt(vx^2 + vy^2),

where ``k`` (per metre) is the drag coefficient: ``k = rho * C_d * A / (2 m)`` for a ball of
mass ``m`` and cross-section ``A`` in air of density ``rho``. ``k = 0`` is the vacuum of
:mod:`course_lib.physics`.

Each step is Heun's method (the explicit trapezoidal rule): an Euler predictor, then the
average of the accelerations at both ends. Two properties make it the right teaching
choice: it is second-order accurate (halving ``dt`` divides the error by about 4), and
for a constant acceleration (``k = 0``) it is *exact*, so the simulation can be checked
against the closed form to rounding error. The loop stops before the step that would
carry the ball past the hoop's distance; that last step is shortened to the exact
length ``tau`` that ends on the hoop's distance (Heun's position update is a quadratic in
the step length, solved in closed form), so ``tau`` depends on the parameters and the
gradient flows through it too.

Every operation is a :class:`~course_lib.tensor.Tensor` operation, so ``backward()`` on
the height at the hoop differentiates through every step of the loop, with respect to
the launch speed, the angle and the drag coefficient. The module also measures what that
costs (:func:`graph_size`) and computes the same gradient with *checkpointing*
(:func:`checkpointed_gradient`), which stores only every ``every``-th state and
recomputes the rest during the backward pass.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike

from course_lib.physics import HOOP, START_SHOT, ShotHistory, fit_shot
from course_lib.physics import G as _G
from course_lib.tensor import Tensor, no_grad, where
from course_lib.toposort import child_count_order

__all__ = [
    "G",
    "DT",
    "DRAG",
    "DRAG_LEARNING_RATE",
    "State",
    "launch",
    "acceleration",
    "heun_step",
    "steps_before",
    "final_step",
    "hoop_height",
    "scanned_hoop_height",
    "drag_shot_height",
    "Flight",
    "flight",
    "fit_shot_with_drag",
    "graph_size",
    "CheckpointRun",
    "checkpointed_gradient",
    "plain_gradient",
    "BackpropCost",
    "backprop_cost",
    "peak_bytes",
]

G = _G
"""Gravitational acceleration (m/s^2), the same as :data:`course_lib.physics.G`."""
DT = 0.01
"""Default time step (s): the first throw (:data:`course_lib.physics.START_SHOT`) takes 46 full steps to
reach the hoop in a vacuum and 49 with the default drag, then a shortened one."""
DRAG = 0.03
"""Default drag coefficient k (per metre): about a netball's (0.41 kg, radius 0.11 m, C_d about 0.5, air 1.2 kg/m^3)."""
DRAG_LEARNING_RATE = 0.01
"""Step size for :func:`fit_shot_with_drag` (the chapter's choice; the loss falls at every step)."""

State = tuple[Tensor, Tensor, Tensor, Tensor]
"""``(x, y, vx, vy)``: position (m) and velocity (m/s), each a Tensor (one shot or a batch)."""

Values = ArrayLike | Tensor


def _tensor(value: Values) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(value)


def _check_dt(dt: float) -> float:
    if isinstance(dt, bool) or not isinstance(dt, Real) or not math.isfinite(dt) or dt <= 0:
        raise ValueError(f"the time step dt must be a positive number of seconds (e.g. {DT}), got {dt!r}")
    return float(dt)


def launch(v: Values, theta: Values, h0: float = 0.0) -> State:
    """The state at launch: at ``(0, h0)`` with speed ``v`` at angle ``theta`` (radians)."""
    v, theta = _tensor(v), _tensor(theta)
    vx, vy = v * theta.cos(), v * theta.sin()
    x = Tensor(np.zeros(vx.shape))
    y = Tensor(np.full(vy.shape, float(h0)))
    return x, y, vx, vy


def acceleration(vx: Tensor, vy: Tensor, k: Values, g: float = G) -> tuple[Tensor, Tensor]:
    """Gravity plus quadratic drag: ``(-k |v| vx, -g - k |v| vy)``."""
    drag = k * (vx * vx + vy * vy).sqrt()
    return -drag * vx, -g - drag * vy


def heun_step(state: State, k: Values, dt: float | Tensor, g: float = G) -> State:
    """Advance ``state`` by one step of length ``dt`` with Heun's method.

    The position update, ``x + dt vx + dt^2/2 ax``, is exact for a constant acceleration;
    the velocity update averages the accelerations at the start and at the Euler predictor.
    """
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k, g)
    vx_pred, vy_pred = vx + dt * ax, vy + dt * ay  # Euler predictor
    ax_pred, ay_pred = acceleration(vx_pred, vy_pred, k, g)
    half = 0.5 * dt
    return (
        x + dt * vx + half * dt * ax,
        y + dt * vy + half * dt * ay,
        vx + half * (ax + ax_pred),
        vy + half * (ay + ay_pred),
    )


def _reaches(state: State, k: Values, dt: float, x_hoop: float, g: float) -> np.ndarray:
    """Whether a full step from ``state`` would end at or beyond ``x_hoop`` (no graph)."""
    with no_grad():
        x, _, vx, vy = state
        ax, _ = acceleration(vx, vy, k, g)
        return (x + dt * vx + 0.5 * dt * dt * ax).data >= x_hoop


def final_step(state: State, k: Values, x_hoop: float = HOOP[0], g: float = G) -> Tensor:
    """Height where the ball reaches ``x_hoop``, from a state within one step of it.

    Heun's position update over a step of length ``tau`` is ``x + vx tau + ax tau^2 / 2``;
    setting it to ``x_hoop`` and taking the first root (written without dividing by
    ``ax``, which is zero without drag) gives ``tau = 2 d / (vx + sqrt(vx^2 + 2 ax d))``
    with ``d = x_hoop - x``. The height after that shortened step is returned.
    """
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k, g)
    d = x_hoop - x
    tau = 2 * d / (vx + (vx * vx + 2 * ax * d).sqrt())
    return y + tau * vy + 0.5 * tau * tau * ay


def _fly_to_hoop(
    state: State, k: Values, dt: float, x_hoop: float, g: float, max_time: float
) -> tuple[State, np.ndarray, int]:
    """The one stepping loop: Heun steps until every shot is within one step of ``x_hoop``
    (a shot already there waits, frozen, for the others), at most ``ceil(max_time / dt)``
    steps. Returns the state, which shots got there and the number of steps taken."""
    limit = math.ceil(max_time / dt)
    n = 0
    reaches = _reaches(state, k, dt, x_hoop, g)
    while not reaches.all() and n < limit:
        new = heun_step(state, k, dt, g)
        if reaches.any():  # a batch: shots within one step of the hoop keep their state
            x, y, vx, vy = (where(reaches, old, nxt) for old, nxt in zip(state, new))
            new = (x, y, vx, vy)
        state, n = new, n + 1
        reaches = _reaches(state, k, dt, x_hoop, g)
    return state, reaches, n


def steps_before(
    v: Values,
    theta: Values,
    k: Values = DRAG,
    dt: float = DT,
    x_hoop: float = HOOP[0],
    h0: float = 0.0,
    g: float = G,
    max_time: float = 10.0,
) -> int:
    """How many full steps :func:`hoop_height` takes before its shortened last step."""
    with no_grad():
        state = launch(_tensor(v).detach(), _tensor(theta).detach(), h0)
        _, reaches, n = _fly_to_hoop(state, _tensor(k).detach(), _check_dt(dt), x_hoop, g, max_time)
    if not reaches.all():
        raise ValueError(_unreachable_message(x_hoop, max_time))
    return n


def _unreachable_message(x_hoop: float, max_time: float) -> str:
    return (
        f"the ball does not reach x = {x_hoop} m within max_time = {max_time} s: with drag its horizontal "
        "speed dies away, so a slow or steep throw never gets there (throw faster or flatter, lower k, "
        "or pass unreachable='nan' to get NaN for such shots)"
    )


def hoop_height(
    v: Values,
    theta: Values,
    k: Values = DRAG,
    dt: float = DT,
    x_hoop: float = HOOP[0],
    h0: float = 0.0,
    g: float = G,
    max_time: float = 10.0,
    unreachable: str = "raise",
) -> Tensor:
    """Height of the ball where it reaches ``x_hoop``, simulated with time step ``dt``.

    ``v`` (m/s), ``theta`` (radians) and ``k`` (per metre) may be numbers, arrays or
    Tensors that require grad; arrays are a batch of shots, flown together (a shot that is
    already within one step of the hoop waits there, frozen, for the others). The loop is
    ordinary Python: the engine records whatever steps run, so ``backward()`` on the result
    differentiates through all of them. A shot that has not reached ``x_hoop`` after
    ``max_time`` seconds raises ``ValueError`` (``unreachable="nan"``: its height is NaN).
    """
    dt = _check_dt(dt)
    if unreachable not in ("raise", "nan"):
        raise ValueError(f"unreachable must be 'raise' or 'nan', got {unreachable!r}")
    if not (isinstance(max_time, Real) and max_time > 0):
        raise ValueError(f"max_time must be a positive number of seconds, got {max_time!r}")
    state, reaches, _ = _fly_to_hoop(launch(v, theta, h0), k, dt, x_hoop, g, max_time)
    if not reaches.all():
        if unreachable == "raise":
            raise ValueError(_unreachable_message(x_hoop, max_time))
        # Put the lost shots on the hoop's distance at rest (a harmless last step), then report NaN.
        parked = tuple(where(reaches, s, c) for s, c in zip(state, (x_hoop, 0.0, 1.0, 0.0)))
        return where(reaches, final_step(parked, k, x_hoop, g), np.nan)
    return final_step(state, k, x_hoop, g)


def scanned_hoop_height(
    v: Values, theta: Values, k: Values, steps: int, dt: float = DT, x_hoop: float = HOOP[0], checkpoint: int = 1
) -> Tensor:
    """:func:`hoop_height` with its loop as one ``scan`` op (:mod:`course_lib.loop`): ``steps``
    full Heun steps (count them with :func:`steps_before`), then the shortened last step.
    The same numbers, but traced (``jit``, ``make_program``) the flight is a program of a
    few dozen equations whatever the number of steps; its gradient stores every
    ``checkpoint``-th state and recomputes the others.
    """
    from course_lib.loop import scan  # registers the scan op only when a scanned flight is flown

    dt = _check_dt(dt)
    state, _ = scan(lambda s, _: (heun_step(s, k, dt), None), launch(v, theta), length=steps, checkpoint=checkpoint)
    return final_step(state, k, x_hoop)


def drag_shot_height(params: Values, dt: float = DT, x_hoop: float = HOOP[0], h0: float = 0.0) -> Tensor:
    """:func:`hoop_height` for shots packed as ``params[..., :3] = (v, theta, k)``.

    One shot has shape ``(3,)``; a batch (e.g. Integrated Gradients' path points) ``(m, 3)``.
    """
    params = _tensor(params)
    if params.shape[-1] != 3:
        raise ValueError(f"params must end in an axis of 3 entries (v, theta, k), got shape {params.shape}")
    return hoop_height(params[..., 0], params[..., 1], params[..., 2], dt=dt, x_hoop=x_hoop, h0=h0)


@dataclass
class Flight:
    """Sampled flight path from :func:`flight` (NumPy arrays, for plotting and checks)."""

    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    vx: np.ndarray
    vy: np.ndarray


def flight(
    v: float,
    theta: float,
    k: float = DRAG,
    dt: float = DT,
    h0: float = 0.0,
    g: float = G,
    t_max: float = 5.0,
) -> Flight:
    """The states of one throw, step by step, until the ball is back below its launch
    height ``h0`` (the last sample is the first one below) or ``t_max`` has passed."""
    dt = _check_dt(dt)
    with no_grad():
        state = launch(float(v), float(theta), h0)
        rows = [(0.0, *(float(s.data) for s in state))]
        n = 0
        while n * dt < t_max:
            state = heun_step(state, float(k), dt, g)
            n += 1
            rows.append((n * dt, *(float(s.data) for s in state)))
            if rows[-1][2] < h0:
                break
    return Flight(*(np.array(column) for column in zip(*rows)))


def fit_shot_with_drag(
    v0: float = START_SHOT[0],
    theta0: float = START_SHOT[1],
    k: float = DRAG,
    lr: float = DRAG_LEARNING_RATE,
    max_steps: int = 100,
    tol: float = 1e-3,
    dt: float = DT,
) -> ShotHistory:
    """Gradient descent on ``(hoop_height - HOOP[1])^2`` over ``(v, theta)`` at drag ``k``,
    until ``|y - HOOP[1]| < tol`` or ``max_steps`` steps: :func:`course_lib.physics.fit_shot`'s
    loop, with every step running the whole simulation and backpropagating through it.
    """
    return fit_shot(v0, theta0, lr, max_steps, tol, height=lambda shot: hoop_height(shot[0], shot[1], k, dt=dt))


def graph_size(output: Tensor) -> int:
    """The number of nodes (operations, leaves and constants) of ``output``'s recorded
    graph: everything a backward pass from ``output`` visits and keeps alive."""
    return len(child_count_order(output, lambda node: node._parents))


@dataclass
class BackpropCost:
    """Measured cost of one gradient of :func:`hoop_height` (see :func:`backprop_cost`).

    ``steps`` and ``nodes`` are exact counts; the bytes and seconds are measurements and
    vary a little from run to run and between Python and NumPy versions.
    """

    steps: int
    nodes: int
    graph_bytes: int
    """Memory held by the recorded graph after the forward pass (tracemalloc)."""
    forward_seconds: float
    backward_seconds: float


def peak_bytes(fn: Callable[[], object]) -> tuple[object, int]:
    """``fn()``'s result and the peak memory (bytes) Python allocated while it ran."""
    if tracemalloc.is_tracing():
        raise RuntimeError("peak_bytes() needs tracemalloc to be off when it is called (it starts and stops it)")
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def backprop_cost(v: float, theta: float, k: float = DRAG, dt: float = DT, repeats: int = 3) -> BackpropCost:
    """Graph size, graph memory and the best-of-``repeats`` forward and backward times of
    one gradient of :func:`hoop_height` with respect to ``(v, theta, k)``."""

    def forward() -> tuple[Tensor, Tensor]:
        params = Tensor(np.array([v, theta, k], dtype=float), requires_grad=True)
        return params, hoop_height(params[0], params[1], params[2], dt=dt)

    if tracemalloc.is_tracing():
        raise RuntimeError("backprop_cost() needs tracemalloc to be off when it is called (it starts and stops it)")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        params, height = forward()
        graph_bytes = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    nodes = graph_size(height)
    del params, height
    forward_times, backward_times = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        params, height = forward()
        middle = time.perf_counter()
        height.backward()
        forward_times.append(middle - start)
        backward_times.append(time.perf_counter() - middle)
    return BackpropCost(steps_before(v, theta, k, dt), nodes, graph_bytes, min(forward_times), min(backward_times))


# ----------------------------------------------------------------------------- checkpointing
@dataclass
class CheckpointRun:
    """What :func:`checkpointed_gradient` returns: the height, its gradient and the bill."""

    height: float
    grad: np.ndarray
    """d height / d (v, theta, k)."""
    steps: int
    """Full time steps before the shortened last step."""
    every: int
    """Steps between stored states."""
    checkpoints: int
    """States kept from the first (graph-free) forward pass."""
    peak_nodes: int
    """Largest graph alive at any moment (one segment's)."""
    steps_recomputed: int
    """Time steps run a second time, with the graph recorded, during the backward pass."""


def plain_gradient(v: float, theta: float, k: float = DRAG, dt: float = DT) -> tuple[float, np.ndarray, int]:
    """Height, gradient with respect to ``(v, theta, k)`` and graph size, without checkpointing."""
    params = Tensor(np.array([v, theta, k], dtype=float), requires_grad=True)
    height = hoop_height(params[0], params[1], params[2], dt=dt)
    nodes = graph_size(height)
    height.backward()
    assert params.grad is not None  # backward() has just filled it
    return height.item(), params.grad, nodes


def checkpointed_gradient(v: float, theta: float, k: float = DRAG, dt: float = DT, every: int = 10) -> CheckpointRun:
    """The gradient of :func:`hoop_height` with respect to ``(v, theta, k)`` by checkpointing.

    1. Run the loop once without recording a graph, keeping the state at steps
       0, every, 2 every, ... (the checkpoints).
    2. Walk the segments backwards. For each, start from its checkpoint as fresh leaf
       Tensors, re-run its steps *with* the graph, and backpropagate the adjoint of the
       segment's end state (for the last segment: the height, via the shortened step).
       This yields the adjoint of the segment's start state, which seeds the segment
       before it, and adds the segment's share of d height / dk.
    3. The first segment starts at the launch, so its backward pass reaches ``v`` and
       ``theta``.

    Only one segment's graph exists at a time: memory is about
    ``checkpoints + every * nodes per step`` instead of ``steps * nodes per step``, paid
    for with a second forward run of every step.
    """
    if isinstance(every, bool) or not isinstance(every, Integral) or every < 1:
        raise ValueError(f"every must be a positive whole number of steps between checkpoints, got {every!r}")
    dt = _check_dt(dt)
    steps = steps_before(v, theta, k, dt)
    # 1. Forward pass without a graph, storing every `every`-th state as plain arrays.
    checkpoints: list[tuple[np.ndarray, ...]] = []
    with no_grad():
        state = launch(float(v), float(theta))
        for n in range(steps):
            if n % every == 0:
                checkpoints.append(tuple(s.data.copy() for s in state))
            state = heun_step(state, float(k), dt)
    # 2. Segments backwards: [start, end) step ranges.
    starts = list(range(0, steps, every)) or [0]
    if not checkpoints:  # the hoop is within the first step: the launch is the only state
        checkpoints.append(())
    adjoint: list[np.ndarray] | None = None  # d height / d (end state of the current segment)
    grad = np.zeros(3)
    peak = 0
    recomputed = 0
    for index in range(len(starts) - 1, -1, -1):
        start, end = starts[index], min(starts[index] + every, steps)
        k_leaf = Tensor(float(k), requires_grad=True)
        if index == 0:  # the first segment starts from the launch parameters themselves
            v_leaf, theta_leaf = Tensor(float(v), requires_grad=True), Tensor(float(theta), requires_grad=True)
            state = launch(v_leaf, theta_leaf)
        else:
            state = tuple(Tensor(a, requires_grad=True) for a in checkpoints[index])
        begin = state
        for _ in range(start, end):
            state = heun_step(state, k_leaf, dt)
        recomputed += end - start
        if adjoint is None:  # the last segment ends with the shortened step
            out = final_step(state, k_leaf)
            height = out.item()
        else:  # seed the end state with its adjoint: d(sum adjoint * state) = adjoint . d state
            out = sum(s * a for s, a in zip(state, adjoint))
        peak = max(peak, graph_size(out))
        out.backward()
        grad[2] += k_leaf.grad
        if index == 0:
            grad[0], grad[1] = v_leaf.grad, theta_leaf.grad
        else:
            adjoint = [np.zeros(s.shape) if s.grad is None else s.grad.copy() for s in begin]
    return CheckpointRun(height, grad, steps, every, len(checkpoints), peak, recomputed)
