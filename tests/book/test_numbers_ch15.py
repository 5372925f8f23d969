"""Chapter 15 (*From a graph to a program*): the numbers and programs it prints, recomputed with
course_lib and looked up in the committed notebook; the facts its prose states; its exercises
(hidden solutions, and checks that reject the stub and a typical slip but accept the solution);
and its length (issue 22: a reading time at the top, at most about 6,000 words).

- chapter 2's y = log x1 + x1 x2 - sin x2 at (2, 5): a 5-equation program, y = 11.652, gradient
  (5.5, 1.716) from the gradient program and from transposing the linear program;
- the Iris MLP's loss: 7 equations (the labels an integer input read by take), equal to the eager
  loss; with the labels closed over, its value-and-gradient program folds the backward of neg, mean
  and getitem into the constants -onehot/16 and -1/16;
- chapter 11's flight (10 m/s, 30 degrees, k = 0.03): 49 steps, 1,792 equations, the eager height;
  its gradient program has 4,396 equations, of which CSE removes 298;
- jit: one epoch with integer labels traces 2 programs, 100 epochs with one-hot labels 2, and the
  parameters equal chapter 10's eager run bit for bit (29/30 held out);
- per-example gradients: flowers 83 and 70 below even odds, the largest norm about 200 medians.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import replace

import nbformat
import numpy as np
import pytest
from notebook_text import exercises, markdown, printed, printed_by, shown, solutions, tagged
from paths import BOOK
from prose_numbers import mentions_all, section, shows

from course_lib import passes
from course_lib.datasets import load_iris
from course_lib.functional import grad, value_and_grad
from course_lib.ig import integrated_gradients
from course_lib.jit import jit
from course_lib.linearize import linearize, transpose
from course_lib.nn import MLP, SGD, cross_entropy
from course_lib.physics import START_SHOT
from course_lib.program import evaluate
from course_lib.simulate import DRAG, DT, final_step, heun_step, hoop_height, launch, steps_before
from course_lib.tensor import Tensor, affine
from course_lib.trace import make_program
from course_lib.vmap import vmap

CH15 = BOOK / "15_from_graph_to_program.ipynb"
LR = 0.1
EXERCISES = {"stub-batching": "ch15-batching-rule", "stub-pass": "ch15-zero-pass", "stub-huber": "ch15-huber"}


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(CH15, as_version=4)


@pytest.fixture(scope="module")
def text(nb):
    return markdown(nb)


def f(x1, x2):
    return x1.log() + x1 * x2 - x2.sin()


def ops(program) -> list[str]:
    return [e.op for e in program.equations]


# ---- the data and the network of chapter 10 -----------------------------------------------


@pytest.fixture(scope="module")
def iris():
    X, y, _, target_names = load_iris()
    rng = np.random.default_rng(4)
    test_idx = np.sort(np.concatenate([rng.permutation(np.flatnonzero(y == c))[:10] for c in range(3)]))
    train_idx = np.setdiff1d(np.arange(len(y)), test_idx)
    mean, std = X[train_idx].mean(axis=0), X[train_idx].std(axis=0)
    Z = (X - mean) / std
    first = np.random.default_rng(1).permutation(len(train_idx))[:16]
    return dict(
        y=y,
        Z=Z,
        train_idx=train_idx,
        test_idx=test_idx,
        X_train=Z[train_idx],
        y_train=y[train_idx],
        x16=Z[train_idx][first],
        labels16=y[train_idx][first],
        params=[p.data for p in MLP([4, 16, 3], rng=0).parameters()],
        target_names=target_names,
    )


def loss(w1, b1, w2, b2, x, labels):
    return cross_entropy(affine(affine(x, w1, b1).relu(), w2, b2), labels)


def onehot_loss(w1, b1, w2, b2, x, onehot):
    return -(affine(affine(x, w1, b1).relu(), w2, b2).log_softmax() * onehot).sum(axis=-1).mean()


def example_loss(w1, b1, w2, b2, x, onehot):
    return -(affine(affine(x, w1, b1).relu(), w2, b2).log_softmax() * onehot).sum()


def sgd_step(loss_fn):
    def step(params, x, targets):
        value, grads = value_and_grad(loss_fn, argnum=(0, 1, 2, 3))(*params, x, targets)
        return value, [p - LR * g for p, g in zip(params, grads)]

    return step


@pytest.fixture(scope="module")
def trained(iris):
    """Chapter 10's 100 epochs with the jitted one-hot step, beside the eager run."""
    step = jit(sgd_step(onehot_loss))
    eager = MLP([4, 16, 3], rng=0)
    optimiser = SGD(eager.parameters(), lr=LR)
    params, order_rng = iris["params"], np.random.default_rng(1)
    X_train, y_train = iris["X_train"], iris["y_train"]
    for _ in range(100):
        order = order_rng.permutation(len(y_train))
        for start in range(0, len(order), 16):
            rows = order[start : start + 16]
            _, params = step(params, X_train[rows], np.eye(3)[y_train[rows]])
            optimiser.zero_grad()
            cross_entropy(eager(X_train[rows]), y_train[rows]).backward()
            optimiser.step()
    return dict(params=[p.data for p in params], eager=eager, programs=len(step.cache))


