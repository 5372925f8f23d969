"""One derivative, four engines: every primitive the engines share is differentiated by each
of them at random points, and they must agree (with each other and with central differences).

The engines' own tables say which primitives exist: ``graph.PRIMITIVES``, ``scalar.OPS``,
``tensor.OPS`` and the dual numbers' operations. A primitive found in two engines or more
needs an entry in ``DOMAINS`` (its arity and where to sample it), so a new shared primitive,
or a new ``Value`` op, cannot go untested.
"""

from __future__ import annotations

import ast
import inspect
import operator
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import graph, scalar, tensor
from course_lib.check import numerical_grad
from course_lib.forward import Dual, jvp
from course_lib.scalar import Value

DOMAINS: dict[str, tuple[int, tuple[float, float]]] = {
    "add": (2, (-2.0, 2.0)),
    "sub": (2, (-2.0, 2.0)),
    "mul": (2, (-2.0, 2.0)),
    "div": (2, (0.5, 2.0)),
    "pow": (1, (0.5, 2.0)),  # the base; the exponent is a number (Value takes no Value exponent)
    "neg": (1, (-2.0, 2.0)),
    "exp": (1, (-2.0, 2.0)),
    "log": (1, (0.1, 4.0)),
    "sin": (1, (-3.0, 3.0)),
    "cos": (1, (-3.0, 3.0)),
    "tanh": (1, (-2.0, 2.0)),
    "relu": (1, (0.05, 2.0)),  # and its mirror image below zero: the kink at 0 is left out
    "sigmoid": (1, (-4.0, 4.0)),
}
"""Primitive -> (number of differentiated arguments, the interval they are drawn from)."""
EXPONENT = 1.7  # pow's exponent

DUAL: dict[str, Callable[..., Dual]] = {
    **{name: getattr(operator, name) for name in ("add", "sub", "mul", "neg")},
    "div": operator.truediv,
    "pow": operator.pow,
    **{name: operator.methodcaller(name) for name in ("exp", "log", "sin", "cos", "tanh")},
}
"""How dual numbers spell each primitive (their operators and methods)."""


def with_exponent(name: str, f: Callable) -> Callable:
    return (lambda a: f(a, EXPONENT)) if name == "pow" else f


def graph_grads(name: str, xs: Sequence[float]) -> list[float]:
    nodes = [graph.Node(x) for x in xs]
    out = getattr(graph, name)(*nodes)
    graph.reverse(out)
    return [n.partial_derivative for n in nodes]


def dual_grads(name: str, xs: Sequence[float]) -> list[float]:
    f = with_exponent(name, DUAL[name])
    return [float(jvp(f, xs, [float(i == k) for i in range(len(xs))])[1]) for k in range(len(xs))]


def value_grads(name: str, xs: Sequence[float]) -> list[float]:
    leaves = [Value(x) for x in xs]
    with_exponent(name, scalar.OPS[name])(*leaves).backward()
    return [leaf.grad for leaf in leaves]


def tensor_grads(name: str, xs: Sequence[float]) -> list[float]:
    leaves = [tensor.Tensor(x, requires_grad=True) for x in xs]
    forward = tensor.OPS[name].call
    assert forward is not None
    with_exponent(name, forward)(*leaves).backward()
    return [float(leaf.grad) for leaf in leaves]


ENGINES: dict[str, tuple[set[str], Callable[[str, Sequence[float]], list[float]]]] = {
    "graph": (set(graph.PRIMITIVES), graph_grads),
    "forward.Dual": (set(DUAL), dual_grads),
    "scalar.Value": (set(scalar.OPS), value_grads),
    "tensor.Tensor": (set(tensor.OPS) & set(DOMAINS), tensor_grads),
}
SHARED = sorted(
    {name for ops, _ in ENGINES.values() for name in ops if sum(name in o for o, _ in ENGINES.values()) > 1}
)


def test_every_shared_primitive_and_every_value_op_has_a_test_domain():
    assert set(SHARED) | set(scalar.OPS) <= set(DOMAINS), "add the new primitive to DOMAINS"
    assert {"add", "sub", "mul", "div", "log", "sin", "cos", "exp"} <= set.intersection(
        *(ops for ops, _ in ENGINES.values())
    )


def test_every_op_value_records_is_in_its_table():
    """``scalar.OPS`` lists every name a ``Value`` operation records, read from the source."""
    recorded = {
        node.args[0].value
        for node in ast.walk(ast.parse(inspect.getsource(scalar)))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "record" and node.args
        if isinstance(node.args[0], ast.Constant)
    }
    assert recorded and recorded <= set(scalar.OPS)


@pytest.mark.parametrize("name", SHARED)
def test_the_engines_agree_on_each_primitives_derivative(name):
    arity, (low, high) = DOMAINS[name]
    engines = {engine: grads for engine, (ops, grads) in ENGINES.items() if name in ops}

    @settings(max_examples=25, deadline=None, database=None)
    @given(st.lists(st.floats(low, high), min_size=arity, max_size=arity), st.booleans())
    def check(xs, mirror):
        if name == "relu" and mirror:
            xs = [-x for x in xs]
        results = {engine: grads(name, xs) for engine, grads in engines.items()}
        reference = results.pop("tensor.Tensor" if "tensor.Tensor" in results else "scalar.Value")
        for engine, result in results.items():
            np.testing.assert_allclose(result, reference, rtol=1e-12, atol=1e-12, err_msg=f"{name}: {engine}")
        for k in range(arity):

            def along_k(x: float, k: int = k) -> float:
                shifted = [Value(v) for v in xs]
                shifted[k] = Value(x)
                return with_exponent(name, scalar.OPS[name])(*shifted).data

            assert reference[k] == pytest.approx(numerical_grad(along_k, xs[k]), rel=1e-6, abs=1e-6), name

    check()


def test_a_new_value_op_without_a_domain_fails(monkeypatch):
    monkeypatch.setitem(scalar.OPS, "tan", Value.sin)  # stands for an op added to Value and its table
    with pytest.raises(AssertionError, match="DOMAINS"):
        test_every_shared_primitive_and_every_value_op_has_a_test_domain()
