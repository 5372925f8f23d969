"""Chapters 10 (*Neural networks*) and 13 (*The same in PyTorch and JAX*): the numbers the
chapters print, recomputed here with course_lib (and PyTorch / JAX as oracles), and the
executed notebooks really showing them.

Chapter 10: MLP([4, 16, 3], rng=0) on the stratified Iris split with seed 4 (120/30),
standardised with training statistics, 100 epochs of SGD (lr 0.1, minibatches of 16 shuffled
by default_rng(1)): 29/30 held out; the same run in PyTorch gives the same losses.
Chapter 13: L = b((a+b)(a-b)) at (1, 2): gradient (4, -11), Hessian [[4, 2], [2, -12]]; the Iris
MLP loss on 8 flowers traced, jitted and vmapped by course_lib and by JAX, to the same numbers.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from notebook_text import cells_run, coding_solutions, exercise_run, markdown, printed, printed_by, solution, tagged
from paths import BOOK
from prose_numbers import lines_with, listed, mentions, mentions_all, shows
from prose_numbers import section as prose_section

from course_lib.datasets import load_iris
from course_lib.forward import jvp as forward_jvp
from course_lib.functional import grad, hessian
from course_lib.nn import MLP, SGD, cross_entropy
from course_lib.scalar import Value
from course_lib.tensor import no_grad

CH10 = BOOK / "10_neural_networks.ipynb"
CH13 = BOOK / "13_pytorch_and_jax.ipynb"
SPLIT_SEED, EPOCHS, BATCH, LR = 4, 100, 16, 0.1
# torch.func's forward mode scripts a helper with torch.jit.script, which torch 2.13 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


# ---- chapter 10: the training run, restated -------------------------------------------


def stratified_split(labels, n_test_per_class, seed):
    rng = np.random.default_rng(seed)
    test = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:n_test_per_class] for c in np.unique(labels)])
    return np.setdiff1d(np.arange(len(labels)), test), np.sort(test)


def iris_split(seed=SPLIT_SEED):
    X, y, _, _ = load_iris()
    train, test = stratified_split(y, 10, seed)
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    return (X[train] - mean) / std, y[train], (X[test] - mean) / std, y[test], test


def train_course_lib(X_train, y_train):
    model = MLP([4, 16, 3], rng=0)
    optimiser = SGD(model.parameters(), lr=LR)
    order_rng = np.random.default_rng(1)
    losses = []
    for _ in range(EPOCHS):
        order = order_rng.permutation(len(y_train))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            optimiser.zero_grad()
            loss = cross_entropy(model(X_train[rows]), y_train[rows])
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
    return model, np.array(losses)


@pytest.fixture(scope="module")
def run():
    X_train, y_train, X_test, y_test, test_idx = iris_split()
    model, losses = train_course_lib(X_train, y_train)
    with no_grad():
        predicted = model(X_test).data.argmax(axis=1)
    return dict(
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        test_idx=test_idx,
        model=model,
        losses=losses,
        predicted=predicted,
    )


def test_split_is_stratified_120_30(run):
    assert np.bincount(run["y_train"]).tolist() == [40, 40, 40]
    assert np.bincount(run["y_test"]).tolist() == [10, 10, 10]
    assert np.allclose(run["X_train"].mean(axis=0), 0) and np.allclose(run["X_train"].std(axis=0), 1)
    assert not np.allclose(run["X_test"].mean(axis=0), 0, atol=1e-3), "test set must use training statistics"


def test_training_reaches_29_of_30_held_out(run):
    assert len(run["losses"]) == EPOCHS * 8
    assert run["losses"][:8].mean() > 0.9 and run["losses"][-8:].mean() < 0.1
    assert int(np.sum(run["predicted"] == run["y_test"])) == 29


def test_the_one_mistake_is_flower_133_virginica_as_versicolor(run):
    wrong = np.flatnonzero(run["predicted"] != run["y_test"])
    assert run["test_idx"][wrong].tolist() == [133]
    assert (run["y_test"][wrong].tolist(), run["predicted"][wrong].tolist()) == ([2], [1])


def test_backprop_formulas_of_the_chapter_match_backward():
    X_train, y_train, *_ = iris_split()
    probe = MLP([4, 16, 3], rng=0)
    cross_entropy(probe(X_train), y_train).backward()
    (W1, b1), (W2, b2) = [(layer.weight.data, layer.bias.data) for layer in probe.layers]
    A1 = X_train @ W1 + b1
    H = np.maximum(A1, 0)
    logits = H @ W2 + b2
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    Z_bar = (P - np.eye(3)[y_train]) / len(y_train)
    A1_bar = (Z_bar @ W2.T) * (A1 > 0)
    for p, manual in zip(probe.parameters(), [X_train.T @ A1_bar, A1_bar.sum(0), H.T @ Z_bar, Z_bar.sum(0)]):
        np.testing.assert_allclose(p.grad, manual, rtol=1e-12, atol=1e-15)


def test_pytorch_run_from_the_same_weights_gives_the_same_losses(run):
    torch = pytest.importorskip("torch")
    start = MLP([4, 16, 3], rng=0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).double()
    with torch.no_grad():
        for ours, theirs in zip(start.layers, [net[0], net[2]]):
            theirs.weight.copy_(torch.tensor(ours.weight.data.T))
            theirs.bias.copy_(torch.tensor(ours.bias.data))
    optimiser = torch.optim.SGD(net.parameters(), lr=LR)
    features, labels = torch.from_numpy(run["X_train"]), torch.from_numpy(run["y_train"])
    order_rng = np.random.default_rng(1)
    losses = []
    for _ in range(EPOCHS):
        order = order_rng.permutation(len(labels))
        for start_row in range(0, len(order), BATCH):
            rows = torch.from_numpy(order[start_row : start_row + BATCH])
            optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(features[rows]), labels[rows])
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
    assert np.abs(np.array(losses) - run["losses"]).max() < 1e-10
    for ours, theirs in zip(run["model"].layers, [net[0], net[2]]):
        np.testing.assert_allclose(ours.weight.data, theirs.weight.detach().numpy().T, rtol=0, atol=1e-10)


# ---- chapter 13: the scalar example in three libraries -----------------------------------


def L(a, b):
    return b * ((a + b) * (a - b))


def L_vec(x):
    return L(x[0], x[1])


HESSIAN = [[4.0, 2.0], [2.0, -12.0]]


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_course_lib_gradient_and_hessian():
    a, b = Value(1.0), Value(2.0)
    out = L(a, b)
    out.backward()
    assert (out.data, a.grad, b.grad) == (-6.0, 4.0, -11.0)
    assert [g.item() for g in grad(L, argnum=(0, 1))(1.0, 2.0)] == [4.0, -11.0]
    assert hessian(L_vec)(np.array([1.0, 2.0])).data.tolist() == HESSIAN
    assert [grad(grad(L, argnum=i), argnum=j)(1.0, 2.0).item() for i, j in [(0, 0), (0, 1), (1, 1)]] == [
        4.0,
        2.0,
        -12.0,
    ]
    assert [forward_jvp(L, (1.0, 2.0), v)[1] for v in [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]] == [4.0, -11.0, -7.0]


def test_pytorch_gradient_and_hessian():
    torch = pytest.importorskip("torch")
    a = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    L(a, b).backward()
    assert (a.grad.item(), b.grad.item()) == (4.0, -11.0)
    assert torch.func.hessian(L_vec)(torch.tensor([1.0, 2.0], dtype=torch.float64)).tolist() == HESSIAN
    a = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    da, db = torch.autograd.grad(L(a, b), (a, b), create_graph=True)
    rows = [torch.autograd.grad(da, (a, b), retain_graph=True), torch.autograd.grad(db, (a, b))]
    assert [[r.item() for r in row] for row in rows] == HESSIAN
    primals = (torch.tensor(1.0, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64))
    tangent = (torch.tensor(1.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
    assert torch.func.jvp(L, primals, tangent)[1].item() == -7.0


def test_jax_gradient_and_hessian(jax):
    assert [float(g) for g in jax.grad(L, argnums=(0, 1))(1.0, 2.0)] == [4.0, -11.0]
    assert np.asarray(jax.hessian(L_vec)(jax.numpy.array([1.0, 2.0]))).tolist() == HESSIAN
    assert float(jax.jvp(L, (1.0, 2.0), (1.0, 1.0))[1]) == -7.0
    assert float(jax.grad(jax.grad(L))(1.0, 2.0)) == 4.0


def test_chapter13_curve_derivatives_agree_with_the_formulas(jax):
    from course_lib import tensor as ct

    xs = np.linspace(-4, 4, 161)
    df = grad(lambda x: (ct.sin(3 * x) * ct.exp(-x * x / 4)).sum())
    d2f = grad(lambda x: df(x).sum())
    envelope = np.exp(-(xs**2) / 4)
    exact1 = envelope * (3 * np.cos(3 * xs) - xs / 2 * np.sin(3 * xs))
    exact2 = envelope * ((xs**2 / 4 - 9.5) * np.sin(3 * xs) - 3 * xs * np.cos(3 * xs))
    assert np.abs(df(xs).data - exact1).max() < 1e-13
    assert np.abs(d2f(xs).data - exact2).max() < 1e-13

    def f_jax(x):
        return jax.numpy.sin(3 * x) * jax.numpy.exp(-x * x / 4)

    assert np.abs(np.asarray(jax.vmap(jax.grad(jax.grad(f_jax)))(xs)) - exact2).max() < 1e-13


# ---- the executed notebooks ------------------------------------------------------------


def test_chapter10_prints_the_recomputed_held_out_accuracy(run):
    text = printed_by(CH10, "ch10-train")
    accuracy = re.search(r"held-out accuracy after 100 epochs: (\d+)/(\d+) = ([\d.]+)%", text)
    assert accuracy, f"the training cell should print the held-out accuracy, it printed:\n{text}"
    correct, total = int(accuracy.group(1)), int(accuracy.group(2))
    assert (correct, total) == (int(np.sum(run["predicted"] == run["y_test"])), 30)
    assert accuracy.group(3) == f"{100 * correct / total:.1f}"


def test_chapter10_prints_the_confusion_matrix(run):
    text = printed_by(CH10, "ch10-confusion")
    rows = [list(map(int, r)) for r in re.findall(r"^true \w+\s+(\d+)\s+(\d+)\s+(\d+)\s*$", text, re.M)]
    expected = np.zeros((3, 3), dtype=int)
    np.add.at(expected, (run["y_test"], run["predicted"]), 1)
    assert rows == expected.tolist()


def test_chapter10_prints_parameter_gradient_shapes_and_checks():
    text = printed_by(CH10, "ch10-probe")
    assert "131 parameters" in text
    for name, shape in [
        ("layers[0].weight", "(4, 16)"),
        ("layers[0].bias", "(16,)"),
        ("layers[1].weight", "(16, 3)"),
        ("layers[1].bias", "(3,)"),
    ]:
        assert re.search(re.escape(name) + r"\s+" + re.escape(shape) + r"\s+" + re.escape(shape), text), name
    checks = printed_by(CH10, "ch10-gradcheck")
    assert checks.count("formula matches backward(): True") == 4 and "False" not in checks


def test_chapter10_split_table_matches_recomputation():
    text = printed_by(CH10, "ch10-splits")
    accuracies = {int(s): int(n) for s, n in re.findall(r"split seed (\d+): held-out accuracy\s+(\d+)/30", text)}
    assert sorted(accuracies) == list(range(6))
    for seed in (0, 5):  # two of them, recomputed (each is a full training run)
        X_train, y_train, X_test, y_test, _ = iris_split(seed)
        model, _ = train_course_lib(X_train, y_train)
        with no_grad():
            assert accuracies[seed] == int(np.sum(model(X_test).data.argmax(axis=1) == y_test))


def test_chapter10_prints_pytorch_agreement():
    text = printed_by(CH10, "ch10-torch")
    assert shows(lines_with(text, "minibatch losses"), "", 800, 1e-10, True)  # compared, all agree to 1e-10
    assert shows(text, "final weights", 1e-10, True)
    assert shows(text, "PyTorch", 29, 30)  # held-out accuracy


@pytest.mark.parametrize(
    "tag, expected",
    [
        (
            "ch13-reverse-oo",
            [
                "course_lib Value    L = -6   dL/da = 4   dL/db = -11",
                "PyTorch backward()  L = -6   dL/da = 4   dL/db = -11",
            ],
        ),
        (
            "ch13-reverse-functional",
            [
                "jax.value_and_grad            L = -6   dL/da = 4   dL/db = -11",
                "course_lib.functional         L = -6   dL/da = 4   dL/db = -11",
            ],
        ),
        (
            "ch13-hessian",
            [
                "course_lib.functional.hessian  [[4.0, 2.0], [2.0, -12.0]]",
                "torch.func.hessian             [[4.0, 2.0], [2.0, -12.0]]",
                "jax.hessian                    [[4.0, 2.0], [2.0, -12.0]]",
            ],
        ),
        ("ch13-torch-second", ["Hessian, row by row: [[4.0, 2.0], [2.0, -12.0]]"]),
        ("ch13-stop", ["course_lib: 4.0", "PyTorch:    4.0", "JAX:        4.0"]),
    ],
)
def test_chapter13_prints_the_numbers(tag, expected):
    text = printed_by(CH13, tag)
    for piece in expected:
        assert piece in text, f"cell {tag!r} should print {piece!r}, it printed:\n{text}"


def test_chapter13_tables_of_jvps_and_second_derivatives():
    rows = re.findall(r"^\((\S+), (\S+)\)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", printed_by(CH13, "ch13-jvp"), re.M)
    assert [[float(v) for v in row[2:]] for row in rows] == [[4.0] * 4, [-11.0] * 4, [-7.0] * 4]
    nested = printed_by(CH13, "ch13-nested")
    for library in ("course_lib grad(grad)", "jax.grad(jax.grad)"):
        assert re.search(re.escape(library) + r"\s+4\s+2\s+-12\s*$", nested, re.M), library
    curves = printed_by(CH13, "ch13-curves")
    assert curves.count("below 1e-13: True") == 3


# ---- issue 14: chapter 10's affine, exercise and summary; exercises in chapters 10 to 13 ----


def test_chapter10_explains_affine_as_one_node_with_the_same_values_and_gradients():
    from course_lib.tensor import Tensor, affine

    rng = np.random.default_rng(0)
    x = Tensor(rng.normal(size=(5, 4)))
    W, b = Tensor(rng.normal(size=(4, 3)), requires_grad=True), Tensor(rng.normal(size=3), requires_grad=True)
    G = rng.normal(size=(5, 3))
    affine(x, W, b).backward(G)
    assert np.allclose(W.grad, x.data.T @ G) and np.allclose(b.grad, G.sum(axis=0))
    text = printed_by(CH10, "ch10-affine")
    assert "affine" in lines_with(text, "nodes:")
    assert shows(text, "same values:", True, True)  # and the same gradients


CH10_IMPORTS = "cell-03"  # the chapter's import cell


def ch10_exercise(label, **values):
    """The namespace of chapter 10's coding exercise ``label`` (see ``exercise_run``)."""
    return exercise_run(CH10, CH10_IMPORTS, label, **values)


