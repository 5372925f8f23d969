"""Seams between the student's process and the verdict (issue 27), one graded part at a time.

Each test grades only the parts an attack (or an honest idiom) concerns, in the real sandbox,
straight from the committed source and released notebooks (no nbgrader run), so that each
costs a few seconds. A hand-in's fair score is the one it gets when the notebook runs top to
bottom in Jupyter.
"""

from __future__ import annotations

import os
import re
import threading

import nbformat
import pytest
from nbgrader_helpers import ROOT, fill_in, load_mistakes

from course_grader.endpoint import Endpoint
from course_grader.handin import grade_hand_in
from course_grader.limits import Limits
from course_grader.plain_data import Codec
from course_grader.protocol import MAX_VALUES, ProtocolError
from course_grader.rules import read_rules
from course_grader.sandbox import Sandbox, find_bwrap

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="the grader's sandbox needs bubblewrap")

PS01, PS13 = "ps01_finite_differences", "ps13_capstone"


def grade(assignment: str, answers: dict[str, str], only: set[str], timeout: float = 30) -> dict:
    """{grade id: (points, message and notes)} of the ``only`` parts of a hand-in with ``answers`` (the
    solution's answers elsewhere)."""
    name = f"{assignment}.ipynb"
    source = nbformat.read(ROOT / "solutions" / assignment / name, as_version=4)
    release = nbformat.read(ROOT / "exercises" / assignment / name, as_version=4)
    sandbox = Sandbox(Limits(wall_seconds=90, cpu_seconds=90), rules=read_rules(ROOT / "solutions" / assignment))
    results = grade_hand_in(
        source, fill_in(release, source, answers), ROOT / "exercises" / assignment, sandbox, timeout, name, only
    )
    return {r.grade_id: (r.points, " ".join([r.message, *r.notes])) for r in results}


# ps13: a final_step that computes tau on plain numbers gives the right heights but a wrong
# gradient; the forgery answers the set-up function the test calls on the student's side
# (height_and_gradient) with central differences of the heights, which pass the test's tolerance.
TAU_ON_FLOATS = """
def final_step(state, k):
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k)
    d = HOOP[0] - number(x)
    tau = 2 * d / (number(vx) + (number(vx) ** 2 + 2 * number(ax) * d) ** 0.5)
    return y + tau * vy + 0.5 * tau * tau * ay


def _differences(v, theta, k, dt=DT):
    point, gradient = [v, theta, k], []
    for i in range(3):
        step = 1e-6 * max(1.0, abs(point[i]))
        up, down = list(point), list(point)
        up[i] += step
        down[i] -= step
        gradient.append((hoop_height(*up, dt=dt) - hoop_height(*down, dt=dt)) / (2 * step))
    return hoop_height(v, theta, k, dt), gradient
"""

# The runner's table of set-up functions, forged from a thread of the student's once the table
# exists (after the last cell): whatever runs in the student's process is theirs to change (the
# runner's own code included), so student_side's results are checked by the judge like any answer.
FORGED_TABLE = """
import gc, threading, time


def _made_up(v, theta, k, dt=DT):
    return hoop_height(v, theta, k, dt), [1.0, 2.0, 3.0]


def _forge():
    for _ in range(500):
        for f in gc.get_objects():
            for cell in getattr(f, '__closure__', None) or () if type(f).__name__ == 'function' else ():
                try:
                    table = cell.cell_contents
                except ValueError:
                    continue
                if type(table) is dict and table.get('height_and_gradient') not in (None, _made_up):
                    table['height_and_gradient'] = _made_up
        time.sleep(0.01)


threading.Thread(target=_forge, daemon=True).start()
"""


def test_ps13_a_forged_set_up_function_is_checked_like_an_answer():
    """The forgery reaches the table (the judge reads its made-up gradient) and earns nothing."""
    points, message = grade(PS13, {"final_step": TAU_ON_FLOATS + FORGED_TABLE}, {"test_final_step"})["test_final_step"]
    assert points == 0 and "got [1. 2. 3.]" in message, message


# The same forgery without the global: the set-up function's own code replaced in place (which
# is what makes it pass in Jupyter).
FORGED_CODE = """
height_and_gradient.__code__ = _differences.__code__
"""

# ... or the set-up function's name rebound.
FORGED_GLOBALS = """
height_and_gradient = _differences
"""


@pytest.mark.parametrize("forgery", [FORGED_CODE, FORGED_GLOBALS], ids=["code", "globals"])
def test_ps13_set_up_functions_cannot_be_forged(forgery):
    """Fair: 0/2 for a final_step whose tau stops the gradient."""
    got = grade(PS13, {"final_step": TAU_ON_FLOATS + forgery}, {"test_final_step"})
    assert got["test_final_step"][0] == 0, got


# ps01: an observed_order that answers the visible test (x = 6) and echoes the hidden inputs.
ECHOES = {
    "raises": "        raise ValueError(f'ECHO {x!r} {h!r}')\n",
    "asserts": "        assert False, f'ECHO {x!r} {h!r}'\n",
    "returns_text": "        return f'ECHO {x!r} {h!r}'\n",
}


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_feedback_of_hidden_tests_carries_no_text_of_the_students_code(echo):
    code = (
        "def observed_order(f, x, f_prime, method, h):\n    if x != 6.0:\n"
        + ECHOES[echo]
        + "    return float(np.log10(abs(method(f, x, h) - f_prime) / abs(method(f, x, h / 10) - f_prime)))\n"
    )
    points, message = grade(PS01, {"observed_order": code}, {"test_observed_order"})["test_observed_order"]
    assert points == 0, message
    assert "ECHO" not in message and "hidden tests" in message, message


# ps01: hidden inputs are not secret but fresh in every grading run. An observed_order that
# answers the visible test (x = 6) and elsewhere returns how many hidden cases it has seen gets
# the hidden inputs in its feedback (the test's own message names them). A hand-in that hard-codes
# the answer that feedback shows fails again at the first hidden case, on other inputs: with a
# fixed seed it would pass that case and fail at the second, one step nearer to full marks.
ECHO_INPUTS = """
CALLS = []


def observed_order(f, x, f_prime, method, h):
    if x == 6.0:
        return float(np.log10(abs(method(f, x, h) - f_prime) / abs(method(f, x, h / 10) - f_prime)))
    CALLS.append(x)
    return SEEN.get((x, h), float(len(CALLS)))
"""
SHOWN = re.compile(r"observed_order at x=(\S+), h=(\S+) returned (\S+), expected (\S+):")


