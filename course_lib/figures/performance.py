"""The figures of chapters 13 and 14: course_lib beside PyTorch and JAX, then how fast it is.

Drawn like those of ``course_lib.figures.tensors``, whose helpers they share: each function
returns a Matplotlib ``Figure`` in the course look, already closed for pyplot. The chapter 14
figures take their numbers from the benchmark record ``course_lib/data/benchmarks.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from course_lib.figures.tensors import _done, _style

__all__ = ["library_curves", "gradient_cost", "mlp_step", "per_op_overhead", "deep_graphs", "scalar_vs_tensor"]


# ---- chapter 13: PyTorch and JAX ---------------------------------------------------------------


def library_curves(xs: np.ndarray, curves: Mapping[str, Sequence[np.ndarray]], exact: Sequence[np.ndarray]) -> Figure:
    """f, f' and f'' from each library on a grid, and each library's largest error against ``exact``."""
    titles = ["$f(x) = \\sin(3x)\\,e^{-x^2/4}$", "$f'(x)$", "$f''(x)$"]
    styles = [
        dict(ls="-", lw=2),
        dict(ls="none", marker="o", ms=5, mfc="none", markevery=4),
        dict(ls="none", marker="x", ms=5, markevery=(2, 4)),
    ]
    with _style():
        fig, axes = plt.subplots(2, 2, figsize=(11, 7))
        for k, (ax, title) in enumerate(zip(axes.flat, titles)):
            for n, (library, values) in enumerate(curves.items()):
                ax.plot(xs, values[k], label=library, color=f"C{n}", **styles[n % len(styles)])
            ax.set_title(title)
            ax.set_xlabel("$x$")
        axes[0, 0].legend(loc="lower left", fontsize=9)
        ax = axes[1, 1]
        width = 0.25
        for n, (library, values) in enumerate(curves.items()):
            largest = [max(np.abs(v - e).max(), 1e-18) for v, e in zip(values, exact)]
            ax.bar(np.arange(3) + (n - 1) * width, largest, width, color=f"C{n}", label=library)
        ax.set_yscale("log")
        ax.set_ylim(1e-17, 1e-13)
        ax.set_xticks(range(3), ["$f$", "$f'$", "$f''$"])
        ax.set_ylabel("largest |error| on the grid")
        ax.set_title("Error against the hand-derived formulas")
        ax.legend(fontsize=9)
        fig.tight_layout()
    return _done(fig)


# ---- chapter 14: how fast is it? --------------------------------------------------------


def _array(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def gradient_cost(cost: Mapping[str, Any]) -> Figure:
    """Gradient time over function time against n, log-log (``benchmarks.json``'s ``gradient_cost``)."""
    ns = np.array(cost["n"])
    ratio = {name: _array(values) for name, values in cost["ratio_to_function"].items()}
    with _style():
        fig, ax = plt.subplots(figsize=(9.5, 4.6))
        ax.loglog(ns, ratio["forward mode"], "s-", color="C1", label="forward mode: $n$ passes with Dual numbers")
        ax.loglog(ns, ratio["central differences"], "o-", color="C0", label="central differences: $2n$ evaluations")
        ax.loglog(ns, ratio["reverse mode"], "^-", color="C2", label="reverse mode: Value, one backward()")
        ax.loglog(
            ns,
            ratio["taped forward"],
            "^:",
            color="C2",
            alpha=0.6,
            mfc="none",
            label="reverse mode, recording pass alone",
        )
        ax.loglog(ns, 2 * ns, "--", color="0.5", lw=1, label="$2n$ (slope 1)")
        ax.set_xlabel("number of inputs $n$")
        ax.set_ylabel("gradient time / time of $f$ on floats")
        ax.set_title("The cost of one gradient of $f_n$, relative to $f_n$ itself")
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        fig.tight_layout()
    return _done(fig)


def mlp_step(mlp: Mapping[str, Any]) -> Figure:
    """One MLP training step per engine, as a multiple of the NumPy forward pass (``mlp``)."""
    steps = [name for name in sorted(mlp["seconds"], key=mlp["seconds"].get) if "forward only" not in name]
    with _style():
        fig, ax = plt.subplots(figsize=(7.0, 3.2))
        ratios = [mlp["ratio_to_numpy_forward"][name] for name in steps]
        ax.barh(steps, ratios, color="C0")
        ax.set_xlim(0, 1.6 * max(ratios))  # room on the right for the legend, clear of the bars
        ax.axvline(1, color="k", lw=1)
        ax.axvline(3, color="C3", ls="--", lw=1, label='"about three times"')
        ax.invert_yaxis()
        ax.set_xlabel("forward + backward time / NumPy forward time")
        ax.set_title("One training step of the MLP")
        ax.legend(fontsize=9, loc="upper right")
        fig.tight_layout()
    return _done(fig)


def per_op_overhead(per_op: Mapping[str, float]) -> Figure:
    """Microseconds per tiny multiplication, forward and backward, per engine (log scale)."""
    names = sorted(per_op, key=lambda name: per_op[name])
    colours = ["0.6" if "no AD" in name else ("C2" if "course_lib" in name else "C0") for name in names]
    with _style():
        fig, ax = plt.subplots(figsize=(7.4, 3.8))
        ax.barh(names, [per_op[name] for name in names], color=colours)
        for k, name in enumerate(names):
            ax.text(per_op[name] * 1.15, k, f"{per_op[name]:.2g} µs", va="center", fontsize=9)
        ax.set_xscale("log")
        ax.set_xlim(0.01, 400)
        ax.invert_yaxis()
        ax.set_xlabel("microseconds per multiplication, forward + backward (log scale)")
        ax.set_title("Per-operation overhead on tiny operands")
        fig.tight_layout()
    return _done(fig)


def deep_graphs(deep: Mapping[str, Any]) -> Figure:
    """Build and backward time of a chain against its depth, and where micrograd stops."""
    fails = deep.get("micrograd_fails_at")
    with _style():
        fig, ax = plt.subplots(figsize=(7.2, 4.6))
        for name, colour in [("course_lib (Value)", "C2"), ("micrograd", "C0")]:
            if name not in deep:
                continue
            depth = np.array(deep[name]["depth"])
            ax.loglog(depth, deep[name]["build_seconds"], "o-", color=colour, label=f"{name}: build (forward)")
            ax.loglog(depth, deep[name]["backward_seconds"], "s--", color=colour, label=f"{name}: backward")
        depth = np.array(deep["course_lib (Value)"]["depth"])
        ax.loglog(depth, 1e-6 * depth, ":", color="0.5", label="1 µs per node (slope 1)")
        if fails and fails["depth"]:
            ax.axvline(fails["depth"], color="C3", lw=1)
            ax.text(
                fails["depth"] * 1.2,
                2e-5,
                f"micrograd:\nRecursionError\nat depth {fails['depth']:,}",
                color="C3",
                fontsize=9,
            )
        ax.set_xlabel("depth $d$ of the chain (nodes)")
        ax.set_ylabel("CPU seconds")
        ax.set_title("Time against graph depth")
        ax.legend(fontsize=8, loc="upper left")
        fig.tight_layout()
    return _done(fig)


def scalar_vs_tensor(svt: Mapping[str, Any]) -> Figure:
    """Seconds per gradient of a dot product against the vector length, per engine."""
    dims = np.array(svt["n"])
    styles = {
        "course_lib (Value)": ("^-", "C2"),
        "course_lib (Tensor)": ("o-", "C1"),
        "PyTorch eager": ("s-", "C0"),
        "NumPy forward only": ("x:", "0.4"),
    }
    with _style():
        fig, ax = plt.subplots(figsize=(7.2, 4.6))
        for name, seconds in svt["seconds"].items():
            marker, colour = styles.get(name, (".-", "C4"))
            ax.loglog(dims, _array(seconds), marker, color=colour, label=name)
        ax.set_xlabel("vector length $n$")
        ax.set_ylabel("CPU seconds per gradient")
        ax.set_title("Gradient of a dot product: one node per number or one per array")
        ax.legend(fontsize=9, loc="upper left")
        fig.tight_layout()
    return _done(fig)
