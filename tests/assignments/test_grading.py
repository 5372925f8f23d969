"""The instructor's grading run (`make autograde`) on a crafted class.

Every awkward hand-in a real class produces is here once; the batch must survive all of
them, give each the score a fair grader would, and never lose work.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import uuid
import warnings

import nbformat
import pytest
from nbgrader_helpers import BIN, ROOT, answer_cells, fill_in, graded_cells, nbgrader, nbgrader_meta

from course_grader.grading import ClassGrader, main

ASSIGNMENT = "ps01_finite_differences"


def colab_save(nb):
    """What a notebook looks like after a round trip through Colab: notebook and cell
    metadata replaced by Colab's own (the nbgrader keys are gone), fresh cell ids."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.metadata = {
        "colab": {"provenance": [], "name": f"{ASSIGNMENT}.ipynb"},
        "kernelspec": {"name": "python3", "display_name": "Python 3"},
        "language_info": {"name": "python"},
        "accelerator": "GPU",
    }
    for cell in nb.cells:
        cell.metadata = {"id": uuid.uuid4().hex[:12]} | (
            {"colab": {"base_uri": "https://localhost:8080/"}} if cell.cell_type == "code" else {}
        )
        cell.id = uuid.uuid4().hex[:12]
    return nb


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    course = tmp_path_factory.mktemp("class") / "course"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "solutions" / ASSIGNMENT, course / "solutions" / ASSIGNMENT)
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    name = f"{ASSIGNMENT}.ipynb"
    source = nbformat.read(course / "solutions" / ASSIGNMENT / name, as_version=4)
    release = nbformat.read(course / "exercises" / ASSIGNMENT / name, as_version=4)
    solved = fill_in(release, source, {})
    first_answer = next(iter(answer_cells(source)))
    first_source = answer_cells(source)[first_answer].source

    deleted = nbformat.from_dict(json.loads(json.dumps(solved)))
    last_test = list(graded_cells(solved))[-1]
    deleted.cells = [c for c in deleted.cells if nbgrader_meta(c).get("grade_id") != last_test]

    reordered = nbformat.from_dict(json.loads(json.dumps(solved)))
    cells = reordered.cells
    i = next(k for k, c in enumerate(cells) if nbgrader_meta(c).get("grade_id") == first_answer)
    cells[i], cells[i + 1] = cells[i + 1], cells[i]  # the test now runs before the code

    hand_ins = {
        "alice": solved,
        "bob_colab": colab_save(solved),
        "carol_deleted_a_test": deleted,
        "dave_reordered": reordered,
        "erin_endless_loop": fill_in(release, source, {first_answer: "while True:\n    pass\n" + first_source}),
        "frank_import_error": fill_in(
            release, source, {first_answer: "import a_module_that_is_not_there\n" + first_source}
        ),
        "gina_stderr": fill_in(
            release, source, {first_answer: "import sys\nprint('debug', file=sys.stderr)\n" + first_source}
        ),
        "untouched": release,
    }
    inbox = course / "submissions"
    for student, nb in hand_ins.items():
        (inbox / student).mkdir(parents=True)
        nbformat.write(nb, inbox / student / name)
    # Cells pasted from a classmate's notebook or merged by hand: an id twice, a cell without one.
    pasted = json.loads(nbformat.writes(solved))
    pasted["cells"][1]["id"] = pasted["cells"][0]["id"]
    del pasted["cells"][2]["id"]
    (inbox / "ivan_pasted_cells").mkdir()
    (inbox / "ivan_pasted_cells" / name).write_text(json.dumps(pasted))
    (inbox / "hank_broken_file").mkdir()
    (inbox / "hank_broken_file" / name).write_text('{"cells": [ this is not json')

    grader = ClassGrader(course, timeout=10, log=lambda *a: None)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        outcomes = {o.student: o for o in grader.collect(inbox)}
    assert [str(w.message) for w in seen if w.category.__module__.startswith("nbformat")] == []
    grader.grade(list(outcomes.values()), jobs=2)
    grader.export(outcomes=list(outcomes.values()))
    return course, grader, outcomes, solved


