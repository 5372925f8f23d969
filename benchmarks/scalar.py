"""Throughput of the scalar engine: course_lib.scalar.Value against micrograd.

Both engines build the same graph, a small multilayer perceptron written out on scalars
(16 inputs, two hidden layers of 32 ReLU units, one output, squared error: about 3,300
operations and 5,000 nodes), then run backward. That is one training step without the
update; we time many of them in a row, as a training loop would run them, and report
steps per second and graph nodes per second.

A second workload is a fan-in graph: one output computed from 2,000 inputs (a dot product of
1,000 pairs summed pairwise, squared), the shape of a loss over many parameters.

Each engine runs in a process of its own (as users run them: one engine per program, so
one engine's garbage does not make the other's collections slower); the engines take
turns, and the median of the repeats is reported. ``--same-process`` measures them side by
side in this process instead (what ``benchmarks/record.py`` stores).

Run:  python benchmarks/scalar.py  [--iterations 30] [--repeats 5] [--same-process]
micrograd is only needed here:  pip install micrograd==0.1.0

The second table repeats the measurement with Python's cyclic garbage collector paused.
micrograd's ``_backward`` closures refer to the node that owns them, so every graph is a
reference cycle that only the cyclic collector can free, and it runs (and re-scans the
growing heap) again and again while graphs are built. course_lib passes the output's
gradient into ``_backward(grad)`` instead, so its graphs hold no cycles and are freed by
reference counting the moment the loss goes out of scope. The difference between the
two tables is the cost of those cycles; what remains is per-operation overhead.

A third row, ``shared rules`` (``benchmarks/shared_rules.py``), is course_lib's engine with
one design choice changed: a rule per operation shared by all nodes instead of a closure
per node. It is the floor of the closure design, and the last line of each table says how
far above that floor course_lib is.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import time

from course_lib.scalar import Value

SIZES = (16, 32, 32, 1)
FAN_IN = 1_000
ENGINES = {"course_lib": "course_lib.scalar", "micrograd": "micrograd.engine", "shared rules": "shared_rules"}


def make_parameters(V):
    """Weights and biases of the perceptron as leaves of engine ``V`` (same numbers for every engine)."""
    rng = random.Random(0)
    layers = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        weights = [[V(rng.uniform(-1, 1) / fan_in**0.5) for _ in range(fan_in)] for _ in range(fan_out)]
        biases = [V(0.0) for _ in range(fan_out)]
        layers.append((weights, biases))
    inputs = [rng.uniform(-1, 1) for _ in range(SIZES[0])]
    return layers, inputs


def training_step(V, layers, inputs, target=0.5):
    """Forward and backward through the perceptron; returns the loss node."""
    h = [V(x) for x in inputs]
    for k, (weights, biases) in enumerate(layers):
        h = [sum((w * x for w, x in zip(row, h)), b) for row, b in zip(weights, biases)]
        if k < len(layers) - 1:
            h = [a.relu() for a in h]
    loss = (h[0] - target) ** 2
    for weights, biases in layers:
        for p in [w for row in weights for w in row] + biases:
            p.grad = 0.0
    loss.backward()
    return loss


def tree_sum(terms: list):
    """Pairwise sum: depth log2(n), so micrograd's recursive sort copes with any n."""
    while len(terms) > 1:
        terms = [terms[k] + terms[k + 1] for k in range(0, len(terms) - 1, 2)] + terms[len(terms) & ~1 :]
    return terms[0]


def fan_in_step(V, pairs: list, target: float = 0.5):
    """A dot product of many pairs of leaves, squared: every leaf fans into one output."""
    for a, b in pairs:
        a.grad = b.grad = 0.0
    loss = (tree_sum([a * b for a, b in pairs]) - target) ** 2
    loss.backward()
    return loss


def make_pairs(V) -> list:
    rng = random.Random(1)
    return [(V(rng.uniform(-1, 1)), V(rng.uniform(-1, 1))) for _ in range(FAN_IN)]


WORKLOADS = {
    "MLP": (lambda V: (V, *make_parameters(V)), lambda V, layers, inputs: training_step(V, layers, inputs)),
    "fan-in": (lambda V: (V, make_pairs(V)), fan_in_step),
}


def count_nodes(root) -> int:
    seen, stack = {id(root)}, [root]
    parents = (lambda v: v._parents) if hasattr(root, "_parents") else (lambda v: v._prev)
    while stack:
        for p in parents(stack.pop()):
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return len(seen)


def time_steps(step, args, iterations: int, collect_cycles: bool) -> float:
    """Mean CPU seconds of ``iterations`` consecutive calls of ``step(*args)``, after a warm-up.

    CPU time (not wall-clock time) leaves out the moments other programs have the processor."""
    step(*args)
    gc.collect()
    if not collect_cycles:
        gc.disable()
    start = time.process_time()
    for _ in range(iterations):
        step(*args)
    elapsed = (time.process_time() - start) / iterations
    gc.enable()
    return elapsed


