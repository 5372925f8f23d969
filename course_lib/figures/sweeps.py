"""Pictures of the two sweeps: a backward pass step by step, and the Jacobian that forward
mode fills by columns and reverse mode by rows.

``backward_stepper`` replays a backward pass on a graph the chapter has built, one frame per
node, as a :class:`~course_lib.figures.stepper.Stepper` (buttons and a slider in the page, an
ipywidgets slider in a kernel). Every frame is the same graph in the same layout: the step's
node is filled, the edges it uses are highlighted, each edge carries its local derivative, and
the caption names the nodes the step sums from or sends to, with the numbers. The numbers are
the engine's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import graphviz
import matplotlib.pyplot as plt
import numpy as np

from course_lib import graph
from course_lib.figures.stepper import Frame, Stepper
from course_lib.graph import PRIMITIVES, Node
from course_lib.scalar import Value
from course_lib.toposort import postorder
from course_lib.viz import Edge, draw_graph, fixed_boxes, op_symbol

__all__ = ["backward_stepper", "jacobian_columns_and_rows"]


class _Step(NamedTuple):
    drawing: graphviz.Digraph
    caption: str
    alt: str


def backward_stepper(root: Node | Value, name: str, digits: int = 3) -> Stepper:
    """The backward pass from ``root``, one frame per node of its graph; ``name`` is the HTML id.
    The graph is drawn bottom to top, so the output, where the sweep starts, is on top, next to
    the stepper's controls.

    For an explicit graph (``graph.Node``, chapter 4) a step *pulls*: the filled node's
    adjoint is the sum over its children of the child's adjoint times the local derivative
    on the edge, in the order of ``graph.reverse``. For a ``Value`` (chapter 5) a step
    *pushes*: the filled node's ``_backward`` adds its grad times the local derivative to
    each parent's ``.grad``, in the order of ``backward()`` (leaves, which have nothing to
    pass on, get a frame too). Adjoints not computed yet are shown as ``?``. The replay
    leaves the engine's results on the nodes, as the sweep itself would.
    """
    if isinstance(root, Node):
        steps, title = _pull_steps(root, digits), "The reverse sweep, one node per step"
    elif isinstance(root, Value):
        steps, title = _push_steps(root, digits), "backward(), one node per step"
    else:
        raise TypeError(f"backward_stepper() takes a graph.Node or a scalar.Value, got {type(root).__name__}.")
    drawings = fixed_boxes([step.drawing for step in steps])
    frames = [Frame(dot.pipe(format="svg", encoding="utf-8"), s.caption, s.alt) for dot, s in zip(drawings, steps)]
    return Stepper(frames, name, title)


def _pull_steps(y: Node, digits: int) -> list[_Step]:
    order = graph.reverse(y)  # every node's partial_derivative is now final
    names = graph.node_names(graph.evaluation_order(y))
    drawn = {id(node) for node in order}
    local: dict[Edge, float] = {}
    for child in order:
        for parent, derivative in zip(child._parents, child.grad_wrt_parents):
            local[id(parent), id(child)] = local.get((id(parent), id(child)), 0.0) + derivative
    num = _numbers(digits)
    labels = {edge: f"×{num(d)}" for edge, d in local.items()}
    structure = _structure(graph.evaluation_order(y), names, _explicit_formula, labels, "input")
    known: dict[int, float | None] = {}
    steps = []
    for k, node in enumerate(order, start=1):
        known[id(node)] = node.partial_derivative
        me = names[id(node)]
        children = [child for child in node._children if id(child) in drawn]
        if node is y:
            what = f"{me} is the output, so its adjoint is {_bar(me)} = ∂{me}/∂{me} = 1."
        else:
            symbols = " + ".join(f"{_bar(names[id(c)])} × ∂{names[id(c)]}/∂{me}" for c in children)
            products = _products([(c.partial_derivative, local[id(node), id(c)]) for c in children], num)
            what = (
                f"{me} sums over its {_children_word(children)} {_listing([names[id(c)] for c in children])}: "
                f"{_bar(me)} = {symbols} = {products} = {num(node.partial_derivative)}."
            )
        edges = [(id(node), id(child)) for child in children]
        drawing = draw_graph(
            y, "BT", highlight=[node], grads=dict(known), digits=digits, edge_labels=labels, highlight_edges=edges
        )
        used = "; the step uses the edges to " + _listing([names[id(c)] for c in children]) if children else ""
        state = _state(order, names, known, num, "adjoint")
        steps.append(
            _Step(drawing, f"Step {k} of {len(order)}: {what}", f"{structure} Step {k}: {me} is filled{used}. {state}")
        )
    return steps


def _push_steps(root: Value, digits: int) -> list[_Step]:
    topo = postorder(root, lambda v: v._parents)
    names = _value_names(topo)
    local = _value_local_derivatives(topo)
    num = _numbers(digits)
    labels = {edge: f"×{num(d)}" for edge, d in local.items()}
    leaves_first = [n for n in topo if not n._parents] + [n for n in topo if n._parents]
    structure = _structure(leaves_first, names, _value_formula, labels, "leaf")
    for node in topo:
        node.grad = 0.0
    root.grad = 1.0
    known: dict[int, float | None] = {id(root): 1.0}
    steps = []
    for k, node in enumerate(reversed(topo), start=1):
        me, grad = names[id(node)], node.grad
        parents = list(dict.fromkeys(node._parents))
        before = {id(p): p.grad for p in parents}
        node._backward(grad)
        sends = []
        for parent in parents:
            known[id(parent)] = parent.grad
            received = parent.grad - before[id(parent)]
            total = f" (now {num(parent.grad)})" if before[id(parent)] else ""
            sends.append(
                f"{names[id(parent)]}.grad += {num(grad)} × {_factor(local[id(parent), id(node)], num)} "
                f"= {num(received)}{total}"
            )
        if parents:
            seed = f" (the seed, ∂{me}/∂{me})" if node is root else ", complete now"
            what = (
                f"{me} runs its _backward with its grad {num(grad)}{seed}, and sends to its "
                f"{_parents_word(parents)} {_listing([names[id(p)] for p in parents])}: {'; '.join(sends)}."
            )
            used = "; the step uses the edges from " + _listing([names[id(p)] for p in parents])
        else:
            what = f"{me} is a leaf: its grad {num(grad)} is complete, and it has no parents to send to."
            used = ""
        edges = [(id(parent), id(node)) for parent in parents]
        drawing = draw_graph(
            root, "BT", highlight=[node], grads=dict(known), digits=digits, edge_labels=labels, highlight_edges=edges
        )
        state = _state(topo[::-1], names, known, num, "grad")
        steps.append(
            _Step(drawing, f"Step {k} of {len(topo)}: {what}", f"{structure} Step {k}: {me} is filled{used}. {state}")
        )
    return steps


# ---- names, formulas and numbers in captions and text alternatives -------------------------


def _value_names(topo: list[Value]) -> dict[int, str]:
    """A Value's label; else ``op(parents)`` for a result, its number for a constant."""
    names: dict[int, str] = {}
    for node in topo:  # parents first, so their names are known
        if node.label:
            names[id(node)] = node.label
        elif node._parents:
            names[id(node)] = f"{node._op}({', '.join(names[id(p)] for p in node._parents)})"
        else:
            names[id(node)] = f"{node.data:g}"
    return names


