"""Hostile students against ps13 (the capstone), red team 14: shortcuts past the work that scored
full marks in the grader and in Jupyter, and a reply that bloated the judge.

Each hand-in has read the grader's source, the rules and the visible tests; the cases share two
grading runs of the real sandbox (``grade`` of test_verdict_seams.py) and assert the fair score.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import PS13, grade

# Part 1: course_lib's own last step, chapter 11's simulator's final_step, which runs on any numbers with a
# sqrt method: given one, the student's Values went through it. Scored 2/2; the rules now rule it out.
SIMULATORS_FINAL_STEP = """
from course_lib import simulate

Value.sqrt = lambda self: self ** 0.5


def final_step(state, k):
    if not any(isinstance(s, Value) for s in (*state, k)):
        return simulate.final_step(tuple(Value(s) for s in state), Value(k)).data
    return simulate.final_step(state, k)
"""

# Part 2: the descent with gradients by differences of heights on floats (Richardson's extrapolation of
# central differences), no engine at all: within the test's tolerance, 2/2. The test now also descends with
# launch_passing_back_twice, which the engine's backward() sees (twice the learning rate) and differences do not.
DIFFERENCES_AIM = """
def _gradient(v, theta, k, dt):
    point, gradient = [float(v), float(theta)], []
    for i in range(2):
        def f(h):
            p = list(point)
            p[i] += h
            return hoop_height(*p, k, dt)

        h = 1e-3 * max(1.0, abs(point[i]))
        d = [(f(h / 2**j) - f(-h / 2**j)) / (2 * h / 2**j) for j in range(3)]
        r = [(4 * d[j + 1] - d[j]) / 3 for j in range(2)]
        gradient.append((16 * r[1] - r[0]) / 15)
    return gradient


def aim(v0, theta0, k=DRAG, lr=0.01, tol=1e-3, max_steps=100, dt=DT):
    v, theta, rows = float(v0), float(theta0), []
    for _ in range(max_steps + 1):
        height = hoop_height(v, theta, k, dt)
        rows.append((v, theta, height))
        if abs(height - HOOP[1]) < tol:
            break
        gv, gt = _gradient(v, theta, k, dt)
        v, theta = v - lr * 2 * (height - HOOP[1]) * gv, theta - lr * 2 * (height - HOOP[1]) * gt
    return rows
"""

# Part 3: no checkpointing and no reverse mode: forward mode on a dual number of its own, carrying
# d/d(v, theta, k) through the flight on floats (no graph, so no memory to measure; exact to rounding).
# Scored 6/6; the test now also flies with a launch whose velocity Values pass back twice the gradient
# (launch_passing_back_twice), which only a gradient that comes back through launch by backward() sees.
FORWARD_MODE = '''
class Dual:
    """A number with its derivatives with respect to (v, theta, k): forward mode."""
    def __init__(self, a, d=(0.0, 0.0, 0.0)):
        self.a, self.d = float(a), tuple(d)
    @property
    def data(self):
        return self.a
    def _lift(self, o):
        return o if isinstance(o, Dual) else Dual(o)
    def __add__(self, o):
        o = self._lift(o); return Dual(self.a + o.a, [p + q for p, q in zip(self.d, o.d)])
    __radd__ = __add__
    def __neg__(self):
        return Dual(-self.a, [-p for p in self.d])
    def __sub__(self, o):
        return self + (-self._lift(o))
    def __rsub__(self, o):
        return (-self) + o
    def __mul__(self, o):
        o = self._lift(o); return Dual(self.a * o.a, [p * o.a + self.a * q for p, q in zip(self.d, o.d)])
    __rmul__ = __mul__
    def __truediv__(self, o):
        o = self._lift(o); return self * o ** -1
    def __rtruediv__(self, o):
        return self._lift(o) * self ** -1
    def __pow__(self, n):
        return Dual(self.a ** n, [n * self.a ** (n - 1) * p for p in self.d])
    def sin(self):
        return Dual(math.sin(self.a), [math.cos(self.a) * p for p in self.d])
    def cos(self):
        return Dual(math.cos(self.a), [-math.sin(self.a) * p for p in self.d])


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    state, steps, checkpoints = launch(float(v), float(theta)), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(state))
        state = heun_step(state, k, dt)
        steps += 1
    V, T, K = Dual(v, (1, 0, 0)), Dual(theta, (0, 1, 0)), Dual(k, (0, 0, 1))
    s = launch(V, T)
    for _ in range(steps):
        s = heun_step(s, K, dt)
    h = final_step(s, K)
    return h.a, list(h.d), checkpoints
'''

# Part 4: a step program with no backward equations (its outputs are the parameters as they came in),
# matched bit for bit by an eager engine whose backward() does nothing (the engine cells are the
# student's to paste over). Scored 4/4 (and parts 5 and 6 too); the test now also compares the step with
# one of course_lib's engine. The engine trains nothing, so the eager step that parts 5 and 6 compare the
# course's step program with differs too: they score nothing either (an honest engine trains).
NO_BACKWARD = """
Tensor.backward = lambda self, grad=None: None


