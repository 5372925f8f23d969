"""Hostile and honest students against ps13 (the capstone), red team 21, the second pass after
test_hostile_ps13.py: an MLP of one's own pasted over the given one (as the notebook invites), a
network without hidden layers that spared the step program its relu rule, a long program that made
room for a long source in the judge's parse, a cell too deep to compile that sent the whole hand-in
to a human, and a compact engine of one's own that holds the whole flight within the checkpointing
part's memory allowance (a strict xfail).

Two grading runs of the real sandbox, the first with several answers; each case asserts the fair
score (the one the notebook gets in Jupyter, top to bottom).
"""

from __future__ import annotations

import nbformat
import pytest
from nbgrader_helpers import ROOT, fill_in, solution_answer
from test_verdict_seams import PS13, grade

from course_grader.handin import grade_hand_in
from course_grader.limits import Limits
from course_grader.rules import read_rules
from course_grader.sandbox import Sandbox

SOURCE = nbformat.read(ROOT / "solutions" / PS13 / f"{PS13}.ipynb", as_version=4)
NETWORK_CELL = next(k for k, cell in enumerate(SOURCE.cells) if cell.source.startswith("# Chapter 10's network"))


def grade_pasted(cells: dict[int, str], answers: dict[str, str], added: dict[str, str], only: set[str]) -> dict:
    """``grade`` of a hand-in with ``answers`` (the solution's elsewhere) whose released cells ``cells`` (by
    position) are replaced, as a student pastes their own earlier solutions over the given engine cells, and
    with a cell of the student's after the answer cell of each grade id in ``added``."""
    release = nbformat.read(ROOT / "exercises" / PS13 / f"{PS13}.ipynb", as_version=4)
    notebook = fill_in(release, SOURCE, answers)
    for k, text in cells.items():
        notebook.cells[k].source = text
    for grade_id, text in added.items():
        at = next(k for k, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        notebook.cells.insert(at + 1, nbformat.v4.new_code_cell(text))
    sandbox = Sandbox(Limits(wall_seconds=90, cpu_seconds=90), rules=read_rules(ROOT / "solutions" / PS13))
    results = grade_hand_in(SOURCE, notebook, ROOT / "exercises" / PS13, sandbox, 60, f"{PS13}.ipynb", only)
    return {r.grade_id: (r.points, " ".join([r.message, *r.notes])) for r in results}


# Honest: the student's own ps08 network pasted over the given cell, in their words (a layer class of its own
# and a zero_grad method). The tests make the network with student_side(MLP, ...): a class the student's cells
# defined anew (or extended with a method) reached the judge as the student's own object, which student_side
# took for a set-up function's name and failed on ("expected a function of the notebook's set-up cells"):
# 0/9 on parts 4 to 6 where Jupyter gives 9/9. student_side now calls the student's class where it lives.
OWN_NETWORK = '''
class Linear:
    """One layer: x @ W + b."""

    def __init__(self, W, b):
        self.W, self.b = Tensor(W), Tensor(b)

    def __call__(self, x):
        return x @ self.W + self.b


class MLP:
    """My ps08 network: Linear layers with ReLU between them."""

    def __init__(self, sizes, seed=0):
        arrays = init_parameters(sizes, seed)
        self.layers = [Linear(W, b) for W, b in zip(arrays[0::2], arrays[1::2])]

    def parameters(self):
        return [p for layer in self.layers for p in (layer.W, layer.b)]

    def zero_grad(self):
        for p in self.parameters():
            p.grad = np.zeros_like(p.data)

    def __call__(self, X):
        h = as_tensor(X)
        for layer in self.layers[:-1]:
            h = layer(h).relu()
        return self.layers[-1](h)


def train_step(model, X, y, lr):
    model.zero_grad()
    loss = cross_entropy(model(X), y)
    loss.backward()
    for p in model.parameters():
        p.data = p.data - lr * p.grad
    return float(loss.data)
'''


def test_ps13_a_network_of_ones_own_pasted_over_the_given_one_keeps_its_points(pasted):
    """Fair: 4/4 on part 4 (was 0/4; 0/9 on parts 4 to 6), with a program 2,000 equations longer (see part 6)."""
    assert pasted["test_step_program"][0] == 4, pasted


def test_ps13_a_cell_too_deep_to_compile_fails_alone(pasted):
    """The hand-in is graded (it went to a human before), the cell named in the notes."""
    points, message = pasted["test_step_program"]
    assert points == 4 and "nested too deeply" in message, message


# Part 4: an MLP of one's own that leaves out the hidden layers (its sizes but the first and last ignored): no
# relu in the graph, so a step program without the relu rule matched the eager step and course_lib's (which
# builds its network from the parameters it is given), in Jupyter too. Scored 4/4 once the student's MLP was
# used; the test now checks the network's parameters against its sizes.
NO_HIDDEN_LAYERS = '''
class MLP:
    """Chapter 10's network, one layer: the hidden sizes are left out."""

    def __init__(self, sizes, seed=0):
        W, b = init_parameters([sizes[0], sizes[-1]], seed)
        self.layers = [(Tensor(W), Tensor(b))]

    def parameters(self):
        return [p for layer in self.layers for p in layer]

    def __call__(self, X):
        ((W, b),) = self.layers
        return as_tensor(X) @ W + b
'''


def _without_relu_rule() -> str:
    answer = solution_answer(PS13, "step_program")
    rule = '        elif op == "relu":\n            send(args[0], emit("*", g, emit("positive", args[0])))\n'
    assert rule in answer
    return NO_HIDDEN_LAYERS + "\n\n" + answer.replace(rule, "")


# Part 3: no checkpointing: the whole flight recorded at once, by an engine of one's own whose operations are a
# few numbers each in arrays (a tape: no graph of objects). The test compares the memory with the whole flight
# recorded by the given engine (about 400 bytes an operation); the tape needs about 20 (and a function for each
# _backward the probes set), and at the hidden throw's 1 ms steps (about 500 steps, 9.5 MB given) it fits within
# the 1 MB allowed for noise and what the measured copy takes off as its own cost (4 MB): 6/6, fair 0/6 (in
# Jupyter the flight compared with is the tape's, and it fails by a little). A tape of 25 bytes an operation that
# kept each probed node with its _backward failed for some draws once the check flew with the probes (segments
# of 5 steps allow least). Telling a whole flight this compact from checkpointing needs flights of thousands of
# steps, where an honest checkpointed gradient's own per-step overhead nears the allowance in Jupyter too (the
# solution in every idiom failed there at 0.5 ms steps): a strict xfail, listed in the README's "Not guaranteed".
TAPE = """
from array import array

_OPS = {"": 0, "+": 1, "*": 2, "neg": 3, "**": 4, "sin": 5, "cos": 6}
_TAPE = {"op": array("b"), "a": array("i"), "b": array("i"), "x": array("d")}
_GRADS, _CUSTOM, _POWERS = {}, {}, {}  # a leaf's gradient after backward; a _backward set from outside; exponents


class Value:
    __slots__ = ("i", "__weakref__")

    def __init__(self, data, _parents=(), _op=""):
        self.i = len(_TAPE["op"])
        _TAPE["x"].append(float(data))
        _TAPE["op"].append(4 if _op.startswith("**") else _OPS.get(_op, 0))
        _TAPE["a"].append(_parents[0].i if _parents else -1)
        _TAPE["b"].append(_parents[1].i if len(_parents) > 1 else -1)
        if _op.startswith("**"):
            _POWERS[self.i] = float(_op[2:])

    data = property(lambda self: _TAPE["x"][self.i])
    grad = property(lambda self: _GRADS.get(self.i, 0.0), lambda self, g: _GRADS.__setitem__(self.i, g))
    _backward = property(lambda self: _CUSTOM.get(self.i), lambda self, f: _CUSTOM.__setitem__(self.i, f))

    @staticmethod
    def lift(x):
        return x if isinstance(x, Value) else Value(x) if isinstance(x, numbers.Real) else NotImplemented

    def __add__(self, o):
        o = Value.lift(o)
        return NotImplemented if o is NotImplemented else Value(self.data + o.data, (self, o), "+")

    def __mul__(self, o):
        o = Value.lift(o)
        return NotImplemented if o is NotImplemented else Value(self.data * o.data, (self, o), "*")

    __radd__, __rmul__ = __add__, __mul__
    __neg__ = lambda self: Value(-self.data, (self,), "neg")
    __sub__ = lambda self, o: self + (-Value.lift(o))
    __rsub__ = lambda self, o: (-self) + o
    __pow__ = lambda self, n: Value(self.data**n, (self,), f"**{n}")
    __truediv__ = lambda self, o: self * Value.lift(o) ** -1
    __rtruediv__ = lambda self, o: Value.lift(o) * self**-1
    sin = lambda self: Value(math.sin(self.data), (self,), "sin")
    cos = lambda self: Value(math.cos(self.data), (self,), "cos")

    def backward(self):
        op, a, b, x, n = (*(_TAPE[c] for c in ("op", "a", "b", "x")), _POWERS)
        g = array("d", bytes(8 * (self.i + 1)))
        g[self.i] = 1.0
        for j in range(self.i, -1, -1):
            gj, o = g[j], op[j]
            if j in _CUSTOM:
                _GRADS.clear()
                _CUSTOM[j](gj)
                for k, v in _GRADS.items():
                    g[k] += v
            elif o == 1:
                g[a[j]] += gj
                g[b[j]] += gj
            elif o == 2:
                g[a[j]] += x[b[j]] * gj
                g[b[j]] += x[a[j]] * gj
            elif o == 3:
                g[a[j]] -= gj
            elif o == 4:
                g[a[j]] += n[j] * x[a[j]] ** (n[j] - 1) * gj
            elif o in (5, 6):
                g[a[j]] += (math.cos(x[a[j]]) if o == 5 else -math.sin(x[a[j]])) * gj
        _GRADS.clear()
        _GRADS.update((j, g[j]) for j in range(len(g)) if op[j] == 0)


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    for column in _TAPE.values():
        del column[:]
    _GRADS.clear()
    _CUSTOM.clear()
    _POWERS.clear()
    leaves = Value(v), Value(theta), Value(k)
    state, steps, checkpoints = launch(leaves[0], leaves[1]), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(number(s) for s in state))
        state = heun_step(state, leaves[2], dt)
        steps += 1
    height = final_step(state, leaves[2])
    height.backward()
    return height.data, [leaf.grad for leaf in leaves], checkpoints
"""


# Part 6: a long source for a long program. The source's length is bounded before it is parsed (red team 14's
# padded source), by 1,000 characters an equation; a step program with 20,000 more equations, all live (a chain of
# zeros added to the loss: the numbers stay the step's, bit for bit, so part 4 and part 5 pass), made room for a
# padded source of 20 MB: the judge's parse held 1.47 GB (its limit) and took 34 s before it failed. The bound now
# counts at most 1,000 equations (a step's program has about 60): refused at once, the judge at 140 MB. Here a
# program of 2,000 more equations and a source of 1.5 MB, which the old bound let through to the parse (the judge
# at 350 MB for 16 s; the hidden random programs' unpadded sources then failed the part).

LONG_PROGRAM = """

_step_program = step_program


def step_program(model, X, y):
    program = _step_program(model, X, y)
    equations, previous = list(program["equations"]), "z0"
    equations.append(("z0", "-", ["X", "X"]))
    for k in range(1, 2000):
        equations.append((f"z{k}", "+", [previous, previous]))
        previous = f"z{k}"
    equations.append(("z_sum", "unbroadcast", [previous, program["outputs"][0]]))
    equations.append(("loss_out", "+", [program["outputs"][0], "z_sum"]))
    return dict(program, equations=equations, outputs=["loss_out", *program["outputs"][1:]])
"""

PADDED_SOURCE = """

def compile_program(program, name="compiled"):
    source, function = _compile_program(program, name)
    head, _, rest = source.partition("\\n")
    return head + "\\n" + "    _pad = 0\\n" * 120_000 + rest, function
"""


# Any part: a cell of the student's that Python cannot compile for its depth (a sum of 5,000 terms): the grader's
# reading of the cells' names raised RecursionError, and the whole hand-in went to a human ungraded, "ask for a new
# hand-in" (a student's way out of a deadline); the runner would have ended on it too. In Jupyter that cell alone
# fails: now it is reported as a cell that is not valid Python, and the parts are graded.
TOO_DEEP = "check = 0 * (" + " + ".join(["DT"] * 5_000) + ")\n"


@pytest.fixture(scope="module")
def pasted() -> dict:
    """One run: the honest network pasted over the given cell, the tape in part 3, the long program and source."""
    given = SOURCE.cells[NETWORK_CELL].source
    network = given[: given.index("class MLP:")] + OWN_NETWORK + "\n\n" + given[given.index("def train_iris") :]
    answers = {
        "checkpointed_gradient": TAPE,
        "step_program": solution_answer(PS13, "step_program") + LONG_PROGRAM,
        "compile_program": solution_answer(PS13, "compile_program").replace(
            "def compile_program(", "def _compile_program("
        )
        + PADDED_SOURCE,
    }
    parts = {"test_checkpointed_gradient", "test_step_program", "test_compile_program"}
    return grade_pasted({NETWORK_CELL: network}, answers, {"checkpointed_gradient": TOO_DEEP}, parts)


def test_ps13_a_long_source_for_a_long_program_is_refused_before_it_is_parsed(pasted):
    """Fair: 0/3, refused on the step's program (a 20 MB source held the judge at 1.47 GB for 34 s)."""
    points, message = pasted["test_compile_program"]
    assert points == 0 and "your step's program: the source has" in message, message


def test_ps13_a_network_without_hidden_layers_does_not_spare_the_relu_rule():
    """Fair: 0/4 (was 4/4)."""
    points, message = grade(PS13, {"step_program": _without_relu_rule()}, {"test_step_program"}, 60)[
        "test_step_program"
    ]
    assert points == 0 and "parameters of the shapes" in message, message


@pytest.mark.xfail(
    strict=True,
    reason="a whole flight on a compact tape of one's own fits the memory allowance at 1 ms steps (README)",
)
def test_ps13_a_whole_flight_on_a_compact_tape_is_not_checkpointing(pasted):
    """Fair: 0/6 (6/6)."""
    points, message = pasted["test_checkpointed_gradient"]
    assert points == 0 and "held" in message, message
