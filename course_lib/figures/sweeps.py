"""Pictures of the two sweeps: a backward pass frame by frame, and the Jacobian that
forward mode fills by columns and reverse mode by rows.

``backward_steps`` replays a backward pass on a graph the chapter has built and draws
one frame per step, so a reader can follow the sweep without running anything; the
numbers in every frame are the engine's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from course_lib import graph
from course_lib.graph import Node
from course_lib.scalar import Value
from course_lib.toposort import postorder
from course_lib.viz import draw_graph, op_symbol


class Frames(list):
    """A list of drawings that a notebook shows one below the other."""

    def _ipython_display_(self) -> None:
        from IPython.display import display  # only IPython calls this, so only it needs IPython

        for frame in self:
            display(frame)


def backward_steps(root: Node | Value, digits: int = 3) -> Frames:
    """One drawing per step of the backward pass from ``root``; the step's node is filled.

    For an explicit graph (``graph.Node``, chapter 4) a step *pulls*: the filled node's
    adjoint is computed from its children's, and the caption shows the sum with numbers.
    For a ``Value`` (chapter 5) a step *pushes*: the filled node's ``_backward`` adds its
    share to its parents' ``.grad``, and the caption lists what each parent received.
    Adjoints not computed yet are shown as ``?``.
    """
    if isinstance(root, Node):
        return _pull_steps(root, digits)
    if isinstance(root, Value):
        return _push_steps(root, digits)
    raise TypeError(f"backward_steps() takes a graph.Node or a scalar.Value, got {type(root).__name__}.")


def _pull_steps(y: Node, digits: int) -> Frames:
    order = graph.reverse(y)  # every node's partial_derivative is now final
    names = graph.node_names(graph.evaluation_order(y))
    ancestors = {id(node) for node in order}
    frames, known = Frames(), {}
    for k, node in enumerate(order, start=1):
        known[id(node)] = node.partial_derivative
        if node is y:
            caption = f"step {k}: the output's adjoint is 1"
        else:
            terms = [
                f"{child.partial_derivative:.{digits}f} × {local:.{digits}f}"
                for child in node._children
                if id(child) in ancestors
                for parent, local in zip(child._parents, child.grad_wrt_parents)
                if parent is node
            ]
            caption = (
                f"step {k}: adjoint of {names[id(node)]} = Σ child's adjoint × local derivative\n"
                f"= {' + '.join(terms)} = {node.partial_derivative:.{digits}f}"
            ).replace("+ -", "− ")
        frames.append(draw_graph(y, highlight=[node], grads=dict(known), title=caption, digits=digits))
    return frames


def _push_steps(root: Value, digits: int) -> Frames:
    topo = postorder(root, lambda v: v._parents)
    for node in topo:
        node.grad = 0.0
    root.grad = 1.0
    known: dict[int, float | None] = {id(root): 1.0}
    frames = Frames()
    for k, node in enumerate((n for n in reversed(topo) if n._parents), start=1):
        before = {id(p): p.grad for p in node._parents}
        node._backward(node.grad)
        received = []
        for parent in dict.fromkeys(node._parents):
            known[id(parent)] = parent.grad
            name = parent.label or f"({op_symbol(parent._op)})"
            received.append(f"{name} += {parent.grad - before[id(parent)]:.{digits}f}")
        caption = (
            f"step {k}: {node.label or f'({op_symbol(node._op)})'}._backward() with grad {node.grad:.{digits}f}\n"
            + ", ".join(received)
        )
        frames.append(draw_graph(root, highlight=[node], grads=dict(known), title=caption, digits=digits))
    return frames


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
