"""The op table of the Tensor engine, under the name the chapters first import it by.

The table and its rules live in :mod:`course_lib.tensor` (``table``: the registry,
``rules``: every op's VJP); this module re-exports them, so ``from course_lib.ops import
defvjp`` keeps working.
"""

from __future__ import annotations

from course_lib.tensor import OPS, VJP_RULES, Op, defvjp, defvjp_argnum, unbroadcast

__all__ = ["OPS", "VJP_RULES", "Op", "defvjp", "defvjp_argnum", "unbroadcast"]