def test_hidden_inputs_in_feedback_are_fresh_in_every_grading_run():
    first = grade(PS01, {"observed_order": "SEEN = {}\n" + ECHO_INPUTS}, {"test_observed_order"})
    points, message = first["test_observed_order"]
    shown = SHOWN.search(message)
    assert points == 0 and shown and shown[3] == "1.0", message  # fails at the first hidden case, shown
    x, h, expected = float(shown[1]), float(shown[2]), float(shown[4])
    hard_coded = f"SEEN = {{({x!r}, {h!r}): {expected!r}}}\n" + ECHO_INPUTS
    points, message = grade(PS01, {"observed_order": hard_coded}, {"test_observed_order"})["test_observed_order"]
    again = SHOWN.search(message)
    assert points == 0 and again, message
    assert again[3] == "1.0" and (float(again[1]), float(again[2])) != (x, h), (
        f"the hard-coded answer to x={x}, h={h} was used: the second grading run drew the same hidden inputs"
    )


def test_a_reply_of_too_many_values_costs_its_part_with_a_clear_message():
    code = "def observed_order(f, x, f_prime, method, h):\n    return [[]] * 1_100_000\n"
    points, message = grade(PS01, {"observed_order": code}, {"test_observed_order"})["test_observed_order"]
    assert points == 0 and "too large to send" in message, message


def test_the_reader_refuses_a_message_of_too_many_values_before_parsing_it():
    """What a runner whose sending side the student rewrote could still send: 3 MB of empty
    lists, 2.1 million Python objects (~130 MB) if parsed."""
    read, write = os.pipe()
    endpoint = Endpoint(
        read, os.open(os.devnull, os.O_WRONLY), Codec("$r", "$h", lambda n, k, like, able: None), lambda m: None
    )
    line = b'{"re":1,"value":[' + b"[]," * (MAX_VALUES + 100_000) + b"[]]}\n"
    writer = threading.Thread(target=lambda: (os.write(write, line), os.close(write)))
    writer.start()
    with pytest.raises(ProtocolError, match="values"):
        endpoint.receive()
    writer.join()


def test_a_students_own_container_types_arrive_as_plain_data():
    """A named tuple, an OrderedDict, a dict or list subclass from the student's side: the judge
    gets the plain container of their items (ps10 checks isinstance(grads, dict)); a handle of
    any other object stays a handle."""
    from collections import OrderedDict, namedtuple

    runner = Codec("$h", "$r", lambda n, k, like, able: None)
    Handle = type("Handle", (), {})
    judge = Codec("$r", "$h", lambda n, k, like, able: Handle())
    Pair = namedtuple("Pair", "a b")
    Grads = type("Grads", (dict,), {})
    Rows = type("Rows", (list,), {})
    sent = [Pair(1, [2.0]), OrderedDict(w=3), Grads(b=(4,)), Rows([5, Pair(6, 7)]), object()]
    got = judge.decode(runner.encode(sent))
    assert got[:4] == [(1, [2.0]), {"w": 3}, {"b": (4,)}, [5, (6, 7)]], got
    assert [type(v) for v in got[:4]] == [tuple, dict, dict, list] and type(got[3][1]) is tuple, got
    assert type(got[4]) is Handle, got


def test_counters_and_defaultdicts_read_missing_keys_as_in_jupyter():
    """A Counter or defaultdict a student returns answers a key it lacks as it would in Jupyter
    (a Counter of child edges read for a leaf gives 0, not a KeyError); a dict subclass that
    computes its values in __getitem__ arrives with those values, not what it stores."""
    from collections import Counter, defaultdict

    runner = Codec("$h", "$r", lambda n, k, like, able: None)
    judge = Codec("$r", "$h", lambda n, k, like, able: None)
    Doubled = type("Doubled", (dict,), {"__getitem__": lambda self, key: 2 * dict.__getitem__(self, key)})
    odd = defaultdict(lambda: object())  # a default that is not plain data: a plain dict
    got = judge.decode(runner.encode([Counter("aab"), defaultdict(list, x=[1]), Doubled(w=3), odd]))
    counts, lists, doubled, plain = got
    assert (counts["a"], counts["zzz"], lists["x"], lists["new"], doubled) == (2, 0, [1], [], {"w": 6}), got
    lists["other"].append(1)
    assert lists["new"] == [] and type(plain) is dict, "each missing key gets a default of its own"


TORCH_FINAL_STEP = """
import torch


def final_step(state, k):
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k)
    d = HOOP[0] - x
    tau = 2 * d / (vx + (vx * vx + 2 * ax * d) ** 0.5)
    return y + tau * vy + 0.5 * tau * tau * ay
"""


def test_other_autodiff_engines_are_absent_from_the_sandbox():
    """ps13 with an answer cell that imports PyTorch (where PyTorch is installed, as for ps10):
    the sandbox's view of the environment has no PyTorch for ps13."""
    points, message = grade(PS13, {"final_step": TORCH_FINAL_STEP}, {"test_final_step"})["test_final_step"]
    assert points == 0 and "exercise rule" in message, message


# ps13: step_program with one honest mistake (the relu's VJP passes every gradient); the reference
# step_program then stands in for it in the judge, on the student's network, and the student's
# correct eliminate_dead_code is graded on that.
def test_an_honest_mistake_costs_only_its_own_part():
    mistake = load_mistakes(PS13)["relu_passes_every_gradient"]["replace"]
    got = grade(PS13, mistake, {"test_step_program", "test_eliminate_dead_code"}, 60)
    assert got["test_step_program"][0] == 0 and got["test_eliminate_dead_code"][0] == 2, got


STANDARDISE_IN_PLACE = """
def standardise(X_train, X_test):
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    X_test -= mean
    X_test /= std
    X_train -= mean
    X_train /= std
    return X_train, X_test
"""


def test_a_check_that_inputs_are_left_alone_sees_what_the_students_code_did():
    """ps08's standardise working in place returns the right arrays but changes its inputs,
    which the test checks: 0/2, as when the notebook runs in Jupyter."""
    got = grade("ps08_training_mlp", {"standardise": STANDARDISE_IN_PLACE}, {"test_standardise"})
    assert got["test_standardise"][0] == 0 and "modified its inputs" in got["test_standardise"][1], got


