"""Property tests: course_lib.tensor against PyTorch (float64) on random shapes and values.

Every op is checked for its value and its VJP (a random cotangent of the output's shape),
with broadcasting wherever the op broadcasts; second-order checks compare
Hessian-vector products with ``torch.autograd.grad(..., create_graph=True)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_lib.tensor import Tensor, affine, gradients, stack, where

torch = pytest.importorskip("torch")

SETTINGS = settings(max_examples=30, deadline=None)


def floats(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def arrays(shape: tuple[int, ...], low: float = -3.0, high: float = 3.0) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float64, shape, elements=floats(low, high))


@st.composite
def broadcast_pair(draw, a_range=(-3.0, 3.0), b_range=(-3.0, 3.0)):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4))
    a_shape, b_shape = shapes.input_shapes
    return draw(arrays(a_shape, *a_range)), draw(arrays(b_shape, *b_range))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def compare(ours, theirs, *inputs: np.ndarray, rtol: float = 1e-7, atol: float = 1e-10) -> None:
    """Values and input gradients of ``ours`` (on Tensors) and ``theirs`` (on torch tensors) agree."""
    xs = [Tensor(a, requires_grad=True) for a in inputs]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    y, ty = ours(*xs), theirs(*ts)
    np.testing.assert_allclose(y.data, ty.detach().numpy(), rtol=rtol, atol=atol)
    cotangent = np.random.default_rng(y.size).standard_normal(y.shape)
    y.backward(cotangent)
    ty.backward(torch.tensor(cotangent))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- binary ops, broadcasting
@SETTINGS
@given(broadcast_pair())
def test_add(pair):
    compare(lambda a, b: a + b, lambda a, b: a + b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_sub(pair):
    compare(lambda a, b: a - b, lambda a, b: a - b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_mul(pair):
    compare(lambda a, b: a * b, lambda a, b: a * b, *pair)


@SETTINGS
@given(broadcast_pair(b_range=(0.5, 3.0)))
def test_div(pair):
    compare(lambda a, b: a / b, lambda a, b: a / b, *pair)


@SETTINGS
@given(broadcast_pair(a_range=(0.5, 3.0), b_range=(-2.0, 2.0)))
def test_pow_tensor_exponent(pair):
    compare(lambda a, b: a**b, lambda a, b: a**b, *pair)


@SETTINGS
@given(shapes.flatmap(arrays), st.sampled_from([2, 3, -1, 0.5, 2.5]))
def test_pow_number_exponent(a, exponent):
    a = np.abs(a) + 0.5 if exponent in (-1, 0.5, 2.5) else a
    compare(lambda x: x**exponent, lambda x: x**exponent, a)


@SETTINGS
@given(broadcast_pair(b_range=(0.5, 3.0)), st.sampled_from([2.0, -1.5]))
def test_reflected_ops(pair, c):
    a, b = pair
    compare(lambda a, b: c - a + c * b + c / b + (-a), lambda a, b: c - a + c * b + c / b + (-a), a, b)


# ----------------------------------------------------------------------------- unary ops
UNARY = {
    "exp": (lambda x: x.exp(), torch.exp, (-3.0, 3.0)),
    "log": (lambda x: x.log(), torch.log, (0.1, 5.0)),
    "sin": (lambda x: x.sin(), torch.sin, (-3.0, 3.0)),
    "cos": (lambda x: x.cos(), torch.cos, (-3.0, 3.0)),
    "tanh": (lambda x: x.tanh(), torch.tanh, (-3.0, 3.0)),
    "relu": (lambda x: x.relu(), torch.relu, (-3.0, 3.0)),
    "sigmoid": (lambda x: x.sigmoid(), torch.sigmoid, (-30.0, 30.0)),
    "sqrt": (lambda x: x.sqrt(), torch.sqrt, (0.1, 5.0)),
    "abs": (lambda x: x.abs(), torch.abs, (-3.0, 3.0)),
    "neg": (lambda x: -x, lambda x: -x, (-3.0, 3.0)),
    "clip": (lambda x: x.clip(-1.0, 0.5), lambda x: torch.clamp(x, -1.0, 0.5), (-3.0, 3.0)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    ours, theirs, (low, high) = UNARY[name]

    @SETTINGS
    @given(shapes.flatmap(lambda shape: arrays(shape, low, high)))
    def check(a):
        compare(ours, theirs, a)

    check()


@SETTINGS
@given(broadcast_pair(), st.data())
def test_where(pair, data):
    a, b = pair
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    cond = data.draw(hnp.arrays(bool, out_shape))
    compare(lambda a, b: where(cond, a, b), lambda a, b: torch.where(torch.tensor(cond), a, b), a, b)


# ----------------------------------------------------------------------------- reductions
@st.composite
def array_and_axis(draw):
    a = draw(shapes.flatmap(arrays))
    if a.ndim == 0:
        return a, None
    axis = draw(
        st.one_of(
            st.none(),
            st.integers(-a.ndim, a.ndim - 1),
            st.lists(st.integers(0, a.ndim - 1), min_size=1, unique=True).map(tuple),
        )
    )
    return a, axis


def torch_dims(a: np.ndarray, axis):
    return tuple(range(a.ndim)) if axis is None else axis


@SETTINGS
@given(array_and_axis(), st.booleans())
def test_sum(pair, keepdims):
    a, axis = pair
    compare(
        lambda x: x.sum(axis=axis, keepdims=keepdims), lambda x: x.sum(dim=torch_dims(a, axis), keepdim=keepdims), a
    )


@SETTINGS
@given(array_and_axis(), st.booleans())
def test_mean(pair, keepdims):
    a, axis = pair
    compare(
        lambda x: x.mean(axis=axis, keepdims=keepdims), lambda x: x.mean(dim=torch_dims(a, axis), keepdim=keepdims), a
    )


@SETTINGS
@given(array_and_axis(), st.booleans())
def test_max_with_ties(pair, keepdims):
    a, axis = pair
    a = np.round(a)  # many ties: tied maxima share the gradient, like torch.amax
    compare(
        lambda x: x.max(axis=axis, keepdims=keepdims),
        lambda x: torch.amax(x, dim=torch_dims(a, axis), keepdim=keepdims),
        a,
    )


@SETTINGS
@given(nonempty_shapes.flatmap(lambda s: arrays(s, -50.0, 50.0)), st.data())
def test_softmax_and_log_softmax(a, data):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    compare(lambda x: x.softmax(axis=axis), lambda x: torch.softmax(x, dim=axis), a)
    compare(lambda x: x.log_softmax(axis=axis), lambda x: torch.log_softmax(x, dim=axis), a)


def test_softmax_default_axis_is_last():
    a = np.arange(6.0).reshape(2, 3)
    compare(lambda x: x.softmax(), lambda x: torch.softmax(x, dim=-1), a)
    compare(lambda x: x.log_softmax(), lambda x: torch.log_softmax(x, dim=-1), a)


# ----------------------------------------------------------------------------- matmul
@st.composite
def matmul_pair(draw):
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, min_side=1, max_side=3))
    a_kind, b_kind = draw(st.sampled_from(["1d", "2d", "batched"])), draw(st.sampled_from(["1d", "2d", "batched"]))
    a_shape = {"1d": (k,), "2d": (n, k), "batched": batch.input_shapes[0] + (n, k)}[a_kind]
    b_shape = {"1d": (k,), "2d": (k, m), "batched": batch.input_shapes[1] + (k, m)}[b_kind]
    return draw(arrays(a_shape)), draw(arrays(b_shape))


@SETTINGS
@given(matmul_pair())
def test_matmul_1d_2d_batched(pair):
    compare(lambda a, b: a @ b, lambda a, b: a @ b, *pair)


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.booleans(), st.data())
def test_affine_is_matmul_plus_bias(n, k, m, one_row, data):
    x_shape, out_shape = ((k,), (m,)) if one_row else ((n, k), (n, m))
    bias_shapes = [out_shape[i:] for i in range(len(out_shape) + 1)] + [(1, m), (n, 1), (2, n, m)]
    x, w, b = (
        data.draw(arrays(x_shape)),
        data.draw(arrays((k, m))),
        data.draw(arrays(data.draw(st.sampled_from(bias_shapes)))),
    )
    compare(affine, lambda x, w, b: x @ w + b, x, w, b)


# ----------------------------------------------------------------------------- shapes and indexing
@SETTINGS
@given(shapes.flatmap(arrays), st.data())
def test_reshape_and_transpose(a, data):
    perm = data.draw(st.permutations(range(a.ndim)))
    compare(lambda x: x.reshape(-1), lambda x: x.reshape(-1), a)
    compare(lambda x: x.reshape(a.shape[::-1]), lambda x: x.reshape(a.shape[::-1]), a)
    compare(lambda x: x.transpose(*perm), lambda x: x.permute(tuple(perm)), a)
    compare(lambda x: x.T, lambda x: x.permute(tuple(reversed(range(a.ndim)))), a)


@SETTINGS
@given(shapes, st.data())
def test_broadcast_to(target, data):
    dropped = data.draw(st.integers(0, len(target)))  # leading axes the broadcast adds
    shape = tuple(1 if data.draw(st.booleans()) else n for n in target[dropped:])  # axes it stretches
    a = data.draw(arrays(shape))
    compare(lambda x: x.broadcast_to(target), lambda x: x.broadcast_to(target), a)


@SETTINGS
@given(nonempty_shapes.flatmap(arrays), st.data())
def test_integer_array_indexing_with_repeats(a, data):
    index = np.array(data.draw(st.lists(st.integers(0, a.shape[0] - 1), min_size=1, max_size=6)))
    compare(lambda x: x[index], lambda x: x[torch.tensor(index)], a)


@SETTINGS
@given(nonempty_shapes.flatmap(arrays), st.data())
def test_boolean_mask_and_slices(a, data):
    mask = data.draw(hnp.arrays(bool, a.shape))
    compare(lambda x: x[mask] * 2, lambda x: x[torch.tensor(mask)] * 2, a)
    start = data.draw(st.integers(0, a.shape[0] - 1))
    compare(lambda x: x[start:, ...], lambda x: x[start:, ...], a)
    compare(lambda x: x[start], lambda x: x[start], a)


@SETTINGS
@given(shapes.flatmap(lambda s: st.tuples(arrays(s), arrays(s), arrays(s))), st.data())
def test_stack(parts, data):
    axis = data.draw(st.integers(-(parts[0].ndim + 1), parts[0].ndim))
    compare(lambda *xs: stack(xs, axis=axis), lambda *xs: torch.stack(xs, dim=axis), *parts)


# ----------------------------------------------------------------------------- second order
SECOND_ORDER = {
    "sin_exp": (lambda x: (x.sin() * x.exp()).sum(), lambda x: (torch.sin(x) * torch.exp(x)).sum()),
    "tanh_pow": (lambda x: (x.tanh() ** 3).sum(), lambda x: (torch.tanh(x) ** 3).sum()),
    "log_div_abs": (
        lambda x: ((x * x + 1.0).log() / (x.abs() + 1.0)).sum(),
        lambda x: (torch.log(x * x + 1.0) / (torch.abs(x) + 1.0)).sum(),
    ),
    "sqrt_sigmoid": (
        lambda x: ((x * x + 1.0).sqrt() * x.sigmoid()).mean(),
        lambda x: (torch.sqrt(x * x + 1.0) * torch.sigmoid(x)).mean(),
    ),
    "matmul": (
        lambda x: ((x @ x.T).cos() * (x.sum(axis=0, keepdims=True) @ x.T)).sum(),
        lambda x: (torch.cos(x @ x.T) * (x.sum(dim=0, keepdim=True) @ x.T)).sum(),
    ),
    "softmax": (lambda x: (x.softmax() * x.cos()).sum(), lambda x: (torch.softmax(x, dim=-1) * torch.cos(x)).sum()),
    "log_softmax": (lambda x: (x.log_softmax(axis=0) ** 2).sum(), lambda x: (torch.log_softmax(x, dim=0) ** 2).sum()),
    "max_index_broadcast": (
        lambda x: (x.max(axis=1) * x[:, 0]).sum() + (x[np.array([0, 0])] ** 3).sum() + (x * x[0]).sum(),
        lambda x: (torch.amax(x, dim=1) * x[:, 0]).sum() + (x[torch.tensor([0, 0])] ** 3).sum() + (x * x[0]).sum(),
    ),
    "pow_tensor": (lambda x: ((x * x + 0.5) ** x.sin()).sum(), lambda x: ((x * x + 0.5) ** torch.sin(x)).sum()),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_hessian_vector_products(name):
    ours, theirs = SECOND_ORDER[name]

    @SETTINGS
    @given(
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=4).flatmap(
            lambda s: st.tuples(arrays(s), arrays(s))
        )
    )
    def check(pair):
        a, v = pair
        x = Tensor(a, requires_grad=True)
        (g,) = gradients(ours(x), [x], create_graph=True)
        (hv,) = gradients((g * v).sum(), [x])
        t = torch.tensor(a, requires_grad=True)
        (tg,) = torch.autograd.grad(theirs(t), t, create_graph=True)
        (thv,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), t, allow_unused=True)
        thv = torch.zeros_like(t) if thv is None else thv
        np.testing.assert_allclose(g.data, tg.detach().numpy(), rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(hv.data, thv.numpy(), rtol=1e-7, atol=1e-9)

    check()


@SETTINGS
@given(floats(-3.0, 3.0))
def test_third_derivative_of_sin_times_x(x0):
    x = Tensor(x0, requires_grad=True)
    d1 = gradients(x.sin() * x, [x], create_graph=True)[0]
    d2 = gradients(d1, [x], create_graph=True)[0]
    (d3,) = gradients(d2, [x])
    t = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    (t1,) = torch.autograd.grad(torch.sin(t) * t, t, create_graph=True)
    (t2,) = torch.autograd.grad(t1, t, create_graph=True)
    (t3,) = torch.autograd.grad(t2, t)
    assert d3.item() == pytest.approx(t3.item(), rel=1e-9, abs=1e-12)
