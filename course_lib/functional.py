"""Function transformations: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``, ``hessian``.

Each transform takes a function ``f`` written with Tensor operations and returns a new
function. Inputs may be Tensors, numbers or ndarrays (converted to float64 Tensors);
``f`` returns a Tensor (a plain number is accepted as a constant). Results are always
Tensors, never bare arrays: use ``.data`` or ``.item()`` for the values.

**Nesting.** Inside a transform the VJP rules are *recorded* (``create_graph=True``), so
a result such as ``grad(f)(x)`` is itself a Tensor with a graph leading back to ``x``
and to any other tensor that requires grad. An outer transform differentiates that
graph: ``grad(grad(grad(sin)))(x)`` is ``-cos(x)``. (A result therefore reports
``requires_grad=True``; ``.detach()`` drops the graph.)

**No silent zeros.** If the output does not depend on a differentiated input (no recorded
operation leads from it to the output, typically because ``f`` left the graph with
``.item()``, ``float()``, ``.data`` or ``Tensor(...)``), every transform raises a clear
error instead of returning zeros; pass ``allow_unused=True`` when that is expected.

**No perturbation confusion.** A transform never differentiates with respect to the
object it was handed. It makes a fresh node for its input: a new leaf for a plain value,
or, when the input already belongs to an outer transform's graph, an ``identity`` node
on top of it. Gradients are taken with respect to that node only, so in
``d/dx [x * d/dy (x + y)]`` the inner derivative sees the closed-over ``x`` as a
constant (it is 1, and the whole derivative is 1, not 2), while the outer
transform still sees every path through the identity node back to its own input.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_lib.tensor import Tensor, gradients, record, set_grad_enabled, stack

__all__ = ["value_and_grad", "grad", "vjp", "jvp", "jacobian", "hessian"]

ArgNum = int | Sequence[int]


def _fresh_input(x: Any) -> Tensor:
    """A node to differentiate with respect to, standing for the value ``x``."""
    if isinstance(x, Tensor) and x.requires_grad:
        return record("identity", x._data, (x,))  # keeps the path to an outer transform's variable
    return Tensor(x._data if isinstance(x, Tensor) else x, requires_grad=True)


def _substitute(args: tuple, argnum: ArgNum) -> tuple[list, tuple[Tensor, ...]]:
    """``args`` with the differentiated positions replaced by fresh input nodes, and those nodes."""
    positions = (argnum,) if isinstance(argnum, int) else tuple(argnum)
    substituted = list(args)
    for i in positions:
        if not -len(substituted) <= i < len(substituted):
            raise IndexError(f"argnum {i} is out of range: the function was called with {len(args)} argument(s)")
        substituted[i] = _fresh_input(substituted[i])
    return substituted, tuple(substituted[i] for i in positions)


def _output(y: Any, name: str) -> Tensor:
    if isinstance(y, Tensor):
        return y
    if isinstance(y, (int, float, np.integer, np.floating, np.ndarray)):
        return Tensor(y)  # f ignored its input: a constant
    raise TypeError(f"{name} needs f to return a Tensor (build it with Tensor operations), got {type(y).__name__}")


def value_and_grad(
    f: Callable[..., Any], argnum: ArgNum = 0, allow_unused: bool = False
) -> Callable[..., tuple[Tensor, Any]]:
    """``f`` -> a function returning ``(f(*args), gradient)``.

    ``f`` must return a scalar (one element). The gradient is taken with respect to
    argument ``argnum``: a Tensor of that argument's shape, or a tuple of Tensors when
    ``argnum`` is a tuple. An argument ``f`` does not depend on is an error, or gets
    zeros with ``allow_unused=True``.
    """

    def value_and_grad_f(*args: Any) -> tuple[Tensor, Any]:
        with set_grad_enabled(True):
            call_args, inputs = _substitute(args, argnum)
            y = _output(f(*call_args), "grad")
            if y.size != 1:
                raise ValueError(
                    f"grad needs f to return a scalar, but f returned shape {y.shape}: "
                    "reduce it (e.g. .sum()) or use vjp / jacobian for a non-scalar output"
                )
            grads = gradients(y, inputs, create_graph=True, allow_unused=allow_unused)
        return y, (grads[0] if isinstance(argnum, int) else grads)

    return value_and_grad_f


def grad(f: Callable[..., Any], argnum: ArgNum = 0, allow_unused: bool = False) -> Callable[..., Any]:
    """``f`` -> its gradient function ``x -> df/dx`` (a Tensor of ``x``'s shape).

    Nests to any order: ``grad(grad(f))`` is the second derivative (the derivative of a
    gradient that does not depend on ``x``, as for a linear ``f``, needs ``allow_unused=True``).
    """
    value_and_grad_f = value_and_grad(f, argnum, allow_unused)

    def grad_f(*args: Any) -> Any:
        return value_and_grad_f(*args)[1]

    return grad_f


def vjp(f: Callable[[Tensor], Any], x: Any, allow_unused: bool = False) -> tuple[Tensor, Callable[[Any], Tensor]]:
    """``(y, vjp_fn)`` with ``y = f(x)`` and ``vjp_fn(v) = v^T J``, the vector-Jacobian product.

    ``v`` has ``y``'s shape; ``vjp_fn(v)`` has ``x``'s shape. The forward pass runs once;
    ``vjp_fn`` may be called any number of times (each call is one reverse sweep). A ``y``
    that does not depend on ``x`` is an error, or gives zeros with ``allow_unused=True``.
    """
    with set_grad_enabled(True):
        x_in = _fresh_input(x)
        y = _output(f(x_in), "vjp")

    def vjp_fn(v: Any) -> Tensor:
        with set_grad_enabled(True):
            return gradients(y, (x_in,), seed=v, create_graph=True, allow_unused=allow_unused)[0]

    return y, vjp_fn


def jvp(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], allow_unused: bool = False
) -> tuple[Tensor, Tensor]:
    """``(f(*primals), J · tangents)``: the Jacobian-vector product (the directional derivative).

    Same convention as :func:`course_lib.forward.jvp` and ``jax.jvp``: ``primals`` and
    ``tangents`` are tuples of the same length, one tangent per argument of ``f``, each
    of its argument's shape; ``J · tangents`` sums the contributions of all arguments.

    Done with reverse mode only, by the *double-VJP trick*: ``u -> J^T u`` is a linear
    function of a dummy cotangent ``u``, recorded in the graph; its own VJP with the
    tangents is ``(J^T)^T v = J v``. It costs two reverse sweeps instead of one
    forward-mode pass (:mod:`course_lib.forward` does the forward-mode version with dual
    numbers). ``allow_unused`` is as in :func:`vjp`. The older call ``jvp(f, x, v)`` for
    one argument still works but is deprecated.
    """
    if not isinstance(primals, (tuple, list)):
        warnings.warn(
            "jvp(f, x, v) is deprecated: pass tuples, jvp(f, (x,), (v,)), as forward.jvp and jax.jvp do",
            DeprecationWarning,
            stacklevel=2,
        )
        primals, tangents = (primals,), (tangents,)
    if not isinstance(tangents, (tuple, list)) or len(tangents) != len(primals):
        given = f"{len(tangents)} tangent(s)" if isinstance(tangents, (tuple, list)) else "tangents that are no tuple"
        raise ValueError(
            f"jvp needs one tangent per primal, as tuples of the same length, e.g. jvp(f, (x,), (v,)); "
            f"got {len(primals)} primal(s) and {given}"
        )
    with set_grad_enabled(True):
        inputs = tuple(_fresh_input(x) for x in primals)
        directions = tuple(t if isinstance(t, Tensor) else Tensor(t) for t in tangents)
        for k, (x, t) in enumerate(zip(inputs, directions)):
            if t.shape != x.shape:
                raise ValueError(
                    f"jvp: tangent {k} has shape {t.shape} but primal {k} has shape {x.shape}; they must match"
                )
        y = _output(f(*inputs), "jvp")
        u = Tensor(np.ones(y.shape), requires_grad=True)  # any value: J v does not depend on it
        cotangents = gradients(y, inputs, seed=u, create_graph=True, allow_unused=allow_unused)  # J_k^T u
        pairing = sum((c * t).sum() for c, t in zip(cotangents, directions))  # sum_k <J_k^T u, t_k>, linear in u
        # A pairing without u means J^T u is structurally zero (x ** 0): J v is zeros, as grad gives.
        return y, gradients(pairing, (u,), create_graph=True, allow_unused=True)[0]


def jacobian(f: Callable[..., Any], argnum: int = 0, allow_unused: bool = False) -> Callable[..., Tensor]:
    """``f`` -> a function returning the Jacobian of shape ``y.shape + x.shape``.

    Entry ``[i..., j...]`` is d y[i...] / d x[j...]. Built row by row: one VJP per output
    element, with the unit vectors as seeds (reverse mode pays per output). A ``y`` that
    does not depend on ``x`` is an error, or gives zeros with ``allow_unused=True``.
    """

    def jacobian_f(*args: Any) -> Tensor:
        with set_grad_enabled(True):
            call_args, (x_in,) = _substitute(args, argnum)
            y = _output(f(*call_args), "jacobian")
            rows = [
                gradients(y, (x_in,), seed=unit.reshape(y.shape), create_graph=True, allow_unused=allow_unused)[0]
                for unit in np.eye(y.size)
            ]
            return stack(rows).reshape(y.shape + x_in.shape)

    return jacobian_f


def hessian(f: Callable[..., Any], argnum: int = 0, allow_unused: bool = False) -> Callable[..., Tensor]:
    """``f`` -> its Hessian function: the Jacobian of the gradient, shape ``x.shape + x.shape``.

    ``f`` must depend on ``x`` (unless ``allow_unused=True``); its gradient need not (the
    Hessian of a linear function is zero).
    """
    return jacobian(grad(f, argnum, allow_unused), argnum, allow_unused=True)
