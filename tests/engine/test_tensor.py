"""Unit tests of course_lib.tensor: semantics, errors, pruning, the VJP table, gradcheck on every op."""

from __future__ import annotations

import operator
import re
import sys

import numpy as np
import pytest

from course_lib.check import gradcheck
from course_lib.tensor import (
    VJP_RULES,
    Tensor,
    defvjp,
    gradients,
    is_grad_enabled,
    no_grad,
    record,
    stack,
    unbroadcast,
    where,
)

rng = np.random.default_rng(0)


# ----------------------------------------------------------------------------- construction
def test_integer_input_becomes_float64_copy():
    source = np.arange(3)
    t = Tensor(source)
    assert t.data.dtype == np.float64 and t.data.tolist() == [0.0, 1.0, 2.0]
    source[0] = 7
    assert t.data[0] == 0.0  # the constructor copies
    assert Tensor(True).data.dtype == np.float64


def test_fresh_tensor_attributes():
    t = Tensor([[1.0, 2.0, 3.0]])
    assert t.requires_grad is False and t.grad is None and t.label == ""
    assert t._parents == () and t._op == ""
    assert t.shape == (1, 3) and t.ndim == 2 and t.size == 3 and len(t) == 1
    assert Tensor(1.0, requires_grad=True, label="x").label == "x"
    assert Tensor([[2.5]]).item() == 2.5 and float(Tensor(2.5)) == 2.5
    with pytest.raises(ValueError, match="one element"):
        Tensor([1.0, 2.0]).item()


def test_complex_input_is_refused():
    with pytest.raises(TypeError, match="real"):
        Tensor(1 + 2j)


def test_recorded_node_attributes_for_drawing():
    a, b = Tensor(2.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    c = a * b
    assert c._op == "mul" and isinstance(c._parents, tuple) and c._parents[0] is a and c._parents[1] is b
    assert c.label == "" and c.requires_grad
    assert "op='mul'" in repr(c)


# ----------------------------------------------------------------------------- backward basics
def test_scalar_output_seeds_one():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 4.0, 6.0])


@pytest.mark.parametrize("seed", [np.array([1.0, -2.0, 0.5]), Tensor([1.0, -2.0, 0.5]), [1.0, -2.0, 0.5]])
def test_seed_may_be_array_tensor_or_list(seed):
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    (3 * x).backward(seed)
    np.testing.assert_allclose(x.grad, [3.0, -6.0, 1.5])


def test_number_seed_for_scalar_output():
    x = Tensor(2.0, requires_grad=True)
    (x * x).backward(0.5)
    assert x.grad == pytest.approx(2.0)


def test_nonscalar_output_without_seed_says_what_to_pass():
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match=r"shape \(3,\) needs a seed gradient.*np\.ones\(\(3,\)\)"):
        (x * 2).backward()


@pytest.mark.parametrize("bad", [np.ones((1, 3)), np.ones(4), 1.0])
def test_seed_of_another_shape_is_refused_even_if_it_broadcasts(bad):
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match=r"seed gradient has shape .* but the output has shape \(3,\).*exactly"):
        (x * 2).backward(bad)


def test_backward_when_nothing_requires_grad_is_a_clear_error():
    y = Tensor([1.0, 2.0]).sum()
    with pytest.raises(RuntimeError, match="requires_grad=True"):
        y.backward()


def test_leaf_itself_can_be_the_output():
    x = Tensor(3.0, requires_grad=True)
    x.backward()
    assert x.grad == 1.0


# ----------------------------------------------------------------------------- accumulation
def test_leaves_accumulate_and_intermediates_are_not_double_counted():
    x = Tensor([1.0, 2.0], requires_grad=True)
    h = (x * x).retain_grad()
    plain = x * 1.0
    y = (h * 3 + plain * 0).sum()
    y.backward()
    first_x, first_h = x.grad.copy(), h.grad.copy()
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * first_x)  # the leaf adds the same gradient again
    np.testing.assert_allclose(h.grad, first_h)  # the intermediate is recomputed, not added
    np.testing.assert_allclose(first_x, [6.0, 12.0])
    np.testing.assert_allclose(first_h, [3.0, 3.0])
    assert plain.grad is None  # intermediates keep no gradient unless retained (as in PyTorch)


def test_retained_gradients_are_buffers_of_their_own():
    """add passes its gradient through unchanged, so b's and c's gradients are the same
    array inside the sweep; what each keeps must be its own (as PyTorch's are)."""
    a = Tensor([1.0, 2.0], requires_grad=True)
    b = (a * 1.0).retain_grad()
    c = (b + 0.0).retain_grad()
    (c * 3).sum().backward()
    assert not np.shares_memory(b.grad, c.grad) and not np.shares_memory(a.grad, c.grad)
    b.grad[0] = 100.0
    np.testing.assert_allclose(c.grad, [3.0, 3.0])
    np.testing.assert_allclose(a.grad, [3.0, 3.0])