def test_chapter10_has_three_coding_exercises_two_of_them_programs():
    code = coding_solutions(CH10)
    assert list(code) == ["ch10-linear-backward", "ch10-mlp-backward", "ch10-per-example"]
    long = [label for label, source in code.items() if len([line for line in source.splitlines() if line.strip()]) >= 6]
    assert long == ["ch10-mlp-backward", "ch10-per-example"]
    checks = tagged(CH10, "exercise-check")
    assert len(checks) == 3 and all(printed([c]).startswith("✘") and "not written yet" in printed([c]) for c in checks)


def test_chapter10_linear_backward_exercise_check_tells_right_from_wrong():
    namespace = ch10_exercise("ch10-linear-backward")
    check = namespace["check_linear_backward"]
    assert check(namespace["linear_backward"]).startswith("✘ linear_backward is not written yet")
    assert check(lambda x, W, G: (G @ W.T, x.T @ G, G.sum(axis=0))).startswith("✔")
    assert check(lambda x, W, G: (G @ W.T, x.T @ G, G.mean(axis=0))) == (
        "✘ b_bar is the mean of G over the rows: the bias is added to every row, so sum them"
    )  # the mean slip of the solution
    assert check(lambda x, W, G: (G @ W.T, x.T @ G, G[0])) == "✘ b_bar has the right shape but different numbers"
    assert check(lambda x, W, G: (G @ W.T, x.T @ G, G.sum(axis=0, keepdims=True))).startswith(
        "✘ b_bar has shape (1, 3)"
    )


