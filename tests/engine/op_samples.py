"""How the op-table test samples and checks each Tensor op: test machinery, kept out of the
rule table (``course_lib/tensor/rules.py``).

``SAMPLES[op]`` draws random inputs from the op's domain: its argument arrays and its
keyword parameters. ``TORCH[op]`` is PyTorch's counterpart, a function name or
``f(torch, *tensors, **params)``; an op missing from ``TORCH`` has none. Every op of the
table needs a sampler: ``tests/engine/test_ops.py`` fails for one without.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Sample = Callable[[np.random.Generator], tuple[list[np.ndarray], dict[str, Any]]]


def _shape(rng: np.random.Generator, min_dims: int = 0, max_dims: int = 3) -> tuple[int, ...]:
    return tuple(int(n) for n in rng.integers(1, 4, rng.integers(min_dims, max_dims + 1)))


def elementwise(*ranges: tuple[float, float]) -> Sample:
    """Arguments whose shapes broadcast against each other (leading axes left out, axes of
    size 1), argument ``i`` uniform in ``ranges[i]``."""

    def sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        full = _shape(rng)
        arrays = []
        for k, (low, high) in enumerate(ranges):
            shape = (
                full
                if k == 0
                else tuple(1 if rng.random() < 0.3 else n for n in full[rng.integers(0, len(full) + 1) :])
            )
            arrays.append(rng.uniform(low, high, shape))
        return arrays, {}

    return sample


def _random_axis(rng: np.random.Generator, ndim: int) -> int | tuple[int, ...] | None:
    """None, one axis (maybe negative) or a tuple of distinct axes of an array with ``ndim`` axes."""
    kind = rng.integers(0, 3)
    if kind == 0 or ndim == 0:
        return None
    if kind == 1:
        return int(rng.integers(-ndim, ndim))
    return tuple(int(a) for a in rng.choice(ndim, rng.integers(1, ndim + 1), replace=False))


def reduction(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One array, an axis (None, one or several) and keepdims."""
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {
        "axis": _random_axis(rng, len(shape)),
        "keepdims": bool(rng.integers(0, 2)),
    }


