"""The op table of the Tensor engine: one row per op, its forward and its VJP rules.

The table knows no Tensor: it is the registry the backward pass reads
(``course_lib.tensor.backprop``) and the rules fill (``course_lib.tensor.rules``).
A VJP rule for argument ``i`` of an op is ``rule(g, out, *parents, *params)``: ``g`` is
the gradient arriving at the op's output ``out``; it returns ``g`` pulled back to
argument ``i`` (a Tensor of that argument's shape).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

__all__ = ["OPS", "VJP_RULES", "Op", "defvjp", "defvjp_argnum"]

Rule = Callable[..., Any]


class Rules(Protocol):
    """An op's VJP rules: ``rules[i]`` is the rule for argument ``i``."""

    def __getitem__(self, i: int, /) -> Rule: ...


class Op:
    """One row of the op table ``OPS``: everything the engine knows about an op.

    - ``rules``: the VJP, ``rules[i](g, out, *parents, *params)`` for argument ``i``;
    - ``order``: ``None`` for rules written with Tensor operations (differentiable to any
      order), ``1`` for rules written with NumPy (differentiable once; a second
      derivative through them raises);
    - ``call(*tensors, **params)``: the forward, applying the op as a user would (the
      Tensor method or function that records it);
    - ``function``: whether ``course_lib.tensor`` exports ``call`` as a function of its own
      (``exp(x)`` beside ``x.exp()``).
    """

    __slots__ = ("name", "rules", "order", "call", "function")

    def __init__(
        self, name: str, rules: Rules, order: int | None, call: Callable[..., Any] | None, function: bool
    ) -> None:
        self.name, self.rules, self.order, self.call, self.function = name, rules, order, call, function

    def __repr__(self) -> str:
        return f"Op({self.name!r}" + (", order=1)" if self.order == 1 else ")")


OPS: dict[str, Op] = {}
"""op name -> :class:`Op`. A rule returns ``g`` itself, a view of ``g`` or a new Tensor,
never one it keeps elsewhere (the backward pass adds into new ones in place)."""
VJP_RULES = OPS
"""The op table under the name the chapters use for it (the same dict as ``OPS``)."""

_methods: dict[str, Callable[..., Any]] = {}
"""Where an op's default forward is looked up: the Tensor class registers its methods here."""


def defvjp(
    op: str,
    *rules: Rule,
    order: int | None = None,
    call: Callable[..., Any] | None = None,
    function: bool = False,
) -> None:
    """Register ``op`` in the table: its VJP rules, one per argument, in argument order.

    ``order=1`` declares rules written with NumPy (first derivatives only). ``call`` (the
    forward) defaults to the Tensor method or ``operator`` function of that name;
    ``function=True`` exports it from ``course_lib.tensor`` as a function too. Every
    registered op is checked by the op-table test (gradients, second derivatives,
    PyTorch), so a wrong rule cannot go unnoticed.
    """
    OPS[op] = Op(op, rules, order, call or _default_call(op), function)


class _EveryArgument:
    """The rules of an op with any number of arguments: argument ``i`` uses ``rule(i, g, out, *args)``."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def __getitem__(self, i: int) -> Rule:
        return partial(self.rule, i)


def defvjp_argnum(op: str, rule: Rule, order: int | None = None, call: Callable[..., Any] | None = None) -> None:
    """Register one rule ``rule(i, g, out, *args)`` serving every argument ``i`` of ``op``
    (an op with any number of arguments); the keywords are those of :func:`defvjp`."""
    OPS[op] = Op(op, _EveryArgument(rule), order, call or _default_call(op), False)


def _default_call(op: str) -> Callable[..., Any] | None:
    """The forward of a row that names none: the Tensor method of the op's name, else ``operator``'s function."""
    return _methods.get(op) or getattr(operator, op, None)
