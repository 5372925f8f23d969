"""The runner's side of a measured call (ps13's memory, :mod:`course_grader.measured_copy`): a
forked copy of the runner answers the one call the judge measures, and the process's memory is
made ready for it."""

from __future__ import annotations

import gc
import os
from typing import Any

from course_grader.endpoint import ANSWERED, Endpoint

COPY_HANDLES = 1 << 40
PR_SET_THP_DISABLE = 41  # prctl: no transparent huge pages for this process


def stand_by(judge: Endpoint, message: dict) -> Any:
    """A forked copy of this process answers this request, then the next one (the call the
    judge measures, ps13's memory), and ends; this process waits for it.

    The judge has this process in fresh control groups as it forks, so the copy is born there;
    then it moves this process back and freezes it with the rest of the part, so that nothing
    but the copy can make the call. The copy pays for every page it makes, and for every page
    of this process it writes to (copied for it): a reserve set aside in advance, or memory
    freed and kept by Python's allocator, lends the call nothing. This process answers only
    for a copy that ended before it answered."""
    told, tell = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(told)
        gc.freeze()  # the collector leaves the objects of before alone: no page copied for it
        judge.codec.counter += COPY_HANDLES  # handles the judge may see of the copy's objects: never reused here
        judge.send({"re": message.get("id"), "value": None})
        os.write(tell, b"!")
        judge.answer(judge.receive())
        os._exit(0)
    os.close(tell)
    status = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    answered = os.read(told, 1) == b"!"
    os.close(told)
    if answered:
        return ANSWERED
    how = f"killed by signal {-status}" if status < 0 else f"exit code {status}"
    raise RuntimeError(f"the copy for the measured call ended before it answered ({how})")


def settle() -> None:
    """What is garbage goes back, and the C allocator's free memory to the system (glibc's
    malloc_trim), so that a measured call starts from what the process holds, not from what it
    held once."""
    gc.collect()
    libc("malloc_trim", 0)


def small_pages() -> None:
    """4 kB pages only: no jump of 2 MB in measured memory."""
    libc("prctl", PR_SET_THP_DISABLE, 1, 0, 0, 0)


def libc(function: str, *args: int) -> None:
    """A function of glibc, where there is one (a measurement's help, never needed)."""
    try:
        import ctypes

        getattr(ctypes.CDLL("libc.so.6"), function)(*args)
    except (OSError, AttributeError):
        pass
