"""Record the measurements of chapter 14 ("How fast is it?") in a data file.

    python benchmarks/record.py [--quick] [--output PATH]

The chapter draws its figures from the recorded file, never from live timings, so the
book builds the same way on every machine. Re-run this script to see your own numbers
(it takes one to three minutes) and re-execute the chapter to draw them.

What is measured:

a. The cheap-gradient principle: the gradient of f: R^n -> R, f(x) = sum_i x_{i+1} sin(x_i)
   (x_{n+1} = x_1), by forward mode (n passes with dual numbers), by reverse mode (one
   pass with ``Value`` and one backward sweep) and by central differences (2n evaluations),
   each as a multiple of the time of evaluating f on plain floats.
b. The MLP of ``benchmarks/engines.py`` (64-256-256-10, batch 256): course_lib, PyTorch
   eager, HIPS autograd and JAX (compiled with ``jit``), forward + backward, against the
   NumPy forward pass alone.
c. Per-op overhead: long chains of multiplications of tiny operands.
d. Deep graphs: forward and backward time of a chain of depth 10^2 ... 10^6, and the
   depth at which micrograd's recursive topological sort fails.
e. Scalar engine vs tensor engine: the gradient of a dot product of length n.
f. Memory: the bytes the recorded graph (the "tape") keeps alive.

Timings are CPU time of this process (``time.process_time``), float64, one thread
(PyTorch ``set_num_threads(1)``, NumPy's BLAS pinned to one thread by ``engines.py``),
the median over several rounds in which the candidates take turns, with Python's cyclic
garbage collector paused while timing (``timeit``'s default). ``engines.py`` prints the
best round instead; the median is steadier on a shared machine.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata
import json
import math
import os
import platform
import statistics
import sys
import time
import timeit
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts, also when imported
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")  # JAX: 1 thread

import engines  # noqa: E402  (before NumPy: it pins BLAS to one thread)
import numpy as np  # noqa: E402
import scalar as scalar_bench  # noqa: E402  (benchmarks/scalar.py)

from course_lib import forward  # noqa: E402
from course_lib.check import numerical_grad  # noqa: E402
from course_lib.nn import MLP, cross_entropy  # noqa: E402
from course_lib.scalar import Value  # noqa: E402
from course_lib.tensor import Tensor, no_grad  # noqa: E402

torch = engines.torch
try:
    from micrograd.engine import Value as MicrogradValue
except ImportError:
    MicrogradValue = None
try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = jnp = None

OUTPUT = Path(__file__).resolve().parents[1] / "course_lib" / "data" / "benchmarks.json"


# ----------------------------------------------------------------------------- timing
def median_times(
    candidates: dict[str, Callable[[], object]], rounds: int, min_round: float = 0.02, long_call: float = math.inf
) -> dict[str, float]:
    """CPU seconds per call of each candidate: the median over ``rounds`` interleaved rounds.

    A first call warms up and calibrates: each round then repeats a candidate often
    enough to last about ``min_round`` seconds, so short calls are not lost in the
    resolution of the clock. A call that takes longer than ``long_call`` seconds (forward
    mode for many inputs) is repeated in one more round only, and its first call counts
    as a sample: warming up is a negligible part of it.
    """
    repeats: dict[str, int] = {}
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for name, fn in candidates.items():
        start = time.process_time()
        fn()
        first = time.process_time() - start
        repeats[name] = max(1, math.ceil(min_round / max(first, 1e-7)))
        if first > long_call:
            samples[name].append(first)
    for k in range(rounds):
        for name, fn in candidates.items():
            if k and samples[name] and samples[name][0] > long_call:
                continue
            number = repeats[name]
            samples[name].append(timeit.Timer(fn, timer=time.process_time).timeit(number) / number)
    return {name: statistics.median(values) for name, values in samples.items()}


# ----------------------------------------------------------------------------- a. cheap gradient
def sin(v):
    """``sin`` for a float, a ``Dual`` or a ``Value`` alike."""
    return math.sin(v) if isinstance(v, float) else v.sin()


def objective(x: Sequence) -> object:
    """The family of chapter 4, f(x) = sum_i x_{i+1} sin(x_i) with x_{n+1} = x_1:
    n sines, n products and n sums, on floats, Duals or Values alike."""
    n, total = len(x), 0.0
    for i in range(n):
        total = total + x[(i + 1) % n] * sin(x[i])
    return total


def gradient_candidates(n: int) -> dict[str, Callable[[], object]]:
    """f itself and three ways to get its gradient at a fixed random point of R^n."""
    x = np.random.default_rng(n).uniform(-1, 1, n).tolist()
    units = [tuple(float(i == j) for j in range(n)) for i in range(n)]

    def function() -> object:
        return objective(x)

    def taped_forward() -> object:  # the forward pass of reverse mode alone: builds the graph
        return objective([Value(v) for v in x])

    def reverse_mode() -> list[float]:
        leaves = [Value(v) for v in x]
        objective(leaves).backward()
        return [leaf.grad for leaf in leaves]

    def forward_mode() -> list[float]:  # one Jacobian-vector product per input direction
        return [forward.jvp(lambda *xs: objective(xs), x, e)[1] for e in units]

    def central_differences() -> np.ndarray:  # two evaluations per input
        return numerical_grad(lambda a: objective(a.tolist()), np.array(x))

    return {
        "function": function,
        "taped forward": taped_forward,
        "reverse mode": reverse_mode,
        "forward mode": forward_mode,
        "central differences": central_differences,
    }


def measure_gradient_cost(ns: Sequence[int], rounds: int) -> dict:
    times: dict[str, list[float]] = {}
    for n in ns:
        candidates = gradient_candidates(n)
        if n <= 100:  # the three gradients agree (else the timing compares nothing)
            exact = candidates["reverse mode"]()
            assert np.allclose(candidates["forward mode"](), exact, rtol=0, atol=1e-12)
            assert np.allclose(candidates["central differences"](), exact, rtol=0, atol=1e-7)
        for name, t in median_times(candidates, rounds, long_call=1.0).items():
            times.setdefault(name, []).append(t)
    base = np.array(times["function"])
    return {
        "function": "f(x) = sum_i x_(i+1) sin(x_i), x_(n+1) = x_1, on Python floats",
        "n": list(ns),
        "seconds": times,
        "ratio_to_function": {name: (np.array(t) / base).tolist() for name, t in times.items() if name != "function"},
    }


# ----------------------------------------------------------------------------- b. the MLP
def jax_mlp_candidates(numpy_loss: float) -> dict[str, Callable[[], object]]:
    """The MLP of ``engines.mlp_candidates`` in JAX, compiled with ``jit`` (empty without JAX).

    The data are made the same way from the same seed; the loss is checked against
    ``numpy_loss``, the NumPy forward pass of ``engines.py``.
    """
    if jax is None:
        return {}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((engines.BATCH, engines.SIZES[0]))
    labels = rng.integers(0, engines.SIZES[-1], engines.BATCH)
    sizes = engines.SIZES
    weights = [rng.uniform(-1, 1, (m, n)) / np.sqrt(m) for m, n in zip(sizes[:-1], sizes[1:])]
    biases = [rng.uniform(-1, 1, n) / np.sqrt(m) for m, n in zip(sizes[:-1], sizes[1:])]
    params = [jnp.asarray(a) for pair in zip(weights, biases) for a in pair]
    jx, jlabels = jnp.asarray(x), jnp.asarray(labels)

    def loss(params: list, x: object, labels: object) -> object:
        h = x
        for k in range(0, len(params), 2):
            h = h @ params[k] + params[k + 1]
            if k < len(params) - 2:
                h = jnp.maximum(h, 0.0)
        log_probs = jax.nn.log_softmax(h, axis=1)
        return -jnp.mean(log_probs[jnp.arange(h.shape[0]), labels])

    forward_only, gradient = jax.jit(loss), jax.jit(jax.grad(loss))
    assert abs(float(forward_only(params, jx, jlabels)) - numpy_loss) < 1e-12
    jax.block_until_ready(gradient(params, jx, jlabels))  # compile now, not while timing
    return {
        "JAX jit": lambda: jax.block_until_ready(gradient(params, jx, jlabels)),
        "JAX jit forward only": lambda: jax.block_until_ready(forward_only(params, jx, jlabels)),
    }


def measure_mlp(rounds: int) -> dict:
    candidates = engines.mlp_candidates()
    taped = candidates.pop("course_lib forward only")

    def course_lib_forward_no_grad() -> object:
        with no_grad():
            return taped()

    candidates["course_lib forward only"] = course_lib_forward_no_grad
    candidates |= jax_mlp_candidates(float(candidates["NumPy forward only"]()))
    seconds = median_times(candidates, rounds)
    base = seconds["NumPy forward only"]
    return {
        "sizes": list(engines.SIZES),
        "batch": engines.BATCH,
        "seconds": seconds,
        "ratio_to_numpy_forward": {name: t / base for name, t in seconds.items()},
        "course_lib_gradient_over_own_forward": seconds["course_lib"] / seconds["course_lib forward only"],
    }


# ----------------------------------------------------------------------------- c. per-op overhead
def scalar_chain(V, length: int) -> Callable[[], None]:
    """Forward + backward through ``length`` multiplications of scalar engine ``V``."""

    def chain() -> None:
        x, w = V(1.0), V(1.0001)
        y = x
        for _ in range(length):
            y = y * w
        y.backward()

    return chain


def measure_per_op(scalar_length: int, rounds: int) -> dict:
    """Microseconds per multiplication (forward + backward) for each engine.

    The tensor engines multiply a 4-element array ``engines.CHAIN`` times; the scalar
    engines a chain of ``scalar_length``, short enough for micrograd's recursive sort.
    """
    lengths, candidates = {}, {}
    for name, fn in engines.chain_candidates().items():
        name = f"{name} (Tensor)" if name == "course_lib" else name
        candidates[name], lengths[name] = fn, engines.CHAIN
    candidates["course_lib (Value)"], lengths["course_lib (Value)"] = scalar_chain(Value, scalar_length), scalar_length
    if MicrogradValue is not None:
        candidates["micrograd"], lengths["micrograd"] = scalar_chain(MicrogradValue, scalar_length), scalar_length
    if jax is not None:  # the same chain compiled once (the first call, not timed, compiles)

        def chain(params: list) -> object:
            y = params[0]
            for _ in range(scalar_length):
                y = y * params[1]
            return jnp.sum(y)

        chain_grad, args = jax.jit(jax.grad(chain)), [jnp.ones(4), jnp.full(4, 1.0001)]
        jax.block_until_ready(chain_grad(args))  # compile now, not while timing
        candidates["JAX jit"] = lambda: jax.block_until_ready(chain_grad(args))
        lengths["JAX jit"] = scalar_length

    four, factor = np.ones(4), np.full(4, 1.0001)

    def numpy_chain() -> None:  # the arithmetic alone, no derivatives
        y = four
        for _ in range(engines.CHAIN):
            y = y * factor

    def float_chain() -> None:
        y = 1.0
        for _ in range(engines.CHAIN):
            y = y * 1.0001

    candidates["NumPy, no AD"], lengths["NumPy, no AD"] = numpy_chain, engines.CHAIN
    candidates["Python float, no AD"], lengths["Python float, no AD"] = float_chain, engines.CHAIN
    seconds = median_times(candidates, rounds)
    return {
        "chain_length": lengths,
        "microseconds_per_op": {name: seconds[name] / lengths[name] * 1e6 for name in candidates},
    }


# ----------------------------------------------------------------------------- d. deep graphs
def build_chain(V, depth: int):
    """A chain of ``depth`` multiplications: its output node."""
    x, w = V(1.0), V(1.0000001)
    y = x
    for _ in range(depth):
        y = y * w
    return y


def time_deep(V, depth: int, rounds: int) -> tuple[float, float]:
    """CPU seconds to build a chain of ``depth`` nodes and to run backward on it (medians).

    The cyclic garbage collector is paused, as in the other timings: with it on, building
    a million nodes also pays for repeated scans of everything built so far.
    """
    builds, backwards = [], []
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            y = build_chain(V, depth)
            builds.append(time.process_time() - start)
            start = time.process_time()
            y.backward()
            backwards.append(time.process_time() - start)
        finally:
            gc.enable()
        del y
    return statistics.median(builds), statistics.median(backwards)


def micrograd_recursion_depth(depths: Sequence[int]) -> dict | None:
    """The first depth at which micrograd's recursive topological sort fails, and its error."""
    if MicrogradValue is None:
        return None
    for depth in depths:
        try:
            build_chain(MicrogradValue, depth).backward()
        except RecursionError as error:
            return {"depth": depth, "error": f"RecursionError: {error}", "recursion_limit": sys.getrecursionlimit()}
    return {"depth": None, "error": None, "recursion_limit": sys.getrecursionlimit()}


