"""Verdicts reused within one grading run.

A part whose sandboxed process would run exactly what a part of an earlier hand-in ran (the
same cells and references after the earlier parts' time-outs and failures are applied, the
same test, limits, rules and data files) gets that verdict without the student's process
being started again. Identical code is judged once: the parts a class leaves untouched, or the
parts before a hand-in's first difference from a classmate's.

Only the verdicts of processes that ended on their own are kept: a time-out (of a cell, or of
the test itself, which the judge times by the clock), a crash or a failure of the machinery may
come from the machine's load, so it is judged afresh every time.
The key leaves out the hand-in's own notebook file (copied beside the data files): code that
reads its own notebook to decide an answer may get the verdict the same code earned beside a
classmate's notebook. The folder belongs to one grading run and to the grader alone; the
sandbox never sees it.

Hidden tests draw fresh inputs in every run of the judge, and the key does not hold them, so
a reused verdict is the one identical code earned on an earlier draw in the same grading run.
That is sound: a correct answer passes on every draw (the tests' tolerances are chosen so), a
draw is no better than another for an answer that fails on some, and identical code in one
run gets one verdict. The next grading run starts from an empty folder, and draws anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from course_grader.handin import JudgeJob, PartJob


class VerdictMemo:
    """The verdicts of one grading run, in ``folder``, keyed by everything a part's run sees."""

    def __init__(self, folder: str | Path, job: JudgeJob):
        self.folder = Path(folder)
        files = Path(job["files"])
        data = sorted(p for p in files.iterdir() if p.is_file() and p.suffix != ".ipynb")
        self.context = json.dumps(
            {
                "names": job["names"],
                "classes": job["classes"],
                "limits": job["limits"],
                "unsafe": job["unsafe"],
                "rules": job["rules"],
                "cell_timeout": job["cell_timeout"],
                "files": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in data},
            },
            sort_keys=True,
        )

    def key(self, part: PartJob) -> str:
        what = [part["grade_id"], part["cells"], part["references"], part["visible"], part["hidden"]]
        text = self.context + json.dumps(what, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.folder / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        if not ended_by_itself(verdict):
            return
        handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".part")
        with os.fdopen(handle, "w") as out:
            json.dump(verdict, out)
        os.replace(temporary, self.folder / f"{key}.json")  # whole or absent, for a judge reading beside


def ended_by_itself(verdict: dict[str, Any]) -> bool:
    """Whether a part's process ended on its own and its test in time (a time-out, a crash or a
    failure of the machinery may come from the machine's load)."""
    stopped = verdict["crashed_cell"] or verdict["timed_out_cells"] or verdict["process_end"] or verdict["machinery"]
    return not stopped and verdict["error"] != "Timeout"  # a test's own time-out: the load's?
