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
Where the grader has a freezer too, a test's call is measured in a copy of the runner made for
it instead (:mod:`course_grader.measured_copy`), which no memory held before lends anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

V1_PEAK, V2_PEAK = "memory.max_usage_in_bytes", "memory.peak"


class MeterError(RuntimeError):
    """The student's process cannot be measured (it ended, or this system has no /proc)."""


class MemoryMeter:
    """The resident memory of the runner, the process ``pid`` (as the judge found it when it
    started, never by anything the process says of itself), or of everything in the part's
    control ``groups`` (the one that has a memory controller)."""

    def __init__(self, pid: int, groups: list[Path] = []):  # noqa: B006 - never changed
        self.pid = pid
        self.started = start_time(pid)  # the runner's start time: a later process never matches
        self.group = memory_group(groups)
        self.marks: IO[str] | None = None  # v2: the open memory.peak that was reset

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


def peak_of(group: Path | None) -> int:
    """The most bytes ``group`` held since it was made."""
    for name in (V1_PEAK, V2_PEAK):
        try:
            return int((group / name).read_text())  # type: ignore[operator]
        except (OSError, ValueError, TypeError):
            continue
    raise MeterError("cannot read the memory of the measured copy")


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


def start_time(pid: int) -> int:
    """When ``pid`` started, in clock ticks since boot (0: no such process)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])  # field 22
    except (OSError, ValueError, IndexError):
        return 0
