"""Hand-ins made from an assignment's notebooks, and nbgrader run from this venv: what the
grading benchmarks (and the grading-pipeline tests) build their classes from.

Run the benchmarks that use it as modules from the repository root, so ``course_grader``
and this folder are importable: ``python -m benchmarks.grading``, ``python -m benchmarks.sandbox``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

BIN = Path(sys.executable).parent


def nbgrader_meta(cell: nbformat.NotebookNode) -> dict:
    """A cell's nbgrader metadata (empty for an ordinary cell)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def answer_cells(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    """The answer cells of a notebook by grade id."""
    return {
        nbgrader_meta(c)["grade_id"]: c for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"
    }


def fill_in(
    release: nbformat.NotebookNode, source: nbformat.NotebookNode, replace: dict[str, str]
) -> nbformat.NotebookNode:
    """The released notebook with answer cells taken from ``source`` or ``replace``."""
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    solved = answer_cells(source)
    for grade_id, cell in answer_cells(nb).items():
        cell.source = replace.get(grade_id, solved[grade_id].source)
    return nb


def nbgrader(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run this venv's ``nbgrader`` in ``cwd`` (its bin/ on PATH, for alembic); fail loudly."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def released_course(folder: Path, assignment: str, root: Path) -> Path:
    """A throw-away course in ``folder/course``: the repository's nbgrader_config.py and one
    assignment's source notebook, released (``nbgrader generate_assignment``) as ``make
    release`` does."""
    import shutil

    course = folder / "course"
    course.mkdir()
    shutil.copy(root / "nbgrader_config.py", course)
    shutil.copytree(root / "solutions" / assignment, course / "solutions" / assignment)
    nbgrader("generate_assignment", assignment, "--force", cwd=course)
    return course
