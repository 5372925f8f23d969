"""The course's JupyterHub on one server: settings, roles, and the steps that set the machine up.

Everything is read from environment variables with the defaults below, by this script, by
``jupyterhub_config.py`` and (through the hub) by each user's nbgrader configuration:

    AUTODIFF_EXCHANGE      nbgrader's exchange (root 1777 sticky)     /srv/nbgrader/exchange
    AUTODIFF_COURSE_ID     the course, as in nbgrader_config.py        autodiff-from-scratch
    AUTODIFF_ROLES         where the roles' Jupyter configs go         /etc/jupyter/autodiff
    AUTODIFF_INSTRUCTORS   Unix group of the instructors               autodiff-instructors
    AUTODIFF_STUDENTS      Unix group of the students                  autodiff-students

As root, once (and again after changing a role's files; it is idempotent):

    python3 deploy/course_hub.py apply
"""

from __future__ import annotations

import argparse
import grp
import os
import pwd
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROLES = ("student", "instructor")


@dataclass(frozen=True)
class Settings:
    exchange: Path = field(default_factory=lambda: Path(os.environ.get("AUTODIFF_EXCHANGE", "/srv/nbgrader/exchange")))
    course_id: str = field(default_factory=lambda: os.environ.get("AUTODIFF_COURSE_ID", "autodiff-from-scratch"))
    roles: Path = field(default_factory=lambda: Path(os.environ.get("AUTODIFF_ROLES", "/etc/jupyter/autodiff")))
    instructors: str = field(default_factory=lambda: os.environ.get("AUTODIFF_INSTRUCTORS", "autodiff-instructors"))
    students: str = field(default_factory=lambda: os.environ.get("AUTODIFF_STUDENTS", "autodiff-students"))

    def environment(self) -> dict[str, str]:
        """What a user's server needs to find the exchange and the course."""
        return {"AUTODIFF_EXCHANGE": str(self.exchange), "AUTODIFF_COURSE_ID": self.course_id}


def members(group: str) -> set[str]:
    """The users of a Unix group: its listed members and those whose primary group it is."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return set()
    return set(entry.gr_mem) | {user.pw_name for user in pwd.getpwall() if user.pw_gid == entry.gr_gid}


def role_of(user: str, settings: Settings) -> str | None:
    """'instructor', 'student' or None (not in the course: no server)."""
    if user in members(settings.instructors):
        return "instructor"
    if user in members(settings.students):
        return "student"
    return None


def apply(settings: Settings) -> list[str]:
    """Set the machine up for the course; returns what it did, one line per step."""
    if os.geteuid() != 0:
        raise SystemExit(
            "ERROR: run as root (it creates the exchange, sets homes' modes and writes "
            f"{settings.roles}): sudo python3 {sys.argv[0]} apply"
        )
    instructors = sorted(members(settings.instructors))
    if not instructors:
        raise SystemExit(
            f"ERROR: the group {settings.instructors!r} has no members: add the instructors "
            f"first (groupadd {settings.instructors}; usermod -aG {settings.instructors} NAME)"
        )
    done = []
    # The exchange's root: everyone may create, nobody may remove or rename what others made.
    settings.exchange.mkdir(parents=True, exist_ok=True)
    os.chmod(settings.exchange, 0o1777)
    done.append(f"{settings.exchange}: mode 1777 (sticky, world-writable)")
    # The course's folder, pre-created and owned by the first instructor: nbgrader's release
    # makes inbound/ (students write, cannot list), outbound/ and feedback/ in it.
    course = settings.exchange / settings.course_id
    course.mkdir(exist_ok=True)
    owner = pwd.getpwnam(instructors[0])
    os.chown(course, owner.pw_uid, owner.pw_gid)
    os.chmod(course, 0o755)
    done.append(f"{course}: owned by {instructors[0]}, mode 755")
    # Instructors' homes hold solutions, hidden tests and the gradebook: theirs alone.
    for name in instructors:
        home = Path(pwd.getpwnam(name).pw_dir)
        if home.is_dir():
            os.chmod(home, 0o700)
            done.append(f"{home}: mode 700 ({name} is an instructor)")
    # Each role's Jupyter configuration (server extensions, JupyterLab plug-ins, nbgrader).
    for role in ROLES:
        target = settings.roles / role
        shutil.copytree(HERE / "roles" / role, target, dirs_exist_ok=True)
        for path in [target, *target.rglob("*")]:
            os.chown(path, 0, 0)
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        done.append(f"{target}: the {role}s' Jupyter configuration (root-owned, read-only)")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["apply"])
    parser.parse_args(argv)
    for line in apply(Settings()):
        print("==>", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
