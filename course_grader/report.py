"""The class report: every assignment and every student, from the gradebook (``make report``).

Run from the course root after ``make autograde``::

    python -m course_grader.report            # or: make report [DB_URL=...]

It reads what grading keeps: nbgrader's gradebook (``DB_URL``, else ``gradebook.db``: the
points of every part of every hand-in), ``grades.csv`` (its status column: the hand-ins that
need a human, and why), the graded notebooks in ``autograded/`` (each test cell's output is the
part's feedback line, so its failure message) and, where grading recorded it,
``autograded/<student>/<assignment>/grading.json`` (``{"seconds": ...}``: the time the hand-in
took). It writes static pages, plots and the same numbers as CSV into ``report/``
(:mod:`course_grader.report_pages`). The report names students: it is for instructors only.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

from course_grader import report_pages
from course_grader.class_record import (
    DROP_POINTS,
    ClassRecord,
    mistakes,
    part_table,
    progress,
    read_class,
    term,
)
from course_grader.database import gradebook_url


def write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    """A CSV for a spreadsheet: numbers plainly, a text cell that a spreadsheet would run as a
    formula made plain text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow([plain(cell) for cell in row])


def plain(cell: object) -> object:
    if isinstance(cell, float):
        return f"{cell:.4g}" if not cell.is_integer() else f"{cell:g}"
    if cell is None:
        return ""
    if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + cell
    return cell


def write_report(record: ClassRecord, out: Path, drop: float = DROP_POINTS) -> list[Path]:
    """The pages, plots and CSV files of the report into ``out``; returns the pages written."""
    out.mkdir(parents=True, exist_ok=True)
    data = out / "csv"
    for a in record.assignments:
        parts = part_table(a)
        write_csv(
            data / f"{a.name}-parts.csv",
            list(parts[0]) if parts else ["part"],
            [list(r.values()) for r in parts],
        )
        write_csv(
            data / f"{a.name}-hand-ins.csv",
            ["student", "score", "max_score", "percent", "grading_seconds", *[n for n, _ in a.parts]],
            [
                [h.student, h.score, h.max_score, h.percent, h.seconds, *[h.points.get(n, 0.0) for n, _ in a.parts]]
                for h in a.hand_ins
            ],
        )
        groups = [g for part in mistakes(a, record.students).values() for g in part]
        write_csv(
            data / f"{a.name}-mistakes.csv",
            ["part", "pattern", "students", "example"],
            [list(g.values()) for g in groups],
        )
        write_csv(data / f"{a.name}-for-a-human.csv", ["student", "status", "why"], [list(r) for r in a.human])
    rows = progress(record)
    write_csv(data / "progress.csv", list(rows[0]) if rows else ["assignment"], [list(r.values()) for r in rows])
    names = [a.name for a in record.assignments]
    students = term(record, drop)
    write_csv(
        data / "students.csv",
        ["student", "last_name", "first_name", *names, "mean", "missing", "behind"],
        [
            [s["student"], s["last_name"], s["first_name"], *[s["scores"][n] for n in names]]
            + [s["mean"], s["missing"], s["behind"]]
            for s in students
        ],
    )
    return report_pages.write_pages(record, out, drop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_grader.report",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--course", type=Path, default=Path("."), help="the course root (default: here)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the report (default: report/)")
    parser.add_argument("--grades", type=Path, default=None, help="the grade table grading wrote (grades.csv)")
    parser.add_argument(
        "--drop", type=float, default=DROP_POINTS, help="points (%%) under the earlier mean that flag a student"
    )
    args = parser.parse_args(argv)
    course = args.course.resolve()
    try:
        url = gradebook_url(os.environ.get("DB_URL"), course)
    except ValueError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        print(
            f"ERROR: no gradebook at {url.removeprefix('sqlite:///')}: run `make autograde` first "
            "(or set DB_URL to the PostgreSQL gradebook grading wrote)",
            file=sys.stderr,
        )
        return 2
    record = read_class(url, course, args.grades)
    if not record.assignments:
        print(
            "ERROR: the gradebook has no assignments yet: run `make release` and `make autograde` first",
            file=sys.stderr,
        )
        return 2
    out = args.out or course / "report"
    pages = write_report(record, out, args.drop)
    hand_ins = sum(len(a.hand_ins) for a in record.assignments)
    print(f"report: {len(pages)} pages for {len(record.assignments)} assignments, {hand_ins} graded hand-ins")
    print(f"        open {out / 'index.html'} (it names students: for instructors only, never publish it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
