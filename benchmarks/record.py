"""Record the measurements of chapter 14 ("How fast is it?") in a data file.

    python benchmarks/record.py [--quick] [--output PATH]

The chapter draws its figures from the recorded file, never from live timings, so the
book builds the same way on every machine. Re-run this script to see your own numbers
(it takes one to three minutes) and re-execute the chapter to draw them.

What is measured (each workload is built in ``benchmarks/workloads.py``; this script times
them, takes the medians and writes the file):

a. The cheap-gradient principle: the gradient of f: R^n -> R, f(x) = sum_i x_{i+1} sin(x_i)
   (x_{n+1} = x_1), by forward mode (n passes with dual numbers), by reverse mode (one
   pass with ``Value`` and one backward sweep) and by central differences (2n evaluations),
   each as a multiple of the time of evaluating f on plain floats.
b. The MLP of ``benchmarks/workloads.py`` (64-256-256-10, batch 256): course_lib, PyTorch
   eager, HIPS autograd and JAX (compiled with ``jit``), forward + backward, against the
   NumPy forward pass alone.
c. Per-op overhead: long chains of multiplications of tiny operands.
d. Deep graphs: forward and backward time of a chain of depth 10^2 ... 10^6, and the
   depth at which micrograd's recursive topological sort fails.
e. Scalar engine vs tensor engine: the gradient of a dot product of length n.
f. Memory: the bytes the recorded graph (the "tape") keeps alive.
g. The compiled path (``course_lib.jit``, ``course_lib.vmap``): ``benchmarks/compiled.py``,
   run in a process of its own (its section notes its own date, versions and method: best
   of interleaved rounds). ``python -m benchmarks.compiled --record`` records that section
   alone, leaving the others as they are.

Timings are CPU time of this process (``time.process_time``), float64, one thread
(PyTorch ``set_num_threads(1)``, NumPy's BLAS and JAX pinned to one thread by ``workloads.py``),
the median over several rounds in which the candidates take turns, with Python's cyclic
garbage collector paused while timing (``timeit``'s default). ``engines.py`` prints the
best round instead; the median is steadier on a shared machine.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
import timeit
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

# The sibling scripts are importable: a script's folder is first on sys.path, and pytest's
# `pythonpath` (pyproject.toml) lists benchmarks/ for the tests that import this one.
import workloads  # first: it pins every engine to one thread before NumPy is imported

# isort: split
import numpy as np
import scalar as scalar_bench  # benchmarks/scalar.py
from workloads import MicrogradValue

from course_lib.scalar import Value

OUTPUT = workloads.RECORD


# ----------------------------------------------------------------------------- timing
def median_times(
    candidates: workloads.Candidates, rounds: int, min_round: float = 0.02, long_call: float = math.inf
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
def measure_gradient_cost(ns: Sequence[int], rounds: int) -> dict:
    times: dict[str, list[float]] = {}
    for n in ns:
        candidates = workloads.gradient_candidates(n)
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
def measure_mlp(rounds: int) -> dict:
    """The MLP's training step in each engine and course_lib's forward pass without recording, in seconds."""
    data = workloads.mlp_data()
    ours = workloads.CourseLibMLP(data)
    candidates = (
        workloads.numpy_mlp(data)
        | {"course_lib": ours.step}
        | workloads.framework_mlp(data)
        | {"course_lib forward only": ours.forward_no_grad}
        | workloads.jax_mlp(data)
    )
    seconds = median_times(candidates, rounds)
    base = seconds["NumPy forward only"]
    return {
        "sizes": list(workloads.SIZES),
        "batch": workloads.BATCH,
        "seconds": seconds,
        "ratio_to_numpy_forward": {name: t / base for name, t in seconds.items()},
        "course_lib_gradient_over_own_forward": seconds["course_lib"] / seconds["course_lib forward only"],
    }


# ----------------------------------------------------------------------------- c. per-op overhead
def measure_per_op(scalar_length: int, rounds: int) -> dict:
    """Microseconds per multiplication (forward + backward) for each engine.

    The tensor engines multiply a 4-element array ``workloads.CHAIN`` times; the scalar
    engines (and JAX) a chain of ``scalar_length``, short enough for micrograd's recursive sort.
    """
    tensors = {
        f"{name} (Tensor)" if name == "course_lib" else name: fn for name, fn in workloads.tensor_chains().items()
    }
    scalars: workloads.Candidates = {"course_lib (Value)": workloads.scalar_chain(Value, scalar_length)}
    if MicrogradValue is not None:
        scalars["micrograd"] = workloads.scalar_chain(MicrogradValue, scalar_length)
    jax_chain = workloads.jax_chain(scalar_length)
    if jax_chain is not None:
        scalars["JAX jit"] = jax_chain
    plain = workloads.plain_chains()
    lengths = dict.fromkeys(tensors, workloads.CHAIN) | dict.fromkeys(scalars, scalar_length)
    lengths |= dict.fromkeys(plain, workloads.CHAIN)
    seconds = median_times(tensors | scalars | plain, rounds)
    return {
        "chain_length": lengths,
        "microseconds_per_op": {name: seconds[name] / lengths[name] * 1e6 for name in lengths},
    }


# ----------------------------------------------------------------------------- d. deep graphs
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
            y = workloads.build_chain(V, depth)
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
            workloads.build_chain(MicrogradValue, depth).backward()
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
def measure_scalar_vs_tensor(ns: Sequence[int], max_scalar_n: int, rounds: int) -> dict:
    """Seconds per gradient of a dot product; ``None`` where the scalar engine is not run (too slow)."""
    measured = [median_times(workloads.dot_candidates(n, with_scalar=n <= max_scalar_n), rounds) for n in ns]
    names = list(measured[0])
    return {"n": list(ns), "seconds": {name: [m.get(name) for m in measured] for name in names}}


# ----------------------------------------------------------------------------- the scalar MLP
def measure_scalar_mlp(iterations: int, repeats: int) -> dict:
    """``benchmarks/scalar.py``: one training step of a scalar MLP, with the cyclic GC on and off, for
    course_lib, micrograd and the design floor ``shared rules`` (course_lib without a closure per node)."""
    names = ["course_lib", "shared rules"] + (["micrograd"] if MicrogradValue else [])
    scalar_bench.check_same_numbers(names)
    nodes = scalar_bench.count_nodes(scalar_bench.training_step(Value, *scalar_bench.make_parameters(Value)))
    return {
        "sizes": list(scalar_bench.SIZES),
        "nodes": nodes,
        "method": "median of the repeats, each engine in a process of its own, engines in turns (benchmarks/scalar.py)",
        "seconds_per_step_gc_on": scalar_bench.seconds_per_step_apart(names, "MLP", iterations, repeats, True),
        "seconds_per_step_gc_off": scalar_bench.seconds_per_step_apart(names, "MLP", iterations, repeats, False),
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
    per_node = traced(lambda: workloads.build_chain(Value, depth))[0] / depth
    mlp = workloads.CourseLibMLP(workloads.mlp_data())
    taped_kept, taped_peak = traced(mlp.forward)
    kept, peak = traced(mlp.forward_no_grad)
    return {
        "value_chain_depth": depth,
        "value_bytes_per_node": per_node,
        "mlp_kept_bytes_recording": taped_kept,
        "mlp_peak_bytes_recording": taped_peak,
        "mlp_kept_bytes_no_grad": kept,
        "mlp_peak_bytes_no_grad": peak,
        "mlp_parameter_bytes": sum(p.data.nbytes for p in mlp.params),
        "mlp_hidden_layer_bytes": workloads.BATCH * workloads.SIZES[1] * 8,
    }


# ----------------------------------------------------------------------------- g. the compiled path
def measure_compiled(quick: bool) -> dict:
    """``benchmarks/compiled.py``'s results, from a process of its own started in the repository."""
    command = [sys.executable, "-m", "benchmarks.compiled", "--json"] + (["--quick"] if quick else [])
    done = subprocess.run(command, cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# ----------------------------------------------------------------------------- report
def record(quick: bool = False) -> dict:
    """Run every measurement; ``quick`` uses tiny sizes (a smoke test, not a benchmark)."""
    started, wall = datetime.datetime.now(datetime.UTC), time.perf_counter()
    kept = workloads.keep_freed_memory()
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
    one_core = hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) == 1
    meta = {
        "date": started.date().isoformat(),
        "command": "python benchmarks/record.py" + (" --quick" if quick else ""),
        "machine": workloads.machine(),
        "versions": workloads.versions(),
        "method": (
            "CPU time of one process (time.process_time)"
            + (", bound to one core" if one_core else "")
            + ", float64, one thread (PyTorch set_num_threads(1), BLAS 1 thread); median of interleaved "
            "rounds; cyclic GC paused while timing" + ("; glibc keeps freed memory (mallopt)" if kept else "")
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
        "compiled": lambda: measure_compiled(quick),
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
    workloads.use_one_core()
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
