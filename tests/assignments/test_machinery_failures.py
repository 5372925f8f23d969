"""When the grading machinery fails, a human decides: nothing is scored against the student."""

from __future__ import annotations

import csv

import nbformat
from nbgrader_helpers import ROOT, fill_in, released_course

from course_grader.grading import ClassGrader

ASSIGNMENT = "ps01_finite_differences"


def test_a_broken_set_up_sends_every_hand_in_to_a_human(tmp_path):
    course = released_course(tmp_path, ASSIGNMENT, ROOT)
    name = f"{ASSIGNMENT}.ipynb"
    source_path = course / "solutions" / ASSIGNMENT / name
    source = nbformat.read(source_path, as_version=4)
    release = nbformat.read(course / "exercises" / ASSIGNMENT / name, as_version=4)
    (course / "submissions" / "ada").mkdir(parents=True)
    nbformat.write(fill_in(release, source, {}), course / "submissions" / "ada" / name)
    # The grading environment lacks what the assignment's set-up needs (as ps10 without PyTorch).
    setup = next(c for c in source.cells if c.cell_type == "code" and "import numpy" in c.source)
    setup.source = "import a_module_the_grader_lacks\n" + setup.source
    nbformat.write(source, source_path)

    grader = ClassGrader(course, timeout=10, log=lambda *a: None)
    outcomes = grader.collect(course / "submissions")
    grader.grade(outcomes)
    grader.export(outcomes=outcomes)
    (ada,) = outcomes
    assert ada.status == "failed" and ada.score is None, (ada.status, ada.notes)
    assert "grading machinery failed" in ada.notes[-1] and "set-up cell" in ada.notes[-1], ada.notes
    assert "ModuleNotFoundError" in ada.notes[-1], ada.notes
    assert grader.score("ada", ASSIGNMENT) is None, "nothing may be recorded in the gradebook"
    with open(course / "grades.csv") as table:
        (row,) = [r for r in csv.DictReader(table) if r["student_id"] == "ada"]
    assert row["status"].startswith("failed: ") and "grade it by hand" in row["status"]
