"""The nbgrader pipeline, end to end, for every assignment in ``solutions/``.

For each assignment a throw-away course folder is made with the repository's
``nbgrader_config.py`` and the source notebook; there nbgrader generates the student
version and ``course_grader`` (what ``make autograde`` runs: each part in a sandboxed
process) grades a small class of crafted submissions in one run:

- ``solution``: the student version with every answer cell filled in from the source;
- ``untouched``: the student version exactly as released;
- ``mistake_<name>``: the solution with the answer cells of one typical mistake
  (``tests/mistakes/<assignment>.py``) swapped in;
- ``honest``: every answer cell rewritten correctly in other idioms than the solution's
  (``HONEST`` in the same file): ids or the objects as dict keys, ``is`` and ``isinstance``
  tests, recursion, loops for NumPy, helper classes, other containers;
- ``loop``: the solution whose first answer cell starts with an endless loop (graded beside the
  others, in a copy of the course, with a shorter time-out).

Scores are read back from nbgrader's gradebook, where the grader records them.
"""

from __future__ import annotations

import ast
import shutil
import threading
from pathlib import Path

import nbformat
import pytest
from nbgrader_helpers import ROOT, answer_cells, fill_in, graded_cells, load_honest, load_mistakes, nbgrader

from course_grader.grading import ClassGrader

ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())
# The grader's default (`make autograde`): long enough for every honest cell in the course with
# make test's workers grading beside each other on two cores. References standing in for a slip
# make many round trips (ps03's: 3-4 s alone, over 20 s in a loaded run; ps08's train_step, 800
# steps for each of test_train's five trainings: about 34 s at a load of 9); a passing run never
# waits for it.
GRADING_TIMEOUT = 60
# The endless loop's: its first part waits this long; its other parts are the solution's.
LOOP_TIMEOUT = 8


class GradedCourse:
    """A temporary course in which one assignment was generated and autograded."""

    def __init__(self, assignment: str, base: Path):
        self.assignment = assignment
        self.root = base / "course"
        self.root.mkdir()
        shutil.copy(ROOT / "nbgrader_config.py", self.root)
        shutil.copytree(ROOT / "solutions" / assignment, self.root / "solutions" / assignment)
        nbgrader("generate_assignment", assignment, "--force", cwd=self.root)

        name = f"{assignment}.ipynb"
        self.source = nbformat.read(self.root / "solutions" / assignment / name, as_version=4)
        self.release = nbformat.read(self.root / "exercises" / assignment / name, as_version=4)
        self.mistakes = load_mistakes(assignment)
        self.honest = load_honest(assignment)
        first_answer, first_cell = next(iter(answer_cells(self.source).items()))
        # A first answer that never finishes. It waits rather than spins: the time-out is on the
        # wall clock either way, and a spinning loop would burn a core for LOOP_TIMEOUT seconds
        # in every assignment's run (test_grading and the hostile classes grade spinning ones).
        never_ends = "import time\nwhile True:\n    time.sleep(0.1)\n"
        submissions = {
            "solution": fill_in(self.release, self.source, {}),
            "untouched": self.release,
        }
        if self.honest:
            submissions["honest"] = fill_in(self.release, self.source, self.honest)
        for mistake, spec in self.mistakes.items():
            submissions[f"mistake_{mistake}"] = fill_in(self.release, self.source, spec["replace"])
        for student, nb in submissions.items():
            folder = self.root / "submissions" / student
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / name)

        # The endless loop is graded in a course of its own, with a shorter time-out, beside the
        # others: its first part only waits, and the class's time-out is for honest cells.
        self.loop_root = base / "loop-course"
        shutil.copytree(self.root, self.loop_root, ignore=shutil.ignore_patterns("submissions"))
        (self.loop_root / "submissions" / "loop").mkdir(parents=True)
        loop = fill_in(self.release, self.source, {first_answer: never_ends + first_cell.source})
        nbformat.write(loop, self.loop_root / "submissions" / "loop" / name)
        loop_grader = ClassGrader(self.loop_root, timeout=LOOP_TIMEOUT, log=lambda *a: None)
        looping = threading.Thread(
            target=loop_grader.grade, args=(loop_grader.collect(self.loop_root / "submissions"),)
        )
        looping.start()
        self.grader = ClassGrader(self.root, timeout=GRADING_TIMEOUT, log=lambda *a: None)
        # Two hand-ins at a time, as `make autograde` runs on two cores.
        self.grader.grade(self.grader.collect(self.root / "submissions"), jobs=2)
        looping.join()

    def scores(self, student: str) -> tuple[float, float, dict[str, float]]:
        from nbgrader.api import Gradebook

        root = self.loop_root if student == "loop" else self.root
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            submission = gb.find_submission(self.assignment, student)
            notebook = submission.notebooks[0]
            parts = {grade.name: grade.score for grade in notebook.grades}
            return submission.score, submission.max_score, parts

    def feedback(self, student: str) -> dict[str, str]:
        """Each part's feedback message, as the student reads it."""
        return {r.grade_id: r.message for r in self.grader.results[(student, self.assignment)]}


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def course(request, tmp_path_factory) -> GradedCourse:
    return GradedCourse(request.param, tmp_path_factory.mktemp(request.param))