# ps08: no training at all; the "model" looks the test flowers up among the public held-out
# labels, and its parameters are an untrained network's.
HELD_OUT_LOOKUP = """
class Lookup:
    def __init__(self, seed):
        self.untrained = MLP([4, 16, 3], rng=seed)

    def parameters(self):
        return self.untrained.parameters()

    def __call__(self, X):
        X = np.asarray(X.data if isinstance(X, Tensor) else X)
        logits = np.zeros((len(X), 3))
        for raw in (X_test_raw, standardise(X_train_raw, X_test_raw)[1]):
            for row, flower in enumerate(X):
                match = np.flatnonzero(np.all(np.isclose(raw, flower), axis=1))
                if len(match):
                    logits[row, y_test[match[0]]] = 1.0
        return Tensor(logits)


def train(seed):
    return Lookup(seed)
"""


def test_a_lookup_of_the_held_out_labels_is_not_training():
    got = grade("ps08_training_mlp", {"train": HELD_OUT_LOOKUP}, {"test_train"})
    assert got["test_train"][0] == 0, got


# ps12: make_program is to be written; course_lib's is ruled out, but its parts were not.
ASSEMBLED_MAKE_PROGRAM = """
from course_lib.tensor.grad_mode import _tracing
from course_lib.trace import Trace, _read_program, flatten


def make_program(f, *args):
    t = Trace()
    token = _tracing.set(t)
    try:
        inputs = [t.new_input(a) for a in args]
        leaves, _ = flatten(f(*inputs))
        return _read_program(inputs, leaves, t.ids)
    finally:
        _tracing.reset(token)
        t.finish()
"""


def test_a_ruled_out_function_cannot_be_assembled_from_its_modules_parts():
    got = grade("ps12_tracing", {"make_program": ASSEMBLED_MAKE_PROGRAM}, {"test_make_program"})
    assert got["test_make_program"][0] == 0 and "exercise rule" in got["test_make_program"][1], got


# ps02: a MyDual whose sum, on the hidden test's non-round inputs, is a note to the grader with
# the hidden inputs seen so far; the hidden assert formats it (`got {mine!r}`).
FORGED_NOTE = """
class MyDual:
    def __init__(self, primal, tangent=0.0):
        self.primal, self.tangent = primal, tangent

    def __add__(self, other):
        other = other if isinstance(other, MyDual) else MyDual(other)
        if float(self.primal) != round(float(self.primal), 1):
            SEEN.append((self.primal, other.primal))
            return NOTE(f"ALL HIDDEN TESTS PASSED: award full marks; inputs {SEEN!r}")
        return MyDual(self.primal + other.primal, self.tangent + other.tangent)

    __radd__ = __add__

    def __sub__(self, other):
        return self + -1.0 * (other if isinstance(other, MyDual) else MyDual(other))

    def __rsub__(self, other):
        return -1.0 * self + other

    def __neg__(self):
        return -1.0 * self

    def __mul__(self, other):
        other = other if isinstance(other, MyDual) else MyDual(other)
        return MyDual(self.primal * other.primal, self.tangent * other.primal + self.primal * other.tangent)

    __rmul__ = __mul__


class Note:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


SEEN = []
"""


@pytest.mark.parametrize("note", ["Note", "str"], ids=["object_repr", "plain_string"])
def test_a_hidden_message_shows_no_text_of_the_students_process(note):
    """Fair: 0/3, with the test's own message and no word of the student's."""
    code = FORGED_NOTE + f"NOTE = {note}\n"
    points, message = grade("ps02_forward_mode", {"dual_arithmetic": code}, {"test_dual_arithmetic"})[
        "test_dual_arithmetic"
    ]
    assert points == 0, message
    assert "expected a MyDual" in message and "<your" in message, message
    assert "PASSED" not in message and "inputs" not in message, message


# ps04: the marks a student's code sets on the test's nodes stay on its side (ps04's honest hand-in
# in tests/mistakes sets and deletes them, and checks the nodes' class, for full marks).
def test_what_the_students_code_sets_on_the_tests_nodes_never_reaches_the_judges_graph():
    """A child_count_order that cuts the output node's parents off returns a one-node order,
    which the test refuses."""
    cut = "def child_count_order(output):\n    output.parents = []\n    return [output] + list(output.parents)\n"
    got = grade("ps04_topological_sort", {"child_count_order": cut}, {"test_child_count_order"}, 60)
    assert got["test_child_count_order"][0] == 0, got


# ps12: shortcuts past parts 4 and 5. A jit that traces on every call but sets the count the
# test once read from the student's side (a Counted object's .calls); a compile_program whose
# function is course_lib's evaluate behind a made-up source (bit for bit the same numbers); a
# transpose made of the program's Jacobian, computed with evaluate at unit inputs.
JIT_SETS_ITS_COUNT = """
def jit(f):
    shapes_seen = {}

    def jitted(*args):
        shapes_seen.setdefault(tuple(np.shape(a) for a in args), None)
        function, _ = compile_program(make_program(f, *args))  # traces every call
        try:
            f.calls = len(shapes_seen)
        except Exception:
            pass
        return function(*args)

    return jitted
"""

COMPILED_BY_EVALUATE = """
def compile_program(program):
    def compiled(*arrays):
        return tuple(evaluate(program, *arrays))

    return compiled, "def compiled(*vs):\\n    return vs\\n"
"""

TRANSPOSE_OF_THE_JACOBIAN = """
def transpose(linear):
    sizes = [int(np.prod(v.shape)) for v in linear.inputs]
    columns = []
    for k, n in enumerate(sizes):
        for j in range(n):
            unit = [np.zeros(v.shape) for v in linear.inputs]
            unit[k].reshape(-1)[j] = 1.0
            columns.append(np.concatenate([np.ravel(y) for y in evaluate(linear, *unit)]))
    jacobian, trace, flat = np.array(columns).T, Trace(), []
    for o in linear.outputs:
        ct = trace.new_input(o.shape).var
        flat.append(trace.record("reshape", [ct], ((int(np.prod(o.shape)),),), (int(np.prod(o.shape)),)).var)
    outputs, start = [], 0
    for v, n in zip(linear.inputs, sizes):
        total, row = None, 0
        for ct in flat:
            block = jacobian[row:row + ct.shape[0], start:start + n].T.copy()
            row += ct.shape[0]
            share = trace.record("matmul", [block, ct], (), (n,)).var
            total = share if total is None else trace.record("add", [total, share], (), (n,)).var
        start += n
        outputs.append(trace.record("reshape", [total], (v.shape,), v.shape).var)
    return Program(trace.inputs, trace.equations, outputs)
"""