def measure_deep(depths: Sequence[int], micrograd_depths: Sequence[int], rounds: int) -> dict:
    engines_and_depths = [("course_lib (Value)", Value, depths)]
    if MicrogradValue is not None:
        engines_and_depths.append(("micrograd", MicrogradValue, micrograd_depths))
    result = {}
    for name, V, ds in engines_and_depths:
        times = [time_deep(V, d, rounds=rounds if d < 10**6 else 2) for d in ds]
        result[name] = {
            "depth": list(ds),
            "build_seconds": [t[0] for t in times],
            "backward_seconds": [t[1] for t in times],
        }
    result["micrograd_fails_at"] = micrograd_recursion_depth([500, 1000, 2000])
    return result


# ----------------------------------------------------------------------------- e. scalar vs tensor
def dot_candidates(n: int, with_scalar: bool) -> dict[str, Callable[[], object]]:
    """Gradient of the dot product a . b with respect to both vectors, by each engine."""
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    a_list, b_list = a.tolist(), b.tolist()

    def value_dot() -> None:
        xs, ys = [Value(v) for v in a_list], [Value(v) for v in b_list]
        sum((x * y for x, y in zip(xs, ys)), Value(0.0)).backward()

    def tensor_dot() -> None:
        x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
        (x @ y).backward()

    candidates = {"course_lib (Value)": value_dot} if with_scalar else {}
    candidates["course_lib (Tensor)"] = tensor_dot
    if torch is not None:
        ta, tb = torch.tensor(a), torch.tensor(b)

        def torch_dot() -> None:
            x, y = ta.clone().requires_grad_(), tb.clone().requires_grad_()
            (x @ y).backward()

        candidates["PyTorch eager"] = torch_dot
    candidates["NumPy forward only"] = lambda: a @ b
    return candidates


