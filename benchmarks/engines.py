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

Everything runs in float64 on ONE core: PyTorch with ``torch.set_num_threads(1)`` and the
NumPy-based engines with one BLAS thread (set before NumPy is imported), so that all
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

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import importlib.metadata  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from course_lib.nn import MLP, cross_entropy  # noqa: E402
from course_lib.tensor import Tensor  # noqa: E402

SIZES = (64, 256, 256, 10)
BATCH = 256
BATCHES = (BATCH, 16)  # large: the arithmetic dominates; small: the engine's bookkeeping shows
CHAIN = 10_000

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - the course's test setup installs torch
    torch = None

try:
    import autograd
    import autograd.numpy as anp
except ImportError:
    autograd = None


def keep_freed_memory() -> bool:
    """Ask glibc to serve large arrays from the heap and not to return freed memory to the OS."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 64 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 512 << 20))
    except (OSError, AttributeError, TypeError):  # not glibc
        return False


def best_times(candidates: dict[str, Callable[[], object]], number: int, rounds: int) -> dict[str, float]:
    """CPU seconds per call of each candidate: the minimum over ``rounds``, candidates interleaved.

    CPU time of this process (not wall-clock time) leaves out the time other programs
    hold the core, so the numbers hold up on a busy machine.
    """
    for fn in candidates.values():  # warm up (imports, caches, allocator)
        fn()
    best = {name: float("inf") for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            best[name] = min(best[name], timeit.Timer(fn, timer=time.process_time).timeit(number) / number)
    return best


# ----------------------------------------------------------------------------- 1. the MLP
def mlp_candidates(batch: int = BATCH) -> dict[str, Callable[[], object]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, SIZES[0]))
    labels = rng.integers(0, SIZES[-1], batch)
    rows = np.arange(batch)
    weights = [rng.uniform(-1, 1, (m, n)) / np.sqrt(m) for m, n in zip(SIZES[:-1], SIZES[1:])]
    biases = [rng.uniform(-1, 1, n) / np.sqrt(m) for m, n in zip(SIZES[:-1], SIZES[1:])]

    def numpy_forward() -> float:
        h = x
        for k, (w, b) in enumerate(zip(weights, biases)):
            h = h @ w + b
            if k < len(weights) - 1:
                h = np.maximum(h, 0.0)
        shifted = h - h.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return -log_probs[rows, labels].mean()

    def numpy_by_hand() -> list:
        """The same forward pass with the backward pass written out by hand: the floor for an engine."""
        pre, post = [], [x]
        for k, (w, b) in enumerate(zip(weights, biases)):
            pre.append(post[-1] @ w + b)
            post.append(np.maximum(pre[-1], 0.0) if k < len(weights) - 1 else pre[-1])
        shifted = post[-1] - post[-1].max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        g = probs  # d(mean cross-entropy)/d(logits) = (softmax - one_hot) / batch
        g[rows, labels] -= 1.0
        g /= batch
        grads = []
        for k in reversed(range(len(weights))):
            grads += [post[k].T @ g, g.sum(axis=0)]
            if k:
                g = (g @ weights[k].T) * (pre[k - 1] > 0)
        return grads

    model = MLP(SIZES, rng=0)
    for layer, w, b in zip(model.layers, weights, biases):
        layer.weight.data, layer.bias.data = w.copy(), b.copy()
    inputs, params = Tensor(x), model.parameters()

    def course_lib_step() -> None:
        for p in params:
            p.grad = None
        cross_entropy(model(inputs), labels).backward()

    def course_lib_forward() -> object:
        return cross_entropy(model(inputs), labels)

    candidates = {
        "NumPy forward only": numpy_forward,
        "NumPy by hand (fwd+bwd)": numpy_by_hand,
        "course_lib forward only": course_lib_forward,
        "course_lib": course_lib_step,
    }

    if torch is not None:
        tx, tlabels = torch.tensor(x), torch.tensor(labels)
        tparams = [torch.tensor(a, requires_grad=True) for pair in zip(weights, biases) for a in pair]

        def torch_step() -> None:
            for p in tparams:
                p.grad = None
            h = tx
            for k in range(0, len(tparams), 2):
                h = h @ tparams[k] + tparams[k + 1]
                if k < len(tparams) - 2:
                    h = torch.relu(h)
            torch.nn.functional.cross_entropy(h, tlabels).backward()

        candidates["PyTorch eager"] = torch_step

    if autograd is not None:

        def loss(params: list) -> object:
            h = x
            for k in range(0, len(params), 2):
                h = anp.dot(h, params[k]) + params[k + 1]
                if k < len(params) - 2:
                    h = anp.maximum(h, 0.0)
            shifted = h - anp.max(h, axis=1, keepdims=True)
            log_probs = shifted - anp.log(anp.sum(anp.exp(shifted), axis=1, keepdims=True))
            return -anp.mean(log_probs[rows, labels])

        loss_grad = autograd.grad(loss)
        aparams = [a for pair in zip(weights, biases) for a in pair]
        candidates["HIPS autograd"] = lambda: loss_grad(aparams)
    return candidates


# ----------------------------------------------------------------------------- 2. per-op overhead
def chain_candidates() -> dict[str, Callable[[], object]]:
    def course_lib_chain() -> None:
        x, w = Tensor(np.ones(4), requires_grad=True), Tensor(np.full(4, 1.0001), requires_grad=True)
        y = x
        for _ in range(CHAIN):
            y = y * w
        y.sum().backward()

    candidates = {"course_lib": course_lib_chain}
    if torch is not None:

        def torch_chain() -> None:
            x = torch.ones(4, dtype=torch.float64, requires_grad=True)
            w = torch.full((4,), 1.0001, dtype=torch.float64, requires_grad=True)
            y = x
            for _ in range(CHAIN):
                y = y * w
            y.sum().backward()

        candidates["PyTorch eager"] = torch_chain
    if autograd is not None:

        def chain(params: list) -> object:
            y = params[0]
            for _ in range(CHAIN):
                y = y * params[1]
            return anp.sum(y)

        chain_grad = autograd.grad(chain)
        candidates["HIPS autograd"] = lambda: chain_grad([np.ones(4), np.full(4, 1.0001)])
    return candidates


# ----------------------------------------------------------------------------- report
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier numbers)")
    parser.add_argument("--default-malloc", action="store_true", help="leave glibc's memory settings alone")
    args = parser.parse_args()
    rounds = 3 if args.quick else 15
    kept = not args.default_malloc and keep_freed_memory()

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

    for batch in BATCHES:
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

    times = best_times(chain_candidates(), number=1, rounds=max(3, rounds // 3))
    print(f"\n2. Per-op overhead: {CHAIN:,} multiplications of a 4-element tensor, forward + backward")
    print(f"   {'engine':<26}{'us per op':>12}")
    for name, t in times.items():
        print(f"   {name:<26}{t / CHAIN * 1e6:>12.2f}")
    for other in ("PyTorch eager", "HIPS autograd"):
        if other in times:
            print(f"   course_lib's per-op cost is {times['course_lib'] / times[other]:.2f}x {other}'s")

    print("\n3. Scalar engine vs micrograd")
    scalar_script = Path(__file__).with_name("scalar.py")
    if not scalar_script.exists():
        print("   skipped: benchmarks/scalar.py is not there")
        return
    sys.path.insert(0, str(scalar_script.parent))
    import scalar  # noqa: E402  (benchmarks/scalar.py)

    argv, sys.argv = sys.argv, [str(scalar_script)] + (["--repeats", "3"] if args.quick else [])
    try:
        scalar.main()
    finally:
        sys.argv = argv


if __name__ == "__main__":
    main()
