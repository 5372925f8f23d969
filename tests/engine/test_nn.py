"""course_lib.nn: parameters, Linear, MLP, cross_entropy (against PyTorch), SGD, training on Iris."""

from __future__ import annotations

import numpy as np
import pytest

from course_lib.datasets import load_iris
from course_lib.nn import MLP, SGD, Linear, Module, cross_entropy
from course_lib.tensor import Tensor

torch = pytest.importorskip("torch")


def test_linear_shapes_and_seedable_init():
    layer = Linear(4, 3, rng=0)
    assert layer.weight.shape == (4, 3) and layer.bias.shape == (3,)
    assert all(p.requires_grad for p in layer.parameters()) and len(layer.parameters()) == 2
    np.testing.assert_array_equal(Linear(4, 3, rng=0).weight.data, layer.weight.data)
    np.testing.assert_array_equal(Linear(4, 3, rng=np.random.default_rng(0)).weight.data, layer.weight.data)
    assert not np.array_equal(Linear(4, 3, rng=1).weight.data, layer.weight.data)
    assert np.abs(layer.weight.data).max() <= 0.5  # uniform in [-1/sqrt(4), 1/sqrt(4)]
    x = np.arange(8.0).reshape(2, 4)
    np.testing.assert_allclose(layer(x).data, x @ layer.weight.data + layer.bias.data)


def test_mlp_structure_relu_between_layers_only():
    model = MLP([4, 5, 6, 3], rng=0)
    assert [(layer.weight.shape, layer.bias.shape) for layer in model.layers] == [
        ((4, 5), (5,)),
        ((5, 6), (6,)),
        ((6, 3), (3,)),
    ]
    assert len(model.parameters()) == 6 and len({id(p) for p in model.parameters()}) == 6
    x = np.random.default_rng(1).standard_normal((7, 4))
    h = x
    for k, layer in enumerate(model.layers):
        h = h @ layer.weight.data + layer.bias.data
        if k < 2:
            h = np.maximum(h, 0)
    out = model(Tensor(x))
    np.testing.assert_allclose(out.data, h)
    assert (out.data < 0).any()  # no ReLU after the last layer: logits can be negative
    assert repr(model) == "MLP([4, 5, 6, 3])"
    np.testing.assert_array_equal(
        MLP([4, 5, 3], rng=3).layers[1].weight.data, MLP([4, 5, 3], rng=3).layers[1].weight.data
    )


def test_module_parameters_are_found_in_attributes_once():
    class Shared(Module):
        def __init__(self):
            self.a = Linear(2, 2, rng=0)
            self.again = self.a
            self.scale = Tensor(1.0, requires_grad=True)
            self.constant = Tensor(2.0)

    assert len(Shared().parameters()) == 3


def test_cross_entropy_against_pytorch():
    rng = np.random.default_rng(0)
    logits, labels = rng.standard_normal((8, 5)) * 3, rng.integers(0, 5, 8)
    z = Tensor(logits, requires_grad=True)
    loss = cross_entropy(z, labels)
    loss.backward()
    tz = torch.tensor(logits, requires_grad=True)
    tloss = torch.nn.functional.cross_entropy(tz, torch.tensor(labels))
    tloss.backward()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-12)
    np.testing.assert_allclose(z.grad, tz.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_cross_entropy_is_stable_for_huge_logits():
    loss = cross_entropy(Tensor([[1000.0, -1000.0], [0.0, 800.0]]), np.array([0, 0]))
    assert loss.item() == pytest.approx(400.0)


@pytest.mark.parametrize("labels", [np.array([0, 2]), [0, 2], Tensor([0.0, 2.0]), np.array([0, 2], dtype=np.uint8)])
def test_cross_entropy_accepts_integer_labels(labels):
    assert np.isfinite(cross_entropy(Tensor(np.zeros((2, 3))), labels).item())


@pytest.mark.parametrize(
    "labels, error, pattern",
    [
        (np.array([0.0, 1.0]), TypeError, "integers"),
        (Tensor([0.5, 1.0]), TypeError, "whole-number"),
        (np.array([0, 3]), ValueError, r"0\.\.2"),
        (np.array([-1, 0]), ValueError, r"0\.\.2"),
        (np.array([0, 1, 2]), ValueError, r"shape \(2,\)"),
        (np.array([True, False]), TypeError, "whole-number"),
    ],
)
def test_cross_entropy_rejects_bad_labels(labels, error, pattern):
    with pytest.raises(error, match=pattern):
        cross_entropy(Tensor(np.zeros((2, 3))), labels)


def test_cross_entropy_needs_2d_logits():
    with pytest.raises(ValueError, match=r"\(N, C\)"):
        cross_entropy(Tensor(np.zeros(3)), np.array([0]))


def test_sgd_step_and_zero_grad():
    w = Tensor([1.0, -2.0], requires_grad=True)
    unused = Tensor([5.0], requires_grad=True)
    opt = SGD([w, unused], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.data, [0.8, -1.6])
    assert unused.data.tolist() == [5.0]  # no gradient, no move
    opt.zero_grad()
    assert w.grad is None
    with pytest.raises(ValueError, match="no parameters"):
        SGD([], lr=0.1)


def test_sgd_refuses_non_leaves_and_bad_learning_rates_and_steps_duplicates_once():
    w = Tensor([1.0, -2.0], requires_grad=True)
    with pytest.raises(ValueError, match="leaf Tensors.*'mul'"):
        SGD([w * 2.0], lr=0.1)
    with pytest.raises(ValueError, match="requires_grad=True"):
        SGD([Tensor([1.0])], lr=0.1)
    for lr in (0.0, -0.1, float("nan"), float("inf"), "0.1", True):
        with pytest.raises(ValueError, match="positive number"):
            SGD([w], lr=lr)
    opt = SGD([w, w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.data, [0.8, -1.6])  # once, not twice


def test_sgd_behaves_like_torch_optim_sgd_on_duplicates_and_non_leaves():
    torch = pytest.importorskip("torch")
    w = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(ValueError, match="non-leaf"):
        torch.optim.SGD([w * 2.0], lr=0.1)
    with pytest.raises(ValueError, match="negative|Invalid learning rate"):
        torch.optim.SGD([w], lr=-0.1)


def test_module_zero_grad():
    model = MLP([2, 3, 2], rng=0)
    cross_entropy(model(np.ones((1, 2))), np.array([1])).backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_training_matches_pytorch_step_by_step():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((10, 3)), rng.integers(0, 2, 10)
    model = MLP([3, 4, 2], rng=0)
    tparams = [torch.tensor(p.data.copy(), requires_grad=True) for p in model.parameters()]
    opt, topt = SGD(model.parameters(), lr=0.5), torch.optim.SGD(tparams, lr=0.5)
    for _ in range(5):
        opt.zero_grad()
        topt.zero_grad()
        cross_entropy(model(x), y).backward()
        h = torch.relu(torch.tensor(x) @ tparams[0] + tparams[1]) @ tparams[2] + tparams[3]
        torch.nn.functional.cross_entropy(h, torch.tensor(y)).backward()
        opt.step()
        topt.step()
    for p, t in zip(model.parameters(), tparams):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_seeded_mlp_learns_iris():
    X, y, _, _ = load_iris()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    model = MLP([4, 16, 3], rng=0)
    opt = SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(300):
        opt.zero_grad()
        loss = cross_entropy(model(X), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    accuracy = (model(X).data.argmax(axis=1) == y).mean()
    assert accuracy >= 0.95
    assert losses[-1] < 0.2 < losses[0]
