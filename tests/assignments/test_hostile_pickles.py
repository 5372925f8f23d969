"""Hostile and honest pickles of the test's objects (``pickle.dumps`` of a stand-in asks the judge for a deep
copy, ``course_grader/pickled_stand_ins.py``), red team of commit 3ec0c47.

Found: each of the test's objects in one ``pickle.dumps`` was copied on its own, so a graph pickled as a list of
its nodes came back as separate graphs: ps04's ``is_topological`` that first takes
``pickle.loads(pickle.dumps((list(order), output)))`` (a snapshot to work on) found every node's parents missing
from its copy of the order, 0/2 where Jupyter gives 2/2. One pickle's copies now share one memo in the judge, and
each ``pickle.loads`` copies that copy again with one memo of its own, so the same bytes loaded twice are two
objects, as in Jupyter (they were one: what the student's code set on the first showed in the second).

Held (tried, in the real sandbox or against the module):

- Bytes made by hand naming ``held`` (``revived`` before) with every number from 0 to 3,000 in a ps04 part: only
  the stand-ins the process already holds come back, each the very stand-in ``_HELD`` has, nothing else; the
  rest are refused (UnpicklingError). A stand-in made by hand (``type(node)(n)``) was already possible: the
  judge serves only numbers it sent, so replacing ``_HELD`` or ``revived`` from the student's code changes what
  their own process unpickles and nothing of the judge's.
- A hidden test's function pickled: the judge's deep copy of a function is the function itself, the same
  stand-in, callable only if it was granted, its names and defaults placeholders as before; a
  ``functools.partial`` of one pickles as a new partial that is not callable (not granted) and shows what the
  original shows. The judge's copy runs the judge's ``__reduce_ex__``/``__deepcopy__`` of its objects, never the
  student's: methods lent to a reference class never include Python's special names (``their_methods.py``).
- The judge's memory: repeated ``pickle.dumps`` of all 300 nodes of a ps04 hidden graph for 50 s took the judge
  to 365 MB resident (bounded by the test's time, the judge's RLIMIT_DATA and one part: the judge's codec, which
  keeps the copies, ends with the part, and the next parts scored 2/2). ``copy.deepcopy`` in a loop is the same.
- ps12's program after a slip in ``make_program``, pickled by ``compile_program``: 5/5 as in Jupyter
  (``test_hostile_ps09_ps12_ps13_fifth.py``).
"""

from __future__ import annotations

import pickle

import pytest
from nbgrader_helpers import solution_answer
from test_verdict_seams import grade

from course_grader.pickled_stand_ins import STREAM, Pending, held, hold, revived

PS04 = "ps04_topological_sort"

# ps04: the solution's is_topological, on a pickled snapshot of the order and the output (one graph in Jupyter).
PICKLED_SNAPSHOT = "import pickle\n" + solution_answer(PS04, "is_topological").replace(
    "    position = {}",
    "    order, output = pickle.loads(pickle.dumps((list(order), output)))\n    position = {}",
    1,
)

# ps04: a topo_sort that first tries bytes naming every number up to 3,000 (the solution's order otherwise).
FORGED_BYTES = """
import pickle as _pickle
import course_grader.pickled_stand_ins as _pickled


class _Named:
    def __init__(self, number):
        self.number = number

    def __reduce_ex__(self, protocol):
        return _pickled.held, (self.number,)


def _leaks():
    found = []
    for number in range(3000):
        try:
            got = _pickle.loads(_pickle.dumps(_Named(number)))
        except _pickle.UnpicklingError:
            continue
        if _pickled._HELD[0].get(number) is not got:
            found.append(number)
    return found


""" + solution_answer(PS04, "topo_sort").replace(
    "    ### BEGIN SOLUTION", "    if _leaks():\n        return []\n    ### BEGIN SOLUTION", 1
)


def test_ps04_a_pickled_snapshot_of_the_graph_keeps_its_points():
    results = grade(
        PS04,
        {"is_topological": PICKLED_SNAPSHOT, "topo_sort": FORGED_BYTES},
        {"test_is_topological", "test_topo_sort"},
        60,
    )
    assert (results["test_is_topological"][0], results["test_topo_sort"][0]) == (2.0, 2.0), results


class _Graph:
    def __init__(self, parents=()):
        self.parents = list(parents)


def test_one_pickle_is_one_graph_and_each_load_a_new_one():
    """Without a runner: plain objects stand for stand-ins (a deepcopy is what the judge's copy gives)."""
    a = _Graph()
    b = _Graph([a])
    stand_ins = {1: a, 2: b}

    class _StandIn:
        def __init__(self, obj):
            self.obj = obj

        def __reduce_ex__(self, protocol):
            return revived, (STREAM, Pending(self.obj))

    def number_of(value):  # the judge's copy gets a number of its own
        stand_ins[len(stand_ins) + 1] = value
        return len(stand_ins)

    hold(stand_ins, number_of)
    try:
        data = pickle.dumps([_StandIn(a), _StandIn(b)])
        first, second = pickle.loads(data), pickle.loads(data)
        assert first[1].parents[0] is first[0] and second[1].parents[0] is second[0]
        assert first[0] is not second[0] and first[0] is not a
        assert pickle.loads(pickle.dumps([_StandIn(b)]))[0].parents[0] is not first[0]  # a new pickle, a new graph
    finally:
        hold({})


class _Named:
    """Bytes made by hand: they name a number of the judge's directly."""

    def __init__(self, number):
        self.number = number

    def __reduce_ex__(self, protocol):
        return held, (self.number,)


def test_pickled_bytes_read_back_only_as_a_stand_in_the_process_holds():
    kept = object()
    hold({7: kept})
    try:
        assert pickle.loads(pickle.dumps(_Named(7))) is kept
        for forged in (8, "7", 7.0):  # a number made by hand, or not a number at all
            with pytest.raises(pickle.UnpicklingError, match="reads back only in the process that pickled it"):
                pickle.loads(pickle.dumps(_Named(forged)))
    finally:
        hold({})
