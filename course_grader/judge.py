"""The judge: runs a hand-in's tests in a process that never runs the student's code.

For each graded part the judge starts the runner in a fresh sandbox
(:mod:`course_grader.runner`), which runs the notebook's set-up cells and the student's cells.
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

A part that an earlier part's mistake would spoil (``# grader: reference <grade ids>`` in
its hidden test) runs those parts' reference solutions here, in the judge, on the student's
objects: the student's process is asked to use them but never receives their code.

Run as ``python -m course_grader.judge`` by :func:`course_grader.handin.grade_hand_in`: the
job arrives on stdin, the results leave on stdout (JSON).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import operator
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

from course_grader.protocol import (
    BINARY,
    CELL_END,
    CELL_START,
    COMPARISONS,
    CONVERSIONS,
    READY,
    SETUP_FAILED,
    UNARY,
    Cell,
    ChannelClosed,
    Codec,
    Endpoint,
    JudgeJob,
    PartJob,
    ProtocolError,
    clip,
    convert,
)
from course_grader.rules import Rules
from course_grader.sandbox import Limits, Sandbox

MAX_TEXT = 4000
HIDDEN_MESSAGE = "raised during the hidden tests (their messages are not shown: they may hold the hidden inputs)"
DEBUG = bool(os.environ.get("COURSE_GRADER_PROFILE"))  # tracebacks and timings on stderr


class CellTimeout(BaseException):
    """The test (with the student's code it calls) ran past its time."""


class Remote:
    """An object of the student's process, as the test sees it.

    Every operation is a request to the runner; results arrive as plain data or as another
    ``Remote``. Identity is this process's: two handles of one object are the same ``Remote``,
    so ``is``, ``==`` between handles, hashing and dict keys behave as for the objects
    themselves. Comparisons with plain values go through the number the student's object
    turns into (``float``), so a rigged ``__eq__`` has nothing to say."""

    __slots__ = ("__n", "__kind", "__weakref__")

    def __init__(self, number: int, kind: str = ""):
        object.__setattr__(self, "_Remote__n", number)
        object.__setattr__(self, "_Remote__kind", kind)  # its class, as the runner says

    def __ask(self, op: str, **fields: Any) -> Any:
        fields.setdefault("target", {"$h": object.__getattribute__(self, "_Remote__n")})
        return CHANNEL.request(op, **fields)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        key = (object.__getattribute__(self, "_Remote__kind"), name)
        if key not in METHODS:
            is_method, value = self.__ask("attribute", name=name)
            if not is_method:
                return value
            METHODS.add(key)  # calls go by name from now on: one request each, not two
        return RemoteMethod(self, name)

    @property  # type: ignore[misc]  # isinstance() consults __class__: see below
    def __class__(self) -> type:
        """The judge's course_lib class of that name, for an object of a course_lib class, so
        that ``isinstance(y, Tensor)`` in a test means what it says (``type()`` still says
        Remote). Any other object is a Remote."""
        name = object.__getattribute__(self, "_Remote__kind")
        module, _, qualname = name.rpartition(".")
        if module.split(".")[0] == "course_lib" and module in sys.modules:
            found = getattr(sys.modules[module], qualname, None)
            if isinstance(found, type):
                return found
        return Remote

    def __setattr__(self, name: str, value: Any) -> None:
        self.__ask("setattr", name=name, value=grant(value))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arrays, (args_data, kwargs_data) = granted_arguments(args, kwargs)
        return self.__ask("call", args=args_data, kwargs=kwargs_data, write_back=arrays)

    def __getitem__(self, key: Any) -> Any:
        return self.__ask("getitem", key=send(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__ask("setitem", key=send(key), value=grant(value))

    def __len__(self) -> int:
        return operator.index(self.__ask("len"))

    def __iter__(self):
        return iter(self.__ask("iter"))

    def __contains__(self, item: Any) -> bool:
        return self.__ask("contains", item=send(item)) is True

    def __instancecheck__(self, obj: Any) -> bool:
        return self.__ask("isinstance", item=send(obj)) is True

    def __convert(self, to: str) -> Any:
        value = self.__ask("convert", to=to)
        expected = {"float": float, "int": int, "bool": bool, "complex": complex, "index": int, "str": str, "repr": str}
        if to in expected and type(value) is not expected[to]:
            raise TypeError(f"the student's object gave a {type(value).__name__} for {to}()")
        return value

    def __float__(self) -> float:
        return self.__convert("float")

    def __int__(self) -> int:
        return self.__convert("int")

    def __index__(self) -> int:
        return self.__convert("index")

    def __complex__(self) -> complex:
        return self.__convert("complex")

    def __bool__(self) -> bool:
        return self.__convert("bool")

    def __repr__(self) -> str:
        return self.__convert("repr")

    def __str__(self) -> str:
        return self.__convert("str")

    def __format__(self, spec: str) -> str:
        return format(self.__float__(), spec) if spec else self.__str__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        value = self.__convert("array")
        if type(value) is not np.ndarray:
            raise TypeError("the student's object did not give an array of numbers")
        return value.astype(dtype) if dtype is not None else value

    def __eq__(self, other: Any) -> Any:
        return self is other if isinstance(other, Remote) else NotImplemented

    def __ne__(self, other: Any) -> Any:
        return self is not other if isinstance(other, Remote) else NotImplemented

    __hash__ = object.__hash__

    def __lt__(self, other: Any) -> Any:
        return self.__float__() < other

    def __le__(self, other: Any) -> Any:
        return self.__float__() <= other

    def __gt__(self, other: Any) -> Any:
        return self.__float__() > other

    def __ge__(self, other: Any) -> Any:
        return self.__float__() >= other


METHODS: set[tuple[str, str]] = set()  # (class, name): the attributes that are methods
ANSWER_NAMES: set[str] = set()  # what the solution's answer cells bind
ARITHMETIC: set[str] = set()  # the notebook's classes: their operators run in the student's process
SERVING = [0]  # > 0 while the judge runs a function the student's code called


class RemoteMethod:
    """A method of one of the student's objects: calling it is one request (by name, so the
    object's current method is the one called)."""

    __slots__ = ("owner", "name")

    def __init__(self, owner: Remote, name: str):
        self.owner, self.name = owner, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = {"$h": object.__getattribute__(self.owner, "_Remote__n")}
        arrays, (args_data, kwargs_data) = granted_arguments(args, kwargs)
        return CHANNEL.request(
            "callmethod", target=target, name=self.name, args=args_data, kwargs=kwargs_data, write_back=arrays
        )

    def __repr__(self) -> str:
        return f"<method {self.name} of {self.owner!r}>"


def _operates_there(remote: Remote) -> bool:
    """Whether an operator on ``remote`` runs in the student's process: for objects of the
    notebook's own classes (a dual number, a Value), and for anything while the student's
    code is being served (a function to differentiate builds on its arguments). Otherwise
    the object is first turned into plain numbers, so a test's ``abs(result - expected)``
    never asks the student's object for the answer."""
    return SERVING[0] > 0 or object.__getattribute__(remote, "_Remote__kind") in ARITHMETIC


def _numbers(remote: Remote) -> Any:
    value = remote._Remote__convert("array")
    return value[()] if value.ndim == 0 else value


def _binary(name: str, reflected: bool):
    def method(self: Remote, other: Any) -> Any:
        if _operates_there(self):
            return self._Remote__ask("binop", name=name, other=send(other), reflected=reflected)
        function, mine = getattr(operator, name), _numbers(self)
        return function(other, mine) if reflected else function(mine, other)

    return method


def _unary(name: str):
    def method(self: Remote) -> Any:
        if _operates_there(self):
            return self._Remote__ask("unary", name=name)
        return getattr(operator, name)(_numbers(self))

    return method


for _name in BINARY:
    _dunder = _name.rstrip("_")
    setattr(Remote, f"__{_dunder}__", _binary(_name, False))
    setattr(Remote, f"__r{_dunder}__", _binary(_name, True))
for _name in UNARY:
    setattr(Remote, f"__{_name}__", _unary(_name))


class JudgeCodec(Codec):
    """The judge's side: objects it hands over by handle are read-only for the student's code;
    only what it grants (a function passed as an argument) may be called."""

    def __init__(self) -> None:
        super().__init__("$r", "$h", Remote)
        self.callable: set[int] = set()
        self.granting = False
        self.setup_functions: dict[int, tuple[str, Any]] = {}  # id -> the set-up cells' functions

    def handle(self, obj: Any) -> int:
        number = super().handle(obj)
        if self.granting:
            self.callable.add(number)
        return number

    def encode(self, value: Any, depth: int = 0) -> Any:
        """A course_lib Tensor goes by value (its numbers and requires_grad, not its history),
        so the student's code gets a Tensor of its own engine."""
        from course_lib.tensor import Tensor

        if type(value) is Tensor:
            return {"$T": [super().encode(value.data, depth + 1), bool(value.requires_grad)]}
        name, function = self.setup_functions.get(id(value), (None, None))
        if name is not None and function is value:
            # A function of the set-up cells runs where the student's code runs: that process
            # ran the same cells, and the function works on its objects (counts its operations).
            return {"$fn": name}
        return super().encode(value, depth)


def send(value: Any) -> Any:
    """``value`` encoded for a request: the judge's objects in it are read-only handles."""
    return CHANNEL.codec.encode(value)


def grant(value: Any) -> Any:
    """``value`` encoded for a request: functions in it may be called by the student's code."""
    codec = CHANNEL.codec
    assert isinstance(codec, JudgeCodec)
    codec.granting = True
    try:
        return codec.encode(value)
    finally:
        codec.granting = False


def granted_arguments(args: tuple, kwargs: dict) -> tuple[list, tuple[Any, Any]]:
    """A call's arguments, encoded (granted), and the writeable arrays among them: what the
    student's code writes into its copies of those is written back into them, so a test that
    checks its inputs were left alone sees what a call in Jupyter would have left."""
    codec = CHANNEL.codec
    codec.arrays = []
    try:
        data = grant(list(args)), grant(kwargs)
        return codec.arrays, data
    finally:
        codec.arrays = None


# What leads from an object to the judge's code, frames and namespaces: dunders (__globals__,
# __closure__, __self__, __dict__ ...) and the fields of frames, code, generators, tracebacks.
HIDDEN_ATTRIBUTES = ("__", "f_", "co_", "gi_", "cr_", "ag_", "tb_")


class ReadOnly(Exception):
    """The student's code tried to change or call one of the test's objects."""


def serve(message: dict) -> Any:
    """A request of the student's process on one of the judge's objects."""
    SERVING[0] += 1
    try:
        return _serve(message)
    finally:
        SERVING[0] -= 1


def _serve(message: dict) -> Any:
    codec = CHANNEL.codec
    assert isinstance(codec, JudgeCodec)
    op = message.get("op")
    target_data = message.get("target")
    if type(target_data) is not dict or set(target_data) != {"$r"}:
        raise ProtocolError("a request on an object that is not the judge's")
    number = target_data["$r"]
    target = codec.decode(target_data)
    if op == "call":
        if number not in codec.callable and not _from_reference(target):
            raise ReadOnly("only the functions a test hands to your code may be called")
        return target(*codec.decode(message.get("args")), **codec.decode(message.get("kwargs")))
    if op == "getattr":
        name = str(message.get("name"))
        if name.startswith(HIDDEN_ATTRIBUTES):
            raise AttributeError(f"{name}: the test's objects show only their data, not Python's internals")
        return getattr(target, name)
    if op == "getitem":
        return target[codec.decode(message.get("key"))]
    if op == "len":
        return len(target)
    if op == "iter":
        return list(target)
    if op == "contains":
        return codec.decode(message.get("item")) in target
    if op == "isinstance":
        return isinstance(codec.decode(message.get("item")), target)
    if op == "binop" and message.get("name") in BINARY + COMPARISONS:
        function = getattr(operator, str(message["name"]))
        other = codec.decode(message.get("other"))
        return function(other, target) if message.get("reflected") else function(target, other)
    if op == "unary" and message.get("name") in UNARY:
        return getattr(operator, str(message["name"]))(target)
    if op == "convert" and message.get("to") in CONVERSIONS:
        return convert(target, str(message["to"]))
    raise ReadOnly(f"the test's objects are read-only here ({op})")


def _from_reference(target: Any) -> bool:
    """Whether ``target`` is code of a reference solution standing in for an earlier part (a
    method of the reference ``MLP``, or one of its instances, called): the student's later code
    uses it as it would use its own."""
    function = getattr(target, "__func__", target)
    if not isinstance(function, types.FunctionType):
        function = vars(type(target)).get("__call__")
    code = getattr(function, "__code__", None)
    return isinstance(code, types.CodeType) and code.co_filename.startswith("<reference ")


CHANNEL: Endpoint


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


def run_trusted(source: str, filename: str, namespace: dict, out: io.StringIO) -> None:
    code = compile(source, filename, "exec", dont_inherit=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        exec(code, namespace)


def raised_in_test(error: BaseException) -> bool:
    """True when the exception came from the test's own code (an assert), not from the student's."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.endswith(" test>") and not isinstance(error, ReadOnly)


def judge_part(part: PartJob, sandbox: Sandbox, scratch: Path, cell_timeout: float) -> Verdict:
    """Start the student's process for one part, wait for its cells, run the test here."""
    global CHANNEL
    verdict = Verdict()
    run = sandbox.start(scratch)
    CHANNEL = Endpoint(run.reply_read, run.request_write, JudgeCodec(), serve)
    cells: list[Cell] = part["cells"]
    running = None
    student_ran = False
    try:
        CHANNEL.send(
            {
                "cells": cells,
                "cell_timeout": cell_timeout,
                "rlimits": sandbox.limits.rlimits(),
                "course_lib_parent": sandbox.inside_course_lib_parent,
                "answers": sorted(ANSWER_NAMES),
                "debug": DEBUG,
            }
        )
        names: dict | None = None
        with time_limit(cell_timeout * (len(cells) + 1) + 5):
            while names is None:
                event = CHANNEL.receive()
                kind = event.get("event")
                if kind == CELL_START:
                    running, student_ran = str(event.get("cell")), True
                elif kind == CELL_END:
                    running = None
                    _cell_note(event, verdict)
                elif kind == SETUP_FAILED:  # before the student's code: the grading set-up is broken
                    verdict.machinery = (
                        f"the assignment's own set-up cell '{clip(str(event.get('cell')), 80)}' failed in the "
                        f"sandbox ({clip(str(event.get('error')), 80)}: {clip(str(event.get('message')), 200)})"
                    )
                    return verdict
                elif kind == READY:
                    names = event.get("names")
                    if type(names) is not dict:
                        raise ProtocolError("the names of the student's cells are not a dict")
                else:
                    raise ProtocolError(f"an unknown event {kind!r}")
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


def _cell_note(event: dict, verdict: Verdict) -> None:
    status, cell = event.get("status"), str(event.get("cell"))
    if status == "timeout":
        verdict.timed_out_cells.append(cell)
        verdict.notes.append(f"your cell '{cell}' ran longer than the time limit and was stopped")
    elif status == "syntax":
        verdict.notes.append(f"your cell '{cell}' is not valid Python here: {clip(str(event.get('message', '')), 300)}")
    elif status == "error":
        verdict.notes.append(
            f"your cell '{cell}' raised {clip(str(event.get('error')), 80)}: {clip(str(event.get('message', '')), 300)}"
        )


def _test(part: PartJob, names: dict, verdict: Verdict, scratch: Path, cell_timeout: float) -> Verdict:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    quiet = io.StringIO()
    os.chdir(scratch)
    theirs = {str(name): CHANNEL.codec.decode(data) for name, data in names.items()}
    answers = {k: v for k, v in theirs.items() if k in ANSWER_NAMES and not hasattr(builtins, k)}
    namespace.update(answers)  # set-up cells that run after an answer may use it
    for cell in part["setup"]:
        run_trusted(cell["source"], f"<set-up {cell['name']}>", namespace, quiet)
    codec = CHANNEL.codec
    assert isinstance(codec, JudgeCodec)
    codec.setup_functions = {
        id(value): (name, value)
        for name, value in namespace.items()
        if isinstance(value, types.FunctionType) and value.__code__.co_filename.startswith("<set-up ")
    }
    for name, value in theirs.items():
        # A test takes from the student only what the solution's answers define (so a student's
        # `abs` or `isinstance` is never the test's) and the set-up cells' classes the answers
        # extend; the test's own helpers (the set-up cells' functions and data) stay its own.
        if name in answers or _notebook_class(namespace.get(name)):
            namespace[name] = value
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__.split(".")[0] == "course_lib":
            namespace[name] = _where_the_objects_are(name, value)
    namespace["student_side"] = student_side
    try:
        with time_limit(cell_timeout):
            verdict.phase = "references"
            for cell in part["references"]:
                before = dict(namespace)
                run_trusted(cell["source"], f"<reference {cell['name']}>", namespace, quiet)
                for name, value in namespace.items():
                    if before.get(name, _MISSING) is not value and not name.startswith("__"):
                        CHANNEL.request("setglobal", name=name, value=grant(value))
        visible = io.StringIO()
        for phase in ("visible", "hidden"):
            source = part[phase]
            if not source.strip():
                continue
            verdict.phase = phase
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
    except BaseException as error:  # noqa: BLE001 - any failure of a test is its verdict
        if DEBUG:
            traceback.print_exc()
        verdict.error = type(error).__name__
        verdict.in_test_code = raised_in_test(error)
        verdict.message = clip(str(error))
        if verdict.phase == "hidden" and not (verdict.in_test_code and isinstance(error, AssertionError)):
            # Text that did not come from the test itself may carry what the student's code
            # made of the hidden inputs: only the exception's type leaves.
            verdict.message = HIDDEN_MESSAGE
        verdict.output = clip(visible.getvalue()) if "visible" in locals() else ""
        if verdict.phase == "references":
            verdict.message = (
                f"an earlier part's reference could not run on your code ({verdict.error}: {verdict.message})"
            )
        return verdict
    verdict.passed, verdict.phase, verdict.output = True, "", clip(visible.getvalue())
    return verdict


def _where_the_objects_are(name: str, function: Any) -> Any:
    """``function`` (course_lib's, imported by a set-up cell) run where its arguments live: on
    the student's objects, the student's process runs its own copy (one request, not one per
    operation inside it, as a reference train step calling ``cross_entropy`` on the student's
    model would make); on the test's own values, the judge runs it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if any(type(a) is Remote for a in (*args, *kwargs.values())):
            return CHANNEL.request("setup", name=name)(*args, **kwargs)
        return function(*args, **kwargs)

    call.__name__, call.__doc__, call.__wrapped__ = function.__name__, function.__doc__, function  # type: ignore[attr-defined]
    return call


def _notebook_class(value: Any) -> bool:
    return isinstance(value, type) and value.__module__ == "__main__"


def student_side(function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` where the student's code runs: the set-up cells' function
    (or class) of that name, in the student's process. In a notebook the set-up cell defines
    this as a plain call; the judge uses it for objects the student's code must own (a model
    it trains) or build fast (a graph 100,000 nodes deep)."""
    name = getattr(function, "__name__", None)
    if not isinstance(name, str):
        raise TypeError("student_side needs a function or class of the notebook")
    return CHANNEL.request("setup", name=name)(*args, **kwargs)


_MISSING = object()


def main() -> None:
    job: JudgeJob = json.loads(sys.stdin.buffer.read())
    ANSWER_NAMES.update(job["names"])
    ARITHMETIC.update(job["classes"])
    limits = Limits(**job["limits"])  # type: ignore[arg-type]
    resource.setrlimit(resource.RLIMIT_DATA, (limits.judge_memory_bytes, limits.judge_memory_bytes))
    rules = Rules(**{k: tuple(v) for k, v in job["rules"].items()})
    sandbox = Sandbox(limits, unsafe=job["unsafe"], rules=rules, slot=job.get("slot", 0))
    results = []
    skipped: dict[str, str] = {}
    failed_answers: set[str] = set()  # answer cells some part that tests them failed on
    for part in job["parts"]:
        # A reference replaces the student's answer only where that answer failed its own test:
        # the student's code, which passed, is graded as it is (and runs at full speed).
        # From the first such answer on, every listed reference runs: a later one may build on it
        # (the methods a later part adds to the class an earlier part defines).
        needed = [k for k, r in enumerate(part["references"]) if r["name"] in failed_answers]
        part["references"] = part["references"][needed[0] :] if needed else []
        part["cells"] = [c for c in part["cells"] if c["name"] not in skipped]
        notes = [f"not run: {skipped[c]}" for c in part["cell_names"] if c in skipped]
        scratch = Path(job["scratch"]) / part["grade_id"]
        scratch.mkdir()
        for name in os.listdir(job["files"]):
            source = Path(job["files"]) / name
            if source.is_file():
                (scratch / name).write_bytes(source.read_bytes())
        started = time.perf_counter()
        verdict = judge_part(part, sandbox, scratch, float(job["cell_timeout"]))
        if DEBUG:
            sys.stderr.write(
                f"{part['grade_id']}: {time.perf_counter() - started:.2f} s, "
                f"{CHANNEL.counter} requests, {CHANNEL.served} served\n"
            )
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
    if DEBUG:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        sys.stderr.write(f"judge: peak resident memory {peak:.0f} MB\n")
    sys.stdout.write(json.dumps(results))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
