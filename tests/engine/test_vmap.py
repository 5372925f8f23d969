"""vmap, linearize-and-transpose, and the op table's generic test of tracing, compiling,
batching, JVP and transpose rules for every op."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_samples import SAMPLES

from course_lib.functional import grad, jvp
from course_lib.ig import integrated_gradients, quadrature
from course_lib.jit import jit
from course_lib.linearize import JVP, LINEAR, linearize, transpose
from course_lib.loop import HIGHER_ORDER
from course_lib.nn import cross_entropy
from course_lib.program import evaluate
from course_lib.tensor import OPS, Tensor, affine
from course_lib.trace import make_program
from course_lib.vmap import BATCHING, vmap

OPS_UNDER_TEST = sorted(  # scan: test_loop.py; take and put: test_take.py
    name for name in OPS if name not in ("first_order", "take", "put", *HIGHER_ORDER)
)
DIFFERENTIABLE = [op for op in OPS_UNDER_TEST if op != "detach"]  # reverse mode stops at detach: no J t to compare
RNG = np.random.default_rng(0)
W1, B1, W2, B2 = RNG.normal(size=(4, 8)), RNG.normal(size=8), RNG.normal(size=(8, 3)), RNG.normal(size=3)


def sample(op: str, seed: int) -> tuple[list[np.ndarray], Any]:
    arrays, params = SAMPLES[op](np.random.default_rng(seed))
    return arrays, lambda *xs: OPS[op].call(*xs, **params)


def batch_of(arrays: list[np.ndarray], size: int = 3) -> list[np.ndarray]:
    """``size`` examples of each argument, inside the op's domain (positive scalings)."""
    return [np.stack([a * (1.0 + 0.1 * k) for k in range(size)]) for a in arrays]


@pytest.mark.parametrize("op", OPS_UNDER_TEST)
def test_every_op_traces_compiles_and_batches(op: str) -> None:
    assert op in BATCHING and op in JVP, f"op {op!r} needs a batching rule and a JVP rule"
    for seed in range(3):
        arrays, f = sample(op, seed)
        eager = f(*map(Tensor, arrays)).data
        program = make_program(f, *arrays)
        np.testing.assert_array_equal(evaluate(program, *arrays)[0], eager)  # the same float operations
        np.testing.assert_array_equal(jit(f)(*arrays).data, eager)
        batch = batch_of(arrays)
        loop = np.stack([f(*(Tensor(b[k]) for b in batch)).data for k in range(3)])
        np.testing.assert_allclose(vmap(f)(*batch).data, loop, rtol=1e-13, atol=1e-15)
        shared = [batch[0]] + arrays[1:]  # only the first argument carries a batch
        loop = np.stack([f(Tensor(batch[0][k]), *map(Tensor, arrays[1:])).data for k in range(3)])
        axes = (0,) + (None,) * (len(arrays) - 1)
        np.testing.assert_allclose(vmap(f, in_axes=axes)(*shared).data, loop, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("op", DIFFERENTIABLE)
def test_every_ops_jvp_and_its_transpose(op: str) -> None:
    """The linear program equals reverse mode's J t, and its transpose passes the dot-product
    test <u, J t> = <J^T u, t> (for a linear op, that checks its transpose rule: its VJP)."""
    rng = np.random.default_rng(1)
    for seed in range(2):
        arrays, f = sample(op, seed)
        tangents = [rng.normal(size=a.shape) for a in arrays]
        (value,), linear = linearize(f, *arrays)
        np.testing.assert_array_equal(value, f(*map(Tensor, arrays)).data)
        (jt,) = evaluate(linear, *tangents)
        np.testing.assert_allclose(jt, jvp(f, arrays, tangents)[1].data, rtol=1e-10, atol=1e-12)
        u = rng.normal(size=jt.shape)
        pulled = evaluate(transpose(linear), u)
        assert np.sum(u * jt) == pytest.approx(sum(np.sum(p * t) for p, t in zip(pulled, tangents)), rel=1e-10)
        if op in LINEAR:  # J is the op itself
            np.testing.assert_allclose(jt, f(*map(Tensor, tangents)).data, rtol=1e-12, atol=1e-14)


def test_a_missing_batching_rule_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(BATCHING, "sin")
    with pytest.raises(NotImplementedError, match=r"vmap: op 'sin' has no batching rule"):
        vmap(lambda x: x.sin())(np.ones((2, 3)))
    shared_sin = vmap(lambda x, y: x.sin() * y, in_axes=(None, 0))(np.ones(3), np.ones((2, 3)))
    np.testing.assert_array_equal(shared_sin.data, np.full((2, 3), np.sin(1.0)))  # sin of no batch: no rule needed


def example_loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor, onehot: Tensor) -> Tensor:
    """The cross-entropy of one example (one-hot labels: integer arrays are static to tracing)."""
    return -(affine(affine(x, w1, b1).relu(), w2, b2).log_softmax() * onehot).sum()


PER_EXAMPLE = grad(example_loss, argnum=(0, 1, 2, 3))
X = RNG.normal(size=(64, 4))
ONEHOT = np.eye(3)[RNG.integers(0, 3, 64)]


