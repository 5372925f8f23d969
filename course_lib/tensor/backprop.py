"""The backward sweep of the Tensor engine: walk a recorded graph from an output, child
before parent, and pull the gradient back through every node with the op table's VJP
rules. ``Tensor.backward`` (installed here, with the sweep as ``core._backprop``) adds the
results into the leaves' ``.grad``; :mod:`course_lib.tensor.autograd` returns them instead.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

import numpy as np

from course_lib.tensor import core
from course_lib.tensor.arrays import real_array
from course_lib.tensor.core import Tensor, _lift, record
from course_lib.tensor.grad_mode import _tracing, set_grad_enabled
from course_lib.tensor.table import OPS
from course_lib.toposort import child_count_order

__all__ = ["backward"]

_parents_of = attrgetter("_parents")


def backward(output: Tensor, grad: Any = None) -> None:
    """What :meth:`~course_lib.tensor.Tensor.backward` does: add d(output)/d(leaf) to every leaf's ``.grad``."""
    core._backprop(output, _seed(output, grad, "backward()"), create_graph=False, on_grad=_store_grad)


def _seed(output: Tensor, grad: Any, caller: str, keep_graph: bool = False) -> Tensor:
    """The gradient that starts a backward pass at ``output``, checked against its shape."""
    if grad is None:
        if output._data.size != 1:
            raise ValueError(
                f"{caller} on a Tensor of shape {output.shape} needs a seed gradient of that shape: "
                f"pass np.ones({output.shape}) to get the gradient of y.sum(), or reduce the output to a scalar first"
            )
        return record("", np.ones(output.shape), ())
    if isinstance(grad, Tensor):
        seed = grad if keep_graph else record("", grad._data.copy(), ())
    else:
        seed = record("", real_array(grad, caller + "'s seed").astype(np.float64), ())
    if seed.shape != output.shape:
        raise ValueError(
            f"{caller}: the seed gradient has shape {seed.shape} but the output has shape {output.shape}; "
            f"the seed must have exactly the output's shape (it is not broadcast), e.g. np.ones({output.shape})"
        )
    return seed


def _backprop(
    root: Tensor,
    seed: Tensor,
    create_graph: bool,
    on_grad: Callable[[Tensor, Tensor, bool], None],
    needed: set[int] | None = None,
    order: list[Tensor] | None = None,
) -> None:
    """The reverse sweep shared by :meth:`Tensor.backward` and :func:`gradients`.

    Nodes come output first, each one after all of its children, so its gradient is
    complete when it is reached; ``on_grad(node, g, owned)`` then receives it (``owned``:
    the array was allocated by this sweep and is referenced nowhere else). A node whose
    inputs (or itself) got new values since it was recorded is an error. The node's
    VJP rules pull ``g`` back to every parent that requires grad (and, if ``needed``
    is given, leads to a node in it). A parent reached along several paths gets the
    sum: a fresh buffer, into which later contributions are added in place. ``order`` is
    the graph already sorted by a caller that needed it first, so it is sorted once.
    """
    grads: dict[int, Tensor] = {id(root): seed}
    owned: set[int] = set()  # ids of nodes whose buffer is ours to add into in place
    with set_grad_enabled(create_graph):
        for node in child_count_order(root, _parents_of) if order is None else order:
            g = grads.pop(id(node), None)
            if g is None:
                continue  # a constant, or a node that does not lead to what is needed
            on_grad(node, g, id(node) in owned)
            parents = node._parents
            if not parents or node._op == "detach":
                continue  # a leaf, or a stop-gradient (detach() or no_grad() while tracing): no edge back
            op = OPS.get(node._op)
            if op is None:
                raise NotImplementedError(
                    f"no VJP rule for op {node._op!r}: register one with defvjp({node._op!r}, ...)"
                )
            recorded = node._recorded
            if node._version > recorded:
                raise _changed(node, node)
            args = parents + node._params
            for i, parent in enumerate(parents):
                if parent._version > recorded:
                    raise _changed(node, parent, i)
                key = id(parent)
                if not parent.requires_grad or (needed is not None and key not in needed):
                    continue
                try:
                    rule = op.rules[i]
                except IndexError:
                    raise NotImplementedError(
                        f"op {node._op!r} has no VJP rule for argument {i}: give defvjp one rule per argument"
                    ) from None
                result = rule(g, node, *args)
                if type(result) is Tensor and result._data.shape == parent._data.shape:
                    contribution = result
                else:
                    contribution = _checked(result, i, node)
                if create_graph and (
                    op.order == 1
                    or not isinstance(result, Tensor)
                    or (g.requires_grad and not result.requires_grad and result._data.any())
                ):
                    # A rule written with NumPy (a result without graph that is no structural zero):
                    # its result is right, but it has no graph of its own.
                    contribution = record("first_order", contribution._data, (g,) + parents, (node._op,))
                previous = grads.get(key)
                if previous is None:
                    grads[key] = contribution
                    # A rule returns g itself, a view (its base is set) or a new array: only the last is ours.
                    data = contribution._data
                    if not create_graph and data is not g._data and data.base is None:
                        owned.add(key)
                elif key in owned:
                    previous._data += contribution._data
                else:
                    grads[key] = previous + contribution
                    if not create_graph:
                        owned.add(key)


