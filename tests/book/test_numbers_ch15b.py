"""Chapter 15, part 2 (*Inside the transformations*): the numbers it prints, recomputed with
course_lib and, where JAX computes the same thing, with JAX as the oracle; its exercise check
(the stub, four typical slips and the solution); its length (at most about 6,000 words, as
part 1) and its place after part 1.

- the steppers: tracing f at (2, 5) records 5 equations ending at 11.652; transposing its linear
  program ends at chapter 4's adjoints (5.500, 1.716);
- the Hessian-vector product of chapter 13's L at (1, 2), linearize(grad(L)): Hu = (4, 2), (2, -12)
  and (6, -10) for u = e1, e2, (1, 1), as jax.jvp(jax.grad(L)) and jax.hessian give;
- the flight: 1,792 / 4,396 equations unrolled at 49 steps, 3,556 / 8,708 at 98, against 37 / 132
  as a scan at both; the same height as the unrolled loop and as jax.lax.scan, the same gradient;
- padding the last batch of 8 to 16 with zero weights: one program an epoch instead of two, and
  the parameters of 100 epochs identical to the unpadded run.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
from functools import partial

import nbformat
import numpy as np
import pytest
from notebook_text import coding_solutions, exercise_run, exercises, markdown, printed_by, solutions, tagged
from paths import BOOK, ROOT
from prose_numbers import mentions, shows

from course_lib.functional import grad
from course_lib.linearize import JVP, linearize, transpose
from course_lib.physics import START_SHOT
from course_lib.program import evaluate
from course_lib.simulate import DRAG, DT, G, final_step, heun_step, launch, scanned_hoop_height, steps_before
from course_lib.tensor import OPS
from course_lib.trace import make_program

CH15B = BOOK / "15b_inside_the_transformations.ipynb"
V0, THETA0 = START_SHOT
SHOT = (np.array(V0), np.array(THETA0), np.array(DRAG))


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(CH15B, as_version=4)


@pytest.fixture(scope="module")
def text(nb):
    return markdown(nb)


def f(x1, x2):
    return x1.log() + x1 * x2 - x2.sin()


def L(a, b):
    return b * ((a + b) * (a - b))


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


# ---- the page --------------------------------------------------------------------------------


def test_part_2_follows_part_1_and_stays_under_6000_words(nb):
    toc = (ROOT / "_toc.yml").read_text()
    assert "- file: book/15_from_graph_to_program\n      - file: book/15b_inside_the_transformations" in toc
    assert nb.cells[0].source.startswith("# 15. From a graph to a program, part 2:")
    words = sum(len(re.sub(r"<[^>]*>", " ", c.source).split()) for c in nb.cells if c.cell_type in ("markdown", "code"))
    assert words <= 6000, f"{words} words of prose and code: part 1's cap is about 6,000"
    part1 = nbformat.read(BOOK / "15_from_graph_to_program.ipynb", as_version=4)
    assert "](15b_inside_the_transformations.ipynb)" in markdown(part1), "part 1 links to part 2"


def test_the_sections_the_issue_asks_for(text):
    headings = re.findall(r"^## (.+)$", text, re.M)
    for wanted in (
        "Linearize and transpose, opened up",
        "Programs of programs",
        "Loops as primitives",
        "Why compilers want static shapes",
        "Three ways to capture a program",
        "Words you will meet",
    ):
        assert wanted in headings, wanted
    assert headings[-2:] == ["Summary", "Where next"] and "Check yourself" in headings
    for word in ("partial evaluation", "staging", "abstract interpretation", "pytree", "graph break", "guard"):
        assert word in text.lower(), word


def test_the_two_interpreters_are_printed_from_course_lib(nb):
    shown = {c.id: c.source for c in nb.cells if c.cell_type == "code"}
    assert "inspect.getsource(linearizing._tangents)" in shown["tangents-source"]
    assert "inspect.getsource(linearizing._pulled)" in shown["pulled-source"]
    rules = printed_by(nb, "ch15b-rules")
    for op in ("mul", "sin"):
        assert f"{op} JVP:   {inspect.getsource(JVP[op]).strip()}" in rules
        assert f"{op} VJPs:  {inspect.getsource(OPS[op].rules[0]).strip()}" in rules


# ---- the steppers ----------------------------------------------------------------------------


def test_the_steppers_trace_f_and_transpose_its_linear_program(nb):
    at = (np.array(2.0), np.array(5.0))
    (y,) = evaluate(make_program(f, *at), *at)
    trace = tagged(nb, "ch15b-trace")[0].outputs[0].data["text/plain"]
    assert trace.splitlines()[0] == "Tracing, one equation per step (5 steps)"
    assert trace.splitlines()[-1].endswith(f"g = {y:.3f}.") and f"{y:.3f}" == "11.652"
    walk = tagged(nb, "ch15b-transpose")[0].outputs[0].data["text/plain"]
    a_bar, b_bar = evaluate(transpose(linearize(f, *at)[1]), np.ones(()))
    assert walk.splitlines()[-1].endswith(f"a\u0304 = {a_bar:.3f}, b\u0304 = {b_bar:.3f}.")
    assert (f"{a_bar:.3f}", f"{b_bar:.3f}") == ("5.500", "1.716")
    for cell in tagged(nb, "ch15b-trace") + tagged(nb, "ch15b-transpose"):
        html = cell.outputs[0].data["text/html"]
        assert html.count('class="stepper-controls"') == 2, "the controls come again under the frames"


# ---- programs of programs ----------------------------------------------------------------------


def test_the_hessian_vector_product_program_is_jaxs(nb, text, jax):
    (ga, gb), hvp = linearize(grad(L, argnum=(0, 1)), 1.0, 2.0)
    shown = printed_by(nb, "ch15b-hvp")
    assert shows(shown, "gradient at (1, 2):", float(ga), float(gb))
    jnp = jax.numpy
    point = jnp.array([1.0, 2.0])
    gradient_of_l = jax.grad(lambda x: L(x[0], x[1]))
    hvp_by_jax = jax.jit(lambda u: jax.jvp(gradient_of_l, (point,), (u,))[1])  # compiled once for the three u
    for u in [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]:
        ours = [float(h) for h in evaluate(hvp, *u)]
        by_jax = hvp_by_jax(jnp.array(u))
        assert ours == [float(h) for h in by_jax], u
        assert shows(shown, f"H u for u = {u}:", *ours), u
    for value in (4, 2, -12, 6, -10):
        assert mentions(text, value, near="Hessian"), value


# ---- loops as primitives ---------------------------------------------------------------------


def unrolled(v, theta, k, steps):
    state = launch(v, theta)
    for _ in range(steps):
        state = heun_step(state, k, DT)
    return final_step(state, k)


def test_the_flight_as_a_scan_stays_37_equations(nb, text):
    steps = steps_before(V0, THETA0, DRAG)
    shown = printed_by(nb, "ch15b-scan-program")
    scanned = make_program(scanned_hoop_height, *SHOT, steps)
    assert shows(shown, "", steps, len(scanned.equations)) and (steps, len(scanned.equations)) == (49, 37)
    assert str(scanned) in shown and sum(e.op == "scan" for e in scanned.equations) == 1
    sizes = printed_by(nb, "ch15b-scan-sizes")
    expected = {
        "unrolled, height": [len(make_program(unrolled, *SHOT, n).equations) for n in (steps, 2 * steps)],
        "scan, height": [len(make_program(scanned_hoop_height, *SHOT, n).equations) for n in (steps, 2 * steps)],
        "scan, gradient": [
            len(make_program(grad(scanned_hoop_height, argnum=(0, 1, 2)), *SHOT, n).equations)
            for n in (steps, 2 * steps)
        ],
    }
    assert expected == {"unrolled, height": [1792, 3556], "scan, height": [37, 37], "scan, gradient": [132, 132]}
    for name, row in expected.items():
        assert shows(sizes, name, *row), name
    # the unrolled gradient, traced at 49 steps only (part 1's tests recount it; 98 steps is 8,708)
    unrolled_gradient = len(make_program(grad(unrolled, argnum=(0, 1, 2)), *SHOT, steps).equations)
    assert unrolled_gradient == 4396 and shows(sizes, "unrolled, gradient", 4396, 8708)
    for number in ("1,792", "4,396", "3,556", "37", "132"):
        assert number in text, number
    assert shows(sizes, "checkpoint=1:", ..., True) and shows(sizes, "checkpoint=7:", ..., True)
    by_loop = [g.item() for g in grad(unrolled, argnum=(0, 1, 2))(*SHOT, steps)]
    for checkpoint in (1, 7):
        flown = grad(lambda v, t, k, c=checkpoint: scanned_hoop_height(v, t, k, steps, checkpoint=c), argnum=(0, 1, 2))
        assert np.allclose([g.item() for g in flown(*SHOT)], by_loop, rtol=1e-13, atol=0), checkpoint
    height = scanned_hoop_height(*SHOT, steps).item()
    assert height == unrolled(*SHOT, steps).item() and shows(sizes, "unrolled:", height, height)


def test_jax_lax_scan_flies_the_same_flight_as_one_equation(jax):
    jnp = jax.numpy
    steps = steps_before(V0, THETA0, DRAG)

    def acceleration(vx, vy, k):
        drag = k * jnp.sqrt(vx * vx + vy * vy)
        return -drag * vx, -G - drag * vy

    def step(state, _):
        x, y, vx, vy, k = state
        ax, ay = acceleration(vx, vy, k)
        ax2, ay2 = acceleration(vx + DT * ax, vy + DT * ay, k)
        half = 0.5 * DT
        position = (x + DT * vx + half * DT * ax, y + DT * vy + half * DT * ay)
        return (*position, vx + half * (ax + ax2), vy + half * (ay + ay2), k), None

    def height(v, theta, k, n=steps):
        start = (0.0 * v, 0.0 * v, v * jnp.cos(theta), v * jnp.sin(theta), k)
        (x, y, vx, vy, _), _ = jax.lax.scan(step, start, None, length=n)
        ax, ay = acceleration(vx, vy, k)
        d = 4.0 - x
        tau = 2 * d / (vx + jnp.sqrt(vx * vx + 2 * ax * d))
        return y + tau * vy + 0.5 * tau * tau * ay

    programs = [jax.make_jaxpr(partial(height, n=n))(V0, THETA0, DRAG).jaxpr for n in (49, 98)]
    assert len(programs[0].eqns) == len(programs[1].eqns), "JAX's scanned program does not grow with the steps either"
    assert [e.primitive.name for e in programs[0].eqns].count("scan") == 1
    ours = [g.item() for g in grad(scanned_hoop_height, argnum=(0, 1, 2))(*SHOT, steps)]
    by_jax = [float(g) for g in jax.jit(jax.grad(height, argnums=(0, 1, 2)))(V0, THETA0, DRAG)]
    assert abs(float(jax.jit(height)(V0, THETA0, DRAG)) - scanned_hoop_height(*SHOT, steps).item()) < 1e-12
    assert np.allclose(ours, by_jax, rtol=1e-12, atol=0)


# ---- static shapes ----------------------------------------------------------------------------


def test_padding_gives_one_program_an_epoch_and_the_same_parameters(nb, text):
    shown = printed_by(nb, "ch15b-padding")
    namespace: dict = {}
    code = "\n".join(c.source for c in nb.cells if c.id in ("imports", "ch15b-padding"))
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, namespace)  # the chapter's own 100 epochs, about a second
    plain, masked = namespace["plain"], namespace["masked"]
    assert (len(plain.cache), len(masked.cache)) == (2, 1)
    assert shows(shown, "plain:", 2, ..., 1)
    same = all(np.array_equal(p.data, q.data) for p, q in zip(namespace["p_plain"], namespace["p_masked"]))
    assert same and shows(shown, "identical:", True)
    assert "One program instead of two" in text


def test_the_capture_table_says_what_jax_does_on_if(jax):
    def branch(x):
        return x * x if x > 0 else -x

    assert float(jax.grad(branch)(2.0)) == 4.0, "under jax.grad alone the values are known"
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(branch)(2.0)


# ---- the exercise ------------------------------------------------------------------------------


def test_the_exercises_are_numbered_hidden_and_labelled(nb):
    labels = [e.label for e in exercises(nb)]
    assert labels and all(label.startswith("ch15b-") for label in labels)
    assert sorted(s.label for s in solutions(nb)) == sorted(labels)
    assert list(coding_solutions(nb)) == ["ch15b-div-jvp"]
    assert "is not written yet" in printed_by(nb, "exercise-check")


SLIPS = {
    "the divisor's term dropped": "    return ta / b",
    "its sign flipped": "    return ta / b + tb * out / b",
    "divided by b once": "    return ta / b - tb * a / b",
    "a tangent times a tangent": "    return ta / b - ta * tb",
}


def run(source: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(source, namespace)
    return out.getvalue()


def test_the_jvp_check_tells_the_solution_from_typical_slips(nb):
    namespace = exercise_run(CH15B, "imports", "ch15b-div-jvp")
    check = tagged(nb, "exercise-check")[0].source
    run(coding_solutions(nb)["ch15b-div-jvp"], namespace)
    verdict = run(check, namespace)
    assert verdict.startswith("✔") and "all 5 cases right" in verdict, verdict
    head = "def div_jvp(primals, tangents, out, params):\n    a, b = primals\n    ta, tb = tangents\n"
    for slip, body in SLIPS.items():
        verdict = run(head + body + "\n", namespace)
        verdict = run(check, namespace)
        assert verdict.startswith("✘") and "not written" not in verdict, (slip, verdict)
        if slip == "a tangent times a tangent":
            assert "not linear in the tangents" in verdict
        else:
            assert "d(a/b) = da/b - a db/b²" in verdict, (slip, verdict)
    from course_lib.linearize import _div_jvp

    assert JVP["div"] is _div_jvp, "the check puts course_lib's rule back"
