"""The backward pass of the Tensor engine, under the name the chapters first import it by.

It lives in :mod:`course_lib.tensor` (``backprop``: the sweep; ``core``:
``Tensor.backward``, which runs it; ``autograd``: :func:`~course_lib.tensor.gradients`);
this module re-exports it, so ``from course_lib.sweep import gradients`` keeps working.
"""

from __future__ import annotations

from typing import Any

from course_lib.tensor import Tensor, gradients

__all__ = ["backward", "gradients"]


def backward(output: Tensor, grad: Any = None) -> None:
    """``output.backward(grad)``: add d(output)/d(leaf) to every leaf's ``.grad``."""
    output.backward(grad)
