"""forward: dual numbers, tagged nesting (no perturbation confusion), derivative and jvp."""

from __future__ import annotations

import math

import pytest

from course_lib.forward import Dual, derivative, jvp


def cubic(x):
    return x**3 - 10 * x**2 + 5 * x - 2


# ---- arithmetic ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, value, tangent",
    [
        (lambda x: x + 2, 5.0, 1.0),
        (lambda x: 2 + x, 5.0, 1.0),
        (lambda x: x - 2, 1.0, 1.0),
        (lambda x: 2 - x, -1.0, -1.0),
        (lambda x: 2 * x, 6.0, 2.0),
        (lambda x: x / 2, 1.5, 0.5),
        (lambda x: 1 / x, 1 / 3, -1 / 9),
        (lambda x: -x, -3.0, -1.0),
        (lambda x: 10 * x**2, 90.0, 60.0),
        (lambda x: x**0.5, math.sqrt(3), 0.5 / math.sqrt(3)),
        (lambda x: 2**x, 8.0, 8 * math.log(2)),
        (lambda x: x**x, 27.0, 27 * (math.log(3) + 1)),
        (lambda x: x * x, 9.0, 6.0),
        (lambda x: x.sin(), math.sin(3), math.cos(3)),
        (lambda x: x.cos(), math.cos(3), -math.sin(3)),
        (lambda x: x.exp(), math.exp(3), math.exp(3)),
        (lambda x: x.log(), math.log(3), 1 / 3),
        (lambda x: x.tanh(), math.tanh(3), 1 - math.tanh(3) ** 2),
    ],
)
def test_each_rule_on_a_seeded_dual(make, value, tangent):
    out = make(Dual(3.0, 1.0))
    assert out.primal == pytest.approx(value, rel=1e-12)
    assert out.tangent == pytest.approx(tangent, rel=1e-12)


def test_two_duals_combine_their_tangents():
    a, b = Dual(2.0, 1.0), Dual(5.0, 0.0)  # seed a: the tangents are d/da
    out = a.log() + a * b - b.sin()
    assert out.primal == pytest.approx(11.652, abs=5e-4)
    assert out.tangent == pytest.approx(5.5)


@pytest.mark.parametrize(
    "make",
    [
        lambda d: d + "a",
        lambda d: None * d,
        lambda d: d / None,
        lambda d: [1] - d,
        lambda d: d ** "2",
        lambda d: "2" ** d,
    ],
)
def test_unknown_operand_types_raise_type_error(make):
    with pytest.raises(TypeError, match="unsupported operand"):
        make(Dual(1.0, 1.0))


def test_constructor_errors():
    with pytest.raises(TypeError, match="Dual\\(\\) takes numbers, got str"):
        Dual("1", 0.0)
    with pytest.raises(TypeError, match="nested Duals come from nesting derivative"):
        Dual(Dual(1.0, 1.0), 0.0)
    with pytest.raises(ValueError, match="negative base needs an integer exponent"):
        Dual(-8.0, 1.0) ** (1 / 3)
    with pytest.raises(ValueError, match="log\\(\\) needs a positive input"):
        Dual(0.0, 1.0).log()


# ---- derivative ---------------------------------------------------------------------------------


def test_derivative_returns_a_float():
    d = derivative(cubic, 6)
    assert type(d) is float and d == -7.0


def test_derivative_of_a_function_that_ignores_its_input_is_zero():
    assert derivative(lambda x: 3.0, 1.0) == 0.0


def test_derivative_errors():
    with pytest.raises(TypeError, match="derivative\\(\\) needs a number x, got str"):
        derivative(cubic, "6")
    with pytest.raises(TypeError, match="needs f to return a number or a Dual, got list"):
        derivative(lambda x: [x], 1.0)


def test_second_and_third_derivatives_by_nesting():
    second = derivative(lambda x: derivative(cubic, x), 6.0)
    third = derivative(lambda x: derivative(lambda y: derivative(cubic, y), x), 6.0)
    assert second == 16.0 and third == 6.0  # 6x - 20 and 6
    sin_second = derivative(lambda x: derivative(lambda y: y.sin(), x), 0.5)
    assert sin_second == pytest.approx(-math.sin(0.5), rel=1e-15)


def test_no_perturbation_confusion():
    """d/dx [x · d/dy (x + y) at y=1] at x=1 is x · 1 differentiated: 1."""
    assert derivative(lambda x: x * derivative(lambda y: x + y, 1.0), 1.0) == 1.0
    # Without tags the inner derivative also picks up x's perturbation: 2.
    x = Dual(1.0, 1.0)
    inner = (x + Dual(1.0, 1.0)).tangent
    assert (x * inner).tangent == 2.0


def test_mixed_partial_by_nesting_two_variables():
    # d/dx d/dy (x² y³) = 6 x y²; at (2, 3) that is 108
    mixed = derivative(lambda x: derivative(lambda y: x**2 * y**3, 3.0), 2.0)
    assert mixed == pytest.approx(108.0)


def test_escaped_perturbation_is_detected():
    stash = []

    def f(x):
        derivative(lambda y: stash.append(y) or x * y, 1.0)  # keeps the inner call's input
        return x * stash[0]  # ... and uses it after that call has returned

    with pytest.raises(RuntimeError, match="escaped from an inner call"):
        derivative(f, 1.0)


# ---- jvp --------------------------------------------------------------------------------------


def test_jvp_follows_jax_convention():
    L = lambda a, b: b * ((a + b) * (a - b))  # noqa: E731
    assert jvp(L, (1.0, 2.0), (1.0, 0.0)) == (-6.0, 4.0)
    assert jvp(L, (1.0, 2.0), (0.0, 1.0)) == (-6.0, -11.0)
    value, directional = jvp(L, (1.0, 2.0), (3.0, 2.0))  # linear in the direction
    assert (value, directional) == (-6.0, 3 * 4.0 + 2 * -11.0)
    assert all(type(t) is float for t in (value, directional))


def test_jvp_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def f(a, b, sin=jnp.sin, exp=jnp.exp, log=jnp.log):
        return log(a) + a * b - sin(b) + exp(a / b) ** 2

    def ours(a, b):
        return a.log() + a * b - b.sin() + (a / b).exp() ** 2

    primals, tangents = (2.0, 5.0), (0.3, -1.2)
    expected = jax.jvp(f, primals, tangents)
    value, directional = jvp(ours, primals, tangents)
    assert value == pytest.approx(float(expected[0]), rel=1e-14)
    assert directional == pytest.approx(float(expected[1]), rel=1e-14)


def test_jvp_of_a_function_ignoring_its_inputs():
    assert jvp(lambda a, b: 3.0, (1.0, 2.0), (1.0, 1.0)) == (3.0, 0.0)


def test_jvp_errors():
    with pytest.raises(ValueError, match="got 2 primals but 1 tangents"):
        jvp(lambda a, b: a * b, (1.0, 2.0), (1.0,))
    with pytest.raises(TypeError, match="as tuples, e.g. jvp"):
        jvp(cubic, 6.0, 1.0)
    with pytest.raises(TypeError, match="needs numbers as tangents, got str"):
        jvp(cubic, (6.0,), ("1",))


def test_jvp_nested_inside_derivative():
    # d/da of the directional derivative of L along (1, 0): d²L/da² = 2b = 4
    L = lambda a, b: b * ((a + b) * (a - b))  # noqa: E731
    assert derivative(lambda a: jvp(L, (a, 2.0), (1.0, 0.0))[1], 1.0) == 4.0