def flight_height(v, theta, k, steps):
    state = launch(v, theta)
    for _ in range(steps):
        state = heun_step(state, k, DT)
    return final_step(state, k)


SHOT = (np.array(START_SHOT[0]), np.array(START_SHOT[1]), np.array(DRAG))


# ---- the length and the shape of the chapter ------------------------------------------------


def test_reading_time_at_the_top_and_at_most_about_6000_words(nb):
    title = nb.cells[0].source
    assert re.search(r"^\*About \d+ minutes to read", title, re.M), "an estimated reading time under the title"
    # words of prose and code; the HTML that hides the answers (tools/notebook_answers.py) is not prose
    words = sum(len(re.sub(r"<[^>]*>", " ", c.source).split()) for c in nb.cells if c.cell_type in ("markdown", "code"))
    assert words <= 6000, f"{words} words of prose and code: issue 22 asks for at most about 6,000"


def test_exercises_have_hidden_solutions_and_three_coding_exercises_with_checks(nb, text):
    labels = [e.label for e in exercises(nb)]
    solved = {s.label: s.body for s in solutions(nb)}
    assert len(labels) >= 6 and all(label.startswith("ch15-") for label in labels)
    assert sorted(solved) == sorted(labels), "every exercise has one solution, hidden in a dropdown"
    assert text.count("**Coding") == 3
    stubs, checks = tagged(nb, "exercise-stub"), tagged(nb, "exercise-check")
    assert [c.id for c in stubs] == list(EXERCISES) and len(checks) == 3
    assert all("raise NotImplementedError" in c.source for c in stubs)
    for check in checks:
        assert "is not written yet" in printed([check]), "the committed chapter shows each check run on the stub"
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[-2:] == ["Summary", "Where next"] and "Check yourself" in headings


