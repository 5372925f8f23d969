"""Grade one hand-in: a judge process runs its tests, one sandboxed student process per part.

A part passes when its test ran to the end in the judge (:mod:`course_grader.judge`), which
never runs the student's code; anything else (a failed assert, an error, a time-out, a
student's process that crashed or was killed) gives it zero points and one feedback line
saying what happened. A cell that crashed or hung the student's process while one part was
graded is skipped in the later parts' processes, so one mistake is charged once. When the
grading machinery itself fails (the judge died, or answered nonsense), the hand-in is not
scored: it goes to a human, with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from course_grader.parts import Part, answer_names, notebook_classes, parts
from course_grader.protocol import Cell
from course_grader.sandbox import Sandbox


class PartJob(TypedDict):
    """One graded part, as the grader hands it to the judge."""

    grade_id: str
    setup: list[Cell]  # the instructor's set-up cells, which the judge runs too
    cells: list[Cell]  # what the runner runs: set-up, the student's and earlier tests' cells, in order
    cell_names: list[str]
    references: list[Cell]  # earlier parts' solutions, run in the judge if needed
    answers: list[str]  # grade ids of the answer cells this part tests
    visible: str
    hidden: str


class JudgeJob(TypedDict):
    """What the grader sends the judge on stdin for one hand-in (:func:`grade_hand_in`)."""

    parts: list[PartJob]
    limits: dict[str, int | float]
    unsafe: bool
    rules: dict[str, list[str]]  # course_grader.rules.Rules, as a dict
    slot: int
    cell_timeout: float
    files: str  # the released data files and the hand-in
    scratch: str  # a folder for the parts' working folders
    names: list[str]  # what the solution's answer cells bind: all a test takes from the student
    classes: list[str]  # the notebook's classes, whose arithmetic tests may use
    memo: str  # the grading run's folder of verdicts to reuse, or ""
    view: dict[str, Any]  # what the sandbox shows and hides (Sandbox.view)


@dataclass
class PartResult:
    grade_id: str
    max_points: float
    points: float = 0.0
    passed: bool = False
    message: str = ""  # the teaching message (or what happened to the process)
    output: str = ""  # what the visible test printed
    notes: list[str] = field(default_factory=list)


class GradingFailed(RuntimeError):
    """The grading machinery failed on this hand-in (not the student's code): a human decides."""


GRADER_ROOT = Path(__file__).resolve().parent.parent


def judge_job(
    source_nb,
    part_list: list[Part],
    sandbox: Sandbox,
    cell_timeout: float,
    files: Path,
    scratch: Path,
    memo: Path | None = None,
) -> JudgeJob:
    return {
        "names": sorted(answer_names(source_nb)),
        "classes": sorted(notebook_classes(source_nb)),
        "parts": [
            {
                "grade_id": p.grade_id,
                "setup": [c for c in p.cells if c["kind"] == "setup"],
                "cells": p.cells,
                "cell_names": [c["name"] for c in p.cells],
                "references": p.references,
                "answers": p.answers,
                "visible": p.visible,
                "hidden": p.hidden,
            }
            for p in part_list
        ],
        "limits": asdict(sandbox.limits),
        "unsafe": sandbox.unsafe,
        "rules": asdict(sandbox.rules),
        "slot": sandbox.slot,
        "cell_timeout": cell_timeout,
        "files": str(files),
        "scratch": str(scratch),
        "memo": str(memo) if memo else "",
        "view": sandbox.view(),
    }


def grade_hand_in(
    source_nb,
    hand_in,
    release_dir: Path,
    sandbox: Sandbox,
    cell_timeout: float,
    notebook_name: str,
    only: set[str] | None = None,
    memo: Path | None = None,
) -> list[PartResult]:
    """Every part of ``source_nb`` (or the ``only`` grade ids) graded on the answers of ``hand_in``;
    ``memo``, a folder of one grading run, lends the verdicts of parts already judged there
    (:mod:`course_grader.verdict_memo`)."""
    import nbformat

    part_list = [p for p in parts(source_nb, hand_in) if only is None or p.grade_id in only]
    with tempfile.TemporaryDirectory(prefix="grading-") as work:
        files = Path(work) / "files"
        files.mkdir()
        for item in Path(release_dir).iterdir():  # the released data files, and the hand-in itself
            if item.is_file() and item.suffix != ".ipynb":
                (files / item.name).write_bytes(item.read_bytes())
        nbformat.write(hand_in, files / notebook_name)
        scratch = Path(work) / "parts"
        scratch.mkdir()
        os.chmod(work, 0o755)
        job = judge_job(source_nb, part_list, sandbox, cell_timeout, files, scratch, memo)
        # The judge's whole budget: every part's cells and test, with room to start processes.
        budget = sum(cell_timeout * (len(p.cells) + 6) + 30 for p in part_list) + 60
        with tempfile.TemporaryFile() as errors:
            try:
                proc = subprocess.run(
                    [sys.executable, "-s", "-m", "course_grader.judge"],
                    input=json.dumps(job).encode(),
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    cwd=work,
                    env={
                        "PYTHONPATH": str(GRADER_ROOT),
                        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                        "LANG": "C.UTF-8",
                        **{k: v for k, v in os.environ.items() if k == "COURSE_GRADER_PROFILE"},
                    },
                    timeout=budget,
                )
            except subprocess.TimeoutExpired:
                raise GradingFailed(f"the judge did not finish within {budget:g} s") from None
            errors.seek(0)
            trace = errors.read().decode("utf-8", "replace")
            if os.environ.get("COURSE_GRADER_DEBUG"):
                sys.stderr.write(trace)
        try:
            verdicts = json.loads(proc.stdout)
        except ValueError:
            last = trace.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
            raise GradingFailed(f"the judge failed ({last[0][:300]})") from None
    if failed := [v["machinery"] for v in verdicts if v.get("machinery")]:
        raise GradingFailed(failed[0])
    return [_result(part, verdict) for part, verdict in zip(part_list, verdicts, strict=True)]


def _result(part: Part, verdict: dict) -> PartResult:
    result = PartResult(part.grade_id, part.points, notes=list(verdict["notes"]))
    result.passed = verdict["passed"] is True
    result.points = result.max_points if result.passed else 0.0
    result.output = verdict["output"]
    if not result.passed:
        result.message = verdict["process_end"] or _failure(verdict)
    return result


def _failure(verdict: dict) -> str:
    error, message = verdict.get("error") or "Error", str(verdict.get("message", "")).strip()
    if error == "AssertionError" and verdict.get("in_test_code"):
        return message or "a check of the test failed"
    return f"{error}: {message}" if message else error