def measure_scalar_vs_tensor(ns: Sequence[int], max_scalar_n: int, rounds: int) -> dict:
    """Seconds per gradient of a dot product; ``None`` where the scalar engine is not run (too slow)."""
    measured = [median_times(dot_candidates(n, with_scalar=n <= max_scalar_n), rounds) for n in ns]
    names = list(measured[0])
    return {"n": list(ns), "seconds": {name: [m.get(name) for m in measured] for name in names}}


# ----------------------------------------------------------------------------- the scalar MLP
def measure_scalar_mlp(iterations: int, repeats: int) -> dict:
    """``benchmarks/scalar.py``: one training step of a scalar MLP, with the cyclic GC on and off."""
    engines_ = [("course_lib", Value)] + ([("micrograd", MicrogradValue)] if MicrogradValue else [])
    if MicrogradValue is not None:
        scalar_bench.check_same_numbers(MicrogradValue)
    nodes = scalar_bench.count_nodes(scalar_bench.training_step(Value, *scalar_bench.make_parameters(Value)))
    return {
        "sizes": list(scalar_bench.SIZES),
        "nodes": nodes,
        "method": "best of the repeats (benchmarks/scalar.py)",
        "seconds_per_step_gc_on": scalar_bench.seconds_per_step(engines_, iterations, repeats, True),
        "seconds_per_step_gc_off": scalar_bench.seconds_per_step(engines_, iterations, repeats, False),
    }


