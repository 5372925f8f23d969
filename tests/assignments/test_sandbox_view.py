"""What of the grader's machine the sandbox shows: only the grader's own package folders (no
other Python's packages to put on ``sys.path``), and a course_lib under rules that no other user
of the machine can have planted."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbgrader_helpers import answer_cells
from paths import ROOT
from test_verdict_seams import PS01, grade

from course_grader.no_programs import MUST_FORBID, landlock_abi
from course_grader.rules import course_lib_without, private_folder, read_rules
from course_grader.sandbox import (
    INSIDE_GRADER,
    Sandbox,
    _python_roots,
    find_bwrap,
    foreign_python_folders,
    package_folders,
)

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="the grader's sandbox needs bubblewrap")

PROBE = """
import glob, importlib, importlib.machinery, json, os, sys
found = []
for folder, subfolders, _ in os.walk("/"):
    if folder in ("/proc", "/sys", "/dev"):
        subfolders[:] = []
    for name in subfolders[:]:
        if name in ("site-packages", "dist-packages"):
            subfolders.remove(name)
            found.append(os.path.join(folder, name))
        elif name.startswith("python") and os.path.isfile(os.path.join(folder, name, "os.py")):
            found.append(os.path.join(folder, name))
imported = []
for name in HIDDEN:
    sys.path[:0] = found
    try:
        importlib.import_module(name)
        imported.append(name)
    except ImportError:
        pass
    del sys.path[: len(found)]
for folder in found:  # a top-level module's compiled copy loads without its source
    for cached in glob.glob(os.path.join(folder, "__pycache__", "*.pyc")):
        name = os.path.basename(cached).split(".")[0]
        if name in HIDDEN:
            try:
                importlib.machinery.SourcelessFileLoader(name, cached).load_module()
                imported.append(cached)
            except Exception:
                pass
print(json.dumps({"found": {f: sorted(os.listdir(f))[:5] for f in found}, "imported": imported}))
"""


def run_in_the_sandbox(sandbox: Sandbox, source: str) -> subprocess.CompletedProcess:
    """``source`` run in the sandbox instead of the runner (so without its filter on programs)."""
    with tempfile.TemporaryDirectory() as scratch:
        os.chmod(scratch, 0o755)
        cmd = sandbox.command(Path(scratch), 0, 1)
        assert cmd[-5:] == ["-I", f"{INSIDE_GRADER}/runner.py", "0", "1", MUST_FORBID], cmd[-6:]
        cmd[-4:] = ["-c", source]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_the_sandbox_shows_no_package_folder_but_the_graders():
    """Every package folder (site-packages, dist-packages) and standard library the sandbox's
    file system holds is the grader's own or empty, and no hidden package imports from any."""
    sandbox = Sandbox(rules=read_rules(ROOT / "solutions" / PS01))
    hidden = list(sandbox.rules.packages)
    proc = run_in_the_sandbox(sandbox, f"HIDDEN = {hidden!r}\n{PROBE}")
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    shown = {str(f) for f in package_folders()} | {sysconfig.get_paths()["stdlib"]}
    assert shown <= set(seen["found"]), seen["found"]
    assert {f: files for f, files in seen["found"].items() if files and f not in shown} == {}
    assert seen["imported"] == [] and {"scipy", "sympy", "mpmath", "networkx", "graphlib"} <= set(hidden), seen


# ps01's gradient_fd from scipy, imported from any other Python's package folder on this machine
# (the base interpreter of a venv, the system's dist-packages): the attack of a hand-in that
# scored 10/10 where 7/10 is fair.
SCIPY_FROM_ELSEWHERE = """
import sys as _s
_s.path[:0] = {folders!r}
from scipy.optimize._numdiff import approx_derivative as _ad


def gradient_fd(f, x, h=1e-6):
    x = np.array(x, dtype=float)
    g = _ad(lambda v: float(f(v.reshape(x.shape))), x.ravel(), method="3-point", abs_step=h)
    return np.asarray(g, dtype=float).reshape(x.shape)
"""


