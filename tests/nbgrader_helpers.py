"""Notebook helpers shared by the grading-pipeline tests (the hand-in builders live in
``benchmarks/handins.py``, which the grading benchmarks use too)."""

from __future__ import annotations

import importlib.util

import nbformat
from paths import ROOT

from benchmarks.handins import BIN, answer_cells, fill_in, nbgrader, nbgrader_meta, released_course

__all__ = [
    "BIN",
    "answer_cells",
    "fill_in",
    "graded_cells",
    "load_honest",
    "load_mistakes",
    "nbgrader",
    "nbgrader_meta",
    "released_course",
]


def _hand_ins(assignment: str):
    """The module ``tests/mistakes/<assignment>.py`` (None when there is none)."""
    path = ROOT / "tests" / "mistakes" / f"{assignment}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"mistakes_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_mistakes(assignment: str) -> dict:
    """The typical mistakes of an assignment: name -> {replace, fails, message}."""
    module = _hand_ins(assignment)
    return module.MISTAKES if module else {}


def load_honest(assignment: str) -> dict[str, str]:
    """An honest hand-in: every answer cell rewritten, correctly, in other idioms (grade id -> source)."""
    module = _hand_ins(assignment)
    return getattr(module, "HONEST", {}) if module else {}


def graded_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if nbgrader_meta(c).get("grade")}


def solution_answer(assignment: str, grade_id: str) -> str:
    """The source of the solution's answer cell ``grade_id`` (its solution markers are comments)."""
    source = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    return answer_cells(source)[grade_id].source
