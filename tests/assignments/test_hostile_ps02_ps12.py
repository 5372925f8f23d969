"""Hostile and honest students against ps02 (forward mode) and ps12 (tracing), second pass.

Each hand-in has read the grader's source, the rules (``solutions/<ps>/rules.toml``) and the
visible tests; every case grades in the real sandbox (``grade`` of test_verdict_seams.py) and
asserts the fair score (the one the notebook earns in Jupyter).
"""

from __future__ import annotations

import pytest
from nbgrader_helpers import load_mistakes
from test_hostile_ps06_ps12 import GRAPH_PROGRAM
from test_verdict_seams import grade

PS02, PS12 = "ps02_forward_mode", "ps12_tracing"

# ps12 part 2: the eager engine's graph read off Tensors that are also Tracers (as in
# test_hostile_ps06_ps12.py), whose .trace is an object of the student's that claims more
# equations each time the test counts them. The test's check that f's operations were recorded
# asks the student's objects, so it scored 2/2. Fair 0/2: the hidden test now also traces a
# function whose values are 800 MB each, which tracing records at once and an engine that
# computes cannot hold all at once (the sandbox's 2 GB).
CLAIMED_TRACE = '''
class _Counted:
    """Claims 10 more equations each time it is asked."""

    def __init__(self):
        self.n = 0

    @property
    def equations(self):
        self.n += 10
        return [0] * self.n


_TRACE = _Counted()


class _Both(Tensor, Tracer):
    @property
    def trace(self):
        return _TRACE

    @trace.setter
    def trace(self, value):
        pass

    @property
    def var(self):
        return Var(self.shape)

    @var.setter
    def var(self, value):
        pass

''' + GRAPH_PROGRAM.replace("[Tensor(", "[_Both(")


# ... while an honest Tracer that works out a sum's shape on an array of zeros (800 MB once; shapes
# on zeros for every op also pass, in about 10 s more), a subclass bound to the set-up's name
# Tracer (which Trace.new_input then makes), keeps 2/2.
ZEROS_SUBCLASS = '''
def atom(x):
    if isinstance(x, Tracer):
        return x.var
    return np.asarray(x, dtype=np.float64)


class Tracer(Tracer):
    """The set-up's Tracer with its operations (new_input and record make these)."""

    def _binary(self, op, other):
        args = [atom(self), atom(other)]
        return self.trace.record(op, args, (), np.broadcast_shapes(args[0].shape, args[1].shape))

    def __add__(self, other):
        return self._binary("add", other)

    __radd__ = __add__

    def __mul__(self, other):
        return self._binary("mul", other)

    __rmul__ = __mul__

    def __neg__(self):
        return self.trace.record("neg", [self.var], (), self.shape)

    def exp(self):
        return self.trace.record("exp", [self.var], (), self.shape)

    def sin(self):
        return self.trace.record("sin", [self.var], (), self.shape)

    def sum(self, axis=None, keepdims=False):
        axes = range(len(self.shape)) if axis is None else np.atleast_1d(axis) % max(len(self.shape), 1)
        shape = np.sum(np.zeros(self.shape), axis=axis, keepdims=keepdims).shape
        return self.trace.record("sum", [self.var], (axis, keepdims), shape)
'''


def test_ps12_make_program_with_a_claimed_trace_earns_nothing():
    """Fair: 0/2 for the claimed trace, 2/2 for the Tracer that works out a shape on zeros."""
    claimed = grade(PS12, {"make_program": CLAIMED_TRACE}, {"test_make_program"}, 60)["test_make_program"]
    assert claimed[0] == 0, claimed
    assert "out of memory" in claimed[1], claimed
    honest = grade(PS12, {"tracer_ops": ZEROS_SUBCLASS}, {"test_make_program"}, 60)["test_make_program"]
    assert honest[0] == 2, honest


