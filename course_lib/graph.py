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
import warnings
from collections.abc import Callable
from operator import attrgetter
from typing import Any

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
_parents_of = attrgetter("_parents")
_children_of = attrgetter("_children")


class Node:
    """One value of the computation and its links, with the field names of the other engines.

    ``Node(data, label)`` makes an input. The wrapping functions make the other nodes;
    they set ``_parents``, ``_op`` and ``grad_wrt_parents`` (the local derivative with
    respect to each parent, in the same order) and add the new node to each parent's
    ``_children``. ``partial_derivative`` holds the result of the last sweep.
    """

    def __init__(self, data: float, label: str = "", *, name: str | None = None) -> None:
        if not isinstance(data, (float, numbers.Real)):  # float: Python floats, NumPy floats and ints too
            raise TypeError(f"Node() needs a real number as its value, got {type(data).__name__}.")
        if name is not None:
            _renamed("name", "label")
            label = name
        self.data = float(data)
        self.label = label
        self._parents: list[Node] = []
        self._children: list[Node] = []
        self._op = "input"
        self.grad_wrt_parents: list[float] = []
        self.partial_derivative = 0.0
        self._created = next(_creation_counter)  # breaks ties in evaluation_order

    def __repr__(self) -> str:
        label = f"{self.label!r}, " if self.label else ""
        return f"Node({label}data={self.data:.6g}, op={self._op!r})"


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"Node.{old} is now Node.{new}, as in the other engines", PendingDeprecationWarning, stacklevel=3)


def _alias(old: str, new: str) -> property:
    """The field ``new`` under its old name ``old``, with a warning on every use.

    The warning is a PendingDeprecationWarning, silent unless warnings are switched on: an
    assignment notebook that still uses an old name must not print to stderr (a graded
    test cell that does loses its points)."""

    def get(node: Node) -> Any:
        _renamed(old, new)
        return getattr(node, new)

    def set(node: Node, value: Any) -> None:
        _renamed(old, new)
        setattr(node, new, value)

    return property(get, set, doc=f"Deprecated name of ``{new}``.")


for _old, _new in [
    ("value", "data"),
    ("name", "label"),
    ("operator", "_op"),
    ("parent_nodes", "_parents"),
    ("child_nodes", "_children"),
]:
    setattr(Node, _old, _alias(_old, _new))


def _as_node(x: Node | float, function: str) -> Node:
    if isinstance(x, Node):
        return x
    if isinstance(x, numbers.Real):
        node = Node(x)
        node._op = "const"
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
    return float(eval(_COMPILED[formula], _MATH, dict(zip("ab", (p.data for p in parents)))))


def maths(formula: str) -> str:
    """A formula of :data:`PRIMITIVES` as the chapters print it, with the parents as
    ``{0}``, ``{1}``: ``"-a/b**2"`` becomes ``"−{0}/{1}²"``, ``"cos(a)"`` ``"cos {0}"``."""
    text = re.sub(r"\b[ab]\b", lambda m: f"{{{'ab'.index(m.group())}}}", formula)
    text = re.sub(r"(\w+)\((.*?)\)", r"\1 \2", text)
    return text.replace("**2", "²").replace("*", "×").replace("-", "−")


def _new_node(op: str, parents: list[Node]) -> Node:
    """Create the node for one operation and link it into the graph.

    The value and the local derivatives are computed now, while the parents' values are
    at hand; both sweeps later only combine the stored numbers with the chain rule.
    """
    value, local_derivatives = PRIMITIVES[op]
    node = Node(_evaluate(value, parents))
    node._op = op
    node._parents = parents
    node.grad_wrt_parents = [_evaluate(d, parents) for d in local_derivatives]
    for parent in dict.fromkeys(parents):  # x * x: link x -> node once, not twice
        parent._children.append(node)
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
    if b.data == 0:
        raise ZeroDivisionError("div(a, b) with b.data == 0: the quotient and its derivatives are undefined.")
    return _new_node("div", [a, b])


def log(a: Node | float) -> Node:
    """The node ``log(a)``, for ``a > 0``."""
    a = _as_node(a, "log")
    if a.data <= 0:
        raise ValueError(f"log() needs a positive input, got {a.data}.")
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
    for node in postorder(start, lambda n: n._parents + n._children):
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
            local * parent.partial_derivative for parent, local in zip(node._parents, node.grad_wrt_parents)
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
            for child in node._children
            if id(child) in ancestors
            for parent, local in zip(child._parents, child.grad_wrt_parents)
            if parent is node
        )
    return order


