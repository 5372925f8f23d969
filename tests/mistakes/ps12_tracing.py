"""Typical mistakes in ps12 (tracing, dead code and batching), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Part 2
traces with the student's Tracer, so its hidden test runs the reference tracer where part 1
failed (``# grader: reference tracer_ops``); parts 3 and 4 build their own programs and
arrays: every mistake costs exactly its own part.
"""

# A correct part 1, written as a student would; the tracer mistakes below each change one line of it.
TRACER_OPS = '''def atom(x):
    """x as an argument of an equation."""
    return x.var if isinstance(x, Tracer) else np.asarray(x, dtype=np.float64)


def tracer_add(self, other):
    """self + other."""
    a, b = atom(self), atom(other)
    return self.trace.record("add", [a, b], (), np.broadcast_shapes(a.shape, b.shape))


def tracer_mul(self, other):
    """self * other."""
    a, b = atom(self), atom(other)
    return self.trace.record("mul", [a, b], (), np.broadcast_shapes(a.shape, b.shape))


def tracer_neg(self):
    return self.trace.record("neg", [self.var], (), self.shape)


def tracer_exp(self):
    return self.trace.record("exp", [self.var], (), self.shape)


def tracer_sin(self):
    return self.trace.record("sin", [self.var], (), self.shape)


def tracer_sum(self, axis=None, keepdims=False):
    """self summed over axis."""
    axes = range(len(self.shape)) if axis is None else [a % len(self.shape) for a in np.atleast_1d(axis)]
    shape = [1 if k in axes else n for k, n in enumerate(self.shape) if keepdims or k not in axes]
    return self.trace.record("sum", [self.var], (axis, keepdims), shape)


Tracer.__add__ = Tracer.__radd__ = tracer_add
Tracer.__mul__ = Tracer.__rmul__ = tracer_mul
Tracer.__neg__ = tracer_neg
Tracer.exp, Tracer.sin, Tracer.sum = tracer_exp, tracer_sin, tracer_sum
'''


def tracer_ops(*changes: tuple[str, str]) -> str:
    """Part 1 with each (old, new) change made wherever old occurs."""
    source = TRACER_OPS
    for old, new in changes:
        assert old in source, old
        source = source.replace(old, new)
    return source


