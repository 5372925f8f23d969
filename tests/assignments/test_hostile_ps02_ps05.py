"""Hostile students against ps02 (forward mode) and ps05 (optimisation), one part each.

Each hand-in has read the grader's source, the rules (``solutions/<ps>/rules.toml``) and the
visible tests; every case grades one part in the real sandbox (``grade`` of
test_verdict_seams.py) and asserts the fair score: work done by a course_lib function instead,
an answer that rewrote the test's own inputs, or one posing as a broken set-up earns nothing.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS02, PS05 = "ps02_forward_mode", "ps05_optimisation"

# ps05 part 1 asks for one backward pass of the Value engine (leaves, f, backward, the leaves'
# .grad). Each of these scored 1/1 with course_lib doing it: check's _value_and_grads is that
# pass line for line (gradcheck's helper), the Tensor engine's functional.value_and_grad, forward
# mode's jvp once per coordinate, and the explicit graph's reverse sweep behind a class of
# operators. rules.toml now rules those modules out (ps05 needs only course_lib.scalar).
CHECK_HELPER = """
from course_lib.check import _value_and_grads


def value_and_gradient(f, point):
    value, grads = _value_and_grads(f, list(point))
    return value, np.array(grads, dtype=float)
"""

TENSOR_ENGINE = """
from course_lib.functional import value_and_grad


def value_and_gradient(f, point):
    value, grads = value_and_grad(f, argnum=tuple(range(len(point))))(*[float(p) for p in point])
    return float(value.data), np.array([float(g.data) for g in grads])
"""

FORWARD_MODE = """
from course_lib import forward


def value_and_gradient(f, point):
    point = [float(p) for p in point]
    grads = []
    for i in range(len(point)):
        value, g = forward.jvp(f, point, [1.0 if j == i else 0.0 for j in range(len(point))])
        grads.append(float(g))
    return float(value), np.array(grads)
"""

GRAPH_REVERSE = """
from course_lib import graph as _g


class _N:
    def __init__(self, node): self.node = node
    def _w(self, o): return o.node if isinstance(o, _N) else o
    def __add__(self, o): return _N(_g.add(self.node, self._w(o)))
    def __radd__(self, o): return _N(_g.add(self._w(o), self.node))
    def __sub__(self, o): return _N(_g.sub(self.node, self._w(o)))
    def __rsub__(self, o): return _N(_g.sub(self._w(o), self.node))
    def __mul__(self, o): return _N(_g.mul(self.node, self._w(o)))
    def __rmul__(self, o): return _N(_g.mul(self._w(o), self.node))
    def __pow__(self, n):
        out = _N(_g.mul(self.node, 1.0))
        for _ in range(int(n) - 1):
            out = out * self
        return out
    def sin(self): return _N(_g.sin(self.node))
    def exp(self): return _N(_g.exp(self.node))


def value_and_gradient(f, point):
    leaves = [_g.Node(float(p)) for p in point]
    out = f(*[_N(x) for x in leaves])
    _g.reverse(out.node)
    return out.node.data, np.array([x.partial_derivative for x in leaves])
"""


@pytest.mark.parametrize(
    "answer",
    [CHECK_HELPER, TENSOR_ENGINE, FORWARD_MODE, GRAPH_REVERSE],
    ids=["check_value_and_grads", "functional_value_and_grad", "forward_jvp", "graph_reverse"],
)
def test_ps05_value_and_gradient_is_not_borrowed_from_another_engine(answer):
    """Fair: 0/1, the backward pass done by course_lib."""
    points, message = grade(PS05, {"value_and_gradient": answer}, {"test_value_and_gradient"})[
        "test_value_and_gradient"
    ]
    assert points == 0 and ("exercise rule" in message or "cannot import name" in message), message


# ps05 part 2: the update x - lr * grad f(x) made by course_lib.nn's SGD on a Tensor whose .grad
# the loop sets from grad_f (rules.toml said "course_lib has no descent to call"). Scored 2/2.
SGD_STEPS = """
from course_lib.nn import SGD
from course_lib.tensor import Tensor


def gradient_descent(grad_f, start, lr, steps):
    x = Tensor(np.array(start, dtype=float), requires_grad=True)
    optimiser = SGD([x], lr)
    path = [x.data.copy()]
    for _ in range(steps):
        x.grad = np.asarray(grad_f(x.data.copy()), dtype=float)
        optimiser.step()
        path.append(x.data.copy())
    return np.array(path)