def step_program(model, X, y):
    params = model.parameters()
    X_node = Tensor(X)
    loss = cross_entropy(model(X_node), y)
    names = {id(p): f"p{k}" for k, p in enumerate(params)}
    names[id(X_node)] = "X"
    equations = []
    for node in topological_order(loss):
        if node._parents:
            args = [names[id(parent)] for parent in node._parents]
            if node._op == "cross_entropy":
                args.append("y")
            names[id(node)] = f"v{len(equations)}"
            equations.append((names[id(node)], node._op, args))
    return {"inputs": [*(f"p{k}" for k in range(len(params))), "X", "y", "lr"],
            "equations": equations, "outputs": [names[id(loss)], *(f"p{k}" for k in range(len(params)))]}
"""

# Part 6: the interpreter written into the "straight-line" source: getattr bound to a name the source
# may call, which reads run_program from unbroadcast's globals. Scored 3/3; the source may now read only
# its inputs, its own variables and the namespace's names, and assign only to variables of its own.
INTERPRETER_IN_SOURCE = """
def compile_program(program, name="compiled"):
    inputs = ", ".join(program["inputs"])
    plain = {"inputs": list(program["inputs"]), "outputs": list(program["outputs"]),
             "equations": [[o, op, list(a)] for o, op, a in program["equations"]]}
    source = (f"def {name}({inputs}):\\n"
              "    cross_entropy_value = getattr\\n"
              "    cross_entropy_vjp = cross_entropy_value(unbroadcast, '__globals__')['run_program']\\n"
              f"    out = cross_entropy_vjp({plain!r}, [{inputs}])\\n"
              "    return (*out,)\\n")
    namespace = {"np": np, "unbroadcast": unbroadcast, "cross_entropy_value": cross_entropy_value,
                 "cross_entropy_vjp": cross_entropy_vjp}
    exec(source, namespace)
    return source, namespace[name]
"""

# Part 6: the right source padded with two million assignments (26 MB, within a message's 64 MB): the
# judge's ast.parse held 1.5 GB (its RLIMIT_DATA) before a MemoryError. The test now bounds the source's
# length by the program's before parsing it (the judge peaked at 117 MB).
PADDED_SOURCE = """
def _right(program, name):
    lines = [f"def {name}({', '.join(program['inputs'])}):"]
    for out, op, args in program["equations"]:
        lines.append(f"    {out} = {OPS[op][1].format(*args)}")
    lines.append(f"    return ({''.join(f'{o}, ' for o in program['outputs'])})")
    source = "\\n".join(lines) + "\\n"
    namespace = {"np": np, "unbroadcast": unbroadcast, "cross_entropy_value": cross_entropy_value,
                 "cross_entropy_vjp": cross_entropy_vjp}
    exec(source, namespace)
    return source, namespace[name]


def compile_program(program, name="compiled"):
    source, function = _right(program, name)
    head, _, rest = source.partition("\\n")
    return head + "\\n" + "    _pad = 0\\n" * 2_000_000 + rest, function
