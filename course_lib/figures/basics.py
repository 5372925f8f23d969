"""The matplotlib figures of chapters 1 to 7.

Each function draws one figure from numbers the chapter has computed (or, where the
figure is itself a computation, from the function it shows) and calls ``plt.show()``.
The chapters print the numbers they discuss; these functions only draw them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from course_lib.scalar import Value

STYLE = {"figure.figsize": (6.4, 4.2), "figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3, "font.size": 11}


def use_course_style() -> None:
    """One look for every figure of the course."""
    plt.style.use(["default", STYLE])


# ---- chapter 1 ----------------------------------------------------------------------------


def tangent_and_secants(f: Callable, f_prime: Callable, x0: float, h: float = 1.0) -> None:
    """The running example, its tangent at ``x0`` and the forward and central secants of step ``h``."""
    xs = np.linspace(-0.5, 10, 300)
    near = np.linspace(3.5, 8.5, 50)
    slope_fwd = (f(x0 + h) - f(x0)) / h
    slope_cen = (f(x0 + h) - f(x0 - h)) / (2 * h)
    fig, ax = plt.subplots()
    ax.plot(xs, f(xs), color="C0", lw=2, label=r"$f(x) = x^3 - 10x^2 + 5x - 2$")
    ax.plot(
        near,
        f(x0) + f_prime(x0) * (near - x0),
        color="C3",
        lw=2,
        label=rf"tangent at $x_0={x0:g}$, slope $f'(x_0)={f_prime(x0):g}$",
    )
    ax.plot(
        near,
        f(x0) + slope_fwd * (near - x0),
        "--",
        color="C1",
        label=rf"secant through $x_0$ and $x_0 + {h:g}$: slope {slope_fwd:g}",
    )
    ax.plot(
        near,
        f(x0 + h) + slope_cen * (near - x0 - h),
        ":",
        color="C2",
        lw=2,
        label=rf"secant through $x_0 - {h:g}$ and $x_0 + {h:g}$: slope {slope_cen:g}",
    )
    ax.plot([x0 + h], [f(x0 + h)], "o", color="C1", ms=5)
    ax.plot([x0 - h, x0 + h], [f(x0 - h), f(x0 + h)], "o", color="C2", ms=5)
    ax.plot([x0], [f(x0)], "o", color="C3", ms=7)
    ax.annotate(
        rf"$(x_0, f(x_0)) = ({x0:g}, {f(x0):g})$",
        (x0, f(x0)),
        xytext=(1.0, -150),
        arrowprops={"arrowstyle": "->", "color": "0.3"},
    )
    ax.set(
        xlim=(-0.5, 10),
        ylim=(-180, 60),
        xlabel="$x$",
        ylabel="$f(x)$",
        title=f"The running example and its tangent at $x_0 = {x0:g}$",
    )
    ax.legend(loc="upper left", fontsize=9)
    plt.show()


def finite_difference_errors(
    f: Callable, x0: float, exact: float, f2: float, f3: float, best_steps: tuple[float, float], central: Callable
) -> None:
    """Measured forward and central difference errors against the step, with the predicted
    truncation (slopes 1 and 2) and round-off (slope -1) lines and the predicted best steps."""
    eps = np.finfo(float).eps
    hs = np.logspace(-16, -1, 151)
    err_fwd = np.array([abs((f(x0 + h) - f(x0)) / h - exact) for h in hs])
    err_cen = np.array([abs(central(f, x0, eps=h) - exact) for h in hs])
    fig, ax = plt.subplots(figsize=(9.5, 4.6))
    # An error that happens to be exactly 0 cannot be drawn on a log scale: leave a gap.
    ax.loglog(
        hs, np.where(err_fwd > 0, err_fwd, np.nan), ".-", color="C1", ms=3, lw=1, label="forward difference (measured)"
    )
    ax.loglog(
        hs, np.where(err_cen > 0, err_cen, np.nan), ".-", color="C0", ms=3, lw=1, label="central difference (measured)"
    )
    ax.loglog(hs, hs / 2 * f2, "--", color="C1", lw=1, label=r"$\frac{h}{2}|f''|$: slope 1")
    ax.loglog(hs, hs**2 / 6 * f3, "--", color="C0", lw=1, label=r"$\frac{h^2}{6}|f^{(3)}|$: slope 2")
    ax.loglog(
        hs, eps * abs(f(x0)) / hs, ":", color="k", lw=1.5, label=r"$\varepsilon_{\mathrm{mach}}|f|/h$: slope $-1$"
    )
    for h_star, color in zip(best_steps, ("C1", "C0")):
        ax.axvline(h_star, color=color, alpha=0.4, lw=3)
    ax.text(1e-15, 1e-10, "round-off\ndominates", fontsize=10)
    ax.text(3e-3, 3e-9, "truncation\ndominates", fontsize=10, ha="center")
    ax.set(
        xlim=(1e-16, 1e-1),
        ylim=(1e-13, 1e2),
        xlabel="step $h$",
        ylabel=r"$|$estimate $- f'(x_0)|$",
        title=f"Finite-difference error at $x_0 = {x0:g}$ (bands: predicted best $h$)",
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9)
    fig.tight_layout()
    plt.show()


def gradient_cost(ns: Sequence[int], costs: np.ndarray) -> None:
    """Cost of one gradient, in evaluations of the function, against the number of inputs:
    columns of ``costs`` are forward differences, central differences and reverse mode."""
    fig, ax = plt.subplots()
    ax.loglog(ns, costs[:, 0], "s-", color="C1", label="forward differences: $n + 1$ evaluations")
    ax.loglog(ns, costs[:, 1], "o-", color="C0", label="central differences: $2n$ evaluations")
    ax.loglog(ns, costs[:, 2], "^-", color="C2", label="reverse-mode AD: evaluation + backward sweep")
    ax.set(
        xlabel="number of inputs $n$",
        ylabel="cost in evaluations of $g$",
        title="Cost of one gradient of $g(x) = f(x_1) + \\dots + f(x_n)$",
    )
    ax.legend(fontsize=9)
    plt.show()


# ---- chapter 2 ----------------------------------------------------------------------------


def graph_vs_tree(ks: Sequence[int], sizes: Sequence[tuple[int, int]]) -> None:
    """Nodes of the graph and of the expression tree after ``k`` repeated squarings."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.semilogy(ks, [g for g, _ in sizes], "o-", label="computational graph (shared values)")
    ax.semilogy(ks, [t for _, t in sizes], "s-", label="the same expression as a tree")
    ax.set(
        xlabel="number of squarings $k$",
        xticks=[1, 5, 10, 15, 20],
        ylabel="nodes",
        title="Repeated squaring: graph vs. tree",
    )
    ax.legend()
    fig.tight_layout()
    plt.show()


