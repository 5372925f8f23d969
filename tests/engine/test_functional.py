"""course_lib.functional: grad, value_and_grad, vjp, jvp, jacobian, hessian (nesting, JAX as oracle)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_lib.functional import grad, hessian, jacobian, jvp, value_and_grad, vjp
from course_lib.tensor import Tensor, cos, exp, no_grad, sin, tanh

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

SETTINGS = settings(max_examples=30, deadline=None)
# XLA flushes subnormal numbers to zero, NumPy keeps them: leave them out of the comparison.
reals = st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=False)
vectors = hnp.arrays(np.float64, st.integers(1, 4), elements=reals)


def L(x: Tensor) -> Tensor:
    """The course's running example L = x1 ((x0 + x1)(x0 - x1))."""
    return x[1] * ((x[0] + x[1]) * (x[0] - x[1]))


# ----------------------------------------------------------------------------- the plan's numbers
def test_third_derivative_of_sin_is_minus_cos():
    for x0 in (0.0, 1.0, 2.5):
        assert grad(grad(grad(sin)))(x0).item() == pytest.approx(-np.cos(x0))
    assert grad(grad(grad(grad(sin))))(1.0).item() == pytest.approx(np.sin(1.0))


def test_hessian_of_L():
    H = hessian(L)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(H.data, [[4.0, 2.0], [2.0, -12.0]])


def test_gradient_of_L():
    np.testing.assert_allclose(grad(L)(np.array([1.0, 2.0])).data, [4.0, -11.0])


def test_nested_grad_is_perturbation_safe():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1; confusing the two perturbations gives 2.
    def outer(x):
        return x * grad(lambda y: x + y)(x)

    assert grad(outer)(1.0).item() == pytest.approx(1.0)
    # The inner derivative of x*y with respect to y is x, so the outer one of x*x is 2x.
    assert grad(lambda x: x * grad(lambda y: x * y)(x))(3.0).item() == pytest.approx(6.0)
    assert grad(lambda x: grad(lambda y: x * y)(2.0))(3.0).item() == pytest.approx(1.0)


# ----------------------------------------------------------------------------- inputs and outputs
def test_inputs_may_be_numbers_arrays_or_tensors_and_results_are_tensors():
    f = grad(lambda x: (x * x).sum())
    for x in (3.0, 3, np.array([1.0, 2.0]), Tensor([1.0, 2.0]), Tensor([1.0, 2.0], requires_grad=True), [1.0, 2.0]):
        g = f(x)
        assert isinstance(g, Tensor)
        np.testing.assert_allclose(g.data, 2 * np.asarray(x, dtype=float) if not isinstance(x, Tensor) else 2 * x.data)


def test_grad_does_not_touch_the_grad_of_a_tensor_input():
    x = Tensor([1.0, 2.0], requires_grad=True)
    grad(lambda t: (t * t).sum())(x)
    assert x.grad is None


def test_grad_works_inside_no_grad():
    with no_grad():
        assert grad(lambda x: x * x)(3.0).item() == 6.0