def run(source: str, namespace: dict) -> str:
    """What ``source`` prints when run in ``namespace``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(source, namespace)
    return out.getvalue()


SLIPS = {
    # a negative axis shifted without the example's rank: -1 + 1 = 0 sums over the batch
    "stub-batching": (
        "def sum_rule(args, batched, e, size):\n"
        "    axis, keepdims = e.params\n"
        "    axes = None if axis is None else tuple(a + 1 for a in (axis if isinstance(axis, tuple) else (axis,)))\n"
        "    return args[0].sum(axis=axes, keepdims=keepdims)\n"
    ),
    # zeros removed even where they broadcast the other argument
    "stub-pass": (
        "from dataclasses import replace\n"
        "def remove_zero_additions(program):\n"
        "    same, kept = {}, []\n"
        "    for e in program.equations:\n"
        "        args = [same.get(id(a), a) for a in e.args]\n"
        "        zeros = [i for i, a in enumerate(args) if not isinstance(a, Var) and not a.any()]\n"
        "        if e.op == 'add' and zeros:\n"
        "            same[id(e.out)] = args[1 - zeros[0]]\n"
        "        else:\n"
        "            kept.append(Equation(e.op, args, e.params, e.out))\n"
        "    return replace(program, equations=kept, outputs=[same.get(id(o), o) for o in program.outputs])\n"
    ),
    # the linear branch without its -delta/2
    "stub-huber": (
        "def huber(r, delta=1.0):\n    q = r.abs().clip(high=delta)\n    return 0.5 * q * q + delta * r.abs()\n"
    ),
}


def test_coding_exercise_checks_reject_the_stub_and_a_slip_and_accept_the_solution(nb, text):
    answers = {s.label: s.body for s in solutions(nb)}
    code = {stub: re.search(r"```python\n(.*?)```", answers[label], re.S).group(1) for stub, label in EXERCISES.items()}
    namespace: dict = {}
    on_stubs = {c.id: run(c.source, namespace) for c in nb.cells if c.cell_type == "code" and c.id != "setup"}
    checks = tagged(nb, "exercise-check")
    assert all("is not written yet" in on_stubs[c.id] for c in checks)
    for stub, check in zip(EXERCISES, checks):
        run(code[stub], namespace)
        verdict = run(check.source, namespace)
        assert verdict.startswith("✔") and "cases right" in verdict, verdict
        run(SLIPS[stub], namespace)
        verdict = run(check.source, namespace)
        assert verdict.startswith("✘") and "not written" not in verdict, verdict


# ---- a program: chapter 2's function --------------------------------------------------------


def test_chapter_2s_function_as_a_program(nb, text):
    program = make_program(f, np.array(2.0), np.array(5.0))
    assert ops(program) == ["log", "mul", "add", "sin", "sub"]
    printed_program = printed_by(nb, "ch15-program")
    assert str(program) in printed_program and "d:f64[] = mul a b" in printed_program
    (value,) = evaluate(program, np.array(2.0), np.array(5.0))
    assert round(float(value), 3) == 11.652
    assert shows(printed_by(nb, "ch15-evaluate"), "evaluate: y =", value, value)
    assert "Equation(op='mul', args=[a, b], params=(), out=d)" in printed_by(nb, "ch15-evaluate")
    assert "`d:f64[] = mul a b`" in text


def test_the_gradient_program_gives_chapter_4s_adjoints(nb, text):
    program = make_program(value_and_grad(f, argnum=(0, 1)), np.array(2.0), np.array(5.0))
    shown_text = printed_by(nb, "ch15-gradient-program")
    assert str(program) in shown_text
    for line in ("j:f64[] = mul 1 e", "k:f64[] = div 1 c", "m:f64[] = cos e", "n:f64[] = mul -1 m"):
        assert line in shown_text, line
    assert ops(program)[:7] == ["identity", "log", "identity", "mul", "add", "sin", "sub"]  # lines c to i
    values = [float(v) for v in evaluate(program, np.array(2.0), np.array(5.0))]
    assert [round(v, 3) for v in values] == [11.652, 5.5, 1.716]
    assert shows(shown_text, "outputs:", 11.652, 5.5, 1.716)
    assert mentions_all(text, [11.652, 5.5, 1.716], near="chapter 4's adjoints")


def test_second_derivative_of_sin_is_minus_sin(nb):
    program = passes.simplify(make_program(grad(grad(lambda x: x.sin())), np.array(0.5)))
    assert ops(program) == ["sin", "mul"]
    assert evaluate(program, np.array(0.5))[0] == pytest.approx(-np.sin(0.5), abs=1e-15)
    assert str(program) in printed_by(nb, "ch15-second-derivative")


# ---- the Iris network ---------------------------------------------------------------------


def test_the_mlp_loss_program_is_seven_equations_and_the_eager_loss(nb, text, iris):
    program = make_program(loss, *iris["params"], iris["x16"], iris["labels16"])
    assert ops(program) == ["affine", "relu", "affine", "log_softmax", "take", "mean", "neg"]
    assert str(program) in printed_by(nb, "ch15-mlp-program") and "f:i64[16]" in str(program)
    (value,) = evaluate(program, *iris["params"], iris["x16"], iris["labels16"])
    eager = cross_entropy(MLP([4, 16, 3], rng=0)(iris["x16"]), iris["labels16"]).item()
    assert value == eager
    assert f"program: {eager!r}   eager: {eager!r}   identical: True" in printed_by(nb, "ch15-mlp-program")
    assert "Seven equations" in text and np.bincount(iris["labels16"], minlength=3).min() > 0  # a mixed batch
    closure = printed_by(nb, "ch15-mlp-closure")
    assert closure.startswith("{ lambda c0:f64[4,16] c1:f64[16] c2:f64[16,3] c3:f64[3]; a:f64[16,4]. let")


def closed_over_labels(iris):
    """The loss of the parameters and the batch, closed over chapter 10's first 16 labels."""
    return lambda w1, b1, w2, b2, x: loss(w1, b1, w2, b2, x, iris["labels16"])