def test_chapter10_mlp_backward_check_tells_right_from_wrong(run):
    namespace = ch10_exercise("ch10-mlp-backward", X_train=run["X_train"], y_train=run["y_train"])
    check = namespace["check_mlp_backward"]
    assert check(namespace["mlp_backward"]).startswith("✘ mlp_backward is not written yet")
    exec(coding_solutions(CH10)["ch10-mlp-backward"], namespace)
    mlp_backward = namespace["mlp_backward"]
    assert check(mlp_backward) == "✔ mlp_backward: every gradient of all 4 networks equals backward()'s"

    slip = coding_solutions(CH10)["ch10-mlp-backward"].replace(
        "h = np.maximum(z, 0) if k < len(weights) - 1 else z", "h = np.maximum(z, 0)"
    )  # a ReLU after the last layer too
    assert slip != coding_solutions(CH10)["ch10-mlp-backward"]
    exec(slip.replace("def mlp_backward", "def relu_at_the_end"), namespace)

    def sum_not_mean(weights, biases, X, y):  # the 1/N forgotten
        weight_grads, bias_grads = mlp_backward(weights, biases, X, y)
        return [g * len(y) for g in weight_grads], [g * len(y) for g in bias_grads]

    def two_layers_only(weights, biases, X, y):
        return mlp_backward(weights[:2], biases[:2], X, y)

    assert check(namespace["relu_at_the_end"]).startswith("✘ MLP([4, 16, 3]): the gradient of layers[")
    assert check(sum_not_mean).startswith("✘ MLP([4, 16, 3]): the gradient of layers[0].weight differs")
    assert check(two_layers_only).startswith("✘ MLP([4, 8, 8, 3]): 2 weight and 2 bias gradients, expected 3")