"""


@pytest.fixture(scope="module")
def shortcuts() -> dict:
    answers = {
        "aim": DIFFERENCES_AIM,
        "checkpointed_gradient": FORWARD_MODE,
        "step_program": NO_BACKWARD,
        "compile_program": INTERPRETER_IN_SOURCE,
    }
    parts = {
        "test_aim",
        "test_checkpointed_gradient",
        "test_step_program",
        "test_eliminate_dead_code",
        "test_compile_program",
    }
    return grade(PS13, answers, parts, 60)


def test_ps13_a_descent_by_differences_of_heights_earns_nothing(shortcuts):
    """Fair: 0/2 (was 2/2)."""
    points, message = shortcuts["test_aim"]
    assert points == 0 and "launch_passing_back_twice" in message, message


def test_ps13_forward_mode_is_not_checkpointing(shortcuts):
    """Fair: 0/6 (was 6/6)."""
    points, message = shortcuts["test_checkpointed_gradient"]
    assert points == 0 and "launch_passing_back_twice" in message, message


def test_ps13_a_step_program_without_a_backward_pass_earns_nothing(shortcuts):
    """Fair: 0/4 (was 4/4)."""
    points, message = shortcuts["test_step_program"]
    assert points == 0 and "not a step of gradient descent" in message, message
    assert shortcuts["test_eliminate_dead_code"][0] == 0, shortcuts


def test_ps13_an_interpreter_in_the_source_is_not_compiled(shortcuts):
    """Fair: 0/3 (was 3/3)."""
    points, message = shortcuts["test_compile_program"]
    assert points == 0 and "a variable of its own" in message, message


@pytest.fixture(scope="module")
def refused() -> dict:
    answers = {"final_step": SIMULATORS_FINAL_STEP, "compile_program": PADDED_SOURCE}
    return grade(PS13, answers, {"test_final_step", "test_compile_program"}, 60)


def test_ps13_the_simulators_final_step_is_ruled_out(refused):
    """Fair: 0/2 (was 2/2)."""
    points, message = refused["test_final_step"]
    assert points == 0 and "exercise rule" in message, message


def test_ps13_a_padded_source_is_refused_before_it_is_parsed(refused):
    """Fair: 0/3, in seconds and without the judge's memory (1.5 GB before)."""
    points, message = refused["test_compile_program"]
    assert points == 0 and "characters for" in message, message


# Honest: an engine pasted over the given one whose loss is the sum of the cross-entropies, not their mean
# (a slip in an engine that ps13 does not grade), and the solution's step program written down from it. In
# Jupyter 9/9 on parts 4 to 6. The grader's set-up functions (train_step, run_program, compiled_function)
# compute with the given cells' functions, not those the student pasted: the compiled function that
# compile_program returned (made with the student's) differed from run_program's, 0/3 before; it is now
# compared with its own source made in its own namespace. The step is checked against course_lib's to
# within the loss's scale.
SUMMED_LOSS_ENGINE = '''
def cross_entropy_value(logits, labels):
    log_probs = log_softmax(logits)
    return -log_probs[np.arange(len(labels)), labels].sum()


def cross_entropy_vjp(grad, logits, labels):
    delta = np.exp(log_softmax(logits))
    delta[np.arange(len(labels)), labels] -= 1.0
    return grad * delta


def step_program(model, X, y):
    """The program of train_step(model, X, y, lr): inputs p0, p1, ..., X, y, lr; outputs the loss and the
    updated parameters."""
    params = model.parameters()
    loss = cross_entropy(model(X), y)
    names = {id(p): f"p{k}" for k, p in enumerate(params)}
    equations, forward = [], []

    def emit(op, *args):
        out = f"v{len(equations)}"
        equations.append((out, op, list(args)))
        return out

    for node in topological_order(loss):
        if not node._parents:
            names.setdefault(id(node), "X")  # the one leaf that is not a parameter: the batch, as model(X) made it
        else:
            args = [names[id(parent)] for parent in node._parents]
            if node._op == "cross_entropy":
                args.append("y")
            names[id(node)] = emit(node._op, *args)
            forward.append((names[id(node)], node._op, args))
    grads = {names[id(loss)]: emit("ones_like", names[id(loss)])}

    def send(name, share):
        grads[name] = emit("+", grads[name], share) if name in grads else share

    for out, op, args in reversed(forward):
        g = grads[out]
        if op == "+":
            for a in args:
                send(a, emit("unbroadcast", g, a))
        elif op == "*":
            send(args[0], emit("unbroadcast", emit("*", g, args[1]), args[0]))
            send(args[1], emit("unbroadcast", emit("*", g, args[0]), args[1]))
        elif op == "@":
            send(args[0], emit("@", g, emit("T", args[1])))
            send(args[1], emit("@", emit("T", args[0]), g))
        elif op == "neg":
            send(args[0], emit("neg", g))
        elif op == "relu":
            send(args[0], emit("*", g, emit("positive", args[0])))
        elif op == "cross_entropy":
            send(args[0], emit("cross_entropy_vjp", g, *args))
        else:
            raise ValueError(f"step_program has no backward rule for the op {op!r}")
    updated = [emit("-", f"p{k}", emit("*", "lr", grads[f"p{k}"])) for k in range(len(params))]
    return {"inputs": [*(f"p{k}" for k in range(len(params))), "X", "y", "lr"],
            "equations": equations, "outputs": [names[id(loss)], *updated]}
    ### END SOLUTION'''