# ---- tables for the chapters ---------------------------------------------------------------

_DOT, _BAR = "\u0307", "\u0304"  # combining dot (tangent) and bar (adjoint) above a letter


def _local_derivatives(node: Node) -> list[str]:
    """The printed local derivatives of ``node`` with respect to its parents, as templates."""
    return [maths(d) for d in PRIMITIVES[node._op][1]]


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
                level[id(node)] = 1 + max((level[id(p)] for p in node._parents), default=-1)
                nodes.append(node)
    return sorted(nodes, key=lambda node: (level[id(node)], node._created))


def node_names(nodes: list[Node]) -> dict[int, str]:
    """Display names keyed by ``id(node)``: a node's own ``label`` if set, a constant's
    value, otherwise ``x1, x2, ...`` for inputs and ``v1, v2, ...`` for the other
    nodes, numbered in the order of ``nodes`` (give :func:`evaluation_order`)."""
    taken = {node.label for node in nodes if node.label}
    counters = {"x": itertools.count(1), "v": itertools.count(1)}
    names = {}
    for node in nodes:
        if node.label:
            names[id(node)] = node.label
        elif node._op == "const":
            names[id(node)] = f"{node.data:g}"
        else:
            prefix = "x" if node._op == "input" else "v"
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


def _table(y: Node, row: Callable[[Node, dict[int, str]], tuple[str, str, float]], backwards: bool = False) -> list:
    """One row per node of ``y``'s evaluation trace (constants left out), in trace order or
    ``backwards``; ``row(node, names)`` writes it, ``names`` as :func:`node_names` gives them."""
    nodes = evaluation_order(y)
    names = node_names(nodes)
    return [row(node, names) for node in (reversed(nodes) if backwards else nodes) if node._op != "const"]


def evaluation_trace(y: Node) -> list[tuple[str, str, float]]:
    """Rows ``(name, expression, value)`` of the evaluation trace (Wengert list) of ``y``.

    Inputs come first with an empty expression; constants appear inside expressions.
    """

    def row(node: Node, names: dict[int, str]) -> tuple[str, str, float]:
        if node._op == "input":
            return names[id(node)], "", node.data
        parents = [names[id(p)] for p in node._parents]
        return names[id(node)], maths(PRIMITIVES[node._op][0]).format(*parents), node.data

    return _table(y, row)


def tangent_table(x: Node, y: Node) -> list[tuple[str, str, float]]:
    """Run ``forward(x)`` and return rows ``(v̇, expression, value)`` for the trace of ``y``,
    where v̇ = d v / d x. Inputs show their seed (1 for ``x``, 0 for the others)."""
    forward(x)

    def row(node: Node, names: dict[int, str]) -> tuple[str, str, float]:
        expression = ""
        if node._op != "input":
            parents = [names[id(p)] for p in node._parents]
            terms = [
                _chain_term(factor.format(*parents), _mark(names[id(p)], _DOT))
                for p, factor in zip(node._parents, _local_derivatives(node))
                if p._op != "const"  # a constant's tangent is 0
            ]
            expression = _sum_terms(terms) if terms else "0"
        return _mark(names[id(node)], _DOT), expression, node.partial_derivative

    return _table(y, row)


def adjoint_table(y: Node) -> list[tuple[str, str, float]]:
    """Run ``reverse(y)`` and return rows ``(v̄, expression, value)``, where v̄ = d y / d v,
    from ``y`` back to the inputs. Each expression pulls from the node's children."""
    reverse(y)

    def row(node: Node, names: dict[int, str]) -> tuple[str, str, float]:
        terms = [
            _chain_term(factor.format(*(names[id(q)] for q in child._parents)), _mark(names[id(child)], _BAR))
            for child in node._children
            if id(child) in names  # an ancestor of y: other outputs do not count
            for p, factor in zip(child._parents, _local_derivatives(child))
            if p is node
        ]
        return _mark(names[id(node)], _BAR), "" if node is y else _sum_terms(terms), node.partial_derivative

    return _table(y, row, backwards=True)


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
