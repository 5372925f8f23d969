"""The warm runner of a hand-in's sandbox: it forks a fresh runner for every graded part.

One sandbox per hand-in starts ``runner.py --zygote FD``: it forbids programs (its own seccomp
filter and Landlock domain, :mod:`course_grader.no_programs`), imports what the notebook's set-up
cells import (NumPy, course_lib, PyTorch: instructor's choices, never the student's), and then
only waits on a Unix socket for the judge. It runs no cell, the instructor's or the student's.

For each part the judge sends, with ``fork``, the part's own fresh pipes and stderr file
(SCM_RIGHTS); where the judge forks more than one part in a sandbox (with control groups), the
zygote first kills whatever an earlier part left running and puts the sandbox's writable file
systems (/tmp, /dev/shm and the home, all in memory; the root and /dev are read-only) back as
they were before the first part. It forks, and answers with the child's pid in the sandbox.
What a part could leave elsewhere (message queues, keys, extended attributes) its filter
refuses to make (:mod:`course_grader.no_programs`). The child drops the socket
and returns the pipes to :func:`course_grader.runner.main`, which goes on exactly as a freshly
started runner: it waits for its job (the judge first moves it into the part's control groups),
sets its limits, installs a filter and a Landlock domain of its own, nested in the zygote's (so
that it can neither trace nor write the memory of the zygote or of another part's process), and
runs the cells. ``wait`` reaps a child and says how it ended.

The zygote is the sandbox's pid 1, which the kernel shields from the signals of the processes
in its namespace (it handles none): a part's code cannot kill or stop it, nor (Landlock) trace
it. It never reads a message of a child's. Where it runs without bubblewrap (the unsafe flag) a
part can kill it; then the judge starts a fresh one for the parts that are left.

Standard library only: it runs inside the sandbox, beside runner.py.
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib
import json
import os
import resource
import shutil
import signal
import socket
import stat
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any

ZYGOTE = "--zygote"  # runner.py's flag: be the warm runner on this socket's descriptor
MESSAGE_BYTES = 1 << 16
PART_FDS = 3  # request (read end), reply (write end), stderr
IPC_RMID = 0


def serve_forks(socket_fd: int) -> tuple[int, int]:
    """Answer the judge until it asks for a fork; return ``(request_fd, reply_fd)`` in the
    child. The zygote itself never returns: it exits when the judge closes the socket."""
    channel = socket.socket(fileno=socket_fd)
    # The sandbox's pid 1 (bubblewrap's --as-pid-1): the kernel delivers it no signal from a
    # part's process but those it handles, and it handles none (Python's SIGINT handler too).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    before: Before | None = None  # the sandbox's writable files, and the zygote, before any part ran
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, PART_FDS)
        except OSError:
            os._exit(0)
        if not data:
            os._exit(0)
        message = json.loads(data)
        op = message.get("op")
        if op == "fork" and len(fds) == PART_FDS:
            if before is not None:
                end_every_other_process()
                if own_state() != before.state:  # a part lowered a limit of the zygote's: no putting it back
                    os._exit(0)  # the judge starts a fresh sandbox for the part
                restore(before)  # if it fails, the zygote ends: the judge starts a fresh sandbox
            reap()
            sys.stdout.flush()
            sys.stderr.flush()  # nothing of the zygote's in the part's stderr
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a runner of its own
                channel.close()
                os.setpgid(0, 0)  # the part's own process group: without control groups, what the judge kills
                os.dup2(fds[2], 2)
                os.close(fds[2])
                # Its own /dev/null on 0 and 1: the status of an open file (O_NONBLOCK,
                # O_APPEND, F_SETSIG) is shared by every process that holds it.
                null = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1):
                    os.dup2(null, fd)
                os.close(null)
                _fresh_random_state()
                return fds[0], fds[1]
            ENDED[pid] = None
            reply: dict[str, Any] = {"pid": pid}
        elif op == "warm":
            before = snapshot() if message.get("restore") is True else None
            reply = {"imported": warm(str(message.get("path", "")), [str(m) for m in message.get("modules", [])])}
        elif op == "wait":
            reply = {"code": wait(int(message.get("pid", 0)), float(message.get("timeout", 0)))}
        else:
            reply = {"error": f"unknown request {op!r}"}
        for fd in fds:  # the child has its copies; the judge keeps the other ends
            os.close(fd)
        channel.send(json.dumps(reply).encode())


def warm(path: str, modules: list[str]) -> list[str]:
    """Import ``modules`` (the set-up cells' imports), with ``path`` (course_lib's parent) first
    on ``sys.path``; the ones that imported. A module that fails here fails again, as it would
    have, when a cell imports it."""
    if path and path not in sys.path:
        sys.path.insert(0, path)
    _no_resource_tracker()
    done = []
    for name in modules:
        try:
            importlib.import_module(name)
            done.append(name)
        except BaseException:  # noqa: BLE001 - a rules stub, an uninstalled package: the cell will say
            pass
    return done


def _no_resource_tracker() -> None:
    """multiprocessing.shared_memory tells each segment it makes to a tracker process, which it
    starts as a program: none can start here, and the call would fail. Nothing needs tracking:
    what a part leaves in /dev/shm is removed when it ends."""
    from multiprocessing import resource_tracker

    resource_tracker.register = resource_tracker.unregister = lambda name, rtype: None


ENDED: dict[int, int | None] = {}  # the parts' runners: pid -> return code, once reaped


def reap(block: bool = False) -> None:
    """Every ended process the zygote is parent of (as the sandbox's pid 1, orphans too); with
    ``block``, every one of them, waiting for each to end."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in ENDED:
            ENDED[pid] = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def wait(pid: int, timeout: float) -> int | None:
    """The part's runner's return code (negative: the signal that ended it) once it has ended,
    waiting up to ``timeout`` seconds; ``None`` if it still runs."""
    deadline = time.monotonic() + timeout
    while True:
        reap()
        if pid not in ENDED:
            return -9  # not a runner of this zygote's, or reported already: nothing more is known
        if ENDED[pid] is not None:
            return ENDED.pop(pid)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.002)


