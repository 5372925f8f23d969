"""Typical mistakes in ps13 (the capstone: your engine, end to end), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student: at least
one per part. The later parts build on the earlier ones (the descent and the checkpointing fly
the simulator with the student's last step, the dead-code pass and the compiler take the step's
program), and their hidden tests run the course's answer in place of an earlier part that
failed (``# grader: reference``), so each mistake costs its own part only. The last borrows
course_lib's simulator, which the assignment's rules switch off in the student's process.

``HONEST`` is a hand-in whose every answer is right but written in other idioms than the
solution's (helper functions and classes, the objects themselves as dict keys, recursion where
the depth is small, a generator, other names and statement forms), with a topological order of
its own pasted over the given engine's: it must score full marks.
"""

MISTAKES = {
    "tau_on_plain_numbers": {
        # The shortened step's tau computed from .data: the height is right, the gradient misses
        # how the last step's length depends on (v, theta, k).
        "replace": {
            "final_step": """def final_step(state, k):
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k)
    d = HOOP[0] - number(x)
    tau = 2 * d / (number(vx) + (number(vx) ** 2 + 2 * number(ax) * d) ** 0.5)
    return y + tau * vy + 0.5 * tau * tau * ay
""",
        },
        "fails": {"test_final_step"},
        "message": "Compute tau with Values",
    },
    "schoolbook_root": {
        # The quadratic's root as (-b + sqrt(b**2 - 4ac)) / 2a: it divides by a_x, which is 0 in a
        # vacuum (and loses its digits in thin air).
        "replace": {
            "final_step": """def final_step(state, k):
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k)
    d = HOOP[0] - x
    tau = (-vx + (vx * vx + 2 * ax * d) ** 0.5) / ax
    return y + tau * vy + 0.5 * tau * tau * ay
""",
        },
        "fails": {"test_final_step"},
        "message": "without ax in a denominator",
    },
    "last_throw_not_recorded": {
        # Checks for the hit before recording the throw: the throw that goes through the hoop,
        # the one the descent was for, is missing from the rows.
        "replace": {
            "aim": """def aim(v0, theta0, k=DRAG, lr=0.01, tol=1e-3, max_steps=100, dt=DT):
    v, theta = float(v0), float(theta0)
    rows = []
    for _ in range(max_steps + 1):
        v_leaf, theta_leaf = Value(v), Value(theta)
        height = hoop_height(v_leaf, theta_leaf, k, dt)
        if abs(height.data - HOOP[1]) < tol:
            break
        rows.append((v, theta, height.data))
        ((height - HOOP[1]) ** 2).backward()
        v, theta = v - lr * v_leaf.grad, theta - lr * theta_leaf.grad
    return rows
""",
        },
        "fails": {"test_aim"},
        "message": "stop as soon as |height - 3.1| < tol",
    },
    "no_checkpoint": {
        # Stores the states as checkpoints but never recomputes: one backward pass through the
        # whole recorded flight, so its whole graph is alive at once.
        "replace": {
            "checkpointed_gradient": """def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
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
""",
        },
        "fails": {"test_checkpointed_gradient"},
        "message": "recompute one segment at a time",
    },
    "relu_passes_every_gradient": {
        # The relu's VJP written as the identity: the loss is right, the step is not.
        "replace": {
            "step_program": """def step_program(model, X, y):
    params = model.parameters()
    X_node = Tensor(X)
    loss = cross_entropy(model(X_node), y)
    names = {id(p): f"p{k}" for k, p in enumerate(params)}
    names[id(X_node)] = "X"
    equations, forward = [], []

    def emit(op, *args):
        out = f"v{len(equations)}"
        equations.append((out, op, list(args)))
        return out

    for node in topological_order(loss):
        if node._parents:
            args = [names[id(parent)] for parent in node._parents]
            if node._op == "cross_entropy":
                args.append("y")
            names[id(node)] = emit(node._op, *args)
            forward.append((names[id(node)], node._op, args))
    grads = {names[id(loss)]: emit("ones_like", names[id(loss)])}
    for out, op, args in reversed(forward):
        g = grads[out]
        if op == "+":
            grads[args[0]] = emit("unbroadcast", g, args[0])
            grads[args[1]] = emit("unbroadcast", g, args[1])
        elif op == "@":
            grads[args[0]] = emit("@", g, emit("T", args[1]))
            grads[args[1]] = emit("@", emit("T", args[0]), g)
        elif op == "relu":
            grads[args[0]] = g
        elif op == "cross_entropy":
            grads[args[0]] = emit("cross_entropy_vjp", g, *args)
    updated = [emit("-", f"p{k}", emit("*", "lr", grads[f"p{k}"])) for k in range(len(params))]
    return {"inputs": [*(f"p{k}" for k in range(len(params))), "X", "y", "lr"],
            "equations": equations, "outputs": [names[id(loss)], *updated]}
""",
        },
        "fails": {"test_step_program"},
        "message": "parameter p0 after the program's step differs",
    },
    "dead_code_in_one_forward_pass": {
        # Drops an equation only when no equation at all reads it: what feeds a dead equation
        # stays (the transpose of the first weight, read only by the dead gradient of X).
        "replace": {
            "eliminate_dead_code": """def eliminate_dead_code(program):
    read = set(program["outputs"])
    for out, op, args in program["equations"]:
        read.update(args)
    live = [(out, op, list(args)) for out, op, args in program["equations"] if out in read]
    return {"inputs": list(program["inputs"]), "equations": live, "outputs": list(program["outputs"])}
""",
        },
        "fails": {"test_eliminate_dead_code"},
        "message": "Walk from the last equation to the first",
    },
    "inlined_without_parentheses": {
        # Code generation that inlines each argument's expression as text: 'g * x > 0' is read
        # as '(g * x) > 0', and 'a - b + c' as '(a - b) + c'.
        "replace": {
            "compile_program": """def compile_program(program, name="compiled"):
    text = {name_: name_ for name_ in program["inputs"]}
    for out, op, args in program["equations"]:
        text[out] = OPS[op][1].format(*(text[a] for a in args))
    source = f"def {name}({', '.join(program['inputs'])}):\\n"
    source += f"    return ({', '.join(text[o] for o in program['outputs'])},)\\n"
    namespace = {"np": np, "unbroadcast": unbroadcast, "cross_entropy_value": cross_entropy_value,
                 "cross_entropy_vjp": cross_entropy_vjp}
    exec(source, namespace)
    return source, namespace[name]
""",
        },
        "fails": {"test_compile_program"},
        "message": "parentheses",
    },
    "course_lib_aims_the_shot": {
        # Chapter 11's own descent through course_lib's simulator instead of the student's engine.
        "replace": {
            "aim": """def aim(v0, theta0, k=DRAG, lr=0.01, tol=1e-3, max_steps=100, dt=DT):
    from course_lib.simulate import fit_shot_with_drag

    history = fit_shot_with_drag(v0, theta0, k=k, lr=lr, max_steps=max_steps, tol=tol, dt=dt)
    return list(zip(history.v, history.theta, history.height))
""",
        },
        "fails": {"test_aim"},
        "message": "exercise rule",
    },
}

