"""The coding exercises of chapters 13 (*The same in PyTorch and JAX*) and 14 (*How fast is it?*):
each check, run on the stub the reader sees, says "not written yet"; run on a typical mistake, it
says "not yet" with a hint for that mistake; run on the published solution, it says "correct".
The numbers their solutions state are recomputed here."""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
from functools import partial

import nbformat
import numpy as np
import pytest
from notebook_text import exercises, markdown, printed, solution
from paths import BOOK
from prose_numbers import mentions_all

CH13 = BOOK / "13_pytorch_and_jax.ipynb"
CH14 = BOOK / "14_performance.ipynb"
# torch.func's forward mode scripts a helper with torch.jit.script, which torch 2.13 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def ch13():
    return nbformat.read(CH13, as_version=4)


@pytest.fixture(scope="module")
def ch14():
    return nbformat.read(CH14, as_version=4)


def exercise_cells(nb, label: str) -> tuple:
    """The stub and the check that follow the question of the coding exercise ``label``."""
    at = [cell.get("id") for cell in nb.cells].index(label)
    stub, check = nb.cells[at + 1 : at + 3]
    assert "exercise-stub" in stub.metadata.tags and "exercise-check" in check.metadata.tags, label
    assert "raise NotImplementedError" in stub.source
    assert "hide-input" in check.metadata.tags
    assert printed([check]).startswith("✘ not written yet"), "the committed chapter shows the check run on the stub"
    return stub, check


def run(namespace: dict, *sources: str) -> str:
    """What ``sources`` print when run one after another in ``namespace``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for source in sources:
            exec(source, namespace)
    return out.getvalue()


def solution_code(nb, label: str) -> str:
    """The Python code of the solution to ``label``."""
    return re.search(r"```python\n(.*?)```", solution(nb, label), re.S).group(1)


def slip(code: str, old: str, new: str) -> str:
    """``code`` with one typical mistake: ``old`` (found exactly once) replaced by ``new``."""
    assert code.count(old) == 1, old
    return code.replace(old, new)


def assert_tells_right_from_wrong(nb, label: str, namespace: dict, slips: dict[str, str], correct: str) -> str:
    """The check of ``label`` on the stub, on each slip (its hint in the verdict) and on the solution."""
    stub, check = exercise_cells(nb, label)
    assert run(namespace, stub.source, check.source).startswith("✘ not written yet")
    for wrong, hint in slips.items():
        verdict = run(namespace, wrong, check.source)
        assert verdict.startswith("✘ not yet") and hint in verdict, verdict
    verdict = run(namespace, solution_code(nb, label), check.source)
    assert verdict.startswith(f"✔ correct: {correct}"), verdict
    return verdict


def test_every_coding_exercise_has_a_stub_a_check_and_a_solution_after_it(ch13, ch14):
    for nb in (ch13, ch14):
        coding = [e.label for e in exercises(nb) if e.body.startswith("**Coding.**")]
        assert len(coding) >= 2, coding  # issue 22: at least two that make the reader think
        ids = [cell.get("id") for cell in nb.cells]
        for label in coding:
            exercise_cells(nb, label)
            after = nb.cells[ids.index(label) + 3]
            assert after.source.startswith(f'<details class="solution" data-exercise="{label}">'), label
        stubs = [c for c in nb.cells if "exercise-stub" in c.get("metadata", {}).get("tags", [])]
        assert len(stubs) == len(coding)


# ---- chapter 13 ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ch13_namespace(ch13):
    """The names the chapter's exercises use, defined as the chapter defines them."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import course_lib.tensor as ct
    from course_lib.datasets import load_iris
    from course_lib.functional import grad, hessian
    from course_lib.nn import MLP
    from course_lib.trace import make_program
    from course_lib.vmap import vmap

    namespace = dict(np=np, jax=jax, jnp=jnp, torch=torch, ct=ct, grad=grad, hessian=hessian, vmap=vmap)
    namespace.update(load_iris=load_iris, MLP=MLP, make_program=make_program, partial=partial)
    namespace["L_vec"] = lambda x: x[1] * ((x[0] + x[1]) * (x[0] - x[1]))  # L(a, b) = b (a + b)(a - b)
    code = "\n".join(c.source for c in ch13.cells if c.cell_type == "code")
    for tag in ("ch13-make-program",):  # mlp_loss, params, x8, onehot8, loss_ours, loss_jax
        run(namespace, next(c.source for c in ch13.cells if tag in c.get("metadata", {}).get("tags", [])))
    for name in ("ARGNUMS", "in_axes"):
        run(namespace, re.search(rf"^{name} = .*$", code, re.M).group(0))
    return namespace