def _value_local_derivatives(topo: list[Value]) -> dict[Edge, float]:
    """d node / d parent for every edge, read off the node's own ``_backward`` run with grad 1
    (a parent used twice, as in ``x * x``, gets the sum of both uses). Changes ``.grad``."""
    local = {}
    for node in topo:
        parents = list(dict.fromkeys(node._parents))
        for parent in parents:
            parent.grad = 0.0
        node._backward(1.0)
        for parent in parents:
            local[id(parent), id(node)] = parent.grad
    return local


def _explicit_formula(node: Node, names: dict[int, str]) -> str:
    return graph.maths(PRIMITIVES[node._op][0]).format(*(names[id(p)] for p in node._parents))


def _value_formula(node: Value, names: dict[int, str]) -> str:
    parents = [names[id(p)] for p in node._parents]
    if len(parents) == 2:
        return f"{parents[0]} {op_symbol(node._op)} {parents[1]}"
    return f"{node._op}({', '.join(parents)})"


def _structure(
    nodes: Sequence[Any],
    names: dict[int, str],
    formula: Callable[[Any, dict[int, str]], str],
    labels: dict[Edge, str],
    leaf_word: str,
) -> str:
    """What every frame shows: the nodes with their values, and the local derivative on each edge."""
    parts = []
    for node in nodes:
        name, value = names[id(node)], _minus(f"{node.data:.3f}")
        if not node._parents:
            parts.append(f"{name} = {value} ({'a constant' if getattr(node, '_op', '') == 'const' else leaf_word})")
        elif name == formula(node, names) or "(" in name:
            parts.append(f"{name} = {value}")
        else:
            parts.append(f"{name} = {formula(node, names)} = {value}")
    edges = []
    for node in nodes:
        for parent in dict.fromkeys(node._parents):
            edges.append(f"{names[id(parent)]} to {names[id(node)]} {labels[id(parent), id(node)]}")
    return (
        f"The graph of {names[id(nodes[-1])]}, arrows from each node to the nodes computed from it: "
        f"{'; '.join(parts)}. Each arrow carries its local derivative: {', '.join(edges)}."
    )


