"""The judge's side of a hand-in's warm sandbox: one sandbox, a fresh forked runner per part.

Starting a sandbox and a Python that imports NumPy (or PyTorch) costs far more than most
parts' tests, so the judge starts one sandbox per hand-in, whose warm runner
(:mod:`course_grader.zygote`) forks the runner of each part. Each part still gets what a fresh
process had: its own pipes (passed over the zygote's socket, so a part that died mid-message
leaves the next part's channel clean), its own control groups (the judge moves the forked
runner into them before sending its job, and kills everything in them at the part's end), its
own limits, filter and Landlock domain (set by the runner itself), an empty ``/tmp`` and a home
holding only the released files and the hand-in. If the zygote is gone, the next part starts a
fresh sandbox: a crash costs only its own part.

Only a sandbox with control groups and Landlock forks more than one part: there the judge can
kill all that a part started, /tmp and the home are in the sandbox's memory, where the zygote
puts them back, and no part can trace the zygote. Without them (or bubblewrap) every part gets
a fresh sandbox with a fresh home folder,
as slow as before and as safe: the judge never reuses, empties or writes into a folder that a
part's code could have changed (where it might have left a link to a file of the judge's).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from course_grader.control_groups import ControlGroups
from course_grader.meter import descendants, start_time
from course_grader.no_programs import landlock_abi
from course_grader.sandbox import Ending, Sandbox, SandboxRun

ANSWER_SECONDS = 10.0  # the most the zygote may take to fork or reap; then it is taken for gone
ALWAYS_WARM = ("numpy",)  # the runner's own import (protocol.py, plain_data.py, endpoint.py)


class SandboxBroken(RuntimeError):
    """No runner could be started for a part (the sandbox itself fails): the grading machinery's."""


def imported_modules(sources: list[str]) -> list[str]:
    """The modules the instructor's set-up cells import, in order of first import."""
    found = dict.fromkeys(ALWAYS_WARM)
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(dict.fromkeys(alias.name for alias in node.names))
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found[node.module] = None
    return list(found)


