"""The loop primitive in the differential fuzzer: random scan bodies, run by ``scan`` eagerly,
through ``jit``, ``grad`` and ``vmap``, against the unrolled Python loop and ``jax.lax.scan``.

A body is a few steps over a growing list of values: the carry's leaves (shapes ``(2,)`` or
``()``), ``x`` (``(2,)``) and ``w``, a Tensor the body closes over (gradients reach it).
It returns a new carry (a ``tanh`` of chosen values, so the loop stays bounded, fitted to
the carry's shapes) and a ``y`` (a value or None). The loop's length and ``checkpoint`` are
drawn too. The number of bodies follows the compiled-path fuzzer's ``FUZZ_EXAMPLES``
(``make fuzz`` runs many more).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compiled_fuzz import EXAMPLES, FUZZ

from course_lib.functional import grad
from course_lib.jit import jit
from course_lib.loop import scan
from course_lib.tensor import Tensor, stack
from course_lib.vmap import vmap

BODIES = settings(FUZZ, max_examples=max(1, EXAMPLES // 2))
JAX_BODIES = settings(FUZZ, max_examples=max(1, EXAMPLES // 6))  # a jax.jit compilation each

UNARY = ["tanh", "sin", "cos", "neg", "exp_tanh", "sqrt", "square", "sum", "relu", "abs", "clip", "max"]
"""Among them ops whose gradient is a mask of the step's values (relu, abs, clip, max): a body
traced once must not keep the first step's mask."""
BINARY = ["add", "sub", "mul", "div"]


def unary(name: str, a: Any, np_: Any) -> Any:
    """``np_`` is None for Tensors, else ``jax.numpy``."""
    f = {
        "tanh": lambda: a.tanh() if np_ is None else np_.tanh(a),
        "sin": lambda: a.sin() if np_ is None else np_.sin(a),
        "cos": lambda: a.cos() if np_ is None else np_.cos(a),
        "neg": lambda: -a,
        "exp_tanh": lambda: a.tanh().exp() if np_ is None else np_.exp(np_.tanh(a)),
        "sqrt": lambda: (a * a + 0.5).sqrt() if np_ is None else np_.sqrt(a * a + 0.5),
        "square": lambda: a * a,
        "sum": lambda: a.sum(),
        "relu": lambda: a.relu() if np_ is None else np_.maximum(a, 0.0),
        "abs": lambda: a.abs() if np_ is None else np_.abs(a),
        "clip": lambda: a.clip(-0.5, 0.7) if np_ is None else np_.clip(a, -0.5, 0.7),
        "max": lambda: a.max() if np_ is None else np_.max(a),
    }[name]
    return f()


def binary(name: str, a: Any, b: Any) -> Any:
    return {"add": a + b, "sub": a - b, "mul": a * b}[name] if name != "div" else a / (b * b + 1.0)


@st.composite
def bodies(draw: Any) -> dict[str, Any]:
    carry = [draw(st.sampled_from([(2,), ()])) for _ in range(draw(st.integers(1, 2)))]
    shapes = [*carry, (2,), (2,)]  # carry leaves, x, w
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        a = draw(st.integers(0, len(shapes) - 1))
        if draw(st.booleans()):
            name = draw(st.sampled_from(UNARY))
            steps.append(("unary", name, a))
            shapes.append(() if name in ("sum", "max") else shapes[a])
        else:
            b = draw(st.integers(0, len(shapes) - 1))
            steps.append(("binary", draw(st.sampled_from(BINARY)), a, b))
            shapes.append(tuple(np.broadcast_shapes(shapes[a], shapes[b])))
    new_carry = [draw(st.integers(0, len(shapes) - 1)) for _ in carry]
    y = draw(st.one_of(st.none(), st.integers(0, len(shapes) - 1)))
    length = draw(st.integers(1, 6))
    checkpoint = draw(st.sampled_from([k for k in range(1, length + 1) if length % k == 0]))
    return {"carry": carry, "shapes": shapes, "steps": steps, "new": new_carry, "y": y, "length": length,
            "checkpoint": checkpoint}  # fmt: skip


def make_body(spec: dict[str, Any], w: Any, np_: Any = None) -> Callable[[Any, Any], Any]:
    def fit(v: Any, shape: tuple[int, ...]) -> Any:
        v = v.tanh() if np_ is None else np_.tanh(v)
        if np.shape(v) == shape:
            return v
        if shape == ():
            return v.sum()
        return v.broadcast_to(shape) if np_ is None else np_.broadcast_to(v, shape)

    def body(carry: Any, x: Any) -> Any:
        values = [*carry, x, w]
        for step in spec["steps"]:
            if step[0] == "unary":
                values.append(unary(step[1], values[step[2]], np_))
            else:
                values.append(binary(step[1], values[step[2]], values[step[3]]))
        new = [fit(values[i], s) for i, s in zip(spec["new"], spec["carry"])]
        return new, None if spec["y"] is None else values[spec["y"]] * 1.0

    return body