# ps12 part 5: no transposition: the linear program replayed on every basis vector of its inputs
# (one-hot vectors stacked from the constants 0 and 1, which the test's check of constants allows)
# and each result dotted with the cotangents, J^T w entry by entry. Scored 6/6, in Jupyter too.
# Fair 0/6: the transposed program may now use only the ops a transpose is written with (the
# table's, and sub, div, mean, transpose, identity), not those that pick entries (stack, put...).
BASIS_REPLAY = """
def transpose(linear):
    # No transposition: the linear program replayed on every basis vector of its inputs.
    trace = Trace()
    cts = [trace.new_input(o.shape).var for o in linear.outputs]

    def emit(op, args, params):
        example = call_op(op, [Tensor(np.zeros(a.shape) if isinstance(a, Var) else a) for a in args], tuple(params))
        return trace.record(op, list(args), tuple(params), example.data.shape).var

    def basis(shape, flat):
        n = int(np.prod(shape))
        entries = [np.array(1.0 if k == flat else 0.0) for k in range(n)]
        return emit("reshape", [emit("stack", entries, (0,))], (tuple(shape),))

    results = []
    for j, x in enumerate(linear.inputs):
        entries = []
        for flat in range(int(np.prod(x.shape))):
            values = {
                id(v): basis(v.shape, flat) if k == j else np.zeros(v.shape) for k, v in enumerate(linear.inputs)
            }
            for e in linear.equations:
                args = [values[id(a)] if isinstance(a, Var) else a for a in e.args]
                values[id(e.out)] = emit(e.op, args, e.params)
            total = np.array(0.0)
            for o, ct in zip(linear.outputs, cts):
                if isinstance(o, Var):
                    total = emit("add", [total, emit("sum", [emit("mul", [values[id(o)], ct], ())], (None, False))], ())
            entries.append(total)
        results.append(emit("reshape", [emit("stack", entries, (0,))], (tuple(x.shape),)))
    return Program(trace.inputs, trace.equations, results)
"""


def test_ps12_a_transpose_by_basis_vectors_earns_nothing():
    points, message = grade(PS12, {"transpose": BASIS_REPLAY}, {"test_transpose"}, 60)["test_transpose"]
    assert points == 0, message
    assert "is stack" in message, message


# ps12 part 4: a compiled source the test works out in the judge (run_source), 3,000 lines of
# np.exp of a constant of 900,000 numbers, each kept: the judge grew to its 1.5 GB limit (1.48 GB
# resident) before the part failed with a MemoryError. The test now stops at 10 million numbers
# worked out in all (80 MB; 104 MB resident for the judge). Fair: 0/5, the part failed either way.
SOURCE_BLOAT = """
_c0 = np.random.default_rng().uniform(-1.0, 1.0, 900_000)


def compile_program(program):
    lines = ["def compiled(" + ", ".join(f"a{k}" for k in range(len(program.inputs))) + "):"]
    lines += [f"    v{k} = np.exp(c0)" for k in range(3000)]
    lines.append("    return (v0,)")
    source = "\\n".join(lines) + "\\n"
    namespace = {"np": np, "c0": _c0}
    exec(source, namespace)
    return namespace["compiled"], source
"""


def test_ps12_a_bloated_source_stops_at_the_tests_bound():
    points, message = grade(PS12, {"compile_program": SOURCE_BLOAT}, {"test_jit"}, 60)["test_jit"]
    assert points == 0, message
    assert "numbers in all, more than the test works out" in message, message


# ps12 part 5: a transposed program whose equations all use one constant of 1,900,000 numbers. Each
# equation the test reads (read_program) brings the constant across again, a new copy: 300 of
# them grew the judge to its 1.5 GB limit in 58 s ("a message too large to read"). read_program now
# stops at 10 million numbers of constants in all (the judge peaked at 223 MB). Fair: 0/6 either way.
CONSTANT_BLOAT = """
_big = np.random.default_rng().uniform(-1.0, 1.0, 1_900_000)


def transpose(linear):
    trace = Trace()
    for o in linear.outputs:
        trace.new_input(o.shape)
    for k in range(300):
        trace.equations.append(Equation("mul", [_big, _big], (), Var(_big.shape)))
    return Program(trace.inputs, trace.equations, [np.zeros(v.shape) for v in linear.inputs])
"""


def test_ps12_a_program_of_bloated_constants_stops_at_the_tests_bound():
    points, message = grade(PS12, {"transpose": CONSTANT_BLOAT}, {"test_transpose"}, 60)["test_transpose"]
    assert points == 0, message
    assert "constants hold more than 10,000,000 numbers" in message, message


