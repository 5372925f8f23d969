"""Graphviz drawings of computational graphs.

``draw_graph`` works by looking at attributes, so one function draws all three engines:

- explicit-graph ``Node`` objects (``parent_nodes``, ``value``, ``operator``,
  ``partial_derivative``): one box per node;
- ``Value`` and ``Tensor`` objects (``_parents``, ``_op``, ``data``, ``grad``, ``label``):
  one box per value and a small ellipse for the operation that produced it, as in
  micrograd's drawings. Array data and gradients are shown by their shape.

Node ids count up in the order the graph is walked, so the same graph gives the same
SVG on every run. Graphs of more than ``max_nodes`` nodes are refused (graphviz would
spend minutes laying out a drawing nobody can read); counting stops at the limit, so
the refusal is immediate however big the graph is.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import graphviz
import numpy as np

from course_lib.graph import evaluation_order, node_names
from course_lib.toposort import postorder


def draw_graph(
    root: Any,
    rankdir: str = "LR",
    size: str = "8,5",
    order: Sequence[Any] | None = None,
    digits: int = 3,
    max_nodes: int = 200,
) -> graphviz.Digraph:
    """Draw ``root`` and everything it was computed from.

    ``root`` may be one output or a list of outputs. ``order`` (for example the list a
    sweep returns) numbers each node by its position in that list, to show the order in
    which a sweep visits the nodes. ``size`` is graphviz's maximum size in inches, so
    big graphs shrink to fit; ``digits`` sets the decimals shown. A graph of more than
    ``max_nodes`` values is refused with a ValueError.
    """
    roots = list(root) if isinstance(root, (list, tuple)) else [root]
    parents = attrgetter("parent_nodes" if hasattr(roots[0], "parent_nodes") else "_parents")
    if hasattr(roots[0], "parent_nodes") or hasattr(roots[0], "_parents"):
        _check_size(roots, parents, max_nodes)
    dot = graphviz.Digraph(graph_attr={"rankdir": rankdir, "size": size}, node_attr={"fontsize": "11"})
    step = {id(node): k for k, node in enumerate(order or (), start=1)}
    if hasattr(roots[0], "parent_nodes"):
        _draw_explicit_graph(dot, roots, step, digits)
    elif hasattr(roots[0], "_parents"):
        _draw_value_graph(dot, roots, step, digits)
    else:
        raise TypeError(
            f"draw_graph() draws graph.Node, scalar.Value or Tensor objects, got {type(roots[0]).__name__}."
        )
    return dot


def _draw_explicit_graph(dot: graphviz.Digraph, roots: list, step: dict[int, int], digits: int) -> None:
    nodes = evaluation_order(*roots)
    names = node_names(nodes)
    ids = {id(node): f"n{k}" for k, node in enumerate(nodes)}
    for node in nodes:
        fields = [_step_prefix(step, node) + names[id(node)]]
        if node.operator not in ("input", "const"):
            fields.append(node.operator)
        fields += [f"value {_number(node.value, digits)}", f"∂ {_number(node.partial_derivative, digits)}"]
        dot.node(ids[id(node)], "{" + " | ".join(_escape(f) for f in fields) + "}", shape="record")
        for parent in node.parent_nodes:
            dot.edge(ids[id(parent)], ids[id(node)])


def _draw_value_graph(dot: graphviz.Digraph, roots: list, step: dict[int, int], digits: int) -> None:
    nodes = _walk(roots, lambda v: v._parents)
    ids = {id(node): f"n{k}" for k, node in enumerate(nodes)}
    for node in nodes:
        name = _step_prefix(step, node) + getattr(node, "label", "")
        fields = ([name] if name else []) + [
            f"data {_summary(node.data, digits)}",
            f"grad {_summary(node.grad, digits)}",
        ]
        dot.node(ids[id(node)], "{" + " | ".join(_escape(f) for f in fields) + "}", shape="record")
        if node._op:
            op_id = ids[id(node)] + "_op"
            dot.node(op_id, _escape(node._op), shape="ellipse", width="0.3", height="0.3", margin="0.02")
            dot.edge(op_id, ids[id(node)])
            for parent in node._parents:
                dot.edge(ids[id(parent)], op_id)


def _check_size(roots: list, parents: Any, max_nodes: int) -> None:
    """Raise if more than ``max_nodes`` nodes lead to the roots (the walk stops right there)."""
    seen = {id(root) for root in roots}
    stack = list(roots)
    while stack:
        for parent in parents(stack.pop()):
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
        if len(seen) > max_nodes:
            raise ValueError(
                f"draw_graph: the graph has more than max_nodes={max_nodes} nodes, too many to draw readably "
                "(and graphviz would take minutes to lay it out). Draw a smaller piece (one layer, a shorter "
                "chain, a few inputs) or pass a larger max_nodes")


def _walk(roots: list, parents: Any) -> list:
    """Every node the roots depend on, once each, parents before children."""
    seen: set[int] = set()
    nodes = []
    for root in roots:
        for node in postorder(root, parents):
            if id(node) not in seen:
                seen.add(id(node))
                nodes.append(node)
    return nodes


def _step_prefix(step: dict[int, int], node: Any) -> str:
    return f"{step[id(node)]}: " if id(node) in step else ""


def _number(x: float, digits: int) -> str:
    return f"{x:.{digits}f}"


def _summary(x: Any, digits: int) -> str:
    """A number as a number, an array by its shape (its value if it has one element)."""
    if x is None:
        return "None"
    if isinstance(x, numbers.Real):
        return _number(x, digits)
    array = np.asarray(x)
    if array.ndim == 0:
        return _number(float(array), digits)
    return "shape " + str(array.shape)


def _escape(text: str) -> str:
    """Protect the characters that structure a graphviz record label."""
    for ch in "\\{}|<>":
        text = text.replace(ch, "\\" + ch)
    return text