def test_chapter13_hvp_exercise_check_tells_right_from_wrong(ch13, ch13_namespace):
    slips = {"def hvp(f, x, v):\n    return jax.grad(f)(x) * v\n": "the Hessian gives [4. 2.]"}
    assert_tells_right_from_wrong(ch13, "ch13-hvp", ch13_namespace, slips, "H v for all three directions")
    H = ch13_namespace["hessian"](ch13_namespace["L_vec"])(np.array([1.0, 2.0])).data
    assert np.allclose(H @ np.array([1.0, 1.0]), [6.0, -10.0])  # the solution's worked example
    assert "(4 + 2, 2 - 12) = (6, -10)" in solution(ch13, "ch13-hvp")


def test_chapter13_clipping_exercise_check_tells_right_from_wrong(ch13, ch13_namespace):
    code = solution_code(ch13, "ch13-clip")
    batch_mean = (
        "def clipped_mean_grad(params, x, onehot, clip):\n"
        "    mean = jax.grad(loss_jax, argnums=ARGNUMS)(*params, x, onehot)\n"
        "    norm = jnp.sqrt(sum((g * g).sum() for g in mean))\n"
        "    return [g * jnp.minimum(1.0, clip / norm) for g in mean]\n"
    )
    part_by_part = (  # each part clipped to the bound on its own
        "def clipped_mean_grad(params, x, onehot, clip):\n"
        "    per_example = jax.vmap(jax.grad(loss_jax, argnums=ARGNUMS), in_axes=in_axes)(*params, x, onehot)\n"
        "    out = []\n"
        "    for g in per_example:\n"
        "        norm = jnp.sqrt((g.reshape(len(x), -1) ** 2).sum(axis=1))\n"
        "        out.append((g * jnp.minimum(1.0, clip / norm).reshape((-1,) + (1,) * (g.ndim - 1))).mean(axis=0))\n"
        "    return out\n"
    )
    slips = {
        batch_mean: "you clipped the batch's mean gradient",
        part_by_part: "you clipped each of the four parts on its own",
        slip(code, ").mean(axis=0) for g", ").sum(axis=0) for g"): "you summed over the examples",
        slip(code, "jnp.minimum(1.0,", "jnp.maximum(1.0,"): "a loop gives other numbers",
        slip(code, "scale.reshape((-1,) + (1,) * (g.ndim - 1))", "scale"): "raised",  # (8, 4, 16) times (8,)
    }
    verdict = assert_tells_right_from_wrong(ch13, "ch13-clip", ch13_namespace, slips, "no example clipped at 100")
    namespace = ch13_namespace
    rows = [
        [g.data for g in namespace["grad"](namespace["loss_ours"], argnum=(0, 1, 2, 3))(*namespace["params"], x, t)]
        for x, t in zip(namespace["x8"], namespace["onehot8"])
    ]
    norms = np.array([np.sqrt(sum((g * g).sum() for g in row)) for row in rows])
    assert (norms < 100).all() and (norms > 1).all() and (norms > 5).sum() == 4  # none, half, all clipped
    assert "4 of 8 at 5" in verdict and "clip none, half and all of\nthe 8 flowers'" in markdown(ch13)
    # the solution's remark: course_lib's vmap gives the same per-example gradients
    ours = slip(
        code,
        "jax.vmap(jax.grad(loss_jax, argnums=ARGNUMS), in_axes=in_axes)(*params, x, onehot)",
        "[g.data for g in vmap(grad(loss_ours, argnum=ARGNUMS), in_axes=in_axes)(*params, x, onehot)]",
    ).replace("jnp.", "np.")
    assert run(namespace, ours, exercise_cells(ch13, "ch13-clip")[1].source).startswith("✔ correct")


def test_chapter13_nan_exercise_check_tells_right_from_wrong(ch13, ch13_namespace):
    code = solution_code(ch13, "ch13-nan")
    head = "def total_distance(points, lib):\n    d = points[:, None] - points[None]\n    squared = (d * d).sum(-1)\n"
    assert code.startswith(head)
    slips = {
        head + "    return lib.sqrt(squared).sum() / 2\n": "JAX's gradient holds NaN",
        head + "    return lib.where(squared > 0, lib.sqrt(squared), 0.0).sum() / 2\n": "JAX's gradient holds NaN",
        # 1 on the diagonal: right for distinct points, NaN where two points coincide
        head + "    return (lib.sqrt(squared + lib.eye(len(points))).sum() - len(points)) / 2\n": "holds NaN",
        head + "    return lib.sqrt(squared + 1e-12).sum() / 2\n": "but the distances add up to",
        slip(code, "lib.sqrt(safe), 0.0)", "lib.sqrt(safe), 1.0)"): "but the distances add up to",
    }
    assert_tells_right_from_wrong(ch13, "ch13-nan", ch13_namespace, slips, "the total and a gradient without NaN")
    # the eye slip is right wherever the points are distinct: the check needs its coinciding points
    jax, jnp = ch13_namespace["jax"], ch13_namespace["jnp"]
    run(ch13_namespace, list(slips)[2])
    distinct = np.random.default_rng(5).normal(size=(5, 3))
    assert not np.isnan(np.asarray(jax.grad(lambda p: ch13_namespace["total_distance"](p, jnp))(distinct))).any()


