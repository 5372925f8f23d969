"""The loop primitive on chapter 11's flight: program sizes and speed, unrolled against scanned.

    python -m benchmarks.loop [--quick]

The first throw of chapter 11 (``START_SHOT`` with drag ``DRAG``: 49 Heun steps, then the
shortened last one) is flown four ways: the Python loop, unrolled by tracing (chapter 15's
``flight_height``); the same loop as one ``scan`` op (``simulate.scanned_hoop_height``),
its gradient storing every carry or every 7th (``checkpoint=7``); and ``jax.lax.scan`` under
``jax.jit`` for reference. It prints the programs' sizes (equations, at 49 and at 98 steps:
the scanned program does not grow) and the CPU time of the value and of the gradient
(with respect to speed, angle and drag), eagerly and through ``jit``, with the ratios, and
the peak memory of an eager gradient.
Every candidate is first checked to give the flight's height (and the gradient within 1e-12).
"""

from __future__ import annotations

import argparse

from benchmarks import workloads  # first: it pins every engine to one thread before NumPy is imported

# isort: split
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from course_lib.functional import grad
from course_lib.jit import jit
from course_lib.physics import START_SHOT
from course_lib.simulate import (
    DRAG,
    DT,
    G,
    final_step,
    heun_step,
    hoop_height,
    launch,
    peak_bytes,
    scanned_hoop_height,
    steps_before,
)
from course_lib.tensor import Tensor
from course_lib.trace import make_program

V0, THETA0 = START_SHOT
STEPS = steps_before(V0, THETA0, DRAG)
SHOT = (np.array(V0), np.array(THETA0), np.array(DRAG))
ARGS = (0, 1, 2)


def unrolled(v: Any, theta: Any, k: Any, steps: int = STEPS) -> Tensor:
    """Chapter 15's flight_height: the Python loop, unrolled when traced."""
    state = launch(v, theta)
    for _ in range(steps):
        state = heun_step(state, k, DT)
    return final_step(state, k)


def scanned(v: Any, theta: Any, k: Any, steps: int = STEPS, checkpoint: int = 1) -> Tensor:
    return scanned_hoop_height(v, theta, k, steps, checkpoint=checkpoint)


def checkpointed(v: Any, theta: Any, k: Any) -> Tensor:
    return scanned(v, theta, k, checkpoint=7)


def jax_flight() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The flight with ``jax.lax.scan``, and its gradient, both under ``jax.jit``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def acceleration(vx: Any, vy: Any, k: Any) -> tuple[Any, Any]:
        drag = k * jnp.sqrt(vx * vx + vy * vy)
        return -drag * vx, -G - drag * vy

    def step(state: Any, _: Any) -> tuple[Any, None]:
        x, y, vx, vy, k = state
        ax, ay = acceleration(vx, vy, k)
        ax2, ay2 = acceleration(vx + DT * ax, vy + DT * ay, k)
        half = 0.5 * DT
        new = (
            x + DT * vx + half * DT * ax,
            y + DT * vy + half * DT * ay,
            vx + half * (ax + ax2),
            vy + half * (ay + ay2),
        )
        return (*new, k), None

    def height(v: Any, theta: Any, k: Any) -> Any:
        start = (0.0 * v, 0.0 * v, v * jnp.cos(theta), v * jnp.sin(theta), k)
        (x, y, vx, vy, _), _ = jax.lax.scan(step, start, None, length=STEPS)
        ax, ay = acceleration(vx, vy, k)
        d = 4.0 - x
        tau = 2 * d / (vx + jnp.sqrt(vx * vx + 2 * ax * d))
        return y + tau * vy + 0.5 * tau * tau * ay

    return jax.jit(height), jax.jit(jax.grad(height, argnums=ARGS))


def sizes() -> dict[str, tuple[int, ...]]:
    """Equations of the value's and the gradient's program, at 49 and at 98 steps."""
    table = {}
    for name, f in (("unrolled", unrolled), ("scanned", scanned)):
        row = []
        for steps in (STEPS, 2 * STEPS):
            flown = lambda v, t, k, f=f, n=steps: f(v, t, k, n)  # noqa: E731
            row.append(len(make_program(flown, *SHOT).equations))
            row.append(len(make_program(grad(flown, argnum=ARGS), *SHOT).equations))
        table[name] = tuple(row)
    return table


