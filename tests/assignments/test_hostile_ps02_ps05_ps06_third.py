"""Hostile and honest students against ps02 (forward mode), ps05 (optimisation) and ps06 (custom
rules and Jacobians), third pass.

Each hand-in has read the grader's source, the rules (``solutions/<ps>/rules.toml``) and the
visible tests; every case grades in the real sandbox (``grade`` of test_verdict_seams.py) and
asserts the fair score (the one the notebook earns in Jupyter, or lower where it passes only by
a shortcut that skips the part's work).
"""

from __future__ import annotations

import pytest
from nbgrader_helpers import load_mistakes
from test_verdict_seams import grade

PS02, PS05, PS06 = "ps02_forward_mode", "ps05_optimisation", "ps06_custom_rules_jacobians"


# ps02, an honest student with part 1's typical slip (the product rule missing a term), whose
# division, power and elementary functions make their result as type(self)(...), self.__class__(...)
# and type(x)(...), and whose cos checks type(x) is MyDual. Parts 2 to 4 run with the reference
# MyDual, whose objects stood in the runner as instances of the grader's stand-in class: type(self)
# made a broken stand-in, type(x) is MyDual was false. 0/3, 0/2, 0/2 where 0/3, 2/2, 2/2 is fair
# (as in Jupyter; one typical mistake costs its own part, so part 4, which Jupyter's slip would
# spoil, keeps its 2/2 by the reference). A reference's class is now a class in the runner too, and
# the stand-ins of its objects are its instances.
BY_THEIR_TYPE = {
    "dual_division_power": """def dual_truediv(self: MyDual, other) -> MyDual:
    other = as_dual(other)
    return type(self)(self.primal / other.primal,
                      (self.tangent * other.primal - self.primal * other.tangent) / other.primal**2)


def dual_rtruediv(self: MyDual, other) -> MyDual:
    return dual_truediv(as_dual(other), self)


def dual_pow(self: MyDual, n: float) -> MyDual:
    return self.__class__(self.primal**n, n * self.primal ** (n - 1) * self.tangent)


MyDual.__truediv__ = dual_truediv
MyDual.__rtruediv__ = dual_rtruediv
MyDual.__pow__ = dual_pow
""",
    "elementary_functions": '''def _lift(x, g, dg):
    """g(x) for a MyDual x, by the chain rule, as a dual number of x's own class."""
    return type(x)(g(x.primal), dg(x.primal) * x.tangent)


def sin(x):
    return _lift(x, math.sin, math.cos) if isinstance(x, MyDual) else math.sin(x)


def cos(x):
    return _lift(x, math.cos, lambda t: -math.sin(t)) if type(x) is MyDual else math.cos(x)


def exp(x):
    return _lift(x, math.exp, math.exp) if isinstance(x, MyDual) else math.exp(x)


def log(x):
    return _lift(x, math.log, lambda t: 1 / t) if isinstance(x, MyDual) else math.log(x)
''',
}


def test_ps02_a_slip_in_part_one_costs_only_part_one_with_their_type():
    slip = load_mistakes(PS02)["product_rule_missing_term"]["replace"]["dual_arithmetic"]
    tests = ["test_dual_arithmetic", "test_dual_division_power", "test_elementary_functions"]
    tests.append("test_derivative_gradient")
    got = grade(PS02, {"dual_arithmetic": slip, **BY_THEIR_TYPE}, set(tests), 60)
    assert [got[t][0] for t in tests] == [0, 2, 2, 2], got


# ps06 parts 1 and 2: the checks read the input Tensor's values back (x.data) after the student's
# code ran, and computed what they expected from them. A softplus with the overflow (log(1 + exp(x)))
# that first set x.data to zeros, and a rule in NumPy (whose second derivative is 0) that first moved
# x.data far out, where the sigmoid's slope is 0, scored 2/2 each, in Jupyter too: 0/2 each is fair,
# the answers chose the point they were judged at. The hidden tests now also judge at their own values.
MOVING_X = {
    "softplus": '''def softplus(x):
    """log(1 + exp(x)), which overflows past 709: x moved where it does not."""
    x.data = 0.0 * np.clip(x.data, -30.0, 30.0)
    return record("softplus", np.log(1 + np.exp(x.data)), (x,))
''',
    "softplus_vjp": '''def softplus_vjp(g, out, x):
    """NumPy on x.data (a constant to the engine), with x moved far out first."""
    x.data = np.where(x.data >= -30, 50.0, -50.0)
    return g * (1.0 / (1.0 + np.exp(-x.data)))
''',
}