def test_full_marks_for_correct_work_however_it_was_handed_in(graded_class):
    course, grader, outcomes, _ = graded_class
    for student in ("alice", "bob_colab", "carol_deleted_a_test", "dave_reordered", "gina_stderr", "ivan_pasted_cells"):
        out = outcomes[student]
        assert out.status == "graded", (student, out.status, out.notes)
        assert out.score == out.max_score > 0, (student, out.score, out.max_score, out.notes)
    assert any("metadata" in n for n in outcomes["bob_colab"].notes)
    assert any("order" in n for n in outcomes["dave_reordered"].notes)
    assert outcomes["ivan_pasted_cells"].notes == [
        "gave cells that repeated another cell's id ids of their own",
        "gave cells without an id ids of their own",
    ]


def test_broken_code_loses_only_its_own_part(graded_class):
    _, _, outcomes, _ = graded_class
    full = outcomes["alice"].max_score
    for student in ("erin_endless_loop", "frank_import_error"):
        out = outcomes[student]
        assert out.status == "graded", (student, out.notes)
        assert 0 < out.score < full, (student, out.score)


def test_untouched_notebook_scores_zero(graded_class):
    assert outcomes_score(graded_class, "untouched") == 0


def outcomes_score(graded_class, student):
    return graded_class[2][student].score


def test_unreadable_file_is_reported_and_the_batch_goes_on(graded_class):
    course, _, outcomes, _ = graded_class
    out = outcomes["hank_broken_file"]
    assert out.status == "unreadable"
    assert "not a readable notebook" in out.notes[0] and "hand it in anew" in out.notes[0]
    assert not (course / "submitted" / "hank_broken_file").exists()