def test_chapter10_per_example_check_tells_right_from_wrong(run):
    from course_lib.tensor import backprop, gradients

    model = run["model"]
    namespace = ch10_exercise("ch10-per-example", X_train=run["X_train"], y_train=run["y_train"], model=model)
    check = namespace["check_per_example_gradients"]
    assert check(namespace["per_example_gradients"]).startswith("✘ per_example_gradients is not written yet")
    exec(coding_solutions(CH10)["ch10-per-example"], namespace)
    solved = namespace["per_example_gradients"]
    assert (
        check(solved)
        == "✔ per_example_gradients: all 120 flowers' gradients of every layer right, from one backward pass"
    )
    assert backprop._hooks == [] and all(p.grad is None for p in model.parameters())  # the counter removed

    def loop(model, X, y):  # right, at the price of one backward pass per flower
        rows = [gradients(cross_entropy(model(X[n : n + 1]), y[n : n + 1]), model.parameters()) for n in range(len(y))]
        return [
            tuple(np.stack([r[i].data for r in rows]) for i in (2 * k, 2 * k + 1)) for k in range(len(model.layers))
        ]

    def of_the_mean(model, X, y):  # every row carries the 1/N of the mean loss
        return [(w / len(y), b / len(y)) for w, b in solved(model, X, y)]

    def pre_activations(model, X, y):  # the layer's output instead of its input in the outer product
        pairs = solved(model, X, y)
        return [(np.einsum("nj,nk->njk", b, b), b) for _, b in pairs]

    assert check(loop) == "✘ 120 backward passes: get all 120 flowers' gradients from one"
    assert check(of_the_mean).endswith("differs, divided by N: a flower's own loss is not")
    assert check(pre_activations).startswith("✘ layers[0].weight: shape (120, 16, 16), expected (120, 4, 16)")