# ----------------------------------------------------------------------------- f. memory
def traced(fn: Callable[[], object]) -> tuple[int, int]:
    """Bytes still allocated while ``fn``'s result is alive, and the peak while it ran."""
    tracemalloc.start()
    try:
        result = fn()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return kept, peak


def measure_memory(depth: int) -> dict:
    """Bytes per node of a Value chain, and what the MLP's forward pass keeps alive with and
    without recording the graph."""
    per_node = traced(lambda: build_chain(Value, depth))[0] / depth
    rng = np.random.default_rng(0)
    model = MLP(engines.SIZES, rng=0)
    inputs = Tensor(rng.standard_normal((engines.BATCH, engines.SIZES[0])))
    labels = rng.integers(0, engines.SIZES[-1], engines.BATCH)

    def forward_no_grad() -> object:
        with no_grad():
            return cross_entropy(model(inputs), labels)

    taped_kept, taped_peak = traced(lambda: cross_entropy(model(inputs), labels))
    kept, peak = traced(forward_no_grad)
    return {
        "value_chain_depth": depth,
        "value_bytes_per_node": per_node,
        "mlp_kept_bytes_recording": taped_kept,
        "mlp_peak_bytes_recording": taped_peak,
        "mlp_kept_bytes_no_grad": kept,
        "mlp_peak_bytes_no_grad": peak,
        "mlp_parameter_bytes": sum(p.data.nbytes for p in model.parameters()),
        "mlp_hidden_layer_bytes": engines.BATCH * engines.SIZES[1] * 8,
    }