def test_value_and_grad_and_argnum():
    value, g = value_and_grad(lambda x, y: (x * y).sum())(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert value.item() == 11.0 and g.data.tolist() == [3.0, 4.0]
    assert grad(lambda x, y: (x * y).sum(), argnum=1)(np.array([1.0, 2.0]), np.array([3.0, 4.0])).data.tolist() == [
        1.0,
        2.0,
    ]
    gx, gy = grad(lambda x, y: x * y * y, argnum=(0, 1))(2.0, 3.0)
    assert (gx.item(), gy.item()) == (9.0, 12.0)


def test_a_function_that_ignores_its_input_is_an_error_unless_allowed():
    with pytest.raises(ValueError, match="does not depend on input 0.*allow_unused=True"):
        grad(lambda x: Tensor(5.0))(np.ones(3))
    assert grad(lambda x: Tensor(5.0), allow_unused=True)(np.ones(3)).data.tolist() == [0.0, 0.0, 0.0]
    assert grad(lambda x: 5.0, allow_unused=True)(2.0).item() == 0.0


def test_clear_errors():
    with pytest.raises(ValueError, match=r"scalar.*shape \(3,\).*vjp / jacobian"):
        grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(IndexError, match="argnum 2"):
        grad(lambda x, y: x * y, argnum=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="return a Tensor"):
        grad(lambda x: "nope")(1.0)
    with pytest.raises(ValueError, match=r"tangent 0 has shape \(2,\) but primal 0 has shape \(3,\)"):
        jvp(sin, (np.ones(3),), (np.ones(2),))
    with pytest.raises(ValueError, match="one tangent per primal"):
        jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,))
    y, vjp_fn = vjp(sin, np.ones(3))
    with pytest.raises(ValueError, match=r"shape \(2,\) but the output has shape \(3,\)"):
        vjp_fn(np.ones(2))


# ----------------------------------------------------------------------------- vjp, jvp, jacobian vs JAX
def f_ours(x: Tensor) -> Tensor:
    return (x.sin() * x[0] + x.exp() * 0.5).tanh() * x.sum()


def f_jax(x):
    return jnp.tanh(jnp.sin(x) * x[0] + jnp.exp(x) * 0.5) * x.sum()


# JAX's eager mode re-traces every call (about a second per Hessian): compile each once.
jax_vjp = jax.jit(lambda x, v: jax.vjp(f_jax, x)[1](v)[0])
jax_jvp = jax.jit(lambda x, v: jax.jvp(f_jax, (x,), (v,))[1])
jax_jacobian = jax.jit(jax.jacobian(f_jax))


