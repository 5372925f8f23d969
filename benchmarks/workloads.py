"""The workloads of the benchmarks, each defined once.

``benchmarks/engines.py`` prints them side by side (best of several rounds) and
``benchmarks/record.py`` records them for chapter 14 (medians, in a JSON file); this module
only builds them. A candidate is a function of no arguments: one call is one unit of work.

Importing this module pins every engine to ONE thread, so that all do the same arithmetic
with the same resources: NumPy's BLAS (set before NumPy is imported), PyTorch
(``set_num_threads(1)``) and JAX (its XLA flags). The flags do not stop every version of
JAX's CPU runtime from starting worker threads, so the scripts also bind their process to
one core with :func:`use_one_core` before they time anything: whatever threads a library
starts then take turns on that core. PyTorch, HIPS autograd, JAX and micrograd
are optional (``pip install -r benchmarks/requirements.txt``): a missing one is ``None``
here and its candidates are left out.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import importlib.metadata  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import course_lib  # noqa: E402
from course_lib import forward  # noqa: E402
from course_lib.check import numerical_grad  # noqa: E402
from course_lib.nn import MLP, cross_entropy  # noqa: E402
from course_lib.scalar import Value  # noqa: E402
from course_lib.tensor import Tensor, no_grad  # noqa: E402

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - the course's test setup installs torch
    torch = None
try:
    import autograd
    import autograd.numpy as anp
except ImportError:
    autograd = anp = None
try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = jnp = None
try:
    from micrograd.engine import Value as MicrogradValue
except ImportError:
    MicrogradValue = None

SIZES = (64, 256, 256, 10)
BATCH = 256
CHAIN = 10_000
RECORD = Path(__file__).resolve().parents[1] / "course_lib" / "data" / "benchmarks.json"
"""The benchmark record that chapter 14 draws (written by ``record.py`` and ``compiled.py --record``)."""

Candidates = dict[str, Callable[[], object]]


def best_times(candidates: Candidates, number: int, rounds: int) -> dict[str, float]:
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


def use_one_core() -> None:
    """Bind this process (and the threads it starts) to one core, where the system allows it.

    Called by the scripts, not on import: a test that imports the workloads must not slow
    down the rest of its process."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def keep_freed_memory() -> bool:
    """Ask glibc to serve large arrays from the heap and not to return freed memory to the OS."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 64 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 512 << 20))
    except (OSError, AttributeError, TypeError):  # not glibc
        return False


# ----------------------------------------------------------------------------- what a record notes
def versions() -> dict[str, str | None]:
    """The versions of Python, NumPy, course_lib and the optional engines (None: not installed)."""
    # course_lib's own version string: the metadata of an editable install can be older than the code
    found = {"python": platform.python_version(), "numpy": np.__version__, "course_lib": course_lib.__version__}
    for package in ("torch", "jax", "autograd", "micrograd"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def machine() -> dict:
    """The processor, its cores and the load on the machine now."""
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


# ----------------------------------------------------------------------------- the cheap-gradient objective
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


def gradient_candidates(n: int) -> Candidates:
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


# ----------------------------------------------------------------------------- the MLP
@dataclass(frozen=True)
class MLPData:
    """The MLP's batch and its initial parameters: the same numbers for every engine."""

    x: np.ndarray
    labels: np.ndarray
    rows: np.ndarray
    weights: list[np.ndarray]
    biases: list[np.ndarray]

    @property
    def params(self) -> list[np.ndarray]:
        """Weights and biases interleaved: w1, b1, w2, b2, ..."""
        return [a for pair in zip(self.weights, self.biases) for a in pair]


