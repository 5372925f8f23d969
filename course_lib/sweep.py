"""The backward pass of the Tensor engine, under the name the chapters first import it by.

It lives in :mod:`course_lib.tensor` (``backprop``: the sweep ``backward()`` runs;
``autograd``: :func:`~course_lib.tensor.gradients`); this module re-exports it, so ``from course_lib.sweep
import gradients`` keeps working.
"""

from __future__ import annotations

from course_lib.tensor import gradients
from course_lib.tensor.backprop import backward

__all__ = ["backward", "gradients"]
