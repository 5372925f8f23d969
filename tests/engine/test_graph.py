"""graph: the explicit-graph engine, its sweeps and the tables the chapters print."""

from __future__ import annotations

import math

import pytest

from course_lib import graph
from course_lib.graph import (
    Node,
    add,
    adjoint_table,
    cos,
    div,
    evaluation_order,
    evaluation_trace,
    exp,
    format_table,
    forward,
    log,
    mul,
    node_names,
    reverse,
    sin,
    sub,
    tangent_table,
    topological_order_forward,
    topological_order_reverse,
)


def example():
    """f(x1, x2) = log x1 + x1·x2 − sin x2 at (2, 5), built by nested calls."""
    x1, x2 = Node(2, "x1"), Node(5, "x2")
    y = sub(add(log(x1), mul(x1, x2)), sin(x2))
    v4 = y._parents[0]
    v1, v2 = v4._parents
    v3 = y._parents[1]
    return x1, x2, v1, v2, v3, v4, y


def position(order, node):
    return next(k for k, n in enumerate(order) if n is node)


# ---- building the graph ---------------------------------------------------------------------


def test_wrapping_functions_record_parents_children_operator_and_local_derivatives():
    x1, x2, v1, v2, v3, v4, y = example()
    assert (v2._op, v2.data, v2._parents, v2.grad_wrt_parents) == ("mul", 10.0, [x1, x2], [5.0, 2.0])
    assert v1.grad_wrt_parents == [0.5] and v3.grad_wrt_parents == [math.cos(5)]
    assert y.grad_wrt_parents == [1.0, -1.0] and v4.grad_wrt_parents == [1.0, 1.0]
    assert x1._children == [v1, v2] and x2._children == [v2, v3] and y._children == []
    assert x1._op == "input" and x1._parents == [] and x1.partial_derivative == 0.0
    assert y.data == pytest.approx(11.652, abs=5e-4)


@pytest.mark.parametrize(
    "fn, x0, value, slope",
    [
        (lambda x: add(x, 3), 2.0, 5.0, 1.0),
        (lambda x: add(3, x), 2.0, 5.0, 1.0),
        (lambda x: sub(3, x), 2.0, 1.0, -1.0),
        (lambda x: mul(4, x), 2.0, 8.0, 4.0),
        (lambda x: div(x, 4), 2.0, 0.5, 0.25),
        (lambda x: div(4, x), 2.0, 2.0, -1.0),
        (lambda x: log(x), 2.0, math.log(2), 0.5),
        (lambda x: sin(x), 2.0, math.sin(2), math.cos(2)),
        (lambda x: cos(x), 2.0, math.cos(2), -math.sin(2)),
        (lambda x: exp(x), 2.0, math.exp(2), math.exp(2)),
    ],
)
def test_each_operation_and_numbers_as_constant_nodes(fn, x0, value, slope):
    x = Node(x0)
    y = fn(x)
    assert y.data == pytest.approx(value)
    constants = [p for p in y._parents if p is not x]
    assert all(c._op == "const" and c._children == [y] for c in constants)
    reverse(y)
    assert x.partial_derivative == pytest.approx(slope)
    forward(x)
    assert y.partial_derivative == pytest.approx(slope)


def test_repeated_parent_is_linked_once_and_counted_twice():
    x = Node(3.0)
    sq = mul(x, x)
    assert sq._parents == [x, x] and x._children == [sq]
    reverse(sq)
    assert x.partial_derivative == 6.0
    forward(x)
    assert sq.partial_derivative == 6.0
    one = div(x, x)  # local derivatives 1/x and -x/x² differ: both must be used
    reverse(one)
    assert x.partial_derivative == pytest.approx(0.0, abs=1e-15)


def test_errors_say_what_went_wrong():
    with pytest.raises(TypeError, match="add\\(\\) takes Nodes or numbers, got str"):
        add(Node(1.0), "2")
    with pytest.raises(TypeError, match="Node\\(\\) needs a real number as its value, got str"):
        Node("2")
    with pytest.raises(ValueError, match="log\\(\\) needs a positive input, got 0.0"):
        log(Node(0.0))
    with pytest.raises(ZeroDivisionError, match="b.data == 0"):
        div(Node(1.0), 0)


# ---- topological orders --------------------------------------------------------------------


