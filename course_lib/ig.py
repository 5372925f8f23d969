"""Integrated Gradients (Sundararajan, Taly & Yan 2017).

The attribution of feature ``i`` is the path integral

    IG_i(x) = (x_i - x'_i) * integral_0^1 dF/dx_i(x' + alpha (x - x')) d alpha

along the straight line from a baseline ``x'`` (the argument ``baseline``) to the input
``x``, with the path variable ``alpha`` running from 0 to 1 (the book's notation page). A
quadrature rule replaces the integral by a weighted sum over ``m`` path points. All ``m`` points are
stacked into one batch of shape ``(m, *x.shape)``: one forward pass gives the ``m``
outputs, one backward pass gives the ``m`` gradients (each row of the batch only
influences its own output, so the gradient of ``sum(outputs)`` is the stack of the
per-point gradients).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike

from course_lib.tensor import Tensor, gradients, stack

__all__ = [
    "METHODS",
    "GRAD_METHODS",
    "quadrature",
    "path_points",
    "batched",
    "integrated_gradients",
    "completeness_errors",
]

#: The quadrature rules of :func:`integrated_gradients` (``method=``), see :func:`quadrature`.
METHODS = ("riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid", "gausslegendre")
GRAD_METHODS = ("ad", "fd")

Model = Callable[..., object]


def quadrature(method: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``alphas`` in [0, 1] and weights (summing to 1) of a rule with ``steps`` points.

    ``riemann_left``: 0, 1/m, ..., (m-1)/m; ``riemann_right``: 1/m, ..., 1 (the paper's
    rule); ``riemann_middle``: (k + 1/2)/m; all with weights 1/m. ``riemann_trapezoid``:
    m points 0, 1/(m-1), ..., 1 with weights 1/(m-1), halved at both ends, so the rule is
    exact for integrands linear in alpha. ``gausslegendre``: Legendre nodes and weights
    mapped from [-1, 1] to [0, 1], exact for polynomials of degree up to 2m - 1.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    if isinstance(steps, bool) or not isinstance(steps, Integral) or steps < 1:
        raise ValueError(f"steps must be a positive integer (the number of gradient evaluations), got {steps!r}")
    m = int(steps)
    if method == "gausslegendre":
        nodes, weights = np.polynomial.legendre.leggauss(m)
        return (nodes + 1) / 2, weights / 2  # t in [-1, 1] -> alpha = (t + 1) / 2, d alpha = dt / 2
    if method == "riemann_trapezoid":
        if m < 2:
            raise ValueError(
                "riemann_trapezoid needs steps >= 2: its points include both ends, alpha = 0 and alpha = 1"
            )
        weights = np.full(m, 1.0 / (m - 1))
        weights[[0, -1]] /= 2  # the end points only count half
        return np.linspace(0.0, 1.0, m), weights
    # Riemann sums: one point per interval [k/m, (k+1)/m], at its left end, middle or right end.
    offset = {"riemann_left": 0.0, "riemann_middle": 0.5, "riemann_right": 1.0}[method]
    return (np.arange(m) + offset) / m, np.full(m, 1.0 / m)


def path_points(x: ArrayLike, baseline: ArrayLike, alphas: ArrayLike) -> np.ndarray:
    """The points ``baseline + alpha (x - baseline)`` stacked into shape ``(len(alphas), *x.shape)``."""
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    alphas = np.asarray(alphas, dtype=float).reshape((-1,) + (1,) * x.ndim)
    return baseline + alphas * (x - baseline)


def batched(f_single: Callable) -> Callable:
    """Turn a function of ONE point into a function of a batch of points.

    ``f_single`` takes a point of ``x``'s shape and returns a scalar (or a vector of ``C``
    class scores). The wrapper takes a batch of shape ``(m, *x.shape)``, calls
    ``f_single`` on each row and stacks the results into ``(m,)`` or ``(m, C)``. It
    works for Tensor functions (``grad_method="ad"``: still a single backward pass,
    but m forward calls, so it is slower than a function written for batches) and for
    NumPy functions (``grad_method="fd"``).
    """

    def f_batch(points):
        if isinstance(points, Tensor):
            return stack([f_single(points[k]) for k in range(points.shape[0])])
        return np.stack([_as_float_array(f_single(p), "f_single's output") for p in points])

    f_batch.__name__ = f"batched({getattr(f_single, '__name__', 'f')})"
    return f_batch


def integrated_gradients(
    f: Model,
    x: ArrayLike | Tensor,
    baseline: ArrayLike | Tensor | None = None,
    steps: int = 50,
    method: str = "riemann_right",
    target: int | None = None,
    return_delta: bool = False,
    grad_method: str = "ad",
    fd_eps: float = 1e-6,
    allow_unused: bool = False,
    completeness_rtol: float | None = 0.05,
) -> np.ndarray | tuple[np.ndarray, float]:
    """Integrated Gradients of ``f`` at ``x`` relative to ``baseline`` (zeros by default).

    ``f`` takes a batch of path points of shape ``(m, *x.shape)`` and returns one value
    per point, shape ``(m,)``, or ``C`` values per point, shape ``(m, C)``, of which
    ``target`` picks the column to explain. (For a function of one point use
    :func:`batched`.) With ``grad_method="ad"`` the batch is a ``Tensor`` and ``f`` is
    called exactly once: one forward and one backward pass for all points. With
    ``grad_method="fd"`` the batch is an ndarray, ``f`` may be any black box (returning
    an ndarray or a Tensor), and the gradients are central differences with step
    ``fd_eps`` (two batched calls of ``f`` per input coordinate).

    ``f`` must treat the rows of the batch independently (no statistics across the
    batch axis, such as batch normalisation); a model's own ``.grad`` fields are left
    untouched.

    ``steps`` is the number of gradient evaluations of the rule ``method`` (one of
    :data:`METHODS`, see :func:`quadrature`). Integer inputs are converted to float64.
    Returns the attributions, an ndarray of ``x``'s shape; with ``return_delta=True``
    the pair ``(attributions, delta)`` where ``delta = sum(attributions) - (f(x) -
    f(baseline))`` is the completeness gap (zero for the exact integral). Without
    ``return_delta`` the gap is still checked: a warning says when it exceeds
    ``completeness_rtol`` times ``|f(x) - f(baseline)|`` (the paper's 5% by default;
    ``None`` turns the check off), since the attributions are then inaccurate (more
    ``steps`` or ``"gausslegendre"`` help).

    With ``grad_method="ad"`` an ``f`` whose output does not depend on its input (for
    instance because it left the graph through ``.item()``, ``.data`` or ``Tensor(...)``)
    is an error rather than zero attributions; ``allow_unused=True`` accepts it.
    """
    x = _as_float_array(x, "x")
    baseline = np.zeros_like(x) if baseline is None else _as_float_array(baseline, "baseline")
    if baseline.shape != x.shape:
        if baseline.ndim != 0:
            raise ValueError(
                f"baseline has shape {baseline.shape} but x has shape {x.shape}: pass a baseline "
                "of x's shape (or a single number used for every feature)"
            )
        baseline = np.full_like(x, baseline)
    if grad_method not in GRAD_METHODS:
        raise ValueError(
            f"unknown grad_method {grad_method!r}: choose 'ad' (reverse mode) or 'fd' (finite differences)"
        )
    alphas, weights = quadrature(method, steps)
    m = len(alphas)
    # The two ends ride along in the same batch, for the completeness gap: still one call of f.
    points = np.concatenate([path_points(x, baseline, alphas), baseline[None], x[None]])
    if grad_method == "ad":
        values, grads = _gradients_ad(f, points, target, allow_unused)
    else:
        values, grads = _gradients_fd(f, points, target, fd_eps)
    # Weighted average of the gradients along the path, times the displacement.
    attributions = (x - baseline) * np.tensordot(weights, grads[:m], axes=1)
    change = values[-1] - values[-2]
    delta = float(attributions.sum() - change)
    if return_delta:
        return attributions, delta
    if completeness_rtol is not None and abs(delta) > completeness_rtol * abs(change) and abs(delta) > 1e-8:
        warnings.warn(
            f"Integrated Gradients: the attributions sum to {attributions.sum():.6g} but f(x) - f(baseline) = "
            f"{change:.6g}; the completeness gap {abs(delta):.3g} is more than {completeness_rtol:g} of it, so the "
            f"{steps}-step {method!r} rule is too coarse here: use more steps or method='gausslegendre'",
            RuntimeWarning,
            stacklevel=2,
        )
    return attributions


def completeness_errors(
    f: Model,
    x: ArrayLike | Tensor,
    baseline: ArrayLike | Tensor | None = None,
    steps: Sequence[int] = (5, 20, 50),
    methods: Sequence[str] = METHODS,
    target: int | None = None,
    grad_method: str = "ad",
) -> dict[str, dict[int, float]]:
    """``|delta|`` of every rule in ``methods`` at every number of ``steps``: ``{method: {m: |delta|}}``."""
    table: dict[str, dict[int, float]] = {}
    for method in methods:
        table[method] = {}
        for m in steps:
            _, delta = integrated_gradients(
                f, x, baseline, steps=m, method=method, target=target, return_delta=True, grad_method=grad_method
            )
            table[method][m] = abs(delta)
    return table


def _as_float_array(value: object, name: str) -> np.ndarray:
    """``value`` (number, sequence, ndarray or Tensor) as a float64 ndarray; integers are converted."""
    if isinstance(value, Tensor):
        value = value.data
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}: pass floats (or integers)")
    return array.astype(float)


def _select(out_shape: tuple[int, ...], m: int, target: int | None) -> tuple:
    """The index picking the explained output: ``()`` for ``(m,)`` outputs, ``(slice, target)`` for ``(m, C)``."""
    if len(out_shape) == 1 and out_shape[0] == m:
        if target is not None:
            raise ValueError(
                f"f returns one value per point (shape {out_shape}), so there is no column to pick: "
                f"drop target={target!r}"
            )
        return ()
    if len(out_shape) != 2 or out_shape[0] != m:
        raise ValueError(
            f"f must return shape ({m},) or ({m}, C) for a batch of {m} path points, got {out_shape}: "
            "make f map each row of the batch to its output (use ig.batched for a function of one point)"
        )
    n_classes = out_shape[1]
    if target is None:
        if n_classes == 1:
            return (slice(None), 0)
        raise ValueError(
            f"f returns {n_classes} values per point: pass target=<column index> to choose which one to explain"
        )
    if isinstance(target, bool) or not isinstance(target, Integral) or not 0 <= target < n_classes:
        raise ValueError(
            f"target must be an integer in 0..{n_classes - 1} (f returns {n_classes} columns), got {target!r}"
        )
    return (slice(None), int(target))


def _gradients_ad(
    f: Model, points: np.ndarray, target: int | None, allow_unused: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Values and gradients of the explained output at every point: one call of ``f``, one backward pass."""
    batch = Tensor(points, requires_grad=True)
    out = f(batch)
    if not isinstance(out, Tensor):
        raise TypeError(
            f"with grad_method='ad' f must return a Tensor built from its input, got {type(out).__name__}: "
            "write f with Tensor operations, or use grad_method='fd' for a NumPy/black-box function"
        )
    index = _select(out.data.shape, len(points), target)
    explained = out[index] if index else out
    # d(sum of outputs)/d(batch): row k is the gradient at point k. Only the input's
    # gradient is computed; the .grad of f's parameters is left untouched. An output
    # that does not depend on the input is an error unless allow_unused (then zeros).
    (grads,) = gradients(explained, [batch], seed=np.ones(len(points)), allow_unused=allow_unused)
    return explained.data, grads.data


def _gradients_fd(f: Model, points: np.ndarray, target: int | None, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Values and central-difference gradients at every point: each input coordinate is shifted
    by +-eps in all rows at once, so each evaluation of ``f`` is batched."""
    m = len(points)

    def evaluate(batch: np.ndarray) -> np.ndarray:
        out = _as_float_array(f(batch), "f's output")
        index = _select(out.shape, m, target)
        return out[index] if index else out

    flat = points.reshape(m, -1)
    grads = np.empty_like(flat)
    for j in range(flat.shape[1]):
        shift = np.zeros_like(flat)
        shift[:, j] = eps
        up = evaluate((flat + shift).reshape(points.shape))
        down = evaluate((flat - shift).reshape(points.shape))
        grads[:, j] = (up - down) / (2 * eps)
    return evaluate(points), grads.reshape(points.shape)
