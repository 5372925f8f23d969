"""What the judge hands a test besides the student's names: the instructor's code run as
trusted (:func:`run_trusted`), and the measurements a test takes of the student's code, each
taken by the judge itself: the memory of a call from outside the sandbox (:func:`peak_memory`,
:mod:`course_grader.measured_copy`), the calls the student's code makes by serving them
(:func:`calls_to`), a function a test swaps in (:func:`rebound`), and a set-up function run
where the student's objects live (:func:`student_side`). In a notebook the set-up cells define
plain functions of these names that do the same in-process.
"""

from __future__ import annotations

import collections
import contextlib
import io
import sys
import types
from typing import Any

from course_grader import stand_ins
from course_grader.measured_copy import CopyMeter
from course_grader.meter import MemoryMeter
from course_grader.protocol import ChannelClosed, ProtocolError
from course_grader.stand_ins import Remote, grant

METER = MemoryMeter(0)  # the memory of the part's student's process, read from outside
COPIES: CopyMeter | None = None  # ... or of a copy of it made for one call, where the grader can
SET_UP: list[str] = []  # the part's set-up cells
AS_SET_UP: dict[str, Any] = {}  # ... run afresh, with nothing of the student's (cleared for each part)


def measure_part(meter: MemoryMeter, copies: CopyMeter | None, set_up: list[str]) -> None:
    """The meters of the part being judged, and its set-up cells."""
    global METER, COPIES
    METER, COPIES = meter, copies
    SET_UP[:] = set_up
    AS_SET_UP.clear()


