"""The backward sweep of the Tensor engine: walk a recorded graph from an output, child
before parent, and pull the gradient back through every node with the op table's VJP
rules. It sits below ``course_lib.tensor.core``, which imports it: ``Tensor.backward``
runs the sweep and adds the results into the leaves' ``.grad``;
:mod:`course_lib.tensor.autograd` returns them instead. The sweep knows nodes by their
fields (``_parents``, ``_op``, ``_params``, versions) and makes the few Tensors it needs
with the ``record`` its caller passes. :func:`on_sweep` calls a function at the start of
every sweep (chapter 10 counts sweeps with it).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import numpy as np

from course_lib.tensor.grad_mode import set_grad_enabled
from course_lib.tensor.table import OPS
from course_lib.toposort import child_count_order

__all__ = ["on_sweep"]

Tensor = Any
"""A Tensor of ``course_lib.tensor.core`` (which imports this module, so it is not named here)."""

_parents_of = attrgetter("_parents")
_hooks: list[Callable[[Tensor], None]] = []


def on_sweep(hook: Callable[[Tensor], None]) -> Callable[[], None]:
    """Call ``hook(output)`` at the start of every backward sweep (``backward()`` and
    ``gradients()``); returns the function that removes the hook again."""
    _hooks.append(hook)
    return lambda: _hooks.remove(hook)


def _backprop(
    root: Tensor,
    seed: Tensor,
    create_graph: bool,
    on_grad: Callable[[Tensor, Tensor, bool], None],
    record: Callable[..., Tensor],
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
    ``record`` is ``course_lib.tensor.record``, for the Tensors the sweep makes.
    """
    for hook in _hooks:
        hook(root)
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
                if type(result) is type(g) and result._data.shape == parent._data.shape:  # a Tensor, as expected
                    contribution = result
                else:
                    contribution = _checked(result, i, node, record)
                if create_graph and (
                    op.order == 1
                    or isinstance(result, (np.ndarray, numbers.Number))
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


def _checked(result: Any, i: int, node: Tensor, record: Callable[..., Tensor]) -> Tensor:
    """A rule's result as a Tensor of argument ``i``'s shape (a number or a real array
    becomes a constant), or a clear error."""
    if isinstance(result, (np.ndarray, numbers.Real)) and np.asarray(result).dtype.kind in "biuf":
        result = record("", np.array(result, dtype=np.float64), ())
    elif not hasattr(result, "_parents"):  # not a Tensor
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
