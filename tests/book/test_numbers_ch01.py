"""Chapter 1, *Derivatives three ways*: the plan's numbers, computed by course_lib, and
the executed notebook really printing them.

f(x) = x^3 - 10x^2 + 5x - 2 at x0 = 6: f = -116, f' = -7.
"""

from __future__ import annotations

import math
import re

import nbformat
import numpy as np
import pytest
from notebook_text import printed_by, tagged
from paths import BOOK
from prose_numbers import shows

from course_lib.check import numerical_grad
from course_lib.forward import Dual, derivative
from course_lib.scalar import Value

NOTEBOOK = BOOK / "01_derivatives_three_ways.ipynb"
X0 = 6.0


def f(x):
    return x**3 - 10 * x**2 + 5 * x - 2


def test_value_of_the_running_example():
    assert f(X0) == -116.0


def test_analytic_derivative_is_minus_seven():
    assert 3 * X0**2 - 20 * X0 + 5 == -7.0


def test_numerical_grad_gives_minus_seven():
    # central differences with eps = 1e-6: truncation 1e-12, round-off ~ 1e-8
    assert abs(numerical_grad(f, X0) - (-7.0)) < 1e-6


def test_dual_numbers_give_value_and_derivative():
    y = f(Dual(X0, 1.0))
    assert abs(y.primal - (-116.0)) < 1e-12
    assert abs(y.tangent - (-7.0)) < 1e-12
    assert abs(derivative(f, X0) - (-7.0)) < 1e-12


def test_value_backward_gives_minus_seven():
    x = Value(X0)
    y = f(x)
    y.backward()
    assert abs(y.data - (-116.0)) < 1e-12
    assert abs(x.grad - (-7.0)) < 1e-12


def observed_order(estimate, h: float) -> float:
    """log10 of the error ratio between the steps h and h / 10."""
    return math.log10(abs(estimate(h) + 7.0) / abs(estimate(h / 10) + 7.0))


@pytest.mark.parametrize("h", [1e-1, 1e-2])
def test_forward_difference_is_first_order(h):
    def forward(s):
        return (f(X0 + s) - f(X0)) / s

    assert abs(observed_order(forward, h) - 1.0) < 0.05


@pytest.mark.parametrize("h", [1e-1, 1e-2])
def test_central_difference_is_second_order(h):
    def central(s):
        return numerical_grad(f, X0, eps=s)

    assert abs(observed_order(central, h) - 2.0) < 0.05


def test_central_difference_of_the_cubic_is_exactly_minus_seven_plus_h_squared():
    for h in (1.0, 0.1):
        assert numerical_grad(f, X0, eps=h) == pytest.approx(-7.0 + h**2, abs=1e-12)


# ---- the executed notebook -------------------------------------------------------------


@pytest.fixture(scope="module")
def notebook():
    return nbformat.read(NOTEBOOK, as_version=4)


@pytest.mark.parametrize(
    "tag, expected",
    [
        ("ch01-value", ["f(6) = -116"]),
        ("ch01-analytic", ["f'(6) = -7"]),
        ("ch01-numerical", ["numerical_grad(f, 6) = -7.000000"]),
        ("ch01-dual", ["primal=-116.0", "tangent=-7.0", "derivative(f, 6) = -7.0"]),
        ("ch01-reverse", ["y.data = -116.0", "x.grad = -7.0"]),
        ("ch01-table", ["-6.19000000", "-6.99000000"]),
    ],
)
def test_notebook_prints_the_numbers(notebook, tag, expected):
    text = printed_by(notebook, tag)
    for piece in expected:
        assert piece in text, f"cell {tag!r} should print {piece!r}, it printed:\n{text}"


def test_notebook_counts_n_plus_1_and_2n_evaluations_and_a_constant_for_reverse_mode(notebook):
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+\.\d\d)\s*$", printed_by(notebook, "ch01-counts"), re.M)
    assert len(rows) == 9
    for n, forward, central, reverse in rows:
        assert (int(forward), int(central), reverse) == (int(n) + 1, 2 * int(n), "2.67")


@pytest.mark.parametrize("n", [1, 7, 100])
def test_reverse_mode_costs_eight_thirds_of_an_evaluation_of_g(n):
    """Each cubic term is 9 operations with 15 operand edges (the sum's additions included):
    one evaluation plus a sweep of 15/9 = 5/3 evaluations."""
    from course_lib.toposort import postorder

    leaves = [Value(X0) for _ in range(n)]
    out = sum(f(leaf) for leaf in leaves)
    nodes = postorder(out, lambda v: v._parents)
    operations = sum(1 for v in nodes if v._parents)
    products = sum(len(v._parents) for v in nodes)
    assert (operations, products) == (9 * n, 15 * n)
    assert 1 + products / operations == pytest.approx(8 / 3)


def test_complex_step_has_no_cancellation(notebook):
    text = printed_by(notebook, "ch01-complex")
    assert (f(complex(X0, 0.1)).imag / 0.1) == pytest.approx(-7.01, abs=1e-12)  # -7 - h**2
    for h in (1e-8, 1e-20, 1e-200):
        assert f(complex(X0, h)).imag / h == pytest.approx(-7.0, abs=1e-13)
    slope = f(complex(X0, 0.1)).imag / 0.1
    assert shows(text, "h =", 0.1, slope, abs(slope + 7.0))  # the exact derivative is -7
    assert text.count("error ") == 4 and all(float(e) < 1e-13 for e in re.findall(r"error (\S+)", text)[1:])


def test_teaching_version_agrees_with_course_lib(notebook):
    namespace = {"np": np}
    for cell in tagged(notebook, "teaching-version"):
        exec(cell.source, namespace)
    forward_gradient = namespace["forward_gradient"]

    def g(x):
        return sum(f(xi) for xi in x)

    x = np.array([6.0, 1.0, -2.5, 0.3])
    expected = numerical_grad(g, x)
    assert np.allclose(forward_gradient(g, x), expected, atol=1e-4)
    assert np.allclose(forward_gradient(g, x, h=1e-3), expected, atol=1e-1)
    # for the cubic the forward difference at 6 is exactly -7 + 8h + h**2
    assert forward_gradient(g, np.array([X0]), h=0.1)[0] == pytest.approx(-6.19, abs=1e-9)
