"""A differentiable projectile: aim a ball at a hoop by gradient descent.

A ball is launched from height ``h0`` (default 0) with speed ``v`` at angle ``theta`` (radians).
Without air drag its height after travelling a horizontal distance ``x`` is

    y(x) = h0 + x tan(theta) - g x^2 / (2 v^2 cos^2(theta)).

Written with Tensor operations, ``y`` is differentiable in ``v`` and ``theta`` (and works
on whole batches of shots at once), so the engine can tune the shot to pass through the
hoop and Integrated Gradients can say how much of a change in height is due to each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from course_lib.tensor import Tensor

__all__ = [
    "G",
    "HOOP",
    "START_SHOT",
    "LEARNING_RATE",
    "height_at",
    "shot_height",
    "hoop_loss",
    "trajectory",
    "ShotHistory",
    "fit_shot",
]

Values = ArrayLike | Tensor
"""A number, an array of them or a Tensor: what the functions below accept."""

G = 9.81
"""Gravitational acceleration (m/s^2)."""
HOOP = (4.0, 3.1)
"""The hoop's horizontal distance and height (m)."""
START_SHOT = (10.0, math.pi / 6)
"""A shot that misses: 10 m/s at 30 degrees passes the hoop's distance at 1.26 m, far below it."""
LEARNING_RATE = 0.01
"""Step size for :func:`fit_shot` from :data:`START_SHOT` (the loss shrinks at every step)."""


def _tensor(value: Values) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(value)


def height_at(v: Values, theta: Values, x: Values = HOOP[0], h0: float = 0.0, g: float = G) -> Tensor:
    """Height of the ball at horizontal distance ``x``; ``v`` and ``theta`` may be batches."""
    v, theta, x = _tensor(v), _tensor(theta), _tensor(x)
    cos = theta.cos()
    return h0 + x * theta.sin() / cos - g * x**2 / (2 * v**2 * cos**2)


def shot_height(params: Values, x: Values = HOOP[0], h0: float = 0.0, g: float = G) -> Tensor:
    """:func:`height_at` for shots packed as ``params[..., 0] = v``, ``params[..., 1] = theta``.

    A single shot has shape ``(2,)``; a batch of ``m`` shots (e.g. Integrated Gradients'
    path points) has shape ``(m, 2)`` and gives ``m`` heights.
    """
    params = _tensor(params)
    return height_at(params[..., 0], params[..., 1], x, h0, g)


def hoop_loss(v: Values, theta: Values, h0: float = 0.0, g: float = G) -> Tensor:
    """Squared miss at the hoop: ``(y(HOOP[0]) - HOOP[1])^2``."""
    return (height_at(v, theta, HOOP[0], h0, g) - HOOP[1]) ** 2


def trajectory(
    v: Values, theta: Values, n: int = 100, h0: float = 0.0, g: float = G, x_max: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points ``(xs, ys)`` of the flight path as NumPy arrays, for plotting.

    By default the path runs from the launch to where the ball comes back to the ground
    (height 0); pass ``x_max`` to stop elsewhere.
    """
    v, theta = _tensor(v).item(), _tensor(theta).item()
    if v <= 0 or not -math.pi / 2 < theta < math.pi / 2:
        raise ValueError(
            f"need a speed v > 0 and an angle strictly between -pi/2 and pi/2 radians, got v={v}, theta={theta}"
        )
    if x_max is None:
        # Positive root of h0 + x tan(theta) - a x^2 = 0.
        a = g / (2 * v**2 * math.cos(theta) ** 2)
        tan = math.tan(theta)
        x_max = (tan + math.sqrt(tan**2 + 4 * a * max(h0, 0.0))) / (2 * a)
    xs = np.linspace(0.0, x_max, n)
    return xs, height_at(v, theta, xs, h0, g).data


@dataclass
class ShotHistory:
    """Iterates of :func:`fit_shot`: entry ``k`` is the shot after ``k`` steps."""

    v: np.ndarray
    theta: np.ndarray
    height: np.ndarray
    loss: np.ndarray
    converged: bool

    @property
    def steps(self) -> int:
        return len(self.v) - 1


def fit_shot(
    v0: float = START_SHOT[0],
    theta0: float = START_SHOT[1],
    lr: float = LEARNING_RATE,
    max_steps: int = 100,
    tol: float = 1e-3,
    h0: float = 0.0,
    height: Callable[[Tensor], Tensor] | None = None,
) -> ShotHistory:
    """Gradient descent on the squared miss at the hoop over ``(v, theta)`` until ``|y - HOOP[1]| < tol``.

    Each step builds the loss with the Tensor engine, runs ``backward()`` and moves both
    parameters against their gradient. Stops after ``max_steps`` steps at the latest
    (then ``converged`` is False). ``height(shot)`` gives the height at the hoop of the
    shot ``(v, theta)``; by default :func:`shot_height` (no drag; the simulated flight
    with drag passes its own, see :func:`course_lib.simulate.fit_shot_with_drag`).
    """
    height_of = height or (lambda shot: shot_height(shot, h0=h0))
    params = np.array([v0, theta0], dtype=float)
    rows = []
    for _ in range(max_steps + 1):
        shot = Tensor(params, requires_grad=True)
        y = height_of(shot)
        loss = (y - HOOP[1]) ** 2
        rows.append((*params, y.item(), loss.item()))
        if abs(y.item() - HOOP[1]) < tol:
            break
        loss.backward()
        assert shot.grad is not None  # backward() has just filled it
        params = params - lr * shot.grad
    v, theta, heights, losses = (np.array(column) for column in zip(*rows))
    return ShotHistory(v, theta, heights, losses, converged=bool(abs(heights[-1] - HOOP[1]) < tol))
