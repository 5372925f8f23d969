"""What the class report is made of: the gradebook, grades.csv and the graded notebooks read
into one record of the class (:func:`read_class`), and the summaries the report's pages and CSV
files show (:mod:`course_grader.report`). It names students: it is for instructors only.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Statuses of grades.csv that are not a problem: a graded hand-in, or none at all.
FINE = ("graded", "no hand-in")
# A student whose latest score is this many percentage points under their earlier mean is dropping.
DROP_POINTS = 15.0
TIMING_FILE = "grading.json"
NOT_RECORDED = "(no message recorded)"


@dataclass(frozen=True)
class Person:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""


@dataclass
class HandIn:
    student: str
    score: float
    max_score: float
    points: dict[str, float]  # part -> points
    messages: dict[str, str] = field(default_factory=dict)  # failed part -> feedback message
    seconds: float | None = None
    manual: list[str] = field(default_factory=list)  # parts nbgrader marks for manual grading

    @property
    def percent(self) -> float:
        return 100.0 * self.score / self.max_score if self.max_score else 0.0


@dataclass
class Assignment:
    name: str
    duedate: str
    parts: list[tuple[str, float]]  # (part, max points), in the notebook's order
    hand_ins: list[HandIn]
    human: list[tuple[str, str, str]] = field(default_factory=list)  # (student, status, why)

    @property
    def max_score(self) -> float:
        return sum(points for _, points in self.parts)


@dataclass
class ClassRecord:
    students: list[Person]
    assignments: list[Assignment]


# -- reading -------------------------------------------------------------------------------------


def read_class(db_url: str, course: Path, grades: Path | None = None) -> ClassRecord:
    """Everything the report shows, read from the gradebook and the files grading wrote."""
    from nbgrader.api import Gradebook

    statuses = read_statuses(grades if grades is not None else course / "grades.csv")
    assignments: list[Assignment] = []
    with Gradebook(db_url) as gb:
        students = sorted(
            (Person(s.id, s.first_name or "", s.last_name or "", s.email or "") for s in gb.students),
            key=lambda p: p.id,
        )
        for a in gb.assignments:  # by due date, then name
            order = part_order(course, a.name)
            cells = [(c.name, float(c.max_score)) for nb in a.notebooks for c in nb.grade_cells]
            cells.sort(key=lambda c: (order.get(c[0], len(order)), c[0]))
            hand_ins = []
            for student, score, top, points, manual in submissions(gb, a.id):
                folder = course / "autograded" / student / a.name
                failed = [name for name, most in cells if points.get(name, 0.0) < most]
                hand_ins.append(
                    HandIn(
                        student,
                        score,
                        top,
                        points,
                        messages=failure_messages(folder / f"{a.name}.ipynb", failed),
                        seconds=grading_seconds(folder / TIMING_FILE),
                        manual=manual,
                    )
                )
            duedate = a.duedate.strftime("%Y-%m-%d %H:%M") if a.duedate else ""
            assignments.append(Assignment(a.name, duedate, cells, hand_ins))
    by_name = {a.name: a for a in assignments}
    for (assignment, student), (status, why) in sorted(statuses.items()):
        if assignment in by_name:
            by_name[assignment].human.append((student, status, why))
    for a in assignments:
        a.human += [
            (h.student, "manual", "parts to grade by hand: " + ", ".join(h.manual)) for h in a.hand_ins if h.manual
        ]
        a.human.sort()
    return ClassRecord(students, assignments)


def submissions(gb, assignment_id: str) -> list[tuple[str, float, float, dict[str, float], list[str]]]:
    """(student, score, max score, points by part, parts to grade by hand) of every submission
    of an assignment, in two queries (not one per grade, as walking nbgrader's objects would)."""
    from nbgrader.api import Grade, GradeCell, SubmittedAssignment, SubmittedNotebook

    subs = gb.db.query(SubmittedAssignment).filter(SubmittedAssignment.assignment_id == assignment_id).all()
    grades = (
        gb.db.query(SubmittedAssignment.student_id, GradeCell.name, Grade.score, Grade.needs_manual_grade)
        .select_from(Grade)
        .join(GradeCell, Grade.cell_id == GradeCell.id)
        .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
        .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
        .filter(SubmittedAssignment.assignment_id == assignment_id)
        .all()
    )
    points: dict[str, dict[str, float]] = defaultdict(dict)
    manual: dict[str, list[str]] = defaultdict(list)
    for student, part, score, by_hand in grades:
        points[student][part] = float(score or 0.0)
        if by_hand:
            manual[student].append(part)
    return sorted(
        (s.student_id, float(s.score), float(s.max_score), points[s.student_id], sorted(manual[s.student_id]))
        for s in subs
    )


def read_statuses(path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(assignment, student) -> (status, why) for every hand-in grades.csv lists for a human."""
    if not path.is_file():
        return {}
    found = {}
    with path.open(newline="", encoding="utf-8") as table:
        for row in csv.DictReader(table):
            status, _, why = (row.get("status") or "").partition(":")
            if status.strip() and status.strip() not in FINE:
                found[(row["assignment"], row["student_id"])] = (status.strip(), why.strip())
    return found


def part_order(course: Path, assignment: str) -> dict[str, int]:
    """The grade cells' order in the released notebook (empty if it is not here)."""
    path = course / "exercises" / assignment / f"{assignment}.ipynb"
    if not path.is_file():
        return {}
    metas = [c.get("metadata", {}).get("nbgrader", {}) for c in json.loads(path.read_text())["cells"]]
    return {m["grade_id"]: k for k, m in enumerate(m for m in metas if m.get("grade"))}


def failure_messages(graded: Path, failed: list[str]) -> dict[str, str]:
    """The feedback message of each failed part: the output grading gave its test cell
    (``<part>: failed, <points>/<max> points. <message>``, course_grader.feedback.part_line)."""
    if not failed:
        return {}
    messages = dict.fromkeys(failed, NOT_RECORDED)
    try:
        cells = json.loads(graded.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        return messages
    for cell in cells:
        name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if name not in messages or cell.get("cell_type") != "code":
            continue
        text = "".join(
            "".join(out.get("text", "")) for out in cell.get("outputs", []) if out.get("output_type") == "stream"
        )
        line = re.match(rf"{re.escape(name)}: failed, \S+ points\.? ?(.*)", text.strip(), re.S)
        if line and line.group(1).strip():
            messages[name] = line.group(1).strip()
    return messages


def grading_seconds(path: Path) -> float | None:
    try:
        seconds = json.loads(path.read_text())["seconds"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(seconds) if isinstance(seconds, int | float) else None


# -- numbers -------------------------------------------------------------------------------------


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile (linear interpolation between order statistics)."""
    q1, median, q3 = np.percentile(np.asarray(values, dtype=float), [25, 50, 75])
    return float(q1), float(median), float(q3)


def part_table(a: Assignment) -> list[dict]:
    """Each part: points, hand-ins that passed it, pass rate and mean points."""
    rows = []
    for name, top in a.parts:
        got = [h.points.get(name, 0.0) for h in a.hand_ins]
        passed = sum(p >= top for p in got)
        rows.append(
            {
                "part": name,
                "max_points": top,
                "passed": passed,
                "hand_ins": len(got),
                "pass_rate": 100.0 * passed / len(got) if got else 0.0,
                "mean_points": sum(got) / len(got) if got else 0.0,
            }
        )
    return rows


# A number, also inside a name (scratch_11.npy, x2): the sign only where it cannot be a minus.
NUMBER = re.compile(r"(?<![\d.])(?:(?<![\w)\]])[-+])?(?:0x[0-9a-fA-F]+|(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?)")


def mistake_pattern(message: str) -> str:
    """A message with every number made ``#`` and spaces squeezed: the same mistake made with
    other numbers reads the same."""
    return " ".join(NUMBER.sub("#", message).split())


class Anonymiser:
    """Replaces every student's id, name and e-mail address in a text by ``[student]``."""

    def __init__(self, people: list[Person]):
        names = {v for p in people for v in (p.id, p.first_name, p.last_name, p.email) if len(v) >= 2}
        alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        self.pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.I) if names else None

    def __call__(self, text: str) -> str:
        return self.pattern.sub("[student]", text) if self.pattern else text


def mistakes(a: Assignment, people: list[Person]) -> dict[str, list[dict]]:
    """For each part, its failure messages (anonymised) grouped by pattern, most students
    first; each with how many students and one example."""
    anonymised = Anonymiser(people)
    found: dict[str, list[dict]] = {}
    for name, _ in a.parts:
        groups: dict[str, list[str]] = defaultdict(list)
        for h in a.hand_ins:
            if name in h.messages:
                message = anonymised(h.messages[name])
                groups[mistake_pattern(message)].append(message)
        found[name] = [
            {"part": name, "pattern": pattern, "students": len(examples), "example": examples[0]}
            for pattern, examples in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
        ]
    return found


def timing(a: Assignment) -> dict | None:
    """Median, 90th percentile, longest and total grading time of the hand-ins that recorded one."""
    seconds = [h.seconds for h in a.hand_ins if h.seconds is not None]
    if not seconds:
        return None
    median, p90 = np.percentile(seconds, [50, 90])
    return {
        "timed": len(seconds),
        "median": float(median),
        "p90": float(p90),
        "max": max(seconds),
        "total": sum(seconds),
    }


def histogram(a: Assignment) -> tuple[list[float], list[int]]:
    """Bin edges and counts of the scores: one bin per point up to 40 points, else 10 bins."""
    scores = [h.score for h in a.hand_ins]
    top = a.max_score or 1.0
    whole = all(float(s).is_integer() for s in scores) and float(top).is_integer()
    edges = list(np.arange(-0.5, top + 1.0, 1.0)) if whole and top <= 40 else list(np.linspace(0, top, 11))
    counts, _ = np.histogram(scores, bins=edges)
    return [float(e) for e in edges], [int(c) for c in counts]


def progress(record: ClassRecord) -> list[dict]:
    """The class assignment by assignment: hand-ins graded and for a human, the share of the class
    that handed in (either), the mean and quartiles of the graded scores (%)."""
    rows = []
    for a in record.assignments:
        percents = [h.percent for h in a.hand_ins]
        humans = len({s for s, status, _ in a.human if status != "manual"} - {h.student for h in a.hand_ins})
        q1, median, q3 = quartiles(percents) if percents else (0.0, 0.0, 0.0)
        rows.append(
            {
                "assignment": a.name,
                "graded": len(a.hand_ins),
                "for_a_human": humans,
                "students": len(record.students),
                "handed_in_rate": 100.0 * (len(a.hand_ins) + humans) / len(record.students) if record.students else 0.0,
                "mean": sum(percents) / len(percents) if percents else 0.0,
                "q1": q1,
                "median": median,
                "q3": q3,
            }
        )
    return rows


NOT_YET = "not graded yet"


def term(record: ClassRecord, drop: float = DROP_POINTS) -> list[dict]:
    """Each student: their score (%) on each assignment, missing hand-ins, and whether they are
    falling behind (a missing hand-in, or the latest score ``drop`` points under their earlier
    mean). An assignment nobody's hand-in of has been graded yet is nobody's missing one."""
    percents = {a.name: {h.student: h.percent for h in a.hand_ins} for a in record.assignments}
    humans = {a.name: {s for s, status, _ in a.human if status != "manual"} for a in record.assignments}
    rows = []
    for person in record.students:
        scores: dict[str, float | str] = {}
        for a in record.assignments:
            if person.id in percents[a.name]:
                scores[a.name] = percents[a.name][person.id]
            elif person.id in humans[a.name]:
                scores[a.name] = "for a human"
            else:
                scores[a.name] = "missing" if percents[a.name] or humans[a.name] else NOT_YET
        numbers = [v for v in scores.values() if isinstance(v, float)]
        missing = sum(v == "missing" for v in scores.values())
        dropping = len(numbers) >= 2 and numbers[-1] <= sum(numbers[:-1]) / len(numbers[:-1]) - drop
        reasons = ([f"{missing} missing"] if missing else []) + (["scores dropping"] if dropping else [])
        rows.append(
            {
                "student": person.id,
                "last_name": person.last_name,
                "first_name": person.first_name,
                "scores": scores,
                "mean": sum(numbers) / len(numbers) if numbers else None,
                "missing": missing,
                "behind": "; ".join(reasons),
            }
        )
    return rows


# -- writing -------------------------------------------------------------------------------------
