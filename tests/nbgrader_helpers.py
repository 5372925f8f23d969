"""Notebook helpers shared by the grading-pipeline tests."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from paths import ROOT

BIN = Path(sys.executable).parent


def load_mistakes(assignment: str) -> dict:
    path = ROOT / "tests" / "mistakes" / f"{assignment}.py"
    if not path.exists():
        return {}
    spec = importlib.util.spec_from_file_location(f"mistakes_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MISTAKES


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def answer_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {
        nbgrader_meta(c)["grade_id"]: c for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"
    }


def graded_cells(nb) -> dict[str, nbformat.NotebookNode]:
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if nbgrader_meta(c).get("grade")}


def nbgrader(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def fill_in(release, source, replace: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with answer cells taken from ``source`` or ``replace``."""
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    solved = answer_cells(source)
    for grade_id, cell in answer_cells(nb).items():
        cell.source = replace.get(grade_id, solved[grade_id].source)
    return nb
