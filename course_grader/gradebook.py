"""The grader's writes to nbgrader's gradebook, and the grade table read back from it.

Both run in the grader's own process, never in the sandbox; the gradebook is SQLite or
PostgreSQL (:func:`course_grader.database.gradebook_url`).
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path
from typing import Any

EXPORT_COLUMNS = [
    "assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
    "raw_score", "late_submission_penalty", "score", "max_score", "course_lib_version", "status",
]  # fmt: skip


class PointsRecorder:
    """New submissions with their points, written into nbgrader's gradebook, which is opened
    at the first and kept open for the rest of a grading run (its compiled queries are
    reused: a third of the time of each after the first)."""

    def __init__(self, db_url: str):
        self.db_url = db_url
        self.gradebook: Any = None  # nbgrader's Gradebook, once opened

    def record(self, student: str, assignment: str, points: dict[str, float]) -> None:
        """A new submission of ``student`` with each graded part's points (by grade id)."""
        from nbgrader.api import Gradebook, MissingEntry
        from sqlalchemy.exc import SAWarning

        if self.gradebook is None:
            # nbgrader's add_submission builds its rows before adding them to the session (as
            # its own autograde does); SQLAlchemy's autoflush notes that, harmlessly. Filtered
            # for the process: catch_warnings is not safe beside another thread's.
            warnings.filterwarnings("ignore", category=SAWarning, module=r"nbgrader\.")
            self.gradebook = Gradebook(self.db_url)
        gb = self.gradebook
        try:
            gb.update_or_create_student(student)
            try:
                gb.remove_submission(assignment, student)
            except MissingEntry:
                pass
            submission = gb.add_submission(assignment, student)
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.name in points:
                        grade.auto_score = points[grade.name]
                        grade.needs_manual_grade = False
            gb.db.commit()
        except Exception:
            gb.db.rollback()  # the next hand-in starts from a clean session
            raise

    def close(self) -> None:
        if self.gradebook is not None:
            self.gradebook.close()
            self.gradebook = None


def write_grades(db_url: str, course: Path, path: Path, problems: dict[tuple[str, str], str]) -> Path:
    """The grade table: nbgrader's columns (read from the gradebook), the course_lib version
    the grading compared against and a status column (``problems``, by (assignment, student):
    why a hand-in was not graded). Written with the csv module, so no id or name can add a row
    or a column, and a cell that a spreadsheet would run as a formula is quoted."""
    from nbgrader.api import Gradebook, MissingEntry

    from course_lib import __version__

    problems = dict(problems)
    rows = []
    with Gradebook(db_url) as gb:
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            for student in sorted(gb.students, key=lambda s: s.id):
                key = (assignment.name, student.id)
                try:
                    sub = gb.find_submission(assignment.name, student.id)
                    numbers = [sub.timestamp or "", sub.score, sub.late_submission_penalty]
                    numbers += [sub.score - sub.late_submission_penalty, sub.max_score]
                except MissingEntry:
                    numbers = ["", 0.0, 0.0, 0.0, assignment.max_score]
                graded = (course / "autograded" / student.id / assignment.name).is_dir()
                status = problems.pop(key, None) or ("graded" if graded else "no hand-in")
                rows.append(
                    [
                        assignment.name,
                        assignment.duedate or "",
                        numbers[0],
                        student.id,
                        student.last_name or "",
                        student.first_name or "",
                        student.email or "",
                        *numbers[1:],
                        __version__,
                        status,
                    ]
                )
    for (assignment_name, student_id), status in sorted(problems.items()):
        rows.append([assignment_name, "", "", student_id, "", "", "", 0.0, 0.0, 0.0, "", __version__, status])
    with path.open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(EXPORT_COLUMNS)
        writer.writerows([_safe_cell(cell) for cell in row] for row in rows)
    return path


def _safe_cell(cell: object) -> object:
    """A number as plainly as it reads (10, 9.5); a text cell a spreadsheet would read as a
    formula, made plain text."""
    if isinstance(cell, float):
        return f"{cell:g}"
    if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + cell
    return cell