def test_zero_grad_forgets_the_gradient_like_module_and_sgd():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    x.zero_grad()
    assert x.grad is None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 4.0])
    x.grad = None
    (x * 5).sum().backward()
    np.testing.assert_allclose(x.grad, [5.0, 5.0])


def test_fan_out_accumulates_within_one_pass():
    x = Tensor(2.0, requires_grad=True)
    y = x * x + x + x * 3
    y.backward()
    assert x.grad == pytest.approx(2 * 2.0 + 1 + 3)


def test_gradient_buffers_are_not_shared():
    a, b = Tensor(np.ones(3), requires_grad=True), Tensor(np.ones(3), requires_grad=True)
    seed = np.array([1.0, 2.0, 3.0])
    (a + b).backward(seed)
    assert a.grad is not b.grad and not np.shares_memory(a.grad, b.grad)
    assert not np.shares_memory(a.grad, seed)
    a.grad[0] = 100.0
    assert b.grad[0] == 1.0 and seed[0] == 1.0
    # Accumulating into a leaf gradient must not disturb another leaf or a reshaped view.
    c = Tensor(np.ones((2, 2)), requires_grad=True)
    d = c.reshape(4)
    (d * 1.0 + d).sum().backward()
    np.testing.assert_allclose(c.grad, 2 * np.ones((2, 2)))


def test_same_operand_twice():
    x = Tensor([1.0, -2.0], requires_grad=True)
    (x + x).sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0])
    x.grad = None
    (x * x * x).sum().backward()
    np.testing.assert_allclose(x.grad, 3 * x.data**2)


# ----------------------------------------------------------------------------- no_grad, pruning, detach
def test_no_grad_records_nothing_and_restores_the_mode():
    x = Tensor([1.0, 2.0], requires_grad=True)
    with no_grad():
        assert not is_grad_enabled()
        y = (x * 2).exp().sum()
        with no_grad():
            pass
        assert not is_grad_enabled()
    assert is_grad_enabled()
    assert not y.requires_grad and y._parents == () and y._op == ""
    with pytest.raises(RuntimeError):
        y.backward()


def test_no_grad_restores_mode_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with no_grad():
            raise ZeroDivisionError
    assert is_grad_enabled()


def test_pruning_constants_record_no_parents():
    a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
    c = (a * b).exp() + 1
    assert not c.requires_grad and c._parents == () and c._op == ""
    w = Tensor([0.5, 0.5], requires_grad=True)
    d = c * w
    assert d.requires_grad and d._parents[0] is c and d._parents[1] is w
    d.sum().backward()
    assert c.grad is None  # a constant receives no gradient
    np.testing.assert_allclose(w.grad, c.data)


def test_detach_cuts_the_graph_and_shares_data():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.detach()
    assert not z.requires_grad and z._parents == () and z.data is y.data
    (z * x).sum().backward()
    np.testing.assert_allclose(x.grad, y.data)


# ----------------------------------------------------------------------------- operators
def test_reflected_operators():
    x = Tensor([1.0, 2.0], requires_grad=True)
    for y, expected in [
        (2 - x, [1.0, 0.0]),
        (2 / x, [2.0, 1.0]),
        (2**x, [2.0, 4.0]),
        (np.array([1.0, 1.0]) + x, [2.0, 3.0]),
        (3 * x, [3.0, 6.0]),
        (-x, [-1.0, -2.0]),
    ]:
        assert isinstance(y, Tensor) and y.requires_grad
        np.testing.assert_allclose(y.data, expected)
    (np.ones(2) * x).sum().backward()
    np.testing.assert_allclose(x.grad, [1.0, 1.0])


@pytest.mark.parametrize("other", ["text", [1.0, 2.0], None, 1j])
def test_unsupported_operands_raise_type_error(other):
    x = Tensor([1.0, 2.0])
    with pytest.raises(TypeError):
        x * other
    with pytest.raises(TypeError):
        other + x


