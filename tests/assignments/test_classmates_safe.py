"""Classmates stay safe: a hand-in that bombs the machine costs only its own parts.

One hand-in forks without end, fills memory, fills /tmp and fills its working folder, one
bomb per part; four honest classmates are graded at the same time (two workers). Each
classmate must score exactly what the solution scores alone, and the bomber only the part it
did not bomb. Proven twice: graded by root (each sandbox in control groups of its own) and
graded by an ordinary Unix user (the kernel's per-user limits, counted per sandbox).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import nbformat
import pytest
from nbgrader_helpers import ROOT, fill_in, released_course

from course_grader.grading import ClassGrader
from course_grader.limits import Limits

ASSIGNMENT = "ps01_finite_differences"
FULL = 10.0
CLASSMATES = ["bob", "cem", "dai", "eli"]
BOMBER = "aaa_bomber"  # graded first, so its bombs overlap the classmates
FOREVER = "    while True:\n"
BOMBS = {
    "forward_difference": "import os\ndef forward_difference(f, x, h):\n"
    + FOREVER
    + "        try:\n            os.fork()\n        except OSError:\n            pass\n",
    "central_difference": "def central_difference(f, x, h):\n    hoard = []\n"
    + FOREVER
    + "        hoard.append(bytearray(64 * 1024**2))\n",
    "gradient_fd": "import os\ndef gradient_fd(f, x, h=1e-6):\n    k = 0\n"
    + FOREVER
    + "        k += 1\n        with open(f'/tmp/fill-{k}', 'wb') as out:\n"
    "            out.write(bytes(32 * 1024**2))\n",
    "best_step": "import os\ndef best_step(f, x, f_prime, hs, method):\n    k = 0\n"
    + FOREVER
    + "        k += 1\n        with open(f'fill-{k}', 'wb') as out:\n"
    "            out.write(bytes(32 * 1024**2))\n",
}
# Without control groups (an ordinary user) the working folder and /tmp are on the grader's
# disk, bounded per file only (README, "Security model"): that class has no disk bombs.
PROCESS_AND_MEMORY = {k: v for k, v in BOMBS.items() if k in ("forward_difference", "central_difference")}
# The parts each bomber answered correctly: observed_order (1 point), and with two bombs only,
# also gradient_fd (2 + 1) and best_step (2).
POINTS = {"all": 1.0, "process_and_memory": 6.0}


def write_class(course: Path, bombs: dict[str, str]) -> None:
    """The bomber and four honest classmates, as an LMS export, in ``course/submissions``."""
    name = f"{ASSIGNMENT}.ipynb"
    source = nbformat.read(course / "solutions" / ASSIGNMENT / name, as_version=4)
    release = nbformat.read(course / "exercises" / ASSIGNMENT / name, as_version=4)
    hand_ins = {student: fill_in(release, source, {}) for student in CLASSMATES}
    hand_ins[BOMBER] = fill_in(release, source, bombs)
    for student, nb in hand_ins.items():
        (course / "submissions" / student).mkdir(parents=True)
        nbformat.write(nb, course / "submissions" / student / name)


def check_scores(scores: dict[str, float], bomber_points: float) -> None:
    assert {student: scores[student] for student in CLASSMATES} == dict.fromkeys(CLASSMATES, FULL), (
        f"classmates graded beside the bombs lost points: {scores}"
    )
    assert scores[BOMBER] == bomber_points, f"the bomber scored {scores[BOMBER]}, expected {bomber_points}"


@pytest.mark.skipif(os.geteuid() != 0, reason="grading as root needs root (CI runs as root)")
def test_bombs_cost_only_their_parts_graded_as_root(tmp_path):
    course = released_course(tmp_path, ASSIGNMENT, ROOT)
    write_class(course, BOMBS)
    grader = ClassGrader(course, timeout=8, log=lambda *a: None, limits=Limits(wall_seconds=40, cpu_seconds=40))
    assert grader.sandbox.groups is not None, "as root the grader must put each sandbox in control groups"
    outcomes = grader.collect(course / "submissions")
    grader.grade(outcomes, jobs=2)
    check_scores({o.student: o.score for o in outcomes}, POINTS["all"])
    bomber = {r.grade_id: r.message for r in grader.results[(BOMBER, ASSIGNMENT)]}
    assert "ran longer than 8 s" in bomber["test_forward_difference"], bomber


@pytest.mark.skipif(os.geteuid() != 0, reason="making a Unix user needs root (CI runs as root)")
def test_bombs_cost_only_their_parts_graded_by_an_ordinary_user():
    from unix_class import make_class, remove_class

    klass = make_class(n_students=1)
    try:
        course = klass.course()
        klass.as_user(klass.instructor, "nbgrader", "generate_assignment", ASSIGNMENT, "--force", cwd=course)
        write_class(course, PROCESS_AND_MEMORY)
        owner = course.stat()
        for path in [*(course / "submissions").rglob("*"), course / "submissions"]:
            os.chown(path, owner.st_uid, owner.st_gid)
        proc = klass.as_user(
            klass.instructor,
            "python",
            "-m",
            "course_grader.grading",
            "submissions",
            "--jobs",
            "2",
            "--timeout",
            "8",
            cwd=course,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        with open(course / "grades.csv") as table:
            scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(table)}
        check_scores(scores, POINTS["process_and_memory"])
    finally:
        remove_class(klass)


@pytest.mark.skipif(os.geteuid() != 0, reason="control groups need root (CI runs as root)")
def test_a_finished_sandbox_leaves_no_control_group_behind(tmp_path):
    from course_grader.sandbox import Sandbox

    sandbox = Sandbox(Limits())
    assert sandbox.groups is not None, "as root the grader must put each sandbox in control groups"
    run = sandbox.start(tmp_path)
    groups = list(run.groups)
    run.finish()
    assert groups and not [g for g in groups if g.exists()], "control groups were left behind"
