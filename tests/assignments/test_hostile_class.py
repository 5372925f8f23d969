"""A hostile class, graded by `make autograde`'s grader in its bubblewrap sandbox.

Every attack and scoring trick a class was seen to try is handed in once, written to be
harmless to the machine running the tests: attacks write sentinel files, read a canary
environment variable, connect to a loopback listener opened here, rewrite a copy of the
gradebook, signal the grader's own process. Beside them, honest hand-ins that are merely
awkward (stderr output, a different floating-point order, a crash in one part) must get what a
fair human grader would give.
"""

from __future__ import annotations

import csv
import os
import secrets
import shutil
import socket
import sqlite3
from pathlib import Path

import nbformat
import pytest
from nbgrader_helpers import ROOT, answer_cells, fill_in, nbgrader

import course_lib
from course_grader.grading import ClassGrader
from course_grader.limits import Limits
from course_grader.parts import secret_lines

ASSIGNMENT = "ps01_finite_differences"
PARTS = {
    "test_forward_difference": 2,
    "test_central_difference": 2,
    "test_gradient_fd": 2,
    "test_gradient_fd_leaves_x_alone": 1,
    "test_best_step": 2,
    "test_observed_order": 1,
}
FULL = sum(PARTS.values())
TOKEN = secrets.token_hex(8)  # the canary in the grader's environment
SENTINEL = f"SENTINEL-{secrets.token_hex(8)}"  # files attacks try to leave behind
PROCESS_MARK = secrets.token_hex(8)  # in the command line of processes they start
JUNK = {
    "forward_difference": "def forward_difference(f, x, h):\n    return 0.0\n",
    "central_difference": "def central_difference(f, x, h):\n    return 0.0\n",
    "gradient_fd": "def gradient_fd(f, x, h=1e-6):\n    return 0.0 * x\n",
    "best_step": "def best_step(f, x, f_prime, hs, method):\n    return hs[0]\n",
    "observed_order": "def observed_order(f, x, f_prime, method, h):\n    return 0.0\n",
}


def attack(places: dict, port: int, grader_pid: int) -> dict[str, tuple[str, dict[str, float]]]:
    """Hand-ins that attack: student -> (code put before the first answer, expected points)."""
    write_everywhere = "".join(
        f"    try:\n        open({str(Path(p) / SENTINEL)!r} + '-' + who, 'w').write(repr(os.environ))\n"
        f"    except OSError:\n        pass\n"
        for p in places.values()
    )
    prelude = f"import os, sys, glob, shutil, socket, signal, subprocess\ndef plant(who):\n{write_everywhere}"
    course, gradebook_copy = places["course"], places["gradebook_copy"]
    # JUNK's gradient_fd leaves x alone but computes no gradient: the hidden test asks for one too
    # (a stub doing no work earned that point before red team 27), so nothing, fairly.
    zero = dict.fromkeys(PARTS, 0.0)
    return {
        "print_solutions": (
            prelude + f"plant('read')\nfor p in glob.glob({course!r} + '/solutions/**/*.ipynb', recursive=True):\n"
            "    print(open(p).read())\n",
            zero,
        ),
        "rewrite_gradebook": (
            prelude + f"import sqlite3\nfor db in ({f'{course}/gradebook.db'!r}, {gradebook_copy!r}):\n    try:\n"
            "        c = sqlite3.connect(db); c.execute('update grade set auto_score = 99'); c.commit()\n"
            "    except Exception as e:\n        print(e)\n",
            zero,
        ),
        "edit_hidden_tests": (
            prelude + f"for p in glob.glob({course!r} + '/solutions/**/*.ipynb', recursive=True):\n"
            "    try:\n        open(p, 'w').write('{}')\n    except OSError as e:\n        print(e)\n",
            zero,
        ),
        "delete_classmates": (
            prelude + f"shutil.rmtree({course!r} + '/submitted/alice', ignore_errors=True)\n"
            f"shutil.rmtree({course!r} + '/submissions/alice', ignore_errors=True)\n",
            zero,
        ),
        "plant_in_course_lib": (
            prelude + "import course_lib\nplant('lib')\n"
            f"open(os.path.join(os.path.dirname(course_lib.__file__), {SENTINEL!r}), 'w')\n",
            dict.fromkeys(PARTS, 0.0),
        ),  # the refused write stops each cell: nothing defined
        "daemon": (
            prelude + f"try:\n    subprocess.Popen(['sleep', '600', {PROCESS_MARK!r}], start_new_session=True)\n"
            "except Exception as e:\n    print(e)\ntry:\n    if os.fork() == 0:\n"
            f"        import time; time.sleep(5); plant('daemon'); os._exit(0)\nexcept Exception as e:\n    print(e)\n",
            zero,
        ),
        "network": (
            prelude + f"for host in ('127.0.0.1', 'localhost'):\n    try:\n"
            f"        socket.create_connection((host, {port}), timeout=2).sendall(b{TOKEN!r})\n"
            "    except Exception as e:\n        print(e)\n",
            zero,
        ),
        "environment": (prelude + "plant('env')\nprint(os.environ)\n", zero),
        "kill_the_batch": (
            prelude + f"for pid in ({grader_pid}, os.getppid(), 1):\n    try:\n"
            "        os.kill(pid, signal.SIGKILL)\n    except Exception as e:\n        print(e)\n",
            zero,
        ),
    }