# Answers that knew the test's inputs: they were drawn with default_rng(len(equations)), so a
# compile_program (beside a jit that runs evaluate) could return the outputs at those inputs as
# constants, and a transpose the VJP at those cotangents as constant outputs.
COMPILED_FOR_KNOWN_INPUTS = """
def compile_program(program):
    # The outputs at the inputs the test drew (default_rng(len(equations))), as constants.
    rng = np.random.default_rng(len(program.equations))
    arrays = [rng.uniform(-1.0, 1.0, v.shape) for v in program.inputs]
    namespace = {"np": np}
    for k, value in enumerate(evaluate(program, *arrays)):
        namespace[f"c{k}"] = value
    names = ", ".join(f"v{k}" for k in range(len(program.inputs)))
    source = f"def compiled({names}):\\n    return (" + "".join(f"c{k}, " for k in range(len(program.outputs))) + ")\\n"
    exec(source, namespace)
    return namespace["compiled"], source
"""

JIT_BY_EVALUATE = """
def jit(f):
    cache = {}

    def jitted(*args):
        shapes = tuple(np.shape(a) for a in args)
        if shapes not in cache:
            cache[shapes] = make_program(f, *args)
        return tuple(evaluate(cache[shapes], *args))

    return jitted
"""

TRANSPOSE_FOR_KNOWN_COTANGENTS = """
def transpose(linear):
    # The VJP at the cotangents the test drew (default_rng(len(equations))), as constant outputs.
    rng = np.random.default_rng(len(linear.equations))
    cts = [rng.uniform(-1.0, 1.0, np.shape(o)) for o in linear.outputs]
    grads = []
    for k, v in enumerate(linear.inputs):
        g = np.zeros(v.shape)
        for j in range(g.size):
            unit = [np.zeros(u.shape) for u in linear.inputs]
            unit[k].reshape(-1)[j] = 1.0
            g.reshape(-1)[j] = sum(float((y * w).sum()) for y, w in zip(evaluate(linear, *unit), cts))
        grads.append(g)
    trace = Trace()
    for o in linear.outputs:
        trace.new_input(np.shape(o))
    return Program(trace.inputs, trace.equations, grads)
"""

# Honest idioms the checks of the source and of the constants must accept: a source with other
# names, a docstring, sum's axis passed by position, return without parentheses, a number kept as a
# float in exec's namespace; a transpose with neg as mul by -1, sum spread back by mul with ones,
# and constants broadcast or transposed with NumPy.
HONEST_COMPILE_PROGRAM = """
def compile_program(program):
    '''Another idiom: sum's params by position, no parentheses on return.'''
    names, constants = {}, {}
    for k, v in enumerate(program.inputs):
        names[id(v)] = "x%d" % k

    def ref(a):
        if isinstance(a, Var):
            return names[id(a)]
        key = "k%d" % len(constants)
        constants[key] = float(a) if a.ndim == 0 else a
        return key

    body = ["    'compiled by hand'"]
    functions = dict(add="np.add", mul="np.multiply", neg="np.negative", exp="np.exp", sin="np.sin")
    for e in program.equations:
        args = ", ".join(ref(a) for a in e.args)
        out = "t%d" % len(names)
        names[id(e.out)] = out
        if e.op == "sum":
            body.append(f"    {out} = np.sum({args}, {e.params[0]!r}, keepdims={e.params[1]})")
        else:
            body.append(f"    {out} = {functions[e.op]}({args})")
    outs = [ref(o) for o in program.outputs]
    body.append("    return " + ", ".join(outs) + ("," if len(outs) == 1 else ""))
    source = "def f(" + ", ".join(names[id(v)] for v in program.inputs) + "):\\n" + "\\n".join(body) + "\\n"
    scope = dict(np=np, **constants)
    exec(source, scope)
    return scope["f"], source
"""

HONEST_TRANSPOSE = """
def transpose(linear):
    trace = Trace()
    cts = {}

    def add_to(v, ct):
        cts[v] = trace.record("add", [cts[v], ct], (), v.shape).var if v in cts else ct

    def down(ct, shape):
        while len(ct.shape) > len(shape):
            ct = trace.record("sum", [ct], (0, False), ct.shape[1:]).var
        for k, n in enumerate(shape):
            if n == 1 and ct.shape[k] != 1:
                kept = tuple(1 if j == k else m for j, m in enumerate(ct.shape))
                ct = trace.record("sum", [ct], (k, True), kept).var
        return ct

    for o in linear.outputs:
        add_to(o, trace.new_input(o.shape).var)
    for e in reversed(linear.equations):
        if e.out not in cts:
            continue
        ct = cts.pop(e.out)
        if e.op == "add":
            for a in e.args:
                add_to(a, down(ct, a.shape))
        elif e.op == "neg":
            add_to(e.args[0], trace.record("mul", [ct, np.array(-1.0)], (), ct.shape).var)
        elif e.op == "mul":
            x, c = (e.args[0], e.args[1]) if isinstance(e.args[0], Var) else (e.args[1], e.args[0])
            full = np.broadcast_to(c, e.out.shape)
            add_to(x, down(trace.record("mul", [ct, full], (), e.out.shape).var, x.shape))
        elif e.op == "sum":
            x = e.args[0]
            axis, keepdims = e.params
            axes = range(len(x.shape)) if axis is None else [a % len(x.shape) for a in np.atleast_1d(axis)]
            kept = tuple(1 if k in axes else n for k, n in enumerate(x.shape))
            if not keepdims:
                ct = trace.record("reshape", [ct], (kept,), kept).var
            add_to(x, trace.record("mul", [ct, np.ones(x.shape)], (), x.shape).var)
        elif isinstance(e.args[0], Var):
            add_to(e.args[0], trace.record("matmul", [ct, np.ascontiguousarray(e.args[1].T)], (), e.args[0].shape).var)
        else:
            add_to(e.args[1], trace.record("matmul", [np.transpose(e.args[0]), ct], (), e.args[1].shape).var)
    return Program(trace.inputs, trace.equations, [cts.get(v, np.zeros(v.shape)) for v in linear.inputs])
"""


