"""The warm runner of a hand-in's sandbox: it forks a fresh runner for every graded part.

One sandbox per hand-in starts ``runner.py --zygote FD``: it forbids programs (its own seccomp
filter and Landlock domain, :mod:`course_grader.no_programs`), imports what the notebook's set-up
cells import (NumPy, course_lib, PyTorch: instructor's choices, never the student's), and then
only waits on a Unix socket for the judge. It runs no cell, the instructor's or the student's.

For each part the judge sends, with ``fork``, the part's own fresh pipes and stderr file
(SCM_RIGHTS); the zygote empties the sandbox's home and ``/tmp`` of what earlier parts wrote
(when they are in memory, as with control groups: otherwise the judge empties the home from
outside), forks, and answers with the child's pid in the sandbox. The child drops the socket
and returns the pipes to :func:`course_grader.runner.main`, which goes on exactly as a freshly
started runner: it waits for its job (the judge first moves it into the part's control groups),
sets its limits, installs a filter and a Landlock domain of its own, nested in the zygote's (so
that it can neither trace nor write the memory of the zygote or of another part's process), and
runs the cells. ``wait`` reaps a child and says how it ended.

The zygote never reads a message of a child's: a child can only kill it (same user), and then
the judge starts a fresh sandbox for the parts that are left.

Standard library only: it runs inside the sandbox, beside runner.py.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import socket
import stat
import sys
import time
from typing import Any

ZYGOTE = "--zygote"  # runner.py's flag: be the warm runner on this socket's descriptor
MESSAGE_BYTES = 1 << 16
PART_FDS = 3  # request (read end), reply (write end), stderr


def serve_forks(socket_fd: int) -> tuple[int, int]:
    """Answer the judge until it asks for a fork; return ``(request_fd, reply_fd)`` in the
    child. The zygote itself never returns: it exits when the judge closes the socket."""
    channel = socket.socket(fileno=socket_fd)
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
            for folder, keep in message.get("empty", []):
                empty(str(folder), {str(name) for name in keep})
            pid = os.fork()
            if pid == 0:
                channel.close()
                os.setpgid(0, 0)  # the part's own process group: without control groups, what the judge kills
                os.dup2(fds[2], 2)
                os.close(fds[2])
                _fresh_random_state()
                return fds[0], fds[1]
            reply: dict[str, Any] = {"pid": pid}
        elif op == "warm":
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
    done = []
    for name in modules:
        try:
            importlib.import_module(name)
            done.append(name)
        except BaseException:  # noqa: BLE001 - a rules stub, an uninstalled package: the cell will say
            pass
    return done


def wait(pid: int, timeout: float) -> int | None:
    """The child's return code (negative: the signal that ended it) once it has ended, waiting
    up to ``timeout`` seconds; ``None`` if it still runs."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return -9  # reaped already: nothing more is known
        if done:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.002)


def empty(folder: str, keep: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """Remove everything in ``folder`` but the names in ``keep`` (the data files, bound
    read-only), whatever permissions an earlier part's code gave it; the folder's own mode
    back to what it is at the start."""
    try:
        entries = os.listdir(folder)
    except PermissionError:
        os.chmod(folder, 0o700)
        entries = os.listdir(folder)
    for name in entries:
        if name in keep:
            continue
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=_writable_then_retry)
        else:
            try:
                os.unlink(path)
            except PermissionError:
                os.chmod(folder, stat.S_IRWXU)
                os.unlink(path)


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