def _changed(node: Tensor, changed: Tensor, i: int | None = None) -> RuntimeError:
    """The error for a node whose input ``i`` (or, with ``i`` None, the node itself) got new values."""
    which = "its output" if i is None else f"its input {i}"
    name = f"{changed.label!r}, " if changed.label else ""
    return RuntimeError(
        f"a Tensor needed to differentiate op {node._op!r} has been modified by an in-place change: {which} "
        f"({name}shape {changed.shape}) got new values (t.data = ...) after the op was recorded, so the "
        "gradient would be computed with the wrong values. Run the forward pass again after changing "
        "values (e.g. call the optimizer's step() only after backward())"
    )


def _checked(result: Any, i: int, node: Tensor) -> Tensor:
    """A rule's result as a Tensor of argument ``i``'s shape, or a clear error."""
    result = _lift(result)
    if result is NotImplemented:
        raise TypeError(f"the VJP rule of {node._op!r} for argument {i} must return a Tensor")
    expected = node._parents[i]._data.shape
    if result._data.shape != expected:
        raise ValueError(
            f"the VJP rule of {node._op!r} for argument {i} returned shape {result._data.shape}, but that argument "
            f"has shape {expected}: a gradient has its variable's shape (did the rule forget unbroadcast?)"
        )
    return result


def _store_grad(node: Tensor, g: Tensor, owned: bool) -> None:
    """``backward()``'s use of a finished gradient: leaves accumulate it, retained intermediates keep it."""
    if node._parents:
        if node._retains_grad:  # a copy: g may travel on to the parents (add passes it through)
            node.grad = g._data.copy()
    elif node.grad is None:
        node.grad = g._data if owned else g._data.copy()
    else:
        node.grad = node.grad + g._data


def _backward_method(self: Tensor, grad: Any = None) -> None:
    """Add d(self)/d(leaf) to the ``.grad`` of every leaf that requires grad.

    A one-element output seeds the gradient 1. Any other output needs ``grad``, the
    gradient of some scalar with respect to this Tensor, of exactly this shape (an
    ndarray, a number or a Tensor): the result is then the VJP ``grad`` times the
    Jacobian. Leaves *accumulate* across calls (call :meth:`zero_grad` or assign
    ``None`` in between). Intermediate nodes keep no gradient (as in PyTorch) unless
    :meth:`retain_grad` was called on them. The graph is kept, so calling
    ``backward()`` twice adds the same gradient to the leaves twice.
    """
    if _tracing.get() is not None:
        _tracing.get().backward(self)
    if not self.requires_grad:
        raise RuntimeError(
            "backward() on a Tensor that does not require grad: no input of its computation had "
            "requires_grad=True (or it was computed under no_grad()). Create the inputs with "
            "Tensor(data, requires_grad=True)."
        )
    backward(self, grad)


Tensor.backward = _backward_method
core._backprop = _backprop  # where backward() finds the sweep (chapter 10 wraps it there to count sweeps)
_backward_method.__name__, _backward_method.__qualname__ = "backward", "Tensor.backward"