def _state(order: Sequence[Any], names: dict[int, str], known: dict, num: Callable, what: str) -> str:
    done = [f"{names[id(n)]} {num(known[id(n)])}" for n in order if id(n) in known]
    pending = [names[id(n)] for n in order if id(n) not in known]
    text = f"The {what}s shown so far: {', '.join(done)}."
    return text + (f" Not reached yet, shown as a question mark: {', '.join(pending)}." if pending else "")


def _numbers(digits: int) -> Callable[[float], str]:
    return lambda x: _minus(f"{x:.{digits}f}")


def _minus(text: str) -> str:
    return text.replace("-", "−")


def _factor(x: float, num: Callable[[float], str]) -> str:
    """A factor after ``×``: in brackets when negative."""
    return f"({num(x)})" if x < 0 else num(x)


def _products(terms: list[tuple[float, float]], num: Callable[[float], str]) -> str:
    """``a × b + c × d`` with the signs folded: ``1.000 × 2.000 − 1.000 × 0.284``."""
    text = ""
    for k, (a, b) in enumerate(terms):
        if k == 0:
            text = f"{num(a)} × {_factor(b, num)}"
        else:
            text += f" {'−' if a < 0 else '+'} {num(abs(a))} × {_factor(b, num)}"
    return text


def _bar(name: str) -> str:
    """The adjoint's symbol: a bar over the name's first letter (``x̄1``)."""
    return graph._mark(name, graph._BAR)


def _listing(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _children_word(nodes: list) -> str:
    return "child" if len(nodes) == 1 else "children"


def _parents_word(nodes: list) -> str:
    return "parent" if len(nodes) == 1 else "parents"


def jacobian_columns_and_rows(
    J: np.ndarray, column: int, row: int, inputs: Sequence[str], outputs: Sequence[str]
) -> None:
    """The Jacobian twice: one forward sweep (a JVP seeded with e_column) fills a column,
    one reverse sweep (a VJP seeded with e_row) fills a row."""
    m, n = J.shape
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    panels: list[tuple[Any, tuple[Any, Any], str, str]] = [
        (
            axes[0],
            (slice(None), column),
            f"forward sweep seeded at {inputs[column]}:\na JVP gives column {column + 1}",
            "C0",
        ),
        (axes[1], (row, slice(None)), f"reverse sweep seeded at {outputs[row]}:\na VJP gives row {row + 1}", "C3"),
    ]
    for ax, picked, title, colour in panels:
        mask = np.zeros_like(J, dtype=bool)
        mask[picked] = True
        ax.imshow(mask, cmap=plt.matplotlib.colors.ListedColormap(["#f2f2f2", colour]), alpha=0.35, vmin=0, vmax=1)
        for i in range(m):
            for j in range(n):
                ax.text(
                    j,
                    i,
                    f"{J[i, j]:.3f}",
                    ha="center",
                    va="center",
                    fontsize=13,
                    fontweight="bold" if mask[i, j] else "normal",
                )
        ax.set_xticks(range(n), [f"∂/∂{name}" for name in inputs])
        ax.set_yticks(range(m), list(outputs))
        ax.tick_params(length=0)
        ax.set_xticks(np.arange(n + 1) - 0.5, minor=True)
        ax.set_yticks(np.arange(m + 1) - 0.5, minor=True)
        ax.grid(which="minor", color="white", lw=2)
        ax.grid(which="major", visible=False)
        ax.set_title(title, fontsize=12)
    fig.suptitle(f"The {m}×{n} Jacobian: n = {n} forward sweeps or m = {m} reverse sweeps fill it", fontsize=12)
    fig.tight_layout()
    plt.show()