def test_a_hidden_package_of_another_python_stays_hidden():
    folders = [str(f) for f in foreign_python_folders(_python_roots(), package_folders())]
    assert folders, "no Python on this machine but the grader's: the attack needs another one"
    answer = SCIPY_FROM_ELSEWHERE.format(folders=folders)
    points, message = grade(PS01, {"gradient_fd": answer}, {"test_gradient_fd"})["test_gradient_fd"]
    assert points == 0 and "gradient_fd" in message, message


def test_the_private_folder_is_never_one_another_user_could_write(tmp_path, monkeypatch):
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    mine = private_folder()
    assert mine == shared / f"course-grader-{os.geteuid()}" and stat.S_IMODE(mine.stat().st_mode) == 0o711
    mine.chmod(0o777)  # made writable by everyone (or another user's folder of that name)
    elsewhere = private_folder()
    assert elsewhere != mine and elsewhere.parent == shared and stat.S_IMODE(elsewhere.stat().st_mode) == 0o711


# A classmate with a login on the grading machine plants, before the grader's first run, the
# folder where the grader caches ps01's course_lib under rules: a course_lib with no rules whose
# import ends every other hand-in's runner.
PLANTED_INIT = """
def _planted():
    import glob, os
    if not any("PLANTED-BY-1234" in open(p, errors="ignore").read() for p in glob.glob("*.ipynb")):
        os._exit(0)
_planted()
"""
CALLS_THE_RULED_OUT_FUNCTION = """# PLANTED-BY-1234
def gradient_fd(f, x, h=1e-6):
    return numerical_grad(f, np.array(x, dtype=float), eps=h)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="plants as another user: needs root")
def test_a_course_lib_planted_by_another_user_is_ignored(tmp_path, monkeypatch):
    rules = read_rules(ROOT / "solutions" / PS01)
    name = course_lib_without(rules.functions, rules.modules, cache=tmp_path).name
    shared = Path(tempfile.mkdtemp(prefix="shared-tmp-"))  # a fresh /tmp of the machine
    try:
        shared.chmod(0o1777)
        planted = shared / f"course-grader-{os.geteuid()}" / name / "course_lib"
        as_classmate = ["setpriv", "--reuid=1234", "--regid=1234", "--clear-groups", "sh", "-c"]
        subprocess.run(
            [*as_classmate, f'mkdir -p -m 777 "{planted.parent}" && cp -r "{ROOT}/course_lib" "{planted}"'],
            check=True,
            cwd="/",
        )
        planted_init = planted / "__init__.py"
        subprocess.run([*as_classmate, f'cat >> "{planted_init}"'], input=PLANTED_INIT.encode(), check=True, cwd="/")
        assert planted.parent.parent.stat().st_uid == 1234
        monkeypatch.setenv("TMPDIR", str(shared))  # for the judge's process too
        monkeypatch.setattr(tempfile, "tempdir", None)
        attacker = grade(PS01, {"gradient_fd": CALLS_THE_RULED_OUT_FUNCTION}, {"test_gradient_fd"})
        classmate = grade(PS01, {}, {"test_gradient_fd"})
        used = Sandbox(rules=rules).lib_parent
        used_owner = used.stat().st_uid
    finally:
        shutil.rmtree(shared)
    points, message = attacker["test_gradient_fd"]
    assert points == 0 and "course_lib.check.numerical_grad is not available" in message, message
    assert classmate["test_gradient_fd"][0] == 2, classmate
    assert not used.is_relative_to(planted.parent.parent) and used_owner == os.geteuid()


# A hand-in that hands its work to another program, by every route Python offers, each answer
# computing its result only once the program has run (its exit status 3). In the sandbox
# without the runner's filter each route runs its program; graded, none does.
ROUTES = """
import ctypes, os, subprocess, sys, tempfile