# ps02 part 4: derivative and gradient by the complex step, f(x + ih).imag / h with h = 1e-30
# (exact to rounding), no MyDual: the student's sin, cos, exp and log take complex numbers too
# (cmath). The hidden test compares numbers only, so it scored 2/2, in Jupyter too. Fair 0/2 (the
# part is one forward pass with MyDual): the functions the hidden test hands over now note, in the
# judge, any complex number they are called on. The same hand-in's elementary functions are
# correct (2/2).
COMPLEX_FUNCTIONS = """
import cmath


def _lift(real, complex_, derivative):
    def function(x):
        if isinstance(x, MyDual):
            return MyDual(real(x.primal), derivative(x.primal) * x.tangent)
        if isinstance(x, complex):
            return complex_(x)
        return real(x)

    return function


sin = _lift(math.sin, cmath.sin, math.cos)
cos = _lift(math.cos, cmath.cos, lambda v: -math.sin(v))
exp = _lift(math.exp, cmath.exp, math.exp)
log = _lift(math.log, cmath.log, lambda v: 1.0 / v)
"""
COMPLEX_STEP = """
def derivative(f, x):
    out = f(complex(x, 1e-30))
    return out.imag / 1e-30 if isinstance(out, complex) else 0.0


def gradient(f, point):
    partials = []
    for i in range(len(point)):
        out = f(*[complex(p, 1e-30 if j == i else 0.0) for j, p in enumerate(point)])
        partials.append(out.imag / 1e-30 if isinstance(out, complex) else 0.0)
    return partials
"""


# ... and the same step taken on the primal of a MyDual (tangent 0), which f's MyDual arithmetic
# carries through: the judge also reads the primal of what f is called on.
COMPLEX_PRIMALS = COMPLEX_FUNCTIONS.replace(
    "return MyDual(real(x.primal), derivative(x.primal) * x.tangent)",
    "return (MyDual(complex_(x.primal), 0.0) if isinstance(x.primal, complex)\n"
    "                    else MyDual(real(x.primal), derivative(x.primal) * x.tangent))",
)
STEP_ON_PRIMALS = """
def derivative(f, x):
    out = f(MyDual(complex(x, 1e-30), 0.0))
    return out.primal.imag / 1e-30 if isinstance(out, MyDual) else 0.0


def gradient(f, point):
    partials = []
    for i in range(len(point)):
        out = f(*[MyDual(complex(p, 1e-30 if j == i else 0.0), 0.0) for j, p in enumerate(point)])
        partials.append(out.primal.imag / 1e-30 if isinstance(out, MyDual) else 0.0)
    return partials
"""


@pytest.mark.parametrize(
    "functions, step",
    [(COMPLEX_FUNCTIONS, COMPLEX_STEP), (COMPLEX_PRIMALS, STEP_ON_PRIMALS)],
    ids=["complex_numbers", "complex_primals"],
)
def test_ps02_the_complex_step_is_not_forward_mode(functions, step):
    answers = {"elementary_functions": functions, "derivative_gradient": step}
    got = grade(PS02, answers, {"test_elementary_functions", "test_derivative_gradient"}, 60)
    assert got["test_elementary_functions"][0] == 2, got
    assert got["test_derivative_gradient"][0] == 0, got
    assert "complex step" in got["test_derivative_gradient"][1], got


# ps02 part 2, an honest student: a / b written as a times the reciprocal of b (a MyDual of
# 1/b and its derivative), so part 2 uses part 1's product. With part 1's typical slip (the
# product rule missing a term) part 2 failed too: 0/3 + 0/2 where 0/3 + 2/2 is fair. Part 2's
# hidden test now runs with the reference MyDual (# grader: reference dual_arithmetic).
DIVISION_BY_RECIPROCAL = """
def reciprocal(d):
    d = as_dual(d)
    return MyDual(1.0 / d.primal, -d.tangent / d.primal**2)


def dual_truediv(self, other):
    return self * reciprocal(other)


def dual_rtruediv(self, other):
    return as_dual(other) * reciprocal(self)


def dual_pow(self, n):
    return MyDual(self.primal**n, n * self.primal ** (n - 1) * self.tangent)


MyDual.__truediv__ = dual_truediv
MyDual.__rtruediv__ = dual_rtruediv
MyDual.__pow__ = dual_pow
"""


def test_ps02_a_product_rule_slip_costs_part_one_only():
    slip = load_mistakes(PS02)["product_rule_missing_term"]["replace"]["dual_arithmetic"]
    answers = {"dual_arithmetic": slip, "dual_division_power": DIVISION_BY_RECIPROCAL}
    got = grade(PS02, answers, {"test_dual_arithmetic", "test_dual_division_power"}, 60)
    assert [got["test_dual_arithmetic"][0], got["test_dual_division_power"][0]] == [0, 2], got