def end_every_other_process() -> None:
    """Kill whatever an earlier part left running (the judge's control groups have already; this
    holds if they missed one): as the sandbox's pid 1, ``kill(-1)`` reaches every other process
    of the sandbox and none outside it."""
    if os.getpid() != 1:  # not the sandbox's init: -1 would mean every process of this user
        return
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        return
    reap(block=True)


def rw_tmpfs_mounts() -> tuple[list[str], set[str]]:
    """The sandbox's writable file systems in memory (/tmp, /dev/shm, the home: mount
    points of tmpfs, read-write) and every mount point (never removed, never looked into)."""
    writable, points = [], set()
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            before, _, after = line.partition(" - ")
            fields, kind = before.split(), after.split()
            point = fields[4].replace("\\040", " ")
            points.add(point)
            if kind and kind[0] == "tmpfs" and "rw" in fields[5].split(","):
                writable.append(point)
    return writable, points


@dataclass
class Before:
    """What the sandbox held before any part ran: every path on its writable file systems in
    memory with its mode, the times and inode flags of those file systems' roots, and what a
    process of the zygote's user may change of the zygote itself (:func:`own_state`)."""

    modes: dict[str, int]
    roots: dict[str, tuple[int, int, int]]
    state: tuple


def snapshot() -> Before:
    roots, points = rw_tmpfs_mounts()
    modes = {path: os.lstat(path).st_mode for root in roots for path in _walk(root, points)}
    times = {root: (os.stat(root).st_atime_ns, os.stat(root).st_mtime_ns, _flags(root)) for root in roots}
    return Before(modes, times, own_state())


