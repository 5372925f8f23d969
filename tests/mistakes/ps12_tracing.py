"""Typical mistakes in ps12 (tracing, dead code, a jit, transposition), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Parts 2
and 4 trace with the student's Tracer and part 4 with their make_program, so their hidden tests
run the references where those parts failed (``# grader: reference tracer_ops make_program``);
parts 3 and 5 build their own programs: every mistake costs exactly its own part.
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


# Correct parts 4 and 5, written as a student would; the mistakes below each change one line.
COMPILE_PROGRAM = '''def compile_program(program):
    """The program as NumPy source, and the function it defines."""
    names, namespace = {}, {"np": np}
    for v in program.inputs:
        names[id(v)] = f"x{len(names)}"

    def name(a):
        if isinstance(a, np.ndarray):
            constant = f"c{len(names)}"
            names[id(a)] = constant
            namespace[constant] = a
        return names[id(a)]

    calls = {"add": "np.add", "mul": "np.multiply", "neg": "np.negative", "exp": "np.exp", "sin": "np.sin"}
    source = "def compiled(" + ", ".join(name(v) for v in program.inputs) + "):\\n"
    for e in program.equations:
        args = [name(a) for a in e.args]
        names[id(e.out)] = f"x{len(names)}"
        if e.op == "sum":
            call = f"np.sum({args[0]}, axis={e.params[0]!r}, keepdims={e.params[1]!r})"
        else:
            call = calls[e.op] + "(" + ", ".join(args) + ")"
        source += f"    {names[id(e.out)]} = {call}\\n"
    source += "    return (" + "".join(name(o) + ", " for o in program.outputs) + ")\\n"
    exec(source, namespace)
    return namespace["compiled"], source
'''

JIT = '''def jit(f):
    """f compiled once per tuple of shapes."""
    cache = {}

    def jitted(*args):
        shapes = tuple(np.shape(a) for a in args)
        if shapes not in cache:
            cache[shapes], _ = compile_program(make_program(f, *args))
        return cache[shapes](*args)

    return jitted
'''

TRANSPOSE = '''def transpose(linear):
    """Cotangents of the outputs -> cotangents of the inputs."""
    trace = Trace()
    cotangents = {}

    def give(var, ct):
        if id(var) in cotangents:
            ct = trace.record("add", [cotangents[id(var)], ct], (), var.shape).var
        cotangents[id(var)] = ct

    def summed_down(ct, shape):
        lead = len(ct.shape) - len(shape)
        axes = list(range(lead)) + [lead + k for k, n in enumerate(shape) if n == 1 and ct.shape[lead + k] > 1]
        if axes:
            kept = tuple(1 if k in axes else n for k, n in enumerate(ct.shape))
            ct = trace.record("sum", [ct], (tuple(axes), True), kept).var
            ct = trace.record("reshape", [ct], (shape,), shape).var
        return ct

    for o in linear.outputs:
        give(o, trace.new_input(o.shape).var)
    for e in linear.equations[::-1]:
        if id(e.out) not in cotangents:
            continue
        ct = cotangents.pop(id(e.out))
        if e.op == "add":
            for a in e.args:
                give(a, summed_down(ct, a.shape))
        elif e.op == "neg":
            give(e.args[0], trace.record("neg", [ct], (), ct.shape).var)
        elif e.op == "mul":
            x, c = (e.args[0], e.args[1]) if isinstance(e.args[0], Var) else (e.args[1], e.args[0])
            give(x, summed_down(trace.record("mul", [ct, c], (), e.out.shape).var, x.shape))
        elif e.op == "sum":
            x = e.args[0]
            axis, keepdims = e.params
            axes = range(len(x.shape)) if axis is None else np.atleast_1d(axis) % len(x.shape)
            kept = tuple(1 if k in axes else n for k, n in enumerate(x.shape))
            if not keepdims:
                ct = trace.record("reshape", [ct], (kept,), kept).var
            give(x, trace.record("broadcast_to", [ct], (x.shape,), x.shape).var)
        elif isinstance(e.args[0], Var):
            give(e.args[0], trace.record("matmul", [ct, e.args[1].T], (), e.args[0].shape).var)
        else:
            give(e.args[1], trace.record("matmul", [e.args[0].T, ct], (), e.args[1].shape).var)
    outputs = [cotangents[id(v)] if id(v) in cotangents else np.zeros(v.shape) for v in linear.inputs]
    return Program(trace.inputs, trace.equations, outputs)
'''


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
    "constants_rounded_in_the_source": {
        # Constants written into the source as NumPy prints them: repr rounds to 8 digits, so 1/3
        # computes other numbers than evaluate's.
        "replace": {
            "compile_program": COMPILE_PROGRAM.replace('constant = f"c{len(names)}"', "constant = 'np.' + repr(a)")
        },
        "fails": {"test_jit"},
        "message": "not as its digits in the source",
    },
    "jit_traces_every_call": {
        # A cache that is never read: every call traces and compiles again.
        "replace": {"jit": JIT.replace("if shapes not in cache:", "if True:")},
        "fails": {"test_jit"},
        "message": "must not trace again",
    },
    "transpose_replaces_shares": {
        # A value used twice keeps only the last share of its cotangent.
        "replace": {"transpose": TRANSPOSE.replace("if id(var) in cotangents:", "if False:")},
        "fails": {"test_transpose"},
        "message": "add them, never replace one",
    },
    "transpose_add_not_summed_down": {
        # add hands ct to both arguments as it is, also to one it broadcast.
        "replace": {"transpose": TRANSPOSE.replace("give(a, summed_down(ct, a.shape))", "give(a, ct)")},
        "fails": {"test_transpose"},
        "message": "summed over the axes it was broadcast along",
    },
    "transpose_matmul_constant_not_transposed": {
        # C instead of C.T: right shapes for a square C, wrong numbers.
        "replace": {
            "transpose": TRANSPOSE.replace("[e.args[0].T, ct]", "[e.args[0], ct]").replace(
                "[ct, e.args[1].T]", "[ct, e.args[1]]"
            )
        },
        "fails": {"test_transpose"},
        "message": "x gets matmul(C.T, ct)",
    },
}

# Every part again, correct, in other idioms: methods made by a factory, the sum's shape from
# NumPy itself, the Vars themselves as dict keys and set members, a subclass of Program, a helper
# class that writes the source, a callable object as the jitted function, the transposition rules
# in a table. It must score full marks.
HONEST = {
    "tracer_ops": '''def atom(x):
    """x as an argument of an equation: a Tracer's Var, or a constant as a float64 array."""
    return x.var if isinstance(x, Tracer) else np.array(x, dtype=np.float64)