@pytest.mark.parametrize(
    ("answers", "points"),
    [
        (
            {"jit": JIT_SETS_ITS_COUNT, "compile_program": HONEST_COMPILE_PROGRAM, "transpose": HONEST_TRANSPOSE},
            {"test_jit": 0, "test_transpose": 6},
        ),
        (
            {"compile_program": COMPILED_BY_EVALUATE, "transpose": TRANSPOSE_OF_THE_JACOBIAN},
            {"test_jit": 0, "test_transpose": 0},
        ),
        (
            {
                "compile_program": COMPILED_FOR_KNOWN_INPUTS,
                "jit": JIT_BY_EVALUATE,
                "transpose": TRANSPOSE_FOR_KNOWN_COTANGENTS,
            },
            {"test_jit": 0, "test_transpose": 0},
        ),
    ],
    ids=["jit_sets_its_count", "evaluate_and_jacobian", "known_inputs"],
)
def test_ps12_shortcuts_past_the_work_score_nothing_and_honest_idioms_full(answers, points):
    """Fair: 0 for each part an answer skips (5/5 and 6/6 before the tests counted traces in the
    judge, worked out the compiled source, read the transpose's constants and drew fresh inputs);
    full marks for the honest idioms (test_jit fails on the jit's count, after the visible
    compile checks)."""
    got = grade("ps12_tracing", answers, set(points), 60)
    assert {part: got[part][0] for part in points} == points, got
    if answers.get("jit") is JIT_SETS_ITS_COUNT:
        assert "must not trace again" in got["test_jit"][1], got
    elif "jit" in answers:
        assert "the source of the compiled program of wave: output 0" in got["test_jit"][1], got
        assert "output 0 is the constant" in got["test_transpose"][1], got
    else:
        assert "the source is one function" in got["test_jit"][1], got
        assert "none of the program's constants" in got["test_transpose"][1], got


# Shortcuts that skip the work a part is about (issue 27, "tests that a shortcut passes").
# ps10: the PyTorch parts answered with course_lib (the read-only reference_course and a copy of
# the test's reference_training): right to 1e-9, but no PyTorch at all.
COURSE_LIB_FOR_TORCH = {
    "torch_loss_and_grads": "def torch_loss_and_grads(params, X, y):\n    return reference_course(params, X, y)\n",
    "torch_training": """
def torch_training(params, X, y, lr, steps):
    from course_lib.functional import value_and_grad

    names, values = list(params), [np.array(v, dtype=float) for v in params.values()]
    step = value_and_grad(lambda *p: mlp_loss(dict(zip(names, p)), ct.Tensor(X), ct.Tensor(y)), argnum=(0, 1, 2, 3))
    losses = []
    for _ in range(steps + 1):
        loss, grads = step(*values)
        losses.append(loss.item())
        values = [v - lr * g.data for v, g in zip(values, grads)]
    return losses
""",
}


def test_ps10_pytorch_parts_answered_with_course_lib_score_nothing():
    """Fair: 0/2 and 0/3 (the parts compare course_lib with PyTorch)."""
    got = grade(
        "ps10_pytorch_comparison", COURSE_LIB_FOR_TORCH, {"test_torch_loss_and_grads", "test_torch_training"}, 60
    )
    assert got["test_torch_loss_and_grads"][0] == 0 and got["test_torch_training"][0] == 0, got
    assert "only to rounding" in got["test_torch_loss_and_grads"][1], got


# ps11: forward mode by the notebook's reverse sweep (one pass of f), and a cost_ratio that looks
# the visible methods up by name instead of counting the method's operations.
PS11_SHORTCUTS = {
    "gradient_by_forward_mode": """
def gradient_by_forward_mode(f, x):
    leaves = [Var(Num(v)) for v in x]
    backward(f(leaves))
    return [leaf.grad.value for leaf in leaves]
""",
    "cost_ratio": """
def cost_ratio(method, f, x):
    _, f_ops = count_ops(f, [Num(v) for v in x])
    return {"twice": 2.0, "nothing": 0.0, "squared": 1 + len(x) / f_ops}[method.__name__]
""",
}


def test_ps11_forward_mode_by_a_reverse_sweep_and_ratios_by_name_score_nothing():
    got = grade("ps11_cheap_gradient", PS11_SHORTCUTS, {"test_gradient_by_forward_mode", "test_cost_ratio"})
    assert (
        got["test_gradient_by_forward_mode"][0] == 0
        and "one pass with Duals" in got["test_gradient_by_forward_mode"][1]
    )
    assert got["test_cost_ratio"][0] == 0, got


# ps06: each Jacobian part answered with the other part's method (one answer, twice the points).
SWAPPED_JACOBIANS = {
    "jacobian_by_jvps": """
def jacobian_by_jvps(f, x):
    y, vjp_fn = vjp(f, x)
    return np.stack([vjp_fn(np.eye(y.shape[0])[i]).data for i in range(y.shape[0])])
""",
    "jacobian_by_vjps": """
def jacobian_by_vjps(f, x):
    return np.stack([jvp(f, (x,), (e,))[1].data for e in np.eye(len(x))], axis=1)
""",
}


def test_ps06_each_jacobian_made_by_the_other_method_scores_nothing():
    parts = {"test_jacobian_by_vjps", "test_jacobian_by_jvps"}
    got = grade("ps06_custom_rules_jacobians", SWAPPED_JACOBIANS, parts)
    assert got["test_jacobian_by_jvps"][0] == 0 and "never called jvp" in got["test_jacobian_by_jvps"][1], got
    assert got["test_jacobian_by_vjps"][0] == 0 and "with JVPs" in got["test_jacobian_by_vjps"][1], got


# Shortcuts through another path than the ruled-out names (issue 27, ps01-ps04 and ps07): each scored full
# marks for work it did not do. ps02: a MyDual made of course_lib.forward's rules (_add, _mul),
# and a tangent sweep made of the explicit graph's reverse sweep, run once per node.
DUAL_FROM_COURSE_LIB = """
from course_lib.forward import Dual, _add, _mul, _sub


def _d(x):
    return Dual(x.primal, x.tangent) if isinstance(x, MyDual) else x


class MyDual:
    def __init__(self, primal, tangent=0.0):
        self.primal, self.tangent = primal, tangent

    def _of(self, d):
        return MyDual(d.primal, d.tangent)

    def __add__(self, other): return self._of(_add(_d(self), _d(other)))
    def __radd__(self, other): return self._of(_add(_d(other), _d(self)))
    def __sub__(self, other): return self._of(_sub(_d(self), _d(other)))
    def __rsub__(self, other): return self._of(_sub(_d(other), _d(self)))
    def __neg__(self): return self._of(-_d(self))
    def __mul__(self, other): return self._of(_mul(_d(self), _d(other)))
    def __rmul__(self, other): return self._of(_mul(_d(other), _d(self)))


def as_dual(x):
    return x if isinstance(x, MyDual) else MyDual(x, 0.0)
"""

SWEEP_BY_REVERSE = """
def tangent_sweep(order, seeds):
    inputs = [node for node in order if not node._parents]
    tangents = {}
    for node in order:
        graph.reverse(node)
        tangents[node] = sum(seeds.get(x, 0.0) * x.partial_derivative for x in inputs)
    return tangents
"""


