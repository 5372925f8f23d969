"""Where a hand-in's code runs: a bubblewrap sandbox per hand-in, one fresh process per part.

Inside the sandbox the runner (:mod:`course_grader.runner`) sees a read-only Python
(interpreter, virtual environment, course_lib), a read-only root and ``/dev``, an empty ``/tmp``
and ``/dev/shm``, and one writable home folder with the assignment's data files and the
hand-in; nothing else of the grader's file
system (no ``solutions/``, no gradebook, no other student's work, no tests). It runs as an
unprivileged user in new user, PID, network, IPC and UTS namespaces: no network at all (not
even the host's loopback), no view of the grader's processes, an empty environment, and every
process it starts dies with it. It talks to the judge over two pipes; its standard input is
empty. The judge starts the hand-in's warm runner here (:meth:`Sandbox.start_zygote`), which
forks each part's runner (:mod:`course_grader.part_runs`). It starts no program: before the
first cell runs, the runner installs a seccomp filter on which the kernel refuses ``execve``
(:mod:`course_grader.no_programs`), so a hand-in can fork but cannot run ``tsort``, ``perl`` or
another Python. Where that filter cannot be installed (not Linux on x86_64 or aarch64, a kernel
without seccomp), grading refuses to run, as without bubblewrap.

**Classmates stay safe.** Each sandbox gets limits of its own that the kernel enforces
whoever runs the grader: where the grader may create control groups (root, cgroup v1 or v2,
as on a grading server or in CI), each sandbox and each part's runner is in groups of its own
with a process limit and a memory limit (:mod:`course_grader.control_groups`; ``/tmp`` and the
home are in memory, so they count); otherwise, as root, each grading slot
runs as its own unprivileged user, so the kernel's per-user process limit is that slot's
alone. Per-process limits (CPU time, address space, file size, processes) apply in every
case, and the whole sandbox is killed at its wall-clock limit.

Functions and modules an assignment asks students to write themselves (its ``rules``) are
absent from the course_lib the sandbox sees, and so are other packages that would do the work
(PyTorch, JAX, SciPy, NetworkX, ...) unless the assignment allows them
(:mod:`course_grader.rules`). The sandbox sees one Python, the grader's: every other package
folder or standard library in what it binds (the base interpreter's own site-packages, the
system's dist-packages) is an empty folder there.

Without bubblewrap, grading refuses to run unless the instructor passes the explicit unsafe
flag; then the same runner runs with the same limits and an empty environment, but with the
grader's own user, files and network (and it forbids programs where the machine allows).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_grader.control_groups import ControlGroups
from course_grader.limits import Limits
from course_grader.no_programs import MUST_FORBID, unavailable
from course_grader.rules import Rules, course_lib_root, course_lib_without, hidden_packages
from course_grader.zygote import ZYGOTE

RUNNER = Path(__file__).with_name("runner.py")
# What runner.py imports from beside it: all the grader that the sandbox sees.
RUNNER_MODULES = (
    "protocol.py",
    "plain_data.py",
    "endpoint.py",
    "kept_reads.py",
    "instance_attributes.py",
    "magics.py",
    "reference_classes.py",
    "pickled_stand_ins.py",
    "notebook.py",
    "no_programs.py",
    "standby.py",
    "zygote.py",
)
INSIDE_HOME = "/home/student"
INSIDE_GRADER = "/opt/course_grader"
INSIDE_LIB = "/opt/course_lib"
NOBODY = 65534
# The system's folders every sandbox sees read-only (a Python installed there, its standard
# library included, is seen through them).
SYSTEM_FOLDERS = [Path("/usr"), *(Path("/") / name for name in ("bin", "sbin", "lib", "lib32", "lib64"))]
FIRST_SLOT_UID = 61000  # unprivileged host users for the grading slots, when there are no cgroups


class SandboxMissing(RuntimeError):
    """No sandbox on this machine and the unsafe flag was not given."""


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def no_nested_user_namespaces(bwrap: str) -> list[str]:
    """bubblewrap's flag (0.8 and later) that keeps a sandbox from making user namespaces of its
    own: in one, a process has every capability, and with them it could make namespaces (each
    counted against the grader's user on the host, up to the host's limit), raw sockets whose
    memory no control group counts, and more. Empty for an older bubblewrap."""
    shown = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False).stdout
    return ["--disable-userns"] if "--disable-userns" in shown else []


PACKAGE_FOLDERS = ("site-packages", "dist-packages")


def package_folders() -> list[Path]:
    """The grader's package folders (the venv's, and any another venv's a .pth file added):
    the only ones whose packages the sandbox shows, less the hidden ones."""
    return sorted({Path(p).resolve() for p in sys.path if Path(p).name in PACKAGE_FOLDERS and Path(p).is_dir()})


def _python_roots() -> list[Path]:
    """Folders the interpreter, its standard library and the venv live in."""
    roots = {
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix).resolve(),
        Path(os.path.realpath(sys.executable)).parent.parent,
    }
    # Package folders a .pth file added from elsewhere (a venv layered on another one's
    # packages, as a shared hub venv can be); never the course folder on sys.path itself.
    roots |= set(package_folders())
    outside_usr = [r for r in roots if not r.is_relative_to("/usr")]
    # Bind only the outermost folders: a nested bind would be redundant.
    return sorted(r for r in outside_usr if not any(r != o and r.is_relative_to(o) for o in outside_usr))


def foreign_python_folders(roots: list[Path], shown: list[Path]) -> list[Path]:
    """Folders of other Pythons in what the sandbox binds: package folders that are not the
    grader's (the base interpreter's own site-packages, as a venv's ``sys.base_prefix`` is
    bound for its standard library; the system Python's dist-packages; the Pythons other
    programs bundle under /usr) and standard libraries that are not the grader's (graphlib sorts
    a graph). A student's code could put one on ``sys.path`` and import what the rules hide, so
    the sandbox mounts an empty folder over each."""
    found = set(_system_python_folders())
    for root in roots:
        found |= set(_python_folders_in(root))
    mine = {Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib")}
    foreign = {p for p in found if p not in mine and not any(s.is_relative_to(p) for s in shown)}
    return sorted(p for p in foreign if not any(p != o and p.is_relative_to(o) for o in foreign))


@functools.cache
def _system_python_folders() -> list[Path]:
    """The Python folders under /usr (and /lib, where it is not a link to /usr/lib): looked
    for once per process (about 0.4 s for 15,000 folders)."""
    system = [Path("/usr")] + [Path("/", n) for n in ("lib", "lib32", "lib64") if not Path("/", n).is_symlink()]
    return [folder for tree in system if tree.is_dir() for folder in _python_folders_in(tree)]


def _python_folders_in(tree: Path) -> list[Path]:
    """Package folders and standard libraries (``python3.11`` holding ``os.py``) in ``tree``."""
    found = []
    for folder, subfolders, _ in os.walk(tree):
        for name in subfolders[:]:
            if name in PACKAGE_FOLDERS:
                subfolders.remove(name)  # what a package folder holds is not looked through
                found.append(Path(folder, name).resolve())
            elif name.startswith("python") and os.path.isfile(os.path.join(folder, name, "os.py")):
                found.append(Path(folder, name).resolve())
    return found


@dataclass
class Ending:
    """How one sandboxed process ended."""

    returncode: int | None
    killed: bool  # by the grader, at the wall-clock limit or after the verdict
    stderr: bytes = b""

    def describe(self, where: str, sandbox: Sandbox) -> str:
        """A sentence on why the process ended without a verdict."""
        limits = sandbox.limits
        code = self.returncode
        if code is None or (self.killed and code in (-9, 137)):
            return f"{where} ran longer than the time limit and was stopped"
        # bubblewrap reports a child killed by signal n as exit status 128 + n
        signalled = -code if code < 0 else code - 128 if sandbox.isolated and code > 128 else 0
        if signalled:
            try:
                name = signal.Signals(signalled).name
            except ValueError:
                name = f"signal {signalled}"
            reason = {
                "SIGSEGV": "crashed (segmentation fault)",
                "SIGXCPU": f"used more than {limits.cpu_seconds} s of CPU time",
                "SIGXFSZ": f"wrote a file larger than {limits.file_bytes // 1024**2} MB",
                "SIGKILL": "was killed (out of memory?)",
                "SIGABRT": "aborted (out of memory?)",
            }.get(name, f"was ended by {name}")
            return f"{where} {reason}"
        return f"{where} ended the Python process itself (exit status {code}, e.g. os._exit or a crash)"


@dataclass
class SandboxRun:
    """One running sandbox: the judge writes requests, reads replies."""

    process: subprocess.Popen
    request_write: int
    reply_read: int
    stderr: object
    groups: list[Path] = field(default_factory=list)
    ending: Ending | None = None

    def finish(self, grace: float = 0.0) -> Ending:
        """Stop the sandbox (if it still runs after ``grace`` seconds) and everything in it;
        say how it ended."""
        if self.ending is not None:
            return self.ending
        try:
            code = self.process.wait(grace) if grace else self.process.poll()
        except subprocess.TimeoutExpired:
            code = None
        killed = code is None
        if killed:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # the sandbox's whole session
            except ProcessLookupError:
                pass
        code = self.process.wait()
        ControlGroups.remove(self.groups)
        self.stderr.seek(0)  # type: ignore[attr-defined]
        text = self.stderr.read(64 * 1024)  # type: ignore[attr-defined]
        self.stderr.close()  # type: ignore[attr-defined]
        self.ending = Ending(None if killed else code, killed, text)
        return self.ending


class Sandbox:
    """Starts the runner for one part, isolated by bubblewrap (or, if ``unsafe``, not)."""

    def __init__(
        self,
        limits: Limits | None = None,
        unsafe: bool = False,
        rules: Rules | None = None,
        slot: int = 0,
        view: dict[str, Any] | None = None,
    ):
        """``view``: another Sandbox's :meth:`view` for the same rules, taken as it is (the
        judge's, from the grader's: looking it up again costs about half a second)."""
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
        if self.isolated and (why := unavailable()):
            raise SandboxMissing(
                f"the sandbox cannot stop a hand-in from running other programs on this machine: {why}. "
                "Grade with a 64-bit Python on x86_64 or aarch64 Linux (every distribution's kernel has seccomp "
                "filters); only for hand-ins you trust, pass --unsafe-no-sandbox to grade without isolation."
            )
        self.slot = slot
        self.rules = rules or Rules()
        if view is not None:
            self.lib_parent, self.roots = Path(view["lib_parent"]), [Path(p) for p in view["roots"]]
            self.masked = [Path(p) for p in view["masked"]]
            self.hidden = [(Path(stub), Path(package)) for stub, package in view["hidden"]]
        else:
            rules = self.rules
            self.lib_parent = (
                course_lib_without(rules.functions, rules.modules) if rules.changes_course_lib else course_lib_root()
            )
            self.roots = _python_roots()
            shown = package_folders()
            self.masked = foreign_python_folders(self.roots, shown) if self.isolated else []
            self.hidden = hidden_packages(self.rules.packages, shown) if self.isolated else []
        self.groups = ControlGroups.find() if self.isolated else None

    def view(self) -> dict[str, Any]:
        """What the sandbox shows and hides (as plain data), for another Sandbox of the same rules."""
        return {
            "lib_parent": str(self.lib_parent),
            "roots": [str(p) for p in self.roots],
            "masked": [str(p) for p in self.masked],
            "hidden": [[str(stub), str(package)] for stub, package in self.hidden],
        }

    @property
    def description(self) -> str:
        return "bubblewrap sandbox" if self.isolated else "NO SANDBOX (--unsafe-no-sandbox)"

    @property
    def inside_course_lib_parent(self) -> str:
        return INSIDE_LIB if self.isolated else str(self.lib_parent)

    def command(self, scratch: Path, request_fd: int, reply_fd: int, zygote: int | None = None) -> list[str]:
        """The command that starts the runner on these pipes, or (``zygote``: a socket's
        descriptor) the hand-in's warm runner that forks one per part."""
        venv_python = Path(sys.prefix).resolve() / "bin" / "python"  # the bound path, if the venv is a link
        python = str(venv_python) if venv_python.exists() else sys.executable
        channel = [ZYGOTE, str(zygote)] if zygote is not None else [str(request_fd), str(reply_fd)]
        if not self.isolated:
            return [python, "-I", str(RUNNER), *channel]
        assert self.bwrap is not None
        cmd = [self.bwrap, "--unshare-all", "--unshare-user", *no_nested_user_namespaces(self.bwrap)]
        cmd += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
        if zygote is not None:  # the sandbox's pid 1, which its processes cannot kill (course_grader.zygote)
            cmd += ["--as-pid-1"]
        cmd += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv", "--ro-bind", "/usr", "/usr"]
        for path in SYSTEM_FOLDERS[1:]:
            if path.is_symlink():
                cmd += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                cmd += ["--ro-bind", str(path), str(path)]
        # An empty /tmp first: bubblewrap mounts in order, so Python or the venv living under
        # /tmp (a course cloned there) are bound on top of it, not hidden by it. With control
        # groups it is a tmpfs, counted in the group's memory; without, a folder of the scratch.
        if self.groups is not None:
            cmd += ["--tmpfs", "/tmp"]
        else:
            (scratch / ".tmp").mkdir(exist_ok=True)
            os.chmod(scratch / ".tmp", 0o1777)
            cmd += ["--bind", str(scratch / ".tmp"), "/tmp"]
        for root in self.roots:
            cmd += ["--ro-bind", str(root), str(root)]
        for folder in self.masked:  # other Pythons: an empty, read-only folder
            cmd += ["--tmpfs", str(folder), "--remount-ro", str(folder)]
        shown = [*self.roots, *SYSTEM_FOLDERS]
        for stub, package in self.hidden:  # after the environment: mounted over its packages
            seen = any(package.is_relative_to(root) for root in shown)
            if seen and not any(package.is_relative_to(folder) for folder in self.masked):
                cmd += ["--ro-bind", str(stub), str(package)]
        cmd += ["--ro-bind", str(self.lib_parent / "course_lib"), f"{INSIDE_LIB}/course_lib"]
        # /dev/shm (multiprocessing's locks) a file system of its own: a part can neither remove
        # it nor, /dev and the root being read-only at the end, any other path of the sandbox's.
        cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]
        if self.groups is not None:
            # Home in memory too (counted in the group): the data files are bound read-only into it.
            cmd += ["--tmpfs", INSIDE_HOME]
            for item in sorted(scratch.iterdir()):
                if item.is_file():
                    cmd += ["--ro-bind", str(item), f"{INSIDE_HOME}/{item.name}"]
        else:
            cmd += ["--bind", str(scratch), INSIDE_HOME]
        cmd += ["--chdir", INSIDE_HOME]
        for name in ("runner.py", *RUNNER_MODULES):
            cmd += ["--ro-bind", str(RUNNER.with_name(name)), f"{INSIDE_GRADER}/{name}"]
        # Writable: /tmp, /dev/shm, the home (and /dev/pts, /dev/null ...: devices must be).
        cmd += ["--remount-ro", "/dev", "--remount-ro", "/proc", "--remount-ro", "/"]
        for key, value in self.environment(INSIDE_HOME).items():
            cmd += ["--setenv", key, value]
        cmd += [python, "-I", f"{INSIDE_GRADER}/runner.py", *channel, MUST_FORBID]
        return self.confined(cmd)

    def confined(self, cmd: list[str]) -> list[str]:
        """Without control groups, as root: run as this slot's own unprivileged user, so the
        kernel's per-user process limit holds for this sandbox alone."""
        if self.groups is None and os.geteuid() == 0 and shutil.which("setpriv"):
            uid = str(FIRST_SLOT_UID + self.slot)
            return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
        return cmd

    @staticmethod
    def environment(home: str) -> dict[str, str]:
        return {
            "HOME": home,
            "PATH": f"{Path(sys.prefix).resolve() / 'bin'}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }

    def start(self, scratch: Path) -> SandboxRun:
        """Start the runner with ``scratch`` as its working folder; it waits for its job."""
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        process, stderr, groups = self._launch(scratch, (request_read, reply_write))
        return SandboxRun(process, request_write, reply_read, stderr, groups)

    def start_zygote(self, scratch: Path) -> tuple[SandboxRun, socket.socket]:
        """Start the hand-in's warm runner (:mod:`course_grader.zygote`) with ``scratch`` as
        its home; the run (no pipes of its own) and the judge's end of its socket."""
        judge_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process, stderr, groups = self._launch(scratch, (zygote_end.fileno(),), zygote=True)
        finally:
            zygote_end.close()
        return SandboxRun(process, -1, -1, stderr, groups), judge_end

    def _launch(
        self, scratch: Path, fds: tuple[int, ...], zygote: bool = False
    ) -> tuple[subprocess.Popen, Any, list[Path]]:
        """Start bubblewrap (or the bare runner) in its control groups, passing ``fds``, which
        are closed here."""
        groups = self.groups.make(self.limits) if self.groups is not None else []
        cmd = self.command(scratch, *fds) if not zygote else self.command(scratch, -1, -1, zygote=fds[0])
        if groups:  # join the groups before anything of the sandbox starts
            joins = " ".join(f"echo $$ > {g}/cgroup.procs;" for g in groups)
            cmd = ["/bin/sh", "-c", f'{joins} exec "$@"', "sandbox", *cmd]
        if not self.isolated or self.groups is None:
            os.chmod(scratch, 0o777)
        stderr = tempfile.TemporaryFile()
        process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            pass_fds=fds,
            env=self.environment(str(scratch)),
            cwd=scratch,
            start_new_session=True,
        )
        if not zygote:
            for fd in fds:
                os.close(fd)
        return process, stderr, groups
