"""scalar.Value: operations, gradient semantics (PyTorch's), errors and deep graphs."""

from __future__ import annotations

import gc
import math
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.scalar import Value, record


def grads(*values: Value) -> tuple[float, ...]:
    return tuple(v.grad for v in values)


# ---- construction and the graph record ---------------------------------------------------


def test_integers_are_stored_as_floats_and_label_is_kept():
    v = Value(3, label="v")
    assert type(v.data) is float and v.data == 3.0
    assert v.grad == 0.0 and v.label == "v" and v._parents == () and v._op == ""
    assert type(Value(np.int64(2)).data) is float


def test_operations_make_nodes_with_record_and_the_old_constructor_is_deprecated():
    a = Value(2.0)
    cube = record("cube", a.data**3, (a,))
    assert (cube.data, cube._parents, cube._op, cube.grad, cube.label) == (8.0, (a,), "cube", 0.0, "")
    with pytest.warns(DeprecationWarning, match=r"record\(op, data, parents\)"):
        old = Value(8.0, "", (a,), "cube")
    assert (old._parents, old._op) == ((a,), "cube")
    assert [(a * a)._op, (a + 1)._op, (a / 2)._op, (a**3)._op] == ["mul", "add", "div", "pow"]  # as in Tensor


def test_parents_are_an_ordered_tuple_and_keep_repeats():
    a, b = Value(1.0), Value(2.0)
    q = a / b
    assert q._parents == (a, b) and q._op == "div"
    r = b / a
    assert r._parents == (b, a)
    sq = a * a
    assert sq._parents == (a, a)  # a set would keep one a
    sq.backward()
    assert a.grad == 2.0


def test_subtraction_is_addition_of_the_negation():
    a, b = Value(5.0), Value(2.0)
    d = a - b
    assert d._op == "add" and d._parents[0] is a
    neg = d._parents[1]
    assert neg._op == "neg" and neg._parents == (b,)
    d.backward()
    assert (d.data, a.grad, b.grad) == (3.0, 1.0, -1.0)


@pytest.mark.parametrize(
    "make, value, da",
    [
        (lambda x: x + 2, 5.0, 1.0),
        (lambda x: 2 + x, 5.0, 1.0),
        (lambda x: x - 2, 1.0, 1.0),
        (lambda x: 2 - x, -1.0, -1.0),
        (lambda x: x * 2, 6.0, 2.0),
        (lambda x: 2 * x, 6.0, 2.0),
        (lambda x: x / 2, 1.5, 0.5),
        (lambda x: 2 / x, 2 / 3, -2 / 9),
        (lambda x: -x, -3.0, -1.0),
        (lambda x: x**2, 9.0, 6.0),
        (lambda x: x**-1, 1 / 3, -1 / 9),
        (lambda x: x**0.5, math.sqrt(3), 0.5 / math.sqrt(3)),
        (lambda x: 10 * x**2, 90.0, 60.0),
        (lambda x: np.float64(2.0) * x, 6.0, 2.0),
        (lambda x: x * np.float64(2.0), 6.0, 2.0),
        (lambda x: np.int64(2) - x, -1.0, -1.0),
    ],
)
def test_binary_operations_with_numbers_on_either_side(make, value, da):
    x = Value(3.0)
    out = make(x)
    assert isinstance(out, Value)
    out.backward()
    assert out.data == pytest.approx(value) and x.grad == pytest.approx(da)


def test_negative_base_with_integer_exponent():
    x = Value(-2.0)
    y = x**3
    y.backward()
    assert (y.data, x.grad) == (-8.0, 12.0)


# ---- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: Value(1) + "a",
        lambda: "a" + Value(1),
        lambda: Value(1) * None,
        lambda: [1] - Value(1),
        lambda: Value(1) / "2",
        lambda: "2" / Value(1),
        lambda: Value(1) ** "2",
    ],
)
def test_unknown_operand_types_raise_type_error(make):
    with pytest.raises(TypeError, match="unsupported operand"):
        make()


def test_value_exponent_is_refused_with_a_hint():
    with pytest.raises(TypeError, match=r"exponent must be a number.*\.exp\(\)"):
        Value(2.0) ** Value(3.0)


def test_bad_inputs_say_what_to_do():
    with pytest.raises(TypeError, match="needs a real number, got str"):
        Value("3")
    with pytest.raises(TypeError, match="use the Value itself"):
        Value(Value(1.0))
    with pytest.raises(ValueError, match="log\\(\\) needs a positive input, got 0.0"):
        Value(0.0).log()
    with pytest.raises(ValueError, match="negative base needs an integer exponent"):
        Value(-8.0) ** (1 / 3)


# ---- gradient semantics (PyTorch's) ----------------------------------------------------------


def test_fan_out_accumulates_e_equals_a_plus_b_times_b_plus_1():
    a, b = Value(2.0), Value(3.0)
    e = (a + b) * (b + 1)
    e.backward()
    assert e.data == 20.0 and grads(a, b) == (4.0, 9.0)


def test_backward_twice_adds_the_same_gradient_again_to_leaves_only():
    a, b = Value(2.0), Value(3.0)
    c = a + b
    e = c * (b + 1)
    e.backward()
    first_leaves, first_c = grads(a, b), c.grad
    e.backward()
    assert grads(a, b) == (2 * first_leaves[0], 2 * first_leaves[1])
    assert c.grad == first_c == 4.0  # intermediates are recomputed, not doubled
    assert e.grad == 1.0


