"""The gradebook as one setting: grading into a real PostgreSQL server, two hand-ins at a
time, gives exactly what grading one at a time into the sqlite file gives (grades.csv and
every feedback page), and a second run changes nothing."""

from __future__ import annotations

import csv
import shutil

import nbformat
import pytest
from nbgrader_helpers import ROOT, answer_cells, fill_in, nbgrader
from test_report import check_report_of_graded_class

from course_grader.database import import_roster, read_roster
from course_grader.grading import ClassGrader

ASSIGNMENT = "ps01_finite_differences"
NAME = f"{ASSIGNMENT}.ipynb"


def make_class(course):
    """A course with ps01 released and three hand-ins: right, one part undone, not a notebook."""
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "course_grader", course / "course_grader")  # nbgrader_config.py reads DB_URL with it
    shutil.copytree(ROOT / "solutions" / ASSIGNMENT, course / "solutions" / ASSIGNMENT)
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    source = nbformat.read(course / "solutions" / ASSIGNMENT / NAME, as_version=4)
    release = nbformat.read(course / "exercises" / ASSIGNMENT / NAME, as_version=4)
    first = next(iter(answer_cells(source)))
    slip = "raise NotImplementedError()\n"  # the first part left undone
    inbox = course / "submissions"
    for student, nb in {"ada": fill_in(release, source, {}), "bob": fill_in(release, source, {first: slip})}.items():
        (inbox / student).mkdir(parents=True)
        nbformat.write(nb, inbox / student / NAME)
    (inbox / "cy").mkdir()
    (inbox / "cy" / NAME).write_text("not a notebook")
    (course / "class.csv").write_text("username,first name,last name\nada,Ada,L\nbob,Bob,M\ncy,Cy,N\n")
    return course


def grade(course, jobs: int = 1) -> tuple[list[dict], dict[str, str]]:
    grader = ClassGrader(course, timeout=20, log=lambda *a: None)
    outcomes = grader.collect(course / "submissions")
    grader.grade(outcomes, jobs=jobs)
    grader.export(outcomes=outcomes)
    with open(course / "grades.csv", newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: r["student_id"])
    for row in rows:
        row.pop("timestamp", None)  # when the hand-in was recorded: differs between any two runs
    pages = {
        str(p.relative_to(course)): p.read_text().replace(str(course), "<course>")
        for p in sorted((course / "feedback").rglob("*.html"))
    }
    return rows, pages


@pytest.fixture(scope="module")
def graded_into_sqlite(tmp_path_factory) -> tuple[list[dict], dict[str, str]]:
    """What grading one hand-in at a time into the sqlite file gives: the reference for both spellings."""
    lite = make_class(tmp_path_factory.mktemp("sqlite") / "course")
    with pytest.MonkeyPatch.context() as env:
        env.delenv("DB_URL", raising=False)
        import_roster(read_roster(lite / "class.csv"), f"sqlite:///{lite / 'gradebook.db'}", "autodiff-from-scratch")
        return grade(lite)


@pytest.mark.parametrize("spelling", ["postgresql+psycopg://", "postgresql://"])
def test_grading_into_postgresql_matches_sqlite_and_is_idempotent(
    postgres, graded_into_sqlite, tmp_path, monkeypatch, spelling
):
    expected = graded_into_sqlite
    url = postgres(f"grading_{spelling.split(':')[0].replace('+', '_')}").replace("postgresql+psycopg://", spelling)
    monkeypatch.setenv("DB_URL", url)  # for nbgrader's own commands (release, export) too
    course = make_class(tmp_path / "postgres")
    import_roster(read_roster(course / "class.csv"), url, "autodiff-from-scratch")
    got = grade(course, jobs=2)  # two hand-ins at a time, each grade written once
    assert not (course / "gradebook.db").exists(), "with DB_URL set, nothing may go to the sqlite file"
    assert got == expected
    rows = {row["student_id"]: row for row in got[0]}
    assert float(rows["ada"]["score"]) == float(rows["ada"]["max_score"]) > float(rows["bob"]["score"]) > 0
    assert rows["cy"]["status"].startswith("unreadable")

    assert grade(course) == got, "a second run changes nothing"
    check_report_of_graded_class(course, got[0], ASSIGNMENT)  # make report, from the same gradebook
