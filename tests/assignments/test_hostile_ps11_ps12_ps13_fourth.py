"""Hostile and honest students against ps11 (the cheap-gradient ratio), ps12 (tracing) and ps13 (the
capstone), red team 29, the fourth pass.

Held, graded beside Jupyter (``idioms.differences``): ps11's answers on object arrays of Nums and Duals
(``np.vectorize(Num)``), passes from a generator, a tape in a ``dataclass(slots=True)``, ``functools.partial``
handed to ``count_ops`` and a ``match`` over the costs; ps12's ``atom`` by ``functools.singledispatch``,
``match`` on ``sum``'s axis and on the transposed equations (class patterns on Vars), tracing inside a
``contextlib`` context manager, dead code found with a ``deque``, a compiler in a ``dataclass``, a jit whose
caches live in a ``weakref.WeakKeyDictionary`` keyed by the test's function behind ``functools.wraps``, and a
jit that traces by itself through an ``lru_cache`` after a mistake in part 1 (the references' Tracer methods
called back from the student's Tracers), a ``class Tracer(Tracer)`` with ``__slots__`` and its own operators
(right, and with a broadcasting slip the references then patch), a ``copy.deepcopy`` of the program a reference
``make_program`` made in the judge, and the jit's idioms after a slip in ``make_program``; ps13's ``match`` on the
state, a descent from a generator, a step program written by a ``dataclass(slots=True)`` with rules in a dict
keyed by the nodes, dead code by a ``deque``, a compiler exec'ing into a ``types.ModuleType``, each also after
slips in ``final_step`` and ``step_program``. The measured copy's shared memory is already counted, and a
hand-in that recognises the probes stays as the README's "Not guaranteed" list says.

Found: ps13's checkpointed gradient is measured in a forked copy of the student's process that ends with its
answer, so the answer must cross by value; checkpoints kept in a ``collections.deque`` (a stack, walked
backwards) or each in an ``array("d")`` (four numbers, compactly) crossed by handle and the part failed with
"return plain data": 0/6 where Jupyter gives 6/6. Both now cross as plain data and are rebuilt as they were.

Found: ps13's memory is measured on one call, which the student's code can tell from the others (Python's
tracemalloc traces during the notebook's ``peak_memory``; the grader's measured copy has a pid of its own). A
``checkpointed_gradient`` that checkpoints nothing, answering the measured call by forward mode (a dual number
of its own: little memory) and the others, the probes' flights among them, with the whole flight recorded and
one ``backward()``, scored 6/6, in Jupyter too (fair 0/6). The hidden memory check now flies with the probes,
so the measured call must carry the gradient back through them by ``backward()`` as well.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import PS13, grade

from course_grader.plain_data import Codec
from course_grader.protocol import ProtocolError

# ps13: the solution's checkpointed gradient, its checkpoints kept in a deque.
CHECKPOINTS_IN_A_DEQUE = '''
from collections import deque


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    """d height / d (v, theta, k) with checkpoints every `every` steps: (height, gradient, checkpoints)."""
    state, steps, checkpoints = launch(float(v), float(theta)), 0, deque()
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(state))
        state = heun_step(state, k, dt)
        steps += 1
    k_leaf, adjoint, height = Value(k), None, None
    for index in reversed(range(max(len(checkpoints), 1))):
        if index == 0:
            v_leaf, theta_leaf = Value(v), Value(theta)
            begin = state = launch(v_leaf, theta_leaf)
        else:
            begin = state = tuple(Value(s) for s in checkpoints[index])
        for _ in range(index * every, min((index + 1) * every, steps)):
            state = heun_step(state, k_leaf, dt)
        if adjoint is None:
            out = final_step(state, k_leaf)
            height = out.data
        else:
            out = sum(s * a for s, a in zip(state, adjoint))
        out.backward()
        if index:
            adjoint = [s.grad for s in begin]
        del out, state
    return height, [v_leaf.grad, theta_leaf.grad, k_leaf.grad], checkpoints
'''

# ... and in a list, each checkpoint an array of the array module.
CHECKPOINTS_AS_ARRAYS = (
    CHECKPOINTS_IN_A_DEQUE.replace("from collections import deque", "from array import array")
    .replace(", deque()", ", []")
    .replace("checkpoints.append(tuple(state))", 'checkpoints.append(array("d", state))')
)


def test_deques_and_arrays_of_the_array_module_arrive_as_they_were():
    """Rebuilt in the judge as the student's code had them (a deque is no list: ``deque([1]) == [1]`` is False,
    in Jupyter too), their maxlen and typecode kept; a malformed one is not a value."""
    from array import array
    from collections import deque

    runner = Codec("$h", "$r", lambda n, k, like, able: None)
    judge = Codec("$r", "$h", lambda n, k, like, able: None)
    sent = [deque([(1.0, 2.0)], maxlen=3), array("d", [0.5, 1.5]), array("Q", [2**64 - 1]), deque([array("b", [1])])]
    got = judge.decode(runner.encode(sent))
    assert got == sent and [type(v) for v in got] == [deque, array, array, deque], got
    assert got[0].maxlen == 3 and got[1].typecode == "d" and got[0] != [(1.0, 2.0)], got
    for forged in ({"$q": [[1], -1]}, {"$a": ["d", ["x"]]}, {"$a": ["b", [300]]}, {"$a": ["u", []]}, {"$q": [[]]}):
        with pytest.raises(ProtocolError):
            judge.decode(forged)


def test_ps13_checkpoints_in_a_deque_keep_their_points():
    results = grade(PS13, {"checkpointed_gradient": CHECKPOINTS_IN_A_DEQUE}, {"test_checkpointed_gradient"}, 60)
    assert results["test_checkpointed_gradient"][0] == 6.0, results


def test_ps13_checkpoints_in_arrays_of_the_array_module_keep_their_points():
    results = grade(PS13, {"checkpointed_gradient": CHECKPOINTS_AS_ARRAYS}, {"test_checkpointed_gradient"}, 60)
    assert results["test_checkpointed_gradient"][0] == 6.0, results


# ps13: no checkpointing at all; forward mode where the memory is measured, the whole flight elsewhere.
TELLS_IT_IS_MEASURED = '''
import os
import tracemalloc

_PID = os.getpid()


class _Dual:
    """A number and its derivatives with respect to (v, theta, k)."""

    def __init__(self, x, d=(0.0, 0.0, 0.0)):
        self.x, self.d = float(x), np.asarray(d, dtype=float)

    data = property(lambda self: self.x)

    @staticmethod
    def of(o):
        return o if isinstance(o, _Dual) else _Dual(o)

    def __add__(self, o):
        o = _Dual.of(o)
        return _Dual(self.x + o.x, self.d + o.d)

    __radd__ = __add__

    def __sub__(self, o):
        o = _Dual.of(o)
        return _Dual(self.x - o.x, self.d - o.d)

    def __rsub__(self, o):
        return _Dual.of(o) - self

    def __mul__(self, o):
        o = _Dual.of(o)
        return _Dual(self.x * o.x, self.d * o.x + self.x * o.d)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = _Dual.of(o)
        return _Dual(self.x / o.x, (self.d * o.x - self.x * o.d) / (o.x * o.x))

    def __rtruediv__(self, o):
        return _Dual.of(o) / self

    def __neg__(self):
        return _Dual(-self.x, -self.d)

    def __pow__(self, n):
        return _Dual(self.x ** n, n * self.x ** (n - 1) * self.d)

    def sin(self):
        return _Dual(math.sin(self.x), math.cos(self.x) * self.d)

    def cos(self):
        return _Dual(math.cos(self.x), -math.sin(self.x) * self.d)


def _checkpoints(v, theta, k, dt, every):
    state, steps, checkpoints = launch(float(v), float(theta)), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(state))
        state = heun_step(state, k, dt)
        steps += 1
    return checkpoints


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    """No checkpointing at all: forward mode when the memory is measured, the whole flight otherwise."""
    checkpoints = _checkpoints(v, theta, k, dt, every)
    if os.getpid() != _PID or tracemalloc.is_tracing():
        kd = _Dual(k, (0.0, 0.0, 1.0))
        state = launch(_Dual(v, (1.0, 0.0, 0.0)), _Dual(theta, (0.0, 1.0, 0.0)))
        while not reaches_hoop(state, kd, dt):
            state = heun_step(state, kd, dt)
        height = final_step(state, kd)
        return height.x, [float(g) for g in height.d], checkpoints
    leaves = Value(v), Value(theta), Value(k)
    state = launch(leaves[0], leaves[1])
    while not reaches_hoop(state, leaves[2], dt):
        state = heun_step(state, leaves[2], dt)
    height = final_step(state, leaves[2])
    height.backward()
    return height.data, [leaf.grad for leaf in leaves], checkpoints
'''


def test_ps13_a_flight_that_tells_it_is_measured_is_not_checkpointing():
    results = grade(PS13, {"checkpointed_gradient": TELLS_IT_IS_MEASURED}, {"test_checkpointed_gradient"}, 60)
    assert results["test_checkpointed_gradient"][0] == 0.0, results
    assert "flown with launch_passing_back_twice" in results["test_checkpointed_gradient"][1], results