def test_pow_with_tensor_exponent():
    a, b = Tensor(2.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    (a**b).backward()
    assert a.grad == pytest.approx(3 * 4.0) and b.grad == pytest.approx(8 * np.log(2.0))


@pytest.mark.parametrize(
    "op, symbol",
    [(operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"), (operator.truediv, "/"), (operator.pow, "**")],
)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_elementwise_shape_errors_say_how_to_line_up(op, symbol, requires_grad):
    a = Tensor(np.ones((2, 3)), requires_grad=requires_grad)
    with pytest.raises(
        ValueError, match=rf"shapes \(2, 3\) and \(4, 3\) do not broadcast for '{re.escape(symbol)}'.*reshape"
    ):
        op(a, Tensor(np.ones((4, 3))))
    with pytest.raises(
        ValueError, match=rf"shapes \(2,\) and \(2, 3\) do not broadcast for '{re.escape(symbol)}'.*x\[:, None\]"
    ):
        op(np.ones(2), a)  # the reflected operator names the operands in the order written


@pytest.mark.parametrize(
    "left, right, pattern",
    [
        ((2, 3), (4, 5), r"\(2, 3\) and \(4, 5\).*\(3\).*\(4\)"),
        ((3,), (4,), r"\(3,\) and \(4,\).*first axis"),
        ((2, 2, 3), (3, 3, 1), r"batch axes \(2,\) and \(3,\)"),
        ((), (3,), r"at least one axis"),
    ],
)
def test_matmul_shape_errors_name_both_shapes(left, right, pattern):
    with pytest.raises(ValueError, match=pattern):
        Tensor(np.ones(left)) @ Tensor(np.ones(right))


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((4, 2, 3), (3, 5)), ((3,), (4, 3, 2)), ((4, 1, 2, 3), (5, 3, 2))],
)
def test_matmul_gradients_for_1d_2d_and_batched(a_shape, b_shape):
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    assert gradcheck(lambda a, b: ((a @ b) ** 2).sum(), a, b)


def test_indexing_gradient_adds_for_repeated_indices():
    x = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x[np.array([0, 2, 0, 0])].sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 1.0, 0.0])


def test_indexing_kinds():
    m = Tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    picks = [m[1], m[1, 2], m[:, 1:3], m[..., -1], m[None, 0], m[m.data > 5], m[[0, 2], [1, 1]], m[Tensor([2.0, 0.0])]]
    total = sum(p.sum() for p in picks)
    total.backward()
    expected = np.zeros((3, 4))
    expected[1] += 1
    expected[1, 2] += 1
    expected[:, 1:3] += 1
    expected[:, -1] += 1
    expected[0] += 1
    expected[m.data > 5] += 1
    np.add.at(expected, ([0, 2], [1, 1]), 1)
    expected[[2, 0]] += 1
    np.testing.assert_array_equal(m.grad, expected)
    np.testing.assert_array_equal(picks[5].data, np.arange(6.0, 12.0))


def test_reductions_with_axis_and_keepdims():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert x.sum(axis=1).shape == (2,) and x.mean(axis=0, keepdims=True).shape == (1, 3)
    assert x.max(axis=(0, 1)).shape == () and x.sum(axis=-1, keepdims=True).shape == (2, 1)
    x.mean(axis=0).sum().backward()
    np.testing.assert_allclose(x.grad, np.full((2, 3), 0.5))


def test_max_ties_share_the_gradient():
    x = Tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad, [0.0, 0.5, 0.5, 0.0])


def test_reshape_transpose_and_T():
    x = Tensor(np.arange(6.0), requires_grad=True)
    m = x.reshape(2, 3)
    assert m.shape == (2, 3) and x.reshape((3, -1)).shape == (3, 2) and m.T.shape == (3, 2)
    t = Tensor(np.zeros((2, 3, 4))).transpose(1, 2, 0)
    assert t.shape == (3, 4, 2) and Tensor(np.zeros((2, 3, 4))).transpose((2, 0, 1)).shape == (4, 2, 3)
    assert x.reshape(6) is x  # nothing to do: no node
    (m.T * np.arange(3.0)[:, None]).sum().backward()
    np.testing.assert_allclose(x.grad, [0.0, 1.0, 2.0, 0.0, 1.0, 2.0])


def test_softmax_and_log_softmax_are_stable():
    logits = Tensor([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]], requires_grad=True)
    p = logits.softmax()
    lp = logits.log_softmax()
    assert np.all(np.isfinite(p.data)) and np.all(np.isfinite(lp.data))
    np.testing.assert_allclose(p.data.sum(axis=-1), 1.0)
    np.testing.assert_allclose(lp.data[0], [0.0, -1000.0, -2000.0])
    lp[:, 0].sum().backward()
    assert np.all(np.isfinite(logits.grad))
    np.testing.assert_allclose(logits.grad.sum(axis=-1), 0.0, atol=1e-12)


