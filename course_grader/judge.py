"""The judge: runs a hand-in's tests in a process that never runs the student's code.

For each graded part the judge has a fresh runner forked in the hand-in's sandbox
(:mod:`course_grader.part_runs`, :mod:`course_grader.runner`), which runs the notebook's
set-up cells and the student's cells.
The judge runs the same set-up cells itself, then the part's test (visible and hidden lines,
from the instructor's notebook) with every name the student's cells defined standing for the
object in the student's process (:class:`Remote`). Calling a student's function, reading an
attribute of the student's object, doing arithmetic with it: each is a request to the runner,
and what comes back is plain data (numbers, strings, arrays of numbers, containers of them,
rebuilt here) or another handle. Comparisons, asserts and the verdict happen here, on that
plain data: nothing the student's process does can change how it is judged, only what it
computes. Functions the test hands to the student's code (the function to differentiate)
stay here and are called back; the student's code may call them and read their results, and
read public attributes of the objects the test passed (a graph to sort), but never change
them.

What a test measures of the student's code the judge measures itself
(:mod:`course_grader.test_tools`): the memory of a call from outside the sandbox
(``peak_memory``), the calls its code makes by serving them (``calls_to``), never a counter
the student's process keeps. What a test hands the student's code to work with it may swap
(``rebound``: a loss of its choosing).

A part that an earlier part's mistake would spoil (``# grader: reference <grade ids>`` in
its hidden test) runs those parts' reference solutions here, in the judge, on the student's
objects: the student's process is asked to use them but never receives their code. A class a
reference makes in place of the student's gets the student's own methods it lacks
(:mod:`course_grader.their_methods`), as their class had them in Jupyter. A part that fails with
the references by an error of the student's code is judged again with the student's own answers,
as Jupyter runs it.

Run as ``python -m course_grader.judge`` by :func:`course_grader.handin.grade_hand_in`: the
job arrives on stdin, the results leave on stdout (JSON).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import io
import json
import os
import resource
import signal
import sys
import time
import traceback
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from course_grader import stand_ins
from course_grader.endpoint import Endpoint
from course_grader.handin import JudgeJob, PartJob
from course_grader.limits import Limits
from course_grader.measured_copy import CopyMeter
from course_grader.meter import MemoryMeter, MeterError
from course_grader.part_runs import SandboxBroken, WarmSandbox, imported_modules
from course_grader.protocol import (
    CELL_END,
    CELL_START,
    READY,
    SETUP_FAILED,
    Cell,
    ChannelClosed,
    ProtocolError,
    clip,
)
from course_grader.rules import Rules
from course_grader.sandbox import Sandbox
from course_grader.stand_ins import ARITHMETIC, JudgeCodec, ReadOnly, Remote, grant, serve
from course_grader.test_tools import (
    calls_to,
    measure_part,
    notebook_recursion_limit,
    peak_memory,
    rebound,
    run_trusted,
    student_side,
)
from course_grader.their_methods import lend_their_methods
from course_grader.verdict_memo import VerdictMemo, ended_by_itself

HIDDEN_MESSAGE = "raised during the hidden tests (a message is shown only when the test itself wrote it)"
REFERENCE_MESSAGE = (
    "raised while the course's answer to an earlier part ran with your code (a message is shown only when "
    "the test itself wrote it)"
)
DEBUG = bool(os.environ.get("COURSE_GRADER_PROFILE"))  # tracebacks and timings on stderr
ANSWER_NAMES: set[str] = set()  # what the solution's answer cells bind
TEST_CLASSES: set[str] = set()  # set-up classes the tests keep as their own (rules' tests_own_classes)
RULED_OUT: set[str] = set()  # the course_lib functions the student's process lacks (rules' write_yourself)


class CellTimeout(BaseException):
    """The test (with the student's code it calls) ran past its time."""


@dataclass
class Verdict:
    """What the judge says about one part."""

    passed: bool = False
    phase: str = ""  # where it ended: set-up, cells, references, visible, hidden
    error: str = ""
    message: str = ""
    output: str = ""  # what the visible test printed
    in_test_code: bool = False
    notes: list[str] = field(default_factory=list)
    crashed_cell: str = ""  # a student's cell during which the process ended
    timed_out_cells: list[str] = field(default_factory=list)
    process_end: str = ""  # why the student's process ended, when it did
    machinery: str = ""  # the grading machinery failed (the student's code never ran): for a human


def _on_alarm(signum: int, frame: Any) -> None:
    raise CellTimeout()


@contextlib.contextmanager
def time_limit(seconds: float):
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def raised_in_test(error: BaseException) -> bool:
    """True when the exception came from the test's own code (an assert), not from the student's."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.endswith(" test>") and not isinstance(error, ReadOnly)


def judge_part(part: PartJob, warm: WarmSandbox, scratch: Path, cell_timeout: float) -> Verdict:
    """Fork the student's process for one part, wait for its cells, run the test here."""
    verdict = Verdict()
    sandbox = warm.sandbox
    try:
        run = warm.start()
    except SandboxBroken as error:  # nothing of the student's ran: the sandbox itself fails
        verdict.machinery = f"the sandbox ended before the student's code ran ({error})"
        return verdict
    making = sandbox.groups
    copies = CopyMeter(run.pid, run.groups, making, sandbox.limits) if making and making.can_freeze else None
    measure_part(MemoryMeter(run.pid, run.groups), copies, [cell["source"] for cell in part["setup"]])
    stand_ins.connect(Endpoint(run.reply_read, run.request_write, JudgeCodec(), serve))
    cells: list[Cell] = part["cells"]
    running = None
    student_ran = False
    try:
        stand_ins.CHANNEL.send(
            {
                "cells": cells,
                "cell_timeout": cell_timeout,
                "rlimits": sandbox.limits.rlimits(),
                "course_lib_parent": sandbox.inside_course_lib_parent,
                "answers": sorted(ANSWER_NAMES),
                "classes": sorted(ARITHMETIC),
                "debug": DEBUG,
            }
        )
        names: dict | None = None
        with time_limit(cell_timeout * (len(cells) + 1) + 5):
            while names is None:
                event = stand_ins.CHANNEL.receive()
                kind = event.get("event")
                if kind == CELL_START:
                    running, student_ran = str(event.get("cell")), True
                elif kind == CELL_END:
                    running = None
                    _cell_note(event, verdict, tests={c["name"] for c in cells if c["kind"] == "test"})
                elif kind == SETUP_FAILED and student_ran:
                    # The runner reports only set-up cells that fail before any of the student's: this
                    # one is the student's code posing as a broken set-up (the hand-in would go to a
                    # human unscored, the assignment blamed).
                    who = f"your cell '{running}'" if running else "your code"
                    verdict.process_end = f"{who} sent the grader a message only its own set-up sends: the part fails"
                    return verdict
                elif kind == SETUP_FAILED:  # before the student's code: the grading set-up is broken
                    verdict.machinery = (
                        f"the assignment's own set-up cell '{clip(str(event.get('cell')), 80)}' failed in the "
                        f"sandbox ({clip(str(event.get('error')), 80)}: {clip(str(event.get('message')), 200)})"
                    )
                    return verdict
                elif kind == READY:
                    bound = event.get("names")
                    if type(bound) is not dict:
                        raise ProtocolError("the names of the student's cells are not a dict")
                    # Decoded within the time limit: a forged event's set of a million ints
                    # that share one hash would keep the judge busy for hours.
                    names = {str(name): stand_ins.CHANNEL.codec.decode(data) for name, data in bound.items()}
                else:
                    raise ProtocolError(f"an unknown event {kind!r}")
        with notebook_recursion_limit():
            return _test(part, names, verdict, scratch, cell_timeout)
    except (ChannelClosed, ProtocolError, CellTimeout) as error:
        verdict.passed = False
        end = run.finish(grace=0.0 if isinstance(error, CellTimeout) else 2.0)
        sys.stderr.write(end.stderr.decode("utf-8", "replace"))  # the runner's diagnostics, for the grader's log
        if running is not None:
            verdict.crashed_cell = running
            verdict.process_end = end.describe(f"your cell '{running}'", sandbox)
        elif not student_ran and not isinstance(error, CellTimeout):
            # Nothing of the student's ran: the sandbox or the notebook's own set-up broke.
            first = end.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
            verdict.machinery = f"the sandbox ended before the student's code ran ({first[0] if first else error})"
        elif isinstance(error, ProtocolError):
            verdict.process_end = f"your code answered the grader with something it cannot read ({error})"
        else:
            verdict.process_end = end.describe("the grading of your code", sandbox)
        return verdict
    finally:
        end = run.finish()
        if DEBUG:
            sys.stderr.write(end.stderr.decode("utf-8", "replace"))


def _cell_note(event: dict, verdict: Verdict, tests: set[str]) -> None:
    status, cell = event.get("status"), str(event.get("cell"))
    if status == "timeout":
        verdict.timed_out_cells.append(cell)
        verdict.notes.append(f"your cell '{cell}' ran longer than the time limit and was stopped")
    elif cell in tests:  # an earlier test's lines, run for the names your cells use: its own part says more
        return
    elif status == "syntax":
        verdict.notes.append(f"your cell '{cell}' is not valid Python here: {clip(str(event.get('message', '')), 300)}")
    elif status == "error":
        verdict.notes.append(
            f"your cell '{cell}' raised {clip(str(event.get('error')), 80)}: {clip(str(event.get('message', '')), 300)}"
        )


def _test(part: PartJob, theirs: dict[str, Any], verdict: Verdict, scratch: Path, cell_timeout: float) -> Verdict:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    quiet = io.StringIO()
    os.chdir(scratch)
    answers = {k: v for k, v in theirs.items() if k in ANSWER_NAMES and not hasattr(builtins, k)}
    namespace.update(answers)  # set-up cells that run after an answer may use it
    for cell in part["setup"]:
        run_trusted(cell["source"], f"<set-up {cell['name']}>", namespace, quiet)
    codec = stand_ins.CHANNEL.codec
    assert isinstance(codec, JudgeCodec)
    codec.setup_functions = {
        id(value): (name, value)
        for name, value in namespace.items()
        if isinstance(value, types.FunctionType) and value.__code__.co_filename.startswith("<set-up ")
    }
    for name, value in theirs.items():
        # A test takes from the student only what the solution's answers define (so a student's
        # `abs` or `isinstance` is never the test's) and the set-up cells' classes the answers
        # extend; the test's own helpers (the set-up cells' functions and data) stay its own, and
        # so do the classes the rules say the tests build their own objects of (ps04's Node: a
        # Node whose .parents answered the judge otherwise made every graph a single node).
        if name in answers or (_notebook_class(namespace.get(name)) and name not in TEST_CLASSES):
            namespace[name] = value
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__.split(".")[0] == "course_lib":
            # A function the rules take from the student's process runs here even on their
            # objects: ps01's test hands best_step numerical_grad, which an honest best_step
            # called with a function of its own (f with a cache) and failed on the rule.
            if f"{value.__module__}.{value.__qualname__}" not in RULED_OUT:
                namespace[name] = _where_the_objects_are(name, value)
    namespace.update(
        student_side=student_side,
        peak_memory=peak_memory,
        calls_to=calls_to,
        rebound=functools.partial(rebound, namespace),
    )
    try:
        with time_limit(cell_timeout):
            verdict.phase = "references"
            theirs_before = dict(namespace)
            for cell in part["references"]:
                before = dict(namespace)
                run_trusted(cell["source"], f"<reference {cell['name']}>", namespace, quiet)
                for name, value in namespace.items():
                    if before.get(name, _MISSING) is not value and not name.startswith("__"):
                        if isinstance(value, type):  # the student's code makes its objects as a class's
                            codec.reference_classes.add(id(value))
                        stand_ins.CHANNEL.request("setglobal", name=name, value=grant(value))
            lend_their_methods(namespace, theirs_before)  # their later cells' methods, as in Jupyter
        visible = io.StringIO()
        for phase in ("visible", "hidden"):
            source = part[phase]
            if not source.strip():
                continue
            verdict.phase = phase
            stand_ins.HIDDEN[0] = phase == "hidden" or bool(part["references"])
            with time_limit(cell_timeout):
                run_trusted(source, f"<{phase} test>", namespace, visible if phase == "visible" else quiet)
    except CellTimeout:
        verdict.error, verdict.message = (
            "Timeout",
            f"the test ran longer than {cell_timeout:g} s: is there an endless loop?",
        )
        verdict.output = clip(visible.getvalue()) if "visible" in locals() else ""
        return verdict
    except (ChannelClosed, ProtocolError):
        raise
    except MeterError as error:
        if Path("/proc/self/clear_refs").exists():  # the process ended, or hid its memory: its part fails
            verdict.error, verdict.message = "MeterError", str(error)
        else:  # this system cannot measure a process (no /proc): for a human
            verdict.machinery = f"the grader could not measure the student's process ({error})"
        return verdict
    except BaseException as error:  # noqa: BLE001 - any failure of a test is its verdict
        if DEBUG:
            traceback.print_exc()
        verdict.error = type(error).__name__
        verdict.in_test_code = raised_in_test(error)
        verdict.message = clip(str(error))
        if verdict.phase == "hidden" or verdict.phase == "visible" and part["references"]:
            # Feedback speaks with the tests' voice only (a text the student's code made could
            # pose as the grader's): the exception's type leaves, or the test's own message
            # without the strings the student's process sent. The hidden inputs themselves are
            # not secret: fresh in every grading run, a test's message may name them. Where a
            # reference ran, the student's code saw what it did (the operations a reference
            # final_step performs on the student's Values, the program a reference
            # step_program hands to the student's eliminate_dead_code): the solution itself,
            # which no text of the student's may carry out, in the visible tests too.
            own = verdict.in_test_code and isinstance(error, AssertionError)
            withheld = HIDDEN_MESSAGE if verdict.phase == "hidden" else REFERENCE_MESSAGE
            verdict.message = clip((own and codec.without_their_text(str(error))) or withheld)
        verdict.output = clip(visible.getvalue()) if "visible" in locals() else ""
        if verdict.phase == "references":
            verdict.message = (
                f"an earlier part's reference could not run on your code ({verdict.error}: {verdict.message})"
            )
        return verdict
    finally:
        stand_ins.HIDDEN[0] = False
    verdict.passed, verdict.phase, verdict.output = True, "", clip(visible.getvalue())
    return verdict


def _where_the_objects_are(name: str, function: Any) -> Any:
    """``function`` (course_lib's, imported by a set-up cell) run where its arguments live: on
    the student's objects, the student's process runs its own copy (one request, not one per
    operation inside it, as a reference train step calling ``cross_entropy`` on the student's
    model would make); on the test's own values, the judge runs it."""

    there: list[Any] = []  # the student's process's copy, asked for once per part

    def call(*args: Any, **kwargs: Any) -> Any:
        if any(type(a) is Remote for a in (*args, *kwargs.values())):
            if not there:
                there.append(stand_ins.CHANNEL.request("setup", name=name))
            return there[0](*args, **kwargs)
        return function(*args, **kwargs)

    call.__name__, call.__doc__, call.__wrapped__ = function.__name__, function.__doc__, function  # type: ignore[attr-defined]
    return call


def _notebook_class(value: Any) -> bool:
    return isinstance(value, type) and value.__module__ == "__main__"


_MISSING = object()


def _judged(part: PartJob, job: JudgeJob, warm: WarmSandbox, memo: VerdictMemo | None, run: str = "") -> Verdict:
    """The verdict on ``part``, judged in a scratch folder of its own (or known to ``memo``)."""
    scratch = Path(job["scratch"]) / (part["grade_id"] + run)
    scratch.mkdir()
    for name in os.listdir(job["files"]):
        source = Path(job["files"]) / name
        if source.is_file():
            (scratch / name).write_bytes(source.read_bytes())
    started = time.perf_counter()
    key = memo.key(part) if memo else ""
    if memo and (known := memo.get(key)):
        return Verdict(**known)
    verdict = judge_part(part, warm, scratch, float(job["cell_timeout"]))
    if memo:
        memo.put(key, asdict(verdict))
    if DEBUG:
        sys.stderr.write(
            f"{part['grade_id']}{run}: {time.perf_counter() - started:.2f} s, "
            f"{stand_ins.CHANNEL.counter} requests, {stand_ins.CHANNEL.served} served\n"
        )
    return verdict


def main() -> None:
    job: JudgeJob = json.loads(sys.stdin.buffer.read())
    ANSWER_NAMES.update(job["names"])
    ARITHMETIC.update(job["classes"])
    limits = Limits(**job["limits"])  # type: ignore[arg-type]
    resource.setrlimit(resource.RLIMIT_DATA, (limits.judge_memory_bytes, limits.judge_memory_bytes))
    rules = Rules(**{k: tuple(v) for k, v in job["rules"].items()})
    TEST_CLASSES.update(rules.test_classes)
    RULED_OUT.update(rules.functions)
    sandbox = Sandbox(limits, unsafe=job["unsafe"], rules=rules, slot=job.get("slot", 0), view=job.get("view"))
    results = []
    skipped: dict[str, str] = {}
    failed_answers: set[str] = set()  # answer cells some part that tests them failed on
    memo = VerdictMemo(job["memo"], job) if job.get("memo") else None
    setup = [c["source"] for part in job["parts"] for c in part["setup"]]
    warm = WarmSandbox(sandbox, Path(job["scratch"]), Path(job["files"]), imported_modules(setup))
    for part in job["parts"]:
        # A reference replaces the student's answer only where that answer failed its own test:
        # the student's code, which passed, is graded as it is (and runs at full speed).
        # From the first such answer on, every listed reference runs: a later one may build on it
        # (the methods a later part adds to the class an earlier part defines).
        needed = [k for k, r in enumerate(part["references"]) if r["name"] in failed_answers]
        part["references"] = part["references"][needed[0] :] if needed else []
        part["cells"] = [c for c in part["cells"] if c["name"] not in skipped]
        notes = [f"not run: {skipped[c]}" for c in part["cell_names"] if c in skipped]
        verdict = _judged(part, job, warm, memo)
        if part["references"] and not verdict.passed and not verdict.in_test_code and ended_by_itself(asdict(verdict)):
            # The student's later code raised on the references: it may be written for its own
            # earlier answer (one that returns more than its part asks, and failed that part). The
            # part is also graded with the student's own answers, as in Jupyter. Where the test's
            # own check failed (ps13: an engine of theirs that trains nothing), the verdict stays.
            own = _judged({**part, "references": []}, job, warm, memo, " own")
            verdict = own if own.passed else verdict
        verdict.notes = notes + verdict.notes
        for cell in verdict.timed_out_cells:
            skipped[cell] = f"the cell '{cell}' timed out while {part['grade_id']} was graded"
        if verdict.crashed_cell:
            skipped[verdict.crashed_cell] = (
                f"the cell '{verdict.crashed_cell}' ended the process while {part['grade_id']} was graded"
            )
        if not verdict.passed:
            failed_answers.update(part["answers"])
        results.append(asdict(verdict))
    warm.close()
    if DEBUG:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        sys.stderr.write(f"judge: peak resident memory {peak:.0f} MB, {warm.starts} sandbox(es) started\n")
    sys.stdout.write(json.dumps(results))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