def run_trusted(source: str, filename: str, namespace: dict, out: io.StringIO) -> None:
    code = compile(source, filename, "exec", dont_inherit=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        exec(code, namespace)


def student_side(function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` where the student's code runs: the set-up cells' function
    (or class) of that name, in the student's process. In a notebook the set-up cell defines
    this as a plain call; the judge uses it for objects the student's code must own (a model
    it trains) or build fast (a graph 100,000 nodes deep). A class the student's cells defined
    anew or changed (their own ``MLP`` pasted over the given one, a method added to it) is theirs
    already: it is called where it lives, as the notebook's plain call would call it."""
    if type(function) is Remote:
        return function(*args, **kwargs)
    return on_their_side(function)(*args, **kwargs)


def peak_memory(function: Any, *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """``function(*args, **kwargs)`` and the most memory the call needed, in bytes, as the judge
    reads it from outside the sandbox. With control groups and a freezer
    (:mod:`course_grader.measured_copy`), a function of the student's runs in a copy of their
    process made for the call, which must return plain data, and a function of the set-up
    cells given plain arguments (what such a call is compared with) runs in a copy of the
    judge, over the set-up cells run afresh; each needs what its copy made or copied, less
    :data:`FORKED_COPY` (what a copy costs by itself). Without them, the student's process's
    high-water mark (:mod:`course_grader.meter`) beyond what it held as the call began. The
    notebook's own ``peak_memory`` (Python's tracemalloc) stands in for it in Jupyter."""
    if COPIES is not None and _set_up_cells_own(function) and not _holds_remote([args, kwargs]):
        # What a call is compared with (ps13's flight recorded whole) is the set-up cells' code,
        # run here: where the student's code runs, it may answer for it (a function of its own,
        # a Value class that wastes memory there and not in theirs).
        own = _as_set_up(function.__name__)
        result, used = COPIES.alone(lambda: own(*args, **kwargs))
        return result, max(0, used - FORKED_COPY)
    target = function if type(function) is Remote else on_their_side(function)
    stand_ins.CHANNEL.request("settle")
    if COPIES is None:
        baseline = METER.reset()
        result = target(*args, **kwargs)
        return result, max(0, METER.peak() - baseline)
    arrays, (args_data, kwargs_data) = stand_ins.granted_arguments(args, kwargs)
    with COPIES.apart() as copy:
        stand_ins.CHANNEL.request("standby")
        copy.alone()
        result = stand_ins.CHANNEL.request(
            "call", target=stand_ins.send(target), args=args_data, kwargs=kwargs_data, write_back=arrays
        )
        used = copy.peak()
    if _holds_remote(result):
        name = function if isinstance(function, str) else getattr(function, "__name__", "the measured function")
        raise ValueError(
            f"{name} runs in a copy of your process that ends with its answer, so that its memory can be measured: "
            "return plain data (numbers, and lists or tuples of them), not objects of your own"
        )
    return result, max(0, used - FORKED_COPY)


def _set_up_cells_own(function: Any) -> bool:
    return type(function) is types.FunctionType and function.__code__.co_filename.startswith("<set-up ")


def _as_set_up(name: str) -> Any:
    """The set-up cells' ``name`` as they define it, with their own classes and functions
    only (in the test's namespace, the student's classes stand in for the set-up cells')."""
    if not AS_SET_UP:
        AS_SET_UP["__name__"] = "__main__"
        for k, source in enumerate(SET_UP):
            with contextlib.suppress(Exception):  # a line that needs an answer: the rest still defines
                run_trusted(source, f"<set-up afresh {k}>", AS_SET_UP, io.StringIO())
    return AS_SET_UP[name]


def _holds_remote(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is, or contains, an object of the student's process (a handle)."""
    if type(value) is Remote:
        return True
    if type(value) in (list, tuple, set, frozenset, collections.deque) and depth < 64:
        return any(_holds_remote(v, depth + 1) for v in value)
    if type(value) is dict and depth < 64:
        return any(_holds_remote(v, depth + 1) for pair in value.items() for v in pair)
    return False


# What a forked copy of a student's process costs by itself: the pages it writes to are copied
# for it (its stack, the objects whose counts of references it changes, partly used pages of
# Python's allocator that its first objects fill). Measured on ps13's solution: 1.1-1.8 MB for
# a call that does nothing, 3.0-3.4 MB for a checkpointed gradient (a few thousand Values), up
# to 5.1 MB for the same rewritten in all the idiom fuzzer's idioms at once, three hand-ins
# graded side by side (a bigger heap, more of it written to), 7-8 MB for the whole flight it is
# compared with at 2 ms steps (about 5 MB by tracemalloc).
FORKED_COPY = 5 * 1024**2


@contextlib.contextmanager
def calls_to(name: str):
    """While it lasts, the student's code calling the notebook's function ``name`` calls the
    judge, which records each call in the list it gives and runs the set-up cells' ``name`` on
    its arguments where the student's code runs: the judge counts the calls itself (ps11's
    backward sweeps). It keeps no argument: 2,000,000 numbers sent with every call piled up
    here (1 GB in a minute). The notebook's own ``calls_to`` rebinds the name in Jupyter."""
    calls: list[tuple] = []
    original = on_their_side(name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(())
        return original(*args, **kwargs)

    with _rebinding(name, grant(recorded)):
        yield calls


@contextlib.contextmanager
def rebound(namespace: dict[str, Any], name: str, to: str):
    """While it lasts, the notebook's function ``name`` is the set-up cells' function ``to`` for
    the student's code (its global, rebound where it runs) and for a reference running here, in
    the test's ``namespace`` (ps08 trains once on a loss the test chooses). The notebook's own
    ``rebound`` rebinds the name in Jupyter."""
    there, here = on_their_side(to), namespace[name]
    namespace[name] = there
    try:
        with _rebinding(name, {"$fn": to}):
            yield
    finally:
        namespace[name] = here


@contextlib.contextmanager
def _rebinding(name: str, value: Any):
    """The notebook's ``name`` bound to ``value`` (encoded) where the student's code runs, for
    a while. Given back when the test goes on; not when it ran out of time or lost the channel
    (the student's process, maybe still in the call, answers nothing more and is ended): an
    endless loop within ``calls_to`` held the judge until the sandbox's CPU limit, not the
    test's time limit, ended it."""
    stand_ins.CHANNEL.request("setglobal", name=name, value=value, save=True)
    try:
        yield
    except (ChannelClosed, ProtocolError):
        raise
    except Exception:
        stand_ins.CHANNEL.request("restoreglobal", name=name)
        raise
    else:
        stand_ins.CHANNEL.request("restoreglobal", name=name)


def on_their_side(function: Any) -> Any:
    """The set-up cells' function (given, or named) as the student's process has it."""
    name = function if isinstance(function, str) else getattr(function, "__name__", None)
    if not isinstance(name, str):
        raise TypeError("expected a function of the notebook's set-up cells or of the student's")
    return stand_ins.CHANNEL.request("setup", name=name)


@contextlib.contextmanager
def notebook_recursion_limit():
    """While it lasts, a test's ``sys.setrecursionlimit`` also sets the limit where the student's
    code runs, as Jupyter's one interpreter has one: ps04 sets Python's default before its deep
    graphs, whatever the student's cells set, and a limit their cells raised stays where no test
    sets one (ps03's chain of 200 diamonds: the runner set its limit back to the default before
    every request, and a recursive search that needed the room it asked for scored 0/2, 2/2 in
    Jupyter)."""
    own = sys.setrecursionlimit

    def both(limit: int) -> None:
        own(limit)
        stand_ins.CHANNEL.request("recursionlimit", limit=limit)

    sys.setrecursionlimit = both
    try:
        yield
    finally:
        sys.setrecursionlimit = own