def test_forward_order_is_what_x1_reaches_x1_first_parents_before_children():
    x1, x2, v1, v2, v3, v4, y = example()
    order = topological_order_forward(x1)
    assert order[0] is x1
    assert {id(n) for n in order} == {id(n) for n in (x1, v1, v2, v4, y)}
    for node in order:
        for child in node._children:
            assert position(order, node) < position(order, child)


def test_preorder_would_not_be_a_topological_order():
    """Appending a node before its children (pre-order) puts v2 after its child v4."""
    x1, x2, v1, v2, v3, v4, y = example()
    preorder, seen = [], set()

    def visit(node):
        if id(node) not in seen:
            seen.add(id(node))
            preorder.append(node)
            for child in node._children:
                visit(child)

    visit(x1)
    assert [n.data for n in preorder] == [x1.data, v1.data, v4.data, y.data, v2.data]
    assert position(preorder, v2) > position(preorder, v4)
    assert position(topological_order_forward(x1), v2) < position(topological_order_forward(x1), v4)


def test_reverse_order_is_the_ancestors_of_y_children_before_parents():
    x1, x2, v1, v2, v3, v4, y = example()
    v6 = mul(v4, v3)  # another output: not an ancestor of y
    order = topological_order_reverse(y)
    assert order[0] is y and len(order) == 7 and all(n is not v6 for n in order)
    for node in order:
        for parent in node._parents:
            assert position(order, node) < position(order, parent)


def test_evaluation_order_numbers_nodes_like_baydin():
    x1, x2, v1, v2, v3, v4, y = example()
    order = evaluation_order(y)
    assert order == [x1, x2, v1, v2, v3, v4, y]
    names = node_names(order)
    assert [names[id(n)] for n in order] == ["x1", "x2", "v1", "v2", "v3", "v4", "v5"]


def test_node_names_keep_given_names_and_skip_taken_ones():
    a, b = Node(1.0, "v1"), Node(2.0)
    c = mul(add(a, b), 3)
    names = node_names(evaluation_order(c))
    assert names[id(a)] == "v1" and names[id(b)] == "x1"
    assert names[id(c._parents[0])] == "v2" and names[id(c)] == "v3"
    assert names[id(c._parents[1])] == "3"


# ---- sweeps -------------------------------------------------------------------------------------


def test_forward_sweep_gives_tangents_and_zero_where_x1_has_no_influence():
    x1, x2, v1, v2, v3, v4, y = example()
    forward(x1)
    got = [n.partial_derivative for n in (x1, x2, v1, v2, v3, v4, y)]
    assert got == [1.0, 0.0, 0.5, 5.0, 0.0, 5.5, 5.5]


def test_reverse_sweep_gives_all_adjoints():
    x1, x2, v1, v2, v3, v4, y = example()
    reverse(y)
    assert [n.partial_derivative for n in (y, v4, v3, v2, v1)] == [1.0, 1.0, -1.0, 1.0, 1.0]
    assert x1.partial_derivative == 5.5
    assert x2.partial_derivative == pytest.approx(2 - math.cos(5))
    assert round(x2.partial_derivative, 3) == 1.716


def test_sweeps_in_any_order_start_from_a_clean_state():
    x1, x2, v1, v2, v3, v4, y = example()
    reverse(y)
    forward(x1)
    assert x2.partial_derivative == 0.0 and v3.partial_derivative == 0.0 and y.partial_derivative == 5.5
    forward(x2)
    assert x1.partial_derivative == 0.0 and v1.partial_derivative == 0.0
    assert y.partial_derivative == pytest.approx(2 - math.cos(5))
    reverse(y)
    reverse(y)
    assert x1.partial_derivative == 5.5  # not 11: nothing accumulates across sweeps


def test_pruning_another_output_does_not_change_reverse_of_y():
    x1, x2, v1, v2, v3, v4, y = example()
    reverse(y)
    before = [n.partial_derivative for n in (x1, x2, v1, v2, v3, v4)]
    v6 = mul(v4, v3)
    # a child whose local derivative is infinite: 0 * inf would be nan if it contributed
    v7 = mul(v4, math.inf)
    reverse(y)
    assert [n.partial_derivative for n in (x1, x2, v1, v2, v3, v4)] == before
    assert v6.partial_derivative == 0.0 and v7.partial_derivative == 0.0
    reverse(v6)  # the other output: d v6 / d x1 = x2 · v3 + 0 ...
    assert x1.partial_derivative == pytest.approx((1 / 2 + 5) * math.sin(5))


