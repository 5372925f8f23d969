"""Checks on the book's structure and its notebooks, without building it."""

from __future__ import annotations

import re

import nbformat
import pytest
from notebook_text import exercises, solutions
from paths import CHAPTERS, CONFIG, NOTEBOOKS, PAGES, ROOT, SETUP_CELL, ids


def test_every_book_notebook_is_in_the_toc():
    in_toc = set(PAGES)
    for path in sorted((ROOT / "book").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*/*.ipynb")):
        assert path in in_toc, f"{path.relative_to(ROOT)} is not listed in _toc.yml"


def test_config_launches_colab_from_the_main_branch():
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert "launch_buttons" not in CONFIG.get("html", {}), "launch_buttons must be top-level"
    assert CONFIG["repository"]["branch"] == "main"
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", CONFIG["repository"]["url"])
    assert CONFIG["execute"]["raise_on_error"] is True
    assert CONFIG["only_build_toc_files"] is True


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_notebook_shape(path):
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "start with a '# Title' cell"
    titles = [
        line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines() if re.match(r"#\s", line)
    ]
    assert len(titles) == 1, f"exactly one top-level title, found {titles}"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and code[0].source == SETUP_CELL, "the first code cell must be the common set-up cell"
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_is_executed_and_clean(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        assert cell.execution_count is not None, f"unexecuted cell: {cell.source[:80]!r}"
        for out in cell.outputs:
            assert out.output_type != "error", f"a cell shows an error: {cell.source[:80]!r}"
            assert out.get("name") != "stderr", f"a cell writes to stderr: {''.join(out.text)[:200]!r}"
        streams = [out.get("name") if out.output_type == "stream" else None for out in cell.outputs]
        assert not any(a and a == b for a, b in zip(streams, streams[1:])), (
            f"{cell.source[:60]!r} shows its printed text in pieces: execute with `make execute`, which joins them"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_has_goals_check_yourself_and_answers(path):
    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    assert re.search(r"^##\s+Learning goals", text, re.M | re.I), "a '## Learning goals' section"
    assert re.search(r"^##\s+Check yourself", text, re.M | re.I), "a '## Check yourself' section"
    # Hidden until clicked, in Jupyter and in the book: tests/book/test_answers.py.
    assert solutions(path), "answers go in solutions (the notebook form of tools/notebook_answers.py)"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_every_exercise_check_cell_has_the_one_tag(path):
    """A check cell is the code cell that, run on the reader's blank stub, says it is not written (or
    done) yet: every one, in every chapter, is tagged ``exercise-check``, its stub ``exercise-stub``,
    and no chapter has a spelling of its own (``chNN-exercise-check``)."""
    nb = nbformat.read(path, as_version=4)
    coding = [e.label for e in exercises(nb) if e.body.lstrip().startswith("**Coding")]
    code = [c for c in nb.cells if c.cell_type == "code"]
    shown = {c.id: "".join(out.get("text", "") for out in c.outputs) for c in code}
    checks = [c.id for c in code if re.search(r"not (written|done) yet", shown[c.id])]
    tags = {c.id: c.metadata.get("tags", []) for c in nb.cells}
    assert [i for i in tags if "exercise-check" in tags[i]] == checks and len(checks) == len(coding), coding
    assert len([i for i in tags if "exercise-stub" in tags[i]]) == len(coding)
    assert not [t for ts in tags.values() for t in ts if re.fullmatch(r"ch\w+-exercise(-check)?", t)]


def test_setup_cell_installs_only_when_course_lib_is_missing(monkeypatch):
    import importlib.util
    import subprocess

    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    exec(SETUP_CELL, {})
    assert calls == [], "with course_lib importable the set-up cell must do nothing"

    monkeypatch.setenv("COURSE_LIB", "/some/local/checkout")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "course_lib" else real_find_spec(name, *a)
    )
    exec(SETUP_CELL, {})
    assert len(calls) == 1 and calls[0][-1] == "/some/local/checkout" and "install" in calls[0]
