"""Where a hand-in's code runs: a bubblewrap sandbox, one fresh process per graded part.

Inside the sandbox the process sees a read-only Python (interpreter, virtual environment,
course_lib), an empty ``/tmp``, and one writable scratch folder holding a copy of the
hand-in; nothing else of the grader's file system (no ``solutions/``, no gradebook, no other
student's work). It runs as the unprivileged user 65534 in new user, PID, network, IPC and
UTS namespaces: no network at all (not even the host's loopback), no view of the grader's
processes, an empty environment, and every process it starts dies with it. Resource limits
(CPU time, address space, file size, processes) are set before bubblewrap starts, and the
grader kills the whole sandbox when the wall-clock limit is reached.

Without bubblewrap, grading refuses to run unless the instructor passes the explicit unsafe
flag; then the same harness runs with the same limits and an empty environment, but with
the grader's own user, files and network.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import course_lib

HARNESS = Path(__file__).with_name("harness.py")
INSIDE_HOME = "/home/student"
INSIDE_HARNESS = "/opt/course_grader/harness.py"
NOBODY = 65534


class SandboxMissing(RuntimeError):
    """No sandbox on this machine and the unsafe flag was not given."""


@dataclass(frozen=True)
class Limits:
    """Per-process limits of one graded part."""

    wall_seconds: float = 90.0
    cpu_seconds: int = 90
    memory_bytes: int = 3 * 1024**3
    file_bytes: int = 64 * 1024**2
    processes: int = 64
    output_bytes: int = 1024**2

    def rlimits(self) -> dict[str, int]:
        """The kernel's resource limits, by ``resource`` name, for the harness to set on itself.

        The harness sets them (soft = hard, so answer code cannot raise them) before it runs
        anything of the student's. Setting them from the grader between fork and exec
        (``preexec_fn``) would be unsafe: the grader runs hand-ins from several threads, and
        a fork while another thread holds the import or logging lock can hang the child
        and then the grader (seen with ``make autograde JOBS=2``).
        """
        return {
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_AS": self.memory_bytes,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NPROC": self.processes,
            "RLIMIT_CORE": 0,
        }


@dataclass
class Run:
    """What one sandboxed process left behind."""

    returncode: int
    result: bytes  # everything the harness wrote on its result channel
    stderr: bytes  # the first output_bytes of the process's own stderr (diagnostics)
    timed_out: bool


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def course_lib_root() -> Path:
    """The folder holding the ``course_lib`` package the grader grades against."""
    return Path(course_lib.__file__).resolve().parent.parent


def _python_roots() -> list[Path]:
    """Folders the interpreter, its standard library, the venv and course_lib live in."""
    roots = {
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix).resolve(),
        Path(os.path.realpath(sys.executable)).parent.parent,
        course_lib_root() / "course_lib",
    }
    # Package folders a .pth file added from elsewhere (a venv layered on another one's
    # packages, as a shared hub venv can be); never the course folder on sys.path itself.
    roots |= {Path(p).resolve() for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}
    outside_usr = [r for r in roots if not r.is_relative_to("/usr")]
    # Bind only the outermost folders: a nested bind would be redundant.
    return sorted(r for r in outside_usr if not any(r != o and r.is_relative_to(o) for o in outside_usr))


class Sandbox:
    """Runs the grading harness on one job, isolated by bubblewrap (or, if ``unsafe``, not)."""

    def __init__(self, limits: Limits | None = None, unsafe: bool = False):
        self.limits = limits or Limits()
        self.bwrap = find_bwrap()
        self.unsafe = unsafe
        if self.bwrap is None and not unsafe:
            raise SandboxMissing(
                "bubblewrap (bwrap) is not installed, so hand-ins would run with your user, files, "
                "network and environment. Install it (Debian/Ubuntu: sudo apt-get install bubblewrap; "
                "make autograde does this), or grade on a Linux machine that has it. Only for hand-ins "
                "you trust, pass --unsafe-no-sandbox to grade without isolation."
            )
        self.isolated = self.bwrap is not None and not unsafe

    @property
    def description(self) -> str:
        return "bubblewrap sandbox" if self.isolated else "NO SANDBOX (--unsafe-no-sandbox)"

    def command(self, scratch: Path) -> list[str]:
        python = os.path.realpath(sys.executable) if self.isolated else sys.executable
        venv_python = str(Path(sys.prefix) / "bin" / "python")
        if not self.isolated:
            return [venv_python if Path(venv_python).exists() else python, "-I", str(HARNESS)]
        assert self.bwrap is not None  # isolated means bubblewrap was found
        cmd = [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--uid",
            str(NOBODY),
            "--gid",
            str(NOBODY),
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for name in ("bin", "sbin", "lib", "lib32", "lib64"):
            path = Path("/") / name
            if path.is_symlink():
                cmd += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                cmd += ["--ro-bind", str(path), str(path)]
        # An empty /tmp first: bubblewrap mounts in order, so Python, the venv or course_lib
        # living under /tmp (a course cloned there) are bound on top of it, not hidden by it.
        cmd += ["--tmpfs", "/tmp"]
        for root in _python_roots():
            cmd += ["--ro-bind", str(root), str(root)]
        cmd += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--bind",
            str(scratch),
            INSIDE_HOME,
            "--chdir",
            INSIDE_HOME,
            "--ro-bind",
            str(HARNESS),
            INSIDE_HARNESS,
            "--setenv",
            "HOME",
            INSIDE_HOME,
            "--setenv",
            "PATH",
            f"{Path(sys.prefix) / 'bin'}:/usr/bin:/bin",
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--setenv",
            "MPLBACKEND",
            "Agg",
            "--setenv",
            "OPENBLAS_NUM_THREADS",
            "1",
            "--setenv",
            "OMP_NUM_THREADS",
            "1",
        ]
        return cmd + [venv_python if Path(venv_python).exists() else python, "-I", INSIDE_HARNESS]

    def run(self, job: dict, scratch: Path) -> Run:
        """Run the harness on ``job`` (sent on stdin) with ``scratch`` as its working folder."""
        import json

        read_end, write_end = os.pipe()
        # The harness imports the very course_lib the grader grades against (bound read-only),
        # whatever the venv's own path configuration says (an editable install elsewhere, say).
        lib_parent = str(course_lib_root())
        message = json.dumps(
            dict(job, result_fd=write_end, rlimits=self.limits.rlimits(), course_lib_parent=lib_parent)
        ).encode()
        env = {
            "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(scratch),
            "MPLBACKEND": "Agg",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        limits = self.limits
        with tempfile.TemporaryFile() as stderr, tempfile.TemporaryFile() as stdin:
            stdin.write(message)
            stdin.seek(0)
            proc = subprocess.Popen(
                self.command(scratch),
                stdin=stdin,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                pass_fds=(write_end,),
                env=env,
                cwd=scratch,
                start_new_session=True,
            )
            os.close(write_end)
            result, timed_out = _read_until(read_end, proc, limits)
            stderr.seek(0)
            return Run(proc.returncode, result, stderr.read(limits.output_bytes), timed_out)


def _read_until(fd: int, proc: subprocess.Popen, limits: Limits) -> tuple[bytes, bool]:
    """Read the result channel until the process ends or the wall-clock limit; kill on time-out."""
    import selectors
    import time

    deadline = time.monotonic() + limits.wall_seconds
    chunks, size, timed_out = [], 0, False
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not sel.select(timeout=min(left, 1.0)):
                if proc.poll() is not None:
                    break
                continue
            data = os.read(fd, 65536)
            if not data:
                break
            if size < limits.output_bytes:
                chunks.append(data[: limits.output_bytes - size])
                size += len(data)
    os.close(fd)
    if not timed_out:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    if timed_out or proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the sandbox's whole session, daemons included
        except ProcessLookupError:
            pass
    proc.wait()
    return b"".join(chunks), timed_out