def test_deep_chain_of_a_hundred_thousand_nodes(no_gc):
    x = Node(0.3, "x")
    y = x
    for _ in range(10**5):
        y = add(y, 1.0)
    order = reverse(y)
    assert len(order) == 2 * 10**5 + 1 and x.partial_derivative == 1.0  # each add has a constant node
    forward(x)
    assert y.partial_derivative == 1.0 and y.data == pytest.approx(1e5 + 0.3)


# ---- tables ---------------------------------------------------------------------------------


def test_evaluation_trace_rows():
    *_, y = example()
    rows = evaluation_trace(y)
    assert [(name, expr) for name, expr, _ in rows] == [
        ("x1", ""),
        ("x2", ""),
        ("v1", "log x1"),
        ("v2", "x1 × x2"),
        ("v3", "sin x2"),
        ("v4", "v1 + v2"),
        ("v5", "v4 − v3"),
    ]
    assert [round(value, 3) for *_, value in rows] == [2.0, 5.0, 0.693, 10.0, -0.959, 10.693, 11.652]


def test_tangent_table_rows():
    x1, *_, y = example()
    rows = tangent_table(x1, y)
    assert rows == [
        ("ẋ1", "", 1.0),
        ("ẋ2", "", 0.0),
        ("v̇1", "ẋ1 / x1", 0.5),
        ("v̇2", "ẋ1 × x2 + ẋ2 × x1", 5.0),
        ("v̇3", "ẋ2 × cos x2", 0.0),
        ("v̇4", "v̇1 + v̇2", 5.5),
        ("v̇5", "v̇4 − v̇3", 5.5),
    ]


def test_adjoint_table_rows():
    *_, y = example()
    rows = adjoint_table(y)
    assert [(name, expr) for name, expr, _ in rows] == [
        ("v̄5", ""),
        ("v̄4", "v̄5"),
        ("v̄3", "−v̄5"),
        ("v̄2", "v̄4"),
        ("v̄1", "v̄4"),
        ("x̄2", "v̄2 × x1 + v̄3 × cos x2"),
        ("x̄1", "v̄1 / x1 + v̄2 × x2"),
    ]
    assert [round(value, 3) for *_, value in rows] == [1.0, 1.0, -1.0, 1.0, 1.0, 1.716, 5.5]


def test_tables_skip_constants_and_write_their_values_inline():
    x = Node(2.0, "x")
    y = div(exp(mul(3, x)), x)
    assert [expr for _, expr, _ in evaluation_trace(y)] == ["", "3 × x", "exp v1", "v2 / x"]
    assert [expr for _, expr, _ in tangent_table(x, y)] == ["", "ẋ × 3", "v̇1 × exp v1", "v̇2 / x − ẋ × v2/x²"]
    assert [expr for _, expr, _ in adjoint_table(y)][:3] == ["", "v̄3 / x", "v̄2 × exp v1"]


def test_format_table_aligns_columns_despite_accents():
    x1, *_, y = example()
    text = format_table(tangent_table(x1, y))
    assert text.splitlines()[:3] == [
        "ẋ1 =                     1.000",
        "ẋ2 =                     0.000",
        "v̇1 = ẋ1 / x1           = 0.500",
    ]
    assert format_table(evaluation_trace(y), digits=2).splitlines()[-1] == "v5 = v4 − v3 = 11.65"


def test_module_exports_the_plan_api():
    for name in (
        "Node",
        "add",
        "sub",
        "mul",
        "div",
        "log",
        "sin",
        "cos",
        "exp",
        "topological_order_forward",
        "topological_order_reverse",
        "forward",
        "reverse",
    ):
        assert callable(getattr(graph, name)) and name in graph.__all__


# ---- drawings -----------------------------------------------------------------------------------


def test_draw_graph_of_nodes_is_deterministic_and_annotated():
    from course_lib.viz import draw_graph

    *_, y = example()
    dot = draw_graph(y, size="6,4")
    # 4 levels (inputs, v1-v3, v4, v5) and at most 3 nodes on one: top to bottom is narrower
    assert 'size="6,4"' in dot.source and "rankdir=TB" in dot.source and "fontsize=14" in dot.source
    assert "{v2 | mul | value 10.000 | ∂ 0.000}" in dot.source
    assert "{x1 | value 2.000 | ∂ 0.000}" in dot.source
    assert [f"n{k} [" in dot.source for k in range(7)] == [True] * 7 and "n7 [" not in dot.source
    assert dot.source.count("->") == 8
    *_, y_again = example()
    assert draw_graph(y_again, size="6,4").source == dot.source  # ids do not depend on memory addresses


