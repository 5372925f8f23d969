"""Control groups for the grader's sandboxes: where the grader may make them (root, cgroup v1
or v2), each sandbox and each part's runner gets groups of its own with a process limit, a
memory limit (its files in memory count) and an equal share of the processors, and whatever is
left in them when the part ends is killed. Should the process that made them die first (the
judge, killed maybe while a part is frozen), its :class:`Watchdog` does that."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from course_grader.limits import Limits


class ControlGroups:
    """Control groups of their own (pids, memory and an equal share of the processors) for each
    sandbox and each forked part, cgroup v2 or v1, when this process may make them; ``None``
    from :meth:`find` otherwise."""

    def __init__(self, folders: dict[str, Path], v2: bool):
        self.folders, self.v2 = folders, v2

    @classmethod
    def find(cls) -> ControlGroups | None:
        base = Path("/sys/fs/cgroup")
        if os.geteuid() != 0:
            return None
        if (base / "cgroup.controllers").exists():
            controllers = (base / "cgroup.controllers").read_text().split()
            if {"pids", "memory", "cpu"} <= set(controllers):
                parent = base / "course-grader"
                try:
                    parent.mkdir(exist_ok=True)
                    (base / "cgroup.subtree_control").write_text("+pids +memory +cpu")
                    (parent / "cgroup.subtree_control").write_text("+pids +memory +cpu")
                    return cls({"unified": parent}, v2=True)
                except OSError:
                    return None
            return None
        # The freezer, where mounted: the judge stops a part's other processes while it measures one call.
        names = ("pids", "memory", "cpu", "freezer") if (base / "freezer").is_dir() else ("pids", "memory", "cpu")
        folders = {name: base / name / "course-grader" for name in names}
        try:
            for folder in folders.values():
                folder.mkdir(exist_ok=True)
        except OSError:
            return None
        return cls(folders, v2=False)

    @property
    def can_freeze(self) -> bool:
        """Whether each group set :meth:`make` makes has a freezer."""
        return self.v2 or "freezer" in self.folders

    def make(self, limits: Limits) -> list[Path]:
        """New groups for one sandbox with its limits; the folders to join and remove."""
        name = uuid.uuid4().hex
        Watchdog.watch([folder / name for folder in self.folders.values()])  # before they exist
        made = []
        try:
            if self.v2:
                group = self.folders["unified"] / name
                group.mkdir()
                made.append(group)
                (group / "pids.max").write_text(str(limits.processes))
                (group / "memory.max").write_text(str(limits.group_memory_bytes))
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0")
            else:
                pids = self.folders["pids"] / name
                pids.mkdir()
                made.append(pids)
                (pids / "pids.max").write_text(str(limits.processes))
                memory = self.folders["memory"] / name
                memory.mkdir()
                made.append(memory)
                (memory / "memory.limit_in_bytes").write_text(str(limits.group_memory_bytes))
                cpu = self.folders["cpu"] / name  # an equal share of the processors, however many processes
                cpu.mkdir()
                made.append(cpu)
                if "freezer" in self.folders:
                    freezer = self.folders["freezer"] / name
                    freezer.mkdir()
                    made.append(freezer)
        except OSError:
            self.remove(made)
            raise
        return made

    @staticmethod
    def remove(groups: list[Path]) -> None:
        """Kill whatever is left in the groups, then remove them."""
        for group in groups:
            try:
                freeze(group, False)  # a frozen process dies only once thawed
            except TimeoutError:
                pass
            for _ in range(50):
                pids = procs(group)
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.01)
            try:
                group.rmdir()
            except OSError:
                pass


# The watchdog's shell script: it notes each group named on its standard input until the pipe
# ends, when the process that made the groups has ended, normally or killed (SIGKILL, the OOM
# killer) maybe with a part frozen (cgroup v1's frozen processes cannot even die), and nobody
# else would remove them: then it kills what is in those left, thaws them (so that the killed
# run none of their code first) and removes them, trying for about 2 s. It ignores the signals
# that a terminal's Ctrl-C or a service manager sends a whole group of processes first.
WATCHDOG = """
trap '' INT TERM HUP QUIT
set -f
groups=
while read -r group; do groups="$groups $group"; done
tries=0
while [ $tries -lt 100 ]; do
    left=0
    for group in $groups; do
        [ -d "$group" ] || continue
        while read pid; do kill -9 "$pid"; done < "$group/cgroup.procs"
        [ -e "$group/freezer.state" ] && echo THAWED > "$group/freezer.state"
        [ -e "$group/cgroup.freeze" ] && echo 0 > "$group/cgroup.freeze"
        rmdir "$group" || left=1
    done
    [ $left = 0 ] && exit
    sleep 0.02
    tries=$((tries + 1))
