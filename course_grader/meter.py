"""What the judge measures of the student's process from outside the sandbox.

A test may ask how much memory the student's code needed (ps13's checkpointing). Nothing the
student's process reports about itself counts for that (a class attribute, a counter), so the
judge reads the kernel's account of the runner process instead: ``/proc/<pid>/status``, where
``VmHWM`` is the most resident memory the process has held. Writing ``5`` to
``/proc/<pid>/clear_refs`` resets that high-water mark to the memory the process holds now
(Linux 4.0 and later), so one call's peak is its high-water mark, reset just before the call
and read just after, less the memory held when it began. The judge may do both: the runner runs
as the grader's user in its own user namespace (or, as root, as a slot's user).

Where the part has a memory control group of its own (the grader runs as root), the judge reads
the group's peak instead: it counts every process of the part (a child that holds the memory
for the runner) and no process of the part can reset it (the sandbox sees no control group
file). cgroup v1's ``memory.max_usage_in_bytes`` is reset by writing 0; v2's ``memory.peak``
by writing to it (Linux 6.12 and later), for reads through the same open file. Where neither
resets, the runner's own mark is read; /proc in the sandbox is read-only, so the runner cannot
reset that one either.

The kernel counts pages, not objects: memory the process freed earlier but kept (Python's
allocator keeps partly used arenas) is used again without raising the mark, so a call
measured after a larger one may read lower than it needs; it never reads higher than the
memory it made the process hold, give or take a few pages of the grader's own messages.

With control groups the judge measures a call :meth:`MemoryMeter.apart` instead: the runner
forks a copy of itself that makes the call, answers and ends, born in fresh groups of its own,
while every other process of the part is stopped (frozen). Nothing held before the call is
charged to those groups, so their peak counts every page the call makes or writes to (the copy
copies it), and no memory set aside before the call, or given back as it starts, lends it
anything.
Shared memory is the exception: pages of a shared mapping or of a file in memory that the part
wrote before the call, the copy writes to without a page of its own (Python's objects can live
there: an allocator of the student's). The part's shared memory is added to the reading whole.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from course_grader.control_groups import ControlGroups, freeze

V1_PEAK, V2_PEAK = "memory.max_usage_in_bytes", "memory.peak"


class MeterError(RuntimeError):
    """The student's process cannot be measured (it ended, or this system has no /proc)."""


class MemoryMeter:
    """The resident memory of the runner, the process ``pid`` (as the judge found it when it
    started, never by anything the process says of itself), or of everything in the part's
    control ``groups`` (the one that has a memory controller)."""

    def __init__(
        self,
        pid: int,
        groups: list[Path] = [],  # noqa: B006 - never changed
        make: Callable[[], list[Path]] | None = None,
    ):
        self.pid = pid
        self.started = start_time(pid)  # the runner's start time: a later process never matches
        self.groups = groups
        self.group = memory_group(groups)
        self.make = make  # fresh groups like the part's, for a measured copy (:meth:`apart`)
        self.marks: IO[str] | None = None  # v2: the open memory.peak that was reset

    @contextlib.contextmanager
    def apart(self) -> Iterator[Callable[[], int]]:
        """While it lasts, the runner is in fresh control groups (a copy it forks is born
        there, and nothing it held before is charged to them) and every other process of the
        part is stopped where it is (the freezer; ended where there is none): none can work for
        the copy, and a pool's workers, still there, are not started anew in the fresh groups.
        Gives a reading of the fresh memory group's peak in bytes: all the copy made or copied,
        and what the runner's own threads did, and the part's shared memory, which the copy may
        have written to without paying."""
        pid = self._runner()
        if self.make is None or self.group is None:
            raise MeterError("this grader has no control groups to measure a forked copy in")
        fresh = self.make()
        stopped: list[Path] = []  # thawed at the end, even one that did not freeze in time
        try:
            for group in fresh:
                (group / "cgroup.procs").write_text(str(pid))
            for group in self.groups:
                stopped.append(group)
                if not _stop(group):
                    stopped.pop()
            if not stopped:
                _end_all_but(pid, self.group)
            shared = _shared(self.group)
            yield lambda: _peak(memory_group(fresh)) + shared
        finally:
            for group in stopped:
                with contextlib.suppress(OSError, TimeoutError):
                    freeze(group, False)
            with contextlib.suppress(OSError):
                for group in self.groups:
                    (group / "cgroup.procs").write_text(str(pid))
            _wait_empty(fresh, 2.0)  # the copy ends as soon as it has answered
            ControlGroups.remove(fresh)

    def alone(self, function: Callable[[], Any]) -> tuple[Any, int]:
        """``function()``, the judge's own code, in a forked copy of the judge born in fresh
        groups like the part's (no process of the student's has a part in it): its result, and
        the fresh memory group's peak in bytes."""
        if self.make is None:
            raise MeterError("this grader has no control groups to measure a forked copy in")
        fresh = self.make()
        read, write = os.pipe()
        try:
            child = os.fork()
            if child == 0:  # never returns: its result goes through the pipe
                code = 1
                try:
                    os.close(read)
                    for group in fresh:
                        (group / "cgroup.procs").write_text(str(os.getpid()))
                    gc.freeze()  # the collector leaves the judge's objects alone: no page copied for it
                    os.write(write, pickle.dumps(function()))
                    code = 0
                finally:
                    os._exit(code)
            os.close(write)
            with os.fdopen(read, "rb") as pipe:
                data = pipe.read()
            ended = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
            if ended != 0:
                raise MeterError(f"the grader's own measured call failed (exit status {ended})")
            return pickle.loads(data), _peak(memory_group(fresh))
        finally:
            ControlGroups.remove(fresh)

    def reset(self) -> int:
        """Reset the high-water mark; the bytes held now."""
        pid = self._runner()
        if self.group is not None:
            try:
                return self._reset_group(self.group)
            except (OSError, ValueError):
                self.group = None  # a kernel whose group's peak does not reset: the runner's own
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        except OSError as error:
            raise MeterError(f"cannot reset the memory mark of the student's process ({error})") from None
        return self._status("VmRSS")

    def peak(self) -> int:
        """The most bytes held since the last :meth:`reset`."""
        self._runner()
        if self.group is None:
            return self._status("VmHWM")
        try:
            if self.marks is not None:
                self.marks.seek(0)
                return int(self.marks.read())
            return int((self.group / V1_PEAK).read_text())
        except (OSError, ValueError) as error:
            raise MeterError(f"cannot read the memory of the student's part ({error})") from None

    def _reset_group(self, group: Path) -> int:
        if (group / V1_PEAK).exists():
            (group / V1_PEAK).write_text("0")
            return int((group / "memory.usage_in_bytes").read_text())
        if self.marks is None:
            self.marks = open(group / V2_PEAK, "r+")  # noqa: SIM115 - kept open: the reset is this file's
        self.marks.write("reset\n")
        self.marks.flush()
        return int((group / "memory.current").read_text())

    def _runner(self) -> int:
        """The runner, checked to be the process the meter was made for (not a later one with
        its pid)."""
        if start_time(self.pid) != self.started:
            raise MeterError("the student's process ended")
        return self.pid

    def _status(self, field: str) -> int:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        raise MeterError(f"cannot read {field} of the student's process")