_PYTHON_3 = [sys.executable, "-c", "raise SystemExit(3)"]


def _perl():
    return subprocess.run(["perl", "-e", "exit 3"]).returncode == 3


def _python_c():
    return subprocess.run(_PYTHON_3).returncode == 3


def _posix_spawn():
    return os.waitstatus_to_exitcode(os.waitpid(os.posix_spawn(sys.executable, _PYTHON_3, {}), 0)[1]) == 3


def _in_a_child(start, *args):
    pid = os.fork()
    if pid == 0:
        try:
            start(*args)
        finally:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 3


def _os_execv():
    return _in_a_child(os.execv, sys.executable, _PYTHON_3)


def _ctypes_script():  # a #! script in /tmp, started by the C library's execve (no audit event)
    path = os.path.join(tempfile.mkdtemp(dir="/tmp"), "helper.sh")
    with open(path, "w") as script:
        script.write("#!/bin/sh\\nexit 3\\n")
    os.chmod(path, 0o755)
    argv = (ctypes.c_char_p * 2)(path.encode(), None)
    return _in_a_child(ctypes.CDLL(None).execve, path.encode(), argv, None)
"""
ROUTE_OF = {
    "forward_difference": "_perl",
    "central_difference": "_python_c",
    "gradient_fd": "_os_execv",
    "best_step": "_posix_spawn",
    "observed_order": "_ctypes_script",
}


def test_a_hand_in_cannot_start_a_program_by_any_route():
    """Before (in the sandbox, without the runner's filter) every route runs its program; graded,
    every part that needs one scores 0, the reason named in the feedback."""
    routes = ", ".join(ROUTE_OF.values())
    before = run_in_the_sandbox(Sandbox(), f"{ROUTES}\nprint([r() for r in ({routes})])")
    assert before.stdout.split() == ["[True,", "True,", "True,", "True,", "True]"], before.stderr
    solution = answer_cells(nbformat.read(ROOT / "solutions" / PS01 / f"{PS01}.ipynb", as_version=4))
    answers = {
        name: f"{ROUTES}\n{solution[name].source}\n\n_work_{name} = {name}\n\n\n"
        f"def {name}(*args, **kwargs):\n    assert {route}(), 'the other program did not run'\n"
        f"    return _work_{name}(*args, **kwargs)\n"
        for name, route in ROUTE_OF.items()
    }
    got = grade(PS01, answers, {f"test_{name}" for name in ROUTE_OF})
    assert got.keys() == {f"test_{name}" for name in ROUTE_OF} and all(p == 0 for p, _ in got.values()), got
    for name in ("forward_difference", "central_difference", "best_step"):  # the audit hook's words
        assert "PermissionError" in got[f"test_{name}"][1] and "not allowed while grading" in got[f"test_{name}"][1]


# A process of the sandbox outside the runner's own filter (pid 1, the warm runner, whose filter
# lets it chmod): a hand-in that attached to it with ptrace, or wrote its memory through
# /proc/1/mem, could make it act for the hand-in. The runner's Landlock domain lets it trace or
# write no process outside it (and /proc is read-only there).
ALONE = """
import ctypes, os

_libc = ctypes.CDLL(None, use_errno=True)


def forward_difference(f, x, h):
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
        assert _libc.ptrace(16, pid, 0, 0) == -1, f"attached to process {pid} with ptrace"
        try:
            open(f"/proc/{pid}/mem", "r+b").close()
        except OSError:  # PermissionError (Landlock), or the sandbox's /proc is read-only
            continue
        raise AssertionError(f"opened the memory of process {pid} for writing")
    return (f(x + h) - f(x)) / h
"""


@pytest.mark.skipif(not landlock_abi(), reason="this kernel has no Landlock to keep the runner from other processes")
def test_a_hand_in_can_take_over_no_process_of_the_sandbox():
    got = grade(PS01, {"forward_difference": ALONE}, {"test_forward_difference"})
    assert got["test_forward_difference"][0] > 0, got
