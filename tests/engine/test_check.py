"""check: central differences and gradient checking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_lib.check import GradcheckError, gradcheck, numerical_grad


def cubic(x):
    return x**3 - 10 * x**2 + 5 * x - 2


def test_numerical_grad_of_a_number():
    assert numerical_grad(cubic, 6) == pytest.approx(-7.0, abs=1e-6)
    assert isinstance(numerical_grad(cubic, 6.0), float)


def test_numerical_grad_is_central_error_shrinks_like_eps_squared():
    errors = [abs(numerical_grad(math.exp, 1.0, eps) - math.e) for eps in (1e-2, 1e-3)]
    assert errors[0] == pytest.approx(math.e * 1e-4 / 6, rel=1e-2)  # f''' eps² / 6
    assert errors[1] < errors[0] / 50  # a forward difference would only gain 10x


def test_numerical_grad_of_an_array_keeps_the_shape_and_the_input():
    x = np.arange(6.0).reshape(2, 3)
    before = x.copy()
    g = numerical_grad(lambda v: (v**2).sum() + v[0, 1] * v[1, 2], x)
    expected = 2 * x
    expected[0, 1] += x[1, 2]
    expected[1, 2] += x[0, 1]
    assert g.shape == (2, 3) and np.allclose(g, expected, atol=1e-6)
    assert np.array_equal(x, before)


def test_numerical_grad_of_an_integer_array():
    g = numerical_grad(lambda v: (v**3).sum(), np.array([1, 2]))
    assert g.dtype == np.float64 and np.allclose(g, [3.0, 12.0], atol=1e-5)


def test_numerical_grad_errors():
    with pytest.raises(ValueError, match="f to return a scalar, but f returned shape \\(3,\\)"):
        numerical_grad(lambda v: v * 2, np.ones(3))
    with pytest.raises(TypeError, match="number or a NumPy array, got str"):
        numerical_grad(cubic, "6")


def L(a, b):
    return b * ((a + b) * (a - b))


def test_gradcheck_passes_on_correct_gradients():
    assert gradcheck(L, 1.0, 2.0) is True
    assert gradcheck(lambda x: (x.sin() * x.exp() + x.tanh() / x) ** 2 - x.log(), 1.3) is True
    assert gradcheck(lambda a, b, c: (a * b).sigmoid() + c.relu() - 3 / c, 0.5, -1, 2) is True


def test_gradcheck_of_a_function_ignoring_its_inputs():
    assert gradcheck(lambda x: 3.0, 1.0) is True


def broken_product(a, b):
    """a * b whose backward forgets b: its gradient is always 0."""
    out = a * b
    out._backward = lambda grad: setattr(a, "grad", a.grad + b.data * grad)
    return out


def test_gradcheck_names_the_worst_input_and_both_gradients():
    with pytest.raises(GradcheckError) as info:
        gradcheck(broken_product, 3.0, 2.0)
    message = str(info.value)
    assert "input 1" in message
    assert "AD gradient 0" in message and "numerical gradient 3" in message
    assert "error 3 >" in message and "backward rule" in message
    assert isinstance(info.value, AssertionError)


def test_gradcheck_fails_on_nan_gradients():
    def nan_gradient(x):
        out = x * 1.0
        out._backward = lambda grad: setattr(x, "grad", math.nan)
        return out

    with pytest.raises(GradcheckError, match="AD gradient nan"):
        gradcheck(nan_gradient, 1.0)


def test_gradcheck_tolerances_are_used():
    assert gradcheck(lambda x: x * 3.0, 1.0, atol=0.0, rtol=1e-6)

    def off_by_a_little(x):
        out = x * 1.0
        out._backward = lambda grad: setattr(x, "grad", x.grad + 1.001 * grad)
        return out

    assert gradcheck(off_by_a_little, 1.0, atol=1e-2)
    with pytest.raises(GradcheckError):
        gradcheck(off_by_a_little, 1.0)


def test_gradcheck_errors():
    with pytest.raises(TypeError, match="takes numbers as inputs, got: str"):
        gradcheck(lambda x: x, "1")
    with pytest.raises(TypeError, match="needs f to return a Value \\(or a number\\), got list"):
        gradcheck(lambda x: [x], 1.0)
    with pytest.raises(TypeError, match="at least one input"):
        gradcheck(lambda: 1.0)