def test_sigmoid_is_stable_at_extremes():
    x = Tensor([-800.0, 0.0, 800.0], requires_grad=True)
    y = x.sigmoid()
    np.testing.assert_allclose(y.data, [0.0, 0.5, 1.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [0.0, 0.25, 0.0])


def test_clip_and_where():
    x = Tensor([-2.0, 0.5, 3.0], requires_grad=True)
    x.clip(-1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 0.0])
    x.grad = None
    y = Tensor([10.0, 20.0, 30.0], requires_grad=True)
    where(x.data > 0, x, y).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(y.grad, [1.0, 0.0, 0.0])


def test_unbroadcast_sums_added_and_stretched_axes():
    g = Tensor(np.ones((4, 2, 3)))
    assert unbroadcast(g, (2, 1)).data.tolist() == [[12.0], [12.0]]
    assert unbroadcast(g, ()).data == 24.0
    assert unbroadcast(g, (4, 2, 3)) is g


def test_stack_gradient():
    a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=True)
    s = stack([a, b, a], axis=1)
    assert s.shape == (2, 3)
    (s * np.array([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(a.grad, [101.0, 101.0])
    np.testing.assert_array_equal(b.grad, [10.0, 10.0])


# ----------------------------------------------------------------------------- deep graphs
def test_deep_graph_at_default_recursion_limit():
    assert sys.getrecursionlimit() <= 10_000
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0  # a chain 100,000 nodes deep
    y.backward()
    assert x.grad == 1.0
    (g,) = gradients(y, [x])
    assert g.item() == 1.0
    del y  # freeing the chain must not recurse either


# ----------------------------------------------------------------------------- the VJP table
def test_missing_rule_is_a_clear_error():
    x = Tensor(2.0, requires_grad=True)
    y = record("mystery", x.data * 2, (x,))
    with pytest.raises(NotImplementedError, match=r"no VJP rule for op 'mystery'.*defvjp"):
        y.backward()


def test_rule_returning_the_wrong_shape_is_a_clear_error():
    x = Tensor([1.0, 2.0], requires_grad=True)
    defvjp("test_bad_shape", lambda g, out, a: g.sum())
    try:
        y = record("test_bad_shape", x.data, (x,))
        with pytest.raises(ValueError, match=r"'test_bad_shape'.*shape \(\).*\(2,\).*unbroadcast"):
            y.backward(np.ones(2))
    finally:
        del VJP_RULES["test_bad_shape"]


def test_custom_primitive_with_defvjp_is_differentiable_twice():
    def logsumexp(x: Tensor) -> Tensor:
        top = x.data.max()
        return record("test_logsumexp", top + np.log(np.exp(x.data - top).sum()), (x,))

    defvjp("test_logsumexp", lambda g, out, x: g * (x - out).exp())
    try:
        x = Tensor([1000.0, 1000.0], requires_grad=True)
        y = logsumexp(x)
        assert y.item() == pytest.approx(1000.0 + np.log(2.0))
        (g,) = gradients(y, [x], create_graph=True)
        np.testing.assert_allclose(g.data, [0.5, 0.5])
        (h,) = gradients(g[0], [x])  # d softmax_0 / dx = p0 (e0 - p)
        np.testing.assert_allclose(h.data, [0.25, -0.25])
    finally:
        del VJP_RULES["test_logsumexp"]


# ----------------------------------------------------------------------------- gradients()
def test_gradients_leaves_grad_untouched_and_refuses_unused_inputs_unless_allowed():
    x, unused = Tensor([1.0, 2.0], requires_grad=True), Tensor(5.0, requires_grad=True, label="unused")
    with pytest.raises(ValueError, match=r"does not depend on input 1 \('unused', shape \(\)\).*allow_unused=True"):
        gradients((x**3).sum(), [x, unused])
    gx, gu = gradients((x**3).sum(), [x, unused], allow_unused=True)
    np.testing.assert_allclose(gx.data, 3 * x.data**2)
    assert gu.data == 0.0 and x.grad is None and unused.grad is None
    with pytest.raises(ValueError, match="requires_grad=True"):
        gradients(x.sum(), [Tensor(1.0)])


def test_gradients_create_graph_gives_second_derivatives():
    x = Tensor(0.7, requires_grad=True)
    (g,) = gradients(x.sin() * x, [x], create_graph=True)
    assert g.requires_grad
    (h,) = gradients(g, [x])
    assert h.item() == pytest.approx(2 * np.cos(0.7) - 0.7 * np.sin(0.7))


def test_gradient_through_an_intermediate_input_is_the_total_derivative():
    x = Tensor(2.0, requires_grad=True)
    y = x * x
    gx, gy = gradients(y * x, [x, y])
    assert gx.item() == pytest.approx(3 * 4.0) and gy.item() == pytest.approx(2.0)
