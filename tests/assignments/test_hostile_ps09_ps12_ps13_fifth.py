"""Hostile and honest students against ps09 (integrated gradients), ps12 (tracing) and ps13 (the capstone),
red team 33, the fifth pass.

Tried: ps13's checkpoints kept in a ``np.memmap`` (held: an ndarray subclass crosses as its numbers, 6/6 as in
Jupyter), in a NumPy structured array and in a ``np.recarray`` (found, below); ps12's ``compile_program`` that
copies the program it is given first, by ``pickle`` (held without a slip: the program is theirs) and by
``copy.deepcopy``, after a typical slip in ``make_program`` (found, below); a hidden test's function read by
``inspect.signature`` (held: ps09, ps12 and ps13 hand no ``functools.partial`` nor wrapped function of a hidden
test to the student's code, and their own functions show numbered parameters); attribute writes on copies of
the test's objects and on objects of a reference's class (held: only the copy's own attributes change, and no
dunder); deques and ``array.array``s forged or malformed (held: ``test_hostile_ps11_ps12_ps13_fourth.py``).

Found: ps13's memory is measured in a forked copy whose answer must cross as plain data. Checkpoints kept as
the records of a structured array (``np.array(checkpoints, dtype=[("x", "f8"), ...])``) or a ``np.recarray``
crossed by handle and the part failed with "return plain data": 0/6 where Jupyter gives 6/6 (each record has 4
real numbers). A structured array of numbers now crosses as the list of its records, tuples of numbers.

Found: after a slip in ps12's ``make_program``, the reference's ``make_program`` makes the program in the judge,
of the student's Vars and Equations. A ``compile_program`` that starts with ``copy.deepcopy(program)`` had the
judge copy it, and the judge could not copy the student's objects in it (AttributeError): test_jit 0/5 where
Jupyter gives 5/5. The judge's copy of an object of the student's is now made where it lives, by their process,
with one memo there for the whole of one deepcopy (a Var shared by two equations stays shared in the copy).
The same program pickled and unpickled failed too (0/5, Jupyter 5/5): a stand-in now pickles as the number of a
deep copy the judge makes, which ``pickle.loads`` turns back into the copy's stand-in; bytes naming a number the
process holds no stand-in for are refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from nbgrader_helpers import solution_answer
from test_hostile_ps11_ps12_ps13_fourth import CHECKPOINTS_IN_A_DEQUE
from test_verdict_seams import PS13, grade

from course_grader.plain_data import Codec

PS12 = "ps12_tracing"


# ps13: the solution's checkpointed gradient, its checkpoints then kept as records (CONVERT).
CHECKPOINTS_AS_RECORDS = (
    CHECKPOINTS_IN_A_DEQUE.replace("from collections import deque", "import numpy as np")
    .replace(", deque()", ", []")
    .replace("    k_leaf, adjoint, height", "    checkpoints = CONVERT\n    k_leaf, adjoint, height", 1)
    .replace("Value(s) for s in checkpoints[index]", "Value(float(s)) for s in checkpoints[index]")
)
RECORDS = {
    "structured": 'np.array(checkpoints, dtype=[("x", "f8"), ("y", "f8"), ("vx", "f8"), ("vy", "f8")])',
    "recarray": 'np.rec.fromrecords(checkpoints, names="x,y,vx,vy")',
}


def test_structured_arrays_cross_as_their_records():
    """A structured array of numbers (or a recarray) arrives as the list of its records, each a tuple of
    numbers; one with a field of objects stays the student's, by handle."""
    runner = Codec("$h", "$r", lambda n, k, like, able: None)
    judge = Codec("$r", "$h", lambda n, k, like, able: None)
    records = np.array([(1.0, 2), (3.5, -4)], dtype=[("x", "f8"), ("n", "i8")])
    assert judge.decode(runner.encode([records, records.view(np.recarray)])) == [[(1.0, 2), (3.5, -4)]] * 2
    objects = np.array([(1.0, object())], dtype=[("x", "f8"), ("o", "O")])
    assert set(runner.encode(objects)) == {"$h"}


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_ps13_checkpoints_as_records_keep_their_points(kind):
    answer = CHECKPOINTS_AS_RECORDS.replace("CONVERT", RECORDS[kind])
    results = grade(PS13, {"checkpointed_gradient": answer}, {"test_checkpointed_gradient"}, 60)
    assert results["test_checkpointed_gradient"][0] == 6.0, results


# ps12: a typical slip in make_program (the results' Tracers as the outputs, not their Vars): test_jit then
# runs the reference's make_program, in the judge, with the student's compile_program, which copies first.
SLIP_IN_MAKE_PROGRAM = solution_answer(PS12, "make_program").replace("[atom(r) for r in results]", "list(results)")


def copying_first(how: str, line: str) -> str:
    return f"import {how}\n" + solution_answer(PS12, "compile_program").replace(
        "    calls = {", f"    program = {line}\n    calls = {{", 1
    )


def test_ps12_a_deepcopy_of_the_references_program_keeps_its_points():
    answers = {
        "make_program": SLIP_IN_MAKE_PROGRAM,
        "compile_program": copying_first("copy", "copy.deepcopy(program)"),
    }
    results = grade(PS12, answers, {"test_make_program", "test_jit"}, 60)
    assert (results["test_make_program"][0], results["test_jit"][0]) == (0.0, 5.0), results


def test_ps12_a_pickle_of_the_references_program_keeps_its_points():
    answers = {
        "make_program": SLIP_IN_MAKE_PROGRAM,
        "compile_program": copying_first("pickle", "pickle.loads(pickle.dumps(program))"),
    }
    results = grade(PS12, answers, {"test_make_program", "test_jit"}, 60)
    assert (results["test_make_program"][0], results["test_jit"][0]) == (0.0, 5.0), results