def mlp_data(batch: int = BATCH) -> MLPData:
    """A batch of ``batch`` random inputs and labels, and the layers' weights, from seed 0."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, SIZES[0]))
    labels = rng.integers(0, SIZES[-1], batch)
    layers = list(zip(SIZES[:-1], SIZES[1:]))
    weights = [rng.uniform(-1, 1, (m, n)) / np.sqrt(m) for m, n in layers]
    biases = [rng.uniform(-1, 1, n) / np.sqrt(m) for m, n in layers]
    return MLPData(x, labels, np.arange(batch), weights, biases)


def numpy_loss(data: MLPData) -> float:
    """The forward pass in plain NumPy: the mean cross-entropy of the batch."""
    h = data.x
    for k, (w, b) in enumerate(zip(data.weights, data.biases)):
        h = h @ w + b
        if k < len(data.weights) - 1:
            h = np.maximum(h, 0.0)
    shifted = h - h.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[data.rows, data.labels].mean()


def numpy_by_hand(data: MLPData) -> list:
    """The same forward pass with the backward pass written out by hand: the floor for an engine."""
    weights, labels = data.weights, data.labels
    pre, post = [], [data.x]
    for k, (w, b) in enumerate(zip(weights, data.biases)):
        pre.append(post[-1] @ w + b)
        post.append(np.maximum(pre[-1], 0.0) if k < len(weights) - 1 else pre[-1])
    shifted = post[-1] - post[-1].max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(axis=1, keepdims=True)
    g = probs  # d(mean cross-entropy)/d(logits) = (softmax - one_hot) / batch
    g[data.rows, labels] -= 1.0
    g /= len(labels)
    grads = []
    for k in reversed(range(len(weights))):
        grads += [post[k].T @ g, g.sum(axis=0)]
        if k:
            g = (g @ weights[k].T) * (pre[k - 1] > 0)
    return grads


def numpy_mlp(data: MLPData) -> Candidates:
    """The NumPy forward pass alone (the reference of every ratio) and with its hand-written backward pass."""
    return {"NumPy forward only": lambda: numpy_loss(data), "NumPy by hand (fwd+bwd)": lambda: numpy_by_hand(data)}


class CourseLibMLP:
    """course_lib's MLP on ``data``: its forward pass (recorded or not) and a training step."""

    def __init__(self, data: MLPData) -> None:
        self.model = MLP(SIZES, rng=0)
        for layer, w, b in zip(self.model.layers, data.weights, data.biases):
            layer.weight.data, layer.bias.data = w.copy(), b.copy()
        self.params = self.model.parameters()
        self.inputs, self.labels = Tensor(data.x), data.labels

    def forward(self) -> Tensor:
        """The loss, recording the graph."""
        return cross_entropy(self.model(self.inputs), self.labels)

    def forward_no_grad(self) -> Tensor:
        """The loss without recording the graph."""
        with no_grad():
            return self.forward()

    def step(self) -> None:
        """Forward + backward: the gradients of every parameter."""
        for p in self.params:
            p.grad = None
        self.forward().backward()


def framework_mlp(data: MLPData) -> Candidates:
    """A training step (forward + backward) in PyTorch eager and in HIPS autograd, those installed."""
    candidates: Candidates = {}
    if torch is not None:
        tx, tlabels = torch.tensor(data.x), torch.tensor(data.labels)
        tparams = [torch.tensor(a, requires_grad=True) for a in data.params]

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
            h = data.x
            for k in range(0, len(params), 2):
                h = anp.dot(h, params[k]) + params[k + 1]
                if k < len(params) - 2:
                    h = anp.maximum(h, 0.0)
            shifted = h - anp.max(h, axis=1, keepdims=True)
            log_probs = shifted - anp.log(anp.sum(anp.exp(shifted), axis=1, keepdims=True))
            return -anp.mean(log_probs[data.rows, data.labels])

        loss_grad, aparams = autograd.grad(loss), data.params
        candidates["HIPS autograd"] = lambda: loss_grad(aparams)
    return candidates


