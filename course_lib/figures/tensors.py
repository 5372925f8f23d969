"""The figures of chapters 8 to 12, one function per figure.

Graphviz drawings return a ``graphviz.Digraph``; Matplotlib figures return the ``Figure``
(already closed for pyplot, so a cell that ends with the call shows it exactly once). Drawings are laid out
to be read at the width of a book page without being scaled down: labels are set in 14 pt,
the size of the body text, and no graph is wider than 7 inches (504 pt), which the book
shows unscaled in its article column (676 px at a 1280 px wide window): labels of 18.7 px.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import graphviz
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from course_lib.figures.basics import STYLE
from course_lib.toposort import child_count_order

FONT_PT = "14"  # the body text's size: graph labels are never smaller

__all__ = [
    "engine_flowchart",
    "trace_diagram",
    "nested_derivatives",
    "jacobian_memory",
    "unbroadcast_picture",
    "iris_scatter",
    "training_curves",
    "loss_gap",
    "ig_path",
    "quadrature_errors",
    "attribution_bars",
    "iris_attributions",
]


def _done(fig: Figure) -> Figure:
    """Close ``fig`` for pyplot and return it: as a cell's result it is shown once, below the cell."""
    plt.close(fig)
    return fig


@contextmanager
def _style() -> Iterator[None]:
    with plt.style.context(["default", STYLE]):  # the course look (basics), only inside the block
        yield