# ---- chapter 3 ----------------------------------------------------------------------------


def passes_per_direction(sizes: Sequence[int], many_inputs: Sequence[int], many_outputs: Sequence[int]) -> None:
    """Forward passes counted for a gradient (n inputs) and for a whole Jacobian (m outputs)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    left.plot(sizes, many_inputs, "o-")
    left.set(
        title="$f: \\mathbb{R}^n \\to \\mathbb{R}$ (its gradient)",
        xlabel="number of inputs $n$",
        ylabel="forward passes counted",
    )
    right.plot(sizes, many_outputs, "s-", color="C1")
    right.set(title="$g: \\mathbb{R} \\to \\mathbb{R}^m$ (its whole Jacobian)", xlabel="number of outputs $m$")
    fig.suptitle("Forward mode needs one pass per input direction")
    fig.tight_layout()
    plt.show()


# ---- chapter 4 ----------------------------------------------------------------------------


def sweep_costs(rows: Sequence[tuple[int, int, int, int, int, int]]) -> None:
    """Sweeps and local-derivative products for a whole gradient, forward against reverse.

    Each row is (n, operations in f, forward sweeps, forward products, reverse sweeps, reverse products).
    """
    ns = [r[0] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    left.plot(ns, [r[2] for r in rows], "o-", label="forward mode")
    left.plot(ns, [r[4] for r in rows], "s-", label="reverse mode")
    left.set(xscale="log", yscale="log", xlabel="number of inputs n", ylabel="sweeps for the gradient", title="Sweeps")
    right.plot(ns, [r[3] for r in rows], "o-", label="forward mode (n sweeps)")
    right.plot(ns, [r[5] for r in rows], "s-", label="reverse mode (1 sweep)")
    right.plot(ns, [r[1] for r in rows], "k--", lw=1, label="operations in f itself")
    right.set(
        xscale="log",
        yscale="log",
        xlabel="number of inputs n",
        ylabel="local-derivative products",
        title="Work for the whole gradient",
    )
    for ax in (left, right):
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.minorticks_off()
        ax.legend()
    fig.tight_layout()
    plt.show()


# ---- chapter 5 ----------------------------------------------------------------------------


def gradients_on_a_grid(
    functions: Mapping[str, Callable[[Value], Value]], derivatives: Mapping[str, Callable[[np.ndarray], np.ndarray]]
) -> None:
    """For each function: its graph, its derivative by formula, and ``x.grad`` from ``backward()``
    at 25 points (one fresh graph per point)."""
    xs = np.linspace(-3.0, 3.0, 25)
    fine = np.linspace(-3.0, 3.0, 301)
    fig, axes = plt.subplots(1, len(functions), figsize=(11, 3.2))
    for ax, (name, fn) in zip(axes, functions.items()):
        grads = []
        for x0 in xs:
            x = Value(x0)
            fn(x).backward()
            grads.append(x.grad)
        ax.plot(fine, [fn(Value(t)).data for t in fine], color="C0", label=name)
        ax.plot(fine, derivatives[name](fine), color="C1", lw=1, label="derivative (formula)")
        ax.plot(xs, grads, "o", color="C1", ms=4, label="x.grad from backward()")
        ax.set(title=name, xlabel="x", ylim=(-1.2, 5.2 if name.startswith("exp") else 3.2))
    axes[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    plt.show()


# ---- chapter 6 ----------------------------------------------------------------------------


def recursion_limits(limits: Sequence[int], deepest: Sequence[int], long_chain: int) -> None:
    """Deepest chain the recursive sort handles under each recursion limit, and the explicit stack's."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.loglog(limits, limits, "--", color="grey", label="the recursion limit itself")
    ax.loglog(limits, deepest, "o-", label="recursive DFS: deepest chain it sorts")
    ax.axhline(long_chain, color="C2", label=f"explicit stack: a chain of {long_chain:,} (sorted below)")
    ax.set_xticks(limits, [f"{limit:,}" for limit in limits])
    ax.minorticks_off()
    ax.set(
        xlabel="sys.getrecursionlimit()",
        ylabel="chain depth",
        title="Recursion depth is capped by the limit; an explicit stack is not",
    )
    ax.legend(loc="center right")
    fig.tight_layout()
    plt.show()