def test_the_mlp_gradient_program_folds_the_loss_backward_into_constants(nb, text, iris):
    program = make_program(value_and_grad(closed_over_labels(iris), argnum=(0, 1, 2, 3)), *iris["params"], iris["x16"])
    assert str(program) in printed_by(nb, "ch15-mlp-gradient")
    assert len(program.equations) == 24 and {"neg", "mean", "getitem"} & set(ops(program)[11:]) == set()
    line_t = program.equations[14]
    assert (line_t.op, line_t.out.name) == ("sub", "t")
    c1, _ = line_t.args
    onehot = np.eye(3)[iris["labels16"]]
    np.testing.assert_array_equal(c1, -onehot / 16)
    c0 = program.equations[13].args[1]
    np.testing.assert_array_equal(c0, np.full((16, 1), -1 / 16))
    logits = affine(affine(iris["x16"], iris["params"][0], iris["params"][1]).relu(), *iris["params"][2:]).data
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    up_to_t = passes.eliminate_dead_code(replace(program, outputs=[line_t.out]))
    np.testing.assert_allclose(evaluate(up_to_t, *iris["params"], iris["x16"])[0], (p - onehot) / 16, atol=1e-16)
    assert "$-\\text{onehot}(y)/16$" in text and "$-1/16$" in text and "line `t` is" in text


# ---- the flight of chapter 11 -------------------------------------------------------------


@pytest.fixture(scope="module")
def flight():
    steps = steps_before(*START_SHOT, DRAG)
    return dict(
        steps=steps,
        program=make_program(flight_height, *SHOT, steps),
        gradient=make_program(grad(flight_height, argnum=(0, 1, 2)), *SHOT, steps),
    )


def test_the_flight_unrolls_to_1792_equations_with_chapter_11s_height(nb, text, flight):
    assert START_SHOT[0] == 10.0 and round(np.degrees(START_SHOT[1])) == 30
    assert flight["steps"] == 49 and len(flight["program"].equations) == 1792
    (height,) = evaluate(flight["program"], *SHOT)
    assert float(height) == hoop_height(*START_SHOT, DRAG).item()
    out = printed_by(nb, "ch15-flight")
    assert out.startswith("49 steps: 1,792 equations, {'mul': 897, 'add': 593, 'sqrt': 100, 'sub': 100}")
    assert f"program {float(height)!r}, chapter 11's loop {float(height)!r}" in out
    assert "g:f64[] = add 0 f" in out and "Line `g`, `add 0 f`" in text
    assert mentions_all(text, [10, 30, 49, 1792], near="first throw")
    assert mentions_all(section(text, "Summary"), [49, 1792], near="loops unroll")


def test_the_flight_gradient_equals_the_eager_one(flight):
    compiled = jit(grad(flight_height, argnum=(0, 1, 2)))(*SHOT, flight["steps"])
    leaves = [Tensor(x, requires_grad=True) for x in SHOT]
    hoop_height(*leaves).backward()
    for a, b in zip(compiled, leaves):
        np.testing.assert_array_equal(a.data, b.grad)


# ---- passes -------------------------------------------------------------------------------


