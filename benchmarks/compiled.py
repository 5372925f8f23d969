"""How fast is the compiled path (course_lib.jit, course_lib.vmap)? Side by side, one run.

    python -m benchmarks.compiled [--quick]

1. A jitted SGD step of the Iris MLP 4-16-3 (forward, backward, update) at batch 16 and
   256, against the same step written by hand in NumPy (goals: <= 1.05x and <= 1.02x).
2. A chain of 100 tiny elementwise ops (4-element arrays), forward + backward, per op:
   jit(value_and_grad) against PyTorch eager (goal: <= 0.2x).
3. Per-example gradients of the MLP at batch 64: jit(vmap(grad)) against hand-written
   batched NumPy (goal: <= 1.3x) and against a Python loop over examples (goal: >= 10x faster).
4. Tracing + compiling the MLP step once (goal: <= 20 ms).

Before timing, each compiled candidate is checked to give the numbers of its reference
(the jitted step: exactly the eager step's). Everything runs in float64 on one core, as
in ``benchmarks/engines.py``: CPU time of this process, best of interleaved rounds.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

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
    model = MLP([4, 16, 3], rng=0)
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
    params = [p.data.copy() for p in MLP([4, 16, 3], rng=0).parameters()]
    step = jit(sgd_step)
    code = step.lookup(params, x, labels).function
    return workloads.best_times(
        {
            "NumPy by hand": lambda: numpy_step(params, x, labels),
            "jit(step)": lambda: step(params, x, labels),
            "jit(step), compiled code only": lambda: code(*params, x),
        },
        number=200,
        rounds=rounds,
    )


def print_steps(rounds: int) -> list[tuple[str, float, str]]:
    rows = []
    for size, goal in ((16, 1.05), (256, 1.02)):
        times = time_step(size, rounds)
        print(f"\n1. Iris MLP 4-16-3 SGD step, batch {size}")
        for name, t in times.items():
            print(f"   {name:<32}{t * 1e6:>9.1f} us")
        ratio = times["jit(step)"] / times["NumPy by hand"]
        rows.append((f"jitted MLP step, batch {size} / NumPy by hand", ratio, f"<= {goal}"))
    return rows


# ----------------------------------------------------------------------------- 2. a chain of tiny ops
def chain(x: Tensor, w: Tensor) -> Tensor:
    for i in range(CHAIN):
        x = x * w if i % 2 else x + w
    return x.sum()


def print_chain(rounds: int) -> list[tuple[str, float, str]]:
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
    print(f"\n2. A chain of {CHAIN} tiny elementwise ops (4 elements), forward + backward")
    for name, t in times.items():
        print(f"   {name:<32}{t / CHAIN * 1e6:>9.3f} us per op")
    if torch is None:
        print("   PyTorch is not installed: no ratio")
        return []
    return [
        ("chain of tiny ops, per op / PyTorch eager", times["jit(value_and_grad)"] / times["PyTorch eager"], "<= 0.2")
    ]


# ----------------------------------------------------------------------------- 3. per-example gradients
def example_loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor, onehot: Tensor) -> Tensor:
    """One example's cross-entropy (labels one-hot: integer arrays are static to tracing)."""
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


def print_per_example(rounds: int) -> list[tuple[str, float, str]]:
    params = [p.data.copy() for p in MLP([4, 16, 3], rng=0).parameters()]
    x, labels = batch(64)
    onehot = np.eye(3)[labels]
    per_example = grad(example_loss, argnum=(0, 1, 2, 3))
    compiled = jit(vmap(per_example, in_axes=(None, None, None, None, 0, 0)))
    ours = compiled(*params, x, onehot)
    for a, b in zip(ours, numpy_per_example(params, x, onehot)):
        assert np.allclose(a.data, b, rtol=1e-12, atol=1e-14), "per-example gradients differ from NumPy's"
    jitted_one = jit(per_example)

    def loop() -> None:
        for i in range(64):
            per_example(*params, x[i], onehot[i])

    def jitted_loop() -> None:
        for i in range(64):
            jitted_one(*params, x[i], onehot[i])

    times = workloads.best_times(
        {
            "NumPy by hand, batched": lambda: numpy_per_example(params, x, onehot),
            "jit(vmap(grad))": lambda: compiled(*params, x, onehot),
            "loop of grad (eager)": loop,
            "loop of jit(grad)": jitted_loop,
        },
        number=5,
        rounds=rounds,
    )
    print("\n3. Per-example gradients of the MLP, batch 64")
    for name, t in times.items():
        print(f"   {name:<32}{t * 1e6:>9.1f} us")
    ours_t = times["jit(vmap(grad))"]
    return [
        ("per-example grads (vmap) / NumPy batched", ours_t / times["NumPy by hand, batched"], "<= 1.3"),
        ("loop of eager grad / vmap (speed-up)", times["loop of grad (eager)"] / ours_t, ">= 10"),
        ("loop of jit(grad) / vmap (speed-up)", times["loop of jit(grad)"] / ours_t, "(no goal)"),
    ]


# ----------------------------------------------------------------------------- 4. tracing + compiling
def print_compile(rounds: int) -> list[tuple[str, float, str]]:
    params = [p.data.copy() for p in MLP([4, 16, 3], rng=0).parameters()]
    x, labels = batch(16)
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        jit(sgd_step).lookup(params, x, labels)
        best = min(best, time.process_time() - start)
    print(f"\n4. Tracing + compiling the MLP step: {best * 1e3:.2f} ms")
    return [("trace + compile the MLP step, ms", best * 1e3, "<= 20")]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier numbers)")
    rounds = 3 if parser.parse_args().quick else 15
    workloads.keep_freed_memory()
    workloads.use_one_core()
    print(f"float64, one core, CPU time, best of {rounds} interleaved rounds; NumPy {np.__version__}")
    rows = print_steps(rounds) + print_chain(rounds) + print_per_example(rounds) + print_compile(rounds)
    print(f"\n{'workload':<48}{'measured':>10}  goal")
    for name, value, goal in rows:
        print(f"{name:<48}{value:>10.2f}  {goal}")


if __name__ == "__main__":
    main()
