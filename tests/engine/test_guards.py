"""No silent cuts, rules that declare their order, and inputs validated with clear errors.

Each test is a program that used to give a silently wrong (or silently zero) answer; where
PyTorch has the same situation, its behaviour is checked alongside.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from course_lib.functional import grad, hessian, jacobian, jvp, vjp
from course_lib.scalar import Value
from course_lib.tensor import OPS, Tensor, defvjp, gradients, record, stack
from course_lib.viz import draw_graph

torch = pytest.importorskip("torch")


# ----------------------------------------------------------------------------- no silent cuts
def test_a_tensor_built_from_tensors_that_require_grad_raises_and_stack_keeps_the_graph():
    a, b = Tensor(2.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    with pytest.raises(ValueError, match=r"cut it off the graph.*stack\(\[\.\.\.\]\).*detach\(\)"):
        Tensor([a, b])
    with pytest.raises(ValueError, match="cut it off the graph"):
        Tensor(a)
    joined = stack([a, b])
    (joined * np.array([1.0, 4.0])).sum().backward()
    assert (a.grad, b.grad) == (1.0, 4.0)
    assert Tensor([Tensor(1.0), Tensor(2.0)]).data.tolist() == [1.0, 2.0]  # nothing to cut
    assert Tensor(a.detach()).data == 2.0  # cut on purpose


def test_item_and_float_are_documented_exits_and_grad_says_so_instead_of_returning_zero():
    assert "exit from the graph" in Tensor.item.__doc__
    x = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"does not depend on input 0.*\.item\(\), float\(\).*allow_unused=True"):
        grad(lambda t: Tensor(float((t * t).sum())))(x)
    # PyTorch warns at float() and refuses at backward: the new tensor has no grad_fn.
    t = torch.tensor(x, requires_grad=True)
    with pytest.warns(UserWarning, match="requires_grad=True to a scalar"):
        cut = torch.tensor(float((t * t).sum()))
    with pytest.raises(RuntimeError, match="does not require grad"):
        cut.backward()


@pytest.mark.parametrize(
    "transform",
    [
        lambda f, x: grad(lambda t: f(t).sum())(x),
        lambda f, x: vjp(f, x)[1](np.ones(2)),
        lambda f, x: jvp(f, (x,), (np.ones(2),)),
        lambda f, x: jacobian(f)(x),
        lambda f, x: hessian(lambda t: f(t).sum())(x),
    ],
    ids=["grad", "vjp", "jvp", "jacobian", "hessian"],
)
def test_every_transform_refuses_an_output_that_does_not_depend_on_the_input(transform):
    def cut(t: Tensor) -> Tensor:
        return Tensor(t.data) * 2.0  # .data leaves the graph

    with pytest.raises(ValueError, match="does not depend on input"):
        transform(cut, np.array([1.0, 2.0]))


def test_allow_unused_matches_torch_autograd_grad():
    x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
    gx, gy = gradients((x * x).sum(), [x, y], allow_unused=True)
    tx, ty = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        torch.autograd.grad((tx * tx).sum(), [tx, ty])
    tgx, tgy = torch.autograd.grad((tx * tx).sum(), [tx, ty], allow_unused=True, materialize_grads=True)
    np.testing.assert_array_equal(gx.data, tgx.numpy())
    np.testing.assert_array_equal(gy.data, tgy.numpy())


def test_the_hessian_of_a_linear_function_is_zero_not_an_error():
    np.testing.assert_array_equal(hessian(lambda t: (t * 3.0).sum())(np.ones(2)).data, np.zeros((2, 2)))


# ----------------------------------------------------------------------------- rules declare their order
@pytest.fixture
def cube_op():
    """A custom primitive x**3 whose registration each test chooses; removed afterwards."""
    yield lambda x: record("test_cube", x.data**3, (x,))
    OPS.pop("test_cube", None)


def test_a_numpy_rule_declared_first_order_gives_first_derivatives_and_refuses_the_second(cube_op):
    defvjp("test_cube", lambda g, out, a: Tensor(3 * a.data**2 * g.data), order=1)
    assert grad(lambda x: cube_op(x).sum())(np.array([2.0])).data.tolist() == [12.0]
    with pytest.raises(RuntimeError, match=r"'test_cube' has a first-order VJP rule.*Tensor operations"):
        grad(grad(lambda x: cube_op(x).sum()))(np.array([2.0]))  # was 0, silently
    with pytest.raises(RuntimeError, match="first-order"):
        jvp(cube_op, (np.array([2.0]),), (np.array([1.0]),))  # was a silent zero


def test_a_rule_returning_a_numpy_array_is_first_order_without_declaring_it(cube_op):
    defvjp("test_cube", lambda g, out, a: 3 * a.data**2 * g.data)
    assert grad(lambda x: cube_op(x).sum())(np.array([2.0])).data.tolist() == [12.0]
    with pytest.raises(RuntimeError, match="first-order"):
        grad(grad(lambda x: cube_op(x).sum()))(np.array([2.0]))


def test_a_rule_written_with_tensor_operations_is_differentiable_to_any_order(cube_op):
    defvjp("test_cube", lambda g, out, a: g * 3.0 * a * a)
    d2 = grad(grad(lambda x: cube_op(x).sum()))
    d3 = grad(grad(grad(lambda x: cube_op(x).sum())))
    assert d2(np.array([2.0])).data.tolist() == [12.0]
    assert d3(np.array([2.0])).data.tolist() == [6.0]
    assert jvp(cube_op, (np.array([2.0]),), (np.array([1.0]),))[1].data.tolist() == [12.0]


# ----------------------------------------------------------------------------- validation
def test_a_boolean_mask_tensor_selects_like_numpy_and_torch():
    values = np.array([10.0, 20.0, 30.0])
    mask = np.array([True, False, True])
    x = Tensor(values, requires_grad=True)
    picked = x[Tensor(mask)]
    assert picked.data.tolist() == values[mask].tolist() == torch.tensor(values)[torch.tensor(mask)].tolist()
    picked.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    assert x[Tensor([0, 2])].data.tolist() == [10.0, 30.0]  # whole numbers: integer indices
    with pytest.raises(IndexError, match="whole numbers"):
        x[Tensor([0.5])]


@pytest.mark.parametrize(
    "bad, pattern",
    [
        ("3", r"real numbers.*str.*float\(\.\.\.\)"),
        (None, r"real numbers.*NoneType"),
        (np.array([1.0, None], dtype=object), r"real numbers.*dtype object"),
        ([1.0, "a"], r"real numbers"),
        (1 + 2j, r"real numbers.*complex.*separate Tensors"),
    ],
)
def test_tensor_refuses_what_is_not_real_numbers(bad, pattern):
    with pytest.raises(TypeError, match=pattern):
        Tensor(bad)
    with pytest.raises(TypeError, match=pattern):
        Tensor(1.0).data = bad
    if not isinstance(bad, complex):  # PyTorch refuses these too (it has complex tensors)
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            torch.tensor(bad)


def test_empty_reductions_follow_numpy():
    empty = Tensor(np.zeros((0, 3)), requires_grad=True)
    with pytest.warns(RuntimeWarning) as caught:
        mean = empty.mean()
    assert any("Mean of empty slice" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(mean.item()) and np.isnan(np.zeros((0, 3)).mean())
        assert np.isnan(torch.zeros((0, 3)).mean().item())
        mean.backward()  # was ZeroDivisionError
    assert empty.grad.shape == (0, 3)
    assert empty.sum().item() == 0.0 and empty.sum(axis=0).data.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"max\(\) of an empty Tensor \(shape \(0, 3\)\)"):
        empty.max()


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.sum(axis=2),
        lambda t: t.mean(axis=-3),
        lambda t: t.max(axis=(0, 5)),
        lambda t: t.softmax(axis=2),
        lambda t: t.log_softmax(axis=-3),
        lambda t: t.transpose(0, 2),
        lambda t: stack([t, t], axis=4),
    ],
)
def test_out_of_range_axes_are_errors_never_wrapped_around(call):
    t = Tensor(np.ones((2, 3)))
    with pytest.raises(np.exceptions.AxisError, match="out of range"):
        call(t)
    with pytest.raises((IndexError, np.exceptions.AxisError)):
        np.ones((2, 3)).sum(axis=2)


def test_draw_graph_refuses_a_huge_graph_at_once_and_names_the_limit():
    x = Value(1.0)
    y = x
    for _ in range(5_000):
        y = y * 1.0001
    with pytest.raises(ValueError, match=r"more than max_nodes=200 nodes.*larger max_nodes"):
        draw_graph(y)
    assert len(draw_graph(y, max_nodes=20_000).body) > 10_000  # asked for: drawn (built in well under a second)
    t = Tensor(np.ones(3), requires_grad=True)
    z = t
    for _ in range(300):
        z = z * 1.5
    with pytest.raises(ValueError, match="max_nodes=200"):
        draw_graph(z)