def counts(program):
    row = [len(program.equations)]
    for rewrite in (passes.remove_noops, passes.eliminate_common_subexpressions, passes.eliminate_dead_code):
        program = rewrite(program)
        row.append(len(program.equations))
    return row


def test_the_passes_table(nb, text, iris, flight):
    mlp = make_program(value_and_grad(closed_over_labels(iris), argnum=(0, 1, 2, 3)), *iris["params"], iris["x16"])
    sin_cos = make_program(value_and_grad(lambda x: x.sin() * x.cos()), np.array(0.5))
    rows = {
        "f: value and gradient": make_program(value_and_grad(f, argnum=(0, 1)), np.array(2.0), np.array(5.0)),
        "sin(x) cos(x): value and gradient": sin_cos,
        "MLP: loss": make_program(loss, *iris["params"], iris["x16"], iris["labels16"]),
        "MLP: loss and gradients": mlp,
        "MLP: gradients only": replace(mlp, outputs=mlp.outputs[1:]),
        "flight: height": flight["program"],
        "flight: gradient": flight["gradient"],
    }
    table = printed_by(nb, "ch15-passes-table")
    expected = {
        "f: value and gradient": [14, 10, 10, 10],
        "sin(x) cos(x): value and gradient": [12, 9, 7, 7],
        "MLP: loss": [7, 7, 7, 7],
        "MLP: loss and gradients": [24, 20, 20, 20],
        "MLP: gradients only": [24, 20, 20, 17],
        "flight: height": [1792, 1792, 1791, 1791],
        "flight: gradient": [4396, 4389, 4091, 4091],
    }
    for name, program in rows.items():
        assert counts(program) == expected[name], name
        assert shows(table, name, *expected[name]), name
    alive = passes.eliminate_dead_code(replace(mlp, outputs=mlp.outputs[1:])).equations
    assert [e.op for e in mlp.equations if e not in alive] == ["getitem", "mean", "neg"]
    assert "Twelve equations became seven" in text
    simplified = str(passes.simplify(sin_cos))
    assert simplified in printed_by(nb, "ch15-passes-example") and "f:f64[] = mul e b" in simplified
    assert mentions_all(text, [298, 4396], near="CSE removes") and 4396 - 4091 - 7 == 298
    assert mentions_all(section(text, "Summary"), [298, 4396], near="common subexpressions")


# ---- jit ----------------------------------------------------------------------------------


def test_jit_traces_once_per_signature(nb):
    out = printed_by(nb, "ch15-jit-basics")
    assert out.count("tracing for shape") == 2 and "programs in the cache: 2" in out
    assert "Tensor(10.)\nTensor(20.)" in out and "def norm_times_two(a):" in out


def test_the_jitted_step_reads_like_the_hand_written_one_and_equals_the_eager_step(nb, text, iris):
    step = jit(sgd_step(loss))
    source = step.source(iris["params"], iris["x16"], iris["labels16"])
    assert source in printed_by(nb, "ch15-jit-step")
    forward, backward = source.split("n = e.T\n")
    assert forward.count("np.matmul") == 2 and forward.count("np.maximum(") == 1
    assert forward.count("np.log(np.add.reduce(np.exp(j)") == 1  # the log-softmax in two lines
    assert "np.add.reduce(k, axis=None, keepdims=False) / 16\n    m = -l\n" in forward  # the mean, then -
    assert backward.count("np.matmul") == 3 and backward.count("np.add.reduce(") == 2  # two sums, none for x
    assert "np.sign(h)" in backward and backward.count(".T\n") == 2 and ", out=" in backward
    assert "    o[_c0, f] = _c1\n" in backward  # dz[rows, labels] -= 1.0 of the hand-written step
    assert "    q = np.multiply(p, -0.0625, out=p)\n" in backward  # the column c0 of -1/16, as one number
    assert "`-0.0625` is the column `c0` above, as one number" in section(text, "A jitted training step")
    _, new = step(iris["params"], iris["x16"], iris["labels16"])
    eager = MLP([4, 16, 3], rng=0)
    cross_entropy(eager(iris["x16"]), iris["labels16"]).backward()
    SGD(eager.parameters(), lr=LR).step()
    assert all(np.array_equal(p.data, q.data) for p, q in zip(new, eager.parameters()))
    assert shows(printed_by(nb, "ch15-numpy-step"), "jit = eager step, exactly:", True)
    assert shows(printed_by(nb, "ch15-numpy-step"), "jit = hand-written step to 1e-13:", True)


