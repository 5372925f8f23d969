"""Hostile students against ps12 (tracing) and ps06 (custom rules, Jacobians), one part each.

Each hand-in has read the grader's source, the rules (``solutions/<ps>/rules.toml``) and the
visible tests; every case grades one part in the real sandbox (``grade`` of
test_verdict_seams.py) and asserts the fair score.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS12 = "ps12_tracing"

# ps12 part 2: make_program without a Tracer: f runs on Tensors that require grad and the
# program is read off the graph the eager engine records (course_lib's own tracing, which is
# what course_lib.trace adopts). Scored 2/2; the hidden test now calls make_program with a
# function of the test's that notes whether it got Tracers.
GRAPH_PROGRAM = '''
def make_program(f, *args):
    """f's program, read off the graph the eager engine records when f runs on Tensors."""
    xs = [Tensor(np.zeros(np.shape(a)) + 0.5, requires_grad=True) for a in args]
    results = f(*xs)
    results = results if isinstance(results, tuple) else (results,)
    names = {id(x): Var(x.shape) for x in xs}
    equations = []

    def atom(t):
        if not isinstance(t, Tensor):
            return np.asarray(t, dtype=np.float64)
        if id(t) in names:
            return names[id(t)]
        if not t._parents:
            return np.array(t.data)
        args = [atom(p) for p in t._parents]
        out = Var(t.shape)
        equations.append(Equation(t._op, args, t._params, out))
        names[id(t)] = out
        return out

    outputs = [atom(r) for r in results]
    return Program([names[id(x)] for x in xs], equations, outputs)
'''


# ... and the same with Tensors that are Tracers too (a class deriving from both), which pass an
# isinstance check: the test also sees whether the Trace recorded f's equations.
HYBRID_PROGRAM = "class _Both(Tensor, Tracer):\n    pass\n\n" + GRAPH_PROGRAM.replace("[Tensor(", "[_Both(")


@pytest.mark.parametrize("answer", [GRAPH_PROGRAM, HYBRID_PROGRAM], ids=["tensors", "tensor_tracers"])
def test_ps12_make_program_from_the_engines_graph_earns_nothing(answer):
    """Fair: 0/2, the part's tracing done by the eager engine instead of the student's Tracer."""
    points, message = grade(PS12, {"make_program": answer}, {"test_make_program"}, 60)["test_make_program"]
    assert points == 0, message


# ps12 part 5: the transpose of a linear program read off the graph that course_lib's own
# reverse mode records with create_graph=True (its VJP rules), not written equation by equation:
# ops of the op table, constants C, C.T or ones, all the test allows. It scored 6/6: ps12's rules
# removed course_lib.linearize (whose transpose is this part) but not the eager engine's reverse
# mode, which they now rule out where the student's code runs (rules.toml).
ENGINE_TRANSPOSE = '''
from course_lib.program import run as _run
from course_lib.tensor import gradients as _gradients


def transpose(linear):
    """The transposed program, read off the graph the engine's own VJP rules record."""
    xs = [Tensor(np.zeros(v.shape), requires_grad=True) for v in linear.inputs]
    us = [Tensor(np.zeros(np.shape(o)), requires_grad=True) for o in linear.outputs]
    total = Tensor(0.0)
    for y, u in zip(_run(linear, xs), us):
        total = total + (y * u).sum()
    grads = _gradients(total, xs, create_graph=True, allow_unused=True)
    names = {id(u): Var(u.shape) for u in us}
    equations = []

    def atom(t):
        if id(t) in names:
            return names[id(t)]
        if not t._parents:
            return np.array(t.data)
        args = [atom(p) for p in t._parents]
        out = Var(t.shape)
        params = (t.shape,) if t._op in ("reshape", "broadcast_to") and not t._params else t._params
        equations.append(Equation(t._op, args, params, out))
        names[id(t)] = out
        return out

    outputs = [np.zeros(x.shape) if g is None else atom(g) for g, x in zip(grads, xs)]
    return Program([names[id(u)] for u in us], equations, outputs)
