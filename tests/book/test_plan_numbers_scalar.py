"""Every number the course plan gives for chapters 1-7 (and the Hessian of chapter 8),
reproduced by the scalar engines: scalar.Value, forward.Dual, graph.Node and check."""

from __future__ import annotations

import operator
from types import SimpleNamespace

import pytest

from course_lib import graph
from course_lib.check import gradcheck, numerical_grad
from course_lib.forward import Dual, derivative, jvp
from course_lib.scalar import Value


def cubic(x):
    return x**3 - 10 * x**2 + 5 * x - 2


def L(a, b):
    return b * ((a + b) * (a - b))


# ---- chapter 1: derivatives three ways --------------------------------------------------------


def test_ch1_cubic_at_6_value_and_slope_three_ways():
    assert cubic(6) == -116
    assert 3 * 6**2 - 20 * 6 + 5 == -7  # analytic
    assert numerical_grad(cubic, 6.0) == pytest.approx(-7.0, abs=1e-6)  # finite differences
    assert derivative(cubic, 6.0) == -7.0  # forward mode
    assert jvp(cubic, (6.0,), (1.0,)) == (-116.0, -7.0)
    x = Value(6)  # reverse mode
    y = cubic(x)
    y.backward()
    assert (y.data, x.grad) == (-116.0, -7.0)


# ---- chapter 2: the evaluation trace ------------------------------------------------------------


def example():
    x1, x2 = graph.Node(2, "x1"), graph.Node(5, "x2")
    return x1, x2, graph.sub(graph.add(graph.log(x1), graph.mul(x1, x2)), graph.sin(x2))


def test_ch2_trace_of_log_x1_plus_x1_x2_minus_sin_x2_at_2_5():
    *_, y = example()
    rows = {name: round(value, 3) for name, _, value in graph.evaluation_trace(y)}
    assert rows == {"x1": 2.0, "x2": 5.0, "v1": 0.693, "v2": 10.0, "v3": -0.959, "v4": 10.693, "v5": 11.652}
    assert round(y.data, 3) == 11.652


# ---- chapter 3: forward mode ------------------------------------------------------------------------


def test_ch3_tangents_with_x1_dot_1_x2_dot_0():
    x1, _, y = example()
    rows = {name: value for name, _, value in graph.tangent_table(x1, y)}
    assert rows == {"ẋ1": 1.0, "ẋ2": 0.0, "v̇1": 0.5, "v̇2": 5.0, "v̇3": 0.0, "v̇4": 5.5, "v̇5": 5.5}
    out = Dual(2.0, 1.0).log() + Dual(2.0, 1.0) * Dual(5.0, 0.0) - Dual(5.0, 0.0).sin()
    assert out.tangent == 5.5


def test_ch3_perturbation_confusion_is_avoided():
    assert derivative(lambda x: x * derivative(lambda y: x + y, 1.0), 1.0) == 1.0


# ---- chapter 4: reverse mode ------------------------------------------------------------------------


def test_ch4_adjoints_and_pruning_of_an_extra_output():
    x1, x2, y = example()
    rows = {name: round(value, 3) for name, _, value in graph.adjoint_table(y)}
    assert rows == {"v̄5": 1.0, "v̄4": 1.0, "v̄3": -1.0, "v̄2": 1.0, "v̄1": 1.0, "x̄2": 1.716, "x̄1": 5.5}
    v4, v3 = y._parents
    graph.mul(v4, v3)  # v6: another output of the same inputs
    graph.reverse(y)
    assert x1.partial_derivative == 5.5 and round(x2.partial_derivative, 3) == 1.716


@pytest.mark.parametrize("engine", ["graph", "value", "dual"])
def test_ch4_e_equals_a_plus_b_times_b_plus_1_at_2_3(engine):
    assert gradient(engine, lambda a, b, E: E.mul(E.add(a, b), E.add(b, 1)), (2.0, 3.0)) == [4.0, 9.0]


@pytest.mark.parametrize("engine", ["graph", "value", "dual"])
def test_ch4_f_equals_x_plus_3_times_x_at_5(engine):
    assert gradient(engine, lambda x, E: E.mul(E.add(x, 3), x), (5.0,)) == [13.0]


# ---- chapter 5: the scalar engine --------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["graph", "value", "dual"])
def test_ch5_L_equals_b_times_a_plus_b_times_a_minus_b_at_1_2(engine):
    assert gradient(engine, lambda a, b, E: E.mul(b, E.mul(E.add(a, b), E.sub(a, b))), (1.0, 2.0)) == [4.0, -11.0]


def test_ch5_manual_backward_by_calling_each_closure():
    a, b = Value(1.0, "a"), Value(2.0, "b")
    c = a + b
    d = a - b
    e = c * d
    out = e * b
    out.grad = 1.0
    for node in (out, e, d, d._parents[1], c):  # children before parents, by hand
        node._backward(node.grad)
    assert (a.grad, b.grad) == (4.0, -11.0)


# ---- chapter 7: gradient checking; chapter 8: the Hessian of L ------------------------------------


def test_ch7_gradcheck_of_L():
    assert gradcheck(L, 1.0, 2.0) is True


def test_ch8_hessian_of_L_by_forward_over_forward():
    def partial(i):
        return lambda a, b: jvp(L, (a, b), (1.0, 0.0) if i == 0 else (0.0, 1.0))[1]

    hessian = [
        [jvp(partial(i), (1.0, 2.0), (1.0, 0.0) if j == 0 else (0.0, 1.0))[1] for j in range(2)] for i in range(2)
    ]
    assert hessian == [[4.0, 2.0], [2.0, -12.0]]


# ---- one definition, three engines ---------------------------------------------------------------------


OPERATORS = SimpleNamespace(add=operator.add, sub=operator.sub, mul=operator.mul)  # Value and Dual


def gradient(engine, f, point):
    """The gradient of ``f(*inputs, E)`` at ``point`` in one engine; ``E`` spells add/sub/mul."""
    if engine == "graph":
        inputs = [graph.Node(p) for p in point]
        graph.reverse(f(*inputs, graph))
        return [x.partial_derivative for x in inputs]
    if engine == "value":
        inputs = [Value(p) for p in point]
        f(*inputs, OPERATORS).backward()
        return [x.grad for x in inputs]
    seeds = [[1.0 if i == j else 0.0 for j in range(len(point))] for i in range(len(point))]
    return [jvp(lambda *xs: f(*xs, OPERATORS), tuple(point), tuple(seed))[1] for seed in seeds]