def test_labels_are_traced_one_program_per_shape_of_the_batch(nb, text, iris, trained):
    step = jit(sgd_step(loss))
    order = np.random.default_rng(1).permutation(len(iris["y_train"]))
    params = iris["params"]
    for start in range(0, len(order), 16):
        rows = order[start : start + 16]
        _, params = step(params, iris["X_train"][rows], iris["y_train"][rows])
    assert len(step.cache) == 2 and len(order) % 16 == 8
    assert shows(printed_by(nb, "ch15-retrace"), "programs after one epoch of", 8, 2)
    assert "Eight steps, two programs" in text
    assert trained["programs"] == 2
    assert all(np.array_equal(p, q.data) for p, q in zip(trained["params"], trained["eager"].parameters()))
    w1, b1, w2, b2 = trained["params"]
    held_out = affine(affine(iris["Z"][iris["test_idx"]], w1, b1).relu(), w2, b2).data.argmax(axis=1)
    assert int((held_out == iris["y"][iris["test_idx"]]).sum()) == 29
    out = printed_by(nb, "ch15-jit-training")
    assert shows(out, "programs traced in", 800, 2) and shows(out, "identical to the eager run:", True)
    assert shows(out, "held-out accuracy:", 29, 30)
    assert mentions_all(text, [16, 8, 800, 29, 30], near="Two programs (batches")


# ---- when tracing breaks ------------------------------------------------------------------


def test_the_errors_name_the_users_line_and_say_what_to_do(nb):
    huber = printed_by(nb, "ch15-huber-branch")
    assert huber.startswith(
        "TracingError: float() or .item() of a traced value, at <cell>:3: if abs(r.item()) <= delta:"
    )
    numpy_call = printed_by(nb, "ch15-numpy-call")
    assert "A NumPy call" in numpy_call and "<cell>:2: return x / np.linalg.norm(x)" in numpy_call
    loop = printed_by(nb, "ch15-loop")
    assert "A NumPy call" in loop and "jit(hoop_height)(*shot)" in loop
    assert "noisy_loss draws random numbers (np.random) while traced" in printed_by(nb, "ch15-random")
    assert "ipykernel" not in shown(nb) and "Traceback" not in shown(nb)


# ---- vmap ---------------------------------------------------------------------------------


def test_vmap_examples(nb):
    basics = printed_by(nb, "ch15-vmap-basics")
    X = load_iris()[0]
    scores = np.tanh(X[:3] @ np.array([0.5, -1.0, 2.0, 0.1]))
    for key in ("loop:", "vmap, rows:", "vmap, columns:"):
        assert shows(basics, key, *scores), key
    shares = X[:3] / X[:3].sum(axis=1, keepdims=True)
    assert all(shows(basics, "", *row) for row in shares.T)  # out_axes=1: one column per flower
    assert shows(printed_by(nb, "ch15-nested-vmap"), "same as the double loop:", True)


def test_nested_vmap_table_has_each_flower_nearest_its_own_class(iris):
    means = np.stack([iris["X_train"][iris["y_train"] == c].mean(axis=0) for c in range(3)])
    flowers = iris["Z"][iris["test_idx"][::10]]
    assert iris["y"][iris["test_idx"][::10]].tolist() == [0, 1, 2]
    distances = np.linalg.norm(flowers[:, None, :] - means[None, :, :], axis=2)
    assert distances.argmin(axis=1).tolist() == [0, 1, 2]