def _digraph(rankdir: str) -> graphviz.Digraph:
    return graphviz.Digraph(
        graph_attr={
            "rankdir": rankdir,
            "fontsize": FONT_PT,
            "fontname": "Helvetica",
            "nodesep": "0.3",
            "ranksep": "0.35",
        },
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
        trace.node("boxed", "a primitive\nis called: any\nBox argument?", shape="diamond", style="")
        trace.node("const", "plain NumPy\nresult (nothing\nrecorded)")
        trace.node("record", "unbox, call NumPy,\nrecord a Node\n(parents, VJP\nfunctions), box\nthe result")
        trace.node("end", "f returns the output Box")
    dot.node("registry", "registry of\nVJP rules\n(defvjp)", shape="cylinder", style="")
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
        dot.node(ids[id(node)], label, style="rounded,filled" if not node.parents else "rounded", fillcolor="#deebf7")
    for node in order:
        for parent, vjp in zip(node.parents, node.vjps):
            dot.edge(ids[id(node)], ids[id(parent)], label=f" ×{vjp(1.0):.{digits}f}")
    return dot


def nested_derivatives(
    xs: np.ndarray, curves: Mapping[str, Sequence[float]], reference: Sequence[float], reference_label: str, title: str
) -> Figure:
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


# ---- chapter 9: tensors --------------------------------------------------------------------


def jacobian_memory(widths: np.ndarray, batch: int = 64, bytes_per: int = 8) -> Figure:
    """Bytes of the Jacobians reverse mode avoids, against those of the VJPs it uses, per layer width."""
    jac_elementwise = batch * widths**2 * bytes_per  # one n x n Jacobian per example
    jac_matmul = (batch * widths) * widths**2 * bytes_per  # d(XW)/dW: (batch n) x (n n)
    vjp_matmul = (2 * batch * widths + widths**2) * bytes_per  # X, G and the result, shape of W
    with _style():
        fig, ax = plt.subplots(figsize=(8, 4.6))
        ax.loglog(
            widths, jac_matmul, color="C3", lw=2, label=rf"Jacobian of $XW$ w.r.t. $W$: ${batch}n \cdot n^2$ entries"
        )
        ax.loglog(
            widths,
            jac_elementwise,
            color="C1",
            lw=2,
            label=rf"Jacobians of an elementwise op: ${batch} \cdot n^2$ entries",
        )
        ax.loglog(widths, vjp_matmul, color="C0", lw=2, label=r"VJP of $XW$: arrays $X$, $G$, $\bar W$")
        ax.loglog(
            widths,
            batch * widths * bytes_per,
            "--",
            color="C2",
            lw=2,
            label=rf"VJP of an elementwise op: ${batch}n$ entries",
        )
        ax.axhline(16e9, color="k", lw=1, ls=":")
        ax.text(12, 3e10, "16 GB of memory", fontsize=9)
        ax.set_xlabel("layer width $n$")
        ax.set_ylabel("bytes (float64)")
        ax.set_title("What reverse mode would store with Jacobians, and what it stores")
        ax.legend(fontsize=9, loc="upper left")
        fig.tight_layout()
    return _done(fig)


def _cells(ax: Any, x0: float, y0: float, rows: int, cols: int, color: Any, values: Any = None) -> None:
    """A rows x cols grid of unit squares, top-left corner at (x0, y0), optionally numbered."""
    for i in range(rows):
        for j in range(cols):
            face = color if isinstance(color, str) else color[i][j]
            ax.add_patch(Rectangle((x0 + j, y0 - i - 1), 1, 1, facecolor=face, edgecolor="0.2"))
            if values is not None:
                ax.text(x0 + j + 0.5, y0 - i - 0.5, f"{values[i][j]:g}", ha="center", va="center", fontsize=9)


def _arrow(ax: Any, x0: float, x1: float, text: str) -> None:
    ax.annotate("", xy=(x1, 2.0), xytext=(x0, 2.0), arrowprops={"arrowstyle": "->", "lw": 1.5, "color": "0.3"})
    ax.text((x0 + x1) / 2, 2.35, text, ha="center", va="bottom", fontsize=9)


def unbroadcast_picture(G: np.ndarray, grads: Mapping[tuple[int, ...], np.ndarray]) -> Figure:
    """Broadcasting forward and summing back: one row per operand shape, for an upstream ``G``.

    ``grads`` maps each operand's shape, ``(n,)`` or ``(m, 1)``, to the gradient the engine gave it.
    """
    rows_g, cols_g = G.shape
    how = {1: "sum over axis 0\n(an added axis)", 2: "sum over axis 1,\nkeepdims=True"}
    with _style():
        fig, axes = plt.subplots(len(grads), 1, figsize=(10.5, 3.2 * len(grads)), squeeze=False)
        for ax, (shape, grad) in zip(axes[:, 0], grads.items()):
            rows, cols = (1, shape[0]) if len(shape) == 1 else shape
            _cells(ax, 0, 4, rows, cols, "#9ecae1")
            ax.text(cols / 2, 4.35, f"operand {shape}", ha="center", fontsize=10)
            _arrow(ax, 3.5, 6.5, "forward:\nbroadcast")
            copies = [["#9ecae1" if i < rows and j < cols else "#deebf7" for j in range(cols_g)] for i in range(rows_g)]
            _cells(ax, 7, 4, rows_g, cols_g, copies)
            ax.text(8.5, 4.35, f"acts as copies {G.shape}", ha="center", fontsize=10)
            _arrow(ax, 10.5, 13.5, "backward:\nG arrives")
            _cells(ax, 14, 4, rows_g, cols_g, "#fdd0a2", G)
            ax.text(15.5, 4.35, "G = dL/d(X + operand)", ha="center", fontsize=10)
            _arrow(ax, 17.5, 20.5, how[len(shape)])
            _cells(ax, 21, 4, rows, cols, "#fd8d3c", np.reshape(grad, (rows, cols)))
            ax.text(21 + cols / 2, 4.35, f"operand.grad {np.shape(grad)}", ha="center", fontsize=10)
            ax.set_title(
                f"a {'bias' if len(shape) == 1 else 'column'} of shape {shape} added to X of shape {G.shape}",
                fontsize=11,
            )
            ax.set_xlim(-0.5, 24.5)
            ax.set_ylim(-0.5, 5.2)
            ax.set_aspect("equal")
            ax.axis("off")
        fig.tight_layout()
    return _done(fig)


# ---- chapter 10: neural networks -------------------------------------------------------------


def iris_scatter(X: np.ndarray, y: np.ndarray, feature_names: Sequence[str], target_names: Sequence[str]) -> Figure:
    """Sepals and petals of the Iris flowers, one marker per species."""
    with _style():
        fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
        for ax, (i, j) in zip(axes, [(0, 1), (2, 3)]):
            for c, (name, marker) in enumerate(zip(target_names, "o^s")):
                ax.scatter(X[y == c, i], X[y == c, j], s=22, marker=marker, alpha=0.75, label=name)
            ax.set_xlabel(feature_names[i].replace("_", " "))
            ax.set_ylabel(feature_names[j].replace("_", " "))
        axes[0].set_title("Sepals: the species overlap")
        axes[1].set_title("Petals: setosa stands apart")
        axes[1].legend(title="species", loc="upper left")
        fig.tight_layout()
    return _done(fig)


def training_curves(
    step_losses: Sequence[float], train_acc: Sequence[float], test_acc: Sequence[float], lr: float
) -> Figure:
    """Minibatch losses with their epoch means, and accuracy after each epoch."""
    epochs = len(train_acc)
    steps_per_epoch = len(step_losses) // epochs
    epoch_losses = np.reshape(step_losses, (epochs, steps_per_epoch)).mean(axis=1)
    with _style():
        fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10.5, 4.2))
        ax_loss.plot(
            np.arange(1, len(step_losses) + 1) / steps_per_epoch,
            step_losses,
            lw=0.6,
            color="C0",
            alpha=0.45,
            label="loss of each minibatch",
        )
        ax_loss.plot(np.arange(1, epochs + 1), epoch_losses, lw=2, color="C0", label="mean over the epoch")
        ax_loss.axhline(np.log(3), color="0.4", ls=":", label=r"$\log 3$ (uniform guess)")
        ax_loss.set_yscale("log")
        ax_loss.set_xlabel("epoch")
        ax_loss.set_ylabel("cross-entropy loss")
        ax_loss.set_title(f"Training loss (course_lib, SGD, lr = {lr:g})")
        ax_loss.legend(fontsize=9)
        ax_acc.plot(np.arange(1, epochs + 1), train_acc, lw=2, label="training set")
        ax_acc.plot(np.arange(1, epochs + 1), test_acc, lw=2, ls="--", label="test set")
        ax_acc.set_ylim(0.3, 1.02)
        ax_acc.set_xlabel("epoch")
        ax_acc.set_ylabel("accuracy")
        ax_acc.set_title("Accuracy after each epoch")
        ax_acc.legend(loc="lower right", fontsize=9)
        fig.tight_layout()
    return _done(fig)