def own_state() -> tuple:
    """What any process of the sandbox's user may change of the zygote (pid 1), and every later
    part's runner would inherit: its resource limits (lowered for good), its priority, its
    scheduling policy and its processors."""
    limits = tuple(
        resource.getrlimit(getattr(resource, name)) for name in sorted(dir(resource)) if name.startswith("RLIMIT_")
    )
    return limits, os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), sorted(os.sched_getaffinity(0))


GET_FLAGS, SET_FLAGS = 0x80086601, 0x40086602  # FS_IOC_GETFLAGS, FS_IOC_SETFLAGS (64-bit machines)


def _flags(folder: str, value: int | None = None) -> int:
    """The inode flags of ``folder`` (nodump, noatime, ...); with ``value``, set them first."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if value is not None:
            fcntl.ioctl(descriptor, SET_FLAGS, struct.pack("l", value))
        return struct.unpack("l", fcntl.ioctl(descriptor, GET_FLAGS, bytes(8)))[0]
    except OSError:
        return 0  # a file system without inode flags
    finally:
        os.close(descriptor)


def _walk(root: str, points: set[str]):
    """``root`` and what it holds, deepest first, not looking into other mount points."""
    try:
        names = os.listdir(root)
    except OSError:
        names = []
    for name in names:
        path = os.path.join(root, name)
        if path in points:
            continue
        if stat.S_ISDIR(os.lstat(path).st_mode):
            yield from _walk(path, points)
        else:
            yield path
    yield root


def restore(before: Before) -> None:
    """The sandbox's writable file systems in memory as :func:`snapshot` saw them: what a part
    made there removed, the modes of what was there put back, their roots' times and flags as
    they were; and no System V shared memory, semaphore or message queue left (they outlive
    their processes in the sandbox's IPC namespace, which all its parts share)."""
    roots, points = rw_tmpfs_mounts()
    for root in roots:
        _restore(root, before.modes, points)
        atime, mtime, flags = before.roots.get(root, (0, 0, 0))
        if _flags(root) != flags:
            _flags(root, flags)
        os.utime(root, ns=(atime, mtime))
    libc = ctypes.CDLL(None)
    for table, remove in (("shm", libc.shmctl), ("sem", libc.semctl), ("msg", libc.msgctl)):
        try:
            with open(f"/proc/sysvipc/{table}") as listed:
                idents = [int(line.split()[1]) for line in listed.readlines()[1:]]
        except (OSError, ValueError, IndexError):
            continue
        for ident in idents:  # semctl(id, semnum, cmd); shmctl and msgctl(id, cmd, buffer)
            arguments = (0, IPC_RMID) if table == "sem" else (IPC_RMID, None)
            remove(ident, *arguments)


def _restore(folder: str, before: dict[str, int], points: set[str]) -> None:
    os.chmod(folder, stat.S_IMODE(before.get(folder, 0)) | stat.S_IRWXU)  # listable, writable meanwhile
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if path in points:
            continue
        mode, was = os.lstat(path).st_mode, before.get(path)
        if was is not None and stat.S_IFMT(mode) == stat.S_IFMT(was):
            if stat.S_ISDIR(mode):
                _restore(path, before, points)
            elif not stat.S_ISLNK(mode) and mode != was:
                os.chmod(path, stat.S_IMODE(was))
        elif stat.S_ISDIR(mode):
            shutil.rmtree(path, onerror=_writable_then_retry)
        else:
            os.unlink(path)
    if folder in before:
        os.chmod(folder, stat.S_IMODE(before[folder]))


def _writable_then_retry(function: Any, path: str, error: Any) -> None:
    """rmtree's second try at ``path``: its folder (and it, if a folder) made writable."""
    for folder in {os.path.dirname(path), path}:
        if os.path.isdir(folder) and not os.path.islink(folder):
            os.chmod(folder, stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=_writable_then_retry)
    elif os.path.lexists(path):
        os.unlink(path)


def _fresh_random_state() -> None:
    """NumPy's global generator seeded afresh, as in a process started for this part (Python's
    ``random`` reseeds itself after a fork)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed()
        except (AttributeError, ValueError):
            pass