def test_there_are_assignments():
    assert ASSIGNMENTS, "no assignment found in solutions/<name>/<name>.ipynb"


def test_regenerating_reproduces_exercises_byte_for_byte(course):
    generated = course.root / "exercises" / course.assignment
    committed = ROOT / "exercises" / course.assignment
    files = sorted(p.relative_to(generated) for p in generated.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file()), (
        "exercises/ differs from what nbgrader generates: run `make release` and commit the result"
    )
    for rel in files:
        assert (generated / rel).read_bytes() == (committed / rel).read_bytes(), (
            f"exercises/{course.assignment}/{rel} is stale or hand-edited: run `make release`"
        )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_version_leaks_nothing(assignment):
    for path in (ROOT / "exercises" / assignment).rglob("*.ipynb"):
        text = path.read_text()
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in text, f"{path} contains '{marker}'"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_is_well_formed(assignment):
    """At least 3 graded parts; every test cell ends in an assert, not an expression
    (nbgrader reads a numeric last expression as partial credit); a typical mistake exists."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    tests = graded_cells(nb)
    assert len(tests) >= 3, f"{assignment} has {len(tests)} graded test cells, the course wants at least 3"
    for grade_id, cell in tests.items():
        visible = cell.source.split("### BEGIN HIDDEN TESTS")[0]
        assert visible.strip(), f"{grade_id}: keep at least one visible line in every test cell"
        body = ast.parse(cell.source).body
        assert body and not isinstance(body[-1], ast.Expr), (
            f"{grade_id}: the last statement is an expression; end test cells with asserts"
        )
    assert load_mistakes(assignment), f"tests/mistakes/{assignment}.py must list a typical mistake"
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "COURSE_LIB" in first.source, "the first code cell must be the course_lib set-up cell"


def test_solution_scores_full_marks(course):
    score, max_score, parts = course.scores("solution")
    assert max_score > 0
    assert score == max_score, f"solution lost points: {parts}"


def test_honest_idioms_score_full_marks(course):
    """The fair score of a correct hand-in is full marks, whatever idioms it is written in."""
    assert set(course.honest) == set(answer_cells(course.source)), "the honest hand-in rewrites every answer cell"
    score, max_score, parts = course.scores("honest")
    lost = {part: course.feedback("honest")[part] for part, points in parts.items() if not points}
    assert score == max_score, f"a correct hand-in in other idioms lost points: {lost}"


def test_untouched_student_version_scores_zero(course):
    score, max_score, parts = course.scores("untouched")
    assert score == 0, f"the untouched student version earned points: {parts}"


def test_typical_mistakes_score_partial_credit(course):
    assert course.mistakes
    for mistake, spec in course.mistakes.items():
        student = f"mistake_{mistake}"
        score, max_score, parts = course.scores(student)
        assert 0 < score < max_score, f"{mistake}: {score}/{max_score} is not partial credit ({parts})"
        failed = {name for name, points in parts.items() if points == 0}
        assert failed == set(spec["fails"]), (
            f"{mistake}: expected {sorted(spec['fails'])} to fail, got {sorted(failed)}: "
            + "; ".join(f"{g}: {m[:300]}" for g, m in course.feedback(student).items() if g in failed)
        )
        shown = "".join(course.feedback(student)[grade_id] for grade_id in spec["fails"])
        assert spec["message"] in shown, (
            f"{mistake}: the failing test should tell the student '{spec['message']}', it showed: {shown[:500]}"
        )


def test_endless_loop_costs_one_part_only(course):
    score, max_score, parts = course.scores("loop")
    first_test = next(iter(graded_cells(course.source)))
    assert parts[first_test] == 0, "the part whose code never finishes must score zero"
    assert score > 0, f"the other parts must still be graded after a time-out: {parts}"
