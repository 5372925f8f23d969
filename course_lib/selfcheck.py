"""Checks a reader runs on their own solution of a chapter's coding exercise.

``check(fn, cases)`` calls ``fn`` on every case and prints a verdict: all right, the first
case that went wrong (what it returned, what was expected), or that the function is not
written yet. It never raises, so an unfinished exercise does not stop a notebook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["check"]

RIGHT, WRONG = "✔", "✘"


def check(fn: Callable[..., Any], cases: Sequence[tuple[tuple, Any]], rel: float = 1e-6, abs_: float = 1e-9) -> None:
    """Call ``fn(*args)`` for each ``(args, expected)`` and print how it went (nothing is returned,
    so a notebook cell that ends with the call shows the verdict and nothing else).

    Numbers and arrays are compared with relative tolerance ``rel`` and absolute ``abs_``;
    anything else with ``==``.
    """
    name = getattr(fn, "__name__", "your function")
    for k, (args, expected) in enumerate(cases, start=1):
        shown = ", ".join(map(_short, args))
        try:
            result = fn(*args)
        except NotImplementedError:
            print(f"{WRONG} {name} is not written yet: replace the `raise NotImplementedError` line with your code.")
            return
        except Exception as error:  # the reader's code may fail in any way: report it, do not stop
            print(f"{WRONG} {name}({shown}) raised {type(error).__name__}: {error}")
            return
        if not _agrees(result, expected, rel, abs_):
            print(f"{WRONG} case {k}: {name}({shown}) returned {_short(result)}, expected {_short(expected)}.")
            return
    print(f"{RIGHT} {name}: all {len(cases)} cases right.")


def _agrees(result: Any, expected: Any, rel: float, abs_: float) -> bool:
    try:
        return bool(
            np.allclose(np.asarray(result, dtype=float), np.asarray(expected, dtype=float), rtol=rel, atol=abs_)
        )
    except (TypeError, ValueError):
        return result == expected


def _short(x: Any) -> str:
    if callable(x):
        return getattr(x, "__name__", "a function")
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."