def test_per_example_gradients_equal_a_loop_over_examples() -> None:
    batched = vmap(PER_EXAMPLE, in_axes=(None, None, None, None, 0, 0))(W1, B1, W2, B2, X, ONEHOT)
    for k, g in enumerate(batched):
        loop = np.stack([PER_EXAMPLE(W1, B1, W2, B2, X[i], ONEHOT[i])[k].data for i in range(64)])
        np.testing.assert_allclose(g.data, loop, rtol=1e-13, atol=1e-15)
    compiled = jit(vmap(PER_EXAMPLE, in_axes=(None, None, None, None, 0, 0)))(W1, B1, W2, B2, X, ONEHOT)
    for a, b in zip(compiled, batched):
        np.testing.assert_array_equal(a.data, b.data)


def test_per_example_gradients_against_torch_func_vmap() -> None:
    torch = pytest.importorskip("torch")
    from torch.func import grad as tgrad
    from torch.func import vmap as tvmap

    def torch_loss(params, x, onehot):  # type: ignore[no-untyped-def]
        w1, b1, w2, b2 = params
        return -(torch.log_softmax(torch.relu(x @ w1 + b1) @ w2 + b2, -1) * onehot).sum()

    params = tuple(torch.tensor(p) for p in (W1, B1, W2, B2))
    theirs = tvmap(tgrad(torch_loss), in_dims=(None, 0, 0))(params, torch.tensor(X), torch.tensor(ONEHOT))
    ours = vmap(PER_EXAMPLE, in_axes=(None, None, None, None, 0, 0))(W1, B1, W2, B2, X, ONEHOT)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.data, b.numpy(), rtol=1e-10, atol=1e-13)


def test_nested_vmap_against_jax_vmap() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    a, b = RNG.normal(size=(3, 5)), RNG.normal(size=(4, 5))
    ours = vmap(vmap(lambda x, y: (x * y).sum().sin(), in_axes=(None, 0)), in_axes=(0, None))(a, b)
    theirs = jax.vmap(jax.vmap(lambda x, y: jax.numpy.sin((x * y).sum()), (None, 0)), (0, None))(a, b)
    assert ours.shape == (3, 4)
    np.testing.assert_allclose(ours.data, theirs, rtol=1e-13)
    closed = vmap(lambda x: vmap(lambda y: x @ y)(b))(a)  # the inner function closes over the outer batch
    np.testing.assert_allclose(closed.data, a @ b.T, rtol=1e-13)


@settings(max_examples=15, deadline=None, database=None)
@given(st.integers(0, 2), st.integers(1, 4), st.integers(1, 4))
def test_in_axes_and_out_axes_move_the_batch(axis: int, n: int, m: int) -> None:
    x = np.random.default_rng(axis * 16 + n * 4 + m).normal(size=(2, n, m))
    x = np.moveaxis(x, 0, axis)
    out = vmap(lambda v: v.exp() * 2.0, in_axes=axis, out_axes=1)(x)
    np.testing.assert_array_equal(out.data, np.moveaxis(np.exp(np.moveaxis(x, axis, 0)) * 2.0, 0, 1))


def test_vmap_errors() -> None:
    with pytest.raises(ValueError, match="at least one batched argument"):
        vmap(lambda x: x, in_axes=None)(np.ones(2))
    with pytest.raises(ValueError, match="one batch size"):
        vmap(lambda x, y: x + y)(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="in_axes has 1 entries"):
        vmap(lambda x, y: x + y, in_axes=(0,))(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="in_axes 2 is out of range"):
        vmap(lambda x, labels: cross_entropy(x, labels), in_axes=(0, 2))(np.ones((2, 1, 3)), np.zeros((2, 1), int))


def test_integer_labels_carry_a_batch_one_program_per_value() -> None:
    logits, labels = np.arange(12.0).reshape(4, 1, 3) / 7.0, np.array([[0], [2], [0], [1]])
    batched = vmap(lambda x, k: cross_entropy(x, k))(logits, labels)
    assert np.array_equal(batched.data, [cross_entropy(Tensor(x), k).data for x, k in zip(logits, labels)])


def test_integrated_gradients_with_the_path_points_batched_by_vmap() -> None:
    def probabilities(x: Tensor) -> Tensor:
        return affine(affine(x, W1, B1).tanh(), W2, B2).softmax()

    x = X[0]
    alphas, weights = quadrature("gausslegendre", 16)
    grads = vmap(grad(lambda point: probabilities(point)[0]))(alphas[:, None] * x)  # every path point at once
    attribution = x * (weights @ grads.data)
    expected = integrated_gradients(probabilities, x, np.zeros(4), steps=16, method="gausslegendre", target=0)
    np.testing.assert_allclose(attribution, expected, rtol=1e-12, atol=1e-15)


def test_reverse_mode_is_forward_mode_transposed_on_the_mlp() -> None:
    labels = RNG.integers(0, 3, 16)

    def loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
        return cross_entropy(affine(affine(X[:16], w1, b1).relu(), w2, b2), labels)

    (value,), linear = linearize(loss, W1, B1, W2, B2)
    assert {e.op for e in linear.equations} <= {*LINEAR, "mul", "matmul"}  # a linear program
    cotangents = evaluate(transpose(linear), np.ones(()))
    gradient_program = make_program(grad(loss, argnum=(0, 1, 2, 3)), W1, B1, W2, B2)
    for a, b in zip(cotangents, evaluate(gradient_program, W1, B1, W2, B2)):
        np.testing.assert_array_equal(a, b)  # the same numbers as the gradient program