def test_grades_csv_and_feedback(graded_class):
    course, _, outcomes, _ = graded_class
    with open(course / "grades.csv") as f:
        rows = {row["student_id"]: row for row in csv.DictReader(f)}
    graded = [s for s, o in outcomes.items() if o.status == "graded"]
    assert set(graded) <= set(rows)
    assert float(rows["alice"]["score"]) == outcomes["alice"].score
    import course_lib

    assert {row["course_lib_version"] for row in rows.values()} == {course_lib.__version__}, (
        "every grade records the course_lib release it was checked against"
    )
    for student in graded:
        assert (course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()


def test_a_second_run_never_overwrites_graded_work(graded_class):
    course, grader, _, solved = graded_class
    graded_nb = course / "autograded" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    submitted_nb = course / "submitted" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    before = (graded_nb.read_bytes(), submitted_nb.read_bytes())

    changed = fill_in(solved, solved, {})
    changed.cells.append(nbformat.v4.new_markdown_cell("a late edit"))
    nbformat.write(changed, course / "submissions" / "alice" / f"{ASSIGNMENT}.ipynb")
    again = {o.student: o for o in grader.collect(course / "submissions")}
    assert again["alice"].status == "kept-graded"
    assert again["bob_colab"].status == "unchanged"
    grader.grade(list(again.values()))
    assert (graded_nb.read_bytes(), submitted_nb.read_bytes()) == before


def test_hand_ins_that_nbgrader_collect_put_into_submitted_are_graded_once(graded_class):
    """On a hub, `nbgrader collect` writes submitted/<student>/<assignment>/; `make autograde`
    grades those too, without an inbox entry, and never twice."""
    course, grader, _, solved = graded_class
    folder = course / "submitted" / "zoe_on_the_hub" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(solved, folder / f"{ASSIGNMENT}.ipynb")
    (folder / "timestamp.txt").write_text("2026-11-25 09:00:00.000000 UTC")
    (folder / "submission_secret.txt").write_text("0123456789abcdef")
    found = grader.collected()
    assert [(o.student, o.status) for o in found if o.student == "zoe_on_the_hub"] == [("zoe_on_the_hub", "unchanged")]
    grader.grade(found)
    zoe = next(o for o in found if o.student == "zoe_on_the_hub")
    assert zoe.status == "graded" and zoe.score == zoe.max_score > 0
    again = grader.collected()
    grader.grade(again)
    assert all(o.status == "unchanged" for o in again), "graded once, not again"

    # nbgrader release_feedback hands out *our* feedback page: it needs the timestamp and
    # the submission's secret beside it, as nbgrader's own autograde leaves them.
    page = course / "feedback" / "zoe_on_the_hub" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    for name in ("timestamp.txt", "submission_secret.txt"):
        assert (page.parent / name).read_text() == (folder / name).read_text()
        assert (course / "autograded" / "zoe_on_the_hub" / ASSIGNMENT / name).read_text() == (folder / name).read_text()
    exchange = course.parent / "exchange"
    exchange.mkdir()
    nbgrader("release_feedback", ASSIGNMENT, "--student=zoe_on_the_hub", f"--Exchange.root={exchange}", cwd=course)
    [released] = (exchange / "autodiff-from-scratch" / "feedback").glob("*.html")
    assert released.read_bytes() == page.read_bytes()


def test_command_line_reports_missing_inbox(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere"), "--course", str(tmp_path)]) == 2
    assert "Unzip the hand-ins" in capsys.readouterr().out


def test_make_release_keeps_a_copy_of_work_it_would_replace(tmp_path):
    """`make release` regenerates exercises/<assignment>/ whole: a student's answers saved in
    the released notebook, or a file of their own beside it, must survive in backups/."""
    course = tmp_path / "course"
    course.mkdir()
    for name in ("Makefile", "nbgrader_config.py", ".gitignore"):
        shutil.copy(ROOT / name, course / name)
    for folder in ("solutions", "exercises"):
        shutil.copytree(ROOT / folder / ASSIGNMENT, course / folder / ASSIGNMENT)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
        subprocess.run(git + args, cwd=course, check=True)
    released = course / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    pristine = released.read_bytes()
    answers = pristine.replace(b"raise NotImplementedError()", b"return 42  # my answer")
    assert answers != pristine
    released.write_bytes(answers)
    (released.parent / "my_notes.txt").write_text("notes")

    def release():  # the repository's target, with this test's environment as the set-up
        return subprocess.run(
            ["make", "-o", "setup", "release", f"BIN={BIN}"], cwd=course, capture_output=True, text=True, check=True
        ).stdout

    out = release()
    assert released.read_bytes() == pristine, "make release must regenerate the student version"
    assert not (released.parent / "my_notes.txt").exists()
    [backup] = (course / "backups").iterdir()
    assert (backup / ASSIGNMENT / released.name).read_bytes() == answers
    assert (backup / ASSIGNMENT / "my_notes.txt").read_text() == "notes"
    assert f"a copy is in backups/{backup.name}/{ASSIGNMENT}/" in out

    assert "a copy is in" not in release(), "nothing to keep when exercises/ matches the commit"
    status = subprocess.run(["git", "status", "--porcelain"], cwd=course, capture_output=True, text=True).stdout
    assert status == "", f"make release left changes beside the git-ignored backups/ and gradebook: {status}"


def test_grading_refuses_without_a_sandbox_unless_told(tmp_path, monkeypatch, capsys):
    (tmp_path / "submissions").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on this PATH
    assert main([str(tmp_path / "submissions"), "--course", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "bubblewrap (bwrap) is not installed" in out and "--unsafe-no-sandbox" in out
    assert ClassGrader(tmp_path, unsafe=True).sandbox.description.startswith("NO SANDBOX")


def test_course_lib_carries_no_grading_code():
    assert not (ROOT / "course_lib" / "grading.py").exists()
    for path in (ROOT / "course_lib").rglob("*.py"):
        text = path.read_text()
        assert "nbgrader" not in text and "course_grader" not in text, path