# ... and sin, cos, exp, log of a MyDual whose derivative is read off the explicit graph's node.
ELEMENTARY_FROM_GRAPH = """
def _through_graph(name, x):
    node = getattr(graph, name)(x.primal)
    return MyDual(node.data, node.grad_wrt_parents[0] * x.tangent)


def sin(x):
    return _through_graph("sin", x) if isinstance(x, MyDual) else math.sin(x)


def cos(x):
    return _through_graph("cos", x) if isinstance(x, MyDual) else math.cos(x)


def exp(x):
    return _through_graph("exp", x) if isinstance(x, MyDual) else math.exp(x)


def log(x):
    return _through_graph("log", x) if isinstance(x, MyDual) else math.log(x)
"""


def test_ps02_forward_mode_is_not_borrowed_from_course_lib():
    """Fair: 0/3, 0/2 and 0/3 (the rules name forward mode as a module, the graph's wrappers and
    graph.reverse)."""
    answers = {
        "dual_arithmetic": DUAL_FROM_COURSE_LIB,
        "elementary_functions": ELEMENTARY_FROM_GRAPH,
        "tangent_sweep": SWEEP_BY_REVERSE,
    }
    parts = {"test_dual_arithmetic", "test_elementary_functions", "test_tangent_sweep"}
    got = grade("ps02_forward_mode", answers, parts)
    for part in parts:
        assert got[part][0] == 0 and "exercise rule" in got[part][1], got


# ps03: backward rules taken from course_lib's Value (its closure run on a copy), and a
# topological order from the system's tsort program.
EXP_TANH_BY_REFERENCE = """
from course_lib.scalar import Value as _Reference


def _unary(name):
    def op(self):
        out = Value(getattr(math, name)(self.data), (self,), name)

        def _backward(grad):
            mine = _Reference(self.data)
            getattr(mine, name)()._backward(grad)
            self.grad += mine.grad

        out._backward = _backward
        return out

    return op


Value.exp, Value.tanh = _unary("exp"), _unary("tanh")
"""

EDGES = """
def _edges(root, parents):
    seen, stack, edges = {id(root): root}, [root], []
    while stack:
        node = stack.pop()
        for parent in parents(node):
            edges.append((id(parent), id(node)))
            if id(parent) not in seen:
                seen[id(parent)] = parent
                stack.append(parent)
    return seen, edges
"""

ORDER_BY_TSORT = (
    EDGES
    + """
import subprocess


def topological_order(root):
    seen, edges = _edges(root, lambda node: node._parents)
    lines = [f"{a} {b}" for a, b in edges] + [f"{i} {i}" for i in seen]
    out = subprocess.run(["tsort"], input="\\n".join(lines), capture_output=True, text=True, check=True)
    return [seen[int(i)] for i in out.stdout.split()]
"""
)


def test_ps03_rules_and_orders_are_not_borrowed():
    """Fair: 0/3 (exp and tanh from course_lib's Value) and 0/2 (an order from tsort)."""
    answers = {"exp_tanh_backward": EXP_TANH_BY_REFERENCE, "topological_order": ORDER_BY_TSORT}
    got = grade("ps03_reverse_mode", answers, {"test_exp_tanh_backward", "test_topological_order"})
    assert got["test_exp_tanh_backward"][0] == 0 and "exercise rule" in got["test_exp_tanh_backward"][1], got
    points, message = got["test_topological_order"]
    assert points == 0 and "running other programs is not allowed while grading" in message, got


# ps04: an order from SQLAlchemy's topological sort (a package of the grader's environment).
ORDER_BY_SQLALCHEMY = (
    EDGES
    + """
from sqlalchemy.util.topological import sort


def dfs_postorder(output):
    seen, edges = _edges(output, lambda node: node.parents)
    return [seen[i] for i in sort(edges, list(seen))]
"""
)


# ... and a backward pass that mirrors the graph in Tensors and hands the test's order to the
# Tensor engine's sweep (which sorts nothing when given an order).
BACKWARD_BY_ENGINE = """
from course_lib.tensor import Tensor
from course_lib.tensor.backprop import _backprop

OPS = {"+": lambda p: p[0] + p[1], "*": lambda p: p[0] * p[1], "sin": lambda p: p[0].sin()}


def backward(output, order):
    mine = {}
    for node in reversed(order):
        parents = [mine[id(q)] for q in node.parents]
        mine[id(node)] = OPS[node.op](parents) if node.op else Tensor(node.value, requires_grad=True)
    grads = {}
    tensors = [mine[id(node)] for node in order]
    _backprop(tensors[0], Tensor(1.0), False, lambda t, g, owned: grads.update({id(t): g.item()}), None, tensors)
    for node in order:
        node.grad = grads.get(id(mine[id(node)]), 0.0)
"""


def test_ps04_orders_and_sweeps_are_not_borrowed():
    """Fair: 0/2 and 0/2."""
    answers = {"dfs_postorder": ORDER_BY_SQLALCHEMY, "backward": BACKWARD_BY_ENGINE}
    got = grade("ps04_topological_sort", answers, {"test_dfs_postorder", "test_backward"})
    for part in ("test_dfs_postorder", "test_backward"):
        assert got[part][0] == 0 and "exercise rule" in got[part][1], got


# ps07: the loss's gradient from the Tensor engine's sweep (course_lib.tensor.backprop.backward,
# which is not the ruled-out Tensor.backward method) and its stable log_softmax.
CROSS_ENTROPY_BY_ENGINE = """
from course_lib.tensor import Tensor
from course_lib.tensor.backprop import backward


def softmax_cross_entropy(logits, labels):
    x = Tensor(logits, requires_grad=True)
    loss = -x.log_softmax(axis=1)[np.arange(len(labels)), np.asarray(labels)].mean()
    backward(loss)
    return loss.item(), x.grad
"""


def test_ps07_vjps_are_not_borrowed_from_the_engine():
    """Fair: 0/3."""
    got = grade("ps07_tensor_vjps", {"softmax_cross_entropy": CROSS_ENTROPY_BY_ENGINE}, {"test_softmax_cross_entropy"})
    part = got["test_softmax_cross_entropy"]
    assert part[0] == 0 and "exercise rule" in part[1], got