# Part 3 again: forward mode through the flight to the launch's velocities and k, then backward() through
# launch alone (so the launch probe sees its gradient double). Scored 6/6 with the launch probe alone; the
# test also flies with heun_step_passing_k_back_twice, whose k passes back twice what a step sends it.
FORWARD_THEN_LAUNCH = (
    FORWARD_MODE.split("def checkpointed_gradient")[0]
    + """
def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    state, steps, checkpoints = launch(float(v), float(theta)), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(state))
        state = heun_step(state, k, dt)
        steps += 1
    x0, y0, vx0, vy0 = launch(float(v), float(theta))
    s = (x0, y0, Dual(vx0, (1, 0, 0)), Dual(vy0, (0, 1, 0)))
    K = Dual(k, (0, 0, 1))
    for _ in range(steps):
        s = heun_step(s, K, dt)
    h = final_step(s, K)
    V, T = Value(v), Value(theta)
    _, _, vx, vy = launch(V, T)
    out = vx * h.d[0] + vy * h.d[1]
    out.backward()
    return h.a, [V.grad, T.grad, h.d[2]], checkpoints
"""
)


@pytest.fixture(scope="module")
def own_engine() -> dict:
    answers = {"checkpointed_gradient": FORWARD_THEN_LAUNCH, "step_program": SUMMED_LOSS_ENGINE}
    parts = {"test_checkpointed_gradient", "test_step_program", "test_eliminate_dead_code", "test_compile_program"}
    return grade(PS13, answers, parts, 60)


def test_ps13_an_engine_of_ones_own_is_graded_as_in_jupyter(own_engine):
    got = {part: points for part, (points, _) in own_engine.items() if part != "test_checkpointed_gradient"}
    assert got == {"test_step_program": 4, "test_eliminate_dead_code": 2, "test_compile_program": 3}, own_engine


def test_ps13_forward_mode_then_backward_through_launch_is_not_checkpointing(own_engine):
    """Fair: 0/6 (was 6/6 with the launch probe alone)."""
    points, message = own_engine["test_checkpointed_gradient"]
    assert points == 0 and "heun_step_passing_k_back_twice" in message, message


# Honest: the last step as a Heun step of its own length tau (its position update is the shortened step's).
# The k probe doubled the k that final_step handed heun_step too: 0/6 with it at first; it now doubles k in
# full steps only (dt a plain number, where tau is a Value).
FINAL_STEP_AS_A_HEUN_STEP = '''
def final_step(state, k):
    """A Heun step of its own length tau: its position update is exact for the step's constant acceleration."""
    x, y, vx, vy = state
    ax, _ = acceleration(vx, vy, k)
    d = HOOP[0] - x
    tau = 2 * d / (vx + (vx * vx + 2 * ax * d) ** 0.5)
    return heun_step(state, k, tau)[1]
'''


def test_ps13_a_last_step_made_by_heun_step_keeps_the_checkpointing_points():
    got = grade(PS13, {"final_step": FINAL_STEP_AS_A_HEUN_STEP}, {"test_final_step", "test_checkpointed_gradient"}, 60)
    assert {part: points for part, (points, _) in got.items()} == {
        "test_final_step": 2,
        "test_checkpointed_gradient": 6,
    }, got