# ... and the same NumPy rule with a Tensor class of the notebook's name that puts every Tensor the
# test makes (student_side(Tensor, ...), as Tensor(...) in Jupyter) far out. Fair: 2/2 and 0/2.
FAR_OUT_TENSORS = {
    "softplus_vjp": '''class Tensor(Tensor):
    """Every Tensor far from 0, where softplus is x or 0."""

    def __init__(self, data, requires_grad=False, label=""):
        data = np.asarray(data, dtype=float)
        super().__init__(np.where(data >= -30, 50.0, -50.0), requires_grad=requires_grad, label=label)


def softplus_vjp(g, out, x):
    return g * (1.0 / (1.0 + np.exp(-x.data)))
''',
}


@pytest.mark.parametrize(
    ("answers", "fair"), [(MOVING_X, [0, 0]), (FAR_OUT_TENSORS, [2, 0])], ids=["moving_x", "far_out_tensors"]
)
def test_ps06_rules_are_judged_at_the_tests_own_values(answers, fair):
    got = grade(PS06, answers, {"test_softplus", "test_softplus_vjp"}, 60)
    assert [got["test_softplus"][0], got["test_softplus_vjp"][0]] == fair, got


# ps02 part 5, honest: the chain rule at one node as a helper method put on course_lib's Node
# (Node.tangent_from = ...), called on every node of the test's graphs. In Jupyter the test's nodes
# are course_lib Nodes and have it; graded they stood in the runner for the judge's nodes, which
# looked only at the notebook's own classes for what the student's cells added: 0/3, fair 3/3.
HELPER_ON_NODE = '''def _tangent_from(self, tangent):
    """The chain rule at one node: its local derivatives times its parents' tangents."""
    return sum(local * tangent[parent] for parent, local in zip(self._parents, self.grad_wrt_parents))


Node.tangent_from = _tangent_from


def tangent_sweep(order: list[Node], seeds: dict[Node, float]) -> dict[Node, float]:
    tangent = {}
    for node in order:
        tangent[node] = node.tangent_from(tangent) if node._parents else seeds.get(node, 0.0)
    return tangent
'''


def test_ps02_a_helper_put_on_course_libs_node_works_on_the_tests_nodes():
    got = grade(PS02, {"tangent_sweep": HELPER_ON_NODE}, {"test_tangent_sweep"}, 60)
    assert got["test_tangent_sweep"][0] == 3, got


# ps06 part 4, honest: the rows side by side in a fork Pool(2), each worker pulling one back with a
# VJP of its own (f evaluated once per row, within the test's m + 1; f is the hidden test's, which
# calls the worker's Tensors back). A worker let go of the runner's channel while it served such a
# call back, a sibling's row began meanwhile, and the first worker's reply reached the judge out of
# turn: "a reply to a request that was not asked", 0/2 where Jupyter gives 2/2. Only the process that
# made the channel lets it go now. (ps02's gradient with one pass per worker failed the same way;
# in Jupyter its visible test's in-process count of passes sees none of the workers' passes.)
POOLED_ROWS = '''import multiprocessing as mp

_JOB = {}


def _row(i):
    """Row i of the Jacobian: one VJP with e_i (a worker of the pool pulls it back)."""
    f, x = _JOB["f"], _JOB["x"]
    y, pull_back = vjp(f, x)
    return np.asarray(pull_back(np.eye(y.shape[0])[i]).data, dtype=float)


def jacobian_by_vjps(f, x):
    """The rows side by side, in a pool of two processes."""
    m = len(f(Tensor(x)).data)
    _JOB.update(f=f, x=x)
    with mp.get_context("fork").Pool(2) as pool:
        return np.array(pool.map(_row, range(m)))
'''