done
"""


class Watchdog:
    """This process's watchdog (one, started with its first groups): a shell outside every
    sandbox (a child of this process, in its control groups, where no part's process can
    signal it) that reads the groups this process makes from a pipe only this process writes
    to, and removes those left once this process has ended (:data:`WATCHDOG`)."""

    lock = threading.Lock()
    write: int | None = None
    process: subprocess.Popen[bytes] | None = None

    @classmethod
    def watch(cls, groups: list[Path]) -> None:
        """Have the watchdog remove ``groups``, and kill what is in them, if this process ends
        first."""
        names = "".join(f"{group}\n" for group in groups).encode()
        with cls.lock:
            try:
                os.write(cls._started(), names)
            except BrokenPipeError:  # it was killed: a new one
                cls.stop()
                os.write(cls._started(), names)

    @classmethod
    def _started(cls) -> int:
        if cls.write is None:
            read, write = os.pipe()  # both ends close on exec: no other program gets them
            try:
                cls.process = subprocess.Popen(
                    ["/bin/sh", "-c", WATCHDOG],
                    stdin=read,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # no Ctrl-C of the terminal's reaches it
                )
            except BaseException:
                os.close(write)
                raise
            finally:
                os.close(read)
            cls.write = write
        return cls.write

    @classmethod
    def stop(cls) -> None:
        """As this process exits: the pipe ends, the watchdog removes the groups left (if any)
        and ends."""
        if cls.write is not None:
            os.close(cls.write)
            cls.write = None
        if cls.process is not None:
            cls.process.wait()
            cls.process = None

    @classmethod
    def forget(cls) -> None:
        """In a forked copy of this process, which has a watchdog of its own if it makes groups:
        the parent's pipe is the parent's alone, so that it ends with the parent."""
        if cls.write is not None:
            os.close(cls.write)
        cls.write, cls.process, cls.lock = None, None, threading.Lock()


atexit.register(Watchdog.stop)
os.register_at_fork(after_in_child=Watchdog.forget)


def freeze(group: Path, frozen: bool, seconds: float = 2.0) -> bool:
    """Stop (or let go on) every process of ``group``, where it is a freezer (cgroup v1's, or
    v2's group); whether it is one. A stopped process neither runs nor lets a signal of another
    wake it; it keeps its memory, its children and its threads (a pool's workers stay, none is
    started in their place). :class:`TimeoutError` when the processes did not stop in time."""
    if (group / "freezer.state").exists():
        state, wanted, written = group / "freezer.state", "FROZEN" if frozen else "THAWED", None
    elif (group / "cgroup.freeze").exists():
        state, wanted, written = group / "cgroup.events", f"frozen {int(frozen)}", group / "cgroup.freeze"
    else:
        return False
    try:
        (written or state).write_text(wanted if written is None else str(int(frozen)))
    except OSError:
        return False  # the group is gone
    deadline = time.monotonic() + seconds
    while wanted not in _read(state):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the processes of {group} did not {'stop' if frozen else 'go on'}")
        time.sleep(0.001)
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def procs(group: Path) -> list[int]:
    """The processes in ``group``."""
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def wait_for(done: Callable[[], bool], seconds: float = 2.0) -> None:
    """Until ``done()`` (a group empty), or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.002)
