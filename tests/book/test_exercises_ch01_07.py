"""Exercises of chapters 1 to 7: at least three per chapter, each with one solution (hidden until
clicked: tests/book/test_answers.py),
and a coding exercise whose check, run on the stub the reader sees, says "not written yet" and,
run on the published solution, says every case is right."""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import pytest
from notebook_text import exercises, markdown, solutions, tagged
from paths import ROOT

CHAPTERS = sorted((ROOT / "book").glob("0[1-7]_*.ipynb"))


def ids(paths):
    return [p.name[:2] for p in paths]


def run(*sources: str, prelude: tuple[str, ...] = ()) -> str:
    """What the sources print when run one after another in a fresh namespace, after ``prelude``
    (run first, its output discarded)."""
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in prelude:
            exec(source, namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for source in sources:
            exec(source, namespace)
    return out.getvalue()


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_every_exercise_has_a_hidden_solution(path):
    labels = [exercise.label for exercise in exercises(path)]
    solved = [solution.label for solution in solutions(path)]
    chapter = int(path.name[:2])
    assert len(labels) >= 3, f"{path.name} has {len(labels)} exercises, at least 3 wanted"
    assert all(label.startswith(f"ch{chapter:02d}-") for label in labels), labels
    assert len(set(labels)) == len(labels)
    assert sorted(solved) == sorted(labels), "every exercise needs one solution and no more"
    assert "{dropdown}" not in markdown(path).split("## Check yourself")[1], "answers are solutions, not bare dropdowns"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_coding_exercise_check_rejects_the_stub_and_accepts_the_solution(path):
    nb = nbformat.read(path, as_version=4)
    stubs, checks = tagged(nb, "exercise-stub"), tagged(nb, "exercise-check")
    # the coding exercises, in the order of their stubs
    labels = [e.label for e in exercises(nb) if e.body.lstrip().startswith("**Coding")]
    chapter = int(path.name[:2])
    assert f"ch{chapter:02d}-code" in labels and len(stubs) == len(checks) == len(labels), labels
    answers = {s.label: s.body for s in solutions(nb)}
    # a check may compare with the engine the chapter built (its cells tagged teaching-version)
    teaching = [c for c in nb.cells if c.cell_type == "code" and "teaching-version" in c.metadata.get("tags", [])]
    engine = tuple(c.source for c in teaching)
    for label, stub, check in zip(labels, stubs, checks):
        code = re.search(r"```python\n(.*?)```", answers[label], re.S).group(1)
        shown = "".join(out.text for out in check.outputs if out.output_type == "stream")
        assert "is not written yet" in shown, f"{label}: the executed chapter shows the check run on the stub"
        assert "is not written yet" in run(stub.source, check.source, prelude=engine), label
        verdict = run(code, check.source, prelude=engine)
        assert verdict.startswith("✔") and "cases right" in verdict, (label, verdict)


# ---- reading flow of chapters 1 to 7 (issue 14, item 5) ----------------------------------------


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_links_notation_ends_with_a_summary_and_keeps_plotting_out(path):
    nb = nbformat.read(path, as_version=4)
    text = markdown(nb)
    assert "](notation.md)" in text, "link the notation page"
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert "Summary" in headings and headings.index("Summary") >= len(headings) - 3, headings
    summary = text.split("## Summary", 1)[1]
    assert "$" in summary, "the summary states the key formulas"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "hide-input" in code[0].metadata.get("tags", []), "the set-up cell is folded"
    plotting = [c.source[:60] for c in code if re.search(r"\bplt\.|\bax\.|subplots\(", c.source)]
    assert plotting == [], f"plotting code belongs in course_lib.figures: {plotting}"
    figure_calls = [
        c.source
        for c in code
        if "figures." in c.source and "import" not in c.source and "use_course_style" not in c.source
    ]
    assert all(len(c.splitlines()) == 1 for c in figure_calls), "a figure cell shows one call"


def test_the_post_order_argument_is_stated_once_and_referenced():
    texts = {path.name[:2]: markdown(path) for path in CHAPTERS}
    anchor = '<a id="post-order-proof"></a>'  # the book's target (post-order-proof)=, tools/notebook_answers.py
    assert texts["06"].count(anchor) == 1
    proof = texts["06"].split(anchor, 1)[1]
    assert re.match(r"\s*#+ \S", proof), "the label is on the proof's heading"
    assert re.search(r"\bw_0, w_1, \\dots, w_k\b", proof), "the proof follows: the chain of open nodes"
    for chapter in ("03", "04"):
        assert "](06_topological_order.ipynb#post-order-proof)" in texts[chapter], f"chapter {chapter} links the proof"
        assert "closes a cycle" not in texts[chapter] and "close a cycle" not in texts[chapter]