def loss_gap(gap: np.ndarray) -> Figure:
    """The difference between two libraries' losses at every step, in units of machine epsilon."""
    eps = np.finfo(float).eps
    with _style():
        fig, ax = plt.subplots(figsize=(8, 3.4))
        ax.plot(np.arange(1, len(gap) + 1), gap / eps, ".", ms=3, color="C3")
        ax.set_xlabel("SGD step")
        ax.set_ylabel(r"$|\ell_\mathrm{course\_lib} - \ell_\mathrm{PyTorch}|\ /\ \varepsilon_\mathrm{mach}$")
        ax.set_title("Loss difference between the two libraries, in units of machine epsilon")
        ax.set_ylim(-0.5, max(4.5, gap.max() / eps + 0.5))
        fig.tight_layout()
    return _done(fig)


# ---- chapter 12: integrated gradients --------------------------------------------------------


def ig_path(alphas: np.ndarray, values: np.ndarray, grads: np.ndarray) -> Figure:
    """The output and each partial derivative along the straight path from the baseline."""
    with _style():
        fig, (ax_f, ax_g) = plt.subplots(1, 2, figsize=(11, 4))
        ax_f.plot(alphas, values, color="C0", lw=2)
        ax_f.set_xlabel(r"$\alpha$")
        ax_f.set_ylabel(r"$f(x' + \alpha (x - x'))$")
        ax_f.set_title("The output along the straight path")
        for i in range(grads.shape[1]):
            color = f"C{i + 1}"
            ax_g.plot(alphas, grads[:, i], color=color, lw=2, label=rf"$\partial f/\partial x_{i + 1}$")
            ax_g.fill_between(alphas, grads[:, i], color=color, alpha=0.2)
        ax_g.plot([1.0], [grads[-1, 0]], "o", color="k", ms=5, label="gradient at $x$")
        ax_g.set_xlabel(r"$\alpha$")
        ax_g.set_ylabel("partial derivative")
        ax_g.set_title("The gradient along the path")
        ax_g.legend()
        fig.tight_layout()
    return _done(fig)


