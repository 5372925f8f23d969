"""The gradebook: one URL for every tool, and the class list imported from the LMS.

``DB_URL`` (an environment variable; ``make ... DB_URL=...``) names the gradebook. Unset, it is
the sqlite file ``gradebook.db`` in the course root; for a team or a hub it is PostgreSQL, read
with psycopg 3 (requirements-instructor.txt). Importing the roster before grading creates every
student once, so graders working in parallel never race to create the same student.

    python -m course_grader.database roster students.csv    (what `make roster` runs)
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

ROOT = Path(__file__).resolve().parents[1]
PSYCOPG3 = "postgresql+psycopg"


def gradebook_url(url: str | None, root: Path | str = ROOT) -> str:
    """The SQLAlchemy URL of the gradebook: ``url``, or the sqlite file in ``root`` when unset.

    PostgreSQL works in either spelling: SQLAlchemy reads a bare ``postgresql://`` as psycopg2,
    which the course does not install, so it becomes ``postgresql+psycopg://`` (psycopg 3)."""
    if not url or not url.strip():
        return f"sqlite:///{Path(root).resolve() / 'gradebook.db'}"
    try:
        parsed = make_url(url.strip())
    except ArgumentError:
        raise ValueError(
            f"DB_URL={url!r} is not a database URL. Use e.g. "
            f"{PSYCOPG3}://user:password@host/autodiff or sqlite:///path/gradebook.db"
        ) from None
    if parsed.drivername in {"postgresql", "postgres"}:
        parsed = parsed.set(drivername=PSYCOPG3)
    elif parsed.drivername.startswith("postgresql+") and parsed.drivername != PSYCOPG3:
        driver = parsed.drivername.split("+", 1)[1]
        raise ValueError(
            f"DB_URL asks for the PostgreSQL driver {driver!r}, which the course does not "
            f"install. Write {PSYCOPG3}://... (or postgresql://...): psycopg 3 comes "
            "with requirements-instructor.txt (make setup-instructor)."
        )
    if parsed.drivername == PSYCOPG3 and importlib.util.find_spec("psycopg") is None:
        raise ValueError(
            "DB_URL names a PostgreSQL gradebook, but its driver (psycopg 3) is not installed here: "
            "run `make setup-instructor` first (it installs requirements-instructor.txt)"
        )
    return parsed.render_as_string(hide_password=False)


def course_config(root: Path = ROOT):
    """nbgrader's configuration of the course (``nbgrader_config.py``), as nbgrader reads it."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


# -- the class list ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None


# Column names as LMSs export them (Moodle, Canvas, Blackboard, a hand-made sheet), in order of
# preference; matched without regard to case or surrounding spaces.
ID_COLUMNS = ("username", "sis login id", "login id", "login", "student_id", "student id", "user id")
FIRST_COLUMNS = ("first name", "first_name", "given name", "firstname")
LAST_COLUMNS = ("last name", "last_name", "surname", "family name", "lastname")
EMAIL_COLUMNS = ("email address", "email", "e-mail")
FULL_NAME_COLUMN = "student"  # Canvas: "Last, First"


class RosterError(ValueError):
    """A class list that cannot be imported as it is."""


def _pick(header: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((header[name] for name in names if name in header), None)


def read_roster(path: Path, id_column: str | None = None) -> list[Student]:
    """The students of an LMS's CSV export; every problem of the file is reported at once."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    columns = rows[0].keys() if rows else []
    header = {name.strip().lower(): name for name in columns if name}
    id_col = header.get(id_column.strip().lower()) if id_column else _pick(header, ID_COLUMNS)
    if id_col is None:
        wanted = repr(id_column) if id_column else "one of " + ", ".join(repr(n) for n in ID_COLUMNS)
        raise RosterError(
            f"{path}: no student id column ({wanted}); its columns are {list(columns)}. "
            "Name the column with the login students use on the hub: --id-column NAME."
        )
    first, last = _pick(header, FIRST_COLUMNS), _pick(header, LAST_COLUMNS)
    full, email = header.get(FULL_NAME_COLUMN), _pick(header, EMAIL_COLUMNS)
    students: list[Student] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        sid = (row.get(id_col) or "").strip()
        if not sid:
            if "points possible" in " ".join(str(v) for v in row.values()).lower():
                continue  # Canvas's second row: the maximum score of each column
            problems.append(f"line {line}: empty {id_col!r}")
            continue
        if any(ch in sid for ch in "/+*\\") or sid.startswith(".") or any(ch.isspace() for ch in sid):
            problems.append(
                f"line {line}: {sid!r} cannot be a student id (it names folders and "
                "exchange files: no spaces, '/', '\\', '+', '*' or leading '.')"
            )
            continue
        if sid in seen:
            problems.append(f"line {line}: {sid!r} again (first on line {seen[sid]})")
            continue
        seen[sid] = line
        given, family = (row.get(first) or "").strip(), (row.get(last) or "").strip()
        if not (given or family) and full and "," in row.get(full, ""):
            family, given = (part.strip() for part in row[full].split(",", 1))
        students.append(Student(sid, given or None, family or None, (row.get(email) or "").strip() or None))
    if problems:
        raise RosterError(f"{path}: nothing imported, fix these rows first:\n  " + "\n  ".join(problems))
    if not students:
        raise RosterError(f"{path}: no students in the file")
    return students


def import_roster(students: list[Student], db_url: str, course_id: str) -> dict[str, int]:
    """Create or update every student in the gradebook; returns how many were added, updated
    and already as listed (a second import of the same list changes nothing)."""
    from nbgrader.api import Gradebook, MissingEntry

    # nbgrader creates a new gradebook's tables by running the `alembic` command: its own.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    counts = {"added": 0, "updated": 0, "unchanged": 0}
    with Gradebook(gradebook_url(db_url), course_id) as gradebook:
        for student in students:
            fields = {"first_name": student.first_name, "last_name": student.last_name, "email": student.email}
            try:
                known = gradebook.find_student(student.id)
            except MissingEntry:
                counts["added"] += 1
            else:
                same = all(getattr(known, key) == value for key, value in fields.items())
                counts["unchanged" if same else "updated"] += 1
            gradebook.update_or_create_student(student.id, **fields)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_grader.database",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    roster = commands.add_parser("roster", help="import the LMS's class list (CSV) into the gradebook")
    roster.add_argument("csv", type=Path)
    roster.add_argument("--id-column", help="the column with the students' logins (default: guessed)")
    roster.add_argument("--root", type=Path, default=ROOT, help="the course root (nbgrader_config.py)")
    args = parser.parse_args(argv)
    try:
        students = read_roster(args.csv, args.id_column)
        config = course_config(args.root)
        db_url = config.CourseDirectory.db_url
        counts = import_roster(students, db_url, config.CourseDirectory.course_id)
    except (OSError, ValueError) as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    where = make_url(gradebook_url(db_url)).render_as_string(hide_password=True)
    print(f"roster: {len(students)} students into {where}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