def test_chapter10_per_example_solution_states_who_drives_training(run):
    namespace = cells_run(CH10, CH10_IMPORTS)
    exec(coding_solutions(CH10)["ch10-per-example"], namespace)
    model, X_train, y_train = run["model"], run["X_train"], run["y_train"]
    pairs = namespace["per_example_gradients"](model, X_train, y_train)
    model.zero_grad()
    norms = np.sqrt(sum((w**2).sum(axis=(1, 2)) + (b**2).sum(axis=1) for w, b in pairs))
    largest = np.argsort(norms)[::-1][:5]
    with no_grad():
        probabilities = model(X_train).softmax().data
    assert (y_train[largest] == 1).all() and (probabilities[largest, 2] > 0.35).all()  # versicolors near virginica
    share, ratio = norms[largest].sum() / norms.sum(), norms.max() / np.median(norms)
    assert 0.45 < share < 0.55 and round(ratio, -1) == 200
    answer = solution(CH10, "ch10-per-example")
    assert "make up half of the sum of all 120 gradient norms" in answer
    assert mentions(answer, ratio, near="times", within=20)


# ---- issue 21: chapter 13's course_lib make_program, jit and vmap next to JAX's ----


def mlp_loss(w1, b1, w2, b2, x, onehot, nn):
    """The chapter's loss, written once for course_lib.tensor and jax.nn."""
    h = nn.relu(x @ w1 + b1)
    return -(nn.log_softmax(h @ w2 + b2, axis=-1) * onehot).sum(axis=-1).mean()