def jax_mlp(data: MLPData) -> Candidates:
    """The MLP in JAX, compiled with ``jit`` here (not while timing): gradient, and forward alone.

    The loss is checked against :func:`numpy_loss`; empty without JAX.
    """
    if jax is None:
        return {}
    params, jx, jlabels = [jnp.asarray(a) for a in data.params], jnp.asarray(data.x), jnp.asarray(data.labels)

    def loss(params: list, x: object, labels: object) -> object:
        h = x
        for k in range(0, len(params), 2):
            h = h @ params[k] + params[k + 1]
            if k < len(params) - 2:
                h = jnp.maximum(h, 0.0)
        log_probs = jax.nn.log_softmax(h, axis=1)
        return -jnp.mean(log_probs[jnp.arange(h.shape[0]), labels])

    forward_only, gradient = jax.jit(loss), jax.jit(jax.grad(loss))
    assert abs(float(forward_only(params, jx, jlabels)) - numpy_loss(data)) < 1e-12
    jax.block_until_ready(gradient(params, jx, jlabels))
    return {
        "JAX jit": lambda: jax.block_until_ready(gradient(params, jx, jlabels)),
        "JAX jit forward only": lambda: jax.block_until_ready(forward_only(params, jx, jlabels)),
    }


# ----------------------------------------------------------------------------- chains of multiplications
def repeated_product(y, w, length: int):
    """``y * w * ... * w`` with ``length`` factors: a chain of ``length`` nodes in any engine."""
    for _ in range(length):
        y = y * w
    return y


def build_chain(V, depth: int, factor: float = 1.0000001):
    """A chain of ``depth`` multiplications of scalar engine ``V``: its output node."""
    return repeated_product(V(1.0), V(factor), depth)


def scalar_chain(V, length: int) -> Callable[[], None]:
    """Forward + backward through ``length`` multiplications of scalar engine ``V``."""
    return lambda: build_chain(V, length, 1.0001).backward()


def chain_loss(length: int, total: Callable) -> Callable[[list], object]:
    """The chain as a function of its leaves ``[x, w]``, reduced by ``total``: for the functional engines."""
    return lambda params: total(repeated_product(params[0], params[1], length))


def tensor_chains(length: int = CHAIN) -> Candidates:
    """Forward + backward through ``length`` multiplications of a 4-element array, by each tensor engine."""

    def course_lib_chain() -> None:
        x, w = Tensor(np.ones(4), requires_grad=True), Tensor(np.full(4, 1.0001), requires_grad=True)
        repeated_product(x, w, length).sum().backward()

    candidates: Candidates = {"course_lib": course_lib_chain}
    if torch is not None:

        def torch_chain() -> None:
            x = torch.ones(4, dtype=torch.float64, requires_grad=True)
            w = torch.full((4,), 1.0001, dtype=torch.float64, requires_grad=True)
            repeated_product(x, w, length).sum().backward()

        candidates["PyTorch eager"] = torch_chain
    if autograd is not None:
        chain_grad = autograd.grad(chain_loss(length, anp.sum))
        candidates["HIPS autograd"] = lambda: chain_grad([np.ones(4), np.full(4, 1.0001)])
    return candidates


def jax_chain(length: int) -> Callable[[], object] | None:
    """The gradient of the chain compiled by JAX once, here (not while timing); ``None`` without JAX."""
    if jax is None:
        return None
    chain_grad, args = jax.jit(jax.grad(chain_loss(length, jnp.sum))), [jnp.ones(4), jnp.full(4, 1.0001)]
    jax.block_until_ready(chain_grad(args))
    return lambda: jax.block_until_ready(chain_grad(args))


def plain_chains(length: int = CHAIN) -> Candidates:
    """The same multiplications with no derivatives: of a 4-element NumPy array, and of a Python float."""
    four, factor = np.ones(4), np.full(4, 1.0001)
    return {
        "NumPy, no AD": lambda: repeated_product(four, factor, length),
        "Python float, no AD": lambda: repeated_product(1.0, 1.0001, length),
    }


# ----------------------------------------------------------------------------- a dot product
def dot_candidates(n: int, with_scalar: bool) -> Candidates:
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

    candidates: Candidates = {"course_lib (Value)": value_dot} if with_scalar else {}
    candidates["course_lib (Tensor)"] = tensor_dot
    if torch is not None:
        ta, tb = torch.tensor(a), torch.tensor(b)

        def torch_dot() -> None:
            x, y = ta.clone().requires_grad_(), tb.clone().requires_grad_()
            (x @ y).backward()

        candidates["PyTorch eager"] = torch_dot
    candidates["NumPy forward only"] = lambda: a @ b
    return candidates
