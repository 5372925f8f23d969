"""toposort: the orders every engine uses, checked on random DAGs and deep chains."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.scalar import Value
from course_lib.toposort import child_count_order, interior_postorder, postorder, postorder_recursive


class N:
    """A bare graph node. ``==`` is overloaded (as a Tensor's is) and it is unhashable:
    the orders must tell nodes apart by identity."""

    def __init__(self, parents=()):
        self.parents = list(parents)

    def __eq__(self, other):
        return True

    __hash__ = None


def parents(node):
    return node.parents


@st.composite
def dags(draw):
    """A random DAG with repeated edges allowed (x * x); the last node is the output."""
    n = draw(st.integers(1, 25))
    nodes = []
    for i in range(n):
        picks = draw(st.lists(st.integers(0, i - 1), max_size=3)) if i else []
        nodes.append(N(nodes[j] for j in picks))
    return nodes


def ancestors(end):
    seen, stack = {id(end): end}, [end]
    while stack:
        for p in stack.pop().parents:
            if id(p) not in seen:
                seen[id(p)] = p
                stack.append(p)
    return seen


def position_map(order):
    return {id(node): k for k, node in enumerate(order)}


@settings(max_examples=150, deadline=None)
@given(dags())
def test_postorders_list_each_ancestor_once_after_its_parents(nodes):
    end = nodes[-1]
    for order in (postorder(end, parents), postorder_recursive(end, parents)):
        pos = position_map(order)
        assert len(order) == len(pos) == len(ancestors(end))
        assert set(pos) == set(ancestors(end))
        assert order[-1] is end
        for node in order:
            assert all(pos[id(p)] < pos[id(node)] for p in node.parents)


@settings(max_examples=150, deadline=None)
@given(dags())
def test_child_count_order_is_valid_on_random_dags(nodes):
    end = nodes[-1]
    order = child_count_order(end, parents)
    pos = position_map(order)
    assert len(order) == len(pos) == len(ancestors(end))  # every ancestor once, repeated edges or not
    assert order[0] is end
    for node in order:
        assert all(pos[id(node)] < pos[id(p)] for p in node.parents)  # children first


class V:
    """A node as the scalar engine has them: ``_parents``, hashed by identity."""

    def __init__(self, parents=()):
        self._parents = tuple(parents)


@settings(max_examples=150, deadline=None)
@given(dags())
def test_interior_postorder_lists_each_inner_ancestor_once_after_its_parents(nodes):
    twins: dict[int, V] = {}
    for node in nodes:  # the same DAG with scalar-engine-like nodes
        twins[id(node)] = V(twins[id(p)] for p in node.parents)
    end = twins[id(nodes[-1])]
    order = interior_postorder(end)
    pos = position_map(order)
    inner = {k for k, n in ancestors(nodes[-1]).items() if n.parents}
    assert len(order) == len(pos) == len(inner)
    assert set(pos) == {id(twins[k]) for k in inner}
    assert not order or order[-1] is end
    for node in order:
        assert all(pos[id(p)] < pos[id(node)] for p in node._parents if p._parents)


def test_repeated_edges_x_times_x():
    x = N()
    sq = N([x, x])
    out = N([sq, x])
    assert [id(n) for n in child_count_order(out, parents)] == [id(out), id(sq), id(x)]
    assert [id(n) for n in postorder(out, parents)] == [id(x), id(sq), id(out)]


def chain(depth):
    node = N()
    for _ in range(depth):
        node = N([node])
    return node


def test_recursive_postorder_hits_the_recursion_limit_on_a_deep_chain():
    with pytest.raises(RecursionError):
        postorder_recursive(chain(10**4), parents)


def test_iterative_orders_handle_the_same_chain():
    end = chain(10**4)
    assert len(postorder(end, parents)) == 10**4 + 1
    assert len(child_count_order(end, parents)) == 10**4 + 1


def test_recursive_postorder_fails_on_a_value_chain_the_engine_handles():
    x = Value(1.0)
    y = x
    for _ in range(10**4):
        y = y * 1.0
    with pytest.raises(RecursionError):
        postorder_recursive(y, lambda v: v._parents)
    y.backward()
    assert x.grad == 1.0
