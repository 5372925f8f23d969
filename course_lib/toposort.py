"""Topological orders of computational graphs.

Every engine in ``course_lib`` (the explicit ``graph``, the scalar ``Value`` and the
``Tensor``) orders its nodes with the functions here; none keeps a private copy.

A graph is described by a start node and a function ``successors(node)`` returning the
nodes one step away (parents when walking from an output towards the inputs, children
when walking from an input towards the outputs). Nodes are told apart by identity, so
objects that overload ``==`` (tensors) work too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = ["postorder_recursive", "postorder", "interior_postorder", "child_count_order"]

N = TypeVar("N")
Successors = Callable[[N], Iterable[N]]


def postorder_recursive(start: N, successors: Successors) -> list[N]:
    """Depth-first post-order, written recursively.

    Each node appears after every node reachable from it. Kept for teaching: it is the
    textbook version, and it fails with ``RecursionError`` once the graph is deeper than
    Python's recursion limit (about 1,000 frames by default).
    """
    order: list[N] = []
    visited: set[int] = set()

    def visit(node: N) -> None:
        if id(node) in visited:
            return
        visited.add(id(node))
        for nxt in successors(node):
            visit(nxt)
        order.append(node)

    visit(start)
    return order


def postorder(start: N, successors: Successors) -> list[N]:
    """Depth-first post-order without recursion, so any depth works.

    The explicit stack holds ``(node, expanded)`` pairs: a node is pushed once to expand
    it (push its successors) and once more, underneath them, to be emitted after all of
    them are done. Same order as :func:`postorder_recursive`'s contract: each node comes
    after everything reachable from it. O(V + E) time.
    """
    order: list[N] = []
    visited: set[int] = set()
    stack: list[tuple[N, bool]] = [(start, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for nxt in successors(node):
            if id(nxt) not in visited:
                stack.append((nxt, False))
    return order


def interior_postorder(start: Any) -> list[Any]:
    """The nodes of ``start``'s graph that have parents (``node._parents``), each after
    its parents: the order a backward sweep needs, reversed, without the leaves.

    The fast path of the scalar engine, where graphs have thousands of nodes per step.
    Same search as :func:`postorder`, tuned: nodes go into the ``seen`` set themselves
    (so they must hash by identity, as ``Value`` does), leaves are never pushed, and a
    ``None`` marker under a node's parents says "emit it once they are done".
    """
    order: list[Any] = []
    seen: set[Any] = set()
    stack: list[Any] = [start] if start._parents else []
    push, pop = stack.append, stack.pop  # bound once: this loop runs for every node
    while stack:
        node = pop()
        if node is None:
            order.append(pop())
        elif node not in seen:
            seen.add(node)
            push(node)
            push(None)
            for parent in node._parents:
                if parent._parents and parent not in seen:
                    push(parent)
    return order


def child_count_order(end: N, parents: Successors) -> list[N]:
    """Autograd's order (Kahn's algorithm): ``end`` first, then each node once all of
    its children among the ancestors of ``end`` have been listed.

    First count, for every ancestor, how many edges lead into it from below; then
    release nodes whose count has dropped to zero. Repeated edges (``x * x``) are
    counted and released once each, so they balance.
    """
    child_counts: dict[int, int] = {}
    stack = [end]
    while stack:
        node = stack.pop()
        for parent in parents(node):
            if id(parent) in child_counts:
                child_counts[id(parent)] += 1
            else:
                child_counts[id(parent)] = 1
                stack.append(parent)
    order: list[N] = []
    ready = [end]
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in parents(node):
            child_counts[id(parent)] -= 1
            if child_counts[id(parent)] == 0:
                ready.append(parent)
    return order