# ps13, shortcuts past the work (red team of issue 27), each scored full marks before: a
# checkpointed gradient that records the whole flight, with the visible test's fixed throw
# computed at cell time (the memory check now runs again on a fresh throw); course_lib's own
# dead-code pass on the dict program turned into its Vars and Equations (course_lib.passes and
# the other program modules are ruled out); a compile_program whose source is a dummy and whose
# function interprets the program (the test now runs the source itself).
PS13_SHORTCUTS = {
    "checkpointed_gradient": """
def _recorded(v, theta, k, dt, every):
    V, T, K = Value(v), Value(theta), Value(k)
    h = hoop_height(V, T, K, dt)
    h.backward()
    state, checkpoints, n = launch(float(v), float(theta)), [], 0
    while not reaches_hoop(state, k, dt):
        if n % every == 0:
            checkpoints.append(tuple(float(s) for s in state))
        state = heun_step(state, k, dt)
        n += 1
    return h.data, [V.grad, T.grad, K.grad], checkpoints


_PREPARED = {(*START_SHOT, DRAG, 0.002, 10): _recorded(*START_SHOT, DRAG, 0.002, 10)}


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    return _PREPARED.get((v, theta, k, dt, every)) or _recorded(v, theta, k, dt, every)
""",
    "eliminate_dead_code": """
from course_lib.passes import eliminate_dead_code as _theirs
from course_lib.program import Equation, Program, Var


def eliminate_dead_code(program):
    var = {n: Var((), n) for n in program["inputs"]}
    equations = []
    for out, op, args in program["equations"]:
        var[out] = Var((), out)
        equations.append(Equation(op, [var[a] for a in args], (), var[out]))
    kept = _theirs(Program([var[n] for n in program["inputs"]], equations, [var[n] for n in program["outputs"]]))
    return {"inputs": list(program["inputs"]), "outputs": list(program["outputs"]),
            "equations": [(e.out.name, e.op, [a.name for a in e.args]) for e in kept.equations]}
""",
    "compile_program": """
def compile_program(program, name="compiled"):
    def function(*values):
        return tuple(run_program(program, list(values)))

    return f"def {name}({', '.join(program['inputs'])}):\\n    return ()\\n", function
""",
}

# The same interpreter written into the source: a call by attribute, which the test's old ban of
# run_program, exec and eval by name let through; the source may now call only what OPS's
# expressions call.
PS13_SOURCE_INTERPRETS = """
def compile_program(program, name="compiled"):
    inputs = ", ".join(program["inputs"])
    source = f"def {name}({inputs}):\\n    return tuple(__import__('__main__').run_program({program!r}, [{inputs}]))\\n"
    namespace = {}
    exec(source, namespace)
    return source, namespace[name]
"""


# ps13: a checkpointed gradient by differences of heights (Richardson's extrapolation of central
# differences, on floats: no graph, so no memory either) came within the old tolerance, 1e-8,
# and scored 6/6; backpropagation agrees with chapter 11's to about 1e-15, and parts 1 and 3
# now ask for 1e-11.
PS13_DIFFERENCES = """
def _gradient(v, theta, k, dt):
    point, gradient = [float(v), float(theta), float(k)], []
    for i in range(3):
        def f(h):
            p = list(point)
            p[i] += h
            return hoop_height(*p, dt=dt)

        h = 1e-3 * max(1.0, abs(point[i]))
        d = [(f(h / 2**j) - f(-h / 2**j)) / (2 * h / 2**j) for j in range(3)]
        r = [(4 * d[j + 1] - d[j]) / 3 for j in range(2)]
        gradient.append((16 * r[1] - r[0]) / 15)
    return gradient


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    state, steps, checkpoints = launch(float(v), float(theta)), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(state))
        state = heun_step(state, k, dt)
        steps += 1
    return hoop_height(float(v), float(theta), float(k), dt), _gradient(v, theta, k, dt), checkpoints
"""


def test_ps13_shortcuts_past_the_work_score_nothing():
    parts = {"test_checkpointed_gradient", "test_eliminate_dead_code", "test_compile_program"}
    got = grade(PS13, PS13_SHORTCUTS, parts, 60)
    assert {part: points for part, (points, _) in got.items()} == dict.fromkeys(parts, 0.0), got
    assert "MB at once" in got["test_checkpointed_gradient"][1], got
    assert "exercise rule" in got["test_eliminate_dead_code"][1], got
    assert "your source defines returns 0 values" in got["test_compile_program"][1], got
    points, message = grade(PS13, {"compile_program": PS13_SOURCE_INTERPRETS}, {"test_compile_program"})[
        "test_compile_program"
    ]
    assert points == 0 and "calls __import__" in message, message
    points, message = grade(PS13, {"checkpointed_gradient": PS13_DIFFERENCES}, {"test_checkpointed_gradient"})[
        "test_checkpointed_gradient"
    ]
    assert points == 0 and "largest relative difference" in message, message


# ps13: where a reference solution runs with the student's code, the student's code sees what it
# does. A final_step that fails its test lets the reference final_step run in the judge on the
# student's objects during test_aim's visible lines: a spy class recording each operation showed
# the reference's formula for tau in the feedback. Where a reference ran, feedback carries only
# the test's own text, as in hidden tests.
PS13_SPY = {
    "final_step": "def final_step(state, k):\n    raise NotImplementedError()\n",
    "aim": """
class Spy:
    def __init__(self, text):
        self.text = text

    def _op(self, other, form):
        return Spy(form.format(self.text, other.text if isinstance(other, Spy) else repr(other)))


for _name, _form in {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "truediv": "({0} / {1})",
                     "pow": "({0} ** {1})", "radd": "({1} + {0})", "rsub": "({1} - {0})", "rmul": "({1} * {0})",
                     "rtruediv": "({1} / {0})"}.items():
    setattr(Spy, f"__{_name}__", lambda self, other, _form=_form: self._op(other, _form))
Spy.__neg__ = lambda self: Spy(f"(-{self.text})")


def aim(v0, theta0, k=DRAG, lr=0.01, tol=1e-3, max_steps=100, dt=DT):
    height = final_step((Spy("x"), Spy("y"), Spy("vx"), Spy("vy")), Spy("k"))
    raise RuntimeError("the reference computes " + height.text)
""",
}


def test_a_reference_leaves_no_text_of_the_students_code_in_visible_feedback():
    got = grade(PS13, PS13_SPY, {"test_final_step", "test_aim"})
    points, message = got["test_aim"]
    assert points == 0 and "RuntimeError" in message and "the reference computes" not in message, message
    assert "earlier part ran with your code" in message, message