# ---- chapter 7 ----------------------------------------------------------------------------


def _saddle_background(ax: plt.Axes, loss: Callable, alpha: float = 1.0, edge: str = "black"):
    fine = np.linspace(-3, 3, 241)
    A, B = np.meshgrid(fine, fine)
    filled = ax.contourf(A, B, loss(A, B), levels=np.linspace(-27, 27, 19), cmap="RdBu_r", extend="both", alpha=alpha)
    ax.contour(A, B, loss(A, B), levels=[0], colors=edge, linewidths=1)
    ax.set(xlabel="$a$", ylabel="$b$", xlim=(-3, 3), ylim=(-3, 3), aspect="equal")
    return filled


def descent_field(loss: Callable) -> None:
    """Contours of ``loss(a, b)`` and the unit descent direction -∇L from the Value engine on a 12×12 grid."""
    coarse = np.linspace(-2.75, 2.75, 12)
    U, W = np.zeros((12, 12)), np.zeros((12, 12))
    for i, bv in enumerate(coarse):
        for j, av in enumerate(coarse):
            pa, pb = Value(av), Value(bv)
            loss(pa, pb).backward()
            U[i, j], W[i, j] = -pa.grad, -pb.grad
    length = np.hypot(U, W)
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    filled = _saddle_background(ax, loss)
    ax.quiver(*np.meshgrid(coarse, coarse), U / length, W / length, color="black", alpha=0.8, pivot="mid")
    fig.colorbar(filled, ax=ax, label="$L(a, b)$")
    ax.set_title("$L = b(a+b)(a-b)$ and the descent direction $-\\nabla L$")
    fig.tight_layout()
    plt.show()


def descent_runs(loss: Callable, runs: Sequence[np.ndarray], ends: Sequence[str], lr: float) -> None:
    """Paths of gradient descent from several starts, coloured by where each run ended."""
    colours = {"up": "C0", "down-left": "C1", "down-right": "C2", "still inside": "C3"}
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    _saddle_background(ax, loss, alpha=0.45, edge="grey")
    for run, end in zip(runs, ends):
        ax.plot(run[:, 0], run[:, 1], "-", lw=1.3, color=colours[end])
        ax.plot(*run[0], "k.", ms=5)
    for name, colour in colours.items():
        ax.plot([], [], color=colour, label=f"{name} ({list(ends).count(name)})")
    ax.set_title(f"Gradient descent from {len(runs)} random starts ($\\eta = {lr:g}$)")
    ax.legend(loc="lower center", fontsize=8, ncol=2)
    fig.tight_layout()
    plt.show()


def step_sizes(bowl: Callable, runs: Mapping[float, np.ndarray], verdicts: Mapping[float, str]) -> None:
    """Paths and loss curves of gradient descent on the bowl for several step sizes."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    grid_a, grid_b = np.meshgrid(np.linspace(-3.5, 3.5, 200), np.linspace(-2, 2, 200))
    left.contour(grid_a, grid_b, bowl(grid_a, grid_b), levels=15, colors="grey", linewidths=0.6)
    for k, (lr, run) in enumerate(runs.items()):
        left.plot(run[:16, 0], run[:16, 1], "o-", ms=3, lw=1, color=f"C{k}", label=f"lr = {lr} ({verdicts[lr]})")
        right.semilogy(bowl(run[:, 0], run[:, 1]), "-", color=f"C{k}", label=f"lr = {lr}")
    left.set(
        xlim=(-3.5, 3.5), ylim=(-2, 2), xlabel="$a$", ylabel="$b$", title="First 15 steps on $Q = (a^2 + 10b^2)/2$"
    )
    left.legend(fontsize=8, loc="lower left")
    right.set(xlabel="step", ylabel="$Q$", title="Loss per step")
    right.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