def memory_group(groups: list[Path]) -> Path | None:
    """The group among ``groups`` that has a memory controller."""
    return next((g for g in groups if (g / V1_PEAK).exists() or (g / V2_PEAK).exists()), None)


def _peak(group: Path | None) -> int:
    """The most bytes ``group`` held since it was made."""
    for name in (V1_PEAK, V2_PEAK):
        with contextlib.suppress(OSError, ValueError, TypeError):
            return int((group / name).read_text())  # type: ignore[operator]
    raise MeterError("cannot read the memory of the measured copy")


def _stop(group: Path) -> bool:
    """Freeze the processes of ``group``; whether it is a freezer."""
    try:
        return freeze(group, True)
    except TimeoutError:
        raise MeterError("the part's processes could not be stopped: the memory cannot be measured") from None


def _shared(group: Path) -> int:
    """The bytes of shared memory charged to ``group``: its files in memory (/tmp, /dev/shm) and
    its shared mappings (``mmap.mmap(-1, n)``, shared_memory). A copy writes to those pages
    without a page of its own, so nothing of it shows in its groups: the whole of them counts."""
    try:
        for line in (group / "memory.stat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "shmem":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _end_all_but(pid: int, group: Path) -> None:
    """Kill every process in ``group`` but ``pid`` (none can work for the measured copy, or
    wake another that would), until none is left: one may fork while the others die."""
    for _ in range(100):
        others = {p for p in _procs(group) if p != pid and _runs(p)}
        if not others:
            return
        for other in others:
            with contextlib.suppress(ProcessLookupError):
                os.kill(other, signal.SIGKILL)
        time.sleep(0.002)
    raise MeterError("the part's processes keep multiplying: the memory cannot be measured")


def _wait_empty(groups: list[Path], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_procs(g) for g in groups):
        time.sleep(0.005)


def _procs(group: Path) -> list[int]:
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def descendants(root: int) -> list[int]:
    """``root`` and its descendants (from the kernel's lists of each thread's children)."""
    found, k = [root], 0
    while k < len(found):
        try:
            for task in os.listdir(f"/proc/{found[k]}/task"):
                found += [int(c) for c in Path(f"/proc/{found[k]}/task/{task}/children").read_text().split()]
        except OSError:
            pass
        k += 1
    return found


def _runs(pid: int) -> bool:
    """Whether a thread of the process ``pid`` still runs. Its state letter alone does not say:
    a process whose first thread ended (the system call exit, not exit_group) shows Z, a
    zombie, while its other threads go on working."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(_state(f"/proc/{pid}/task/{thread}") not in ("Z", "X", "") for thread in threads)


def _state(folder: str) -> str:
    """The state letter of the process or thread whose /proc folder this is (Z: a zombie, gone
    but not yet reaped; "": no such process)."""
    try:
        return Path(f"{folder}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


def start_time(pid: int) -> int:
    """When ``pid`` started, in clock ticks since boot (0: no such process)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])  # field 22
    except (OSError, ValueError, IndexError):
        return 0