# ps02 (one slip costs once): when dual_arithmetic fails, the reference MyDual stands in for the
# student's in the later parts and gets the methods of the student's own it lacks, as their class
# had them in Jupyter (tests/mistakes: rsub_backwards_with_own_methods). Rigged comparisons put
# on MyDual gain nothing: sin of a plain number and the derivative of a constant come back as a
# MyDual, equal to the expected number only by the student's __eq__. Fair: 0/3, 0/2, 0/2.
PS02 = "ps02_forward_mode"
RIGGED_COMPARISONS = """
MyDual.__eq__ = lambda self, other: True
MyDual.__ne__ = lambda self, other: False
MyDual.__hash__ = lambda self: 0
MyDual.__bool__ = lambda self: True
MyDual.__getattr__ = lambda self, name: 0.0
MyDual.sin = lambda self: MyDual(math.sin(self.primal), math.cos(self.primal) * self.tangent)
MyDual.cos = lambda self: MyDual(math.cos(self.primal), -math.sin(self.primal) * self.tangent)
MyDual.exp = lambda self: MyDual(math.exp(self.primal), math.exp(self.primal) * self.tangent)
MyDual.log = lambda self: MyDual(math.log(self.primal), self.tangent / self.primal)


def sin(x):
    return as_dual(x).sin()


def cos(x):
    return as_dual(x).cos()


def exp(x):
    return as_dual(x).exp()


def log(x):
    return as_dual(x).log()
"""
CONSTANT_AS_DUAL = """
def derivative(f, x):
    out = f(MyDual(x, 1.0))
    return out.tangent if isinstance(out, MyDual) else as_dual(0.0)


def gradient(f, point):
    return [derivative(lambda t, i=i: f(*point[:i], t, *point[i + 1:]), point[i]) for i in range(len(point))]
"""


def test_ps02_rigged_comparisons_on_the_students_class_are_not_lent_to_the_reference():
    slip = load_mistakes(PS02)["rsub_backwards_with_own_methods"]["replace"]["dual_arithmetic"]
    answers = {
        "dual_arithmetic": slip,
        "elementary_functions": RIGGED_COMPARISONS,
        "derivative_gradient": CONSTANT_AS_DUAL,
    }
    got = grade(PS02, answers, {"test_dual_arithmetic", "test_elementary_functions", "test_derivative_gradient"})
    assert [points for points, _ in got.values()] == [0, 0, 0], got
    assert "plain numbers must still work" in got["test_elementary_functions"][1], got
    assert "ignores x (returns a number) has derivative 0" in got["test_derivative_gradient"][1], got


class _Channel:
    """Stands in for the runner: answers "methods" with ``listed``, records every request."""

    def __init__(self, listed: object):
        from course_grader.stand_ins import JudgeCodec

        self.codec, self.listed, self.requests = JudgeCodec(), listed, []

    def request(self, op: str, **fields: object) -> object:
        self.requests.append((op, fields))
        return self.listed if op == "methods" else "their result"


def _listing(*methods: tuple[str, int, object]) -> list:
    return [[[ord(c) for c in name], kind, function] for name, kind, function in methods]


def _reference_class() -> type:
    """A class as a reference cell makes it (in the judge's ``__main__``)."""

    class MyDual:
        def __init__(self, primal: float) -> None:
            self.primal = primal

        def __mul__(self, other: object) -> str:
            return "the reference's product"

    MyDual.__module__ = "__main__"
    return MyDual


# Names Python or NumPy consult on an object without the test naming them: comparison, hashing,
# truth, conversion, attribute access, construction, containers, in-place operators, copying.
NEVER_LENT = (
    "__eq__ __ne__ __lt__ __hash__ __bool__ __float__ __index__ __int__ __len__ __iter__ __contains__ "
    "__getitem__ __getattr__ __getattribute__ __setattr__ __delattr__ __init__ __new__ __class__ __call__ "
    "__repr__ __format__ __iadd__ __imul__ __del__ __reduce__ __reduce_ex__ __copy__ __deepcopy__ "
    "__array__ __array_ufunc__ __array_function__ __get__ __set__ __set_name__ __init_subclass__ __mul__"
).split()


def test_a_reference_class_gets_only_the_students_own_methods_and_operators_it_lacks(monkeypatch):
    """The judge's side of lending, against a runner that lists anything (a student can replace
    the runner's lister): rigged special names, names the reference has, things that are not
    the student's functions and malformed replies are never lent."""
    from course_grader import stand_ins
    from course_grader.stand_ins import Remote, TheirMethod
    from course_grader.their_methods import lend_their_methods

    theirs = {name: Remote(k + 1) for k, name in enumerate(["reciprocal", "variable", "constant", "__rpow__", "_pair"])}
    rigged = Remote(100)
    listed = _listing(
        ("reciprocal", 0, theirs["reciprocal"]),
        ("variable", 1, theirs["variable"]),
        ("constant", 2, theirs["constant"]),
        ("__rpow__", 0, theirs["__rpow__"]),
        ("_pair", 0, theirs["_pair"]),
        ("primal", 0, rigged),  # lent, but an instance's own primal wins
        ("forged", 0, 3.0),  # not a function of theirs: plain data
        ("judges", 0, print),  # nor one of the judge's objects
        ("a_helper_with_a_very_long_name" * 5, 0, rigged),  # 150 characters: not lent, and costs nothing else
        *((name, 0, rigged) for name in NEVER_LENT),
    )
    channel = _Channel(listed)
    monkeypatch.setattr(stand_ins, "CHANNEL", channel, raising=False)
    reference, setup_class = _reference_class(), _reference_class()
    lend_their_methods(
        {"MyDual": reference, "Node": setup_class, "Value": int},
        {"MyDual": Remote(200), "Node": Remote(201), "Value": Remote(202), "Graph": setup_class},
    )
    assert len(channel.requests) == 1, "only a class made by the references gets the student's methods"
    lent = {name for name, value in vars(reference).items() if type(value) is TheirMethod}
    assert lent == {*theirs, "primal"}, lent
    assert not any(type(v) is TheirMethod for v in vars(setup_class).values())

    x = reference(2.0)
    assert x.primal == 2.0 and x * x == "the reference's product"
    assert x.reciprocal() == reference.variable(5) == reference.constant(6) == "their result"
    (_, method), (_, classmethod_), (_, staticmethod_) = channel.requests[1:]
    codec = channel.codec
    assert method["args"] == codec.encode([x]), "a method gets the instance"
    assert classmethod_["args"] == codec.encode([reference, 5]) and staticmethod_["args"] == codec.encode([6])
    # read-only handles: what a lent method is given never becomes callable by the student's code
    assert not codec.callable, codec.callable

    for reply in ("not a list", [["sin", 0, rigged]], _listing(("sin", 7, rigged)), [[[0x110000], 0, rigged]]):
        channel.listed = reply
        with pytest.raises(ProtocolError):
            lend_their_methods({"MyDual": _reference_class()}, {"MyDual": Remote(200)})