@dataclass
class PartRun:
    """One part's runner, forked by the zygote: the judge's ends of its pipes."""

    warm: WarmSandbox
    inner: int  # its pid in the sandbox, as the zygote knows it
    pid: int  # its pid on the host, as the judge and the meter know it
    started: int  # its start time: a later process with the same pid is never killed
    request_write: int
    reply_read: int
    stderr: IO[bytes]
    groups: list[Path]
    ending: Ending | None = None

    def finish(self, grace: float = 0.0) -> Ending:
        """Stop the part's runner (if it still runs after ``grace`` seconds) and everything it
        started; say how it ended. The zygote lives on for the next part."""
        if self.ending is not None:
            return self.ending
        killed = False
        try:
            code = self.warm.wait(self.inner, grace)
            if code is None:
                killed = True
                self._kill()
                code = self.warm.wait(self.inner, ANSWER_SECONDS)
        except SandboxBroken:  # the zygote is gone, and with it (bubblewrap's init ends) the part
            self._kill()
            gone = self.warm.close()
            code = gone.returncode if gone and gone.returncode is not None else -signal.SIGKILL
        ControlGroups.remove(self.groups)
        self.stderr.seek(0)
        text = self.stderr.read(64 * 1024)
        self.stderr.close()
        self.ending = Ending(None if killed else code, killed, text)
        return self.ending

    def _kill(self) -> None:
        """Everything in the part's control groups; without them, its process group (the
        zygote has not reaped it yet, so its pid is still its own)."""
        ControlGroups.remove(self.groups)
        if start_time(self.pid) == self.started:
            for kill in (os.killpg, os.kill):
                try:
                    kill(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


class WarmSandbox:
    """The hand-in's sandbox with its zygote, started at the first part (and again after the
    zygote is gone); :meth:`start` forks the runner of one part."""

    def __init__(self, sandbox: Sandbox, folder: Path, files: Path, modules: list[str]):
        self.sandbox, self.folder, self.files, self.modules = sandbox, folder, files, modules
        self.run: SandboxRun | None = None
        self.channel: socket.socket | None = None
        self.home = folder
        self.starts = 0
        # With control groups the home and /tmp are in memory, put back by the zygote, and
        # Landlock keeps each part from tracing the zygote; otherwise each part gets a fresh
        # sandbox (its home and /tmp a new folder of the judge's).
        self.reused = sandbox.isolated and sandbox.groups is not None and landlock_abi() > 0

    def start(self) -> PartRun:
        """A fresh runner for one part, waiting for its job; a fresh sandbox if the zygote is
        gone. :class:`SandboxBroken` when a fresh sandbox cannot fork one either."""
        for attempt in range(2):
            try:
                if self.run is None or self.channel is None or attempt or not self.reused:
                    self.close()
                    self._start_sandbox()
                return self._fork()
            except (OSError, ValueError, KeyError, SandboxBroken):
                continue
        gone = self.close()
        first = gone.stderr.decode("utf-8", "replace").strip().splitlines()[:1] if gone else []
        raise SandboxBroken(first[0] if first else "the sandbox's runner did not start")

    def _start_sandbox(self) -> None:
        self.starts += 1
        self.home = self.folder / f"sandbox-{self.starts}"
        self.home.mkdir()
        self._fill_home()
        self.run, self.channel = self.sandbox.start_zygote(self.home)
        self.channel.settimeout(self.sandbox.limits.wall_seconds)  # PyTorch takes seconds to import
        path = self.sandbox.inside_course_lib_parent
        self._ask({"op": "warm", "path": path, "modules": self.modules, "restore": self.reused})
        self.channel.settimeout(ANSWER_SECONDS)

    def _fill_home(self) -> None:
        """The judge's new home folder for the sandbox: the released files and the hand-in."""
        os.chmod(self.home, 0o755 if self.reused else 0o777)
        for source in sorted(self.files.iterdir()):
            if source.is_file():
                shutil.copyfile(source, self.home / source.name)

    def _fork(self) -> PartRun:
        assert self.run is not None and self.channel is not None
        if self.run.process.poll() is not None:
            raise SandboxBroken("the sandbox ended")
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        stderr = tempfile.TemporaryFile()
        groups: list[Path] = []
        try:
            fds = (request_read, reply_write, stderr.fileno())
            inner = int(self._ask({"op": "fork"}, fds)["pid"])
            pid = self._host_pid(inner)
            if self.sandbox.groups is not None:
                groups = self.sandbox.groups.make(self.sandbox.limits)
                for group in groups:  # before it reads its job: nothing of the student's has run
                    (group / "cgroup.procs").write_text(str(pid))
        except BaseException:
            ControlGroups.remove(groups)
            for fd in (request_write, reply_read):
                os.close(fd)
            stderr.close()
            raise
        finally:
            os.close(request_read)
            os.close(reply_write)
        return PartRun(self, inner, pid, start_time(pid), request_write, reply_read, stderr, groups)

    def _host_pid(self, inner: int) -> int:
        """The host's pid of the sandbox's process ``inner`` (its last NSpid, one namespace
        below the judge's), among the sandbox's processes."""
        assert self.run is not None
        if not self.sandbox.isolated:
            return inner
        depth = len(_ns_pids(os.getpid())) + 1
        for pid in descendants(self.run.process.pid):
            found = _ns_pids(pid)
            if len(found) == depth and found[-1] == inner:
                return pid
        raise SandboxBroken(f"the sandbox's process {inner} is not to be found")

    def wait(self, inner: int, timeout: float) -> int | None:
        """The part's runner's return code once ended (waiting up to ``timeout`` s), ``None``
        while it runs; :class:`SandboxBroken` when the zygote no longer answers."""
        try:
            code = self._ask({"op": "wait", "pid": inner, "timeout": timeout}, timeout=timeout + ANSWER_SECONDS)["code"]
        except (OSError, ValueError, KeyError) as error:
            raise SandboxBroken(f"the zygote does not answer ({error})") from None
        return code if type(code) is int else None

    def _ask(self, message: dict, fds: tuple[int, ...] = (), timeout: float | None = None) -> dict[str, Any]:
        if self.channel is None:
            raise SandboxBroken("the sandbox was stopped")
        if timeout is not None:
            self.channel.settimeout(timeout)
        try:
            socket.send_fds(self.channel, [json.dumps(message).encode()], list(fds))
            data = self.channel.recv(1 << 16)
        finally:
            if timeout is not None:
                self.channel.settimeout(ANSWER_SECONDS)
        if not data:
            raise SandboxBroken("the zygote is gone")
        reply = json.loads(data)
        if type(reply) is not dict or "error" in reply:
            raise SandboxBroken(f"the zygote answered {reply!r:.200}")
        return reply

    def close(self) -> Ending | None:
        """Stop the sandbox and everything in it; how it ended (``None``: it never started)."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        return self.run.finish(grace=0.0) if self.run is not None else None


def _ns_pids(pid: int) -> list[int]:
    """``pid``'s pids in its pid namespaces, the host's first (NSpid in /proc/<pid>/status)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return [int(n) for n in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []
