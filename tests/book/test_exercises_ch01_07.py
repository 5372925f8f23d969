"""Exercises of chapters 1 to 7: at least three per chapter, each with one solution (hidden until
clicked: tests/book/test_answers.py),
and a coding exercise whose check, run on the stub the reader sees, says "not written yet" and,
run on the published solution, says every case is right."""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import numpy as np
import pytest
from notebook_text import exercises, markdown, solutions, tagged
from paths import ROOT
from prose_numbers import mentions, mentions_all

CHAPTERS = sorted((ROOT / "book").glob("0[1-7]_*.ipynb"))


def ids(paths):
    return [p.name[:2] for p in paths]


def run(*sources: str, prelude: tuple[str, ...] = ()) -> str:
    """What the sources print when run one after another in a fresh namespace, after ``prelude``
    (run first, its output discarded)."""
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in prelude:
            exec(source, namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for source in sources:
            exec(source, namespace)
    return out.getvalue()


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_every_exercise_has_a_hidden_solution(path):
    labels = [exercise.label for exercise in exercises(path)]
    solved = [solution.label for solution in solutions(path)]
    chapter = int(path.name[:2])
    assert len(labels) >= 3, f"{path.name} has {len(labels)} exercises, at least 3 wanted"
    assert all(label.startswith(f"ch{chapter:02d}-") for label in labels), labels
    assert len(set(labels)) == len(labels)
    assert sorted(solved) == sorted(labels), "every exercise needs one solution and no more"
    assert "{dropdown}" not in markdown(path).split("## Check yourself")[1], "answers are solutions, not bare dropdowns"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_coding_exercise_check_rejects_the_stub_and_accepts_the_solution(path):
    nb = nbformat.read(path, as_version=4)
    stubs, checks = tagged(nb, "exercise-stub"), tagged(nb, "exercise-check")
    # the coding exercises, in the order of their stubs
    labels = [e.label for e in exercises(nb) if e.body.lstrip().startswith("**Coding")]
    chapter = int(path.name[:2])
    assert f"ch{chapter:02d}-code" in labels and len(stubs) == len(checks) == len(labels), labels
    answers = {s.label: s.body for s in solutions(nb)}
    # a check may compare with the engine the chapter built (its cells tagged teaching-version)
    teaching = [c for c in nb.cells if c.cell_type == "code" and "teaching-version" in c.metadata.get("tags", [])]
    engine = tuple(c.source for c in teaching)
    for label, stub, check in zip(labels, stubs, checks):
        code = re.search(r"```python\n(.*?)```", answers[label], re.S).group(1)
        shown = "".join(out.text for out in check.outputs if out.output_type == "stream")
        assert "is not written yet" in shown, f"{label}: the executed chapter shows the check run on the stub"
        assert "is not written yet" in run(stub.source, check.source, prelude=engine), label
        verdict = run(code, check.source, prelude=engine)
        assert verdict.startswith("✔") and "cases right" in verdict, (label, verdict)


# ---- reading flow of chapters 1 to 7 (issue 14, item 5) ----------------------------------------


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_chapter_links_notation_ends_with_a_summary_and_keeps_plotting_out(path):
    nb = nbformat.read(path, as_version=4)
    text = markdown(nb)
    assert "](notation.md)" in text, "link the notation page"
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert "Summary" in headings and headings.index("Summary") >= len(headings) - 3, headings
    summary = text.split("## Summary", 1)[1]
    assert "$" in summary, "the summary states the key formulas"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "hide-input" in code[0].metadata.get("tags", []), "the set-up cell is folded"
    plotting = [c.source[:60] for c in code if re.search(r"\bplt\.|\bax\.|subplots\(", c.source)]
    assert plotting == [], f"plotting code belongs in course_lib.figures: {plotting}"
    figure_calls = [
        c.source
        for c in code
        if "figures." in c.source and "import" not in c.source and "use_course_style" not in c.source
    ]
    assert all(len(c.splitlines()) == 1 for c in figure_calls), "a figure cell shows one call"


def test_the_post_order_argument_is_stated_once_and_referenced():
    texts = {path.name[:2]: markdown(path) for path in CHAPTERS}
    anchor = '<a id="post-order-proof"></a>'  # the book's target (post-order-proof)=, tools/notebook_answers.py
    assert texts["06"].count(anchor) == 1
    proof = texts["06"].split(anchor, 1)[1]
    assert re.match(r"\s*#+ \S", proof), "the label is on the proof's heading"
    assert re.search(r"\bw_0, w_1, \\dots, w_k\b", proof), "the proof follows: the chain of open nodes"
    for chapter in ("03", "04"):
        assert "](06_topological_order.ipynb#post-order-proof)" in texts[chapter], f"chapter {chapter} links the proof"
        assert "closes a cycle" not in texts[chapter] and "close a cycle" not in texts[chapter]


# ---- coding exercises that make the reader build or debug (issue 22, item 3) -------------------

CH05, CH06, CH07 = (next(p for p in CHAPTERS if p.name.startswith(n)) for n in ("05", "06", "07"))


def coding_exercise(path, label):
    """The stub, the check and the published solution (its code, its text) of one coding exercise,
    and the chapter's teaching version, which the check may use."""
    nb = nbformat.read(path, as_version=4)
    labels = [e.label for e in exercises(nb) if e.body.lstrip().startswith("**Coding")]
    k = labels.index(label)
    stub, check = tagged(nb, "exercise-stub")[k].source, tagged(nb, "exercise-check")[k].source
    answer = next(s.body for s in solutions(nb) if s.label == label)
    code = re.search(r"```python\n(.*?)```", answer, re.S).group(1)
    engine = tuple(
        c.source for c in nb.cells if c.cell_type == "code" and "teaching-version" in c.metadata.get("tags", [])
    )
    return stub, check, code, answer, engine


def assert_mistakes_are_caught(check, engine, mistakes):
    """Each typical mistake (name: (code, start of the verdict)) gets a ✘ that says what went wrong."""
    for name, (wrong, expected) in mistakes.items():
        verdict = run(wrong, check, prelude=engine)
        assert verdict.startswith(expected), (name, verdict)


def test_ch05_power_check_catches_the_typical_mistakes():
    _, check, code, answer, engine = coding_exercise(CH05, "ch05-power")
    assert_mistakes_are_caught(
        check,
        engine,
        {
            "log x for a number exponent": (
                code.replace("if needs_log:", "if True:"),
                "✘ x ** 3 at x = -2: power raised",
            ),
            "= instead of +=": (code.replace("x.grad += n.data", "x.grad = n.data"), "✘ x ** 3 * x at x = 1.5"),
            "the incoming gradient dropped": (code.replace(") * grad  # the power rule", ")"), "✘ tanh(x ** n)"),
            "the power rule for the exponent": (
                code.replace("y * math.log(x.data)", "n.data * x.data ** (n.data - 1)"),
                "✘ 2 ** n at n = 0.5",
            ),
        },
    )
    assert "x^x(1 + \\log x)" in answer


RECURSIVE_BACKWARD = """
def backward_by_counts(y):
    order, seen = [], set()

    def visit(v):
        if id(v) not in seen:
            seen.add(id(v))
            for p in v._parents:
                visit(p)
            order.append(v)

    visit(y)
    y.grad = 1.0
    for v in reversed(order):
        v._backward(v.grad)
"""

PREORDER_BACKWARD = """
def backward_by_counts(y):
    y.grad = 1.0
    stack, seen = [y], {id(y)}
    while stack:
        v = stack.pop()
        v._backward(v.grad)
        for p in v._parents:
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
"""


def test_ch06_backward_by_counts_check_catches_the_typical_mistakes():
    _, check, code, _, engine = coding_exercise(CH06, "ch06-backward-by-counts")
    distinct = code.replace("for parent in stack.pop()._parents:", "for parent in set(stack.pop()._parents):")
    assert_mistakes_are_caught(
        check,
        engine,
        {
            "distinct children counted, a stack of ready nodes": (distinct, "✘ sin x and cos(sin x)"),
            "distinct children counted, a queue": (distinct.replace("ready.pop()", "ready.pop(0)"), "✘ sin x and cos"),
            "recursion": (RECURSIVE_BACKWARD, "✘ a chain of 100,000 sines: RecursionError"),
            "pre-order": (PREORDER_BACKWARD, "✘ (sin x + 1)(3 sin x) at 1"),
            "the engine's backward()": ("def backward_by_counts(y):\n    y.backward()\n", "✘ log x1 + x1 x2"),
        },
    )
    assert "must run the rules itself" in run("def backward_by_counts(y):\n    y.backward()\n", check)


def test_ch07_descend_check_catches_the_typical_mistakes_and_the_solution_states_its_runs():
    _, check, code, answer, engine = coding_exercise(CH07, "ch07-backtracking")
    carried = code.replace("        eta = lr\n", "").replace(
        "    for _ in range(steps):", "    eta = lr\n    for _ in range(steps):"
    )
    assert_mistakes_are_caught(
        check,
        engine,
        {
            "eta carried over from the last step": (carried, "✘ the bowl from (3, 1), step 2: eta = 0.0625, but 0.125"),
            "any decrease accepted": (code.replace("loss.data - 0.5 * eta * (g @ g)", "loss.data"), "✘ the bowl"),
            "the full first-order decrease demanded": (
                code.replace("0.5 * eta", "eta"),
                "✘ the bowl from (3, 1), step 1",
            ),
        },
    )
    assert "fails the test" in run(code.replace("loss.data - 0.5 * eta * (g @ g)", "loss.data"), check, prelude=engine)
    namespace: dict = {}
    exec("import numpy as np\nfrom course_lib.scalar import Value\n" + code, namespace)

    def rosenbrock(a, b):
        return (1 - a) ** 2 + 100 * (b - a * a) ** 2

    def distances(start, steps):
        path = namespace["descend"](rosenbrock, start, steps)
        return np.hypot(path[:, 0] - 1, path[:, 1] - 1)

    near = distances((-1.5, 2.0), 300)
    far = distances((-3.0, 3.0), 2_800)
    assert np.all(np.diff([rosenbrock(*p) for p in namespace["descend"](rosenbrock, (-3.0, 3.0), 300)]) < 0)
    first_near, first_far = int(np.argmax(near < 1e-3)), int(np.argmax(far < 1e-3))
    assert (first_near, first_far) == (111, 2_703)
    assert mentions(answer, first_near, near="steps and") and mentions(answer, first_far, near="within")
    assert mentions(answer, near[300], near="away after 300")


def test_ch07_fit_line_check_catches_the_typical_mistakes_and_the_solution_states_its_runs():
    _, check, code, answer, engine = coding_exercise(CH07, "ch07-fit-line")
    assert_mistakes_are_caught(
        check,
        engine,
        {
            "1 / lambda_max, a safe but slow rate": (
                code.replace("lr = 2 / (low + high)", "lr = 1 / high"),
                "✘ x = 1, ..., 5: 1155 steps. At the best constant rate",
            ),
            "the Hessian without its factor 2: twice the best rate, unstable": (
                code.replace("hessian = 2 / n", "hessian = 1 / n"),
                "✘ x = 1, ..., 5: fit_line raised OverflowError",
            ),
            "the line through the first and the last point": (
                "def fit_line(xs, ys, tol=1e-8, max_steps=10_000):\n"
                "    w = (ys[-1] - ys[0]) / (xs[-1] - xs[0])\n    return w, ys[0] - w * xs[0], 0\n",
                "✘ x = 1, ..., 5: (w, c) = (2, 0.1), least squares gives (1.99, 0.05)",
            ),
        },
    )
    namespace: dict = {}
    exec("import numpy as np\nfrom course_lib.scalar import Value\n" + code, namespace)
    fit_line = namespace["fit_line"]
    (_, _, steps), (_, _, centred) = (
        fit_line([1.0, 2.0, 3.0, 4.0, 5.0], [2.1, 3.9, 6.2, 7.8, 10.1]),
        fit_line([-2.0, -1.0, 0.0, 1.0, 2.0], [0.5, 1.2, 1.4, 2.3, 2.6]),
    )
    x = np.arange(1.0, 6.0)
    low, high = np.linalg.eigvalsh(2 / 5 * np.array([[x @ x, x.sum()], [x.sum(), 5]]))
    assert (steps, centred) == (779, 18)
    assert mentions_all(answer, [low, high, high / low, steps], near="eigenvalues", within=100)
    assert mentions_all(answer, [2, centred], near="\\kappa = 2", within=30)
