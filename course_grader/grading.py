"""Grade a class's hand-ins: the instructor's side of the course (``make autograde``).

Run from the course root (the folder with ``nbgrader_config.py``)::

    python -m course_grader.grading submissions/        # or: make autograde

``submissions/`` holds one folder per student with their notebooks, named after the
assignment, as an LMS export looks once unzipped::

    submissions/<student>/<assignment>.ipynb

Each hand-in is checked, repaired where a notebook editor damaged it (Colab may drop the
nbgrader cell metadata; students reorder cells) and copied into nbgrader's ``submitted/``.
Then a judge process (:mod:`course_grader.judge`) runs the tests of the instructor's source
notebook, each part against the student's code in its own sandboxed process
(:mod:`course_grader.runner`, :mod:`course_grader.sandbox`); the points
go to nbgrader's gradebook, feedback to ``feedback/`` and every grade to ``grades.csv``.
Nothing already graded is overwritten, one broken hand-in never stops the batch, and a
summary lists what needs a human. Security model: README, "Security model".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from course_grader.class_record import TIMING_FILE
from course_grader.database import gradebook_url
from course_grader.feedback import Redactor, part_line, write_html
from course_grader.gradebook import PointsRecorder, write_grades
from course_grader.handin import GradingFailed, PartResult, grade_hand_in
from course_grader.intake import (
    MAX_NOTEBOOK_BYTES,
    id_problem,
    id_problems,
    normalised,
    notebook_problem,
    read_notebook,
    restore_metadata,
    restore_order,
)
from course_grader.limits import Limits
from course_grader.parts import nbgrader_meta, secret_lines
from course_grader.rules import course_lib_root, read_rules
from course_grader.sandbox import Sandbox, SandboxMissing


@dataclass
class Outcome:
    """What happened to one hand-in."""

    student: str
    assignment: str
    status: str = "pending"  # copied | unchanged | kept-graded | unreadable | unknown-assignment | graded | failed
    notes: list[str] = field(default_factory=list)
    score: float | None = None
    max_score: float | None = None
    seconds: float | None = None  # wall-clock time of the sandboxed grading run


class ClassGrader:
    """Collect, grade in the sandbox, give feedback and export grades for one course folder."""

    def __init__(
        self,
        course: Path | str = ".",
        timeout: float | None = None,
        log=print,
        unsafe: bool = False,
        limits: Limits | None = None,
        max_bytes: int = MAX_NOTEBOOK_BYTES,
    ):
        self.course = Path(course).resolve()
        self.max_bytes = max_bytes
        self.timeout = timeout or 60
        self.log = log
        self.limits = limits or Limits(wall_seconds=3 * self.timeout + 30, cpu_seconds=int(3 * self.timeout + 30))
        self.unsafe = unsafe
        self.sandbox = Sandbox(self.limits, unsafe=unsafe)  # checks bubblewrap is there
        self.slots: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.results: dict[tuple[str, str], list[PartResult]] = {}
        self.memo: Path | None = None  # the verdicts of the grading run under way
        self.recorder = PointsRecorder(self.db_url)  # the points of the grading run under way

    def release_notebook(self, assignment: str):
        import nbformat

        path = self.course / "exercises" / assignment / f"{assignment}.ipynb"
        return nbformat.read(path, as_version=4) if path.exists() else None

    # 1. collect -----------------------------------------------------------------------
    def collect(self, inbox: Path | str) -> list[Outcome]:
        """Copy ``inbox/<student>/<assignment>.ipynb`` into ``submitted/`` (never over
        graded work), after checking and repairing each notebook."""
        outcomes = []
        paths = sorted(Path(inbox).glob("*/*.ipynb"))
        known = {o.student for o in self.collected()} | {p.parent.name for p in paths}
        wrong_ids = id_problems(known)
        for path in paths:
            shown = Path(Path(inbox).name) / path.parent.name / path.name  # no grader paths in notes
            out = Outcome(student=normalised(path.parent.name), assignment=path.stem)
            outcomes.append(out)
            try:  # one hand-in's trouble never stops the batch
                self._collect_one(path, shown, out, wrong_ids.get(path.parent.name))
            except Exception as error:  # noqa: BLE001 - reported with the file named, for a human
                out.status = "failed"
                out.notes.append(f"{shown} could not be collected ({type(error).__name__}: {str(error)[:200]})")
        return outcomes

    def _collect_one(self, path: Path, shown: Path, out: Outcome, wrong_id: str | None) -> None:
        if wrong_id is not None:
            out.status = "invalid-id"
            out.notes.append(f"{shown}: {wrong_id}; rename the folder to the student's id and grade again")
            return
        release = self.release_notebook(out.assignment)
        if release is None:
            out.status = "unknown-assignment"
            out.notes.append(
                f"{shown}: no assignment called '{out.assignment}' in exercises/; rename the file to <assignment>.ipynb"
            )
            return
        if path.is_symlink() or not path.is_file():
            out.status = "malformed"
            out.notes.append(f"{shown} is not a regular file (a link or a device); ask for the notebook itself")
            return
        size = path.stat().st_size
        if size > self.max_bytes:
            out.status = "too-large"
            out.notes.append(
                f"{shown} is {size / 1024**2:.1f} MB, more than the {self.max_bytes / 1024**2:g} MB the grader "
                "accepts (--max-notebook-mb); clear its outputs (Edit > Clear outputs) and hand it in anew"
            )
            return
        try:
            nb, repairs = read_notebook(path)
        except Exception as error:  # noqa: BLE001 - any unreadable file is reported, not fatal
            out.status = "unreadable"
            out.notes.append(
                f"{shown} is not a readable notebook ({type(error).__name__}: "
                f"{str(error).splitlines()[0][:120] if str(error) else ''}); ask the student to download "
                "it again (File > Download .ipynb) and hand it in anew"
            )
            return
        if problem := notebook_problem(nb):
            out.status = "malformed"
            out.notes.append(f"{shown} cannot be graded: {problem}; ask the student for a fresh copy")
            return
        out.notes.extend(repairs)
        if n := restore_metadata(nb, release):
            out.notes.append(f"restored the grading metadata of {n} cells (dropped by the editor)")
        if restore_order(nb, release):
            out.notes.append("put the graded cells back in the assignment's order")
        self._store(nb, out)

    def collected(self, known: Sequence[Outcome] = ()) -> list[Outcome]:
        """Hand-ins that ``nbgrader collect`` put into ``submitted/<student>/<assignment>/``
        on a hub (and that the inbox did not bring): graded if not graded yet."""
        seen = {(o.student, o.assignment) for o in known}
        outcomes = []
        for path in sorted((self.course / "submitted").glob("*/*/*.ipynb")):
            student, assignment = path.parent.parent.name, path.parent.name
            if path.stem != assignment or (student, assignment) in seen:
                continue
            if not (self.course / "exercises" / assignment / f"{assignment}.ipynb").exists():
                continue  # not one of this course's assignments (no need to parse the release to know)
            outcome = Outcome(student=student, assignment=assignment, status="unchanged")
            if problem := id_problem(student):
                outcome.status = "invalid-id"
                outcome.notes.append(f"submitted/{student}: the student id {student!r} {problem}")
            outcomes.append(outcome)
        return outcomes

    def _store(self, nb, out: Outcome) -> None:
        import nbformat

        target = self.course / "submitted" / out.student / out.assignment / f"{out.assignment}.ipynb"
        graded = self.course / "autograded" / out.student / out.assignment
        text = nbformat.writes(nb)
        if target.exists() and target.read_text() == text:
            out.status = "unchanged"
            return
        if graded.exists():
            out.status = "kept-graded"
            out.notes.append(
                f"a different hand-in arrived but {graded.relative_to(self.course)} is "
                "already graded; it was kept. Move that folder and the submitted one "
                "away to regrade with the new hand-in"
            )
            return
        if target.exists():
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            backup = target.with_name(f"{target.name}.{stamp}.previous")
            shutil.copy2(target, backup)
            out.notes.append(f"an earlier ungraded hand-in was kept as {backup.name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        out.status = "copied"

    # 2. grade and feedback ------------------------------------------------------------
    def grade(self, outcomes: list[Outcome], regrade: bool = False, jobs: int = 1, progress: bool = False) -> None:
        """Grade every hand-in that needs it, ``jobs`` at a time. The sandboxed runs overlap
        (each worker thread waits on its own sandbox processes); the points, the graded
        notebook and the feedback are written by this thread alone, one hand-in after the
        other as each is graded (a slow one holds up no other's), so the gradebook never
        sees two writers from one grading run."""
        todo = [
            o
            for o in outcomes
            if o.status == "copied"
            or (regrade and o.status == "unchanged")
            or (o.status == "unchanged" and not self._graded_dir(o).exists())
        ]
        bar = _progress_bar(len(todo)) if progress and todo else None
        self.slots = queue.SimpleQueue()
        for slot in range(max(1, jobs)):
            self.slots.put(slot)
        with (
            tempfile.TemporaryDirectory(prefix="course-grader-verdicts-") as memo,
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool,
            contextlib.closing(PointsRecorder(self.db_url)) as self.recorder,
        ):
            self.memo = Path(memo)
            runs = [pool.submit(self._run_hand_in, out) for out in todo]
            for k, run in enumerate(as_completed(runs), 1):
                out, hand_in, results = run.result()
                if bar is not None:
                    bar.update(1)
                else:
                    self.log(f"[{k}/{len(todo)}] {out.student}: graded {out.assignment}")
                if results is None:
                    continue
                try:
                    self._record(out, results)
                except Exception as error:  # noqa: BLE001 - one hand-in's failure never stops the batch
                    out.status = "failed"
                    out.notes.append(f"could not record the grades: {type(error).__name__}: {error}")
                    continue
                out.score, out.max_score = sum(r.points for r in results), sum(r.max_points for r in results)
                out.status = "graded"
                self.results[(out.student, out.assignment)] = results
                try:
                    self._write_feedback(out, hand_in, results)
                except Exception as error:  # noqa: BLE001 - the grade stands; the page is reported
                    out.notes.append(f"the feedback could not be written: {type(error).__name__}: {error}")
                if bar is None:
                    self.log(f"        score {out.score:g}/{out.max_score:g}")
        if bar is not None:
            bar.close()
        for out in outcomes:
            if out.status in ("unreadable", "failed", "too-large", "malformed"):
                problem = out.notes[0] if out.notes else out.status
                write_html(self._feedback_file(out), out.student, out.assignment, [], problem=problem)
                self._carry_submission_files(out)

    def _run_hand_in(self, out: Outcome):
        """One hand-in through the sandbox (a worker thread): the hand-in and its redacted
        results, or None for both with the reason in ``out.notes``."""
        import nbformat

        name = f"{out.assignment}.ipynb"
        source = nbformat.read(self.course / "solutions" / out.assignment / name, as_version=4)
        grader_paths = [
            self.course,
            Path(sys.prefix),
            Path(tempfile.gettempdir()),
            course_lib_root(),
        ]
        redact = Redactor(secret_lines(source), grader_paths)
        slot = self.slots.get()
        try:
            rules = read_rules(self.course / "solutions" / out.assignment)
            sandbox = Sandbox(self.limits, unsafe=self.unsafe, rules=rules, slot=slot)
            hand_in = nbformat.read(self.course / "submitted" / out.student / out.assignment / name, as_version=4)
            start = time.monotonic()
            results = grade_hand_in(
                source, hand_in, self.course / "exercises" / out.assignment, sandbox, self.timeout, name, memo=self.memo
            )
            out.seconds = time.monotonic() - start
        except GradingFailed as error:
            out.status = "failed"
            out.notes.append(
                redact(f"the grading machinery failed on this hand-in ({error}); nothing was scored: grade it by hand")
            )
            return out, None, None
        except Exception as error:  # noqa: BLE001 - a notebook the grader cannot process is reported
            out.status = "failed"
            out.notes.append(
                redact(
                    f"the notebook could not be graded ({type(error).__name__}: "
                    f"{str(error)[:200]}); check it by hand or ask for a new hand-in"
                )
            )
            return out, None, None
        finally:
            self.slots.put(slot)
        for r in results:
            r.message, r.output, r.notes = redact(r.message), redact(r.output), [redact(n) for n in r.notes]
        return out, hand_in, results

    def _graded_dir(self, out: Outcome) -> Path:
        return self.course / "autograded" / out.student / out.assignment

    def _feedback_file(self, out: Outcome) -> Path:
        return self.course / "feedback" / out.student / out.assignment / f"{out.assignment}.html"

    def _record(self, out: Outcome, results: list[PartResult]) -> None:
        self.recorder.record(out.student, out.assignment, {r.grade_id: r.points for r in results})

    def _write_feedback(self, out: Outcome, hand_in, results: list[PartResult]) -> None:
        """The HTML feedback, and the hand-in with each test cell's result as its output."""
        import nbformat

        write_html(self._feedback_file(out), out.student, out.assignment, results)
        by_id = {r.grade_id: r for r in results}
        graded = nbformat.from_dict(json.loads(json.dumps(hand_in)))
        for cell in graded.cells:
            result = by_id.get(str(nbgrader_meta(cell).get("grade_id")))
            if result is not None and cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=part_line(result) + "\n")]
        folder = self._graded_dir(out)
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(graded, folder / f"{out.assignment}.ipynb")
        # How long the hand-in took, for the class report (course_grader.class_record).
        (folder / TIMING_FILE).write_text(json.dumps({"seconds": round(out.seconds or 0.0, 3)}) + "\n")
        self._carry_submission_files(out)

    def _carry_submission_files(self, out: Outcome) -> None:
        """Copy what ``nbgrader collect`` stored next to a hand-in (its timestamp and the
        secret of the student's submission) to ``autograded/`` and ``feedback/``, as
        nbgrader's own autograde does: ``nbgrader release_feedback`` needs both to hand
        our feedback page to the student who submitted."""
        submitted = self.course / "submitted" / out.student / out.assignment
        for name in ("timestamp.txt", "submission_secret.txt"):
            if (submitted / name).is_file():
                for folder in (self._graded_dir(out), self._feedback_file(out).parent):
                    folder.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(submitted / name, folder / name)

    @property
    def db_url(self) -> str:
        """The gradebook: DB_URL (PostgreSQL or sqlite), else ``gradebook.db`` in the course,
        read the same way nbgrader_config.py reads it for nbgrader's own commands."""
        return gradebook_url(os.environ.get("DB_URL"), self.course)

    def score(self, student: str, assignment: str) -> tuple[float, float] | None:
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.db_url) as gb:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                return None
            return sub.score, sub.max_score

    # 3. export ---------------------------------------------------------------------------
    def export(self, filename: str = "grades.csv", outcomes: Sequence[Outcome] = ()) -> Path:
        """The grade table ``filename`` in the course (:func:`course_grader.gradebook.write_grades`)."""
        problems = {
            (o.assignment, o.student): f"{o.status}: {o.notes[0] if o.notes else ''}"
            for o in outcomes
            if o.status in PROBLEMS
        }
        return write_grades(self.db_url, self.course, self.course / filename, problems)


