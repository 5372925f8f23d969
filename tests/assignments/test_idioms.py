"""Honest idioms score as they do in Jupyter: a differential fuzzer of hand-ins (issue 27).

Every answer of an assignment is rewritten in the idioms of :mod:`idioms` (other containers,
decorators, threads, copies, lambdas, the set-up classes given helpers or subclassed ...), then
graded in the sandbox and run top to bottom in a plain kernel with the hidden tests in place:
every part must score the same both ways. The solution so rewritten must also score full marks
in Jupyter (the rewrites are honest), and a typical mistake so rewritten must cost in Jupyter
what its entry in ``tests/mistakes`` says, so that both ways are tested against something.

The normal run rewrites each assignment's solution and one of its mistakes in every idiom at
once; ``make fuzz-idioms`` (``IDIOM_ROUNDS``, ``IDIOM_SEED``) rewrites the solution, the honest
hand-in and every mistake of every assignment in random handfuls of idioms.
"""

from __future__ import annotations

import os
import random
import sys

import pytest
from idioms import IDIOMS, differences, notebooks, rewrite, rewritten_answers
from nbgrader_helpers import ROOT, load_honest, load_mistakes

from course_grader.sandbox import find_bwrap

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="the grader's sandbox needs bubblewrap")

ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())
ROUNDS = int(os.environ.get("IDIOM_ROUNDS", "0"))  # make fuzz-idioms: random handfuls per hand-in
SEED = int(os.environ.get("IDIOM_SEED", "2026"))


def full_marks(assignment: str) -> dict[str, float]:
    source, _ = notebooks(assignment)
    return {
        cell.metadata.nbgrader["grade_id"]: float(cell.metadata.nbgrader["points"])
        for cell in source.cells
        if cell.metadata.get("nbgrader", {}).get("grade") and not cell.metadata.nbgrader.get("solution")
    }


def assert_graded_as_in_jupyter(assignment: str, answers: dict[str, str], what: str) -> dict[str, float]:
    """Grade and run ``answers``; every part the same both ways. Returns Jupyter's points."""
    jupyter, differ = differences(assignment, answers)
    assert not differ, f"{assignment}, {what}: graded otherwise than in Jupyter: {differ}"
    return jupyter


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_rewrite_compiles_and_all_change_every_answer_cell(assignment):
    as_written = rewritten_answers(assignment, {}, [])  # the answers, only parsed and unparsed
    for idiom in IDIOMS:
        for grade_id, text in rewritten_answers(assignment, {}, [idiom]).items():
            compile(text, f"{assignment}:{grade_id}:{idiom}", "exec")
    rewritten = rewritten_answers(assignment, {}, IDIOMS)
    assert [g for g in as_written if rewritten[g] == as_written[g]] == []


def test_every_idiom_changes_some_answer():
    for idiom in IDIOMS:
        assert any(
            rewritten_answers(assignment, {}, [idiom]) != rewritten_answers(assignment, {}, [])
            for assignment in ASSIGNMENTS
        ), f"{idiom} changes no answer of any assignment"


@pytest.mark.filterwarnings("ignore:.*(draft|tuned):UserWarning")
def test_a_rewrite_keeps_what_the_answer_computes():
    """The rewrites themselves, run: a function that returns a list of floats and a tuple, in
    every idiom at once, returns equal values."""
    source = "def pairs(xs):\n    return [(x, 2.0 * x) for x in xs], {'n': len(xs)}\n"
    scope: dict = {}
    limit = sys.getrecursionlimit()
    try:
        exec(rewrite(source, IDIOMS), scope)
        assert scope["pairs"]([1.0, 2.5]) == ([(1.0, 2.0), (2.5, 5.0)], {"n": 2})
        assert type(scope["pairs"]([1.0])[0]) is not list  # returned in a container of the student's
    finally:  # quiet_numpy's prelude raises the limit of the process it runs in: this test's worker
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_solution_in_every_idiom_scores_full_marks_both_ways(assignment):
    jupyter = assert_graded_as_in_jupyter(assignment, rewritten_answers(assignment, {}, IDIOMS), "the solution")
    assert jupyter == full_marks(assignment)


def _one_mistake(assignment: str) -> tuple[str, dict]:
    mistakes = load_mistakes(assignment)
    name = random.Random(f"{SEED}:{assignment}").choice(sorted(mistakes))
    return name, mistakes[name]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_mistake_in_every_idiom_costs_the_same_both_ways(assignment):
    name, mistake = _one_mistake(assignment)
    # Copies of the inputs would cure the mistakes that overwrite them (ps01's gradient_fd).
    answers = rewritten_answers(assignment, mistake["replace"], [i for i in IDIOMS if i != "copied_inputs"])
    jupyter = assert_graded_as_in_jupyter(assignment, answers, f"the mistake {name}")
    lost = {part for part, points in jupyter.items() if points == 0}
    assert lost == set(mistake["fails"]), f"{name} in every idiom: Jupyter took the points of {lost}"


def _fuzz_cases() -> list:
    rng = random.Random(SEED)
    cases = []
    for _ in range(ROUNDS):
        for assignment in ASSIGNMENTS:
            bases = {"solution": {}, "honest": load_honest(assignment)}
            bases.update((f"mistake {n}", m["replace"]) for n, m in sorted(load_mistakes(assignment).items()))
            for base, answers in bases.items():
                idioms = sorted(rng.sample(IDIOMS, rng.randint(1, 4)))
                cases.append(pytest.param(assignment, answers, idioms, id=f"{assignment}-{base}-{'+'.join(idioms)}"))
    return cases


if ROUNDS:  # make fuzz-idioms (the normal run would otherwise report an empty, skipped case)

    @pytest.mark.parametrize(("assignment", "answers", "idioms"), _fuzz_cases())
    def test_random_idioms_score_as_in_jupyter(assignment, answers, idioms):
        assert_graded_as_in_jupyter(assignment, rewritten_answers(assignment, answers, idioms), "+".join(idioms))