def test_ps06_rows_by_a_process_pool_keep_their_points():
    got = grade(PS06, {"jacobian_by_vjps": POOLED_ROWS}, {"test_jacobian_by_vjps"}, 60)
    assert got["test_jacobian_by_vjps"][0] == 2, got


# ps05 part 3, honest: the answer cell first times plain descent with the visible test's own
# reference_descent (%time <statement>, which runs the statement, as in Jupyter), then defines
# momentum_descent. The grader read the cell's names as Python, where the %time line does not
# compile, so it saw no use of reference_descent and left out the test cell that defines it: the
# cell stopped at a NameError before its def, 0/3 where Jupyter gives 3/3. The names of such a cell
# are now read from it as the runner runs it.
TIMED_WITH_THE_TESTS_HELPER = """# Plain descent first, with the test's reference above: what momentum should beat.
%time plain = reference_descent(bowl_grad, (3.0, 1.0), 0.1, 100)
print("plain descent ends at", plain[-1])


def momentum_descent(grad_f, start, lr, beta, steps):
    x = np.array(start, dtype=float)
    v = np.zeros_like(x)
    path = [x.copy()]
    for _ in range(steps):
        v = beta * v + grad_f(x)
        x = x - lr * v
        path.append(x.copy())
    return np.array(path)
"""


def test_ps05_a_timed_line_using_a_tests_helper_keeps_its_cell():
    got = grade(PS05, {"momentum_descent": TIMED_WITH_THE_TESTS_HELPER}, {"test_momentum_descent"}, 60)
    assert got["test_momentum_descent"][0] == 3, got


# ps05 part 1: forward mode inside real Values. The engine's module patched so that a Value keeps
# the dual number it is given (scalar._as_float) and its math works on dual numbers: f is evaluated
# once, on Values, and the gradient is read off the output's tangents, with no backward pass. The
# hidden test's checks (f handed Values, at most two evaluations) passed: 1/1, fair 0/1. The hidden
# test now also sends the gradient through a probe node whose backward (set by the test) passes back
# twice its gradient, which forward mode misses (so does a dual class subclassing Value, the strict
# xfail of test_hostile_ps05_ps06.py until now).
DUALS_IN_VALUES = '''import math
import types

import course_lib.scalar as _engine


class _D:
    """A dual number with a vector of tangents (every partial derivative at once)."""

    def __init__(self, v, t):
        self.v, self.t = v, np.asarray(t, dtype=float)

    def _w(self, o):
        return o if isinstance(o, _D) else _D(float(o), np.zeros_like(self.t))

    def __add__(self, o):
        o = self._w(o)
        return _D(self.v + o.v, self.t + o.t)

    __radd__ = __add__

    def __sub__(self, o):
        o = self._w(o)
        return _D(self.v - o.v, self.t - o.t)

    def __rsub__(self, o):
        return self._w(o) - self

    def __neg__(self):
        return _D(-self.v, -self.t)

    def __mul__(self, o):
        o = self._w(o)
        return _D(self.v * o.v, self.t * o.v + o.t * self.v)

    __rmul__ = __mul__

    def __pow__(self, n):
        return _D(self.v ** n, n * self.v ** (n - 1) * self.t)


def _lifted(g, dg):
    return lambda x: _D(g(x.v), dg(x.v) * x.t) if isinstance(x, _D) else g(x)


# The engine's Values keep the dual numbers they are given, and its math works on them.
_engine._as_float = lambda data: data
_engine.math = types.SimpleNamespace(sin=_lifted(math.sin, math.cos), exp=_lifted(math.exp, math.exp))


def value_and_gradient(f, point):
    d = len(point)
    out = f(*[Value(_D(float(p), np.eye(d)[i])) for i, p in enumerate(point)])
    return out.data.v, out.data.t
'''


