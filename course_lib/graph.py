"""An explicit computational graph with forward (tangent) and reverse (adjoint) sweeps.

Each wrapping function (``add``, ``mul``, ``log``, ...) computes a value, creates one
:class:`Node` for it and links the node to its parents in both directions. It also
stores the local derivatives d node / d parent right away, while the parents' values
are at hand: both sweeps only combine these numbers with the chain rule. The value and
the local derivatives of every primitive are written once, in :data:`PRIMITIVES`.

- ``forward(x)`` visits the nodes reachable from ``x`` (parents before children) and
  sets ``partial_derivative`` to d node / d x.
- ``reverse(y)`` visits the ancestors of ``y`` (children before parents) and sets
  ``partial_derivative`` to d y / d node, each node *pulling* from its children.

``evaluation_trace``, ``tangent_table`` and ``adjoint_table`` return the rows of the
tables printed in the chapters; ``format_table`` turns rows into aligned text.
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
import unicodedata
from operator import attrgetter

from course_lib.toposort import postorder

__all__ = [
    "Node",
    "PRIMITIVES",
    "maths",
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
    "evaluation_order",
    "node_names",
    "evaluation_trace",
    "tangent_table",
    "adjoint_table",
    "format_table",
]

_creation_counter = itertools.count()
_parents_of = attrgetter("parent_nodes")
_children_of = attrgetter("child_nodes")


class Node:
    """One value of the computation and its links.

    ``Node(value, name)`` makes an input. The wrapping functions make the other nodes;
    they set ``parent_nodes``, ``operator`` and ``grad_wrt_parents`` (the local
    derivative with respect to each parent, in the same order) and add the new node to
    each parent's ``child_nodes``. ``partial_derivative`` holds the result of the last
    sweep.
    """

    def __init__(self, value: float, name: str = "") -> None:
        if not isinstance(value, (float, numbers.Real)):  # float: Python floats, NumPy floats and ints too
            raise TypeError(f"Node() needs a real number as its value, got {type(value).__name__}.")
        self.value = float(value)
        self.name = name
        self.parent_nodes: list[Node] = []
        self.child_nodes: list[Node] = []
        self.operator = "input"
        self.grad_wrt_parents: list[float] = []
        self.partial_derivative = 0.0
        self._created = next(_creation_counter)  # breaks ties in evaluation_order

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"Node({name}value={self.value:.6g}, operator={self.operator!r})"


def _as_node(x: Node | float, function: str) -> Node:
    if isinstance(x, Node):
        return x
    if isinstance(x, numbers.Real):
        node = Node(x)
        node.operator = "const"
        return node
    raise TypeError(f"{function}() takes Nodes or numbers, got {type(x).__name__}.")


#: Every primitive in one row: its value and its local derivative with respect to each
#: parent, written once, as Python formulas over the parents' values ``a`` and ``b``.
#: The wrapping functions evaluate them; the chapters' tables print them (:func:`maths`).
PRIMITIVES: dict[str, tuple[str, tuple[str, ...]]] = {
    "add": ("a + b", ("1", "1")),
    "sub": ("a - b", ("1", "-1")),
    "mul": ("a * b", ("b", "a")),
    "div": ("a / b", ("1/b", "-a/b**2")),
    "log": ("log(a)", ("1/a",)),
    "sin": ("sin(a)", ("cos(a)",)),
    "cos": ("cos(a)", ("-sin(a)",)),
    "exp": ("exp(a)", ("exp(a)",)),
}
_MATH = {"__builtins__": {}, "log": math.log, "sin": math.sin, "cos": math.cos, "exp": math.exp}
_COMPILED = {f: compile(f, f, "eval") for value, local in PRIMITIVES.values() for f in (value, *local)}


def _evaluate(formula: str, parents: list[Node]) -> float:
    """The number a formula of :data:`PRIMITIVES` gives for these parents."""
    return float(eval(_COMPILED[formula], _MATH, dict(zip("ab", (p.value for p in parents)))))


def maths(formula: str) -> str:
    """A formula of :data:`PRIMITIVES` as the chapters print it, with the parents as
    ``{0}``, ``{1}``: ``"-a/b**2"`` becomes ``"−{0}/{1}²"``, ``"cos(a)"`` ``"cos {0}"``."""
    text = re.sub(r"\b[ab]\b", lambda m: f"{{{'ab'.index(m.group())}}}", formula)
    text = re.sub(r"(\w+)\((.*?)\)", r"\1 \2", text)
    return text.replace("**2", "²").replace("*", "×").replace("-", "−")


def _new_node(operator: str, parents: list[Node]) -> Node:
    """Create the node for one operation and link it into the graph.

    The value and the local derivatives are computed now, while the parents' values are
    at hand; both sweeps later only combine the stored numbers with the chain rule.
    """
    value, local_derivatives = PRIMITIVES[operator]
    node = Node(_evaluate(value, parents))
    node.operator = operator
    node.parent_nodes = parents
    node.grad_wrt_parents = [_evaluate(d, parents) for d in local_derivatives]
    for parent in dict.fromkeys(parents):  # x * x: link x -> node once, not twice
        parent.child_nodes.append(node)
    return node


# ---- wrapping functions -----------------------------------------------------------------


def add(a: Node | float, b: Node | float) -> Node:
    """The node ``a + b``."""
    return _new_node("add", [_as_node(a, "add"), _as_node(b, "add")])


def sub(a: Node | float, b: Node | float) -> Node:
    """The node ``a - b``."""
    return _new_node("sub", [_as_node(a, "sub"), _as_node(b, "sub")])


def mul(a: Node | float, b: Node | float) -> Node:
    """The node ``a * b``."""
    return _new_node("mul", [_as_node(a, "mul"), _as_node(b, "mul")])


def div(a: Node | float, b: Node | float) -> Node:
    """The node ``a / b``, for ``b != 0``."""
    a, b = _as_node(a, "div"), _as_node(b, "div")
    if b.value == 0:
        raise ZeroDivisionError("div(a, b) with b.value == 0: the quotient and its derivatives are undefined.")
    return _new_node("div", [a, b])


def log(a: Node | float) -> Node:
    """The node ``log(a)``, for ``a > 0``."""
    a = _as_node(a, "log")
    if a.value <= 0:
        raise ValueError(f"log() needs a positive input, got {a.value}.")
    return _new_node("log", [a])


def sin(a: Node | float) -> Node:
    """The node ``sin(a)``."""
    return _new_node("sin", [_as_node(a, "sin")])


def cos(a: Node | float) -> Node:
    """The node ``cos(a)``."""
    return _new_node("cos", [_as_node(a, "cos")])


def exp(a: Node | float) -> Node:
    """The node ``exp(a)``."""
    return _new_node("exp", [_as_node(a, "exp")])


# ---- topological orders and sweeps -------------------------------------------------------


def topological_order_forward(x: Node) -> list[Node]:
    """The nodes reachable from ``x`` along child links, ``x`` first, each node before its children."""
    return postorder(x, _children_of)[::-1]


def topological_order_reverse(y: Node) -> list[Node]:
    """The ancestors of ``y`` (``y`` included), ``y`` first, each node before its parents."""
    return postorder(y, _parents_of)[::-1]


def _clear(start: Node) -> None:
    """Set partial_derivative = 0 on every node connected to ``start`` (a clean slate)."""
    for node in postorder(start, lambda n: n.parent_nodes + n.child_nodes):
        node.partial_derivative = 0.0


def forward(x: Node) -> list[Node]:
    """Forward mode: ``partial_derivative`` = d node / d x (0 where ``x`` has no influence).

    Returns the nodes in the order the sweep visited them.
    """
    _clear(x)
    order = topological_order_forward(x)
    x.partial_derivative = 1.0
    for node in order[1:]:
        node.partial_derivative = sum(
            local * parent.partial_derivative for parent, local in zip(node.parent_nodes, node.grad_wrt_parents)
        )
    return order


def reverse(y: Node) -> list[Node]:
    """Reverse mode: ``partial_derivative`` = d y / d node for every ancestor of ``y``.

    Each node pulls from its children: the adjoint of a child times the local
    derivative stored in the child for this parent. Children that are not ancestors of
    ``y`` (other outputs) are skipped: ``y`` does not depend on them. Returns the nodes
    in the order the sweep visited them.
    """
    _clear(y)
    order = topological_order_reverse(y)
    ancestors = {id(node) for node in order}
    y.partial_derivative = 1.0
    for node in order[1:]:
        node.partial_derivative = sum(
            child.partial_derivative * local
            for child in node.child_nodes
            if id(child) in ancestors
            for parent, local in zip(child.parent_nodes, child.grad_wrt_parents)
            if parent is node
        )
    return order


# ---- tables for the chapters ---------------------------------------------------------------

_DOT, _BAR = "\u0307", "\u0304"  # combining dot (tangent) and bar (adjoint) above a letter


def _local_derivatives(node: Node) -> list[str]:
    """The printed local derivatives of ``node`` with respect to its parents, as templates."""
    return [maths(d) for d in PRIMITIVES[node.operator][1]]


def evaluation_order(*outputs: Node) -> list[Node]:
    """The ancestors of ``outputs`` in the order of an evaluation trace.

    Nodes go level by level, a node's level being its longest distance from an input
    (inputs and constants are level 0), and in creation order within a level. This is
    a topological order, and it numbers ``sub(add(log(x1), mul(x1, x2)), sin(x2))`` as
    Baydin et al. (2018) do: v1 = log x1, v2 = x1 × x2, v3 = sin x2, v4, v5.
    """
    level: dict[int, int] = {}
    nodes = []
    for output in outputs:
        for node in postorder(output, _parents_of):  # parents before children
            if id(node) not in level:
                level[id(node)] = 1 + max((level[id(p)] for p in node.parent_nodes), default=-1)
                nodes.append(node)
    return sorted(nodes, key=lambda node: (level[id(node)], node._created))


def node_names(nodes: list[Node]) -> dict[int, str]:
    """Display names keyed by ``id(node)``: a node's own ``name`` if set, a constant's
    value, otherwise ``x1, x2, ...`` for inputs and ``v1, v2, ...`` for the other
    nodes, numbered in the order of ``nodes`` (give :func:`evaluation_order`)."""
    taken = {node.name for node in nodes if node.name}
    counters = {"x": itertools.count(1), "v": itertools.count(1)}
    names = {}
    for node in nodes:
        if node.name:
            names[id(node)] = node.name
        elif node.operator == "const":
            names[id(node)] = f"{node.value:g}"
        else:
            prefix = "x" if node.operator == "input" else "v"
            names[id(node)] = next(f"{prefix}{k}" for k in counters[prefix] if f"{prefix}{k}" not in taken)
    return names


def _mark(name: str, accent: str) -> str:
    """``v1`` -> ``v̇1``: the accent goes on the first character (precomposed where
    Unicode has the letter, as for ẋ, so the text can be searched and compared)."""
    return unicodedata.normalize("NFC", name[0] + accent + name[1:])


def _chain_term(factor: str, symbol: str) -> str:
    """One product of the chain rule, written the way one would by hand."""
    if factor == "1":
        return symbol
    if factor == "−1":
        return "−" + symbol
    if factor.startswith("1/"):
        return f"{symbol} / {factor[2:]}"
    if factor.startswith("−"):
        return f"−{symbol} × {factor[1:]}"
    return f"{symbol} × {factor}"


def _sum_terms(terms: list[str]) -> str:
    text = " + ".join(terms)
    return text.replace("+ −", "− ")


def evaluation_trace(y: Node) -> list[tuple[str, str, float]]:
    """Rows ``(name, expression, value)`` of the evaluation trace (Wengert list) of ``y``.

    Inputs come first with an empty expression; constants appear inside expressions.
    """
    nodes = evaluation_order(y)
    names = node_names(nodes)
    rows = []
    for node in nodes:
        if node.operator == "const":
            continue
        if node.operator == "input":
            rows.append((names[id(node)], "", node.value))
        else:
            parents = [names[id(p)] for p in node.parent_nodes]
            rows.append((names[id(node)], maths(PRIMITIVES[node.operator][0]).format(*parents), node.value))
    return rows


def tangent_table(x: Node, y: Node) -> list[tuple[str, str, float]]:
    """Run ``forward(x)`` and return rows ``(v̇, expression, value)`` for the trace of ``y``,
    where v̇ = d v / d x. Inputs show their seed (1 for ``x``, 0 for the others)."""
    forward(x)
    nodes = evaluation_order(y)
    names = node_names(nodes)
    rows = []
    for node in nodes:
        if node.operator == "const":
            continue
        expression = ""
        if node.operator != "input":
            parents = [names[id(p)] for p in node.parent_nodes]
            terms = [
                _chain_term(factor.format(*parents), _mark(names[id(p)], _DOT))
                for p, factor in zip(node.parent_nodes, _local_derivatives(node))
                if p.operator != "const"  # a constant's tangent is 0
            ]
            expression = _sum_terms(terms) if terms else "0"
        rows.append((_mark(names[id(node)], _DOT), expression, node.partial_derivative))
    return rows


def adjoint_table(y: Node) -> list[tuple[str, str, float]]:
    """Run ``reverse(y)`` and return rows ``(v̄, expression, value)``, where v̄ = d y / d v,
    from ``y`` back to the inputs. Each expression pulls from the node's children."""
    reverse(y)
    nodes = evaluation_order(y)
    names = node_names(nodes)
    ancestors = {id(node) for node in nodes}
    rows = []
    for node in reversed(nodes):
        if node.operator == "const":
            continue
        terms = []
        for child in node.child_nodes:
            if id(child) not in ancestors:
                continue
            parents = [names[id(p)] for p in child.parent_nodes]
            for p, factor in zip(child.parent_nodes, _local_derivatives(child)):
                if p is node:
                    terms.append(_chain_term(factor.format(*parents), _mark(names[id(child)], _BAR)))
        expression = "" if node is y else _sum_terms(terms)
        rows.append((_mark(names[id(node)], _BAR), expression, node.partial_derivative))
    return rows


def _width(text: str) -> int:
    """Printed width: combining accents take no room of their own."""
    return sum(not unicodedata.combining(ch) for ch in text)


def format_table(rows: list[tuple], digits: int = 3) -> str:
    """Aligned text for rows such as ``("v1", "log x1", 0.693)``: ``v1 = log x1 = 0.693``.

    Text columns are left-aligned, numbers right-aligned with ``digits`` decimals; an
    empty cell is left blank together with its ``=`` sign.
    """
    cells = [[f"{c:.{digits}f}" if isinstance(c, numbers.Real) else str(c) for c in row] for row in rows]
    numeric = [isinstance(c, numbers.Real) for c in rows[0]] if rows else []
    widths = [max(_width(row[j]) for row in cells) for j in range(len(numeric))]
    lines = []
    for row in cells:
        parts = []
        for j, cell in enumerate(row):
            pad = " " * (widths[j] - _width(cell))
            parts.append(pad + cell if numeric[j] else cell + pad)
            if j < len(row) - 1:
                parts.append("   " if cell == "" else " = ")
        lines.append("".join(parts).rstrip())
    return "\n".join(lines)