def check(candidates: dict[str, Callable[[], Any]], height: float, gradient: np.ndarray) -> None:
    for name, fn in candidates.items():
        out = fn()
        if isinstance(out, tuple):
            values = np.array([float(g.item() if isinstance(g, Tensor) else g) for g in out])
            assert np.allclose(values, gradient, rtol=0, atol=1e-12), (name, values, gradient)
        else:
            value = float(out.item() if isinstance(out, Tensor) else out)
            assert abs(value - height) < 1e-12 and (name.startswith("jax") or value == height), (name, value, height)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier numbers)")
    rounds = 3 if parser.parse_args().quick else 7
    workloads.use_one_core()

    print(f"Chapter 11's flight: {STEPS} Heun steps and the shortened last one (float64, one core)\n")
    table = sizes()
    print(f"{'equations':22}{'value':>8}{'gradient':>10}{'value x2':>10}{'gradient x2':>13}   (x2: {2 * STEPS} steps)")
    for name, row in table.items():
        print(f"{name:22}" + "".join(f"{n:>{w},}" for n, w in zip(row, (8, 10, 10, 13))))
    print(f"{'ratio':22}" + "".join(f"{a / b:>{w}.0f}x" for a, b, w in zip(*table.values(), (7, 9, 9, 12))))

    height = hoop_height(V0, THETA0, DRAG).item()
    gradient = np.array([g.item() for g in grad(unrolled, argnum=ARGS)(*SHOT)])
    value_of: dict[str, Callable[[], Any]] = {
        "unrolled, eager": lambda: unrolled(*SHOT),
        "scanned, eager": lambda: scanned(*SHOT),
        "unrolled, jit": partial(jit(unrolled), *SHOT),
        "scanned, jit": partial(jit(scanned), *SHOT),
    }
    gradient_of: dict[str, Callable[[], Any]] = {
        "unrolled, eager": lambda: grad(unrolled, argnum=ARGS)(*SHOT),
        "scanned, eager": lambda: grad(scanned, argnum=ARGS)(*SHOT),
        "checkpoint=7, eager": lambda: grad(checkpointed, argnum=ARGS)(*SHOT),
        "unrolled, jit": partial(jit(grad(unrolled, argnum=ARGS)), *SHOT),
        "scanned, jit": partial(jit(grad(scanned, argnum=ARGS)), *SHOT),
        "checkpoint=7, jit": partial(jit(grad(checkpointed, argnum=ARGS)), *SHOT),
    }
    try:
        jax_value, jax_gradient = jax_flight()
        value_of["jax.lax.scan, jax.jit"] = lambda: float(jax_value(*SHOT))
        gradient_of["jax.lax.scan, jax.jit"] = lambda: tuple(float(g) for g in jax_gradient(*SHOT))
    except ImportError:
        print("(JAX is not installed: no reference row)")
    check(value_of, height, gradient)
    check(gradient_of, height, gradient)

    print("\nPeak memory of one eager gradient (tracemalloc; the unrolled graph against the stored carries)")
    for name in ("unrolled, eager", "scanned, eager", "checkpoint=7, eager"):
        gradient_of[name]()  # warm: compiled loops are cached
        print(f"{name:24}{peak_bytes(gradient_of[name])[1] / 1024:>10.0f} KiB")

    number = 5
    print(f"\nCPU time per call (best of {rounds} rounds of {number}); ratio: unrolled eager / this")
    for title, candidates in (("value", value_of), ("gradient", gradient_of)):
        times = workloads.best_times(candidates, number=number, rounds=rounds)
        base = times["unrolled, eager"]
        print(f"\n{title:24}{'ms':>10}{'ratio':>9}")
        for name, seconds in times.items():
            print(f"{name:24}{seconds * 1e3:>10.3f}{base / seconds:>8.1f}x")


if __name__ == "__main__":
    main()
