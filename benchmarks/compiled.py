"""How fast is the compiled path (course_lib.jit, course_lib.vmap)? Side by side, one run.

    python -m benchmarks.compiled [--quick] [--record | --json]

1. A jitted SGD step of the Iris MLP 4-16-3 (forward, backward, update) at batch 16 and
   256, against the same step written by hand in NumPy (goals: <= 1.05x and <= 1.02x).
2. A chain of 100 tiny elementwise ops (4-element arrays), forward + backward, per op:
   jit(value_and_grad) against PyTorch eager (goal: <= 0.2x).
3. Per-example gradients of the MLP at batch 64: jit(vmap(grad)) against hand-written
   batched NumPy (goal: <= 1.3x, with one-hot labels and with integer labels) and against a
   Python loop over examples (goal: >= 10x faster).
4. Tracing + compiling the MLP step once (goal: <= 20 ms).

Before timing, each compiled candidate is checked to give the numbers of its reference
(the jitted step: exactly the eager step's). Everything runs in float64 on one core, as
in ``benchmarks/engines.py``: CPU time of this process, best of interleaved rounds.

``--record`` also writes the results into the benchmark record that chapter 14 draws
(``course_lib/data/benchmarks.json``, its ``compiled`` section; the other sections stay as
they are), so after a change to jit or vmap: record, re-execute the chapter, run
``tests/book/test_benchmarks_record.py``. ``--json`` prints the results as JSON only:
``benchmarks/record.py`` runs this script that way, in a process of its own.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import workloads  # first: it pins every engine to one thread before NumPy is imported

# isort: split
import numpy as np

from course_lib.datasets import load_iris
from course_lib.functional import grad, value_and_grad
from course_lib.jit import jit
from course_lib.nn import MLP, SGD, cross_entropy
from course_lib.tensor import Tensor, affine
from course_lib.vmap import vmap

torch = workloads.torch
LR = 0.1
CHAIN = 100
SIZES = (4, 16, 3)
STEP_BATCHES = (16, 256)
PER_EXAMPLE = 64
X_IRIS, Y_IRIS, *_ = load_iris()


# ----------------------------------------------------------------------------- 1. the MLP step
def loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor, labels: np.ndarray) -> Tensor:
    return cross_entropy(affine(affine(x, w1, b1).relu(), w2, b2), labels)


def sgd_step(params: list, x: Tensor, labels: np.ndarray) -> tuple[Tensor, list[Tensor]]:
    """One SGD step as a function: the loss and the new parameters."""
    value, grads = value_and_grad(loss, argnum=(0, 1, 2, 3))(*params, x, labels)
    return value, [p - LR * g for p, g in zip(params, grads)]


def numpy_step(params: list[np.ndarray], x: np.ndarray, labels: np.ndarray) -> tuple[float, list[np.ndarray]]:
    """The same step by hand: forward, backward and update in NumPy."""
    w1, b1, w2, b2 = params
    h = x @ w1 + b1
    a = np.maximum(h, 0.0)
    z = a @ w2 + b2
    s = z - z.max(axis=1, keepdims=True)
    logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    rows = np.arange(len(labels))
    value = -logp[rows, labels].mean()
    dz = np.exp(logp)
    dz[rows, labels] -= 1.0
    dz /= len(labels)
    dh = (dz @ w2.T) * (h > 0)
    grads = (x.T @ dh, dh.sum(axis=0), a.T @ dz, dz.sum(axis=0))
    return value, [p - LR * g for p, g in zip(params, grads)]


def batch(size: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.random.default_rng(size).integers(0, len(X_IRIS), size)
    return X_IRIS[rows], Y_IRIS[rows]


def check_step(size: int) -> None:
    """The jitted step gives the eager step's numbers exactly (and the hand-written one's closely)."""
    x, labels = batch(size)
    model = MLP(list(SIZES), rng=0)
    params = [p.data.copy() for p in model.parameters()]
    value, new = jit(sgd_step)(params, x, labels)
    eager = cross_entropy(model(x), labels)
    eager.backward()
    SGD(model.parameters(), LR).step()
    assert value.item() == eager.item(), "the jitted step's loss differs from the eager step's"
    for a, p in zip(new, model.parameters()):
        assert np.array_equal(a.data, p.data), "the jitted step's parameters differ from the eager step's"
    hand_value, hand = numpy_step(params, x, labels)
    assert np.isclose(hand_value, value.item()) and all(np.allclose(a.data, b) for a, b in zip(new, hand))


def time_step(size: int, rounds: int) -> dict[str, float]:
    """The jitted step and the hand-written one at batch ``size`` (and the compiled code alone:
    the difference is jit's call, from finding the signature to wrapping the results)."""
    check_step(size)
    x, labels = batch(size)
    params = [p.data.copy() for p in MLP(list(SIZES), rng=0).parameters()]
    step = jit(sgd_step)
    code = step.lookup(params, x, labels).function
    return workloads.best_times(
        {
            "NumPy by hand": lambda: numpy_step(params, x, labels),
            "jit(step)": lambda: step(params, x, labels),
            "jit(step), compiled code only": lambda: code(*params, x, labels),
        },
        number=200,
        rounds=rounds,
    )


# ----------------------------------------------------------------------------- 2. a chain of tiny ops
def chain(x: Tensor, w: Tensor) -> Tensor:
    for i in range(CHAIN):
        x = x * w if i % 2 else x + w
    return x.sum()


def time_chain(rounds: int) -> dict[str, float]:
    """Seconds per op of the chain, forward + backward: jitted, and in PyTorch eager (when installed)."""
    x, w = np.ones(4), np.full(4, 1.0001)
    compiled = jit(value_and_grad(chain, argnum=(0, 1)))
    eager = value_and_grad(chain, argnum=(0, 1))(Tensor(x), Tensor(w))
    ours = compiled(x, w)
    assert ours[0].item() == eager[0].item() and all(np.array_equal(a.data, b.data) for a, b in zip(ours[1], eager[1]))
    candidates: dict[str, Callable[[], object]] = {"jit(value_and_grad)": lambda: compiled(x, w)}
    if torch is not None:

        def torch_chain() -> None:
            tx = torch.ones(4, dtype=torch.float64, requires_grad=True)
            tw = torch.full((4,), 1.0001, dtype=torch.float64, requires_grad=True)
            y = tx
            for i in range(CHAIN):
                y = y * tw if i % 2 else y + tw
            y.sum().backward()

        candidates["PyTorch eager"] = torch_chain
    times = workloads.best_times(candidates, number=20, rounds=rounds)
    return {name: t / CHAIN for name, t in times.items()}


# ----------------------------------------------------------------------------- 3. per-example gradients
def example_loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor, onehot: Tensor) -> Tensor:
    """One example's cross-entropy, with one-hot labels (float data)."""
    return -(affine(affine(x, w1, b1).relu(), w2, b2).log_softmax() * onehot).sum()


