"""A throw-away class of real Unix users on this machine, set up by deploy/course_hub.py.

Needs root (it runs useradd/groupadd and starts programs as those users with runuser); every
user, group, process and folder it made is removed afterwards.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from paths import ROOT

BIN = Path(sys.executable).parent
COURSE_ID = "autodiff-from-scratch"


# useradd, groupadd, userdel and runuser live in sbin, which the PATH of a non-login root
# shell (CI's, say) may not name.
ADMIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin"


def admin(command: str) -> str:
    """The full path of a system administration command."""
    found = shutil.which(command, path=ADMIN_PATH)
    assert found, f"{command} is not installed (Debian's passwd and util-linux packages provide it)"
    return found


def run(*command: str, **kwargs) -> subprocess.CompletedProcess:
    command = (admin(command[0]), *command[1:])
    proc = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@dataclass
class UnixClass:
    """An instructor and students, each a Unix user with a home in ``base``."""

    base: Path
    instructor: str
    students: list[str]
    groups: dict[str, str]
    bin: Path = BIN
    transcript: list[str] = field(default_factory=list)

    @property
    def users(self) -> list[str]:
        return [self.instructor, *self.students]

    @property
    def exchange(self) -> Path:
        return self.base / "exchange"

    @property
    def roles(self) -> Path:
        return self.base / "etc"

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    def course(self) -> Path:
        return self.home(self.instructor) / "autodiff-course"

    def settings_env(self) -> dict[str, str]:
        """The deploy/course_hub.py settings of this class (its exchange, groups, roles)."""
        return {
            "AUTODIFF_EXCHANGE": str(self.exchange),
            "AUTODIFF_COURSE_ID": COURSE_ID,
            "AUTODIFF_ROLES": str(self.roles),
            "AUTODIFF_INSTRUCTORS": self.groups["instructor"],
            "AUTODIFF_STUDENTS": self.groups["student"],
        }

    def as_user(
        self, user: str, *command: str, cwd: Path | None = None, env: dict | None = None, check: bool = True
    ) -> subprocess.CompletedProcess:
        """``command`` run as ``user`` (runuser), in a clean environment like the hub's: the
        course's venv on PATH and the user's role configuration on JUPYTER_CONFIG_PATH."""
        role = "instructor" if user == self.instructor else "student"
        environment = {
            "HOME": str(self.home(user)),
            "USER": user,
            "LOGNAME": user,
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "JUPYTER_CONFIG_PATH": str(self.roles / role),
            **self.settings_env(),
            **(env or {}),
        }
        argv = [
            admin("runuser"),
            "-u",
            user,
            "--",
            "env",
            "-i",
            *(f"{k}={v}" for k, v in environment.items()),
            *command,
        ]
        proc = subprocess.run(argv, cwd=cwd or self.home(user), capture_output=True, text=True)
        self.transcript.append(f"{user}$ {' '.join(command)}  -> exit {proc.returncode}")
        if check:
            assert proc.returncode == 0, f"{user}$ {' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def processes(self) -> list[int]:
        uids = set()
        for user in self.users:
            try:
                uids.add(pwd.getpwnam(user).pw_uid)
            except KeyError:  # not created (a set-up that failed half-way)
                continue
        if not uids:
            return []
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and entry.stat().st_uid in uids:
                    pids.append(int(entry.name))
            except FileNotFoundError:
                continue
        return pids


def reachable_by_all(path: Path) -> bool:
    """Whether any user may execute ``path`` (every folder above it searchable by others)."""
    path = path.resolve()
    return bool(path.stat().st_mode & stat.S_IXOTH) and all(
        parent.stat().st_mode & stat.S_IXOTH for parent in path.parents
    )


def shared_venv(base: Path) -> Path:
    """A bin/ folder of the course's venv that every user can run.

    A hub installs the course with a Python all users can execute (deploy/README.md). A
    developer's venv may sit on an interpreter only root can reach (pyenv under /root): then
    the same packages are run by the system's Python of the same version, through a venv
    whose site-packages, share/ and etc/ are the course venv's."""
    site_packages = Path(sysconfig.get_paths()["purelib"])
    assert reachable_by_all(site_packages), (
        f"the course's venv ({site_packages}) is not readable by "
        "other users (a folder above it lacks o+x): clone the course under a folder all users can search"
    )
    if reachable_by_all(Path(sys.executable)):
        return BIN
    system = Path("/usr/bin/python3")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert system.exists() and run(str(system), "-c", "import sys; print(sys.version[:4])").stdout.strip().startswith(
        version
    ), f"the venv's Python is not executable by other users and {system} is not Python {version}"
    venv = base / "venv"
    run(str(system), "-m", "venv", "--without-pip", str(venv))
    (venv / "lib" / f"python{version}" / "site-packages" / "course-venv.pth").write_text(
        f"import site; site.addsitedir({str(site_packages)!r})\n"
    )
    for folder in ("share", "etc"):
        (venv / folder).symlink_to(Path(sys.prefix) / folder)
    for script in BIN.iterdir():
        if script.is_file() and not script.is_symlink() and script.read_bytes().startswith(f"#!{BIN}/python".encode()):
            text = script.read_text()
            (venv / "bin" / script.name).write_text(f"#!{venv / 'bin' / 'python'}\n" + text.split("\n", 1)[1])
            (venv / "bin" / script.name).chmod(0o755)
    return venv / "bin"


def make_class(n_students: int = 3) -> UnixClass:
    """Groups, users (homes in a fresh folder) and the instructor's clone of the course."""
    tag = "ad" + secrets.token_hex(3)
    base = Path(tempfile.mkdtemp(prefix=f"{tag}-"))
    os.chmod(base, 0o755)
    (base / "home").mkdir(mode=0o755)
    groups = {"instructor": f"{tag}-teach", "student": f"{tag}-learn"}
    names = ["ada", "bob", "eve", "kim", "lee"][:n_students]
    klass = UnixClass(base, f"{tag}-prof", [f"{tag}-{name}" for name in names], groups)
    try:
        klass.bin = shared_venv(base)
        for group in groups.values():
            run("groupadd", group)
        for user in klass.users:
            group = groups["instructor" if user == klass.instructor else "student"]
            run(
                "useradd",
                "--create-home",
                "--home-dir",
                str(base / "home" / user),
                "--gid",
                group,
                "--shell",
                "/bin/bash",
                user,
            )
        course = klass.course()
        course.mkdir()
        shutil.copy(ROOT / "nbgrader_config.py", course)
        shutil.copytree(ROOT / "course_grader", course / "course_grader", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(
            ROOT / "solutions" / "ps01_finite_differences", course / "solutions" / "ps01_finite_differences"
        )
        owner = pwd.getpwnam(klass.instructor)
        for path in [course, *course.rglob("*")]:
            os.chown(path, owner.pw_uid, owner.pw_gid)
    except BaseException:
        remove_class(klass)
        raise
    return klass


def remove_class(klass: UnixClass) -> None:
    """End the class's processes, then delete its users, groups and folders."""
    for attempt in range(20):
        pids = klass.processes()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM if attempt < 10 else signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.3)
    for user in klass.users:
        subprocess.run([admin("userdel"), user], capture_output=True)
    for group in klass.groups.values():
        subprocess.run([admin("groupdel"), group], capture_output=True)
    shutil.rmtree(klass.base, ignore_errors=True)
