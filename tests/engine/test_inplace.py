"""Changes between the forward and the backward pass are caught, never differentiated silently.

A Tensor's array is read-only (``.data`` and ``.numpy()`` hand it out frozen), inputs are
copied, and assigning ``t.data = ...`` bumps the Tensor's version: a backward pass through a
node recorded before that raises, as PyTorch does ("modified by an inplace operation"). The
scalar ``Value`` does the same with the numbers its closures saved.
"""

from __future__ import annotations

import numpy as np
import pytest

from course_lib.functional import grad
from course_lib.nn import MLP, SGD, cross_entropy
from course_lib.scalar import Value
from course_lib.tensor import Tensor, gradients, where

torch = pytest.importorskip("torch")

MODIFIED = r"modified by an in-place change"


# ----------------------------------------------------------------------------- Tensor
def test_assigning_data_between_forward_and_backward_raises_naming_op_and_tensor():
    x = Tensor([1.0, 2.0], requires_grad=True)
    w = Tensor([3.0, 4.0], requires_grad=True, label="w")
    loss = (x * w).sum()
    w.data = [5.0, 6.0]
    with pytest.raises(RuntimeError, match=r"'mul' has been " + MODIFIED + r".*input 1 \('w', shape \(2,\)\)"):
        loss.backward()
    # PyTorch raises for the same program (written with its in-place update).
    tx, tw = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0], requires_grad=True)
    tloss = (tx * tw).sum()
    with torch.no_grad():
        tw.copy_(torch.tensor([5.0, 6.0]))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tloss.backward()


def test_changing_an_output_the_rule_needs_raises():
    x = Tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()  # exp's rule uses its output
    y.data = [0.0, 0.0]
    with pytest.raises(RuntimeError, match=r"'exp' has been " + MODIFIED + ".*its output"):
        y.backward(np.ones(2))


def test_a_new_forward_pass_after_the_change_is_fine():
    w = Tensor([3.0, 4.0], requires_grad=True)
    w.data = [5.0, 6.0]
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad, [10.0, 12.0])


def test_writing_into_numpy_or_data_is_refused_at_once():
    t = Tensor([1.0, 2.0], requires_grad=True)
    y = t * 2.0
    for array in (t.numpy(), t.data, y.data, y.numpy()):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 9.0
    with pytest.raises(ValueError, match="read-only"):
        t.data += 1.0  # in-place arithmetic on the array: assign t.data = t.data + 1 instead
    copy = t.numpy().copy()
    copy[0] = 9.0  # a copy is yours
    assert t.data.tolist() == [1.0, 2.0]


def test_a_caller_owned_float64_array_is_copied_not_shared():
    weights = np.array([1.0, 2.0, 3.0])
    x = Tensor([1.0, 1.0, 1.0], requires_grad=True)
    loss = (x * weights).sum()  # the constant operand of the node
    indices = np.array([0, 0, 2])
    picked = x[indices].sum()
    mask = np.array([True, False, True])
    chosen = where(mask, x, 0.0).sum()
    weights[:] = 100.0
    indices[:] = 1
    mask[:] = False
    source = np.array([5.0, 6.0])
    leaf = Tensor(source, requires_grad=True)
    source[0] = -1.0
    loss.backward()
    np.testing.assert_array_equal(x.grad, [1.0, 2.0, 3.0])
    assert gradients(picked, [x])[0].data.tolist() == [2.0, 0.0, 1.0]
    assert gradients(chosen, [x])[0].data.tolist() == [1.0, 0.0, 1.0]
    assert leaf.data.tolist() == [5.0, 6.0]


def test_an_optimizer_step_between_forward_and_backward_raises():
    rng = np.random.default_rng(0)
    model = MLP([3, 4, 2], rng=0)
    x, labels = rng.standard_normal((5, 3)), np.array([0, 1, 1, 0, 1])
    optimiser = SGD(model.parameters(), lr=0.1)
    first = cross_entropy(model(x), labels)
    first.backward()
    optimiser.step()  # right: after backward
    second = cross_entropy(model(x), labels)
    optimiser.step()  # wrong: between this loss's forward and backward
    with pytest.raises(RuntimeError, match=r"'affine' has been " + MODIFIED + r".*'(weight|bias)'"):
        second.backward()


def test_functional_gradients_check_versions_too():
    w = Tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    w.data = [3.0, 3.0]
    with pytest.raises(RuntimeError, match=MODIFIED):
        gradients(y, [w])
    assert grad(lambda v: (v * w).sum())(np.ones(2)).data.tolist() == [3.0, 3.0]


# ----------------------------------------------------------------------------- Value
@pytest.mark.parametrize(
    "make",
    [
        lambda a, b: a * b,
        lambda a, b: b / a,
        lambda a, b: a**3,
        lambda a, b: a.log(),
        lambda a, b: a.sin(),
        lambda a, b: a.cos(),
        lambda a, b: a.relu(),
    ],
)
def test_value_changed_between_forward_and_backward_raises(make):
    a, b = Value(2.0, label="a"), Value(3.0)
    out = make(a, b)
    a.data = 5.0
    with pytest.raises(RuntimeError, match=MODIFIED + r".*input 'a' was 2 in the forward pass.*now 5"):
        out.backward()


def test_value_ops_whose_rule_needs_no_values_do_not_raise_like_pytorch():
    a, b = Value(2.0), Value(3.0)
    out = a + b - a.exp() * 0 + a.tanh() * 0
    a.data = 7.0
    out.backward()  # add, neg, exp (its own output) and tanh (its own output): values not re-read
    assert b.grad == 1.0
