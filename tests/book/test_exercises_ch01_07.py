"""Exercises of chapters 1 to 7: at least three per chapter, each with one solution (hidden until
clicked: tests/book/test_answers.py),
and a coding exercise whose check, run on the stub the reader sees, says "not written yet" and,
run on the published solution, says every case is right. Chapters 1 to 4 have at least two coding
exercises that are not one-liners (issue 22), and their checks reject a typical slip and say why.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
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


def coding_exercises(path) -> dict[str, dict]:
    """label -> the stub, the check and what the executed chapter shows it print, the solution's code
    and text, and the engine the check may compare with (the chapter's cells tagged
    teaching-version), for each coding exercise of the chapter, in the order of their stubs."""
    nb = nbformat.read(path, as_version=4)
    stubs, checks = tagged(nb, "exercise-stub"), tagged(nb, "exercise-check")
    labels = [e.label for e in exercises(nb) if e.body.lstrip().startswith("**Coding")]
    assert len(stubs) == len(checks) == len(labels), labels
    answers = {s.label: s.body for s in solutions(nb)}
    teaching = [c for c in nb.cells if c.cell_type == "code" and "teaching-version" in c.metadata.get("tags", [])]
    return {
        label: {
            "stub": stub.source,
            "check": check.source,
            "shown": "".join(out.text for out in check.outputs if out.output_type == "stream"),
            "code": re.search(r"```python\n(.*?)```", answers[label], re.S).group(1),
            "solution": answers[label],
            "engine": tuple(c.source for c in teaching),
        }
        for label, stub, check in zip(labels, stubs, checks)
    }


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_coding_exercise_check_rejects_the_stub_and_accepts_the_solution(path):
    found = coding_exercises(path)
    assert f"ch{path.name[:2]}-code" in found, list(found)
    for label, ex in found.items():
        assert "is not written yet" in ex["shown"], f"{label}: the executed chapter shows the check run on the stub"
        assert "is not written yet" in run(ex["stub"], ex["check"], prelude=ex["engine"]), label
        verdict = run(ex["code"], ex["check"], prelude=ex["engine"])
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


# ---- chapters 1 to 4: coding exercises that make the reader think (issue 22, item 3) -------------


def chapter(number: str):
    return next(p for p in CHAPTERS if p.name.startswith(number))


def statements(code: str) -> int:
    """The statements in the bodies of the functions that ``code`` defines, docstrings left out."""
    functions = [node for node in ast.parse(code).body if isinstance(node, ast.FunctionDef)]
    inside = sum(isinstance(node, ast.stmt) for f in functions for node in ast.walk(f)) - len(functions)
    return inside - sum(ast.get_docstring(f) is not None for f in functions)


def namespace_after(*sources: str) -> dict:
    """The namespace that the sources leave behind (what they print is discarded)."""
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in sources:
            exec(source, namespace)
    return namespace


@pytest.mark.parametrize("number", ["01", "02", "03", "04"])
def test_at_least_two_coding_exercises_that_are_not_one_liners(number):
    found = coding_exercises(chapter(number))
    built = [label for label, ex in found.items() if statements(ex["code"]) >= 4]
    assert len(built) >= 2, f"chapter {number}: {list(found)}, of which more than one-liners: {built}"
    assert all(label in SLIPS for label in built), "each has a typical slip that its check rejects"


# Typical slips, each run after the exercise's stub (which defines what the stub cell gives the
# reader, such as chapter 2's OPS), with a phrase its check must say.
SLIPS = {
    "ch01-code": [
        (
            "halving h scales the h^(2k) term by 2**k, not 4**k",
            "def richardson(fn, x, h, levels):\n"
            "    previous = []\n"
            "    for i in range(levels):\n"
            "        step = h / 2**i\n"
            "        row = [(fn(x + step) - fn(x - step)) / (2 * step)]\n"
            "        for k in range(1, i + 1):\n"
            "            row.append(row[k - 1] + (row[k - 1] - previous[k - 1]) / (2**k - 1))\n"
            "        previous = row\n"
            "    return previous[-1]\n",
            "case 2: richardson(f, 6.0, 1.0, 2) returned -7.5",
        ),
    ],
    "ch01-gradcheck": [
        (
            "an absolute tolerance",
            "def disagreements(fn, grad_fn, x, h=1e-6, tol=1e-6):\n"
            "    x = np.asarray(x, dtype=float)\n"
            "    wrong = []\n"
            "    for i in range(len(x)):\n"
            "        step = np.zeros_like(x)\n"
            "        step[i] = h\n"
            "        if abs(grad_fn(x)[i] - (fn(x + step) - fn(x - step)) / (2 * h)) > tol:\n"
            "            wrong.append(i)\n"
            "    return wrong\n",
            "case 4 (1e6 (x0² + x0 x1 + x1²) = 7e6, correct gradient): returned [1], expected []. At 7e6",
        ),
        (
            "a purely relative tolerance",
            "def disagreements(fn, grad_fn, x, h=1e-6, tol=1e-6):\n"
            "    x = np.asarray(x, dtype=float)\n"
            "    wrong = []\n"
            "    for i in range(len(x)):\n"
            "        step = np.zeros_like(x)\n"
            "        step[i] = h\n"
            "        a, b = grad_fn(x)[i], (fn(x + step) - fn(x - step)) / (2 * h)\n"
            "        if abs(a - b) > tol * max(abs(a), abs(b)):\n"
            "            wrong.append(i)\n"
            "    return wrong\n",
            "case 5 (Rosenbrock's function at its minimum, correct gradient 0): returned [0, 1], expected [].",
        ),
        (
            "a fixed tolerance of 1e-3, loose enough for the round-off at 7e6",
            "def disagreements(fn, grad_fn, x, h=1e-6, tol=1e-6):\n"
            "    x = np.asarray(x, dtype=float)\n"
            "    wrong = []\n"
            "    for i in range(len(x)):\n"
            "        step = np.zeros_like(x)\n"
            "        step[i] = h\n"
            "        if abs(grad_fn(x)[i] - (fn(x + step) - fn(x - step)) / (2 * h)) > 1e-3:\n"
            "            wrong.append(i)\n"
            "    return wrong\n",
            "case 6 (a bowl 1e5 times flatter, two slips): returned [], expected [2, 4]. Its slips are 2.7e-5",
        ),
        (
            "stepping x in place, which does not restore it exactly",
            "def disagreements(fn, grad_fn, x, h=1e-6, tol=1e-6):\n"
            "    grad = grad_fn(x)\n"
            "    wrong = []\n"
            "    for i in range(len(x)):\n"
            "        x[i] += h\n"
            "        up = fn(x)\n"
            "        x[i] -= 2 * h\n"
            "        down = fn(x)\n"
            "        x[i] += h\n"
            "        if abs(grad[i] - (up - down) / (2 * h)) > tol * max(1.0, abs(grad[i])):\n"
            "            wrong.append(i)\n"
            "    return wrong\n",
            "x changed from",
        ),
    ],
    "ch02-code": [
        (
            "one plus the counts of the parents: the size of the tree",
            "def count_nodes(y):\n    return 1 + sum(count_nodes(parent) for parent in y._parents)\n",
            "case 2",
        ),
    ],
    "ch02-replay": [
        (
            "the new values written into the nodes",
            "from course_lib.toposort import postorder\n"
            "def replay(y, new_values):\n"
            "    for node in postorder(y, lambda node: node._parents):\n"
            "        if node._parents:\n"
            "            node.data = OPS[node._op](*(parent.data for parent in node._parents))\n"
            "        elif node in new_values:\n"
            "            node.data = new_values[node]\n"
            "    return y.data\n",
            "replay changed the values recorded in the nodes",
        ),
        (
            "every leaf looked up in new_values, constants and inputs left out included",
            "from course_lib.toposort import postorder\n"
            "def replay(y, new_values):\n"
            "    value = {}\n"
            "    for node in postorder(y, lambda node: node._parents):\n"
            "        if node._parents:\n"
            "            value[node] = OPS[node._op](*(value[parent] for parent in node._parents))\n"
            "        else:\n"
            "            value[node] = new_values[node]\n"
            "    return value[y]\n",
            "keeps its recorded value",
        ),
    ],
    "ch03-code": [
        (
            "the order of the nodes reachable from the first seed only",
            "from course_lib import graph\n"
            "def jvp_on_graph(outputs, seeds):\n"
            "    order = graph.topological_order_forward(next(iter(seeds)))\n"
            "    tangent = dict(seeds)\n"
            "    for node in order[1:]:\n"
            "        tangent[node] = sum(local * tangent.get(parent, 0.0)\n"
            "                            for parent, local in zip(node._parents, node.grad_wrt_parents))\n"
            "    return [tangent.get(y, 0.0) for y in outputs]\n",
            "case 3 (the running example, seed (1, 1)): returned [7.5], expected [7.2163]. Does the sweep reach",
        ),
    ],
    "ch03-band": [
        (
            "one pass per column",
            "def banded_jacobian(F, x):\n"
            "    n = len(x)\n"
            "    columns = []\n"
            "    for j in range(n):\n"
            "        outputs = F([Dual(xi, 1.0 if i == j else 0.0) for i, xi in enumerate(x)])\n"
            "        columns.append([out.tangent for out in outputs])\n"
            "    return np.array(columns).T\n",
            "n = 5: the Jacobian is right, but it took 5 passes",
        ),
        (
            "each pass's tangents written into the column of its colour",
            "def banded_jacobian(F, x):\n"
            "    n = len(x)\n"
            "    J = np.zeros((n, n))\n"
            "    for colour in range(min(3, n)):\n"
            "        outputs = F([Dual(xj, 1.0 if j % 3 == colour else 0.0) for j, xj in enumerate(x)])\n"
            "        for i in range(n):\n"
            "            J[i, colour] = outputs[i].tangent\n"
            "    return J\n",
            "n = 5: ",
        ),
    ],
    "ch04-code": [
        (
            "= in place of +=",
            "from course_lib import graph\n"
            "def backward_push(y):\n"
            "    adjoint = {y: 1.0}\n"
            "    for node in graph.topological_order_reverse(y):\n"
            "        for parent, local in zip(node._parents, node.grad_wrt_parents):\n"
            "            adjoint[parent] = adjoint[node] * local\n"
            "    return adjoint\n",
            "case 1 (e = (a + b)(b + 1) at (2, 3)): the adjoint of b is 5.0000, expected 9.0000. b feeds two",
        ),
        (
            "a pre-order",
            "def backward_push(y):\n"
            "    order, visited = [], set()\n"
            "    def visit(node):\n"
            "        if node not in visited:\n"
            "            visited.add(node)\n"
            "            order.append(node)\n"
            "            for parent in node._parents:\n"
            "                visit(parent)\n"
            "    visit(y)\n"
            "    adjoint = {node: 0.0 for node in order}\n"
            "    adjoint[y] = 1.0\n"
            "    for node in order:\n"
            "        for parent, local in zip(node._parents, node.grad_wrt_parents):\n"
            "            adjoint[parent] += adjoint[node] * local\n"
            "    return adjoint\n",
            "case 4 (g sin g with g = x + 3, at x = 1): the adjoint of x is -0.7568, expected -3.3714. "
            "A node may push only once every child has pushed to it.",
        ),
    ],
    "ch04-vjp": [
        (
            "the order of the first output's ancestors only",
            "from course_lib import graph\n"
            "def vjp_on_graph(outputs, weights, inputs):\n"
            "    adjoint = dict(zip(outputs, weights))\n"
            "    for node in graph.topological_order_reverse(outputs[0]):\n"
            "        for parent, local in zip(node._parents, node.grad_wrt_parents):\n"
            "            adjoint[parent] = adjoint.get(parent, 0.0) + adjoint.get(node, 0.0) * local\n"
            "    return [adjoint.get(x, 0.0) for x in inputs]\n",
            "case 2 (F, w = (0, 0, 1)): returned [0.0, 0.0], expected [1.0, 10.0]. The sweep must cover",
        ),
        (
            "an output's weight set over what was pushed to it",
            "def vjp_on_graph(outputs, weights, inputs):\n"
            "    order, visited = [], set()\n"
            "    def visit(node):\n"
            "        if node not in visited:\n"
            "            visited.add(node)\n"
            "            for parent in node._parents:\n"
            "                visit(parent)\n"
            "            order.append(node)\n"
            "    for y in outputs:\n"
            "        visit(y)\n"
            "    seed = dict(zip(outputs, weights))\n"
            "    adjoint = {node: 0.0 for node in order}\n"
            "    for node in reversed(order):\n"
            "        if node in seed:\n"
            "            adjoint[node] = seed[node]\n"
            "        for parent, local in zip(node._parents, node.grad_wrt_parents):\n"
            "            adjoint[parent] += adjoint[node] * local\n"
            "    return [adjoint.get(x, 0.0) for x in inputs]\n",
            "case 5 (outputs v5 and v4, w = (1, 1)): returned [5.5, 1.7163], expected [11.0, 3.7163]. v4 is also",
        ),
    ],
}
SLIP_CASES = [(label, what, code, said) for label, slips in SLIPS.items() for what, code, said in slips]


@pytest.mark.parametrize(("label", "what", "code", "said"), SLIP_CASES, ids=[f"{c[0]}: {c[1]}" for c in SLIP_CASES])
def test_the_check_rejects_a_typical_slip_and_says_why(label, what, code, said):
    ex = coding_exercises(chapter(label[2:4]))[label]
    verdict = run(ex["stub"], code, ex["check"], prelude=ex["engine"])
    assert verdict.startswith("✘") and "not written" not in verdict, verdict
    assert said in verdict, verdict


def test_richardson_reaches_rounding_level_with_steps_no_smaller_than_0_03():
    ex = coding_exercises(chapter("01"))["ch01-code"]
    richardson = namespace_after(ex["code"])["richardson"]
    errors = [abs(richardson(math.exp, 0.0, 0.5, levels) - 1.0) for levels in range(1, 9)]
    for error in errors[:5]:  # one to five levels, as the solution lists them
        assert mentions(ex["solution"], error), error
    assert errors[4] < 1e-14 < 1e-11 and min(errors[5:]) > errors[4], "more levels make it worse again"
    assert mentions(ex["solution"], 0.5 / 2**4, near="no step")
    assert richardson(lambda x: x**4 - x, 0.3, 2.0, 2) == pytest.approx(4 * 0.3**3 - 1, abs=1e-12), "degree 4 exact"
    assert richardson(lambda x: x**5, 0.3, 2.0, 2) != pytest.approx(5 * 0.3**4, abs=1e-6), "degree 5 not"


def test_the_gradient_checker_finds_wavys_slip_and_the_round_off_sizes_are_the_ones_stated():
    ex = coding_exercises(chapter("01"))["ch01-gradcheck"]
    ns = namespace_after(ex["stub"], ex["code"])
    assert ns["disagreements"](ns["wavy"], ns["wavy_grad"], [0.3, -1.2, 0.8]) == [2]
    fixed = lambda x: ns["wavy_grad"](x) * [1.0, 1.0, 0.5]  # noqa: E731 - the fix the solution gives
    assert ns["disagreements"](ns["wavy"], fixed, [0.3, -1.2, 0.8]) == []
    assert "`[2]`" in ex["solution"] and "0.5 * np.exp(0.5 * x[2]) * x[0]" in ex["solution"]

    def central_errors(fn, grad, x):
        steps = 1e-6 * np.eye(len(x))
        return [abs((fn(x + s) - fn(x - s)) / 2e-6 - g) for s, g in zip(steps, grad)]

    big = lambda x: 1e6 * (x[0] ** 2 + x[0] * x[1] + x[1] ** 2)  # noqa: E731
    assert big(np.array([1.0, 2.0])) == 7e6
    error = max(central_errors(big, [4e6, 5e6], np.array([1.0, 2.0])))
    rosenbrock = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2  # noqa: E731
    at_minimum = max(central_errors(rosenbrock, [0.0, 0.0], np.array([1.0, 1.0])))
    for text in (ex["solution"], ex["check"]):
        assert mentions(text, error) and mentions(text, at_minimum), (error, at_minimum)


def test_replay_computes_each_node_once_and_keeps_hops_recorded_branch():
    ex = coding_exercises(chapter("02"))["ch02-replay"]
    ns = namespace_after(ex["stub"], ex["code"])
    Node, mul = ns["Node"], ns["mul"]
    products = 0

    def counted(a, b):
        nonlocal products
        products += 1
        return a * b

    ns["OPS"]["mul"] = counted
    x = z = Node(1.5)
    for _ in range(10):
        z = mul(z, z)

    def by_recursion(node):  # no memory of what was computed: one call per node of the tree
        return ns["OPS"][node._op](*map(by_recursion, node._parents)) if node._parents else node.data

    assert ns["replay"](z, {x: 1.001}) == pytest.approx(1.001**1024) and products == 10
    products = 0
    by_recursion(z)
    assert products == 2**10 - 1 and mentions(ex["solution"], products, near="recursion")
    t = Node(2.0)
    assert ns["replay"](ns["hop"](t), {t: -3.0}) == 9.0 and ns["hop"](Node(-3.0)).data == 3.0


def test_the_one_seed_order_misses_sin_x2():
    ex = coding_exercises(chapter("03"))["ch03-code"]
    assert mentions_all(ex["solution"], [7.5, 7.5 - math.cos(5)], near="instead of")


def test_the_push_sweeps_slips_give_the_numbers_the_solution_states():
    ex = coding_exercises(chapter("04"))["ch04-code"]
    assert mentions_all(ex["solution"], [math.sin(4), math.sin(4) + 4 * math.cos(4)], near="instead of")
    ns = namespace_after(ex["stub"], SLIPS["ch04-code"][0][1])  # = in place of +=
    a, b = ns["graph"].Node(2.0), ns["graph"].Node(3.0)
    e = ns["graph"].mul(ns["graph"].add(a, b), ns["graph"].add(b, 1.0))
    assert ns["backward_push"](e)[b] in (4.0, 5.0) and mentions_all(ex["solution"], [5, 4, 9], near="comes out")


def test_a_vjp_with_an_output_inside_another_adds_both_rows():
    ex = coding_exercises(chapter("04"))["ch04-vjp"]
    assert mentions_all(ex["solution"], [5.5, 11], near="weights $(1, 1)$")


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