MISTAKES = {
    "constants_as_inputs": {
        # Every operand becomes a Tracer first, a constant as a new input: x * 2.0 then takes 2.0 from
        # the caller, who never passes it.
        "replace": {
            "tracer_ops": tracer_ops(
                ("a, b = atom(self), atom(other)", "a, b = self.var, as_tracer(other, self.trace).var")
            )
            + '''

def as_tracer(x, trace):
    """x as a Tracer: a constant becomes an input of its own."""
    return x if isinstance(x, Tracer) else trace.new_input(np.shape(x))
''',
        },
        "fails": {"test_tracer_ops"},  # part 2 is graded with the reference tracer
        "message": "a constant such as 2.0 is not an input",
    },
    "broadcast_to_the_left_operand": {
        # The result takes the shape of self: wrong for (3,) + (2, 3).
        "replace": {
            "tracer_ops": tracer_ops(
                (
                    'self.trace.record("add", [a, b], (), np.broadcast_shapes(a.shape, b.shape))',
                    'self.trace.record("add", [a, b], (), self.shape)',
                ),
            ),
        },
        "fails": {"test_tracer_ops"},
        "message": "np.broadcast_shapes(a.shape, b.shape)",
    },
    "sum_of_a_negative_axis": {
        # Axes compared as given: axis=-1 matches no position, so nothing is dropped from the shape.
        "replace": {
            "tracer_ops": tracer_ops(("[a % len(self.shape) for a in", "[a for a in")),
        },
        "fails": {"test_tracer_ops"},
        "message": "a negative axis counts from the end",
    },
    "numbers_baked_in": {
        # Only arrays become inputs: a number argument is written into the program as a constant, so
        # the program ignores the value it is called with.
        "replace": {
            "make_program": '''def make_program(f, *args):
    """The program of f traced at args."""
    trace = Trace()
    inputs = [trace.new_input(a.shape) if isinstance(a, np.ndarray) else a for a in args]
    results = f(*inputs)
    results = results if isinstance(results, tuple) else (results,)
    return Program(trace.inputs, trace.equations, [atom(r) for r in results])
''',
        },
        "fails": {"test_make_program"},
        "message": "every argument of f is an input, numbers too",
    },
    "dce_keeps_only_the_outputs_equations": {
        # Keeps the equations whose result is an output, forgetting those a kept equation uses.
        "replace": {
            "eliminate_dead_code": '''def eliminate_dead_code(program):
    """Only the equations the outputs need."""
    outputs = {id(o) for o in program.outputs}
    return Program(program.inputs, [e for e in program.equations if id(e.out) in outputs], program.outputs)
''',
        },
        "fails": {"test_eliminate_dead_code"},
        "message": "a live equation uses its result",
    },
    "dce_keeps_what_any_equation_uses": {
        # A result used by any equation is kept, even when only dead equations use it.
        "replace": {
            "eliminate_dead_code": '''def eliminate_dead_code(program):
    """Drop the results nobody uses."""
    used = {id(o) for o in program.outputs}
    for e in program.equations:
        used.update(id(a) for a in e.args)
    return Program(program.inputs, [e for e in program.equations if id(e.out) in used], program.outputs)
''',
        },
        "fails": {"test_eliminate_dead_code"},
        "message": "is dead but you kept it",
    },
    "dce_drops_unused_inputs": {
        # Right equations, but inputs no kept equation uses are dropped too: the caller still passes
        # them, and one of them is an output.
        "replace": {
            "eliminate_dead_code": '''def eliminate_dead_code(program):
    """Live equations, and the inputs they use."""
    live = {id(o) for o in program.outputs}
    kept = []
    for e in reversed(program.equations):
        if id(e.out) in live:
            kept.insert(0, e)
            live.update(id(a) for a in e.args)
    used = {id(a) for e in kept for a in e.args}
    return Program([v for v in program.inputs if id(v) in used], kept, program.outputs)
''',
        },
        "fails": {"test_eliminate_dead_code"},
        "message": "the result must keep the inputs, all of them",
    },
    "batch_axis_not_moved": {
        # The example's params used as they are: axis 0 is then the batch axis.
        "replace": {
            "batch_sum": '''def batch_sum(x, axis, keepdims):
    """The sums of the examples."""
    return np.sum(x, axis=axis, keepdims=keepdims)
''',
        },
        "fails": {"test_batch_sum"},
        "message": "an example's axis k is x's axis k + 1",
    },
    "batch_negative_axis_moved": {
        # Every axis moved by one, negative ones too: -1 becomes 0, the batch axis.
        "replace": {
            "batch_sum": '''def batch_sum(x, axis, keepdims):
    """The sums of the examples."""
    if axis is None:
        axis = tuple(range(1, x.ndim))
    elif isinstance(axis, tuple):
        axis = tuple(a + 1 for a in axis)
    else:
        axis = axis + 1
    return np.sum(x, axis=axis, keepdims=keepdims)
''',
        },
        "fails": {"test_batch_sum"},
        "message": "A negative axis counts from the end",
    },
    "batch_none_sums_the_batch": {
        # axis=None passed on: one total for the whole batch instead of one per example.
        "replace": {
            "batch_sum": '''def batch_sum(x, axis, keepdims):
    """The sums of the examples."""
    if axis is not None:
        axis = tuple(a % (x.ndim - 1) + 1 for a in (axis if isinstance(axis, tuple) else (axis,)))
    return np.sum(x, axis=axis, keepdims=keepdims)
''',
        },
        "fails": {"test_batch_sum"},
        "message": "axis=None sums every axis of one example",
    },
}
