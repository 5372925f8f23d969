"""The hub path of deploy/, end to end, as real Unix users on this machine.

An instructor and three students, each its own Unix user, set up by ``deploy/course_hub.py
apply``; every step is run as that user: nbgrader's release, fetch, submit and collect, the
README's ``make autograde`` (course_grader, sandboxed), then release and fetch feedback. One student forges a
hand-in under a classmate's name and swaps a file in the classmate's submitted folder: both
are quarantined and the classmate is graded on their own work. The gradebook is a real
PostgreSQL server (tests/postgres.py), the class list imported first, so the instructor's
grading workers never race to add a student. Then JupyterHub (with configurable-http-proxy) boots on
loopback with deploy/jupyterhub_config.py and each role's server starts, as its user, with
that role's extensions; the instructor's formgrader reads the PostgreSQL gradebook.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbgrader_helpers import answer_cells, fill_in
from unix_class import BIN, COURSE_ID, ROOT, UnixClass, make_class, remove_class

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="creates throw-away Unix users and runs programs as them: needs root "
    "(CI runs as root; locally: sudo .venv/bin/python -m pytest tests/test_hub.py)",
)

PS = "ps01_finite_differences"
PROXY = ROOT / "deploy" / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"


@pytest.fixture(scope="module")
def klass():
    klass = make_class()
    try:
        proc = subprocess.run(
            [str(BIN / "python"), str(ROOT / "deploy" / "course_hub.py"), "apply"],
            env={**os.environ, **klass.settings_env()},
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        klass.transcript.append("root$ python deploy/course_hub.py apply  -> exit 0")
        yield klass
    finally:
        print("\n".join(["", "transcript:", *klass.transcript]))
        remove_class(klass)


@pytest.fixture(scope="module")
def db_url(postgres) -> str:
    return postgres("hub_course")


def score(db_url: str, student: str) -> float:
    from nbgrader.api import Gradebook

    with Gradebook(db_url, COURSE_ID) as gradebook:
        return gradebook.find_submission(PS, student).score


def import_roster(klass: UnixClass, db_url: str) -> None:
    """The instructor imports the class list, as the LMS exports it, into the gradebook."""
    roster = klass.home(klass.instructor) / "roster.csv"
    roster.write_text(
        "Username,First name,Last name,Email address\n"
        + "".join(f"{s},{s[-3:].title()},Student,{s}@example.org\n" for s in klass.students)
    )
    klass.as_user(
        klass.instructor,
        str(klass.bin / "python"),
        "-m",
        "course_grader.database",
        "roster",
        str(roster),
        cwd=klass.course(),
        env={"DB_URL": db_url},
    )


def test_apply_sets_the_permissions_a_class_needs(klass):
    assert stat.S_IMODE(klass.exchange.stat().st_mode) == 0o1777
    course_folder = klass.exchange / COURSE_ID
    assert course_folder.stat().st_uid == pwd.getpwnam(klass.instructor).pw_uid
    assert stat.S_IMODE(klass.home(klass.instructor).stat().st_mode) == 0o700
    peek = klass.as_user(klass.students[0], "ls", str(klass.course() / "solutions"), check=False)
    assert peek.returncode != 0 and "Permission denied" in peek.stderr, "a student read the solutions"
    student_config = json.loads((klass.roles / "student" / "jupyter_server_config.json").read_text())
    assert student_config["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"] is False


def test_release_fetch_submit_collect_grade_and_feedback_through_the_exchange(klass, db_url):
    ada, bob, eve = klass.students
    course = klass.course()
    nbgrader = str(klass.bin / "nbgrader")

    def instructor(*command: str, check: bool = True):
        return klass.as_user(klass.instructor, nbgrader, *command, cwd=course, env={"DB_URL": db_url}, check=check)

    # The instructor imports the class list (an LMS's CSV), generates and releases ps01.
    import_roster(klass, db_url)
    instructor("generate_assignment", PS, "--force")
    instructor("release_assignment", PS)

    source = nbformat.read(ROOT / "solutions" / PS / f"{PS}.ipynb", as_version=4)
    for student in klass.students:
        klass.as_user(student, nbgrader, "fetch_assignment", PS)
    fetched = {s: klass.home(s) / PS / f"{PS}.ipynb" for s in klass.students}
    release = nbformat.read(fetched[ada], as_version=4)
    stub = answer_cells(release)["best_step"].source
    work = {
        ada: fill_in(release, source, {"best_step": stub}),  # one part left undone
        bob: fill_in(release, source, {}),  # everything right
        eve: release,
    }  # nothing done
    for student, notebook in work.items():
        nbformat.write(notebook, fetched[student])  # the student's edits (file stays theirs)
        os.chown(fetched[student], pwd.getpwnam(student).pw_uid, -1)
        klass.as_user(student, nbgrader, "submit", PS)

    # Eve hands in her empty notebook under Bob's name, and swaps it into Bob's own folder.
    klass.as_user(eve, nbgrader, "submit", PS, "--student", bob)
    inbound = klass.exchange / COURSE_ID / "inbound"
    bob_folder = next(p for p in inbound.iterdir() if p.stat().st_uid == pwd.getpwnam(bob).pw_uid)
    swap = klass.as_user(
        eve,
        "sh",
        "-c",
        f'cp "$0" "$1/.x" && mv -f "$1/.x" "$1/{PS}.ipynb"',
        str(fetched[eve]),
        str(bob_folder),
        check=False,
    )
    assert swap.returncode == 0, (
        "nbgrader leaves submitted folders world-writable: the swap must work for the test to prove collect catches it"
    )

    first = instructor("collect", PS, check=False)
    assert first.returncode != 0, "collect must not pass over a forged hand-in silently"
    report = first.stdout + first.stderr
    assert "is not owned by the student it names" in report and f"holds {PS}.ipynb, not {bob}'s own" in report
    quarantine = course / "quarantine" / PS
    assert any(p.name.startswith(f"{bob}+") for p in quarantine.iterdir())
    assert not (course / "submitted" / bob / PS / f"{PS}.ipynb").exists(), "Eve's swapped file was collected"
    assert (course / "submitted" / ada / PS / f"{PS}.ipynb").exists()

    # Bob hands in again; collect takes his latest genuine hand-in, still refusing the forgery.
    time.sleep(1.1)  # a later timestamp
    klass.as_user(bob, nbgrader, "submit", PS)
    second = instructor("collect", "--update", PS, check=False)
    assert second.returncode != 0 and "is not owned by the student it names" in second.stdout + second.stderr
    collected = nbformat.read(course / "submitted" / bob / PS / f"{PS}.ipynb", as_version=4)
    assert answer_cells(collected)["best_step"].source == answer_cells(work[bob])["best_step"].source

    # The instructor grades as the README says (`make autograde`, i.e. course_grader: each hand-in
    # in the sandbox, two at a time, into the PostgreSQL gradebook) and releases the feedback
    # pages it wrote through nbgrader's exchange.
    graded = klass.as_user(
        klass.instructor,
        str(klass.bin / "python"),
        "-m",
        "course_grader.grading",
        "submissions",
        "--jobs",
        "2",
        cwd=course,
        env={"DB_URL": db_url},
    )
    klass.transcript.append(f"instructor$ make autograde JOBS=2  -> {graded.stdout.strip().splitlines()[-1]}")
    instructor("release_feedback", PS)
    assert not (course / "gradebook.db").exists(), "nbgrader used the sqlite default, not DB_URL"
    scores = {student: score(db_url, student) for student in klass.students}
    assert scores[bob] == 10 and 0 < scores[ada] < 10 and scores[eve] == 0, (scores, graded.stdout[-4000:])

    for student in klass.students:
        klass.as_user(student, nbgrader, "fetch_feedback", PS)
        pages = list((klass.home(student) / PS / "feedback").glob(f"*/{PS}.html"))
        assert len(pages) == 1, f"{student} got {pages}"
        assert re.search(rf"Score:\s*{scores[student]:g}(\.0)?\s*/\s*10", pages[0].read_text()), student
        assert pages[0].stat().st_uid == pwd.getpwnam(student).pw_uid
    klass.transcript.append(f"scores: {scores}")


# -- JupyterHub --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(url: str, token: str, method: str = "GET") -> tuple[int, str]:
    req = urllib.request.Request(
        url, method=method, headers={"Authorization": f"token {token}"}, data=b"" if method == "POST" else None
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for(check, what: str, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def hub(klass, db_url):
    assert PROXY.exists(), "configurable-http-proxy is missing: run `make setup-instructor`"
    token, url = secrets.token_hex(16), f"http://127.0.0.1:{free_port()}"
    config = klass.base / "hub_config.py"
    # The deployed configuration, plus what only a test needs: ports, a service token, its files.
    config.write_text(f"""c = get_config()
