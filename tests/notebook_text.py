"""The text of an executed notebook, as the tests look it up: what it displays, what its tagged
cells print, its prose, and its exercises and solutions."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import nbformat
from hide_answers import myst_segments  # tools/hide_answers.py
from nbformat import NotebookNode
from notebook_answers import Exercise, Solution  # tools/notebook_answers.py


def _read(nb_or_path: NotebookNode | Path) -> NotebookNode:
    if isinstance(nb_or_path, Path):
        return nbformat.read(nb_or_path, as_version=4)
    return nb_or_path


def shown(nb_or_path: NotebookNode | Path) -> str:
    """Everything the notebook displays as text: streams and text/plain results, one per line."""
    parts = []
    for cell in _read(nb_or_path).cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                parts.append(out.text)
            elif "text/plain" in out.get("data", {}):
                parts.append(out.data["text/plain"])
    return "\n".join(parts)


def tagged(nb_or_path: NotebookNode | Path, tag: str) -> list[NotebookNode]:
    """The cells tagged ``tag``, in order; there must be at least one."""
    cells = [c for c in _read(nb_or_path).cells if tag in c.get("metadata", {}).get("tags", [])]
    where = f" in {nb_or_path.name}" if isinstance(nb_or_path, Path) else ""
    assert cells, f"no cell tagged {tag!r}{where}"
    return cells


def printed(cells: list[NotebookNode]) -> str:
    """What the cells wrote to their streams (their print() output), run together."""
    return "".join(out.text for cell in cells for out in cell.get("outputs", []) if out.output_type == "stream")


def printed_by(nb_or_path: NotebookNode | Path, tag: str) -> str:
    """What the cells tagged ``tag`` printed, run together."""
    return printed(tagged(nb_or_path, tag))


def markdown(nb_or_path: NotebookNode | Path) -> str:
    """The sources of the notebook's markdown cells, one after another."""
    return "\n".join(c.source for c in _read(nb_or_path).cells if c.cell_type == "markdown")


def _answer_segments(nb_or_path: NotebookNode | Path) -> list:
    cells = [c for c in _read(nb_or_path).cells if c.cell_type == "markdown"]
    return [seg for c in cells for seg in myst_segments(c.source, "a notebook") if not isinstance(seg, str)]


def exercises(nb_or_path: NotebookNode | Path) -> list[Exercise]:
    """The notebook's exercises in order, each read from its own Markdown cell, in the notebook
    form of tools/notebook_answers.py or as a MyST directive."""
    return [seg for seg in _answer_segments(nb_or_path) if isinstance(seg, Exercise)]


def solutions(nb_or_path: NotebookNode | Path) -> list[Solution]:
    """The notebook's solutions in order (``label`` is their exercise's), read as ``exercises``."""
    return [seg for seg in _answer_segments(nb_or_path) if isinstance(seg, Solution)]


def solution(nb_or_path: NotebookNode | Path, label: str) -> str:
    """The answer to the exercise ``label`` (there must be exactly one)."""
    found = [s.body for s in solutions(nb_or_path) if s.label == label]
    assert len(found) == 1, f"{len(found)} solutions to {label!r}"
    return found[0]


def cells_run(nb_or_path: NotebookNode | Path, *cell_ids: str, **values: object) -> dict:
    """A namespace that starts with ``values`` (what earlier cells of the chapter computed) and in
    which the notebook's cells ``cell_ids`` then ran in that order (IPython magics such as
    ``%matplotlib inline`` left out, printed text discarded): what a chapter's exercise check
    needs, without running the whole chapter."""
    cells = {c.id: c for c in _read(nb_or_path).cells}
    namespace: dict = dict(values)
    with contextlib.redirect_stdout(io.StringIO()):
        for cell_id in cell_ids:
            source = "\n".join(line for line in cells[cell_id].source.splitlines() if not line.startswith("%"))
            exec(source, namespace)
    return namespace


def exercise_run(path: Path, imports: str, label: str, **values: object) -> dict:
    """The namespace of a chapter's coding exercise ``label``: the chapter's import cell
    ``imports``, ``values``, then the exercise's stub and check (the first code cells tagged
    ``exercise-stub`` and ``exercise-check`` after its question)."""
    nb = _read(path)
    ids = [c.id for c in nb.cells]
    following = [c for c in nb.cells[ids.index(label) + 1 :] if c.cell_type == "code"]
    stub = next(c for c in following if "exercise-stub" in c.metadata.get("tags", []))
    check = next(c for c in following if "exercise-check" in c.metadata.get("tags", []))
    return cells_run(nb, imports, stub.id, check.id, **values)


def coding_solutions(nb_or_path: NotebookNode | Path) -> dict[str, str]:
    """The Python code of each coding exercise's solution, by the exercise's label."""
    coding = {e.label for e in exercises(nb_or_path) if e.body.lstrip().startswith("**Coding")}
    found = {s.label: re.search(r"```python\n(.*?)```", s.body, re.S) for s in solutions(nb_or_path)}
    return {label: match.group(1) for label, match in found.items() if label in coding and match}
