"""Exercises of chapters 1 to 7: at least three per chapter with a solution hidden in a dropdown,
and a coding exercise whose check, run on the stub the reader sees, says "not written yet" and,
run on the published solution, says every case is right."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import nbformat
import pytest
from notebook_text import markdown, tagged

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("0[1-7]_*.ipynb"))
EXERCISE = re.compile(r"^:::\{exercise\}\n:label: (\S+)\n", re.M)
SOLUTION = re.compile(r"^:::\{solution\} (\S+)\n:class: dropdown\n(.*?)^:::$", re.M | re.S)


def ids(paths):
    return [p.name[:2] for p in paths]


def run(*sources: str) -> str:
    """What the sources print when run one after another in a fresh namespace."""
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for source in sources:
            exec(source, namespace)
    return out.getvalue()


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_every_exercise_has_a_hidden_solution(path):
    text = markdown(path)
    labels = EXERCISE.findall(text)
    solved = dict(SOLUTION.findall(text))
    chapter = int(path.name[:2])
    assert len(labels) >= 3, f"{path.name} has {len(labels)} exercises, at least 3 wanted"
    assert all(label.startswith(f"ch{chapter:02d}-") for label in labels), labels
    assert len(set(labels)) == len(labels)
    assert sorted(solved) == sorted(labels), "every exercise needs one solution (class dropdown) and no more"
    assert "{dropdown}" not in text.split("## Check yourself")[1], "answers use {solution}, not bare dropdowns"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_coding_exercise_check_rejects_the_stub_and_accepts_the_solution(path):
    nb = nbformat.read(path, as_version=4)
    [stub] = tagged(nb, "exercise-stub")
    [check] = tagged(nb, "exercise-check")
    chapter = int(path.name[:2])
    solution = dict(SOLUTION.findall(markdown(nb)))[f"ch{chapter:02d}-code"]
    code = re.search(r"```python\n(.*?)```", solution, re.S).group(1)
    shown = "".join(out.text for out in check.outputs if out.output_type == "stream")
    assert "is not written yet" in shown, "the executed chapter shows the check run on the stub"
    assert "is not written yet" in run(stub.source, check.source)
    verdict = run(code, check.source)
    assert verdict.startswith("✔") and "cases right" in verdict, verdict