@pytest.fixture(scope="module")
def flowers():
    X, y, *_ = load_iris()
    params = [p.data for p in MLP([4, 16, 3], rng=0).parameters()]
    return params, X[::19], np.eye(3)[y[::19]], y[::19]


def pinned(package: str) -> str:
    """The version of ``package`` that requirements.lock pins."""
    lock = (BOOK.parent / "requirements.lock").read_text()
    return re.search(rf"^{package}==(\S+)", lock, re.M).group(1)


def test_chapter13_prints_the_program_and_the_jaxpr_of_the_mlp_loss(jax, flowers):
    from functools import partial

    import course_lib.tensor as ct
    from course_lib.trace import make_program

    params, x8, onehot8, labels = flowers
    text = printed_by(CH13, "ch13-make-program")
    assert str(make_program(partial(mlp_loss, nn=ct), *params, x8, onehot8)) in text
    assert listed(text, "classes") == labels.tolist()
    assert listed(text, "parameter shapes") == [p.shape for p in params]
    assert labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]  # "three of each of the first two species, two of the third"
    # printed by the version the lock pins, as the prose says
    assert jax.__version__ == pinned("jax") == "0.10.2"
    jax.config.update("jax_pprint_use_color", False)
    jaxpr = str(jax.make_jaxpr(partial(mlp_loss, nn=jax.nn))(*params, x8, onehot8))
    assert printed_by(CH13, "ch13-make-jaxpr").strip() == jaxpr
    # the wrappers the prose names (printed as `jit`, not `pjit`, since JAX 0.7)
    for name in ("dot_general", "broadcast_in_dim", "custom_jvp_call", "jit[\n      name=log_softmax", "reduce_sum"):
        assert name in jaxpr, name
    assert "pjit" not in jaxpr
    section = prose_section(markdown(CH13), "`course_lib`'s `make_program`")
    assert mentions_all(section, [4, 16, 3, 8], near="Iris flowers")
    assert mentions_all(section, [0.7], near="pjit") and f"JAX {pinned('jax')}, the version" in section