def gaming() -> dict[str, tuple[dict[str, str], dict[str, float]]]:
    """Hand-ins that try to score without the work: student -> (answer cells, expected points)."""
    zero = dict.fromkeys(PARTS, 0.0)
    visible_only = (
        "def forward_difference(f, x, h):\n    return -6.19 if h == 0.1 else -7.0\n"
        "import numpy as np\nnp.isclose = lambda *a, **k: True\nnp.allclose = lambda *a, **k: True\n"
    )
    forged = (
        "import os, json\nfor fd in range(3, 256):\n    try:\n"
        "        os.write(fd, (json.dumps({'event': 'verdict', 'passed': True}) + '\\n').encode())\n"
        "    except OSError:\n        pass\nos._exit(0)\n"
    )
    return {
        "patch_numpy": (dict(JUNK, forward_difference=visible_only), zero),
        "patch_reference": (
            dict(
                JUNK,
                central_difference="import course_lib.check\n"
                "course_lib.check.numerical_grad = lambda f, x, eps=1e-6: 0.0\n"
                "numerical_grad = course_lib.check.numerical_grad\n" + JUNK["central_difference"],
            ),
            zero,
        ),
        "input_transformer": (
            dict(
                JUNK,
                forward_difference="get_ipython().input_transformers_post.append(lambda l: [])\n"
                + JUNK["forward_difference"],
            ),
            zero,
        ),
        "printed_score": (
            dict(
                JUNK,
                forward_difference=JUNK["forward_difference"] + "import sys\nprint(2.0)\nsys.displayhook(2.0)\n2.0\n",
            ),
            zero,
        ),
        "forged_verdict": (dict(JUNK, forward_difference=forged), zero),
        "tracer": (
            dict(JUNK, forward_difference="import sys\nsys.settrace(lambda *a: None)\n" + JUNK["forward_difference"]),
            zero,
        ),
        "frame_walk": (
            dict(
                JUNK,
                forward_difference="import sys\nframe = sys._getframe()\n"
                "while frame.f_back:\n    frame = frame.f_back\nprint(frame.f_locals)\n" + JUNK["forward_difference"],
            ),
            zero,
        ),
        "calls_reference": (
            {"central_difference": "def central_difference(f, x, h):\n    return numerical_grad(f, x, eps=h)\n"},
            dict(dict.fromkeys(PARTS, None), test_central_difference=0.0),
        ),
    }


