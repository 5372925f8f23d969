"""One call's memory, measured in a forked copy of a process, from outside (ps13's checkpointing).

Where the grader has control groups and a freezer, the judge measures a call of the student's
code (:meth:`CopyMeter.apart`) in a copy of the runner made for it: the runner, moved into
fresh control groups, forks a standby copy there (:func:`course_grader.standby.stand_by`);
the judge checks that the copy is a new child that shares no memory with the runner, moves the
runner back and freezes it with every other process of the part (no signal of the student's
thaws them), and only then sends the call, which nothing but the copy can make. Nothing held
before the fork is charged to the fresh groups: their peak counts every page the copy makes,
and every page of the runner it writes to (the kernel copies it for the copy), so memory set
aside before the call, or freed and kept by Python's allocator, lends the call nothing.
Shared memory is the exception: pages of a shared mapping or of a file in memory that the part
wrote before the call, the copy writes to without a page of its own (Python's objects can live
there, with an allocator of the student's), so the part's shared memory, as it is once the
part is frozen, is added to the reading whole; and so is what the frozen part gains while the
copy runs (pages of the runner the copy writes to with process_vm_writev are the runner's).
Nothing but the copy may be left unfrozen: no process that shares the runner's memory.

What a call is compared with, the judge measures in a forked copy of itself
(:meth:`CopyMeter.alone`), over code of its own: no process of the student's has a part in it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from course_grader.control_groups import ControlGroups, freeze, procs, wait_for
from course_grader.limits import Limits
from course_grader.meter import MemoryMeter, MeterError, memory_group, peak_of

KCMP = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)  # the kcmp system call's number
KCMP_VM = 1


class CopyMeter:
    """Measured copies for one part: of its runner ``pid`` (in the part's control ``groups``),
    and of the judge; each in fresh groups like the part's, made by ``control``."""

    def __init__(self, pid: int, groups: list[Path], control: ControlGroups, limits: Limits):
        self.pid, self.groups, self.control, self.limits = pid, groups, control, limits

    @contextlib.contextmanager
    def apart(self) -> Iterator[Copy]:
        """While it lasts, the runner is in fresh groups, ready to fork its standby copy there;
        :meth:`Copy.alone` then leaves the copy alone to make the call."""
        group = memory_group(self.groups)
        if group is None:
            raise MeterError("the part has no memory control group to measure a copy in")
        fresh = self.control.make(self.limits)
        copy = Copy(self.pid, self.groups, fresh, _children(self.pid), group)
        try:
            for made in fresh:
                (made / "cgroup.procs").write_text(str(self.pid))
            yield copy
        finally:
            for frozen in copy.frozen:
                with contextlib.suppress(OSError, TimeoutError):
                    freeze(frozen, False)
            with contextlib.suppress(OSError):
                for part in self.groups:
                    (part / "cgroup.procs").write_text(str(self.pid))
            wait_for(lambda: not any(procs(made) for made in fresh))  # the copy ends once it has answered
            ControlGroups.remove(fresh)

    def alone(self, function: Callable[[], Any]) -> tuple[Any, int]:
        """``function()``, the judge's own code, in a forked copy of the judge born in fresh
        groups like the part's: its result, and the fresh memory group's peak in bytes."""
        fresh = self.control.make(self.limits)
        read, write = os.pipe()
        try:
            child = os.fork()
            if child == 0:  # never returns: its result goes through the pipe
                code = 1
                try:
                    os.close(read)
                    for made in fresh:
                        (made / "cgroup.procs").write_text(str(os.getpid()))
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
            return pickle.loads(data), peak_of(memory_group(fresh))
        finally:
            ControlGroups.remove(fresh)


class Copy:
    """The runner's standby copy for one measured call."""

    def __init__(self, runner: int, groups: list[Path], fresh: list[Path], before: set[int], memory: Path):
        self.runner, self.groups, self.fresh, self.before, self.memory = runner, groups, fresh, before, memory
        self.frozen: list[Path] = []
        self.shared = 0  # the part's shared memory once it is frozen
        self.part: MemoryMeter | None = None  # ... and what it holds from then on
        self.held = self.owned = 0

    def alone(self) -> None:
        """After the runner forked its copy: check that the copy is one new child of the runner
        that shares no memory with it, then move the runner back into the part's groups and
        freeze them, runner and all, so that the copy alone can make the call."""
        new = _children(self.runner) - self.before
        if len(new) != 1:
            raise MeterError(
                f"your process made {len(new)} processes where the grader measures one copy of it: "
                "do not change how the grader's runner answers"
            )
        (copy,) = new
        if _same_memory(copy, self.runner):
            raise MeterError("the copy of your process shares its memory with it: the call cannot be measured")
        for part in self.groups:
            (part / "cgroup.procs").write_text(str(self.runner))
        for part in self.groups:
            self.frozen.append(part)
            try:
                freeze(part, True)
            except TimeoutError:
                raise MeterError("the part's processes could not be frozen: the memory cannot be measured") from None
        # Nothing but the copy may be left unfrozen: a process made while the runner was in the
        # fresh groups that shares the runner's memory (clone with CLONE_VM, and CLONE_PARENT so
        # that it is no child of the runner's) would make the call in the runner's pages, which
        # the kernel charges to the runner's group, not to the fresh one.
        others = {pid for made in self.fresh for pid in procs(made)} - {copy}
        if others:
            raise MeterError(
                f"{len(others)} other process(es) of yours stand beside the copy the grader measures: "
                "do not change how the grader's runner answers"
            )
        # Read now, not before: until they stopped, the part's processes could still write pages
        # of a shared mapping, which the copy then uses without a page of its own.
        self.shared = _shared(self.memory)
        # A frozen part holds no new page of its own accord: whatever it gains, the copy put
        # there (its writes into the runner's memory, process_vm_writev), and counts as the copy's:
        # the most it held beyond what it held now, and what it owns beyond what it owned now
        # (the copy may first drop pages of the part's in the page cache to make room).
        self.part = MemoryMeter(self.runner, self.groups)
        self.held, self.owned = self.part.reset(), _owned(self.memory)

    def peak(self) -> int:
        """The most bytes the copy's groups held, the part's shared memory, and the most the
        frozen part gained."""
        gained = 0
        if self.part is not None:
            gained = max(0, self.part.peak() - self.held, _owned(self.memory) - self.owned)
        return peak_of(memory_group(self.fresh)) + self.shared + gained


def _children(pid: int) -> set[int]:
    """The runner's children now, from the kernel's lists of each of its threads' children."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                found.update(int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
    return found


def _same_memory(one: int, other: int) -> bool:
    """Whether two processes share their memory (one made with CLONE_VM, like a thread): kcmp's
    answer, where the kernel has it."""
    if KCMP is None:
        return False
    return ctypes.CDLL(None, use_errno=True).syscall(KCMP, one, other, KCMP_VM, 0, 0) == 0


def _shared(group: Path) -> int:
    """The bytes of shared memory charged to ``group``: its files in memory (/tmp, /dev/shm) and
    its shared mappings (``mmap.mmap(-1, n)``, shared_memory). A copy writes to those pages
    without a page of its own, so nothing of it shows in its groups: the whole of them counts."""
    return _stat(group, ("shmem",))


def _owned(group: Path) -> int:
    """The bytes of memory of the processes' own charged to ``group``: anonymous (cgroup v1's
    ``rss``, v2's ``anon``) and shared; not the page cache, which the kernel may drop."""
    return _stat(group, ("rss", "anon", "shmem"))


def _stat(group: Path, names: tuple[str, ...]) -> int:
    with contextlib.suppress(OSError, ValueError):
        stat = dict(line.split(" ", 1) for line in (group / "memory.stat").read_text().splitlines())
        return sum(int(stat.get(name, 0)) for name in names)
    return 0
