"""The figures of chapters 8 to 14, one function per figure.

Graphviz drawings return a ``graphviz.Digraph``; Matplotlib figures return the ``Figure``
(already closed for pyplot, so a cell that ends with the call shows it exactly once). Drawings are laid out
to be read at the width of a book page without being scaled down: labels are set in 14 pt,
the size of the body text, and no graph is wider than about 8 inches.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Iterator

import graphviz
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from course_lib.toposort import child_count_order

FONT_PT = "14"  # the body text's size: graph labels are never smaller
STYLE = {"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3, "font.size": 11}

__all__ = [
    "engine_flowchart", "trace_diagram", "nested_derivatives", "jacobian_memory", "unbroadcast_picture",
    "iris_scatter", "training_curves", "loss_gap", "ig_path", "quadrature_errors", "attribution_bars",
    "iris_attributions", "library_curves", "gradient_cost", "mlp_step", "per_op_overhead", "deep_graphs",
    "scalar_vs_tensor",
]


def _done(fig: Figure) -> Figure:
    """Close ``fig`` for pyplot and return it: as a cell's result it is shown once, below the cell."""
    plt.close(fig)
    return fig


@contextmanager
def _style() -> Iterator[None]:
    with plt.style.context("default"), plt.rc_context(STYLE):
        yield


def _digraph(rankdir: str) -> graphviz.Digraph:
    return graphviz.Digraph(
        graph_attr={"rankdir": rankdir, "fontsize": FONT_PT, "fontname": "Helvetica", "nodesep": "0.3",
                    "ranksep": "0.35"},
        node_attr={"fontsize": FONT_PT, "fontname": "Helvetica", "shape": "box", "style": "rounded"},
        edge_attr={"fontsize": FONT_PT, "fontname": "Helvetica"},
    )


# ---- chapter 8: inside a real library ---------------------------------------------------

def engine_flowchart() -> graphviz.Digraph:
    """What ``grad(f)(x)`` does in an Autograd-style engine: trace with boxes, then sweep back."""
    dot = _digraph("TB")
    dot.node("call", "grad(f)(x)", shape="box", style="rounded,bold")
    with dot.subgraph(name="cluster_trace") as trace:
        trace.attr(label="1. trace: run f once on a box", style="dashed", labeljust="l")
        trace.node("box", "box the input:\nBox(x, start node)")
        trace.node("run", "run f's Python code\n(loops, ifs, calls)")
        trace.node("boxed", "a primitive is called:\nis an argument a Box?", shape="diamond", style="")
        trace.node("const", "plain NumPy result\n(nothing recorded)")
        trace.node("record", "unbox, call NumPy, record\nNode(parents, VJP functions),\nbox the result")
        trace.node("end", "f returns the output Box")
    dot.node("registry", "registry of VJP rules\n(filled by defvjp)", shape="cylinder", style="")
    with dot.subgraph(name="cluster_backward") as back:
        back.attr(label="2. backward pass", style="dashed", labeljust="l")
        back.node("seed", "seed: gradient 1\nat the output node")
        back.node("next", "child-count order:\nnext node whose children\nare all done")
        back.node("vjp", "call its VJP functions with\nits finished gradient; add\nthe results into its parents")
        back.node("done", "last node is the input:\nreturn its gradient", style="rounded,bold")
    dot.edge("call", "box")
    dot.edge("box", "run")
    dot.edge("run", "boxed")
    dot.edge("boxed", "const", label=" no")
    dot.edge("boxed", "record", label=" yes")
    dot.edge("const", "run", style="dashed", constraint="false")
    dot.edge("record", "run", style="dashed", constraint="false")
    dot.edge("record", "end", label=" f finished")
    dot.edge("registry", "record", style="dotted", arrowhead="none", label=" rules")
    dot.edge("end", "seed")
    dot.edge("seed", "next")
    dot.edge("next", "vjp")
    dot.edge("vjp", "next", style="dashed", constraint="false", label=" more nodes")
    dot.edge("vjp", "done", label=" none left")
    return dot


def trace_diagram(end_node: Any, gradients: bool = False, digits: int = 3) -> graphviz.Digraph:
    """The graph a trace leaves behind, from its last node: each node points to its parents.

    Works on any node with ``name``, ``parents`` and ``vjps`` (one VJP function of a
    number per parent), like chapter 8's miniature. Each edge is labelled with the local
    derivative, the VJP applied to 1. With ``gradients=True`` every node is numbered in
    child-count order and shows the gradient the backward pass gives it (seed 1).
    """
    order = list(child_count_order(end_node, lambda n: n.parents))
    grads: dict[int, float] = {}
    if gradients:
        pending = {id(end_node): 1.0}
        for node in order:
            grads[id(node)] = g = pending.pop(id(node))
            for parent, vjp in zip(node.parents, node.vjps):
                pending[id(parent)] = pending.get(id(parent), 0.0) + vjp(g)
    dot = _digraph("BT")
    ids = {id(node): f"n{k}" for k, node in enumerate(order)}
    for k, node in enumerate(order, start=1):
        label = node.name
        if gradients:
            label = f"{k}. {node.name}\ngrad {grads[id(node)]:.{digits}f}"
        dot.node(ids[id(node)], label, style="rounded,filled" if not node.parents else "rounded",
                 fillcolor="#deebf7")
    for node in order:
        for parent, vjp in zip(node.parents, node.vjps):
            dot.edge(ids[id(node)], ids[id(parent)], label=f" ×{vjp(1.0):.{digits}f}")
    return dot


def nested_derivatives(xs: np.ndarray, curves: Mapping[str, Sequence[float]], reference: Sequence[float],
                       reference_label: str, title: str) -> Figure:
    """Several derivative curves over ``xs`` next to a thick grey reference curve."""
    with _style():
        fig, ax = plt.subplots(figsize=(9.5, 4.2))
        ax.plot(xs, reference, color="0.6", lw=4, alpha=0.5, label=reference_label)
        for (label, ys), style in zip(curves.items(), ["-", "--", ":", "-."]):
            ax.plot(xs, ys, style, lw=2, label=label)
        ax.set_xlabel("$x$")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9)
        fig.tight_layout()
    return _done(fig)