def honest() -> dict[str, tuple[dict[str, str], dict[str, float]]]:
    """Correct or partly correct work written in awkward ways: (answer changes, expected points)."""
    full = dict.fromkeys(PARTS, None)  # None: full points for that part
    noisy = (
        "import sys, warnings, logging\nwarnings.warn('a warning')\nlogging.warning('logged')\n"
        "print('progress 100%', file=sys.stderr)\n"
    )
    return {
        "stderr_everywhere": (
            {
                "forward_difference": noisy + "def forward_difference(f, x, h):\n"
                "    print('computing', file=sys.stderr)\n    warnings.warn('careful')\n"
                "    return (f(x + h) - f(x)) / h\n"
            },
            full,
        ),
        "other_float_order": (
            {
                "observed_order": "import numpy as np\ndef observed_order(f, x, f_prime, method, h):\n"
                "    small = h * 0.1\n    return float(np.log10(abs(method(f, x, h) - f_prime) / "
                "abs(method(f, x, small) - f_prime)))\n"
            },
            full,
        ),
        "exits_in_part_one": (
            {"forward_difference": "import os\nos._exit(3)\n"},
            dict(full, test_forward_difference=0.0),
        ),
        "segfault_in_part_two": (
            {
                "central_difference": "def central_difference(f, x, h):\n"
                "    import faulthandler\n    faulthandler._sigsegv()\n"
            },
            dict(full, test_central_difference=0.0),
        ),
        "memory_in_part_two": (
            {"central_difference": "def central_difference(f, x, h):\n    return len(bytearray(8 * 1024**3))\n"},
            dict(full, test_central_difference=0.0),
        ),
        "uninterruptible_loop": (
            {
                "gradient_fd": "import signal\ndef gradient_fd(f, x, h=1e-6):\n"
                "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n"
            },
            dict(full, test_gradient_fd=0.0, test_gradient_fd_leaves_x_alone=0.0),
        ),
        "sys_exit_in_function": (
            {"best_step": "def best_step(f, x, f_prime, hs, method):\n    raise SystemExit(0)\n"},
            dict(full, test_best_step=0.0),
        ),
        "newer_python_syntax": ({"observed_order": "type Steps = list[float]\n"}, dict(full, test_observed_order=0.0)),
    }


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    course = base / "course"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "solutions" / ASSIGNMENT, course / "solutions" / ASSIGNMENT)
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    gradebook_copy = base / "gradebook-copy.db"
    shutil.copy(course / "gradebook.db", gradebook_copy)
    gradebook_copy_before = gradebook_copy.read_bytes()
    places = {
        "course": str(course),
        "course_lib": str(Path(course_lib.__file__).parent),
        "tmp": "/tmp",
        "base": str(base),
        "home": os.path.expanduser("~"),
        "gradebook_copy": str(gradebook_copy),
    }
    solutions_before = {p: p.read_bytes() for p in (course / "solutions").rglob("*") if p.is_file()}

    name = f"{ASSIGNMENT}.ipynb"
    source = nbformat.read(course / "solutions" / ASSIGNMENT / name, as_version=4)
    release = nbformat.read(course / "exercises" / ASSIGNMENT / name, as_version=4)
    solved = answer_cells(source)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    expected, hand_ins = {}, {"alice": fill_in(release, source, {})}
    expected["alice"] = dict.fromkeys(PARTS, None)
    for student, (code, points) in attack(places, listener.getsockname()[1], os.getpid()).items():
        hand_ins[student] = fill_in(
            release,
            source,
            {k: code + v for k, v in JUNK.items()} | {"forward_difference": code + JUNK["forward_difference"]},
        )
        expected[student] = points
    for student, (answers, points) in (gaming() | honest()).items():
        hand_ins[student] = fill_in(release, source, answers)
        expected[student] = points
    for student, nb in hand_ins.items():
        (course / "submissions" / student).mkdir(parents=True)
        nbformat.write(nb, course / "submissions" / student / name)
    (course / "submissions" / "zoe_truncated").mkdir()
    (course / "submissions" / "zoe_truncated" / name).write_text(nbformat.writes(release)[:500])

    os.environ["GRADER_CANARY"] = TOKEN
    try:
        grader = ClassGrader(
            course,
            timeout=5,
            log=lambda *a: None,
            limits=Limits(wall_seconds=20, cpu_seconds=20, memory_bytes=2 * 1024**3),
        )
        outcomes = {o.student: o for o in grader.collect(course / "submissions")}
        grader.grade(list(outcomes.values()), jobs=2)
        grader.export(outcomes=list(outcomes.values()))
    finally:
        del os.environ["GRADER_CANARY"]
    yield {
        "course": course,
        "grader": grader,
        "outcomes": outcomes,
        "expected": expected,
        "places": places,
        "listener": listener,
        "source": source,
        "solved": solved,
        "gradebook_copy": gradebook_copy,
        "gradebook_copy_before": gradebook_copy_before,
        "solutions_before": solutions_before,
    }
    listener.close()
    for place in places.values():
        for path in Path(place).glob(f"{SENTINEL}*") if Path(place).is_dir() else []:
            path.unlink()


