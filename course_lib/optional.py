"""Optional packages in the chapters: PyTorch and JAX, used only for comparisons.

A reader without them should learn in one line what to install, not read a traceback::

    torch = optional_import("torch")

returns the module, or ``None`` after printing what to install. Inside a notebook, every later
cell that uses a missing package (or a name computed from it by a skipped cell) then prints a
one-line note instead of running, so "Run all" still reaches the end of the chapter.
"""

from __future__ import annotations

import ast
import importlib
from types import ModuleType

__all__ = ["optional_import"]

_PACKAGES = {"torch": "PyTorch", "jax": "JAX"}
_missing_names: set[str] = set()  # names that are unavailable in this kernel
_reported: set[str] = set()  # top-level packages already reported as missing
_shells_hooked: set[int] = set()


def optional_import(module: str, name: str | None = None) -> ModuleType | None:
    """Import ``module``; when it is missing, say what to install and return ``None``.

    ``name`` is the variable the notebook binds it to (``jnp`` for ``jax.numpy``)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        package = module.split(".")[0]
        if package not in _reported:
            _reported.add(package)
            print(
                f"{_PACKAGES.get(package, package)} is not installed here, so the cells that need "
                f"it are skipped. To run them: pip install {package} (Colab has it), then restart "
                "the kernel."
            )
        _missing_names.add(name or module.split(".")[-1])
        _skip_cells_that_need_missing_names()
        return None


def _bound_names(tree: ast.AST) -> set[str]:
    """Names a cell assigns at any depth (a conservative over-approximation)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _skip_if_needed(lines: list[str]) -> list[str]:
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return lines
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    needed = sorted(used & _missing_names)
    if not needed:
        return lines
    _missing_names.update(_bound_names(tree))  # what this cell would have defined is missing too
    return [f"print({'Skipped: this cell needs ' + ', '.join(needed) + ' (see the note above).'!r})\n"]


def _skip_cells_that_need_missing_names() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or id(shell) in _shells_hooked:
        return
    _shells_hooked.add(id(shell))
    shell.input_transformers_post.append(_skip_if_needed)
