"""Grad mode: whether operations on Tensors record the graph.

Per thread (and per asyncio task), as in PyTorch: one thread's ``no_grad()`` never
switches recording off in another. A new thread starts with recording on.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

__all__ = ["set_grad_enabled", "no_grad", "is_grad_enabled"]

_grad_mode: ContextVar[bool] = ContextVar("course_lib_grad_mode", default=True)
_tracing: ContextVar[Any] = ContextVar("course_lib_tracing", default=None)
"""The trace that nodes recorded now belong to (``course_lib.trace``), or None: ``record`` hands it
every node it makes (``trace.adopt(node)``) and every op it computes with recording off from
parents (``trace.constant(op, parents)``), so a traced value cannot silently become a constant."""


class set_grad_enabled:
    """Context manager that switches graph recording on (``True``) or off (``False``)
    for the ``with`` block, then restores the previous mode."""

    __slots__ = ("mode", "tokens")

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.tokens: list[Token[bool]] = []

    def __enter__(self) -> None:
        self.tokens.append(_grad_mode.set(self.mode))

    def __exit__(self, *exc_info: object) -> None:
        _grad_mode.reset(self.tokens.pop())


def no_grad() -> set_grad_enabled:
    """``with no_grad(): ...`` computes values only: results record no parents and do not
    require grad (use it for parameter updates and evaluation)."""
    return set_grad_enabled(False)


def is_grad_enabled() -> bool:
    """Whether operations currently record the graph."""
    return _grad_mode.get()
