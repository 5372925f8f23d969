"""Throughput of the scalar engine: course_lib.scalar.Value against micrograd.

Both engines build the same graph, a small multilayer perceptron written out on scalars
(16 inputs, two hidden layers of 32 ReLU units, one output, squared error: about 3,300
operations and 5,000 nodes), then run backward. That is one training step without the
update; we time many of them in a row, as a training loop would run them, and report
steps per second and graph nodes per second.

Run:  python benchmarks/scalar.py  [--iterations 30] [--repeats 5]
micrograd is only needed here:  pip install micrograd==0.1.0

The second table repeats the measurement with Python's cyclic garbage collector paused.
micrograd's ``_backward`` closures refer to the node that owns them, so every graph is a
reference cycle that only the cyclic collector can free, and it runs (and re-scans the
growing heap) again and again while graphs are built. course_lib passes the output's
gradient into ``_backward(grad)`` instead, so its graphs hold no cycles and are freed by
reference counting the moment the loss goes out of scope. The difference between the
two tables is the cost of those cycles; what remains is per-operation overhead.
"""
from __future__ import annotations

import argparse
import gc
import random
import statistics
import time

from course_lib.scalar import Value

SIZES = (16, 32, 32, 1)


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


def count_nodes(root) -> int:
    seen, stack = {id(root)}, [root]
    parents = (lambda v: v._parents) if hasattr(root, "_parents") else (lambda v: v._prev)
    while stack:
        for p in parents(stack.pop()):
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return len(seen)


def seconds_per_step(engines, iterations: int, repeats: int, collect_cycles: bool) -> dict[str, float]:
    """For each engine, the median over ``repeats`` of the mean CPU time of ``iterations``
    consecutive steps. Engines take turns, so a busy machine slows them alike; CPU time
    (not wall-clock time) leaves out the moments other programs have the processor. The
    median, not the best: the collector's cost comes in bursts, and a lucky stretch
    without one is not the throughput of a training loop."""
    setups = {name: (V, *make_parameters(V)) for name, V in engines}
    times: dict[str, list[float]] = {name: [] for name, _ in engines}
    for _ in range(repeats):
        for name, (V, layers, inputs) in setups.items():
            training_step(V, layers, inputs)  # warm up
            gc.collect()
            if not collect_cycles:
                gc.disable()
            start = time.process_time()
            for _ in range(iterations):
                training_step(V, layers, inputs)
            times[name].append((time.process_time() - start) / iterations)
            gc.enable()
    return {name: statistics.median(t) for name, t in times.items()}


def check_same_numbers(micrograd_value) -> None:
    """Both engines compute the same loss and gradients (else the timing compares nothing)."""
    results = []
    for V in (Value, micrograd_value):
        layers, inputs = make_parameters(V)
        loss = training_step(V, layers, inputs)
        results.append((loss.data, [w.grad for w in layers[0][0][0]]))
    (loss_a, grads_a), (loss_b, grads_b) = results
    assert abs(loss_a - loss_b) < 1e-12 and max(abs(a - b) for a, b in zip(grads_a, grads_b)) < 1e-12


def table(title: str, rows: list[tuple[str, float]], nodes: int) -> str:
    lines = [title, f"{'engine':<12} {'ms/step':>9} {'steps/s':>9} {'Mnodes/s':>9} {'speed-up':>9}"]
    baseline = dict(rows).get("micrograd")
    for name, seconds in rows:
        ratio = f"{baseline / seconds:8.1f}x" if baseline else "        -"
        lines.append(f"{name:<12} {seconds * 1e3:9.2f} {1 / seconds:9.1f} {nodes / seconds / 1e6:9.2f} {ratio}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="consecutive steps per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="measurements; the median is reported")
    args = parser.parse_args()

    engines = [("course_lib", Value)]
    try:
        from micrograd.engine import Value as MicrogradValue
    except ImportError:
        print("micrograd is not installed, so only course_lib is measured. For the comparison run:\n"
              "    pip install micrograd==0.1.0\n")
    else:
        check_same_numbers(MicrogradValue)
        engines.append(("micrograd", MicrogradValue))

    layers, inputs = make_parameters(Value)
    nodes = count_nodes(training_step(Value, layers, inputs))
    print(f"Scalar perceptron {'-'.join(map(str, SIZES))}: {nodes} nodes per forward+backward step\n")
    for title, collect in (("Garbage collector on (as in a training loop):", True),
                           ("Garbage collector paused (per-operation overhead only):", False)):
        rows = list(seconds_per_step(engines, args.iterations, args.repeats, collect).items())
        print(table(title, rows, nodes) + "\n")


if __name__ == "__main__":
    main()