def test_leaf_gradients_accumulate_across_graphs_until_zeroed():
    x = Value(3.0)
    (x * x).backward()
    (x * 4).backward()
    assert x.grad == 6.0 + 4.0
    y = x * x
    y.zero_grad()
    assert x.grad == 0.0 and y.grad == 0.0
    y.backward()
    assert x.grad == 6.0


def test_backward_on_a_leaf_accumulates_one():
    x = Value(1.0)
    x.backward()
    x.backward()
    assert x.grad == 2.0


def test_a_graph_is_freed_without_the_cyclic_collector():
    """No reference cycles: a graph is freed by reference counting as soon as its output
    is (micrograd's closures refer to their own output, so its graphs wait for the cyclic
    collector). With the collector paused, the graph's Values are gone right after ``del``."""

    def values_alive() -> int:
        return sum(type(o) is Value for o in gc.get_objects())

    a = Value(2.0)
    gc.collect()
    gc.disable()
    try:
        before = values_alive()
        out = ((a * 3).tanh() + a.exp() / a - a.sin() * a.relu()) ** 2
        out.backward()
        assert values_alive() > before + 5
        del out
        assert values_alive() == before
    finally:
        gc.enable()


# ---- each operation against PyTorch --------------------------------------------------------

UNARY = {
    "exp": (lambda v: v.exp(), torch.exp),
    "log": (lambda v: v.log(), torch.log),
    "sin": (lambda v: v.sin(), torch.sin),
    "cos": (lambda v: v.cos(), torch.cos),
    "tanh": (lambda v: v.tanh(), torch.tanh),
    "relu": (lambda v: v.relu(), torch.relu),
    "sigmoid": (lambda v: v.sigmoid(), torch.sigmoid),
    "neg": (lambda v: -v, lambda t: -t),
    "square": (lambda v: v**2, lambda t: t**2),
    "cube": (lambda v: v**3, lambda t: t**3),
    "reciprocal": (lambda v: 1 / v, lambda t: 1 / t),
}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(UNARY)), st.floats(-30, 30, allow_nan=False))
def test_unary_operations_match_torch(name, x0):
    ours, theirs = UNARY[name]
    if name == "log":
        x0 = abs(x0) + 0.1
    if name in ("relu", "reciprocal") and abs(x0) < 1e-3:
        x0 = 1.0  # away from relu's kink and the pole
    x = Value(x0)
    out = ours(x)
    out.backward()
    t = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    theirs(t).backward()
    assert out.data == pytest.approx(theirs(t).item(), rel=1e-12, abs=1e-300)
    assert x.grad == pytest.approx(t.grad.item(), rel=1e-9, abs=1e-12)


def test_sigmoid_does_not_overflow_far_from_zero():
    for x0, expected in ((-1000.0, 0.0), (1000.0, 1.0)):
        x = Value(x0)
        s = x.sigmoid()
        s.backward()
        assert s.data == expected and x.grad == 0.0


def test_relu_gradient_is_zero_on_the_left_and_one_on_the_right():
    a, b = Value(-1.0), Value(2.0)
    (a.relu() + b.relu()).backward()
    assert grads(a, b) == (0.0, 1.0)


def test_small_expression_matches_torch():
    a, b = Value(-4.0), Value(2.0)
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g = g + 10.0 / f
    g.backward()
    ta = torch.tensor(-4.0, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    c = ta + tb
    d = ta * tb + tb**3
    c = c + c + 1
    c = c + 1 + c + (-ta)
    d = d + d * 2 + (tb + ta).relu()
    d = d + 3 * d + (tb - ta).relu()
    e = c - d
    f = e**2
    tg = f / 2.0
    tg = tg + 10.0 / f
    tg.backward()
    assert g.data == pytest.approx(tg.item(), rel=1e-12)
    assert a.grad == pytest.approx(ta.grad.item(), rel=1e-12)
    assert b.grad == pytest.approx(tb.grad.item(), rel=1e-12)


# ---- deep graphs -----------------------------------------------------------------------------


def test_million_node_chain_at_the_default_recursion_limit(no_gc):
    assert sys.getrecursionlimit() <= 10_000  # far below the chain's depth
    x = Value(0.5)
    y = x
    for _ in range(10**6):
        y = -y
    y.backward()
    assert x.grad == 1.0 and y.data == 0.5  # an even number of negations


# ---- drawings -----------------------------------------------------------------------------------


def test_draw_graph_of_values_has_op_ellipses_and_escapes_labels():
    from course_lib.viz import draw_graph

    a, b = Value(1.0, "a"), Value(2.0, "b|{x}")
    L = b * ((a + b) * (a - b))
    L.label = "L"
    L.backward()
    source = draw_graph(L).source
    assert "{L | data -6.000 | grad 1.000}" in source
    assert "{a | data 1.000 | grad 4.000}" in source
    assert "{b\\|\\{x\\} | data 2.000 | grad -11.000}" in source
    assert source.count("shape=ellipse") == 5  # *, *, +, +, neg
    assert draw_graph(L).source == source


def test_draw_graph_is_duck_typed_for_tensor_graphs():
    from course_lib.viz import draw_graph

    class FakeTensor:
        def __init__(self, data, parents=(), op=""):
            self.data, self.grad, self._parents, self._op, self.label = data, None, parents, op, ""

    w = FakeTensor(np.ones((3, 2)))
    total = FakeTensor(np.array(6.0), (w,), "sum")
    total.grad = np.array(1.0)
    source = draw_graph(total, rankdir="TB").source
    assert "{data shape (3, 2) | grad None}" in source
    assert "{data 6.000 | grad 1.000}" in source and "rankdir=TB" in source