'''


# ... and the same graph made without the backward sweep: each equation's VJP rule from the op
# table (OPS[op].rules), applied from the last equation to the first. ps12's rules now rule out
# the backward sweep and the helpers of the rules of add, mul, sum and matmul (rules.toml).
RULES_TRANSPOSE = ENGINE_TRANSPOSE.replace(
    """    us = [Tensor(np.zeros(np.shape(o)), requires_grad=True) for o in linear.outputs]
    total = Tensor(0.0)
    for y, u in zip(_run(linear, xs), us):
        total = total + (y * u).sum()
    grads = _gradients(total, xs, create_graph=True, allow_unused=True)
""",
    """    us = [Tensor(np.zeros(np.shape(o)), requires_grad=True) for o in linear.outputs]
    from course_lib.tensor import OPS
    from course_lib.program import call_op
    vals = {id(v): x for v, x in zip(linear.inputs, xs)}
    const = lambda a: vals[id(a)] if isinstance(a, Var) else Tensor(a)
    for e in linear.equations:
        vals[id(e.out)] = call_op(e.op, [const(a) for a in e.args], e.params)
    ct = {}
    for o, u in zip(linear.outputs, us):
        ct[id(o)] = ct[id(o)] + u if id(o) in ct else u
    for e in reversed(linear.equations):
        g = ct.pop(id(e.out), None)
        if g is None:
            continue
        args = [const(a) for a in e.args]
        for i, a in enumerate(e.args):
            if isinstance(a, Var):
                r = OPS[e.op].rules[i](g, vals[id(e.out)], *args, *e.params)
                ct[id(a)] = ct[id(a)] + r if id(a) in ct else r
    grads = [ct.get(id(v)) for v in linear.inputs]
""",
)


@pytest.mark.parametrize("answer", [ENGINE_TRANSPOSE, RULES_TRANSPOSE], ids=["gradients", "vjp_rules"])
def test_ps12_transpose_by_the_engines_reverse_mode_earns_nothing(answer):
    """Fair: 0/6, the part's work (one transposition rule per op) done by course_lib (6/6 before
    the rules)."""
    points, message = grade(PS12, {"transpose": answer}, {"test_transpose"}, 60)["test_transpose"]
    assert points == 0 and "exercise rule" in message, message


PS06 = "ps06_custom_rules_jacobians"

# ps06 part 4, honest: the Jacobian returned as a course_lib Tensor (rows stacked with stack, as
# course_lib's own jacobian returns it). In Jupyter np.asarray(J, dtype=float) reads it; graded,
# the Tensor stood in the student's process and became an array of objects: 0/2 ("cannot turn
# Tensor into an array of numbers"). The checks now read a Tensor's data (as_numbers).
STACKED_TENSOR = '''
def jacobian_by_vjps(f, x):
    """The Jacobian of f at x, shape (m, n), one VJP per row."""
    y, vjp_fn = vjp(f, x)
    return stack([vjp_fn(e) for e in np.eye(y.shape[0])])
'''


# ps06 part 5: the Jacobian built row by row with VJPs (part 4's answer), f called n more times
# for nothing so that a count of f's evaluations (>= n, "one JVP per column"), which the hidden
# test used to make, is met (2/2 then): course_lib's jvp evaluates f once and sweeps back twice,
# as a VJP does. The test now counts the calls of the notebook's jvp (calls_to, in the judge).
ROWS_AS_COLUMNS = '''
def jacobian_by_jvps(f, x):
    """The Jacobian of f at x, one VJP per row; f called once more per column for the count."""
    for _ in range(len(x)):
        f(Tensor(x))
    y, vjp_fn = vjp(f, x)
    return np.stack([vjp_fn(row).data for row in np.eye(y.shape[0])])
'''


# ps06 part 5, honest: the columns as one batched JVP, vmap(jvp) (jacfwd as JAX writes it, with
# course_lib's vmap, which ps06 keeps). Correct at every hidden input, but f is evaluated once
# (traced by vmap), and the hidden test asked for n evaluations: 0/2. It now asks for a call of
# jvp, which vmap makes once.
BATCHED_JVPS = '''
from course_lib.vmap import vmap


def jacobian_by_jvps(f, x):
    """The Jacobian of f at x, shape (m, n), one JVP per column (batched with vmap)."""
    columns = vmap(lambda t: jvp(f, (x,), (t,))[1])(np.eye(len(x)))
    return columns.data.T
'''


@pytest.mark.parametrize(
    "cell, answer, test, fair",
    [
        ("jacobian_by_vjps", STACKED_TENSOR, "test_jacobian_by_vjps", 2),
        ("jacobian_by_jvps", ROWS_AS_COLUMNS, "test_jacobian_by_jvps", 0),
        ("jacobian_by_jvps", BATCHED_JVPS, "test_jacobian_by_jvps", 2),
    ],
    ids=["a-tensor-jacobian-keeps-its-points", "wasted-calls-earn-nothing", "batched-jvps-keep-their-points"],
)
def test_ps06_jacobians_score_what_they_earn(cell, answer, test, fair):
    points, message = grade(PS06, {cell: answer}, {test}, 60)[test]
    assert points == fair, message
