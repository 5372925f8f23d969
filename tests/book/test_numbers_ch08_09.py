"""Chapters 8 (*Inside a real library*) and 9 (*Tensors*): the plan's numbers, computed by
course_lib, the executed notebooks really printing them, and the chapters' teaching versions
(cells tagged ``teaching-version``) agreeing with course_lib on the chapters' examples.

- Hessian of L(a, b) = b((a + b)(a - b)) at (1, 2) is [[4, 2], [2, -12]] (gradient (4, -11));
- nested grads of sin at 0.5 are cos, -sin, -cos;
- the matmul VJP is (G B^T, A^T G) with the shapes of A and B;
- the gradient of the mean softmax cross-entropy is (P - onehot) / N, also for huge logits.
"""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import numpy as np
import pytest
from notebook_text import (
    cells_run,
    coding_solutions,
    exercises,
    markdown,
    printed,
    printed_by,
    solution,
    solutions,
    tagged,
)
from paths import BOOK
from prose_numbers import lines_with, listed, mentions, shows

from course_lib import nn, tensor
from course_lib.check import numerical_grad
from course_lib.functional import grad, hessian
from course_lib.loop import HIGHER_ORDER
from course_lib.tensor import Tensor
from course_lib.toposort import child_count_order

CH08 = BOOK / "08_inside_a_library.ipynb"
CH09 = BOOK / "09_tensors.ipynb"


def L(a, b):
    return b * ((a + b) * (a - b))


def L_vec(p):
    return L(p[0], p[1])


# ---- the numbers, from course_lib ---------------------------------------------------------


def test_gradient_and_hessian_of_the_running_example():
    p0 = np.array([1.0, 2.0])
    assert np.array_equal(grad(L_vec)(p0).data, [4.0, -11.0])
    assert np.allclose(hessian(L_vec)(p0).data, [[4.0, 2.0], [2.0, -12.0]], atol=1e-12)


def test_nested_grads_of_sin_cycle_through_cos_minus_sin_minus_cos():
    def f(x):
        return x.sin()

    x0 = 0.5
    assert grad(f)(x0).item() == pytest.approx(np.cos(x0), abs=1e-14)
    assert grad(grad(f))(x0).item() == pytest.approx(-np.sin(x0), abs=1e-14)
    assert grad(grad(grad(f)))(x0).item() == pytest.approx(-np.cos(x0), abs=1e-14)


def test_no_perturbation_confusion():
    assert grad(lambda x: x * grad(lambda y: x + y)(1.0))(1.0).item() == 1.0


