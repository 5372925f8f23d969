"""How fast is course_lib's Tensor engine? Side-by-side timings from one run.

    python benchmarks/engines.py [--quick]

1. An MLP 64-256-256-10 on a batch of 256 and of 16, forward + backward with cross-entropy:
   course_lib vs PyTorch eager (CPU) vs HIPS autograd, against the NumPy forward pass
   alone (the cheap-gradient principle says forward + backward costs a small constant
   times the forward pass: about 3 for matrix products).
2. Per-op overhead: a chain of 10,000 multiplications of a 4-element tensor, forward +
   backward, in microseconds per op (here the arrays are tiny, so the time is all
   bookkeeping: creating nodes, sorting them, calling the VJPs).
3. The scalar engine vs micrograd, from ``benchmarks/scalar.py`` when it is there.

The workloads are built in ``benchmarks/workloads.py`` (``benchmarks/record.py`` records the
same ones). Everything runs in float64 on ONE core: PyTorch with ``torch.set_num_threads(1)``
and the NumPy-based engines with one BLAS thread (both set by ``workloads.py``), so that all
columns do the same arithmetic with the same resources. Times are CPU time of this
process, the best of several rounds in which the engines take turns, so that background
load hits them alike. HIPS autograd is optional (``pip install autograd``); PyTorch too.
Nothing here is asserted: the script prints a table and ratios.

Memory: by default glibc hands large freed blocks back to the operating system and
takes fresh zeroed pages for the next allocation. In a virtual machine each such page
fault is expensive, and the cost then depends on how much memory an engine keeps alive
(an autodiff engine keeps the whole forward graph) more than on the arithmetic. The
script therefore asks glibc (``mallopt``) to keep freed memory for reuse, for every
engine alike; ``--default-malloc`` skips that.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from pathlib import Path

import workloads  # first: it pins every engine to one thread before NumPy is imported

# isort: split
import numpy as np
from workloads import CHAIN, SIZES, autograd, best_times, torch

BATCHES = (workloads.BATCH, 16)  # large: the arithmetic dominates; small: the engine's bookkeeping shows


def mlp_candidates(batch: int) -> workloads.Candidates:
    """The MLP on a batch of ``batch``: NumPy, course_lib (its recorded forward pass too) and the frameworks."""
    data = workloads.mlp_data(batch)
    ours = workloads.CourseLibMLP(data)
    return (
        workloads.numpy_mlp(data)
        | {"course_lib forward only": ours.forward, "course_lib": ours.step}
        | workloads.framework_mlp(data)
    )


# ----------------------------------------------------------------------------- report
def print_header(rounds: int, kept: bool) -> None:
    """How the timings are made, and which versions run."""
    print(
        "All engines in float64 on one core (PyTorch 1 thread, NumPy BLAS 1 thread); "
        f"CPU time, best of {rounds} interleaved rounds."
    )
    print("glibc keeps freed memory for reuse (mallopt)." if kept else "Default glibc memory settings.")
    print(
        f"NumPy {np.__version__}"
        + (f", PyTorch {torch.__version__}" if torch else ", PyTorch not installed")
        + (f", autograd {importlib.metadata.version('autograd')}" if autograd else "")
    )
    if autograd is None:
        print("HIPS autograd is not installed: its columns are skipped (install it with `pip install autograd`).")


def print_mlp(batch: int, rounds: int) -> None:
    """1. The MLP: each engine's time and its ratio to the NumPy forward pass."""
    times = best_times(mlp_candidates(batch), number=10, rounds=rounds)
    base = times["NumPy forward only"]
    print(f"\n1. MLP {'-'.join(map(str, SIZES))}, batch {batch}, cross-entropy: forward + backward")
    print(f"   {'engine':<26}{'ms':>9}{'x NumPy forward':>18}")
    for name, t in times.items():
        print(f"   {name:<26}{t * 1e3:>9.3f}{t / base:>18.2f}")
    ours, own_forward = times["course_lib"], times["course_lib forward only"]
    print(f"   course_lib backward / its own forward: {(ours - own_forward) / own_forward:.2f}")
    print(
        f"   course_lib / NumPy by hand: {ours / times['NumPy by hand (fwd+bwd)']:.2f} "
        "(the engine's overhead over hand-written gradients)"
    )
    for other in ("PyTorch eager", "HIPS autograd"):
        if other in times:
            print(f"   course_lib is {times[other] / ours:.2f}x as fast as {other}")


def print_per_op(rounds: int) -> None:
    """2. Per-op overhead: microseconds per multiplication of a tiny tensor."""
    times = best_times(workloads.tensor_chains(), number=1, rounds=rounds)
    print(f"\n2. Per-op overhead: {CHAIN:,} multiplications of a 4-element tensor, forward + backward")
    print(f"   {'engine':<26}{'us per op':>12}")
    for name, t in times.items():
        print(f"   {name:<26}{t / CHAIN * 1e6:>12.2f}")
    for other in ("PyTorch eager", "HIPS autograd"):
        if other in times:
            print(f"   course_lib's per-op cost is {times['course_lib'] / times[other]:.2f}x {other}'s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier numbers)")
    parser.add_argument("--default-malloc", action="store_true", help="leave glibc's memory settings alone")
    args = parser.parse_args()
    rounds = 3 if args.quick else 15
    kept = not args.default_malloc and workloads.keep_freed_memory()
    workloads.use_one_core()

    print_header(rounds, kept)
    for batch in BATCHES:
        print_mlp(batch, rounds)
    print_per_op(max(3, rounds // 3))

    print("\n3. Scalar engine vs micrograd")
    scalar_script = Path(__file__).with_name("scalar.py")
    if not scalar_script.exists():
        print("   skipped: benchmarks/scalar.py is not there")
        return
    import scalar  # benchmarks/scalar.py: this script's folder is first on sys.path

    argv, sys.argv = sys.argv, [str(scalar_script)] + (["--repeats", "3"] if args.quick else [])
    try:
        scalar.main()
    finally:
        sys.argv = argv


if __name__ == "__main__":
    main()
