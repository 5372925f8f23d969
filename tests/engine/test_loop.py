"""``course_lib.loop``: scan and fori_loop against the unrolled Python loop (bit for bit
where the float operations are the same) and against ``jax.lax.scan`` (within 1e-12)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from course_lib.functional import grad
from course_lib.jit import jit
from course_lib.loop import Loop, fori_loop, scan
from course_lib.physics import START_SHOT
from course_lib.program import evaluate
from course_lib.simulate import DRAG, DT, final_step, heun_step, hoop_height, launch, scanned_hoop_height, steps_before
from course_lib.tensor import Tensor, stack
from course_lib.trace import make_program
from course_lib.vmap import vmap

RNG = np.random.default_rng(29)
XS = RNG.normal(size=(6, 2))
W = RNG.normal(size=2)
C0 = np.array([0.3, -0.2])


def step(w: Any) -> Any:
    """A body closing over ``w``: the carry is a pair, y a dict (pytrees in and out)."""

    def body(carry: Any, x: Any) -> Any:
        h, s = carry
        h = (h * w + x).tanh() + 0.5 * h
        return (h, s + (h * h).sum()), {"h": h, "sin": (x * w).sin().sum()}

    return body


def scanned(c: Any, xs: Any, w: Any, checkpoint: int = 1) -> Tensor:
    (h, s), ys = scan(step(w), (c, 0.0), xs, checkpoint=checkpoint)
    return s + (h * ys["h"]).sum() + ys["sin"].sum() * 0.5


def unrolled(c: Any, xs: Any, w: Any) -> Tensor:
    xs, w = (a if isinstance(a, Tensor) else Tensor(a) for a in (xs, w))
    carry, ys = (c, Tensor(0.0)), []
    for t in range(len(xs)):
        carry, y = step(w)(carry, xs[t])
        ys.append(y)
    h, s = carry
    return s + (h * stack([y["h"] for y in ys])).sum() + stack([y["sin"] for y in ys]).sum() * 0.5


def args() -> tuple[Tensor, Tensor, Tensor]:
    return tuple(Tensor(a, requires_grad=True) for a in (C0, XS, W))  # type: ignore[return-value]


@pytest.mark.parametrize("checkpoint", [1, 2, 3, 6])
def test_value_and_gradient_equal_the_unrolled_loop(checkpoint: int) -> None:
    """The same bits for the value; the gradient sums a value's uses in another order (x and w
    are used twice a step), so its last bit may differ."""
    ours, theirs = args(), args()
    out = scanned(*ours, checkpoint=checkpoint)
    ref = unrolled(*theirs)
    assert out.item() == ref.item()
    out.backward()
    ref.backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-14, atol=1e-15)


def test_gradient_is_bit_for_bit_when_each_value_is_used_once_a_step() -> None:
    """(Checkpointing sums w's gradient segment by segment: its last bit may differ.)"""

    def body(c: Tensor, x: Tensor) -> Any:
        h = (c * w + x).tanh()
        return h, (h * h).sum()

    results = []
    for scanning in (True, False):
        w, c, xs = Tensor(W, requires_grad=True), Tensor(C0, requires_grad=True), Tensor(XS, requires_grad=True)
        if scanning:
            h, ys = scan(body, c, xs)
        else:
            h, rows = c, []
            for t in range(len(XS)):
                h, y = body(h, xs[t])
                rows.append(y)
            ys = stack(rows)
        (h.sum() + (ys * ys).sum()).backward()
        results.append([h.data, ys.data, c.grad, xs.grad, w.grad])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def test_scan_returns_the_carry_and_the_stacked_ys() -> None:
    (h, s), ys = scan(step(Tensor(W)), (C0, 0.0), XS)
    carry, rows = (Tensor(C0), Tensor(0.0)), []
    for x in XS:
        carry, y = step(Tensor(W))(carry, x)
        rows.append(y)
    assert np.array_equal(h.data, carry[0].data) and s.item() == carry[1].item()
    assert set(ys) == {"h", "sin"} and ys["h"].shape == (6, 2)
    assert np.array_equal(ys["h"].data, stack([y["h"] for y in rows]).data)


def test_the_program_is_one_scan_whatever_the_length() -> None:
    sizes = {}
    for length in (3, 30):
        xs = RNG.normal(size=(length, 2))
        program = make_program(scanned, C0, xs, W)
        assert [e.op for e in program.equations].count("scan") == 1
        sizes[length] = (
            len(program.equations),
            len(make_program(grad(scanned, argnum=(0, 1, 2)), C0, xs, W).equations),
        )
        (value,) = evaluate(program, C0, xs, W)
        assert float(value) == unrolled(Tensor(C0), Tensor(xs), Tensor(W)).item()
    assert sizes[3] == sizes[30]
    assert "scan[length=3; body=" in str(make_program(scanned, C0, XS[:3], W))


def test_jit_generates_a_loop_and_gives_the_same_bits() -> None:
    jitted = jit(scanned)
    assert jitted(C0, XS, W).item() == unrolled(Tensor(C0), Tensor(XS), Tensor(W)).item()
    assert "for " in jitted.source(C0, XS, W)
    gradient = jit(grad(scanned, argnum=(0, 1, 2)))(C0, XS, W)
    for a, b in zip(gradient, grad(scanned, argnum=(0, 1, 2))(C0, XS, W)):
        np.testing.assert_array_equal(a.data, b.data)


def test_vmap_batches_the_body() -> None:
    cs, xss, ws = RNG.normal(size=(4, 2)), RNG.normal(size=(4, 6, 2)), RNG.normal(size=(4, 2))
    for in_axes in [(0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0)]:
        batched = vmap(scanned, in_axes=in_axes)(
            cs if in_axes[0] == 0 else C0, xss if in_axes[1] == 0 else XS, ws if in_axes[2] == 0 else W
        )
        pick = [
            lambda i, a=a, d=d, ax=ax: a[i] if ax == 0 else d for a, d, ax in zip((cs, xss, ws), (C0, XS, W), in_axes)
        ]
        loop = [unrolled(*(Tensor(p(i)) for p in pick)).item() for i in range(4)]
        np.testing.assert_array_equal(batched.data, loop)
    per_example = vmap(grad(scanned, argnum=2), in_axes=(None, 0, None))(C0, xss, W)
    for i in range(4):
        np.testing.assert_allclose(per_example.data[i], grad(unrolled, argnum=2)(C0, xss[i], W).data, rtol=1e-14)


def test_second_derivatives_go_through_the_backward_scan() -> None:
    def hvp(c: Tensor) -> Tensor:
        return grad(lambda c: grad(scanned)(c, XS, W).sum())(c)

    def hvp_unrolled(c: Tensor) -> Tensor:
        return grad(lambda c: grad(unrolled)(c, XS, W).sum())(c)

    np.testing.assert_allclose(hvp(C0).data, hvp_unrolled(C0).data, rtol=1e-13, atol=1e-15)


def jax_scanned(c: Any, xs: Any, w: Any) -> Any:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def body(carry: Any, x: Any) -> Any:
        h, s = carry
        h = jnp.tanh(h * w + x) + 0.5 * h
        return (h, s + (h * h).sum()), {"h": h, "sin": jnp.sin(x * w).sum()}

    (h, s), ys = jax.lax.scan(body, (c, 0.0), xs)
    return s + (h * ys["h"]).sum() + ys["sin"].sum() * 0.5


def test_value_and_gradient_agree_with_jax_lax_scan() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    value, grads = jax.value_and_grad(jax_scanned, argnums=(0, 1, 2))(C0, XS, W)
    assert abs(scanned(C0, XS, W).item() - float(value)) < 1e-12
    for ours, theirs in zip(grad(scanned, argnum=(0, 1, 2))(C0, XS, W), grads):
        np.testing.assert_allclose(ours.data, np.asarray(theirs), rtol=0, atol=1e-12)


def test_fori_loop_agrees_with_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def ours(x: Any) -> Tensor:
        return fori_loop(1, 8, lambda i, c: (c * 0.9 + i * x).sin(), x).sum()

    def theirs(x: Any) -> Any:
        return jax.lax.fori_loop(1, 8, lambda i, c: jax.numpy.sin(c * 0.9 + i * x), x).sum()

    x = np.array([0.2, -0.7, 1.1])
    assert abs(ours(x).item() - float(theirs(x))) < 1e-12
    np.testing.assert_allclose(grad(ours)(x).data, np.asarray(jax.grad(theirs)(x)), rtol=0, atol=1e-12)


def test_the_scanned_flight_is_chapter_11s_flight() -> None:
    v0, theta0 = START_SHOT
    steps = steps_before(v0, theta0, DRAG)
    shot = (np.array(v0), np.array(theta0), np.array(DRAG))
    assert scanned_hoop_height(*shot, steps).item() == hoop_height(v0, theta0, DRAG).item() == 1.1648801421613033

    def unrolled_flight(v: Any, theta: Any, k: Any) -> Tensor:
        state = launch(v, theta)
        for _ in range(steps):
            state = heun_step(state, k, DT)
        return final_step(state, k)

    def flight(v: Any, theta: Any, k: Any) -> Tensor:
        return scanned_hoop_height(v, theta, k, steps)

    program, gradient = make_program(flight, *shot), make_program(grad(flight, argnum=(0, 1, 2)), *shot)
    assert (len(program.equations), len(gradient.equations)) == (37, 132)  # unrolled: 1,792 and 4,396
    assert len(make_program(unrolled_flight, *shot).equations) == 1792
    assert float(evaluate(program, *shot)[0]) == hoop_height(v0, theta0, DRAG).item()
    ours, theirs = grad(flight, argnum=(0, 1, 2))(*shot), grad(unrolled_flight, argnum=(0, 1, 2))(*shot)
    np.testing.assert_allclose([g.item() for g in ours], [g.item() for g in theirs], rtol=1e-14)
    checkpointed = grad(lambda v, t, k: scanned_hoop_height(v, t, k, steps, checkpoint=7), argnum=(0, 1, 2))(*shot)
    np.testing.assert_allclose([g.item() for g in checkpointed], [g.item() for g in ours], rtol=1e-14)


def test_checkpointing_stores_every_kth_carry() -> None:
    program = make_program(lambda c: scan(lambda c, x: (c * x, None), c, XS, checkpoint=3)[0], C0)
    (loop,) = [e.params[0] for e in program.equations if e.op == "scan"]
    assert isinstance(loop, Loop) and loop.layout()[-1][1] == (2, 2)  # 6 steps / 3: two stored carries of shape (2,)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: scan(lambda c, x: (c.sum(), x), Tensor(C0), XS), "carry leaf 0 has shape (2,) in init but the body"),
        (lambda: scan(lambda c, x: ((c, c), x), Tensor(C0), XS), "another structure than init"),
        (lambda: scan(lambda c, x: (1, x), Tensor(C0), XS), "init is T, the body returned 1"),
        (lambda: scan(lambda c, x: c, Tensor(C0), XS), "must return a pair (new_carry, y)"),
        (lambda: scan(lambda c, x: (c, 2.0), Tensor(C0), XS), "y must be Tensors"),
        (lambda: scan(lambda c, x: (c, x), C0, (XS, XS[:4])), "same length"),
        (lambda: scan(lambda c, x: (c, x), C0, XS, length=5), "same length"),
        (lambda: scan(lambda c, x: (c, x), C0), "say how many steps to run"),
        (lambda: scan(lambda c, x: (c, x), C0, length=0), "at least one step"),
        (lambda: scan(lambda c, x: (c, x), C0, XS, checkpoint=4), "checkpoint=4 must be a positive int dividing"),
        (lambda: scan(lambda c, x: (c, x), "a", XS), "leaf of type str"),
        (lambda: fori_loop(0, 2.5, lambda i, c: c, C0), "lower and upper must be ints"),
    ],
)
def test_errors_say_what_is_wrong(call: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError)) as error:
        call()
    assert message in str(error.value)