load_subconfig({str(ROOT / "deploy" / "jupyterhub_config.py")!r})
c.JupyterHub.hub_port = {free_port()}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
c.JupyterHub.pid_file = {str(klass.base / "jupyterhub.pid")!r}
c.Spawner.cmd = [{str(klass.bin / "jupyterhub-singleuser")!r}]  # the venv every user can run
c.Spawner.environment["PATH"] = {f"{klass.bin}:/usr/bin:/bin"!r}
c.JupyterHub.services = [{{"name": "course-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "course-test", "services": ["course-test"],
                             "scopes": ["admin:users", "admin:servers", "access:servers"]}}]
""")
    env = {
        **os.environ,
        **klass.settings_env(),
        "AUTODIFF_HUB_URL": url,
        "AUTODIFF_PROXY": str(PROXY),
        "AUTODIFF_HUB_DB": f"sqlite:///{klass.base / 'jupyterhub.sqlite'}",
        "AUTODIFF_HUB_SECRET": str(klass.base / "cookie_secret"),
        "DB_URL": db_url,
    }
    log = open(klass.base / "jupyterhub.log", "w")
    process = subprocess.Popen(
        [str(BIN / "jupyterhub"), "-f", str(config)], cwd=klass.base, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_for(
            lambda: process.poll() is not None or (_up(url) and request(f"{url}/hub/api/", token)[0] == 200), "the hub"
        )
        assert process.poll() is None, (klass.base / "jupyterhub.log").read_text()
        klass.transcript.append(f"root$ jupyterhub -f deploy/jupyterhub_config.py  -> listening on {url}")
        yield url, token
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _up(url: str) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=1):
            return True
    except OSError:
        return False


def page_config(html: str) -> dict:
    return json.loads(
        re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)[1]
    )


def test_each_role_gets_its_server_and_its_extensions(klass, hub, db_url):
    url, token = hub
    import_roster(klass, db_url)  # what the instructor's formgrader must find in the gradebook
    student = klass.students[0]
    for user in (klass.instructor, student):
        assert request(f"{url}/hub/api/users/{user}", token, "POST")[0] in (201, 409)
        assert request(f"{url}/hub/api/users/{user}/server", token, "POST")[0] in (201, 202)
    for user in (klass.instructor, student):
        wait_for(
            lambda user=user: (
                json.loads(request(f"{url}/hub/api/users/{user}", token)[1]).get("servers", {}).get("", {}).get("ready")
            ),
            f"{user}'s server",
            seconds=90,
        )
        uid = pwd.getpwnam(user).pw_uid
        [server] = [
            pid
            for pid in klass.processes()
            if Path(f"/proc/{pid}").stat().st_uid == uid
            and "jupyterhub-singleuser" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
        ]
        environment = Path(f"/proc/{server}/environ").read_bytes().split(b"\0")
        assert (f"DB_URL={db_url}".encode() in environment) == (user == klass.instructor), (
            "the gradebook's URL (with its password) is for instructors' servers only"
        )
        klass.transcript.append(f"hub: {user}'s server is ready, running as {user}")

    assignments = request(f"{url}/user/{student}/assignments?course_id={COURSE_ID}", token)
    assert assignments[0] == 200 and json.loads(assignments[1])["success"], assignments
    assert request(f"{url}/user/{student}/formgrader", token)[0] == 404
    disabled = page_config(request(f"{url}/user/{student}/lab", token)[1])["disabledExtensions"]
    assert {
        "@jupyter/nbgrader:formgrader",
        "@jupyter/nbgrader:course-list",
        "@jupyter/nbgrader:create-assignment",
    } <= set(disabled)
    assert "@jupyter/nbgrader:assignment-list" not in disabled

    status, html = request(f"{url}/user/{klass.instructor}/formgrader", token)
    assert status == 200 and "formgrader" in html.lower()
    disabled = page_config(request(f"{url}/user/{klass.instructor}/lab", token)[1])["disabledExtensions"]
    assert not any(name.startswith("@jupyter/nbgrader") for name in disabled)
    status, students = request(f"{url}/user/{klass.instructor}/formgrader/api/students", token)
    assert status == 200 and set(klass.students) <= {s["id"] for s in json.loads(students)}, (
        "the instructor's server does not read the hub's PostgreSQL gradebook"
    )
    klass.transcript.append(
        f"hub: {student} has the assignment list only (formgrader 404); {klass.instructor} has the formgrader (200)"
    )