PROBLEMS = ("unreadable", "unknown-assignment", "failed", "kept-graded", "invalid-id", "too-large", "malformed")


def _progress_bar(total: int):
    """A progress bar with the rate and time left, on stderr (tqdm)."""
    from tqdm import tqdm

    return tqdm(total=total, unit="hand-in", desc="grading", smoothing=0.1, dynamic_ncols=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "inbox",
        nargs="?",
        default="submissions",
        help="folder laid out as <student>/<assignment>.ipynb (default: submissions)",
    )
    parser.add_argument("--course", default=".", help="course root with nbgrader_config.py")
    parser.add_argument("--regrade", action="store_true", help="grade unchanged hand-ins again")
    parser.add_argument("--timeout", type=int, default=None, help="seconds per cell and per test (default: 60)")
    parser.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run hand-ins WITHOUT isolation where bubblewrap is missing (trusted hand-ins only)",
    )
    parser.add_argument("--grades", default="grades.csv", help="where to write the grade table")
    parser.add_argument(
        "--max-notebook-mb",
        type=float,
        default=MAX_NOTEBOOK_BYTES / 1024**2,
        help="larger hand-ins are listed for a human, not graded (default: %(default)g)",
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="hand-ins graded at a time (default: the number of cores)"
    )
    args = parser.parse_args(argv)

    inbox = Path(args.inbox)
    course = Path(args.course)
    if not inbox.is_dir() and not any((course / "submitted").glob("*/*/*.ipynb")):
        print(
            f"No folder '{inbox}' and nothing collected in submitted/. Unzip the hand-ins as "
            f"{inbox}/<student>/<assignment>.ipynb, or run `nbgrader collect <assignment>` on a hub, first."
        )
        return 2
    from course_lib import __version__

    try:
        grader = ClassGrader(
            args.course,
            timeout=args.timeout,
            unsafe=args.unsafe_no_sandbox,
            max_bytes=int(args.max_notebook_mb * 1024**2),
        )
        grader.db_url  # noqa: B018 - a gradebook URL that cannot work stops here, in one line
    except (SandboxMissing, ValueError) as error:
        print(f"ERROR: {error}")
        return 2
    print(f"Grading against course_lib {__version__}, each part in a {grader.sandbox.description}")
    outcomes = grader.collect(inbox) if inbox.is_dir() else []
    print(f"Collected {len(outcomes)} hand-ins from {inbox}/")
    if collected := grader.collected(outcomes):
        print(f"Found {len(collected)} hand-in(s) that nbgrader collect put into submitted/")
        outcomes += collected
    start = time.perf_counter()
    grader.grade(outcomes, regrade=args.regrade, jobs=args.jobs, progress=sys.stderr.isatty())
    elapsed = time.perf_counter() - start
    csv = grader.export(args.grades, outcomes)
    graded = sum(o.status == "graded" for o in outcomes)
    per = f", {elapsed / graded:.2f} s per hand-in" if graded else ""
    print(
        f"Graded {graded} hand-in(s) with {args.jobs} worker(s) in {elapsed:.1f} s{per}; "
        f"{sum(o.status in PROBLEMS for o in outcomes)} could not be graded (reasons below)"
    )
    print(f"Grades of every graded hand-in: {csv}")
    problems = [o for o in outcomes if o.status in PROBLEMS]
    for o in outcomes:
        for note in o.notes:
            print(f"  {o.student}/{o.assignment}: {note}")
    if problems:
        print(f"{len(problems)} hand-in(s) need attention (see above); everyone else was graded.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
