"""``gradients``: the backward sweep as a function, like ``torch.autograd.grad``.

It returns the gradients instead of adding them into ``.grad`` and, with
``create_graph=True``, records the VJP rules so the results can be differentiated
again: what :mod:`course_lib.functional`'s transforms are built on.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_lib.check import _scalar_output, register_array_engine
from course_lib.tensor.backprop import _backprop, _parents_of
from course_lib.tensor.core import Tensor, _seed, record
from course_lib.toposort import child_count_order

__all__ = ["gradients", "values_and_gradients"]


def gradients(
    output: Tensor, inputs: Sequence[Tensor], seed: Any = None, create_graph: bool = False, allow_unused: bool = False
) -> tuple[Tensor, ...]:
    """The gradients of ``output`` with respect to ``inputs``, returned as Tensors.

    Like ``torch.autograd.grad``: nothing's ``.grad`` changes and only paths leading to
    ``inputs`` are followed. An input the output does not depend on is an error (its
    gradient would be zeros, most often because the computation left the graph); with
    ``allow_unused=True`` it gets zeros. ``seed`` is as in :meth:`~course_lib.tensor.Tensor.backward` (a
    Tensor seed that requires grad is kept in the graph). With ``create_graph=True`` the
    VJP rules are recorded, so the results carry a graph and can be differentiated again.
    """
    inputs = tuple(inputs)
    for x in inputs:
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise ValueError("gradients() needs inputs that are Tensors with requires_grad=True")
    seed = _seed(output, seed, "gradients()", keep_graph=create_graph)
    order = child_count_order(output, _parents_of) if output.requires_grad else []
    wanted = {id(x) for x in inputs}
    needed = set(wanted)
    for node in reversed(order):  # parents first: does the node lead to an input?
        if any(id(p) in needed for p in node._parents):
            needed.add(id(node))
    reached = {id(node) for node in order}
    unused = [i for i, x in enumerate(inputs) if id(x) not in reached]
    if unused and not allow_unused:
        x = inputs[unused[0]]
        raise ValueError(
            f"the output does not depend on input {unused[0]} ({f'{x.label!r}, ' if x.label else ''}shape {x.shape}): "
            "no recorded operation leads from it to the output, so its gradient would be zero everywhere. Usually "
            "the computation left the graph (.item(), float(), .data, .numpy(), Tensor(...) of a Tensor) or ran "
            "under no_grad(). If the output really does not depend on it, pass allow_unused=True to get zeros"
        )
    found: dict[int, Tensor] = {}

    def collect(node: Tensor, g: Tensor, owned: bool) -> None:
        if id(node) in wanted:
            found[id(node)] = g if owned or create_graph else record("", g._data.copy(), ())

    if id(output) in needed:
        _backprop(output, seed, create_graph, collect, record, needed, order)
    return tuple(found[id(x)] if id(x) in found else record("", np.zeros(x.shape), ()) for x in inputs)


def values_and_gradients(f: Callable[..., Any], inputs: Sequence[Any], with_grads: bool = True) -> tuple[float, list]:
    """``f``'s value at the arrays ``inputs`` and its gradient with respect to each (zeros
    where it does not depend on one): how :func:`course_lib.check.gradcheck` runs ``f`` on arrays."""
    tensors = [Tensor(x, requires_grad=True) for x in inputs]
    out = f(*tensors)
    if isinstance(out, numbers.Real):  # f ignores its inputs: every gradient is 0
        return float(out), [np.zeros(leaf.shape) for leaf in tensors]
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck() on arrays needs f to return a Tensor (or a number), got {type(out).__name__}.")
    value = _scalar_output(out.data)
    if with_grads and out.requires_grad:
        out.backward()
    return value, [np.zeros(leaf.shape) if leaf.grad is None else leaf.grad for leaf in tensors]


register_array_engine(values_and_gradients)
