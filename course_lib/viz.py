"""Graphviz drawings of computational graphs.

The three engines name their fields alike (``data``, ``label``, ``_op``, ``_parents``), so
one function draws them all:

- explicit-graph ``Node`` objects: one box per node, with its operation and its
  ``partial_derivative``;
- ``Value`` and ``Tensor`` objects: one box per value (``data``, ``grad``) and a small
  ellipse for the operation that produced it, as in micrograd's drawings. Array data and
  gradients are shown by their shape.

Drawings are made to be read at the width of a book page: labels are set at 14 pt, larger
than the body text once the page shows the SVG, and the graph is not shrunk to a fixed size.
With ``rankdir="auto"`` a graph that is deeper than it is broad is laid out top to bottom,
one that is broader than deep left to right, whichever keeps it narrow; ``"BT"`` puts the
outputs on top, where a reverse sweep starts; each box stacks its fields vertically in every
layout. ``highlight``, ``grads``, ``edge_labels`` and
``highlight_edges`` draw one frame of a sweep, and :func:`fixed_boxes` gives the frames of one
sweep one layout (see ``course_lib.figures.sweeps``).

Node ids count up in the order the graph is walked, so the same graph gives the same
SVG on every run. Graphs of more than ``max_nodes`` nodes are refused (graphviz would
spend minutes laying out a drawing nobody can read); counting stops at the limit, so
the refusal is immediate however big the graph is.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Collection, Mapping, Sequence
from operator import attrgetter
from typing import Any

import graphviz
import numpy as np

from course_lib.graph import Node, evaluation_order, node_names
from course_lib.toposort import postorder

__all__ = ["draw_graph", "fixed_boxes", "op_symbol"]

# Both engines name their operations alike ("add", "mul", ...); drawings show the symbols.
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "matmul": "@"}


def op_symbol(op: str) -> str:
    """How a drawing writes the operation ``op``: ``"mul"`` as ``*``, ``"tanh"`` as itself."""
    return _SYMBOLS.get(op, op)


FONT_SIZE = "14"  # points; the book's body text is 12 pt (16 px)
HIGHLIGHT = "#ffd27f"  # fill of the node a sweep is working on
EDGE_HIGHLIGHT = "#a63d00"  # the edges a sweep's step uses: 6.6:1 against white, for lines and labels

_USED = {"color": EDGE_HIGHLIGHT, "fontcolor": EDGE_HIGHLIGHT, "penwidth": "2.5"}

Edge = tuple[int, int]  # (id(parent), id(child))


def draw_graph(
    root: Any,
    rankdir: str = "auto",
    size: str | None = None,
    order: Sequence[Any] | None = None,
    digits: int = 3,
    max_nodes: int = 200,
    highlight: Collection[Any] = (),
    grads: Mapping[int, float | None] | None = None,
    title: str | None = None,
    edge_labels: Mapping[Edge, str] | None = None,
    highlight_edges: Collection[Edge] = (),
) -> graphviz.Digraph:
    """Draw ``root`` and everything it was computed from.

    ``root`` may be one output or a list of outputs. ``rankdir`` is ``"LR"``, ``"TB"``,
    ``"BT"`` (bottom to top: the outputs on top) or ``"auto"`` (the narrower of LR and TB).
    ``order`` (for example the list a sweep returns) numbers each node by its position in that
    list, to show the order in which a sweep visits the nodes. ``size`` is graphviz's maximum
    size in inches (big graphs shrink to fit, and their labels with them: leave it unset for
    the book); ``digits`` sets the decimals shown. ``highlight`` nodes are filled; ``grads``
    (``id(node)`` -> number, or None for "not computed yet") replaces the derivatives the nodes
    hold, for drawing one moment of a sweep; ``title`` is printed under the graph. ``edge_labels`` writes a text
    on the edge from a parent to a child, keyed ``(id(parent), id(child))`` (for a ``Value``
    the edge into the operation's ellipse); with labels, a parent that an operation uses
    twice (``x * x``) gets one edge, so that each edge carries one label.
    ``highlight_edges`` (same keys) are drawn thick and coloured. A graph of more than
    ``max_nodes`` values is refused with a ValueError.
    """
    roots = list(root) if isinstance(root, (list, tuple)) else [root]
    if not hasattr(roots[0], "_parents"):
        raise TypeError(
            f"draw_graph() draws graph.Node, scalar.Value or Tensor objects, got {type(roots[0]).__name__}."
        )
    if rankdir not in ("auto", "LR", "TB", "BT"):
        raise ValueError(f"draw_graph(): rankdir must be 'auto', 'LR', 'TB' or 'BT', got {rankdir!r}.")
    explicit = isinstance(roots[0], Node)  # drawn one box per node, its operation inside
    parents = attrgetter("_parents")
    _check_size(roots, parents, max_nodes)
    nodes = evaluation_order(*roots) if explicit else _walk(roots, parents)
    if rankdir == "auto":
        rankdir = _narrower_layout(nodes, parents, ops_are_nodes=not explicit)
    graph_attr = {
        "rankdir": rankdir,
        "ranksep": "0.3",
        "nodesep": "0.25",
        **({"size": size} if size else {}),
        **({"label": title, "labelloc": "b", "fontsize": FONT_SIZE} if title else {}),
    }
    dot = graphviz.Digraph(graph_attr=graph_attr, node_attr={"fontsize": FONT_SIZE})
    style = _Style(
        step={id(node): k for k, node in enumerate(order or (), start=1)},
        digits=digits,
        stacked=rankdir in ("TB", "BT"),
        highlight={id(node) for node in highlight},
        grads=grads,
        edge_labels=edge_labels,
        highlight_edges=set(highlight_edges),
    )
    if explicit:
        _draw_explicit_graph(dot, nodes, style)
    else:
        _draw_value_graph(dot, nodes, style)
    return dot


class _Style:
    """How the boxes of one drawing are labelled and filled."""

    def __init__(
        self,
        step: dict[int, int],
        digits: int,
        stacked: bool,
        highlight: set[int],
        grads: Mapping[int, float | None] | None,
        edge_labels: Mapping[Edge, str] | None,
        highlight_edges: set[Edge],
    ) -> None:
        self.step, self.digits, self.stacked, self.highlight, self.grads = step, digits, stacked, highlight, grads
        self.edge_labels, self.highlight_edges = edge_labels, highlight_edges

    def label(self, fields: list[str]) -> str:
        """A record whose fields stack vertically (braces flip the orientation in a TB layout)."""
        body = " | ".join(_escape(f) for f in fields)
        return "{" + body + "}" if self.stacked else body

    def grad(self, node: Any, held: Any) -> str:
        if self.grads is None:
            return _summary(held, self.digits)
        value = self.grads.get(id(node))
        return "?" if value is None else _summary(value, self.digits)

    def fill(self, node: Any) -> dict[str, str]:
        return {"style": "filled", "fillcolor": HIGHLIGHT} if id(node) in self.highlight else {}

    def operands(self, node: Any) -> Sequence[Any]:
        """The parents to draw an edge from: each once when edges carry labels."""
        return list(dict.fromkeys(node._parents)) if self.edge_labels is not None else node._parents

    def edge(self, parent: Any, child: Any) -> dict[str, str]:
        """The attributes of the edge ``parent -> child``: its label, and its colour in a step."""
        key = (id(parent), id(child))
        attrs: dict[str, str] = {}
        if self.edge_labels is not None and key in self.edge_labels:
            attrs.update(label=" " + self.edge_labels[key], fontsize=FONT_SIZE)
        if key in self.highlight_edges:
            attrs.update(_USED)
        return attrs


def _narrower_layout(nodes: list, parents: Any, ops_are_nodes: bool) -> str:
    """ "TB" when the graph has more levels than nodes on its broadest level, else "LR"."""
    level: dict[int, int] = {}
    for node in nodes:  # parents come before children in ``nodes``
        step = 2 if ops_are_nodes and parents(node) else 1  # an op ellipse sits between levels
        level[id(node)] = max((level[id(p)] + step for p in parents(node)), default=0)
    depth = max(level.values()) + 1
    breadth = max(list(level.values()).count(k) for k in set(level.values()))
    return "TB" if depth > breadth else "LR"


def _draw_explicit_graph(dot: graphviz.Digraph, nodes: list, style: _Style) -> None:
    names = node_names(nodes)
    ids = {id(node): f"n{k}" for k, node in enumerate(nodes)}
    for node in nodes:
        fields = [_step_prefix(style.step, node) + names[id(node)]]
        if node._op not in ("input", "const"):
            fields.append(node._op)
        fields += [f"value {_number(node.data, style.digits)}", f"∂ {style.grad(node, node.partial_derivative)}"]
        dot.node(ids[id(node)], style.label(fields), shape="record", **style.fill(node))
        for parent in style.operands(node):
            dot.edge(ids[id(parent)], ids[id(node)], **style.edge(parent, node))


def _draw_value_graph(dot: graphviz.Digraph, nodes: list, style: _Style) -> None:
    ids = {id(node): f"n{k}" for k, node in enumerate(nodes)}
    for node in nodes:
        name = _step_prefix(style.step, node) + node.label
        fields = ([name] if name else []) + [
            f"data {_summary(node.data, style.digits)}",
            f"grad {style.grad(node, node.grad)}",
        ]
        dot.node(ids[id(node)], style.label(fields), shape="record", **style.fill(node))
        if node._op:
            op_id = ids[id(node)] + "_op"
            dot.node(op_id, _escape(op_symbol(node._op)), shape="ellipse", width="0.3", height="0.3", margin="0.02")
            # the edge out of the ellipse is used whenever an edge into it is
            used = any((id(parent), id(node)) in style.highlight_edges for parent in node._parents)
            dot.edge(op_id, ids[id(node)], **(_USED if used else {}))
            for parent in style.operands(node):
                dot.edge(ids[id(parent)], op_id, **style.edge(parent, node))


def fixed_boxes(drawings: Sequence[graphviz.Digraph]) -> list[graphviz.Digraph]:
    """The drawings with every box as big as its largest version in any of them.

    Frames of one sweep draw the same graph with different labels (``?`` or a number), so
    graphviz would size and place the boxes differently in each and the picture would jump.
    Each node is laid out once per drawing, and its largest width and height become its
    smallest size everywhere: the frames then share one layout, and one width and height.
    """
    largest: dict[str, tuple[float, float]] = {}
    for dot in drawings:
        for box in json.loads(dot.pipe(format="json")).get("objects", []):
            width, height = largest.get(box["name"], (0.0, 0.0))
            largest[box["name"]] = (max(width, float(box["width"])), max(height, float(box["height"])))
    fixed = []
    for dot in drawings:
        dot = dot.copy()
        for name, (width, height) in largest.items():
            dot.node(name, width=f"{width:g}", height=f"{height:g}")  # a second statement adds to the first
        fixed.append(dot)
    return fixed


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
                "chain, a few inputs) or pass a larger max_nodes"
            )


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
        return _number(float(x), digits)
    array = np.asarray(x)
    if array.ndim == 0:
        return _number(float(array), digits)
    return "shape " + str(array.shape)


def _escape(text: str) -> str:
    """Protect the characters that structure a graphviz record label."""
    for ch in "\\{}|<>":
        text = text.replace(ch, "\\" + ch)
    return text
