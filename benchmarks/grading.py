"""Grading throughput: hand-ins per second with 1 and 2 workers, side by side in one run.

    python -m benchmarks.grading [--sizes 20 100] [--assignment ps01_finite_differences]

Builds a throw-away course (the assignment released as `make release` does) and a class of
synthetic hand-ins: the solution and each typical mistake of ``tests/mistakes/``, in turn.
Each hand-in's answer cells end with a comment naming its student, so no two hand-ins are the
same code, as in a real class: the grader's verdict memo (a part run exactly as another
hand-in's part reuses its verdict) cannot shortcut them. ``--copies`` leaves them identical,
to measure what the memo saves on a class of copies.
Each class is graded from scratch with 1 and with 2 workers (``make autograde JOBS=n``), the
sandbox on, as an instructor runs it; the script prints seconds per hand-in, hand-ins per
second and the speed-up of 2 workers over 1. Wall-clock time, since the work is spread over
processes. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import nbformat

from benchmarks.handins import answer_cells, fill_in, nbgrader
from course_grader.grading import ClassGrader

ROOT = Path(__file__).resolve().parents[1]


def hand_ins(course: Path, assignment: str) -> list:
    """The solution and each typical mistake, as student notebooks."""
    name = f"{assignment}.ipynb"
    source = nbformat.read(course / "solutions" / assignment / name, as_version=4)
    release = nbformat.read(course / "exercises" / assignment / name, as_version=4)
    notebooks = [fill_in(release, source, {})]
    try:
        mistakes = importlib.import_module(f"tests.mistakes.{assignment}").MISTAKES  # the typical mistakes: data
    except ModuleNotFoundError:
        mistakes = {}
    answers = answer_cells(source)
    for mistake in mistakes.values():
        replace = {k: v for k, v in mistake["replace"].items() if k in answers}
        notebooks.append(fill_in(release, source, replace))
    return notebooks


def signed(notebook: nbformat.NotebookNode, student: str) -> nbformat.NotebookNode:
    """``notebook`` with a comment naming ``student`` at the end of every answer cell."""
    copy = nbformat.from_dict(notebook)
    for cell in answer_cells(copy).values():
        cell.source += f"\n# {student}\n"
    return copy


def time_class(assignment: str, size: int, jobs: int, copies: bool = False) -> float:
    """Seconds to grade a fresh class of ``size`` hand-ins with ``jobs`` workers (each hand-in
    its own code unless ``copies``)."""
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as folder:
        course = Path(folder) / "course"
        course.mkdir()
        shutil.copy(ROOT / "nbgrader_config.py", course)
        shutil.copytree(ROOT / "course_grader", course / "course_grader")
        shutil.copytree(ROOT / "solutions" / assignment, course / "solutions" / assignment)
        nbgrader("generate_assignment", assignment, "--force", cwd=course)
        kinds = hand_ins(course, assignment)
        for k in range(size):
            student = f"student{k:03d}"
            notebook = kinds[k % len(kinds)] if copies else signed(kinds[k % len(kinds)], student)
            (course / "submissions" / student).mkdir(parents=True)
            nbformat.write(notebook, course / "submissions" / student / f"{assignment}.ipynb")
        grader = ClassGrader(course, log=lambda *a: None)
        start = time.perf_counter()
        outcomes = grader.collect(course / "submissions")
        grader.grade(outcomes, jobs=jobs)
        elapsed = time.perf_counter() - start
        assert sum(o.status == "graded" for o in outcomes) == size, [o.notes for o in outcomes if o.notes]
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--assignment", default="ps01_finite_differences")
    parser.add_argument("--copies", action="store_true", help="identical hand-ins (the verdict memo's best case)")
    args = parser.parse_args()
    os.environ.pop("DB_URL", None)  # the sqlite gradebook of the throw-away course
    kind = "copies of the solution and the typical mistakes" if args.copies else "every hand-in its own code"
    print(f"Grading {args.assignment}, sandbox on, {os.cpu_count()} cores, {kind}")
    print(f"{'hand-ins':>9} {'workers':>8} {'s/hand-in':>10} {'hand-ins/s':>11} {'speed-up':>9}")
    for size in args.sizes:
        one = time_class(args.assignment, size, 1, args.copies)
        two = time_class(args.assignment, size, 2, args.copies)
        for jobs, seconds in ((1, one), (2, two)):
            print(f"{size:>9} {jobs:>8} {seconds / size:>10.2f} {size / seconds:>11.2f} {one / seconds:>8.2f}x")


if __name__ == "__main__":
    main()
