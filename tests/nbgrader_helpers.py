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
    "load_mistakes",
    "nbgrader",
    "nbgrader_meta",
    "released_course",
]


def load_mistakes(assignment: str) -> dict:
    path = ROOT / "tests" / "mistakes" / f"{assignment}.py"
    if not path.exists():
        return {}
    spec = importlib.util.spec_from_file_location(f"mistakes_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MISTAKES


def graded_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if nbgrader_meta(c).get("grade")}