# ---- chapter 14 ---------------------------------------------------------------------------


def test_chapter14_step_ratio_exercise_check_tells_right_from_wrong(ch14):
    code = solution_code(ch14, "ch14-step-cost")
    product = "np.prod(e.out.shape) * e.args[0].shape[-1]"
    slips = {
        slip(code, product, "1"): "that counts products",
        slip(code, product, "np.prod(e.out.shape)"): "that counts the entries of each result",
        "def step_ratio(sizes, batch):\n    return 3.0\n": "gives the data a gradient too",
        slip(code, "e.args[0].shape[-1]", "e.args[1].shape[-1]"): "the hand count gives 2.8061",
    }
    namespace = {"np": np}
    assert_tells_right_from_wrong(ch14, "ch14-step-cost", namespace, slips, "2.8061 for the chapter's MLP")
    assert 60_686_336 / 21_626_880 == pytest.approx(2.8061, abs=5e-5)  # the chapter's hand count
    assert round(namespace["step_ratio"]([784, 100, 10], 1), 2) == 2.01  # traced, as the solution says
    assert mentions_all(markdown(ch14), [784, 100, 10, 2.01], near="[784, 100, 10]")
    assert 784 * 100 / (784 * 100 + 100 * 10) > 0.985  # "holds 99% of the multiply-adds"


def best_schedule(n: int, slots: int) -> int:
    """Griewank's binomial formula: with c = slots + 1 stored states and each step run at most r
    times, comb(c + r, c) steps can be reversed; the fewest steps for n is r n - comb(c + r, c + 1)."""
    c, r = slots + 1, 0
    while math.comb(c + r, c) < n:
        r += 1
    return r * n - math.comb(c + r, c + 1)


def test_chapter14_checkpoint_schedule_exercise_check_tells_right_from_wrong(ch14):
    code = solution_code(ch14, "ch14-schedule")
    slips = {
        slip(code, "fewest_steps(m, slots) for", "fewest_steps(m, slots - 1) for"): "a cheaper schedule exists",
        slip(code, "range(1, n))", "range(1, 2))"): "a cheaper schedule exists",
        slip(code, "fewest_steps(n - m, slots - 1)", "fewest_steps(n - m, slots)"): "no schedule is that cheap",
        slip(code, "m + fewest_steps(n - m", "fewest_steps(n - m"): "one forward sweep of 1 step(s)",
        slip(code, "n * (n - 1) // 2", "n - 1"): "with no free slot",
        slip(code, "return 0  # x_0", "return 1  # x_0"): "nothing needs to run",
    }
    namespace: dict = {}
    assert_tells_right_from_wrong(ch14, "ch14-schedule", namespace, slips, "all 65 cases up to n = 10")
    fewest = namespace["fewest_steps"]
    assert [fewest(100, s) for s in (0, 4, 9, 18, 99)] == [4950, 316, 222, 179, 99]
    assert [best_schedule(100, s) for s in (0, 4, 9, 18, 99)] == [4950, 316, 222, 179, 99]
    # sqrt(n) evenly spaced checkpoints: a first sweep to x_90, then 9 steps per segment into 9 more slots
    k = math.isqrt(100)
    assert (k - 1) * k + k * (k - 1) == 180 and 2 * (k - 1) == 18
    question = next(e.body for e in exercises(ch14) if e.label == "ch14-schedule")
    assert "first sweep of 90 steps" in question and "9 more\nslots, 180 steps in all" in question
    assert best_schedule(10_000, 9) == 57_624 and 5 < 57_624 / 10_000 < 6  # "under six forward sweeps"
    assert math.comb(9 + 1 + 3, 3) >= 100 > math.comb(9 + 1 + 2, 2)  # 9 slots: each step run at most 3 times
    text = solution(ch14, "ch14-schedule")
    for number in ("4,950", "316", "222", "179", "180", "57,624", "10,000"):
        assert number in text, number
