"""Neural-network pieces on top of the Tensor engine: ``Module``, ``Linear``, ``MLP``,
``cross_entropy`` and plain stochastic gradient descent (``SGD``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Real
from typing import Any

import numpy as np

from course_lib.tensor import Tensor, affine

__all__ = ["Module", "Linear", "MLP", "cross_entropy", "SGD"]

RNG = int | np.random.Generator | None
"""A seed or a NumPy Generator (``np.random.default_rng`` accepts both)."""


class Module:
    """A container of parameters. Subclasses store Tensors with ``requires_grad=True``
    (and other Modules, or lists of them) as attributes and define ``forward``."""

    def parameters(self) -> list[Tensor]:
        """Every parameter, found in the attributes (recursively), each once, in attribute order."""
        found: dict[int, Tensor] = {}
        for value in vars(self).values():
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                if isinstance(item, Module):
                    found.update((id(p), p) for p in item.parameters())
                elif isinstance(item, Tensor) and item.requires_grad:
                    found[id(item)] = item
        return list(found.values())

    def zero_grad(self) -> None:
        """Forget the accumulated gradients (set every parameter's ``.grad`` to ``None``)."""
        for p in self.parameters():
            p.grad = None

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define forward(x)")

    def __call__(self, x: Any) -> Tensor:
        return self.forward(x if isinstance(x, Tensor) else Tensor(x))


class Linear(Module):
    """``x @ weight + bias`` with ``weight`` of shape ``(in_features, out_features)``.

    Weights and biases start uniform in ``[-1/sqrt(in_features), 1/sqrt(in_features)]``
    (PyTorch's default scale), drawn from ``rng`` (a seed or a Generator).
    """

    def __init__(self, in_features: int, out_features: int, rng: RNG = None) -> None:
        rng = np.random.default_rng(rng)
        bound = 1.0 / np.sqrt(in_features)
        self.weight = Tensor(
            rng.uniform(-bound, bound, (in_features, out_features)), requires_grad=True, label="weight"
        )
        self.bias = Tensor(rng.uniform(-bound, bound, out_features), requires_grad=True, label="bias")

    def forward(self, x: Tensor) -> Tensor:
        return affine(x, self.weight, self.bias)  # x @ weight + bias as one node

    def __repr__(self) -> str:
        return f"Linear({self.weight.shape[0]}, {self.weight.shape[1]})"


class MLP(Module):
    """A multilayer perceptron: ``Linear`` layers of the given ``sizes`` with ReLU between them
    (none after the last one, whose outputs are the logits).

    ``MLP([4, 16, 3], rng=0)`` maps 4 features through 16 hidden units to 3 scores.
    """

    def __init__(self, sizes: Sequence[int], rng: RNG = None) -> None:
        if len(sizes) < 2:
            raise ValueError(f"MLP needs at least an input and an output size, e.g. [4, 16, 3]; got {list(sizes)}")
        rng = np.random.default_rng(rng)
        self.layers = [Linear(n_in, n_out, rng) for n_in, n_out in zip(sizes[:-1], sizes[1:])]

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers[:-1]:
            x = layer(x).relu()
        return self.layers[-1](x)

    def __repr__(self) -> str:
        sizes = [layer.weight.shape[0] for layer in self.layers] + [self.layers[-1].weight.shape[1]]
        return f"MLP({sizes})"


def cross_entropy(logits: Tensor, labels: Any) -> Tensor:
    """Mean negative log-likelihood of the integer ``labels`` under ``softmax(logits)``.

    ``logits`` has shape ``(N, C)``; ``labels`` holds ``N`` class indices in ``0..C-1``
    (an integer array, a list, or a Tensor of whole numbers). Computed from
    ``log_softmax``, so large logits do not overflow. Traced labels (integer arrays passed
    to a jitted or vmapped function) are checked for shape only: the pick is the op ``take``.
    """
    if not isinstance(logits, Tensor) or logits.ndim != 2:
        shape = logits.shape if isinstance(logits, Tensor) else type(logits).__name__
        raise ValueError(f"cross_entropy needs logits as a Tensor of shape (N, C), got {shape}")
    if getattr(labels, "_data", None) is not None and labels._data.dtype.kind in "iu":  # traced labels
        if labels.shape != logits.shape[:1]:
            raise ValueError(f"labels must have shape ({len(logits)},), one class index per row; got {labels.shape}")
    else:
        labels = _class_indices(labels, *logits.shape)
    log_probs = logits.log_softmax(axis=-1)
    return -log_probs[np.arange(len(labels)), labels].mean()


def _class_indices(labels: Any, n: int, n_classes: int) -> np.ndarray:
    values = labels.data if isinstance(labels, Tensor) else np.asarray(labels)
    if values.dtype.kind == "f" and not isinstance(labels, Tensor):
        raise TypeError(
            f"labels must be integers (class indices), got dtype {values.dtype}: convert with labels.astype(int)"
        )
    if values.dtype.kind not in "iuf" or (values.dtype.kind == "f" and not np.all(values == np.round(values))):
        raise TypeError(f"labels must be whole-number class indices, got dtype {values.dtype}")
    if values.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), one class index per row of logits; got {values.shape}")
    if n and (values.min() < 0 or values.max() >= n_classes):
        raise ValueError(
            f"labels must lie in 0..{n_classes - 1} (logits have {n_classes} columns); "
            f"got {values.min()}..{values.max()}"
        )
    return values.astype(np.intp)


class SGD:
    """Plain gradient descent: ``p.data = p.data - lr * p.grad`` for every parameter with a gradient.

    ``params`` are leaves that require grad (a computed Tensor would be recomputed, not
    learned), each updated once even if listed twice; ``lr`` is a positive number. A step
    gives the parameters new values, so a graph recorded before it can no longer be
    differentiated (call ``backward()`` before ``step()``).
    """

    def __init__(self, params: Iterable[Tensor], lr: float) -> None:
        self.params = list({id(p): p for p in params}.values())  # each parameter once, in order
        if not self.params:
            raise ValueError("SGD got no parameters: pass model.parameters()")
        for p in self.params:
            if not isinstance(p, Tensor) or not p.requires_grad:
                raise ValueError(f"SGD updates Tensors with requires_grad=True, got {p!r}: pass model.parameters()")
            if p._parents:
                raise ValueError(
                    f"SGD can only update leaf Tensors, but one parameter was computed by op {p._op!r}: "
                    "optimise the leaves it was computed from (model.parameters())"
                )
        if isinstance(lr, bool) or not isinstance(lr, (float, Real)) or not 0 < lr < math.inf:
            raise ValueError(f"the learning rate must be a positive number, got {lr!r}")
        self.lr = float(lr)

    def step(self) -> None:
        for p in self.params:
            if p.grad is not None:
                p.data = p.data - self.lr * p.grad  # new values, outside any graph

    def zero_grad(self) -> None:
        """Forget the gradients (``.grad = None``), ready for the next backward pass."""
        for p in self.params:
            p.grad = None