def along_axis(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One array and one axis (softmax and friends)."""
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {"axis": int(rng.integers(-len(shape), len(shape)))}


def _matmul_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, k, m, batch = (int(v) for v in rng.integers(1, 4, 4))
    a_shape, b_shape = [
        ((k,), (k, m)),
        ((n, k), (k,)),
        ((n, k), (k, m)),
        ((batch, n, k), (k, m)),
        ((batch, n, k), (1, k, m)),
        ((k,), (batch, k, m)),
    ][rng.integers(0, 6)]
    return [rng.uniform(-2.0, 2.0, a_shape), rng.uniform(-2.0, 2.0, b_shape)], {}


def _affine_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, k, m = (int(v) for v in rng.integers(1, 4, 3))
    x_shape = (n, k) if rng.integers(0, 2) else (k,)
    return [rng.uniform(-2.0, 2.0, s) for s in (x_shape, (k, m), (m,))], {}


def _reshape_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {"shape": (-1,) if rng.integers(0, 2) else shape[::-1]}


def _transpose_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng, 2)
    return [rng.uniform(-2.0, 2.0, shape)], {"axes": tuple(int(a) for a in rng.permutation(len(shape)))}


def _broadcast_to_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    target = (2,) + _shape(rng, 1)
    shape = tuple(1 if rng.random() < 0.5 else n for n in target[1:])
    return [rng.uniform(-2.0, 2.0, shape)], {"shape": target}


def _index(rng: np.random.Generator, shape: tuple[int, int]) -> Any:
    """An index into an array of ``shape``: repeated integers, a slice, a mask or a mix."""
    kind = rng.integers(0, 4)
    if kind == 0:
        return (rng.integers(0, shape[0], 4),)  # repeats: their gradients add up
    if kind == 1:
        return (slice(1, None), rng.integers(0, shape[1], 2))
    if kind == 2:
        return (rng.random(shape) < 0.5,)
    return (int(rng.integers(0, shape[0])), slice(None, None, 2))


def _getitem_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = (3, 4)
    return [rng.uniform(-2.0, 2.0, shape)], {"index": _index(rng, shape)}


def _scatter_add_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = (3, 4)
    index = _index(rng, shape)
    return [rng.uniform(-2.0, 2.0, np.zeros(shape)[index].shape)], {"index": index, "shape": shape}


def _where_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    arrays, _ = elementwise((-2.0, 2.0), (-2.0, 2.0))(rng)
    return arrays, {"cond": rng.random(arrays[0].shape) < 0.5}


def _stack_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng)
    return [rng.uniform(-2.0, 2.0, shape) for _ in range(rng.integers(1, 4))], {
        "axis": int(rng.integers(-len(shape) - 1, len(shape) + 1))
    }


def _torch_axis(a: Any, axis: Any) -> Any:
    """PyTorch's ``dim`` for a NumPy ``axis`` (``None``: every axis)."""
    return tuple(range(a.ndim)) if axis is None else axis


def _torch_axis(a: Any, axis: Any) -> Any:
    """PyTorch's ``dim`` for a NumPy ``axis`` (``None``: every axis)."""
    return tuple(range(a.ndim)) if axis is None else axis


def _clip_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    return elementwise((-2.0, 2.0))(rng)[0], {"low": -1.0, "high": 0.5}


UNARY = elementwise((-2.0, 2.0))
BINARY = elementwise((-2.0, 2.0), (-2.0, 2.0))
POSITIVE = elementwise((0.1, 4.0))

# Central differences with the step 1e-6 straddle a corner or a jump of an op that lies within 1e-6 of a
# drawn element (about once in a million elements), and then disagree with a right rule. The samplers
# of such ops keep their inputs a visible distance from those points.
APART = 1e-3


def away_from(sample: Sample, *corners: float) -> Sample:
    """``sample``, with every element of the first array that lies within ``APART`` of a corner moved
    past it (by ``2 APART``)."""

    def moved(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        arrays, params = sample(rng)
        for corner in corners:
            arrays[0][np.abs(arrays[0] - corner) < APART] += 2 * APART
        return arrays, params

    return moved


def untied(sample: Sample) -> Sample:
    """``sample`` drawn again until no two elements of its arrays (broadcast against each other)
    lie within ``APART`` of each other: ``max`` and ``ge`` have a corner where two of them tie."""

    def drawn(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        while True:
            arrays, params = sample(rng)
            if len(arrays) > 1:
                gaps = np.abs(np.subtract(*arrays[:2]))
            else:
                gaps = np.diff(np.sort(arrays[0], axis=None))
            if gaps.size == 0 or gaps.min() >= APART:
                return arrays, params

    return drawn


SAMPLES: dict[str, Sample] = {
    "add": BINARY,
    "sub": BINARY,
    "mul": BINARY,
    "div": elementwise((-2.0, 2.0), (0.5, 2.0)),
    "pow": elementwise((0.5, 2.0), (-2.0, 2.0)),
    "matmul": _matmul_sample,
    "affine": _affine_sample,
    "neg": UNARY,
    "exp": UNARY,
    "log": POSITIVE,
    "sin": UNARY,
    "cos": UNARY,
    "tanh": UNARY,
    "sigmoid": UNARY,
    "relu": away_from(UNARY, 0.0),
    "sqrt": POSITIVE,
    "abs": away_from(UNARY, 0.0),
    "sign": away_from(UNARY, 0.0),
    "ge": untied(BINARY),
    "clip": away_from(_clip_sample, -1.0, 0.5),
    "where": _where_sample,
    "sum": reduction,
    "mean": reduction,
    "max": untied(reduction),
    "softmax": along_axis,
    "log_softmax": along_axis,
    "reshape": _reshape_sample,
    "transpose": _transpose_sample,
    "broadcast_to": _broadcast_to_sample,
    "getitem": _getitem_sample,
    "scatter_add": _scatter_add_sample,
    "identity": UNARY,
    "detach": UNARY,
    "stack": _stack_sample,
}

TORCH: dict[str, str | Callable[..., Any]] = {
    **{name: name for name in ("add", "sub", "mul", "div", "pow", "matmul", "neg", "exp", "log", "sin", "cos")},
    **{name: name for name in ("tanh", "sigmoid", "relu", "sqrt", "abs", "sign")},
    "affine": lambda torch, x, weight, bias: x @ weight + bias,
    "clip": lambda torch, a, low, high: torch.clamp(a, low, high),
    # A mask of 0.0 and 1.0 with a zero gradient (PyTorch's own comparisons are not differentiable).
    "ge": lambda torch, a, b: (a >= b).to(a.dtype) + 0.0 * (a + b),
    "where": lambda torch, x, y, cond: torch.where(torch.as_tensor(cond), x, y),
    "sum": lambda torch, a, axis, keepdims: torch.sum(a, dim=_torch_axis(a, axis), keepdim=keepdims),
    "mean": lambda torch, a, axis, keepdims: torch.mean(a, dim=_torch_axis(a, axis), keepdim=keepdims),
    "max": lambda torch, a, axis, keepdims: torch.amax(a, dim=_torch_axis(a, axis), keepdim=keepdims),
    "softmax": lambda torch, a, axis: torch.softmax(a, dim=axis),
    "log_softmax": lambda torch, a, axis: torch.log_softmax(a, dim=axis),
    "reshape": lambda torch, a, shape: a.reshape(shape),
    "transpose": lambda torch, a, axes: a.permute(axes),
    "broadcast_to": lambda torch, a, shape: a.broadcast_to(shape),
    "getitem": lambda torch, a, index: a[tuple(torch.as_tensor(i) if isinstance(i, np.ndarray) else i for i in index)],
    "stack": lambda torch, *parts, axis: torch.stack(parts, dim=axis),
}