def test_per_example_gradients(nb, text, iris, trained):
    X_train, y_train = iris["X_train"], iris["y_train"]
    onehot = np.eye(3)[y_train]
    grads = vmap(grad(example_loss, argnum=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0))(
        *trained["params"], X_train, onehot
    )
    norms = np.sqrt(sum((g.data.reshape(120, -1) ** 2).sum(axis=1) for g in grads))
    w1, b1, w2, b2 = trained["params"]
    p = affine(affine(X_train, w1, b1).relu(), w2, b2).softmax().data
    top = np.argsort(norms)[::-1][:3]
    assert iris["train_idx"][top].tolist() == [83, 68, 70]
    assert all(iris["target_names"][c] == "versicolor" for c in y_train[top])
    below_even = [int(iris["train_idx"][i]) for i in top if p[i, y_train[i]] < 0.5]
    assert below_even == [83, 70]
    assert round(norms.max() / np.median(norms), -2) == 200
    out = printed_by(nb, "ch15-per-example")
    assert shows(out, "same as a loop over the", 120, True) and shows(out, "mean = batch gradient:", True)
    assert shows(out, "median", np.median(norms))
    for i in top:
        assert shows(out, f"flower {iris['train_idx'][i]}, a versicolor: norm", norms[i], p[i, y_train[i]])
    assert mentions_all(text, [83, 70], near="less than even odds") and "two hundred times" in text


def test_integrated_gradients_of_flower_133_with_vmap_are_chapter_12s(nb, iris, trained):
    w1, b1, w2, b2 = trained["params"]
    a = integrated_gradients(
        lambda points: affine(affine(points, w1, b1).relu(), w2, b2),
        iris["Z"][133],
        np.zeros(4),
        steps=200,
        method="gausslegendre",
        target=1,
    )
    assert np.round(a, 3).tolist() == [0.403, 0.037, -0.955, -0.926]  # chapter 12's numbers
    out = printed_by(nb, "ch15-ig")
    assert shows(out, "vmap:", *a) and shows(out, "course_lib.ig:", *a, 1e-12, True)


# ---- reverse mode from forward mode -------------------------------------------------------


def test_linearize_and_transpose_on_chapter_2s_function(nb, text):
    _, linear = linearize(f, np.array(2.0), np.array(5.0))
    lines = str(linear)
    for line in ("c:f64[] = div a 2", "d:f64[] = mul a 5", "e:f64[] = mul 2 b", "h:f64[] = mul b 0.283662"):
        assert line in lines, line
    pulled = [float(v) for v in evaluate(transpose(linear), np.ones(()))]
    assert [round(v, 3) for v in pulled] == [5.5, 1.716]
    assert shows(printed_by(nb, "ch15-linearize"), "transpose at 1:", 5.5, 1.716)
    assert round(np.cos(5.0), 3) == 0.284
    assert mentions_all(text, [2, 5, 2, 0.284], near="local derivatives are constants")


def test_transposing_the_mlps_linear_program_gives_the_gradient_program(nb, text, iris):
    params, x16, labels16 = iris["params"], iris["x16"], iris["labels16"]

    def batch_loss(w1, b1, w2, b2):
        return loss(w1, b1, w2, b2, x16, labels16)

    _, linear = linearize(batch_loss, *params)
    assert str(linear) in printed_by(nb, "ch15-linearize-mlp")
    eqs = {e.out.name: e for e in linear.equations}
    assert eqs["f"].op == "add" and not eqs["f"].args[0].any()  # `add c1 e`: c1 is zeros
    h = x16 @ params[0] + params[1]
    np.testing.assert_array_equal(eqs["h"].args[1], (h > 0).astype(float))  # c2, the ReLU mask
    z = np.maximum(h, 0) @ params[2] + params[3]
    softmax = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(eqs["m"].args[1], softmax / softmax.sum(axis=1, keepdims=True), rtol=1e-14)  # c5
    transposed = transpose(linear)
    assert len(transposed.equations) == 17 and shows(printed_by(nb, "ch15-linearize-mlp"), "transposed:", 17)
    gradients = evaluate(make_program(grad(batch_loss, argnum=(0, 1, 2, 3)), *params), *params)
    assert all(np.array_equal(c, g) for c, g in zip(evaluate(transposed, np.ones(())), gradients))
    assert "Line `f`, `add c1 e`" in text and "(`c2`)" in text and "(`c5`)" in text