# ----------------------------------------------------------------------------- report
def versions() -> dict[str, str | None]:
    found = {"python": platform.python_version(), "numpy": np.__version__}
    for package in ("course_lib", "torch", "jax", "autograd", "micrograd"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def machine() -> dict:
    return {
        "system": platform.system(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def record(quick: bool = False) -> dict:
    """Run every measurement; ``quick`` uses tiny sizes (a smoke test, not a benchmark)."""
    started, wall = datetime.datetime.now(datetime.UTC), time.perf_counter()
    kept = engines.keep_freed_memory()
    if quick:
        sizes = dict(
            ns=(1, 4),
            rounds=1,
            scalar_chain=20,
            depths=(10, 100),
            mdepths=(10,),
            dot_ns=(1, 10),
            max_scalar=10,
            mem_depth=100,
        )
    else:
        sizes = dict(
            ns=(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000),
            rounds=5,
            scalar_chain=500,
            depths=(100, 1_000, 10_000, 100_000, 1_000_000),
            mdepths=(10, 30, 100, 300, 500),
            dot_ns=(1, 10, 100, 1_000, 10_000, 100_000, 1_000_000),
            max_scalar=100_000,
            mem_depth=100_000,
        )
    meta = {
        "date": started.date().isoformat(),
        "command": "python benchmarks/record.py" + (" --quick" if quick else ""),
        "machine": machine(),
        "versions": versions(),
        "method": (
            "CPU time of one process (time.process_time), float64, one thread (PyTorch "
            "set_num_threads(1), BLAS 1 thread); median of interleaved rounds; cyclic GC "
            "paused while timing" + ("; glibc keeps freed memory (mallopt)" if kept else "")
        ),
    }
    sections = {
        "gradient_cost": lambda: measure_gradient_cost(sizes["ns"], sizes["rounds"]),
        "mlp": lambda: measure_mlp(rounds=3 * sizes["rounds"]),
        "per_op": lambda: measure_per_op(sizes["scalar_chain"], rounds=sizes["rounds"]),
        "deep_graphs": lambda: measure_deep(sizes["depths"], sizes["mdepths"], rounds=1 if quick else 3),
        "scalar_vs_tensor": lambda: measure_scalar_vs_tensor(sizes["dot_ns"], sizes["max_scalar"], sizes["rounds"]),
        "scalar_mlp": lambda: measure_scalar_mlp(iterations=2 if quick else 10, repeats=3),
        "memory": lambda: measure_memory(sizes["mem_depth"]),
    }
    results, meta["cpu_seconds"] = {"meta": meta}, {}
    for name, measure in sections.items():
        start = time.process_time()
        results[name] = measure()
        meta["cpu_seconds"][name] = round(time.process_time() - start, 1)
    meta["runtime_seconds"] = round(time.perf_counter() - wall, 1)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one round: checks that it runs")
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"where to write (default {OUTPUT})")
    args = parser.parse_args()
    results = record(quick=args.quick)
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.output} in {results['meta']['runtime_seconds']} s")
    mlp = results["mlp"]
    for name, t in mlp["seconds"].items():
        print(f"  MLP {name:<26}{t * 1e3:8.3f} ms  {mlp['ratio_to_numpy_forward'][name]:6.2f} x NumPy forward")
    for name, us in results["per_op"]["microseconds_per_op"].items():
        print(f"  per op {name:<24}{us:8.2f} us")


if __name__ == "__main__":
    main()