def quadrature_errors(
    step_counts: np.ndarray, errors: Mapping[str, Mapping[int, float]], trapezoid_bias: Sequence[float], rise: float
) -> Figure:
    """Completeness error of each quadrature rule against the number of steps, log-log."""
    styles = {
        "riemann_left": ("C0", "v"),
        "riemann_right": ("C1", "^"),
        "riemann_middle": ("C2", "o"),
        "riemann_trapezoid": ("C4", "s"),
        "gausslegendre": ("C3", "D"),
    }
    with _style():
        fig, ax = plt.subplots(figsize=(11, 5.2))
        for method, (color, marker) in styles.items():
            err = np.array([errors[method][int(m)] for m in step_counts])
            ax.loglog(
                step_counts, np.where(err > 0, err, np.nan), marker=marker, color=color, ms=4, lw=1.3, label=method
            )
        ax.loglog(
            step_counts, trapezoid_bias, "--", color="C4", lw=1.5, label="trapezoid with weights 1/m (Captum, alibi)"
        )
        ax.loglog(step_counts, 0.03 / step_counts, ":", color="0.3", lw=1.2)
        ax.loglog(step_counts, 2e-4 / step_counts**2, ":", color="0.3", lw=1.2)
        ax.text(150, 0.03 / 150 * 0.3, r"slope $-1$", fontsize=9)
        ax.text(150, 2e-4 / 150**2 * 0.15, r"slope $-2$", fontsize=9)
        ax.axhspan(1e-17, 3e-15, color="0.85", zorder=0)
        ax.text(2.1, 2.5e-17, "rounding level", fontsize=9)
        ax.axhline(0.05 * rise, color="0.5", lw=1, ls="-.")
        ax.text(30, 0.05 * rise * 1.5, "5% of F(x) - F(x')", fontsize=9)
        ax.set_ylim(1e-17, 1)
        ax.set_xlabel("steps $m$ (gradient evaluations)")
        ax.set_ylabel(r"completeness error $|\delta|$ (m)")
        ax.set_title("Integrated Gradients of the throw: error of each quadrature rule")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9)
        fig.tight_layout()
    return _done(fig)


def attribution_bars(splits: Mapping[str, np.ndarray], rise: float) -> Figure:
    """Three ways to split the rise in height between speed and angle, with their sums."""
    with _style():
        fig, ax = plt.subplots(figsize=(8.5, 5.0))
        width = 0.26
        for k, (name, color) in enumerate(zip(splits, ["0.7", "0.45", "C3"])):
            bars = ax.bar(
                np.arange(3) + (k - 1) * width, [*splits[name], splits[name].sum()], width, color=color, label=name
            )
            ax.bar_label(bars, fmt="%.3f", fontsize=8, padding=2)
        ax.axhline(rise, color="C0", ls="--", lw=1.5, label=f"F(x) - F(x') = {rise:.4f} m")
        ax.set_xticks(np.arange(3), ["speed $v$", r"angle $\theta$", "sum"])
        ax.set_ylabel("share of the rise in height (m)")
        ax.set_ylim(0, 2.35)
        ax.set_title(f"Why did the hit pass {rise:.2f} m higher than the first throw?")
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
        fig.tight_layout()
    return _done(fig)


def iris_attributions(
    attributions: Mapping[int, np.ndarray],
    feature_names: Sequence[str],
    target_names: Sequence[str],
    predicted: int,
    title: str,
) -> Figure:
    """IG attributions of one flower's logits, one panel per target class."""
    labels = [name.replace("_cm", "").replace("_", "\n") for name in feature_names]
    with _style():
        fig, axes = plt.subplots(1, len(attributions), figsize=(11, 4.2), sharey=True, squeeze=False)
        for ax, (target, a) in zip(axes[0], attributions.items()):
            bars = ax.bar(np.arange(len(a)), a, color=["C2" if value > 0 else "C3" for value in a])
            ax.bar_label(bars, fmt="%+.2f", fontsize=9, padding=2)
            ax.axhline(0, color="k", lw=1)
            ax.set_xticks(np.arange(len(a)), labels)
            role = "predicted class" if target == predicted else "true class"
            ax.set_title(f"target {target}: {target_names[target]} ({role})\nsum {a.sum():+.2f} = change of the logit")
        axes[0, 0].set_ylabel("IG attribution (logit units)")
        axes[0, 0].set_ylim(-1.5, 3.4)
        fig.suptitle(title, y=1.02)
        fig.tight_layout()
    return _done(fig)
