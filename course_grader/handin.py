"""Grade one hand-in: each part in its own sandboxed process, points only from its verdict.

A part passes when its test ran to the end in the harness; anything else (a failed assert, an
error, a time-out, a crash, a killed process, no verdict at all) gives it zero points and one
feedback line saying what happened. A cell that crashed or hung the process while one part
was graded is skipped in the later parts' processes, so one mistake is charged once.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from course_grader.parts import Part, parts
from course_grader.sandbox import Sandbox


@dataclass
class PartResult:
    grade_id: str
    max_points: float
    points: float = 0.0
    passed: bool = False
    message: str = ""  # the teaching message (or what happened to the process)
    output: str = ""  # what the visible test printed
    notes: list[str] = field(default_factory=list)


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _process_end(run, sandbox: Sandbox, where: str) -> str:
    """A sentence on why the process ended without a verdict."""
    limits = sandbox.limits
    if run.timed_out:
        return f"{where} ran longer than {limits.wall_seconds:g} s and was stopped"
    # bubblewrap reports a child killed by signal n as exit status 128 + n
    signalled = (
        -run.returncode
        if run.returncode < 0
        else run.returncode - 128
        if sandbox.isolated and run.returncode > 128
        else 0
    )
    if signalled:
        name = _signal_name(-signalled)
        reason = {
            "SIGSEGV": "crashed (segmentation fault)",
            "SIGXCPU": f"used more than {limits.cpu_seconds} s of CPU time",
            "SIGXFSZ": f"wrote a file larger than {limits.file_bytes // 1024**2} MB",
            "SIGKILL": "was killed (memory or time limit)",
            "SIGABRT": "aborted (out of memory?)",
        }.get(name, f"was ended by {name}")
        return f"{where} {reason}"
    return f"{where} ended the Python process itself (exit status {run.returncode}, e.g. os._exit or a crash)"


def _events(run, nonce: str) -> list[dict]:
    """The harness's events, in order; lines without the job's nonce are not the harness's."""
    events = []
    for line in run.result.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str) and event.get("nonce") == nonce:
            events.append(event)
    return events


def grade_hand_in(
    source_nb, hand_in, release_dir: Path, sandbox: Sandbox, cell_timeout: float, notebook_name: str
) -> list[PartResult]:
    """Every part of ``source_nb`` graded on the answers of ``hand_in``."""
    import nbformat

    results = []
    skipped: dict[str, str] = {}  # cell name -> why it is no longer run
    for part in parts(source_nb, hand_in):
        result = PartResult(part.grade_id, part.points)
        results.append(result)
        cells = [c for c in part.cells if c["name"] not in skipped]
        result.notes += [f"not run: {skipped[c['name']]}" for c in part.cells if c["name"] in skipped]
        nonce = secrets.token_hex(16)
        job = {
            "nonce": nonce,
            "cells": cells,
            "cell_timeout": cell_timeout,
            "references": part.references,
            "test": {"visible": part.visible, "hidden": part.hidden, "forbid": part.forbid},
        }
        with tempfile.TemporaryDirectory(prefix="grading-") as scratch_dir:
            scratch = Path(scratch_dir)
            for item in release_dir.iterdir():  # the released data files, and the hand-in itself
                if item.is_file() and item.suffix != ".ipynb":
                    shutil.copy(item, scratch / item.name)
            nbformat.write(hand_in, scratch / notebook_name)
            run = sandbox.run(job, scratch)
        _interpret(part, result, _events(run, nonce), run, sandbox, skipped)
    return results


def _interpret(
    part: Part, result: PartResult, events: list[dict], run, sandbox: Sandbox, skipped: dict[str, str]
) -> None:
    running = None
    for event in events:
        kind = event["event"]
        if kind == "cell-start":
            running = event.get("cell")
        elif kind == "cell-end":
            running = None
            status, cell = event.get("status"), str(event.get("cell"))
            if status == "timeout":
                skipped[cell] = f"the cell '{cell}' timed out while {part.grade_id} was graded"
                result.notes.append(f"your cell '{cell}' ran longer than the time limit and was stopped")
            elif status == "syntax":
                result.notes.append(f"your cell '{cell}' is not valid Python here: {event.get('message', '')}")
            elif status == "error":
                result.notes.append(f"your cell '{cell}' raised {event.get('error')}: {event.get('message', '')}")
        elif kind == "restored":
            result.notes.append(
                "your code changed " + ", ".join(event.get("names", [])[:5]) + "; these were put back before testing"
            )
        elif kind == "setup-failed":
            result.message = (
                f"the assignment's own set-up cell '{event.get('cell')}' failed "
                f"({event.get('error')}): not your fault, tell the instructor"
            )
            return
        elif kind == "test-start":
            running = "test"
        elif kind == "verdict":
            result.passed = event.get("passed") is True
            result.points = result.max_points if result.passed else 0.0
            result.output = str(event.get("output", ""))
            if not result.passed:
                result.message = _failure(event)
            return
    if running == "test":
        result.message = _process_end(run, sandbox, "the test of your code")
    elif running is not None:
        skipped[running] = f"the cell '{running}' ended the process while {part.grade_id} was graded"
        result.message = _process_end(run, sandbox, f"your cell '{running}'")
    else:
        result.message = _process_end(run, sandbox, "the grading process") + " before the test ran"


def _failure(verdict: dict) -> str:
    error, message = verdict.get("error", "Error"), str(verdict.get("message", "")).strip()
    if error == "AssertionError" and verdict.get("in_test_code"):
        return message or "a check of the test failed"
    return f"{error}: {message}" if message else error