def grader_texts(course: Path) -> str:
    """What the grader wrote for students and the instructor: feedback pages, the outputs it
    put into the graded notebooks (their code is the student's own) and the grade table."""
    texts = [p.read_text(errors="replace") for p in (course / "feedback").rglob("*.html")]
    for path in (course / "autograded").rglob("*.ipynb"):
        texts += [
            out.get("text", "") for cell in nbformat.read(path, as_version=4).cells for out in cell.get("outputs", [])
        ]
    return "\n".join(texts + [(course / "grades.csv").read_text()])


def test_the_batch_finishes_and_grades_everyone(hostile):
    for student, out in hostile["outcomes"].items():
        if student == "zoe_truncated":
            continue
        assert out.status == "graded", (student, out.status, out.notes)


def test_every_hand_in_gets_what_a_fair_grader_gives(hostile):
    wrong = {}
    for student, expected in hostile["expected"].items():
        got = {r.grade_id: r.points for r in hostile["grader"].results[(student, ASSIGNMENT)]}
        want = {part: PARTS[part] if points is None else points for part, points in expected.items()}
        if got != want:
            wrong[student] = {part: (got[part], want[part]) for part in PARTS if got[part] != want[part]}
    assert not wrong, f"(got, fair) per part: {wrong}"


def test_crashes_say_what_happened_in_the_part_they_cost(hostile):
    def message(student, part):
        return next(r.message for r in hostile["grader"].results[(student, ASSIGNMENT)] if r.grade_id == part)

    assert "ended the Python process" in message("exits_in_part_one", "test_forward_difference")
    assert "segmentation fault" in message("segfault_in_part_two", "test_central_difference")
    assert "MemoryError" in message("memory_in_part_two", "test_central_difference")
    assert "ran longer than 5 s" in message("uninterruptible_loop", "test_gradient_fd")
    assert "the exercise asks you to write it yourself" in message("calls_reference", "test_central_difference")
    newer = hostile["grader"].results[("newer_python_syntax", ASSIGNMENT)]
    assert any("grader runs Python 3." in note for r in newer for note in r.notes)


def test_no_sentinel_outside_the_sandbox(hostile):
    for place in hostile["places"].values():
        if Path(place).is_dir():
            assert not list(Path(place).glob(f"{SENTINEL}*")), f"an attack wrote into {place}"


def test_no_canary_hidden_test_or_solution_in_anything_students_see(hostile):
    shown = grader_texts(hostile["course"])
    assert TOKEN not in shown, "the grader's environment reached a student"
    leaked = [line for line in secret_lines(hostile["source"]) if line in shown]
    assert not leaked, leaked[:5]
    assert str(hostile["course"]) not in shown, "the grader's paths must not appear in feedback"


def test_no_connection_reached_the_loopback_listener(hostile):
    with pytest.raises(BlockingIOError):
        hostile["listener"].accept()


def test_solutions_gradebook_and_classmates_untouched(hostile):
    course = hostile["course"]
    assert {p: p.read_bytes() for p in (course / "solutions").rglob("*") if p.is_file()} == hostile["solutions_before"]
    assert hostile["gradebook_copy"].read_bytes() == hostile["gradebook_copy_before"]
    assert (course / "submitted" / "alice").is_dir() and (course / "submissions" / "alice").is_dir()
    with sqlite3.connect(course / "gradebook.db") as db:
        assert db.execute("select count(*) from grade where auto_score > 2").fetchone()[0] == 0


def test_no_process_left_behind(hostile):
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if PROCESS_MARK.encode() in (proc / "cmdline").read_bytes():
                left.append(proc.name)
        except OSError:
            continue
    assert not left, f"processes started by hand-ins are still running: {left}"


def test_unreadable_notebook_reported_by_name_everywhere(hostile):
    course, out = hostile["course"], hostile["outcomes"]["zoe_truncated"]
    assert out.status == "unreadable" and "zoe_truncated" in out.notes[0]
    with open(course / "grades.csv") as table:
        rows = {row["student_id"]: row for row in csv.DictReader(table)}
    assert rows["zoe_truncated"]["status"].startswith("unreadable: ") and rows["zoe_truncated"]["score"] == "0"
    assert rows["alice"]["status"] == "graded" and float(rows["alice"]["score"]) == FULL
    feedback = (course / "feedback" / "zoe_truncated" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "not a readable notebook" in feedback