@pytest.mark.parametrize("m, k, n", [(3, 4, 2), (1, 5, 1), (4, 1, 3)])
def test_matmul_vjp_is_G_Bt_and_At_G_with_the_operands_shapes(m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    A = Tensor(rng.normal(size=(m, k)), requires_grad=True)
    B = Tensor(rng.normal(size=(k, n)), requires_grad=True)
    G = rng.normal(size=(m, n))
    (A @ B).backward(G)
    assert A.grad.shape == (m, k) and B.grad.shape == (k, n)
    assert np.allclose(A.grad, G @ B.data.T, atol=1e-12)
    assert np.allclose(B.grad, A.data.T @ G, atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_softmax_cross_entropy_gradient_is_p_minus_onehot_over_n(scale):
    rng = np.random.default_rng(2)
    labels = np.array([0, 2, 1, 2])
    raw = scale * rng.normal(size=(4, 3))
    logits = Tensor(raw, requires_grad=True)
    loss = nn.cross_entropy(logits, labels)
    loss.backward()
    shifted = np.exp(raw - raw.max(axis=1, keepdims=True))
    P = shifted / shifted.sum(axis=1, keepdims=True)
    onehot = np.eye(3)[labels]
    assert np.isfinite(loss.item())
    assert np.allclose(logits.grad, (P - onehot) / 4, atol=1e-15)
    assert np.allclose(logits.grad.sum(axis=1), 0.0, atol=1e-15)


def test_unbroadcast_numbers_of_the_figure():
    G = np.arange(1.0, 13.0).reshape(4, 3)
    for shape, expected in [((3,), [22.0, 26.0, 30.0]), ((4, 1), [[6.0], [15.0], [24.0], [33.0]])]:
        x = Tensor(np.zeros(shape), requires_grad=True)
        (Tensor(np.zeros((4, 3))) + x).backward(G)
        assert x.grad.shape == shape and np.array_equal(x.grad, expected)


def test_repeated_indices_scatter_add():
    x = Tensor([10.0, 20.0, 30.0, 40.0], requires_grad=True)
    (x[np.array([0, 2, 0, 0])] * np.array([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert np.array_equal(x.grad, [8.0, 0.0, 2.0, 0.0])


# ---- the executed notebooks ---------------------------------------------------------------


@pytest.fixture(scope="module")
def ch08():
    return nbformat.read(CH08, as_version=4)


@pytest.fixture(scope="module")
def ch09():
    return nbformat.read(CH09, as_version=4)


@pytest.mark.parametrize(
    "tag, expected",
    [
        ("ch08-hessian", ["gradient at (1, 2): [  4. -11.]", "[[  4.   2.]\n [  2. -12.]]"]),
        (
            "ch08-nested",
            ["grad(f)             = +0.877583", "grad(grad(f))       = -0.479426", "grad(grad(grad(f))) = -0.877583"],
        ),
        (
            "ch08-tiny",
            [
                "tiny_grad  4.000000   course_lib  4.000000",
                "tiny_grad -11.000000   course_lib -11.000000",
                "tiny_grad  6.000000   course_lib  6.000000",
            ],
        ),
        ("ch08-confusion", ["at x = 1: 1.0"]),
        ("ch08-naive-lse", ["naive value   : inf", "naive gradient: [nan nan nan]"]),
        ("ch08-stable-lse", ["stable value   : 1001.407606", "Hessian equals diag(p) - p p^T: True"]),
        ("ch08-containers", ["{'x': array(6.)}", "same as the flattened gradient: True"]),
    ],
)
def test_chapter_8_prints_the_numbers(ch08, tag, expected):
    text = printed_by(ch08, tag)
    for piece in expected:
        assert piece in text, f"cell {tag!r} should print {piece!r}, it printed:\n{text}"


def test_chapter_8_rnn_table_agrees_in_every_column(ch08):
    rows = re.findall(
        r"^\s*(\d+)\s+(-?\d\.\d+)\s+(-?\d\.\d+)\s+(-?\d\.\d+)\s+(-?\d\.\d+)\s+(-?\d\.\d+)\s*$",
        printed_by(ch08, "ch08-rnn"),
        re.M,
    )
    assert [int(r[0]) for r in rows] == [3, 10, 30]
    for row in rows:
        assert len(set(row[2:])) == 1, f"the four derivatives differ: {row}"


@pytest.mark.parametrize(
    "tag, expected",
    [
        ("ch09-matmul", ["A.grad (3, 4) equals G @ B.T (3, 4): True", "B.grad (4, 2) equals A.T @ G (4, 2): True"]),
        ("ch09-scatter", ["course_lib x.grad     : [8. 0. 2. 0.]"]),
        ("ch09-ce", ["logits of size ~1000", "naive softmax has nan     : True"]),
        (
            "ch09-seed",
            [
                "needs a seed gradient of that shape",
                "the seed must have exactly the output's shape",
                "x.grad = [ 2.  2. -6.]",
            ],
        ),
        ("ch09-pruning", ["Xs.requires_grad: False", "logits.requires_grad: True"]),
        ("ch09-no-grad", ["W_next.requires_grad = False", "(W * 2).requires_grad = True"]),
        ("ch09-accumulate", ["W.grad == 2 * full: True", "full-batch gradient: True"]),
        ("ch09-gradcheck", ["gradcheck(mixed, a, b, c): True"]),
    ],
)
def test_chapter_9_prints_the_numbers(ch09, tag, expected):
    text = printed_by(ch09, tag)
    for piece in expected:
        assert piece in text, f"cell {tag!r} should print {piece!r}, it printed:\n{text}"


def test_chapter_9_softmax_gradient_matches_p_minus_y_for_both_scales(ch09):
    assert printed_by(ch09, "ch09-ce").count("logits.grad == (P - Y) / N: True") == 2


def test_chapter_9_agrees_with_pytorch(ch09):
    text = printed_by(ch09, "ch09-torch")
    lines = [line for line in text.splitlines() if "max |difference|" in line]
    assert len(lines) == 4 and all(line.endswith("True") for line in lines), text


@pytest.mark.parametrize("path", [CH08, CH09])
def test_chapters_have_figures(path):
    nb = nbformat.read(path, as_version=4)
    kinds = [kind for c in nb.cells if c.cell_type == "code" for out in c.outputs for kind in out.get("data", {})]
    assert "image/png" in kinds and "image/svg+xml" in kinds


def test_chapter_9_links_the_assignment(ch09):
    text = markdown(ch09)
    assert "[Assignment ps07](../exercises/ps07_tensor_vjps/ps07_tensor_vjps.ipynb)" in text


# ---- the teaching versions agree with course_lib ------------------------------------------


@pytest.fixture(scope="module")
def teaching(ch08):
    namespace: dict = {}
    for cell in tagged(ch08, "teaching-version"):
        exec(cell.source, namespace)
    return namespace


def test_tiny_grad_agrees_with_course_lib(teaching):
    tiny_grad, sin, tanh = teaching["tiny_grad"], teaching["sin"], teaching["tanh"]
    assert tiny_grad(lambda a: L(a, 2.0))(1.0) == pytest.approx(grad(L, argnum=0)(1.0, 2.0).item(), abs=1e-12)
    assert tiny_grad(lambda b: L(1.0, b))(2.0) == pytest.approx(grad(L, argnum=1)(1.0, 2.0).item(), abs=1e-12)
    assert tiny_grad(lambda x: x * x)(3.0) == 6.0
    assert tiny_grad(lambda x: 5.0)(3.0) == 0.0
    for x0 in np.linspace(-2.0, 2.0, 9):
        assert tiny_grad(sin)(x0) == pytest.approx(grad(lambda x: x.sin())(x0).item(), abs=1e-14)

        def f_tiny(x):
            return teaching["exp"](x) / (1.0 + x * x) - teaching["log"](2.0 + sin(x)) * x

        def f_lib(x):
            return x.exp() / (1.0 + x * x) - (2.0 + x.sin()).log() * x

        assert tiny_grad(f_tiny)(x0) == pytest.approx(grad(f_lib)(x0).item(), rel=1e-12, abs=1e-12)

    def rnn(w, xs, tanh):
        h = 0.0
        for x in xs:
            h = tanh(w * h + x)
        return h

    rng = np.random.default_rng(0)
    for T in [3, 10, 30]:
        xs = rng.normal(0.0, 1.0, T)
        ours = tiny_grad(lambda w, xs=xs: rnn(w, xs, tanh))(0.8)
        reference = grad(lambda w, xs=xs: rnn(w, xs, Tensor.tanh))(0.8).item()
        assert ours == pytest.approx(reference, rel=1e-12, abs=1e-14)
        assert ours == pytest.approx(numerical_grad(lambda w, xs=xs: rnn(w, xs, np.tanh), 0.8), abs=1e-8)


def test_trace_records_only_traced_calls(teaching):
    Box, mul, trace = teaching["Box"], teaching["mul"], teaching["trace"]
    assert not isinstance(mul(2.0, 3.0), Box)
    start, out = trace(lambda x: teaching["sin"](x) * x + 2, 0.5)
    names = []
    stack, seen = [out.node], set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            names.append(node.name)
            stack.extend(node.parents)
    assert sorted(names) == ["add", "mul", "sin", "x"]
    assert out.value == pytest.approx(np.sin(0.5) * 0.5 + 2)


def test_grad_tree_agrees_with_flattened_course_lib_grad(teaching):
    grad_tree, tree_map = teaching["grad_tree"], teaching["tree_map"]
    assert grad_tree(lambda p: p["x"] * p["x"])({"x": 3.0})["x"] == 6.0
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)

    def loss(p):
        residual = Tensor(X) @ p["layer"][0] + p["layer"][1] - y
        return (residual * residual).mean()

    params = {"layer": (rng.normal(size=3), 0.3), "unused": [1.0]}
    grads = grad_tree(loss)(params)
    flat = grad(lambda t: loss({"layer": (t[:3], t[3])}))(np.append(params["layer"][0], 0.3)).data
    assert np.allclose(grads["layer"][0], flat[:3], atol=1e-12)
    assert grads["layer"][1] == pytest.approx(flat[3], abs=1e-12)
    assert grads["unused"] == [0.0]
    stepped = tree_map(lambda p, g: p - 0.1 * g, params, grads)
    assert isinstance(stepped["layer"], tuple) and loss(stepped).item() < loss(params).item()


def test_custom_logsumexp_vjp_is_softmax_and_twice_differentiable(ch08):
    namespace = {"np": np, "tensor": tensor}
    try:
        exec(tagged(ch08, "custom-vjp")[0].source, namespace)
        logsumexp = namespace["logsumexp"]
        for x0 in [np.array([1000.0, 1001.0, 999.0]), np.array([-3.0, 0.5, 2.0, 0.0])]:
            p = np.exp(x0 - x0.max()) / np.exp(x0 - x0.max()).sum()
            x = Tensor(x0, requires_grad=True)
            value = logsumexp(x)
            value.backward()
            assert value.item() == pytest.approx(x0.max() + np.log(np.exp(x0 - x0.max()).sum()), rel=1e-15)
            assert np.allclose(x.grad, p, atol=1e-15)
            assert np.allclose(hessian(logsumexp)(x0).data, np.diag(p) - np.outer(p, p), atol=1e-12)
    finally:
        tensor.VJP_RULES.pop("logsumexp", None)  # leave the engine's table as it was


# ---- issue 14: chapter 8's trace diagrams, complex step, node counts and exercise ---------


def test_chapter_8_traces_the_case_studys_example(ch08, teaching):
    seed_trace = printed_by(ch08, "ch08-seed-trace")
    value = 2.0 * np.sin(0.5 + 1.0)  # the Box's value, then the check: sin(1.5) * 2
    assert shows(seed_trace, "Box(", value, 1.5, 2, value) and "'mul'" in lines_with(seed_trace, "Box(")
    from course_lib.figures.tensors import trace_diagram

    Box, Node = teaching["Box"], teaching["Node"]
    x1, x2, x3 = Box(0.5, Node("x1")), Box(1.0, Node("x2")), Box(2.0, Node("x3"))
    y = teaching["sin"](x1 + x2) * x3
    source = trace_diagram(y.node, gradients=True).source
    # the prose: x3 gets sin(1.5) = 0.997, sin gets x3 = 2, add and both inputs get 2 cos(1.5) = 0.141
    assert f"{np.sin(1.5):.3f}" == "0.997" and f"{2 * np.cos(1.5):.3f}" == "0.141"
    for label in [
        "1. mul\ngrad 1.000",
        "x3\ngrad 0.997",
        "sin\ngrad 2.000",
        "add\ngrad 0.141",
        "x1\ngrad 0.141",
        "x2\ngrad 0.141",
    ]:
        assert label in source, label


def test_chapter_8_counts_the_nodes_of_the_composed_logsumexp(ch08):
    x = Tensor(np.array([1000.0, 1001.0, 999.0]), requires_grad=True)
    composed = x.max() + (x - x.max()).exp().sum().log()
    nodes = child_count_order(composed, lambda t: t._parents)
    assert len(nodes) == 8 and sum(1 for n in nodes if n._op) == 7  # seven operations and the leaf
    text = printed_by(ch08, "ch08-lse-nodes")
    assert shows(text, "composition:", 7) and shows(text, "primitive:", 1)  # operation nodes
    assert "same gradient: True" in text
    assert re.search(r"\b(?:7|[Ss]even) operation nodes\b.{0,20}\b(?:1|one)\b", markdown(ch08), re.S), (
        "the count 7 : 1 in words"
    )


def test_chapter_8_complex_step_is_exact_where_differences_cancel(ch08):
    def f(x):
        return np.sin(x) * x + 2

    exact = np.cos(0.5) * 0.5 + np.sin(0.5)
    rows = re.findall(r"^\s*(\de[+-]\d+)\s+(\S+)\s+(\S+)\s*$", printed_by(ch08, "ch08-complex-step"), re.M)
    assert [r[0] for r in rows] == ["1e-02", "1e-04", "1e-08", "1e-20"]
    for h_text, complex_error, central_error in rows:
        h = float(h_text)
        assert float(complex_error) == pytest.approx(abs(f(0.5 + 1j * h).imag / h - exact), rel=0.05, abs=1e-17)
        assert float(central_error) == pytest.approx(abs((f(0.5 + h) - f(0.5 - h)) / (2 * h) - exact), rel=0.05)
    assert float(rows[2][1]) < 3e-16 and float(rows[3][1]) < 3e-16  # exact to rounding from h = 1e-8 on
    assert float(rows[3][2]) == pytest.approx(exact, rel=0.01)  # 0.5 +- 1e-20 == 0.5: the difference is 0


def test_the_complex_step_is_introduced_once(ch08):
    """Chapter 1 introduces the complex step as a fourth way; chapter 8 refers back to it."""
    introduce = [path.name[:2] for path in sorted(BOOK.glob("[01]*.ipynb")) if "a fourth way" in markdown(path).lower()]
    assert introduce == ["01"], introduce
    section = markdown(ch08).split("### Complex numbers", 1)[1].split("\n#", 1)[0]
    assert "chapter 1" in section, "chapter 8 recalls the complex step from chapter 1"


def test_chapter_8_nested_differences_lose_half_the_digits(ch08):
    """Check-yourself 4: the best central second difference is about sqrt(eps) off, at h ~ eps^(1/4)."""
    eps = np.finfo(float).eps
    x = np.random.default_rng(0).uniform(0.3, 1.3, 400)  # typical errors, not one lucky point
    steps = np.logspace(-7, -1, 25)
    central = [np.median(abs((np.sin(x + h) - 2 * np.sin(x) + np.sin(x - h)) / h**2 + np.sin(x))) for h in steps]
    one_sided = [np.median(abs((np.sin(x + 2 * h) - 2 * np.sin(x + h) + np.sin(x)) / h**2 + np.sin(x))) for h in steps]
    assert eps**0.25 == pytest.approx(1.2e-4, rel=0.03) and 1e-5 < steps[np.argmin(central)] < 1e-3
    assert np.sqrt(eps) / 10 < min(central) < np.sqrt(eps) * 10  # about 8 of 16 digits left
    assert eps ** (1 / 3) / 10 < min(one_sided) < eps ** (1 / 3) * 10  # about 5 of 16 digits left
    text = markdown(ch08)
    # the prose states orders of magnitude: eps^(1/4) ~ 10^-4 and sqrt(eps) ~ 10^-8
    for power, exponent in [(0.25, -4), (0.5, -8)]:
        assert round(np.log10(eps**power)) == exponent and mentions(text, 10.0**exponent, near="varepsilon", within=40)
    assert re.search(r"\bhalf\b.{0,20}\b(?:16|sixteen) digits", text, re.S), "sqrt(eps): 8 of 16 digits lost"


def test_chapter_8_tanh_jacobian_sizes(ch08):
    assert (10**6) ** 2 * 8 == 8 * 10**12  # eight terabytes as a full float64 matrix
    text = markdown(ch08)
    for number in (10**6, 10**12):
        assert mentions(text, number, near="Jacobian"), number
    assert mentions(text, 10**6, near="diagonal", within=30), "only the diagonal's 10^6 entries are not zero"


def test_chapter_8_sqrt_exercise_check_tells_right_from_wrong(ch08, teaching):
    namespace = dict(teaching)
    for cell in tagged(ch08, "exercise-stub")[:1] + tagged(ch08, "exercise-check")[:1]:  # sqrt's cells
        exec(cell.source, namespace)
    check = namespace["check_sqrt_rule"]
    assert check(namespace["sqrt_rule"]).startswith("not done yet")  # the blank the reader gets
    assert check(lambda g, ans, x: g / (2.0 * ans)).startswith("correct")
    assert check(lambda g, ans, x: g / ans).startswith("not yet")  # a typical slip: the 2 forgotten
    assert "not done yet" in printed_by(ch08, "exercise-check")


CHAPTERS_8_TO_14 = sorted(p for p in BOOK.glob("*.ipynb") if 8 <= int(p.name[:2]) <= 14)


@pytest.mark.parametrize("path", CHAPTERS_8_TO_14, ids=[p.name for p in CHAPTERS_8_TO_14])
def test_chapters_have_exercises_with_hidden_solutions(path):
    """Issue 14: three or more exercises, each solution hidden until clicked, one of them coding
    with a check cell that the committed notebook shows as not yet attempted (in the words of
    issue 14, or as issue 22's "✘ ... not written yet"); a summary."""
    nb = nbformat.read(path, as_version=4)
    text = markdown(nb)
    labels = [exercise.label for exercise in exercises(nb)]
    solved = [solution.label for solution in solutions(nb)]
    assert len(labels) >= 3 and sorted(labels) == sorted(solved)
    assert "**Coding.**" in text and "## Summary" in text
    checks = tagged(nb, "exercise-check")
    for check in checks:  # each check, run on the blank the reader gets, says what to do
        verdict = printed([check])
        assert re.match(r"(✘ [^\n]*?)?not (done|written) yet", verdict), verdict
    assert "raise NotImplementedError" in tagged(nb, "exercise-stub")[0].source
    summary = next(c.source for c in nb.cells if c.cell_type == "markdown" and "## Summary" in c.source)
    assert "$" in summary, "the summary states the key formulas"


def test_chapter_9_counts_leaves_and_operations_of_the_pruned_graph(ch09):
    rng = np.random.default_rng(3)
    X = Tensor(rng.normal(size=(5, 4)))
    W = Tensor(rng.normal(size=(4, 3)), requires_grad=True)
    b = Tensor(np.zeros(3), requires_grad=True)
    Xs = (X - X.mean(axis=0)) / X.data.std(axis=0)
    nodes = child_count_order(nn.cross_entropy(Xs @ W + b, np.array([0, 2, 1, 1, 0])), lambda t: t._parents)
    leaves = [n for n in nodes if not n._op]
    assert len(nodes) == 9 and len(leaves) == 3 and Xs in leaves
    text = printed_by(ch09, "ch09-pruning")
    assert shows(text, "loss graph:", len(nodes), len(leaves), len(nodes) - len(leaves))  # nodes = leaves + ops
    assert listed(text, "operations") == [n._op for n in nodes if n._op]
    assert listed(text, "operations") == ["neg", "mean", "getitem", "log_softmax", "add", "matmul"]


# ---- chapter 9's coding exercises (issue 22: at least two that are not one-liners) ------------

CH09_IMPORTS = "83f06a89"  # the chapter's import cell


def exercise_cells(nb, label):
    """The stub and the check of the coding exercise ``label``: the code cells right after its question."""
    ids = [c.id for c in nb.cells]
    following = [c for c in nb.cells[ids.index(label) + 1 :] if c.cell_type == "code"]
    stub = next(c for c in following if "exercise-stub" in c.metadata.get("tags", []))
    check = next(c for c in following if "exercise-check" in c.metadata.get("tags", []))
    return stub, check


def verdict(check, *answers):
    """What the check function prints for these answers: its first line."""
    return check(*answers).splitlines()[0]


def test_chapter_9_has_three_coding_exercises_two_of_them_programs(ch09):
    code = coding_solutions(ch09)
    assert list(code) == ["ch09-softmax-vjp", "ch09-layer-norm", "ch09-distances"]
    programs = [
        label for label, source in code.items() if len([line for line in source.splitlines() if line.strip()]) >= 6
    ]
    assert programs == ["ch09-layer-norm", "ch09-distances"]
    for label in code:
        stub, check = exercise_cells(ch09, label)
        assert "raise NotImplementedError" in stub.source and "hide-input" in check.metadata["tags"]
        assert printed([check]).startswith("✘") and "not written yet" in printed([check]), label


def test_chapter_9_softmax_vjp_exercise_check_tells_right_from_wrong(ch09):
    namespace = cells_run(ch09, CH09_IMPORTS, *(c.id for c in exercise_cells(ch09, "ch09-softmax-vjp")))
    check = namespace["check_softmax_vjp"]
    assert check(namespace["softmax_vjp"]).startswith("✘ softmax_vjp is not written yet")
    assert check(lambda p, p_bar: p * (p_bar - np.dot(p_bar, p))).startswith("✔")
    assert check(lambda p, p_bar: p_bar * p * (1 - p)).startswith("✘ got")  # the diagonal only
    assert check(lambda p, p_bar: np.dot(p_bar, p)).startswith("✘ the result has shape ()")


@pytest.fixture
def layer_norm(ch09):
    """The chapter's colleague's op, with the stub's, the solution's and the colleague's three rules;
    the op leaves the table afterwards, so that other tests see the engine's own ops only."""
    try:
        stub, check = exercise_cells(ch09, "ch09-layer-norm")
        namespace = cells_run(ch09, CH09_IMPORTS, "ch09-layer-norm-op", stub.id, check.id)
        names = [f"layer_norm_{argument}_rule" for argument in ("x", "gamma", "beta")]
        blank = [namespace[name] for name in names]
        exec(coding_solutions(ch09)["ch09-layer-norm"], namespace)
        solved = [namespace[name] for name in names]
        planted = [tensor.VJP_RULES["layer_norm"].rules[i] for i in range(3)]
        yield namespace, blank, solved, planted
    finally:
        tensor.VJP_RULES.pop("layer_norm", None)


def test_chapter_9_layer_norm_check_finds_the_planted_rules_and_accepts_the_fix(layer_norm):
    namespace, blank, solved, planted = layer_norm
    check = namespace["check_layer_norm_rules"]
    assert verdict(check, *blank).startswith("✘ the rules are not written yet")
    assert verdict(check, *solved).startswith("✔ all three rules are right")
    assert tensor.VJP_RULES["layer_norm"].rules[0] is planted[0], "the check puts the colleague's rules back"
    # the colleague's rules: x's fails gradcheck on every shape, gamma's only off a batch of rows
    assert verdict(check, *planted).startswith(
        "✘ x of shape (4, 5) (input 0 is x, 1 gamma, 2 beta): gradcheck failed at input 0"
    )
    assert verdict(check, solved[0], planted[1], solved[2]).startswith(
        "✘ x of shape (5,): ValueError: the VJP rule of 'layer_norm' for argument 1 returned shape ()"
    )
    assert verdict(check, solved[0], solved[1], planted[2]).startswith("✔"), "beta's rule was right"
    exec(
        "def half_x_rule(g, out, x, gamma, beta):\n"  # the mean's share only: a typical slip
        "    x_hat, std = normalised(x)\n"
        "    g_hat = g * gamma\n"
        "    return (g_hat - g_hat.mean(axis=-1, keepdims=True)) / std\n",
        namespace,
    )
    assert "gradcheck failed at input 0" in verdict(check, namespace["half_x_rule"], solved[1], solved[2])


def test_chapter_9_layer_norm_solution_states_what_the_hunt_finds(ch09, layer_norm):
    namespace, *_, planted = layer_norm
    rng = np.random.default_rng(0)
    shapes = {}
    for shape in [(5,), (2, 3, 6)]:
        x = Tensor(rng.normal(size=shape))
        gamma, beta = Tensor(np.ones(shape[-1])), Tensor(np.zeros(shape[-1]))
        out = namespace["layer_norm"](x, gamma, beta)
        shapes[shape] = planted[1](Tensor(np.ones(shape)), out, x, gamma, beta).shape
    assert shapes == {(5,): (), (2, 3, 6): (3, 6)}
    answer = solution(ch09, "ch09-layer-norm")
    assert "returns a number" in answer and "`(3, 6)`" in answer and "rule for `beta` was right" in answer


def test_chapter_9_shows_the_nan_that_where_lets_through(ch09):
    x = Tensor([0.0, 4.0], requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        x.sqrt().sum().backward()
        assert np.array_equal(x.grad, [np.inf, 0.25])
        x.grad = None
        tensor.where(x.data > 0, x.sqrt(), 0.0).sum().backward()
    assert np.isnan(x.grad[0]) and x.grad[1] == 0.25
    text = printed_by(ch09, "ch09-nan")
    assert shows(text, "sqrt(x) at x = 0 and 4:", np.inf, 0.25) and shows(text, "0) at 0 and 4:", np.nan, 0.25)
    assert listed(text, "warnings:") == ["divide by zero encountered in divide", "invalid value encountered in divide"]


def test_chapter_9_distances_check_tells_right_from_wrong(ch09):
    stub, check = exercise_cells(ch09, "ch09-distances")
    namespace = cells_run(ch09, CH09_IMPORTS, stub.id, check.id)
    check = namespace["check_pairwise_distances"]
    assert verdict(check, namespace["pairwise_distances"]).startswith("✘ pairwise_distances is not written yet")
    exec(coding_solutions(ch09)["ch09-distances"], namespace)
    assert verdict(check, namespace["pairwise_distances"]).startswith("✔")

    def differences(X):
        n, d = X.shape
        diff = X.reshape(n, 1, d) - X.reshape(1, n, d)
        return (diff * diff).sum(axis=-1)

    def naive(X):
        return differences(X).sqrt()

    def one_where(X):  # hides the root's output, not its input
        squared = differences(X)
        return tensor.where(squared.data > 0, squared.sqrt(), 0.0)

    def epsilon(X):
        return (differences(X) + 1e-12).sqrt()

    def numpy_only(X):
        return Tensor(np.sqrt(differences(Tensor(X.data)).data))

    assert (
        verdict(check, naive)
        == verdict(check, one_where)
        == ("✘ points of shape (5, 3): NaN in the gradient, so a square root still receives a zero")
    )
    assert verdict(check, epsilon).startswith("✘ points of shape (5, 3): distances off by up to 1.0e-06")
    assert verdict(check, numpy_only).startswith("✘ points of shape (5, 3): RuntimeError: backward() on a Tensor")
    assert np.sqrt(1e-12) == pytest.approx(1e-6)
    assert mentions(solution(ch09, "ch09-distances"), 1e-6, near="zero ones by", within=20)


def test_chapter_8_lists_the_op_table_and_explains_first_order(ch08):
    text = printed_by(ch08, "ch08-registry")
    table = set(tensor.OPS) - set(HIGHER_ORDER)  # as chapter 8 has it: course_lib.loop adds scan when imported
    assert text.startswith(f"{len(table)} primitives: ") and "first_order" in text
    assert set(text.split(": ", 1)[1].strip().split(", ")) == table
    prose = markdown(ch08)
    assert "`first_order`" in prose and re.search(r"\bversion (?:number|counter)\b", prose)


def test_show_rules_lists_the_rules_without_the_test_keywords(ch08, ch09):
    for nb in (ch08, ch09):
        shown_rules = "".join(
            out.data["text/plain"]
            for cell in nb.cells
            if "show_rules(" in cell.source
            for out in cell.outputs
            if "data" in out
        )
        assert 'defvjp("tanh", lambda g, out, a: g * (1.0 - out * out))' in shown_rules
        assert "sample=" not in shown_rules and "torch=" not in shown_rules


# ---- issue 22: coding exercises that make the reader debug ------------------------------------

NEW_OPS = ("softplus", "hypot", "flip")


def ch08_exercise(ch08, k: int, code: str) -> str:
    """What chapter 8's k-th coding exercise check prints after ``code`` (the reader's cell) has run
    in a fresh namespace, after the cell that gives the engine its three new operations."""
    namespace: dict = {"np": np, "tensor": tensor, "Tensor": Tensor}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(tagged(ch08, "ch08-planted")[0].source, namespace)
            exec(code, namespace)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(tagged(ch08, "exercise-check")[k].source, namespace)
    finally:
        for name in NEW_OPS:  # leave the engine's table as it was
            tensor.VJP_RULES.pop(name, None)
    assert not any(name.startswith("_") for name in tensor.VJP_RULES), "the check removes its throwaway ops"
    return out.getvalue()


def solution_code(nb, label: str) -> str:
    return re.search(r"```python\n(.*?)```", solution(nb, label), re.S).group(1)


def test_chapter_8_wrong_rules_exercise_check_tells_right_from_wrong(ch08):
    assert (
        tagged(ch08, "exercise-stub")[1]
        .source.rstrip()
        .endswith('raise NotImplementedError("write the function, then fix the rules it finds wrong")')
    )
    code = solution_code(ch08, "ch08-wrong-rules")
    assert ch08_exercise(ch08, 1, tagged(ch08, "exercise-stub")[1].source).startswith("not done yet")
    assert ch08_exercise(ch08, 1, code).startswith("correct")
    finding = code.split("tensor.defvjp")[0]  # the reader's function, the rules not fixed yet
    mistakes = {
        "a plain sum": (
            code.replace("(op(*xs) * weights).sum()", "op(*xs).sum()"),
            "not yet: passes_gradcheck accepts a transpose",
        ),
        "positive inputs only": (
            code.replace("rng.normal(size=shape)", "rng.uniform(0.5, 2.0, size=shape)"),
            "not yet: passes_gradcheck accepts an abs",
        ),
        "the rules not fixed": (finding, "not yet: passes_gradcheck works; now fix the rules of hypot and flip"),
        "only hypot fixed": (
            code.split('tensor.defvjp("flip"')[0],
            "not yet: passes_gradcheck works; now fix the rules of flip",
        ),
        "every rule rejected": (
            code.replace("return True", "return False"),
            "not yet: passes_gradcheck rejects x.tanh()",
        ),
    }
    for name, (wrong, expected) in mistakes.items():
        assert ch08_exercise(ch08, 1, wrong).startswith(expected), name
    namespace: dict = {"np": np, "tensor": tensor, "Tensor": Tensor}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(tagged(ch08, "ch08-planted")[0].source, namespace)
            exec(finding, namespace)
    finally:
        for name in NEW_OPS:
            tensor.VJP_RULES.pop(name, None)
    assert out.getvalue() == "True False False\n" and "`True False False`" in solution(ch08, "ch08-wrong-rules")


def test_chapter_8_nan_where_exercise_check_tells_right_from_wrong(ch08):
    code = solution_code(ch08, "ch08-nan-where")
    assert ch08_exercise(ch08, 2, tagged(ch08, "exercise-stub")[2].source).startswith("not done yet")
    assert ch08_exercise(ch08, 2, code).startswith("correct")
    naive = "def row_norms(V):\n    s = (V * V).sum(axis=1)\n    return tensor.where(s.data > 0, s.sqrt(), 0.0)\n"
    assert "The NaNs are in the rows of zeros" in ch08_exercise(ch08, 2, naive)
    epsilon = "def row_norms(V):\n    return ((V * V).sum(axis=1) + 1e-12).sqrt()\n"
    assert ch08_exercise(ch08, 2, epsilon).startswith("not yet: the lengths are [5.0000000000000995, 1e-06,")
    assert "1e-06" in ch08_exercise(ch08, 2, epsilon) and mentions(solution(ch08, "ch08-nan-where"), np.sqrt(1e-12))
    python_if = (
        "def row_norms(V):\n    s = (V * V).sum(axis=1)\n"
        "    return s.sqrt() if (s.data > 0).all() else Tensor(np.sqrt(s.data))\n"
    )
    assert ch08_exercise(ch08, 2, python_if).startswith(
        "not yet: the backward pass of a weighted sum of the lengths raised RuntimeError"
    )
    text = markdown(ch08)
    assert "tensor.where(s.data > 0, s.sqrt(), 0.0)" in text and "double `where`" in text