HONEST = {
    # tau from the quadratic's coefficients through a helper, with a and c named as in school.
    # With it, pasted over the given engine as the notebook allows: ps04's child-count order
    # (Kahn's), the nodes themselves as dict keys; both engines' backward() then use it.
    "final_step": '''def topological_order(root):
    children, stack = {root: 0}, [root]
    while stack:
        for parent in stack.pop()._parents:
            if parent not in children:
                children[parent] = 0
                stack.append(parent)
            children[parent] += 1
    ready, order = [root], []
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in node._parents:
            children[parent] -= 1
            if children[parent] == 0:
                ready.append(parent)
    return order[::-1]


def _stable_root(a, b, c):
    """The root of a t**2 + b t + c = 0 near -c / b (b > 0, c < 0): the conjugate form, no division by a."""
    return -2 * c / (b + (b * b - 4 * a * c) ** 0.5)


def final_step(state, k):
    x, y, vx, vy = state
    ax, ay = acceleration(vx, vy, k)
    tau = _stable_root(ax / 2, vx, x - HOOP[0])
    return y + vy * tau + ay * tau * tau / 2
''',
    # A generator of the throws, rows as a dict turned into a list at the end.
    "aim": """def _throws(v, theta, k, lr, dt):
    while True:
        leaves = {"v": Value(v), "theta": Value(theta)}
        height = hoop_height(leaves["v"], leaves["theta"], k, dt)
        yield v, theta, height
        miss = height - HOOP[1]
        (miss * miss).backward()
        v -= lr * leaves["v"].grad
        theta -= lr * leaves["theta"].grad


def aim(v0, theta0, k=DRAG, lr=0.01, tol=1e-3, max_steps=100, dt=DT):
    rows = {}
    for n, (v, theta, height) in enumerate(_throws(float(v0), float(theta0), k, lr, dt)):
        rows[n] = (v, theta, height.data)
        if abs(height.data - HOOP[1]) < tol or n == max_steps:
            break
    return [rows[n] for n in sorted(rows)]
""",
    # The segments as objects in a list, the adjoint passed as a dict keyed by the leaf Values,
    # every segment's k share added up by hand from a fresh k leaf per segment.
    "checkpointed_gradient": '''class Segment:
    def __init__(self, first, start, steps):
        self.first, self.start, self.steps = first, start, steps

    def replay(self, v, theta, k, dt):
        """The segment re-run with Values: (its leaves, its end state, its k leaf)."""
        k_leaf = Value(k)
        if self.first:
            leaves = [Value(v), Value(theta)]
            state = launch(*leaves)
        else:
            leaves = [Value(s) for s in self.start]
            state = tuple(leaves)
        for _ in range(self.steps):
            state = heun_step(state, k_leaf, dt)
        return leaves, state, k_leaf


def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    state, segments, checkpoints, n = launch(float(v), float(theta)), [], [], 0
    while not reaches_hoop(state, k, dt):
        if n % every == 0:
            checkpoints.append(tuple(float(s) for s in state))
            segments.append(Segment(n == 0, checkpoints[-1], 0))
        segments[-1].steps += 1
        state = heun_step(state, k, dt)
        n += 1
    if not segments:
        segments.append(Segment(True, None, 0))
    adjoint, k_total, height = None, 0.0, None
    while segments:
        segment = segments.pop()
        leaves, end, k_leaf = segment.replay(v, theta, k, dt)
        if adjoint is None:
            out = final_step(end, k_leaf)
            height = out.data
        else:  # the end state's Values as keys, each weighted by its known gradient
            weights = dict(zip(end, adjoint))
            out = sum((s * w for s, w in weights.items()), Value(0.0))
        out.backward()
        k_total += k_leaf.grad
        adjoint = [leaf.grad for leaf in leaves]
        del out, end, leaves
    return height, [adjoint[0], adjoint[1], k_total], checkpoints
''',
    # A helper class with the Tensors themselves as dict keys, and a rule table of functions.
    "step_program": """class ProgramWriter:
    def __init__(self):
        self.equations, self.names, self.grads = [], {}, {}

    def new(self, op, *args):
        word = {"@": "mm", "+": "add", "*": "mul", "-": "sub"}.get(op, op)
        name = f"t{len(self.equations)}_{word}"
        self.equations.append((name, op, list(args)))
        return name

    def add_grad(self, name, share):
        if name in self.grads:
            share = self.new("+", self.grads[name], share)
        self.grads[name] = share


BACKWARD_RULES = {
    "+": lambda w, g, a, b: [w.new("unbroadcast", g, a), w.new("unbroadcast", g, b)],
    "*": lambda w, g, a, b: [w.new("unbroadcast", w.new("*", g, b), a), w.new("unbroadcast", w.new("*", g, a), b)],
    "@": lambda w, g, a, b: [w.new("@", g, w.new("T", b)), w.new("@", w.new("T", a), g)],
    "neg": lambda w, g, a: [w.new("neg", g)],
    "relu": lambda w, g, a: [w.new("*", g, w.new("positive", a))],
    "cross_entropy": lambda w, g, logits, labels: [w.new("cross_entropy_vjp", g, logits, labels)],
}


def step_program(model, X, y):
    w = ProgramWriter()
    inputs = Tensor(X)
    loss = cross_entropy(model(inputs), y)
    parameters = list(model.parameters())
    for k, p in enumerate(parameters):
        w.names[p] = f"p{k}"
    w.names[inputs] = "X"
    forward = []
    for node in topological_order(loss):
        if node in w.names:
            continue
        args = [w.names[p] for p in node._parents] + (["y"] if node._op == "cross_entropy" else [])
        w.names[node] = w.new(node._op, *args)
        forward.append((w.names[node], node._op, args))
    w.grads[w.names[loss]] = w.new("ones_like", w.names[loss])
    for out, op, args in forward[::-1]:
        differentiable = args[:1] if op == "cross_entropy" else args
        for name, share in zip(differentiable, BACKWARD_RULES[op](w, w.grads[out], *args)):
            w.add_grad(name, share)
    new = [w.new("-", w.names[p], w.new("*", "lr", w.grads[w.names[p]])) for p in parameters]
    return dict(inputs=[w.names[p] for p in parameters] + ["X", "y", "lr"], equations=w.equations,
                outputs=[w.names[loss]] + new)
""",
    # Recursion over what each name needs (the depth is the program's, at most a few dozen here),
    # with the equations looked up in a dict by name.
    "eliminate_dead_code": """def eliminate_dead_code(program):
    by_name = {out: (out, op, tuple(args)) for out, op, args in program["equations"]}
    live = set()

    def need(name):
        if name in by_name and name not in live:
            live.add(name)
            for arg in by_name[name][2]:
                need(arg)

    for name in program["outputs"]:
        need(name)
    return {
        "inputs": program["inputs"],
        "equations": [e for e in program["equations"] if e[0] in live],
        "outputs": program["outputs"],
    }
""",
    # Code generation with an io.StringIO and its own names, the namespace from globals().
    "compile_program": """import io


def compile_program(program, name="compiled"):
    rename = {v: f"a{k}" for k, v in enumerate(program["inputs"])}
    out = io.StringIO()
    out.write(f"def {name}({', '.join(program['inputs'])}):\\n")
    for k, v in enumerate(program["inputs"]):
        out.write(f"    a{k} = {v}\\n")
    for k, (result, op, args) in enumerate(program["equations"]):
        rename[result] = f"e{k}"
        out.write(f"    e{k} = " + OPS[op][1].format(*(rename[a] for a in args)) + "\\n")
    out.write("    return " + ", ".join(rename[o] for o in program["outputs"]) + ",\\n")
    source = out.getvalue()
    scope = dict(globals())
    exec(compile(source, "<compiled program>", "exec"), scope)
    return source, scope[name]
""",
}