def test_python_control_flow_in_the_body_is_refused() -> None:
    from course_lib.trace import TracingError

    with pytest.raises(TracingError, match="Python control flow"):
        scan(lambda c, x: (c * 2.0 if c.sum() else c, None), Tensor(C0), XS)


def test_an_eager_scan_compiles_its_body_once_and_tells_bodies_apart() -> None:
    def loop_of(low: float) -> Loop:
        program = make_program(lambda c: scan(lambda c, x: (c.clip(low, 1.0) + x, None), c, XS)[0], C0)
        return program.equations[0].params[0]

    first, again, other = loop_of(0.0), loop_of(0.0), loop_of(-0.0)
    assert first is not again and first.fingerprint() == again.fingerprint() != other.fingerprint()
    assert first.runner() is again.runner() is not other.runner()


def test_a_scan_inside_a_scan_body() -> None:
    xss = RNG.normal(size=(4, 3, 2))

    def nested(c: Any, xss: Any) -> Tensor:
        def inner(c: Tensor, xs: Tensor) -> Tensor:
            return scan(lambda c, x: ((c * x).sin() + c, None), c, xs)[0]

        c, ys = scan(lambda c, xs: (inner(c, xs), c.sum()), c, xss)
        return c.sum() + ys.sum()

    def unrolled_nested(c: Any, xss: Any) -> Tensor:
        total = Tensor(0.0)
        for xs in xss:
            total = total + c.sum()
            for x in xs:
                c = (c * x).sin() + c
        return c.sum() + total

    program = make_program(nested, C0, xss)
    assert [e.op for e in program.equations].count("scan") == 1
    value = unrolled_nested(Tensor(C0), Tensor(xss)).item()
    assert nested(C0, xss).item() == jit(nested)(C0, xss).item()
    assert abs(nested(C0, xss).item() - value) < 1e-13
    expected = grad(unrolled_nested)(C0, xss).data
    np.testing.assert_allclose(grad(nested)(C0, xss).data, expected, rtol=1e-13)
    np.testing.assert_allclose(
        vmap(grad(nested), in_axes=(0, None))(np.stack([C0, C0]), xss).data[1], expected, rtol=1e-13
    )


def test_linearize_says_scan_has_no_jvp_rule_yet() -> None:
    from course_lib.linearize import linearize

    with pytest.raises(NotImplementedError, match="op 'scan' has no JVP rule"):
        linearize(lambda c: scan(lambda c, x: (c * x, None), c, XS)[0], C0)