def broadcasting(op):
    """The Tracer method recording `op` of self and another operand (self's Var first)."""

    def method(self, other):
        args = [atom(self), atom(other)]
        return self.trace.record(op, args, (), np.broadcast_shapes(*(np.shape(a) for a in args)))

    return method


def elementwise(op):
    """The Tracer method recording `op` of self alone."""
    return lambda self: self.trace.record(op, [self.var], (), self.shape)


def tracer_sum(self, axis=None, keepdims=False):
    """self summed over axis (None: every axis), as Tensor.sum: records sum with params (axis, keepdims)."""
    shape = np.broadcast_to(0.0, self.shape).sum(axis=axis, keepdims=keepdims).shape
    return self.trace.record("sum", [self.var], (axis, keepdims), shape)


tracer_add, tracer_mul = broadcasting("add"), broadcasting("mul")
tracer_neg, tracer_exp, tracer_sin = elementwise("neg"), elementwise("exp"), elementwise("sin")
METHODS = {"__add__": tracer_add, "__radd__": tracer_add, "__mul__": tracer_mul, "__rmul__": tracer_mul,
           "__neg__": tracer_neg, "exp": tracer_exp, "sin": tracer_sin, "sum": tracer_sum}
for name, method in METHODS.items():
    setattr(Tracer, name, method)
''',
    "make_program": '''def make_program(f, *args):
    """The program of f traced at args: one input per argument, the equations f recorded, one
    output per result of f."""
    trace = Trace()
    results = f(*(trace.new_input(np.shape(a)) for a in args))
    outputs = list(results) if isinstance(results, tuple) else [results]
    return Program(list(trace.inputs), list(trace.equations), [atom(r) for r in outputs])
''',
    "eliminate_dead_code": '''class PrunedProgram(Program):
    """A Program that knows how many equations were dropped."""

    removed = 0


def eliminate_dead_code(program):
    """A new Program with program's inputs and outputs and only its live equations, in order."""
    live = {o for o in program.outputs if isinstance(o, Var)}
    kept = []
    for e in program.equations[::-1]:
        if e.out in live:
            kept.insert(0, e)
            live |= {a for a in e.args if isinstance(a, Var)}
    pruned = PrunedProgram(list(program.inputs), kept, list(program.outputs))
    pruned.removed = len(program.equations) - len(kept)
    return pruned
