"""A real PostgreSQL server for the tests: ``initdb`` and ``pg_ctl`` from Debian's package
(``make setup-instructor`` installs it), on a free loopback port in a temporary folder,
stopped and deleted afterwards. initdb refuses to run as root: as root the server runs as
the unprivileged ``postgres`` account the package creates (or ``nobody``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SUPERUSER = "grader"


def postgres_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not found:
        pytest.fail(
            "PostgreSQL is not installed (initdb not in /usr/lib/postgresql/*/bin): run "
            "`make setup-instructor`, which installs the Debian package postgresql"
        )
    return found[-1].parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_account() -> str | None:
    """Who runs the server: None for the current (unprivileged) user, else an unprivileged account."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    pytest.fail("running as root, and neither a 'postgres' nor a 'nobody' account exists to run PostgreSQL")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Callable[[str], str]]:
    """A running server; call it with a name to get the URL of a new, empty database."""
    bindir, account, port = postgres_bin(), server_account(), free_port()
    folder = Path(tempfile.mkdtemp(prefix="course-postgres-"))
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    if account:
        entry = pwd.getpwnam(account)
        for path in (folder, sockets):
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def run(*command: str) -> subprocess.CompletedProcess:
        argv = (
            [shutil.which("runuser", path="/usr/sbin:/usr/bin:/sbin:/bin") or "runuser", "-u", account, "--", *command]
            if account
            else list(command)
        )
        proc = subprocess.run(
            argv,
            cwd=folder,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
        )
        assert proc.returncode == 0, f"{' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def new_database(name: str) -> str:
        run(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER, name)
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{port}/{name}"

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-instructions")
        options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start")
        yield new_database
    finally:
        if (data / "postmaster.pid").exists():
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)