def test_chapter13_course_lib_jit_and_vmap_give_jax_numbers(jax, flowers):
    from functools import partial

    import course_lib.tensor as ct
    from course_lib.functional import value_and_grad
    from course_lib.jit import jit
    from course_lib.vmap import vmap

    params, x8, onehot8, _ = flowers
    ours, theirs = partial(mlp_loss, nn=ct), partial(mlp_loss, nn=jax.nn)
    argnums = (0, 1, 2, 3)
    value, grads = jit(value_and_grad(ours, argnum=argnums))(*params, x8, onehot8)
    eager_value, eager_grads = value_and_grad(ours, argnum=argnums)(*params, x8, onehot8)
    value_jax, grads_jax = jax.jit(jax.value_and_grad(theirs, argnums=argnums))(*params, x8, onehot8)
    assert value.item() == eager_value.item()
    assert all(np.array_equal(g.data, e.data) for g, e in zip(grads, eager_grads))
    assert abs(value.item() - float(value_jax)) < 1e-15
    assert all(np.abs(g.data - np.asarray(j)).max() < 1e-15 for g, j in zip(grads, grads_jax))
    text = printed_by(CH13, "ch13-course-jit")
    assert shows(text, "course_lib jit   loss", value.item()) and shows(text, "jax.jit          loss", float(value_jax))
    assert shows(text, "bit for bit:", True) and shows(text, "below 1e-15:", True)
    assert shows(text, "two batch sizes:", 2)

    in_axes = (None, None, None, None, 0, 0)
    per_example = vmap(grad(ours, argnum=argnums), in_axes=in_axes)(*params, x8, onehot8)
    per_example_jax = jax.vmap(jax.grad(theirs, argnums=argnums), in_axes=in_axes)(*params, x8, onehot8)
    looped = [grad(ours, argnum=argnums)(*params, x, t) for x, t in zip(x8, onehot8)]
    for k, (g, j) in enumerate(zip(per_example, per_example_jax)):
        assert g.shape == j.shape == (8, *params[k].shape)
        assert np.array_equal(g.data, np.stack([row[k].data for row in looped]))
        assert np.abs(g.data - np.asarray(j)).max() < 1e-15
        assert np.allclose(g.data.mean(axis=0), eager_grads[k].data, rtol=0, atol=1e-15)
    text = printed_by(CH13, "ch13-course-vmap")
    assert lines_with(text, "course_lib vmap:").endswith(str([g.shape for g in per_example]))
    assert shows(text, "bit for bit:", True) and shows(text, "below 1e-15:", True)
    assert shows(text, "batch loss:", True)
    summary = prose_section(markdown(CH13), "Summary")
    assert mentions_all(summary, [1e-15], near="JAX's to within")


def test_chapter13_shows_what_each_transformation_passes_the_function(jax):
    from course_lib.jit import jit
    from course_lib.vmap import vmap

    def seen_by(transform, x):
        seen = []
        transform(lambda v: seen.append(type(v).__name__) or (v * v).sum())(x)
        return seen[0]

    one, batch = np.ones(3), np.ones((2, 3))
    cases = [
        ("jit", jax.jit, jit, one),
        ("vmap", jax.vmap, vmap, batch),
        ("jit(vmap(f))", lambda f: jax.jit(jax.vmap(f)), lambda f: jit(vmap(f)), batch),
        ("grad", jax.grad, grad, one),
    ]
    rows = printed_by(CH13, "ch13-tracers").splitlines()[1:]
    assert [row.split() for row in rows] == [[name, seen_by(a, x), seen_by(b, x)] for name, a, b, x in cases]
    assert [row.split()[2] for row in rows] == ["Tracer", "Tracer", "Tracer", "Tensor"]  # what the prose explains