def test_draw_graph_numbers_nodes_in_sweep_order_and_takes_several_outputs():
    from course_lib.viz import draw_graph

    x1, x2, v1, v2, v3, v4, y = example()
    v6 = mul(v4, v3)
    dot = draw_graph([y, v6], order=reverse(y), digits=2)
    assert "{1: v5 | sub | value 11.65 | ∂ 1.00}" in dot.source
    assert "{5: x1 | value 2.00 | ∂ 5.50}" in dot.source and "{7: x2 | value 5.00 | ∂ 1.72}" in dot.source
    assert "{v6 | mul | value -10.25 | ∂ 0.00}" in dot.source  # drawn, but not visited by the sweep


def test_draw_graph_stacks_fields_in_both_layouts_and_draws_one_frame_of_a_sweep():
    from course_lib.viz import draw_graph

    x1, x2, v1, v2, v3, v4, y = example()
    reverse(y)
    wide = draw_graph(y, rankdir="LR").source
    assert "rankdir=LR" in wide and '"x1 | value 2.000 | ∂ 5.500"' in wide  # no braces: vertical in LR
    frame = draw_graph(y, highlight=[v2], grads={id(y): 1.0, id(v4): 1.0, id(v2): 1.0}, title="step 3").source
    assert '"{v2 | mul | value 10.000 | ∂ 1.000}" fillcolor="#ffd27f" shape=record style=filled' in frame
    assert "{x1 | value 2.000 | ∂ ?}" in frame and 'label="step 3"' in frame
    assert frame.count("filled") == 1
    upwards = draw_graph(y, rankdir="BT").source  # the outputs on top, where a reverse sweep starts
    assert "rankdir=BT" in upwards and "{x1 | value 2.000 | ∂ 5.500}" in upwards
    with pytest.raises(ValueError, match="rankdir must be 'auto', 'LR', 'TB' or 'BT', got 'RL'"):
        draw_graph(y, rankdir="RL")


def test_draw_graph_refuses_other_objects():
    from course_lib.viz import draw_graph

    with pytest.raises(TypeError, match="draws graph.Node, scalar.Value or Tensor objects, got float"):
        draw_graph(1.0)


@pytest.mark.parametrize("operator", sorted(graph.PRIMITIVES))
def test_each_primitive_states_its_derivatives_once_and_they_are_right(operator):
    """The wrapping function of every row of PRIMITIVES exists, and the local derivatives
    it stores match central differences of the row's own value formula."""
    value, local_derivatives = graph.PRIMITIVES[operator]
    wrap = getattr(graph, operator)
    point = [1.3, 0.7][: len(local_derivatives)]
    node = wrap(*[Node(v) for v in point])
    assert node._op == operator and len(node.grad_wrt_parents) == len(point)
    h = 1e-6
    for i, stored in enumerate(node.grad_wrt_parents):
        up, down = list(point), list(point)
        up[i] += h
        down[i] -= h
        slope = (wrap(*up).data - wrap(*down).data) / (2 * h)
        assert stored == pytest.approx(slope, rel=1e-6), (operator, i)


def test_primitives_print_in_maths_notation():
    assert graph.maths("-a/b**2") == "−{0}/{1}²"
    assert graph.maths("a * b") == "{0} × {1}"
    assert graph.maths("cos(a)") == "cos {0}"


def test_the_old_field_names_still_work_and_warn():
    """Node's fields are named as in Value and Tensor; the old names are aliases that warn."""
    x = graph.Node(2.0, "x")
    y = graph.mul(x, 3.0)
    old_and_new = [("value", "data"), ("name", "label"), ("operator", "_op"), ("parent_nodes", "_parents")]
    for old, new in old_and_new + [("child_nodes", "_children")]:
        with pytest.warns(PendingDeprecationWarning, match=f"Node.{old} is now Node.{new}"):
            assert getattr(y, old) is getattr(y, new)
    with pytest.warns(PendingDeprecationWarning, match="Node.name is now Node.label"):
        assert graph.Node(1.0, name="x1").label == "x1"
    with pytest.warns(PendingDeprecationWarning):
        x.value = 5.0
    assert x.data == 5.0