def seconds_per_step(engines, iterations: int, repeats: int, collect_cycles: bool) -> dict[str, float]:
    """The MLP step of each engine, all in this process: the median over ``repeats`` of
    :func:`time_steps`. Engines take turns, so a busy machine slows them alike. The median,
    not the best: the collector's cost comes in bursts, and a lucky stretch without one is
    not the throughput of a training loop."""
    setups = {name: (V, *make_parameters(V)) for name, V in engines}
    times: dict[str, list[float]] = {name: [] for name, _ in engines}
    for _ in range(repeats):
        for name, args in setups.items():
            times[name].append(time_steps(training_step, args, iterations, collect_cycles))
    return {name: statistics.median(t) for name, t in times.items()}


def seconds_per_step_apart(
    engines: list[str], workload: str, iterations: int, repeats: int, collect_cycles: bool
) -> dict[str, float]:
    """As :func:`seconds_per_step`, but every measurement in a fresh process of its own."""
    times: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(repeats):
        for name in engines:
            command = [sys.executable, __file__, "--child", name, workload, str(iterations), str(int(collect_cycles))]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            times[name].append(json.loads(out))
    return {name: statistics.median(t) for name, t in times.items()}


def engine_value(name: str):
    module = __import__(ENGINES[name], fromlist=["Value"])
    return module.Value


def check_same_numbers(engines: list[str]) -> None:
    """Every engine computes the same loss and gradients (else the timing compares nothing)."""
    results = []
    for name in engines:
        V = engine_value(name)
        layers, inputs = make_parameters(V)
        loss = training_step(V, layers, inputs)
        pairs = make_pairs(V)
        fan = fan_in_step(V, pairs)
        results.append((loss.data, [w.grad for w in layers[0][0][0]], fan.data, [a.grad for a, _ in pairs[:50]]))
    (loss_a, grads_a, fan_a, fgrads_a), *others = results
    for loss_b, grads_b, fan_b, fgrads_b in others:
        assert abs(loss_a - loss_b) < 1e-12 and max(abs(a - b) for a, b in zip(grads_a, grads_b)) < 1e-12
        assert abs(fan_a - fan_b) < 1e-9 and max(abs(a - b) for a, b in zip(fgrads_a, fgrads_b)) < 1e-9


def table(title: str, rows: list[tuple[str, float]], nodes: int) -> str:
    lines = [title, f"{'engine':<12} {'ms/step':>9} {'steps/s':>9} {'Mnodes/s':>9} {'speed-up':>9}"]
    baseline = dict(rows).get("micrograd")
    for name, seconds in rows:
        ratio = f"{baseline / seconds:8.1f}x" if baseline else "        -"
        lines.append(f"{name:<12} {seconds * 1e3:9.2f} {1 / seconds:9.1f} {nodes / seconds / 1e6:9.2f} {ratio}")
    times = dict(rows)
    closures = times["course_lib"] / times["shared rules"]
    lines.append(f"course_lib's closures: {closures:.2f}x the time of the same engine with shared rules")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="consecutive steps per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="measurements; the median is reported")
    parser.add_argument("--same-process", action="store_true", help="all engines in this process")
    parser.add_argument("--child", nargs=4, metavar=("ENGINE", "WORKLOAD", "ITERATIONS", "GC"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:  # one measurement, printed as JSON, in a process of its own
        name, workload, iterations, collect = args.child
        make, step = WORKLOADS[workload]
        print(json.dumps(time_steps(step, make(engine_value(name)), int(iterations), collect == "1")))
        return

    engines = ["course_lib", "shared rules"]
    try:
        import micrograd.engine  # noqa: F401
    except ImportError:
        print(
            "micrograd is not installed, so only course_lib is measured. For the comparison run:\n"
            "    pip install micrograd==0.1.0\n"
        )
    else:
        engines.append("micrograd")
    check_same_numbers(engines)

    where = "all engines in this process" if args.same_process else "each engine in a process of its own"
    for workload, (make, step) in WORKLOADS.items():
        nodes = count_nodes(step(*make(Value)))
        label = f"perceptron {'-'.join(map(str, SIZES))}" if workload == "MLP" else f"fan-in, {2 * FAN_IN} inputs"
        print(f"Scalar {label}: {nodes} nodes per forward+backward step ({where})\n")
        for title, collect in (
            ("Garbage collector on (as in a training loop):", True),
            ("Garbage collector paused (per-operation overhead only):", False),
        ):
            if args.same_process:
                pairs = [(name, engine_value(name)) for name in engines]
                if workload == "MLP":
                    measured = seconds_per_step(pairs, args.iterations, args.repeats, collect)
                else:
                    measured = {
                        name: statistics.median(
                            time_steps(step, make(V), args.iterations, collect) for _ in range(args.repeats)
                        )
                        for name, V in pairs
                    }
            else:
                measured = seconds_per_step_apart(engines, workload, args.iterations, args.repeats, collect)
            print(table(title, list(measured.items()), nodes) + "\n")


if __name__ == "__main__":
    main()