def inputs(spec: dict[str, Any], seed: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    init = [rng.normal(size=s) for s in spec["carry"]]
    return init, rng.normal(size=(spec["length"], 2)), rng.normal(size=2)


def scanned(spec: dict[str, Any]) -> Callable[..., Tensor]:
    """The loss: the final carry and the ys, summed with weights (so every output counts)."""

    def loss(init: Any, xs: Any, w: Any) -> Tensor:
        w = w if isinstance(w, Tensor) else Tensor(w)
        carry, ys = scan(make_body(spec, w), list(init), xs, checkpoint=spec["checkpoint"])
        total = sum(((k + 1.0) * c).sum() for k, c in enumerate(carry))
        return total if ys is None else total + (ys * 0.5).sum()

    return loss


def unrolled(spec: dict[str, Any]) -> Callable[..., Tensor]:
    def loss(init: Any, xs: Any, w: Any) -> Tensor:
        xs, w = (a if isinstance(a, Tensor) else Tensor(a) for a in (xs, w))
        body, carry, ys = make_body(spec, w), list(init), []
        for t in range(spec["length"]):
            carry, y = body(carry, xs[t])
            ys.append(y)
        total = sum(((k + 1.0) * c).sum() for k, c in enumerate(carry))
        return total if spec["y"] is None else total + (stack(ys) * 0.5).sum()

    return loss


def as_tensors(init: list[np.ndarray], xs: np.ndarray, w: np.ndarray) -> tuple[list[Tensor], Tensor, Tensor]:
    return [Tensor(c, requires_grad=True) for c in init], Tensor(xs, requires_grad=True), Tensor(w, requires_grad=True)


def gradients_of(loss: Callable[..., Tensor], init: Any, xs: Any, w: Any) -> list[np.ndarray]:
    init_t, xs_t, w_t = as_tensors(init, xs, w)
    loss(init_t, xs_t, w_t).backward()
    return [t.grad if t.grad is not None else np.zeros(t.shape) for t in [*init_t, xs_t, w_t]]


@BODIES
@given(bodies(), st.integers(0, 2**32 - 1))
def test_scan_equals_the_unrolled_loop(spec: dict[str, Any], seed: int) -> None:
    init, xs, w = inputs(spec, seed)
    ours, theirs = scanned(spec), unrolled(spec)
    value = ours(*as_tensors(init, xs, w)).item()
    assert value == theirs(*as_tensors(init, xs, w)).item()
    for a, b in zip(gradients_of(ours, init, xs, w), gradients_of(theirs, init, xs, w)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    # jit: the same bits as the eager scan, for the value and the gradient
    assert jit(ours)(init, xs, w).item() == value
    for a, b in zip(jit(grad(ours, (1, 2), True))(init, xs, w), grad(ours, (1, 2), True)(init, xs, w)):
        np.testing.assert_array_equal(a.data, b.data)


@BODIES
@given(bodies(), st.integers(0, 2**32 - 1))
def test_vmap_of_scan_equals_the_loop_over_examples(spec: dict[str, Any], seed: int) -> None:
    init, xs, w = inputs(spec, seed)
    batch = np.stack([xs, xs * 0.5, -xs])
    ws = np.stack([w, -w, w * 2.0])
    loss = scanned(spec)
    values = vmap(loss, in_axes=(None, 0, 0))(init, batch, ws)
    np.testing.assert_array_equal(values.data, [loss(init, x, v).item() for x, v in zip(batch, ws)])
    per_example = vmap(grad(loss, 2, True), in_axes=(None, 0, None))(init, batch, w)
    for x, g in zip(batch, per_example.data):
        np.testing.assert_allclose(g, grad(loss, 2, True)(init, x, w).data, rtol=1e-12, atol=1e-13)


@JAX_BODIES
@given(bodies(), st.integers(0, 2**32 - 1))
def test_scan_agrees_with_jax_lax_scan(spec: dict[str, Any], seed: int) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    init, xs, w = inputs(spec, seed)

    def reference(init: Any, xs: Any, w: Any) -> Any:
        carry, ys = jax.lax.scan(make_body(spec, w, jnp), list(init), xs)
        total = sum(((k + 1.0) * c).sum() for k, c in enumerate(carry))
        return total if ys is None else total + (ys * 0.5).sum()

    value, grads = jax.jit(jax.value_and_grad(reference, argnums=(0, 1, 2)))(init, xs, w)
    ours = scanned(spec)
    np.testing.assert_allclose(ours(*as_tensors(init, xs, w)).item(), float(value), rtol=1e-12, atol=1e-12)
    theirs = [*grads[0], grads[1], grads[2]]
    for a, b in zip(gradients_of(ours, init, xs, w), theirs):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-12)
