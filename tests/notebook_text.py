"""The text of an executed notebook, as the tests look it up: what it displays, what its tagged
cells print, and its prose."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode


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


def markdown(nb_or_path: NotebookNode | Path) -> str:
    """The sources of the notebook's markdown cells, one after another."""
    return "\n".join(c.source for c in _read(nb_or_path).cells if c.cell_type == "markdown")


def solution(nb_or_path: NotebookNode | Path, label: str) -> str:
    """The answer to the exercise ``label``, written as a MyST ``{solution}`` block or in the
    notebook form ``<details class="solution" data-exercise="label">``."""
    text = markdown(nb_or_path)
    forms = (
        rf"^(:{{3,}})\{{solution\}} {re.escape(label)}\n(?P<body>.*?)^\1$",
        rf'^<details class="solution" data-exercise="{re.escape(label)}">\n(?P<body>.*?)^</details>',
    )
    found = [m["body"] for form in forms for m in re.finditer(form, text, re.M | re.S)]
    assert len(found) == 1, f"{len(found)} solutions to {label!r}"
    return found[0]
