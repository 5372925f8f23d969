"""Grade a class's hand-ins with nbgrader: the instructor's side of the course.

Run from the course root (the folder with ``nbgrader_config.py``)::

    python -m course_lib.grading submissions/        # or: make autograde

``submissions/`` holds one folder per student with their notebooks, named after the
assignment, as an LMS export looks once unzipped::

    submissions/<student>/<assignment>.ipynb

Each hand-in is checked, repaired where a notebook editor damaged it (Colab may drop the
nbgrader cell metadata; students reorder cells), copied into nbgrader's ``submitted/``,
autograded, given feedback, and finally every grade goes to ``grades.csv``. Nothing already
graded is overwritten, one broken hand-in never stops the batch, and a summary lists what
needs a human.

This module needs the instructor stack (``requirements.txt``: nbgrader, nbformat); students
never import it, so it is not a dependency of ``course_lib``.
"""
from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path


@dataclass
class Outcome:
    """What happened to one hand-in."""

    student: str
    assignment: str
    status: str = "pending"   # copied | unchanged | kept-graded | unreadable | unknown-assignment | graded | failed
    notes: list[str] = field(default_factory=list)
    score: float | None = None
    max_score: float | None = None


def _nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _restore_metadata(nb, release) -> int:
    """Give cells whose nbgrader metadata was dropped (Colab does this) the metadata of the
    released cell they correspond to, by aligning the two notebooks' cell sources.

    Unchanged cells align exactly; an answer cell the student filled in sits at the same
    place between them. Returns the number of cells repaired."""
    if any(_nbgrader_meta(c) for c in nb.cells):
        return 0
    key = [(c.cell_type, c.source.strip()) for c in release.cells]
    theirs = [(c.cell_type, c.source.strip()) for c in nb.cells]
    repaired = 0
    matcher = difflib.SequenceMatcher(a=key, b=theirs, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for i, j in zip(range(i1, i2), range(j1, j2)):
                meta = _nbgrader_meta(release.cells[i])
                if meta and release.cells[i].cell_type == nb.cells[j].cell_type:
                    nb.cells[j].metadata["nbgrader"] = dict(meta)
                    repaired += 1
    return repaired


def _restore_order(nb, release) -> bool:
    """Put graded and answer cells back in the released order, each carrying along the
    cells the student added after it. Returns True when the order changed."""
    rank = {_nbgrader_meta(c)["grade_id"]: k for k, c in enumerate(release.cells) if _nbgrader_meta(c)}
    blocks: list[list] = [[]]
    for cell in nb.cells:
        if _nbgrader_meta(cell).get("grade_id") in rank:
            blocks.append([cell])
        else:
            blocks[-1].append(cell)
    head, rest = blocks[0], blocks[1:]
    ordered = sorted(rest, key=lambda b: rank[_nbgrader_meta(b[0])["grade_id"]])
    if ordered == rest:
        return False
    nb.cells = head + [cell for block in ordered for cell in block]
    return True


class ClassGrader:
    """Collect, autograde, give feedback and export grades for one course folder."""

    def __init__(self, course: Path | str = ".", timeout: int | None = None, log=print):
        self.course = Path(course).resolve()
        self.timeout = timeout
        self.log = log
        bin_dir = Path(sys.executable).parent
        # nbgrader shells out to alembic, which lives next to the running Python.
        self.env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        self.nbgrader = [sys.executable, "-m", "nbgrader"]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*self.nbgrader, *args], cwd=self.course, env=self.env,
                              capture_output=True, text=True)

    def release_notebook(self, assignment: str):
        import nbformat

        path = self.course / "exercises" / assignment / f"{assignment}.ipynb"
        return nbformat.read(path, as_version=4) if path.exists() else None

    # 1. collect -----------------------------------------------------------------------
    def collect(self, inbox: Path | str) -> list[Outcome]:
        """Copy ``inbox/<student>/<assignment>.ipynb`` into ``submitted/`` (never over
        graded work), after checking and repairing each notebook."""
        import nbformat

        outcomes = []
        for path in sorted(Path(inbox).glob("*/*.ipynb")):
            out = Outcome(student=path.parent.name, assignment=path.stem)
            outcomes.append(out)
            release = self.release_notebook(out.assignment)
            if release is None:
                out.status = "unknown-assignment"
                out.notes.append(f"{path}: no assignment called '{out.assignment}' in exercises/; "
                                 "rename the file to <assignment>.ipynb")
                continue
            try:
                nb = nbformat.read(path, as_version=4)
            except Exception as error:  # noqa: BLE001 - any unreadable file is reported, not fatal
                out.status = "unreadable"
                out.notes.append(f"{path} is not a readable notebook ({type(error).__name__}: "
                                 f"{str(error).splitlines()[0][:120]}); ask the student to download "
                                 "it again (File > Download .ipynb) and hand it in anew")
                continue
            if (n := _restore_metadata(nb, release)):
                out.notes.append(f"restored the grading metadata of {n} cells (dropped by the editor)")
            if _restore_order(nb, release):
                out.notes.append("put the graded cells back in the assignment's order")
            self._store(nb, out)
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
            out.notes.append(f"a different hand-in arrived but {graded.relative_to(self.course)} is "
                             "already graded; it was kept. Move that folder and the submitted one "
                             "away to regrade with the new hand-in")
            return
        if target.exists():
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            backup = target.with_name(f"{target.name}.{stamp}.previous")
            shutil.copy2(target, backup)
            out.notes.append(f"an earlier ungraded hand-in was kept as {backup.name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        out.status = "copied"

    # 2. autograde and feedback ---------------------------------------------------------
    def grade(self, outcomes: list[Outcome], regrade: bool = False) -> None:
        todo = [o for o in outcomes if o.status == "copied" or (regrade and o.status == "unchanged")
                or (o.status == "unchanged" and not (self.course / "autograded" / o.student / o.assignment).exists())]
        for k, out in enumerate(todo, 1):
            self.log(f"[{k}/{len(todo)}] {out.student}: grading {out.assignment}")
            args = ["autograde", out.assignment, f"--student={out.student}"]
            if regrade:
                args.append("--force")
            if self.timeout:
                args.append(f"--Execute.timeout={self.timeout}")
            proc = self.run(*args)
            scores = self.score(out.student, out.assignment)
            if proc.returncode != 0 or scores is None:
                out.status = "failed"
                out.notes.append("nbgrader could not grade it: " + _last_error(proc.stderr))
                continue
            out.score, out.max_score = scores
            out.status = "graded"
            self.log(f"        score {out.score:g}/{out.max_score:g}")
            feedback = self.run("generate_feedback", out.assignment, f"--student={out.student}", "--force")
            if feedback.returncode != 0:
                out.notes.append("no feedback generated: " + _last_error(feedback.stderr))

    def score(self, student: str, assignment: str) -> tuple[float, float] | None:
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gb:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                return None
            if not (self.course / "autograded" / student / assignment).exists():
                return None
            return sub.score, sub.max_score

    # 3. export ---------------------------------------------------------------------------
    def export(self, filename: str = "grades.csv") -> Path:
        """nbgrader's grade table, with the version of course_lib the grading compared against
        in a last column (the version every set-up cell prints)."""
        import csv

        from course_lib import __version__

        proc = self.run("export", f"--to={filename}")
        if proc.returncode != 0:
            raise RuntimeError("nbgrader export failed: " + _last_error(proc.stderr))
        path = self.course / filename
        with path.open(newline="") as table:
            rows = list(csv.reader(table))
        if rows:
            rows = [rows[0] + ["course_lib_version"]] + [row + [__version__] for row in rows[1:]]
            with path.open("w", newline="") as table:
                csv.writer(table).writerows(rows)
        return path


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if "ERROR" in line or "Error" in line]
    return (lines or stderr.strip().splitlines() or ["(no message)"])[-1][:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inbox", nargs="?", default="submissions",
                        help="folder laid out as <student>/<assignment>.ipynb (default: submissions)")
    parser.add_argument("--course", default=".", help="course root with nbgrader_config.py")
    parser.add_argument("--regrade", action="store_true", help="grade unchanged hand-ins again")
    parser.add_argument("--timeout", type=int, default=None, help="seconds per cell (default: config)")
    parser.add_argument("--grades", default="grades.csv", help="where to write the grade table")
    args = parser.parse_args(argv)

    inbox = Path(args.inbox)
    if not inbox.is_dir():
        print(f"No folder '{inbox}'. Unzip the hand-ins as {inbox}/<student>/<assignment>.ipynb first.")
        return 2
    from course_lib import __version__

    grader = ClassGrader(args.course, timeout=args.timeout)
    print(f"Grading against course_lib {__version__}")
    outcomes = grader.collect(inbox)
    print(f"Collected {len(outcomes)} hand-ins from {inbox}/")
    grader.grade(outcomes, regrade=args.regrade)
    csv = grader.export(args.grades)
    print(f"Grades of every graded hand-in: {csv}")
    problems = [o for o in outcomes if o.status in ("unreadable", "unknown-assignment", "failed", "kept-graded")]
    for o in outcomes:
        for note in o.notes:
            print(f"  {o.student}/{o.assignment}: {note}")
    if problems:
        print(f"{len(problems)} hand-in(s) need attention (see above); everyone else was graded.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
