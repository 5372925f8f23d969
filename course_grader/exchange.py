"""nbgrader's exchange collect, taking each hand-in only from the student it is named after.

On a hub every student is a Unix user and a hand-in is a folder in the exchange's ``inbound``
named ``<student>+<assignment>+<time>+<random>``. nbgrader trusts that name: a student may run
``nbgrader submit ps01 --student <classmate>`` (or set ``USER``), and the forged folder, being
the latest, is collected and graded as the classmate's; a submitted folder is also left
world-writable, so a classmate who learns its name can swap files in it. nbgrader only warns.

Here a folder is genuine only when it belongs to the Unix user it names (its uid); of a student's folders
the latest genuine one is collected, and inside it only files that student owns (no symbolic
links: collect runs as the instructor and would copy what a link points to). Everything else
is copied to ``quarantine/`` in the course root for a human, and collect exits with an error
naming it. Enabled by ``c.ExchangeFactory.collect`` in nbgrader_config.py.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import tempfile
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect


def uid_of(user: str) -> int | None:
    """The user's uid: from the system's accounts, else from the JSON table ``{login: uid}`` named
    by AUTODIFF_UIDS (on Kubernetes, where pods run with per-user uids but no accounts)."""
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        table = os.environ.get("AUTODIFF_UIDS")
        return json.loads(Path(table).read_text()).get(user) if table else None


def foreign_entries(folder: Path, uid: int | None) -> list[Path]:
    """What in ``folder`` is not a plain file or folder owned by ``uid`` (relative paths; with
    no such user, everything)."""
    foreign = []
    for dirpath, dirnames, filenames in os.walk(folder, onerror=lambda error: foreign.append(Path(error.filename))):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            if info.st_uid != uid or not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                foreign.append(path)
    return [path.relative_to(folder) if path.is_relative_to(folder) else path for path in foreign]


class OwnerCheckedCollect(ExchangeCollect):
    """``nbgrader collect`` that quarantines hand-ins not made by the student they name."""

    src_records: list[dict]  # nbgrader's records of the hand-ins to collect

    def _path_to_record(self, path):
        record = super()._path_to_record(path)
        uid = uid_of(record["username"])
        record["genuine"] = uid is not None and os.lstat(path).st_uid == uid
        return record

    def _sort_by_timestamp(self, records):
        # nbgrader collects the first record of each student: the latest *genuine* one.
        return sorted(records, key=lambda r: (r["genuine"], r["timestamp"]), reverse=True)

    def copy_files(self):
        pattern = f"{self.coursedir.student_id or '*'}+{self.coursedir.assignment_id}+*"
        forged = [
            record
            for record in map(self._path_to_record, Path(self.inbound_path).glob(pattern))
            if not record["genuine"]
        ]
        self.src_records = [record for record in self.src_records if record["genuine"]]
        self.tampered: list[str] = []
        super().copy_files()
        problems = [
            self._quarantine(record["filename"], "is not owned by the student it names") for record in forged
        ] + self.tampered
        if problems:
            self.fail(
                "collect refused what a student cannot have handed in themselves (copies in "
                f"{self._quarantine_root()}); every other hand-in is collected:\n  " + "\n  ".join(problems)
            )

    def do_copy(self, src, dest, log=None):
        """Copy a genuine hand-in without what someone other than its student put in it."""
        student = Path(src).name.rsplit("+", 3)[0]  # as nbgrader reads it: names may hold '+'
        foreign = foreign_entries(Path(src), uid_of(student))
        if not foreign:
            return super().do_copy(src, dest, log)
        self.tampered += [
            self._quarantine(Path(src).name, f"holds {relative}, not {student}'s own", relative) for relative in foreign
        ]
        skip = {Path(src, relative) for relative in foreign}
        with tempfile.TemporaryDirectory() as staging:
            clean = Path(staging, Path(src).name)
            shutil.copytree(src, clean, ignore=lambda folder, names: [n for n in names if Path(folder, n) in skip])
            super().do_copy(str(clean), dest, log)

    def _quarantine_root(self) -> Path:
        return Path(self.coursedir.root, "quarantine", self.coursedir.assignment_id)

    def _quarantine(self, folder: str, why: str, relative: Path | None = None) -> str:
        source = Path(self.inbound_path, folder, relative or "")
        target = self._quarantine_root() / folder / (relative or "")
        message = f"{folder}{'/' + str(relative) if relative else ''} {why}"
        try:
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target, follow_symlinks=False)
        except OSError as error:
            message += f" (unreadable, not copied: {error.strerror})"
        self.log.error("quarantined: %s", message)
        return message
