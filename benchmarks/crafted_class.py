"""A graded class with known results, written the way ``make autograde`` leaves it: the
tests of the class report (tests/assignments/test_report.py), its benchmark (benchmarks/report.py)
and the README's screenshot (tools/report_screenshot.py) read it back.

Two assignments, ps01 and ps04, and ``n`` students. The gradebook (nbgrader's API: the
assignments with their grade cells, a submission per graded hand-in with the points of each
part), ``grades.csv`` with grading's status column, the graded notebooks in ``autograded/``
(each test cell's output is the part's feedback line, as grading writes it) and the grading
time of each hand-in (``grading.json``). Who hands in, what passes and which message a failure
gives follow fixed rules (:func:`outcome`), so a test can count every number the report shows.
"""

from __future__ import annotations

import csv
import functools
import json
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from course_grader.feedback import part_line

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ("ps01_finite_differences", "ps04_topological_sort")
DUE = {"ps01_finite_differences": "2026-10-02 17:00:00", "ps04_topological_sort": "2026-10-23 17:00:00"}


@dataclass
class Outcome:
    """One student's result on one assignment: no hand-in, one for a human, or graded."""

    kind: str  # "missing" | "human" | "graded"
    status: str = ""  # grades.csv status of a hand-in for a human
    why: str = ""
    failed: dict[str, str] = field(default_factory=dict)  # part -> feedback message
    seconds: float = 0.0


@functools.cache
def parts(assignment: str) -> list[tuple[str, float]]:
    """(grade cell, points) of an assignment, in the notebook's order."""
    nb = json.loads((ROOT / "solutions" / assignment / f"{assignment}.ipynb").read_text())
    metas = [c["metadata"].get("nbgrader", {}) for c in nb["cells"]]
    return [(m["grade_id"], float(m["points"])) for m in metas if m.get("grade")]


def student_id(i: int) -> str:
    return f"s{i:03d}"


def person(i: int) -> tuple[str, str, str]:
    """First name, last name, e-mail of student i."""
    first = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "John")[i % 8]
    return first, f"Tester{i}", f"{student_id(i)}@uni.example"


def outcome(assignment: str, i: int, n: int) -> Outcome:
    """The rules of the crafted class. ps01: the last student hands nothing in and the one
    before hands in an unreadable file; ps04: the last and the third-last hand nothing in, the
    fourth-last's hand-in broke the grader, and every fifth student fails four parts."""
    first = assignment == ASSIGNMENTS[0]
    if i == n - 1 or (not first and i == n - 3):
        return Outcome("missing")
    if first and i == n - 2:
        return Outcome(
            "human", "unreadable", f"submissions/{student_id(i)}/{assignment}.ipynb is not a readable notebook"
        )
    if not first and i == n - 4:
        return Outcome(
            "human", "failed", "the grading machinery failed on this hand-in (the judge died): grade it by hand"
        )
    names = [name for name, _ in parts(assignment)]
    failed: dict[str, str] = {}
    for k, name in enumerate(names):
        if first:
            fails = i % (k + 2) == 1  # part k fails for one student in k + 2
        else:
            fails = (i % 5 == 0 and k < 4) or (k == 5 and i % 3 == 2)
        if fails:
            failed[name] = message(name, i)
    return Outcome("graded", failed=failed, seconds=2.0 + (i % 10) * 0.5 + (0.0 if first else 1.0))


def message(part: str, i: int) -> str:
    """Three kinds of mistake per part, the same kind with other numbers for other students;
    the third names the student (the report must not)."""
    kind = i % 3
    if kind == 0:
        return f"{part} is off: got {1.5 + i / 8:.4f} where {2 + i} was expected"
    if kind == 1:
        return f"wrong shape: ({i}, 3) instead of ({i + 1},)"
    return f"FileNotFoundError: /home/{student_id(i)}/scratch_{i}.npy (ask {person(i)[1]})"


def expected(n: int) -> dict[str, dict[str, Outcome]]:
    """assignment -> student -> outcome, for the whole class."""
    return {a: {student_id(i): outcome(a, i, n) for i in range(n)} for a in ASSIGNMENTS}


def build(course: Path, db_url: str, n: int = 32) -> dict[str, dict[str, Outcome]]:
    """Write the graded class into ``course`` and the gradebook at ``db_url``; return its rules."""
    from nbgrader.api import Gradebook
    from sqlalchemy import text

    course.mkdir(parents=True, exist_ok=True)
    plan = expected(n)
    with Gradebook(db_url) as gb:
        if db_url.startswith("sqlite"):  # a throw-away file: no need to wait for the disk at each commit
            gb.db.execute(text("PRAGMA synchronous=OFF"))
        for i in range(n):
            first, last, email = person(i)
            gb.update_or_create_student(student_id(i), first_name=first, last_name=last, email=email)
        for assignment in ASSIGNMENTS:
            shutil.copytree(ROOT / "exercises" / assignment, course / "exercises" / assignment, dirs_exist_ok=True)
            gb.update_or_create_assignment(assignment, duedate=DUE[assignment])
            gb.add_notebook(assignment, assignment)
            cells = {
                gb.add_grade_cell(name, assignment, assignment, max_score=points, cell_type="code").id: name
                for name, points in parts(assignment)
            }
            for sid, result in plan[assignment].items():
                if result.kind == "graded":
                    record(gb, course, assignment, sid, result, cells)
    write_grades(course, plan)
    return plan


def record(gb, course: Path, assignment: str, sid: str, result: Outcome, cells: dict[str, str]) -> None:
    """One graded hand-in: its points in the gradebook (``cells``: grade cell id -> name), its
    graded notebook and its time."""
    from sqlalchemy.exc import SAWarning

    with warnings.catch_warnings():  # nbgrader's add_submission, as grading calls it (see grading.py)
        warnings.simplefilter("ignore", SAWarning)
        submission = gb.add_submission(assignment, sid, timestamp="2026-10-01 12:00:00")
    tops = dict(parts(assignment))
    for nb in submission.notebooks:
        for grade in nb.grades:
            name = cells[grade.cell_id]
            grade.auto_score = 0.0 if name in result.failed else tops[name]
            grade.needs_manual_grade = False
    gb.db.commit()
    release = json.loads((ROOT / "exercises" / assignment / f"{assignment}.ipynb").read_text())
    for cell in release["cells"]:
        name = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if name in tops and cell["metadata"]["nbgrader"].get("grade"):
            passed = name not in result.failed
            line = part_line(
                SimpleNamespace(
                    grade_id=name,
                    passed=passed,
                    points=tops[name] if passed else 0.0,
                    max_points=tops[name],
                    message=result.failed.get(name, ""),
                )
            )
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": line + "\n"}]
    folder = course / "autograded" / sid / assignment
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{assignment}.ipynb").write_text(json.dumps(release))
    (folder / "grading.json").write_text(json.dumps({"seconds": result.seconds}))


def write_grades(course: Path, plan: dict[str, dict[str, Outcome]]) -> None:
    """grades.csv with the columns the report reads (grading writes more)."""
    with (course / "grades.csv").open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["assignment", "student_id", "score", "max_score", "status"])
        for assignment, results in plan.items():
            top = sum(p for _, p in parts(assignment))
            for sid, result in results.items():
                score = top - sum(dict(parts(assignment))[name] for name in result.failed)
                status = {"graded": "graded", "missing": "no hand-in"}.get(
                    result.kind, f"{result.status}: {result.why}"
                )
                writer.writerow([assignment, sid, score if result.kind == "graded" else 0, top, status])
