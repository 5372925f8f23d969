"""Tensors: a NumPy reverse-mode engine whose derivative rules live in one table.

The package is built in one direction, each module importing only the ones above it in
this list: ``course_lib.tensor.grad_mode`` (recording on or off),
``course_lib.tensor.table`` (the op table), ``course_lib.tensor.arrays`` (checks
with helpful errors), ``course_lib.tensor.backprop`` (the backward sweep),
``course_lib.tensor.core`` (``Tensor``, its ``backward`` and ``record``),
``course_lib.tensor.combine`` (``where``, ``stack``, ``affine``),
``course_lib.tensor.rules`` (every op's VJP, registered in the table)
and ``course_lib.tensor.autograd`` (``gradients``). This file assembles the public
names: the functions ``exp(x)``, ``softmax(x, axis)``, ... are made from the rows of the
table that ask for one (``defvjp(..., function=True)``), so a new op is added in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from course_lib.tensor import gather as _gather  # noqa: F401  (registers take and put)
from course_lib.tensor.autograd import gradients
from course_lib.tensor.combine import affine, stack, where
from course_lib.tensor.core import Tensor, _lift, record
from course_lib.tensor.grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from course_lib.tensor.rules import unbroadcast
from course_lib.tensor.table import OPS, VJP_RULES, Op, defvjp, defvjp_argnum


def _function(op: Op) -> Callable[..., Tensor]:
    """The op as a function of a Tensor, a number or a real array: ``exp(x)`` is ``Tensor.exp(x)``."""
    method = op.call
    assert method is not None, op.name

    def function(x: Any, *args: Any, **kwargs: Any) -> Tensor:
        lifted = _lift(x)
        if lifted is NotImplemented:
            raise TypeError(f"{op.name}() needs a Tensor, a number or a real array")
        return method(lifted, *args, **kwargs)

    function.__name__ = function.__qualname__ = op.name
    function.__doc__ = (
        f"``{op.name}`` of a Tensor (numbers and arrays are converted): the same as ``Tensor.{op.name}``."
    )
    return function


FUNCTIONS = {name: _function(op) for name, op in OPS.items() if op.function}
"""The ops exported as functions, made from their rows of the table."""
globals().update(FUNCTIONS)

__all__ = [
    "Tensor",
    "no_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "record",
    "affine",
    "where",
    "stack",
    *FUNCTIONS,
    "gradients",
    "OPS",
    "VJP_RULES",
    "Op",
    "defvjp",
    "defvjp_argnum",
    "unbroadcast",
]