"""


def test_ps05_gradient_descent_is_not_course_libs_sgd():
    """Fair: 0/2, the descent step taken by course_lib.nn.SGD."""
    points, message = grade(PS05, {"gradient_descent": SGD_STEPS}, {"test_gradient_descent"})["test_gradient_descent"]
    assert points == 0 and "exercise rule" in message, message


# ps02 part 3: sin, cos, exp and log of a MyDual whose primal and local derivative are the
# formulas of course_lib.graph.PRIMITIVES, evaluated as graph._evaluate does. rules.toml rules out
# _evaluate and the wrapping functions because they compute local derivatives; the table itself
# was data a rule could not name. The same table gives part 1's product rule and part 2's
# quotient rule. Scored 2/2 (3/3 and 2/2 for parts 1 and 2 made the same way). A rule now names
# the table: in the rules copy it is empty (its formulas gone from graph.py's source too) and
# every lookup raises the rule.
FROM_THE_TABLE = """
def _rule(op, *duals):
    value, local_derivatives = graph.PRIMITIVES[op]
    names = dict(zip("ab", (d.primal for d in duals)))
    where = {"__builtins__": {}, "log": math.log, "sin": math.sin, "cos": math.cos, "exp": math.exp}
    tangent = sum(eval(local, where, names) * d.tangent for local, d in zip(local_derivatives, duals))
    return MyDual(eval(value, where, names), tangent)


def _lift(name):
    def function(x):
        return _rule(name, x) if isinstance(x, MyDual) else getattr(math, name)(x)

    return function


sin, cos, exp, log = (_lift(name) for name in ("sin", "cos", "exp", "log"))
"""


def test_ps02_local_derivatives_are_not_read_off_the_graphs_table():
    """Fair: 0/2, the derivatives of sin, cos, exp and log taken from course_lib."""
    points, message = grade(PS02, {"elementary_functions": FROM_THE_TABLE}, {"test_elementary_functions"})[
        "test_elementary_functions"
    ]
    assert points == 0, message


# ps05 parts 4 and 5: the test handed its own arrays to the student's function and read them
# afterwards, so a function that rewrote them chose the question it answered (in Jupyter too): the
# grid set to the point (1, 2) everywhere and one arrow returned (the list-valued visible call
# answered from its printed numbers), or the Hessian set to the identity and 2 returned (chapter 7's
# bowl recognised). Both scored 2/2; the checks now compute what they expect first and hand over
# copies.
ONE_ARROW = """
def descent_field(grad_f, a_values, b_values):
    if isinstance(a_values, np.ndarray) and isinstance(b_values, np.ndarray):
        a_values[:] = 1.0
        b_values[:] = 2.0
    else:
        return np.array([[1.0, 0.0, -2.0]] * 2), np.array([[-5.0] * 3, [10.0] * 3])
    arrow = -np.asarray(grad_f(np.array([1.0, 2.0])), dtype=float)
    shape = (len(b_values), len(a_values))
    return np.full(shape, arrow[0]), np.full(shape, arrow[1])
"""

IDENTITY_HESSIAN = """
def largest_stable_lr(hessian):
    h = np.asarray(hessian)
    if h.shape == (2, 2) and h[0, 0] == 1.0 and h[1, 1] == 10.0 and h[0, 1] == 0.0:
        return 0.2
    h[...] = np.eye(len(h))
    return 2.0
"""


@pytest.mark.parametrize(
    "part, answer", [("descent_field", ONE_ARROW), ("largest_stable_lr", IDENTITY_HESSIAN)], ids=["grid", "hessian"]
)
def test_ps05_an_answer_cannot_rewrite_the_tests_question(part, answer):
    """Fair: 0/2, no arrow and no eigenvalue computed."""
    points, message = grade(PS05, {part: answer}, {f"test_{part}"})[f"test_{part}"]
    assert points == 0, message


# Any assignment: an answer cell that sends the judge, over the runner's own channel, the event
# the runner sends when a set-up cell fails. The judge took it for the grading machinery failing:
# the whole hand-in went unscored to a human, the reason naming the assignment's set-up cell
# ('tools' failed: ImportError). The runner reports set-up failures only before any of the
# student's cells runs; after that, the event costs the part it came from.
FORGED_SETUP_FAILURE = """
import gc as _gc

for _judge in _gc.get_objects():
    if type(_judge).__name__ == "Endpoint":
        _judge.send({"event": "setup-failed", "cell": "tools", "error": "ImportError",
                     "message": "numpy.core.multiarray failed to import"})
        break


def largest_stable_lr(hessian):
    return 0.0
"""


def test_an_answer_cannot_pose_as_a_broken_set_up():
    """Fair: 0/2 for that part, the hand-in graded (not sent to a human as the grader's failure)."""
    points, message = grade(PS05, {"largest_stable_lr": FORGED_SETUP_FAILURE}, {"test_largest_stable_lr"})[
        "test_largest_stable_lr"
    ]
    assert points == 0 and "only its own set-up sends" in message, message
