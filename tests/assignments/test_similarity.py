"""Copies found (``make similarity``) in a crafted class of ps01 (benchmarks/crafted_copies.py):
ten honest students who all wrote the same obvious forward and central differences, and a copy
disguised by renamed variables, reordered functions, other comments and other spacing. The
disguised pair must be the top pair and the only one listed; no grade may change."""

from __future__ import annotations

import csv
import hashlib
import re

import pytest

from benchmarks.crafted_copies import ASSIGNMENT, COPIER, DISGUISED, OBVIOUS, ORIGINAL, SOURCE, write_class
from course_grader import similarity


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    folder = tmp_path_factory.mktemp("copies")
    honest = write_class(folder, honest_students=10)
    (folder / "gradebook.db").write_bytes(b"a gradebook nobody may touch")
    (folder / "grades.csv").write_text("assignment,student_id,score\nps01_finite_differences,h000,10\n")
    return folder, honest


def is_copy(pair) -> bool:
    return {pair.first, pair.second} == {SOURCE, COPIER}


def test_the_disguise_changes_every_name_comment_and_spacing_and_the_order():
    original, copy = ORIGINAL["gradient_fd"], DISGUISED["gradient_fd"]
    assert original.index("def shifted") < original.index("def slope_at")  # helper, then user
    assert copy.index("def derivative_along") < copy.index("def moved_copy")  # user, then helper
    names = {"shifted", "slope_at", "point", "where", "amount", "moved", "ahead", "behind", "answer", "point_shape"}
    assert not any(f" {name}(" in copy or f" {name} " in copy for name in names)
    for part, code in ORIGINAL.items():
        lines = {line.strip() for line in code.splitlines() if line.strip()}
        assert lines.isdisjoint(line.strip() for line in DISGUISED[part].splitlines()), f"{part}: a line kept as is"


def test_the_disguised_pair_is_the_top_pair_and_the_only_one_listed(course, capsys):
    folder, honest = course
    before = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in ("gradebook.db", "grades.csv")}
    assert similarity.main([ASSIGNMENT, "--course", str(folder)]) == 0
    printed = capsys.readouterr().out
    assert f"12 hand-ins, 1 pair(s) at or above {similarity.THRESHOLD:g}" in printed

    pairs, compared = similarity.find_copies(folder, ASSIGNMENT)
    assert compared == 12
    top, runner_up = pairs[0], next(p for p in pairs if not is_copy(p))
    assert is_copy(top) and top.score >= 0.8 and min(top.shares) >= 0.8
    assert {runner_up.first, runner_up.second} <= set(honest)
    assert runner_up.score < similarity.THRESHOLD - 0.05, "no honest pair comes near the threshold"

    page = (folder / "report" / f"similarity-{ASSIGNMENT}.html").read_text()
    assert page.count("<h2>") == 1 and f"{COPIER} and {SOURCE}: score {top.score:.2f}" in page
    sides = re.findall(r"<pre tabindex='0'>(.*?)</pre>", page, re.S)
    assert len(sides) == 2
    for side in sides:
        marked = "".join(re.findall(r"<mark>(.*?)</mark>", side, re.S))
        assert len(marked) >= 0.6 * len(side.replace("<mark>", "").replace("</mark>", "")), "shared code is marked"
    assert "derivative_along" in page and "slope_at" in page
    with (folder / "report" / "csv" / f"similarity-{ASSIGNMENT}.csv").open() as table:
        rows = list(csv.DictReader(table))
    assert [(r["student_a"], r["student_b"]) for r in rows] == [(p.first, p.second) for p in pairs]
    assert float(rows[0]["score"]) == round(top.score, 4)
    after = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in before}
    assert after == before, "the similarity check never writes a grade"


def test_without_subtracting_template_and_obvious_code_an_honest_pair_would_be_listed(course):
    """The check above can fail: compared whole (template, signatures, the obvious differences
    everyone wrote), honest students share enough to reach the threshold."""
    folder, honest = course
    paths = similarity.hand_ins(folder, ASSIGNMENT)
    whole = {s: "\n".join(similarity.cells_by_id(p).values()) for s, p in paths.items()}
    pairs = similarity.compare(whole, shared_code=[], common=1.0)
    assert max(p.score for p in pairs if not is_copy(p)) >= similarity.THRESHOLD


def test_own_code_drops_the_template_lines():
    template = {
        "forward_difference": 'def forward_difference(f, x, h):\n    """Doc."""\n    raise NotImplementedError()\n'
    }
    hand_in = {
        "forward_difference": 'def forward_difference(f, x, h):\n    """Doc."""\n' + OBVIOUS["forward_difference"]
    }
    assert similarity.own_code(hand_in, template) == OBVIOUS["forward_difference"]


def test_an_unknown_assignment_is_refused(tmp_path, capsys):
    assert similarity.main(["ps99_nothing", "--course", str(tmp_path)]) == 2
    assert "ps99_nothing" in capsys.readouterr().err