def numpy_per_example(params: list[np.ndarray], x: np.ndarray, onehot: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-example gradients by hand, batched: outer products instead of matrix products."""
    w1, b1, w2, b2 = params
    h = x @ w1 + b1
    a = np.maximum(h, 0.0)
    z = a @ w2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    dz = e / e.sum(axis=1, keepdims=True) * onehot.sum(axis=1, keepdims=True) - onehot
    dh = (dz @ w2.T) * (h > 0)
    return x[:, :, None] * dh[:, None, :], dh, a[:, :, None] * dz[:, None, :], dz


def time_per_example(rounds: int) -> dict[str, float]:
    """Seconds for the per-example gradients of a batch of ``PER_EXAMPLE`` examples, four ways."""
    params = [p.data.copy() for p in MLP(list(SIZES), rng=0).parameters()]
    x, labels = batch(PER_EXAMPLE)
    onehot = np.eye(3)[labels]
    per_example = grad(example_loss, argnum=(0, 1, 2, 3))
    compiled = jit(vmap(per_example, in_axes=(None, None, None, None, 0, 0)))
    ours = compiled(*params, x, onehot)
    for a, b in zip(ours, numpy_per_example(params, x, onehot)):
        assert np.allclose(a.data, b, rtol=1e-12, atol=1e-14), "per-example gradients differ from NumPy's"

    def label_loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor, label: np.ndarray) -> Tensor:
        return -affine(affine(x, w1, b1).relu(), w2, b2).log_softmax()[label]

    with_labels = jit(vmap(grad(label_loss, argnum=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0)))
    for a, b in zip(with_labels(*params, x, labels), numpy_per_example(params, x, onehot)):
        assert np.allclose(a.data, b, rtol=1e-12, atol=1e-14), "per-example gradients (labels) differ from NumPy's"
    jitted_one = jit(per_example)

    def loop() -> None:
        for i in range(PER_EXAMPLE):
            per_example(*params, x[i], onehot[i])

    def jitted_loop() -> None:
        for i in range(PER_EXAMPLE):
            jitted_one(*params, x[i], onehot[i])

    return workloads.best_times(
        {
            "NumPy by hand, batched": lambda: numpy_per_example(params, x, onehot),
            "jit(vmap(grad))": lambda: compiled(*params, x, onehot),
            "jit(vmap(grad)), integer labels": lambda: with_labels(*params, x, labels),
            "loop of grad (eager)": loop,
            "loop of jit(grad)": jitted_loop,
        },
        number=5,
        rounds=rounds,
    )


# ----------------------------------------------------------------------------- 4. tracing + compiling
def time_compile(rounds: int) -> float:
    """Seconds to trace, simplify and compile the MLP step for a new signature (best of ``rounds``)."""
    params = [p.data.copy() for p in MLP(list(SIZES), rng=0).parameters()]
    x, labels = batch(16)
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        jit(sgd_step).lookup(params, x, labels)
        best = min(best, time.process_time() - start)
    return best


# ----------------------------------------------------------------------------- the results
def measure(rounds: int) -> dict:
    """Every workload, with the date, machine and versions: the record's ``compiled`` section."""
    started = datetime.datetime.now(datetime.UTC)
    machine = workloads.machine()
    steps = {str(size): time_step(size, rounds) for size in STEP_BATCHES}
    results = {
        "date": started.date().isoformat(),
        "machine": machine,
        "versions": workloads.versions(),
        "method": (
            "CPU time of one process (time.process_time), bound to one core, float64, one thread; "
            f"best of {rounds} interleaved rounds"
        ),
        "mlp_step": {"sizes": list(SIZES), "seconds": steps},
        "chain": {"length": CHAIN, "elements": 4, "seconds_per_op": time_chain(rounds)},
        "per_example": {"batch": PER_EXAMPLE, "seconds": time_per_example(rounds)},
        "trace_and_compile_seconds": time_compile(rounds),
    }
    results["goals"] = goals(results)
    return results


def goals(results: dict) -> list[dict]:
    """The issue's goals: each workload's measured ratio (or time) and its bound (``at_most`` or
    ``at_least``; a row with neither is shown for comparison)."""
    steps, per_example = results["mlp_step"]["seconds"], results["per_example"]["seconds"]
    rows = [
        {
            "workload": f"jitted MLP step, batch {size} / NumPy by hand",
            "measured": steps[str(size)]["jit(step)"] / steps[str(size)]["NumPy by hand"],
            "at_most": bound,
        }
        for size, bound in zip(STEP_BATCHES, (1.05, 1.02))
    ]
    chain_seconds = results["chain"]["seconds_per_op"]
    if "PyTorch eager" in chain_seconds:
        ratio = chain_seconds["jit(value_and_grad)"] / chain_seconds["PyTorch eager"]
        rows.append({"workload": "chain of tiny ops, per op / PyTorch eager", "measured": ratio, "at_most": 0.2})
    vmapped = per_example["jit(vmap(grad))"]
    labelled = per_example.get("jit(vmap(grad)), integer labels")  # absent from records made before it
    if labelled is not None:
        rows.append(
            {
                "workload": "per-example grads, integer labels / NumPy batched",
                "measured": labelled / per_example["NumPy by hand, batched"],
                "at_most": 1.3,
            }
        )
    return rows + [
        {
            "workload": "per-example grads (vmap) / NumPy batched",
            "measured": vmapped / per_example["NumPy by hand, batched"],
            "at_most": 1.3,
        },
        {
            "workload": "loop of eager grad / vmap (speed-up)",
            "measured": per_example["loop of grad (eager)"] / vmapped,
            "at_least": 10,
        },
        {"workload": "loop of jit(grad) / vmap (speed-up)", "measured": per_example["loop of jit(grad)"] / vmapped},
        {
            "workload": "trace + compile the MLP step, ms",
            "measured": results["trace_and_compile_seconds"] * 1e3,
            "at_most": 20,
        },
    ]


def verdict(row: dict) -> str:
    """``met`` or ``missed`` for a row with a goal, ``""`` for one without."""
    if "at_most" in row:
        return "met" if row["measured"] <= row["at_most"] else "missed"
    if "at_least" in row:
        return "met" if row["measured"] >= row["at_least"] else "missed"
    return ""


def report(results: dict) -> None:
    print(f"float64, one core, CPU time, {results['method'].rsplit('; ', 1)[1]}; NumPy {np.__version__}")
    for size, times in results["mlp_step"]["seconds"].items():
        print(f"\n1. Iris MLP 4-16-3 SGD step, batch {size}")
        for name, t in times.items():
            print(f"   {name:<32}{t * 1e6:>9.1f} us")
    print(f"\n2. A chain of {CHAIN} tiny elementwise ops (4 elements), forward + backward")
    for name, t in results["chain"]["seconds_per_op"].items():
        print(f"   {name:<32}{t * 1e6:>9.3f} us per op")
    if torch is None:
        print("   PyTorch is not installed: no ratio")
    print(f"\n3. Per-example gradients of the MLP, batch {PER_EXAMPLE}")
    for name, t in results["per_example"]["seconds"].items():
        print(f"   {name:<32}{t * 1e6:>9.1f} us")
    print(f"\n4. Tracing + compiling the MLP step: {results['trace_and_compile_seconds'] * 1e3:.2f} ms")
    print(f"\n{'workload':<48}{'measured':>10}  goal")
    for row in results["goals"]:
        goal = f"<= {row['at_most']}" if "at_most" in row else f">= {row['at_least']}" if "at_least" in row else ""
        print(f"{row['workload']:<48}{row['measured']:>10.2f}  {goal or '(no goal)':<9} {verdict(row)}".rstrip())


def write_record(results: dict, path: Path = workloads.RECORD) -> None:
    """Put ``results`` into the benchmark record as its ``compiled`` section, keeping the others."""
    record = json.loads(path.read_text())
    record["compiled"] = results
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nwrote the compiled section of {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier numbers)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--record", action="store_true", help=f"also write the results into {workloads.RECORD}")
    output.add_argument("--json", action="store_true", help="print the results as JSON only (for record.py)")
    args = parser.parse_args()
    workloads.keep_freed_memory()
    workloads.use_one_core()
    results = measure(rounds=3 if args.quick else 15)
    if args.json:
        print(json.dumps(results))
        return
    report(results)
    if args.record:
        write_record(results)


if __name__ == "__main__":
    main()