''',
    "compile_program": '''class Source:
    """The lines of the compiled function, the names of its values (by Var) and exec's namespace."""

    CALLS = {"add": "np.add", "mul": "np.multiply", "neg": "np.negative", "exp": "np.exp", "sin": "np.sin"}

    def __init__(self, program):
        self.namespace, self.names, self.constants = {"np": np}, {}, 0
        self.lines = [f"def compiled({', '.join(self.new_name(v) for v in program.inputs)}):"]

    def new_name(self, var):
        self.names[var] = f"v{len(self.names)}"
        return self.names[var]

    def operand(self, a):
        if isinstance(a, Var):
            return self.names[a]
        self.constants += 1
        self.namespace[f"c{self.constants}"] = a
        return f"c{self.constants}"

    def equation(self, e):
        args = ", ".join(self.operand(a) for a in e.args)
        if e.op == "sum":
            call = f"np.sum({args}, axis={e.params[0]!r}, keepdims={e.params[1]!r})"
        else:
            call = f"{self.CALLS[e.op]}({args})"
        self.lines.append(f"    {self.new_name(e.out)} = {call}")


def compile_program(program):
    """(function, source): the program as the source of a Python function calling NumPy."""
    source = Source(program)
    for e in program.equations:
        source.equation(e)
    source.lines.append("    return (" + "".join(f"{source.operand(o)}, " for o in program.outputs) + ")")
    text = "\\n".join(source.lines) + "\\n"
    exec(text, source.namespace)
    return source.namespace["compiled"], text
''',
    "jit": '''class Jitted:
    """f, traced and compiled once per tuple of argument shapes."""

    def __init__(self, f):
        self.f, self.compiled = f, {}

    def __call__(self, *args):
        shapes = tuple(np.shape(a) for a in args)
        if shapes not in self.compiled:
            self.compiled[shapes] = compile_program(make_program(self.f, *args))[0]
        return self.compiled[shapes](*args)


def jit(f):
    """f compiled: traced and compiled once per tuple of argument shapes, then run as NumPy code."""
    return Jitted(f)
''',
    "transpose": '''def transpose(linear):
    """The transposed program: the cotangents of linear's outputs -> the cotangents of its inputs."""
    trace = Trace()
    cotangent = {}  # a Var of linear -> the Var of its cotangent so far

    def give(var, ct):
        if isinstance(var, Var):
            if var in cotangent:
                ct = trace.record("add", [cotangent[var], ct], (), var.shape).var
            cotangent[var] = ct

    def summed_to(ct, shape):
        lead = len(ct.shape) - len(shape)
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape) if n == 1 and ct.shape[lead + k] != 1)
        if not axes:
            return ct
        kept = tuple(1 if k in axes else n for k, n in enumerate(ct.shape))
        ct = trace.record("sum", [ct], (axes, True), kept).var
        return trace.record("reshape", [ct], (tuple(shape),), shape).var if lead else ct

    def add(e, ct):
        for a in e.args:
            if isinstance(a, Var):
                give(a, summed_to(ct, a.shape))

    def neg(e, ct):
        give(e.args[0], trace.record("neg", [ct], (), ct.shape).var)

    def mul(e, ct):
        x, c = e.args if isinstance(e.args[0], Var) else e.args[::-1]
        give(x, summed_to(trace.record("mul", [ct, c], (), np.broadcast_shapes(ct.shape, c.shape)).var, x.shape))

    def sum_(e, ct):
        (x,), (axis, keepdims) = e.args, e.params
        summed = range(len(x.shape)) if axis is None else [a % len(x.shape) for a in np.atleast_1d(axis)]
        kept = tuple(1 if k in summed else n for k, n in enumerate(x.shape))
        if not keepdims:
            ct = trace.record("reshape", [ct], (kept,), kept).var
        give(x, trace.record("broadcast_to", [ct], (x.shape,), x.shape).var)

    def matmul(e, ct):
        a, b = e.args
        if isinstance(a, Var):
            give(a, trace.record("matmul", [ct, b.T], (), a.shape).var)
        else:
            give(b, trace.record("matmul", [a.T, ct], (), b.shape).var)

    rules = {"add": add, "neg": neg, "mul": mul, "sum": sum_, "matmul": matmul}
    for output in linear.outputs:
        give(output, trace.new_input(np.shape(output)).var)
    for e in reversed(linear.equations):
        if e.out in cotangent:
            rules[e.op](e, cotangent.pop(e.out))
    return Program(trace.inputs, trace.equations, [cotangent.get(v, np.zeros(v.shape)) for v in linear.inputs])
''',
}