@SETTINGS
@given(vectors, st.data())
def test_vjp_jvp_jacobian_against_jax(x, data):
    v_out = data.draw(hnp.arrays(np.float64, x.shape, elements=reals))
    v_in = data.draw(hnp.arrays(np.float64, x.shape, elements=reals))
    y, vjp_fn = vjp(f_ours, x)
    np.testing.assert_allclose(y.data, f_jax(x), rtol=1e-10, atol=1e-300)  # a subnormal output: XLA gives 0
    np.testing.assert_allclose(vjp_fn(v_out).data, jax_vjp(x, v_out), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(vjp_fn(v_in).data, jax_vjp(x, v_in), rtol=1e-8, atol=1e-12)  # called again
    y2, jv = jvp(f_ours, (x,), (v_in,))
    np.testing.assert_allclose(jv.data, jax_jvp(x, v_in), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(jacobian(f_ours)(x).data, jax_jacobian(x), rtol=1e-8, atol=1e-12)


def g_ours(t: Tensor) -> Tensor:
    return (t.sin() * t.cos().sum() + (t * t).softmax() * t).sum() + (t[0] - 1.0) ** 3


def g_jax(t):
    return (jnp.sin(t) * jnp.cos(t).sum() + jax.nn.softmax(t * t) * t).sum() + (t[0] - 1.0) ** 3


jax_hessian = jax.jit(jax.hessian(g_jax))


def h_ours(x):
    return exp(sin(x)) * cos(x) + tanh(x) ** 2


jax_fourth = jax.jit(
    jax.grad(jax.grad(jax.grad(jax.grad(lambda x: jnp.exp(jnp.sin(x)) * jnp.cos(x) + jnp.tanh(x) ** 2))))
)


@SETTINGS
@given(vectors)
def test_hessian_against_jax(x):
    np.testing.assert_allclose(hessian(g_ours)(x).data, jax_hessian(x), rtol=1e-8, atol=1e-10)


@SETTINGS
@given(reals)
def test_fourth_derivative_against_jax(x0):
    ours = grad(grad(grad(grad(h_ours))))(x0).item()
    assert ours == pytest.approx(float(jax_fourth(x0)), rel=1e-8, abs=1e-10)


def test_third_derivative_of_a_square_at_zero_is_zero_not_nan():
    assert grad(grad(grad(lambda x: x**2)))(0.0).item() == 0.0
    assert grad(grad(grad(lambda x: x**3)))(0.0).item() == 6.0


def test_jacobian_shapes_and_third_order_tensor():
    x = np.array([1.0, 2.0, 3.0])
    J = jacobian(lambda t: t.reshape(3, 1) * t)(x)
    assert J.shape == (3, 3, 3)
    T3 = jacobian(hessian(lambda t: (t**3).sum()))(np.array([1.0, 2.0]))
    expected = np.zeros((2, 2, 2))
    expected[0, 0, 0], expected[1, 1, 1] = 6.0, 6.0
    np.testing.assert_allclose(T3.data, expected)
    assert jacobian(lambda t: t.sum())(x).shape == (3,)
    assert jacobian(lambda t: t * 2)(4.0).item() == 2.0


def test_jvp_of_a_linear_map_and_of_a_constant():
    A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y, jv = jvp(lambda x: Tensor(A) @ x, (np.array([1.0, -1.0]),), (np.array([0.5, 2.0]),))
    np.testing.assert_allclose(jv.data, A @ [0.5, 2.0])
    with pytest.raises(ValueError, match="does not depend"):
        jvp(lambda x: Tensor(np.ones(2)), (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))
    _, jv = jvp(lambda x: Tensor(np.ones(2)), (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),), allow_unused=True)
    np.testing.assert_array_equal(jv.data, [0.0, 0.0])


def test_jvp_of_a_structurally_zero_derivative_is_zeros_like_grad():
    """x ** 0 depends on x in the graph, but its VJP rule is a constant zero: J v must be
    zeros (as grad gives), not the error for an output that does not depend on its input."""
    x, v = np.array([0.0, 1.5, -2.0]), np.array([1.0, -1.0, 3.0])
    y, jv = jvp(lambda x: x**0, (x,), (v,))
    np.testing.assert_array_equal(y.data, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(jv.data, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(grad(lambda x: (x**0).sum())(x).data, [0.0, 0.0, 0.0])
    _, jv = jvp(lambda x: x**0 * x, (x,), (v,))  # the zero part adds nothing to a real derivative
    np.testing.assert_array_equal(jv.data, v)


def test_grad_of_jvp_and_of_vjp():
    # d/dx [ d/dt sin(x t) at t=1 in direction 1 ] = d/dx [x cos(x)] = cos x - x sin x
    def directional(x):
        return jvp(lambda t: (x * t).sin(), (1.0,), (1.0,))[1]

    x0 = 0.8
    assert grad(directional)(x0).item() == pytest.approx(np.cos(x0) - x0 * np.sin(x0))

    def pulled(x):
        return vjp(lambda t: t * t * x, 2.0)[1](1.0)  # d/dt (t^2 x) at 2 = 4x

    assert grad(pulled)(5.0).item() == pytest.approx(4.0)


def test_jvp_of_several_arguments_sums_their_directions_like_jax():
    def f(x, y):
        return (x * y).sin() + x * x

    (x0, y0), (tx, ty) = (0.3, -1.2), (0.7, 2.0)
    _, ours = jvp(f, (x0, y0), (tx, ty))
    _, theirs = jax.jvp(lambda x, y: jnp.sin(x * y) + x * x, (x0, y0), (tx, ty))
    assert ours.item() == pytest.approx(float(theirs), rel=1e-12)


def test_the_old_single_argument_jvp_still_works_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"jvp\(f, \(x,\), \(v,\)\)"):
        y, jv = jvp(lambda x: x * x, np.array([1.0, 3.0]), np.array([1.0, 1.0]))
    np.testing.assert_allclose(jv.data, [2.0, 6.0])