def test_ps05_forward_mode_inside_values_is_not_the_backward_pass():
    points, message = grade(PS05, {"value_and_gradient": DUALS_IN_VALUES}, {"test_value_and_gradient"}, 60)[
        "test_value_and_gradient"
    ]
    assert points == 0 and "probe" in message, message


# ps02, honest: a MyDual with a property (x.parts, the pair to unpack) that part 3's functions use,
# and part 1's typical slip. Part 3 runs with the reference MyDual, which was lent the student's
# methods but not their properties: AttributeError, 0/2 where Jupyter gives 2/2. Properties are lent
# too now (read through the student's getter).
def test_ps02_a_property_of_their_class_works_on_the_references_objects():
    slip = load_mistakes(PS02)["product_rule_missing_term"]["replace"]["dual_arithmetic"]
    with_parts = slip.replace(
        "    def __repr__(self) -> str:",
        '    @property\n    def parts(self):\n        """(primal, tangent), to unpack."""\n'
        "        return self.primal, self.tangent\n\n    def __repr__(self) -> str:",
    )
    functions = elementary_functions("x.parts")
    answers = {"dual_arithmetic": with_parts, "elementary_functions": functions}
    got = grade(PS02, answers, {"test_dual_arithmetic", "test_elementary_functions"}, 60)
    assert [got["test_dual_arithmetic"][0], got["test_elementary_functions"][0]] == [0, 2], got


# ps02, honest: MyDual as a NamedTuple (primal, tangent) with part 1's typical slip, whose part 3
# functions unpack it (a, da = x). Part 3 runs with the reference MyDual, no tuple: TypeError, 0/2
# where Jupyter gives 2/2. The student's code now unpacks the reference's objects as their class
# unpacked its own (a named tuple by its fields; a class by its own __iter__ or __getitem__).
NAMED_TUPLE_WITH_SLIP = '''from typing import NamedTuple


class MyDual(NamedTuple):
    """A dual number as a named tuple (immutable: every operation makes a new one)."""

    primal: float
    tangent: float = 0.0

    def __add__(self, other):
        other = as_dual(other)
        return MyDual(self.primal + other.primal, self.tangent + other.tangent)

    __radd__ = __add__

    def __sub__(self, other):
        other = as_dual(other)
        return MyDual(self.primal - other.primal, self.tangent - other.tangent)

    def __rsub__(self, other):
        return as_dual(other) - self

    def __neg__(self):
        return MyDual(-self.primal, -self.tangent)

    def __mul__(self, other):
        other = as_dual(other)
        return MyDual(self.primal * other.primal, self.tangent * other.primal)  # the slip: a term missing

    __rmul__ = __mul__


def as_dual(x) -> MyDual:
    return x if isinstance(x, MyDual) else MyDual(x, 0.0)
'''


def elementary_functions(pair: str) -> str:
    """Part 3's sin, cos, exp and log of a MyDual x, with its primal and tangent read as ``pair``."""
    chain = f"def _chain(x, g, dg):\n    a, da = {pair}\n    return MyDual(g(a), dg(a) * da)\n\n\n"
    return (
        chain
        + """def sin(x):
    return _chain(x, math.sin, math.cos) if isinstance(x, MyDual) else math.sin(x)


def cos(x):
    return _chain(x, math.cos, lambda t: -math.sin(t)) if isinstance(x, MyDual) else math.cos(x)


def exp(x):
    return _chain(x, math.exp, math.exp) if isinstance(x, MyDual) else math.exp(x)


def log(x):
    return _chain(x, math.log, lambda t: 1 / t) if isinstance(x, MyDual) else math.log(x)
"""
    )


UNPACKING = elementary_functions("x  # a MyDual is the pair (primal, tangent)")


def test_ps02_a_named_tuple_dual_unpacks_the_references_objects():
    answers = {"dual_arithmetic": NAMED_TUPLE_WITH_SLIP, "elementary_functions": UNPACKING}
    got = grade(PS02, answers, {"test_dual_arithmetic", "test_elementary_functions"}, 60)
    assert [got["test_dual_arithmetic"][0], got["test_elementary_functions"][0]] == [0, 2], got
