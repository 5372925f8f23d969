"""A differential fuzzer for the compiled path: random programs over the op table, run
eagerly and through jit, grad, vmap, linearize/transpose and the passes, must agree.

A program is a list of steps over a growing list of values: the two arguments ``x`` (2, 3)
and ``y`` (3,), Tensors the function closes over (requiring grad or not, ones, zeros,
equal to each other) and every step's result. Steps are ops of the table with operands
whose shapes broadcast (or multiply, for matmul and affine), axes (negative, tuples,
keepdims), static numbers (-0.0 and NaN among them), ``detach`` and ``no_grad``, and
indexing with the third argument ``labels``, two integers in {0, 1}: traced data, as class
labels are (``take`` and its VJP ``put``, repeated positions included). The function
returns some values, one of them maybe twice, and a ``None``. Properties, each on a fresh draw:

- ``jit(f) == f`` bit for bit, at a first call and at a second one with new arguments and
  new values of the closed-over Tensors (no new trace);
- ``grad(jit(loss)) == grad(loss)`` bit for bit, for the arguments and the closed-over
  parameters (``backward()`` through ``jit``);
- ``vmap(f) ==`` a loop over the examples, for every ``in_axes``, and nested;
- ``vmap(grad(loss)) ==`` the per-example loop of ``grad``;
- ``transpose(linearize(loss))`` applied to 1 == the gradient;
- ``simplify`` keeps every value of the traced program bit for bit;
- the value and gradient of ``jit(loss)`` match JAX's (the same program written with ``jax.numpy``).

The normal run draws a few dozen programs; ``make fuzz`` (``FUZZ_EXAMPLES=...``) many more.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_lib.functional import grad
from course_lib.jit import jit
from course_lib.linearize import linearize, transpose
from course_lib.passes import simplify
from course_lib.program import evaluate
from course_lib.tensor import Tensor, affine, no_grad, stack, where
from course_lib.trace import make_program
from course_lib.vmap import vmap

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize="FUZZ_EXAMPLES" not in os.environ,  # the normal run is reproducible
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SHAPES = [(2, 3), (3,), (1, 3), (2, 1), ()]
STATICS = [0.0, -0.0, 1.0, -1.5, 2.0, 0.5, float("nan")]
UNARY: dict[str, Callable[[Tensor], Tensor]] = {
    "neg": lambda a: -a,
    "exp": lambda a: a.tanh().exp(),
    "log": lambda a: (a.abs() + 1.0).log(),
    "sqrt": lambda a: (a.abs() + 0.5).sqrt(),
    "sin": lambda a: a.sin(),
    "cos": lambda a: a.cos(),
    "tanh": lambda a: a.tanh(),
    "sigmoid": lambda a: a.sigmoid(),
    "relu": lambda a: a.relu(),
    "abs": lambda a: a.abs(),
    "sign": lambda a: a.sign() * a,
    "clip": lambda a: a.clip(-0.5, 0.7),
    "square": lambda a: a**2.0,
    "detach": lambda a: a.detach() * a,
    "no_grad": lambda a: _no_grad_mul(a),
    "identity_mul": lambda a: a * 1.0,
}
BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1.0),
    "ge": lambda a, b: a.ge(b) * a + b,
    "pow": lambda a, b: (a * a + 0.5) ** (b.tanh()),
    "matmul": lambda a, b: a @ b,
    "affine": lambda a, b: affine(a, b, b.mean()),
    "stack": lambda a, b: stack([a, a * b], axis=-1),
}


def _no_grad_mul(a: Tensor) -> Tensor:
    with no_grad():
        b = a * 3.0
    return a + b


def _reduce(kind: str, axis: Any, keepdims: bool) -> Callable[[Tensor], Tensor]:
    def f(a: Tensor) -> Tensor:
        ax = axis if axis is None or a.ndim > 0 else None
        if isinstance(ax, tuple):
            ax = tuple(x for x in ax if -a.ndim <= x < a.ndim) or None
        elif ax is not None and not -a.ndim <= ax < a.ndim:
            ax = None
        if kind in ("softmax", "log_softmax"):
            return getattr(a, kind)(axis=-1 if ax is None or isinstance(ax, tuple) else ax) if a.ndim else a
        return getattr(a, kind)(axis=ax, keepdims=keepdims)

    return f


def _shape_of(f: Callable[..., Tensor], *shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        shape = f(*(Tensor(np.ones(s)) for s in shapes)).shape
    except (ValueError, IndexError, TypeError):
        return None
    return shape if len(shape) <= 3 else None  # keep the programs small


@st.composite
def programs(draw: Any) -> dict[str, Any]:
    """Steps over the values (see the module docstring), the closed-over Tensors and the outputs."""
    consts = []
    for _ in range(draw(st.integers(0, 2))):
        shape = draw(st.sampled_from(SHAPES))
        fill = draw(st.sampled_from(["ones", "zeros", "random", "same"]))
        consts.append({"shape": shape, "fill": fill, "grad": draw(st.booleans())})
    shapes: list[tuple[int, ...] | None] = [(2, 3), (3,)] + [c["shape"] for c in consts]
    steps = []
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(
            st.sampled_from(["unary", "binary", "binary", "static", "reduce", "shape", "index", "label", "where"])
        )
        a = draw(st.integers(0, len(shapes) - 1))
        if kind == "unary":
            name = draw(st.sampled_from(sorted(UNARY)))
            step: tuple = ("unary", name, a)
            shape = shapes[a]
        elif kind == "binary":
            b = draw(st.integers(0, len(shapes) - 1))
            name = draw(st.sampled_from(sorted(BINARY)))
            step = ("binary", name, a, b)
            shape = _shape_of(BINARY[name], shapes[a], shapes[b])  # type: ignore[arg-type]
        elif kind == "static":
            number = draw(st.sampled_from(STATICS))
            name = draw(st.sampled_from(["mul", "add", "rsub", "div"]))
            step = ("static", name, a, number)
            shape = shapes[a]
        elif kind == "reduce":
            name = draw(st.sampled_from(["sum", "mean", "max", "softmax", "log_softmax"]))
            axis = draw(st.sampled_from([None, 0, -1, 1, (0, 1), (-1,)]))
            keepdims = draw(st.booleans())
            step = ("reduce", name, a, axis, keepdims)
            shape = _shape_of(_reduce(name, axis, keepdims), shapes[a])  # type: ignore[arg-type]
        elif kind == "shape":
            name = draw(st.sampled_from(["T", "reshape", "broadcast"]))
            step = ("shape", name, a)
            shape = _shape_of(_SHAPE_OPS[name], shapes[a])  # type: ignore[arg-type]
        elif kind == "index":
            name = draw(st.sampled_from(["first", "last", "mask", "pick"]))
            step = ("index", name, a)
            shape = _shape_of(_INDEX_OPS[name], shapes[a])  # type: ignore[arg-type]
        elif kind == "label":
            name = draw(st.sampled_from(sorted(_LABEL_OPS)))
            step = ("label", name, a)
            shape = _shape_of(lambda v, name=name: _LABEL_OPS[name](v, PROBE), shapes[a])  # type: ignore[arg-type]
        else:
            b = draw(st.integers(0, len(shapes) - 1))
            step = ("where", "where", a, b)
            shape = _shape_of(_where, shapes[a], shapes[b])  # type: ignore[arg-type]
        if shape is None or shapes[a] is None:
            continue
        steps.append(step)
        shapes.append(shape)
    last = len(shapes) - 1
    outputs = [last, draw(st.integers(0, last))]
    return {"consts": consts, "steps": steps, "outputs": outputs, "repeat": draw(st.booleans())}


_SHAPE_OPS: dict[str, Callable[[Tensor], Tensor]] = {
    "T": lambda a: a.T,
    "reshape": lambda a: a.reshape(-1),
    "broadcast": lambda a: a.broadcast_to((2,) + a.shape) if a.ndim < 3 else a,
}
_INDEX_OPS: dict[str, Callable[[Tensor], Tensor]] = {
    "first": lambda a: a[0] if a.ndim else a,
    "last": lambda a: a[..., -1:] if a.ndim else a,
    "mask": lambda a: a[np.arange(a.shape[-1]) % 2 == 0] if a.ndim == 1 else a,
    "pick": lambda a: a[[0, 0]] if a.ndim else a,
}


_LABEL_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "rows": lambda a, k: a[np.arange(2), k] if a.ndim == 2 and a.shape[0] == 2 else a,  # cross_entropy's pick
    "take": lambda a, k: a[k] if a.ndim else a,  # along axis 0: a label twice picks a row twice
    "last": lambda a, k: a[..., k] if a.ndim else a,
    "nll": lambda a, k: -_log_softmax(a)[np.arange(2), k] if a.ndim == 2 and a.shape[0] == 2 else a,  # cross_entropy
}
"""Indexing with the integer argument ``k`` (for Tensors and JAX arrays alike)."""
PROBE = np.array([0, 1])


def _log_softmax(a: Any) -> Any:
    """The log-softmax over the last axis, of a Tensor or a JAX array."""
    if isinstance(a, Tensor):
        return a.log_softmax(axis=-1)
    import jax

    return jax.nn.log_softmax(a, axis=-1)


"""Labels that reach both values: a step whose axis is too short for them is not drawn."""


def _static(name: str, v: Any, s: float) -> Any:
    """``v`` combined with the static number ``s`` (for Tensors and JAX arrays alike)."""
    return {"mul": lambda: v * s, "add": lambda: v + s, "rsub": lambda: s - v, "div": lambda: v / (s * s + 1.0)}[name]()


def _where(a: Tensor, b: Tensor) -> Tensor:
    shape = np.broadcast_shapes(a.shape, b.shape)
    return where(np.arange(int(np.prod(shape))).reshape(shape) % 2 == 0, a, b)


def build(spec: dict[str, Any], consts: list[Tensor]) -> Callable[..., Any]:
    """The function of ``spec``, closing over ``consts``: returns its outputs and a None."""

    def f(x: Tensor, y: Tensor, labels: Any) -> Any:
        values = [x, y, *consts]
        for step in spec["steps"]:
            kind, name, a = step[:3]
            if kind == "unary":
                out = UNARY[name](values[a])
            elif kind == "binary":
                out = BINARY[name](values[a], values[step[3]])
            elif kind == "static":
                out = _static(name, values[a], step[3])
            elif kind == "reduce":
                out = _reduce(name, step[3], step[4])(values[a])
            elif kind == "shape":
                out = _SHAPE_OPS[name](values[a])
            elif kind == "index":
                out = _INDEX_OPS[name](values[a])
            elif kind == "label":
                out = _LABEL_OPS[name](values[a], labels)
            else:
                out = _where(values[a], values[step[3]])
            values.append(out)
        outs = [values[i] for i in spec["outputs"]]
        return (*outs, outs[0], None) if spec["repeat"] else (*outs, None)

    return f


def loss_of(f: Callable[..., Any]) -> Callable[..., Tensor]:
    """A scalar of all of ``f``'s Tensor results (weighted, so none cancels another)."""

    def loss(x: Tensor, y: Tensor, labels: Any) -> Tensor:
        total = (x * 0.0).sum() + (y * 0.0).sum()
        for k, out in enumerate(f(x, y, labels)):
            if isinstance(out, Tensor):
                total = total + (out * (k + 1.0)).sum()
        return total

    return loss


def make_consts(spec: dict[str, Any], rng: np.random.Generator) -> list[Tensor]:
    consts: list[Tensor] = []
    for c in spec["consts"]:
        if c["fill"] == "same" and consts and consts[-1].shape == c["shape"]:
            values = consts[-1].data.copy()
        else:
            values = {"ones": np.ones, "zeros": np.zeros}.get(c["fill"], lambda s: rng.normal(size=s))(c["shape"])
        consts.append(Tensor(values, requires_grad=c["grad"]))
    return consts


@dataclass
class Case:
    """One drawn program: the Tensors it closes over, its function ``f``, ``loss_of(f)``, and the
    generator that drew the Tensors' values, for the inputs and any new values."""

    rng: np.random.Generator
    consts: list[Tensor]
    f: Callable[..., Any]
    loss: Callable[..., Tensor]

    def inputs(self, lead: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``x``, ``y`` and ``labels`` (with leading batch axes ``lead``), drawn afresh."""
        rng = self.rng
        return rng.normal(size=lead + (2, 3)), rng.normal(size=lead + (3,)), rng.integers(0, 2, size=lead + (2,))


def loss_case(spec: dict[str, Any], seed: int) -> Case:
    """The program of ``spec``, closing over Tensors drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    consts = make_consts(spec, rng)
    f = build(spec, consts)
    return Case(rng, consts, f, loss_of(f))


def same(a: Any, b: Any) -> bool:
    """Bit for bit (any NaN equals any NaN; -0.0 is not 0.0)."""
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a.data if isinstance(a, Tensor) else a), np.asarray(b.data if isinstance(b, Tensor) else b)
    if a.shape != b.shape:
        return False
    nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(nan | (a.view(np.int64) == b.view(np.int64))))


def close(a: Any, b: Any) -> bool:
    a, b = np.asarray(a.data if isinstance(a, Tensor) else a), np.asarray(b.data if isinstance(b, Tensor) else b)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True)


@FUZZ
@given(programs(), st.integers(0, 2**32 - 1))
def test_jit_equals_eager_at_two_calls_and_the_passes_keep_values(spec: dict[str, Any], seed: int) -> None:
    case = loss_case(spec, seed)
    f, jf = case.f, jit(case.f)
    for call in range(2):
        x, y, labels = case.inputs()
        with no_grad(), np.errstate(all="ignore"):
            eager, compiled = f(Tensor(x), Tensor(y), labels), jf(x, y, labels)
            assert all(same(a, b) for a, b in zip(eager, compiled)), (call, spec)
            program = make_program(f, x, y, labels)
            simplified = simplify(program)
            assert all(same(a, b) for a, b in zip(evaluate(program, x, y, labels), evaluate(simplified, x, y, labels)))
        for c in case.consts:  # new values for the closed-over Tensors: the next call must see them
            c.data = case.rng.normal(size=c.shape)
    assert len(jf.cache) == 1


@FUZZ
@given(programs(), st.integers(0, 2**32 - 1))
def test_grad_of_jit_equals_grad_bit_for_bit(spec: dict[str, Any], seed: int) -> None:
    case = loss_case(spec, seed)
    loss, (x, y, labels) = case.loss, case.inputs()
    with np.errstate(all="ignore"):
        ours = grad(jit(loss), argnum=(0, 1))(x, y, labels)
        eager = grad(loss, argnum=(0, 1))(x, y, labels)
        assert all(same(a, b) for a, b in zip(ours, eager)), spec
        with no_grad():  # the compiled gradient: the program of grad, simplified and folded
            compiled = jit(grad(loss, argnum=(0, 1)))(x, y, labels)
        assert all(same(a, b) for a, b in zip(compiled, eager)), spec
        grads = []
        for run in (loss, jit(loss)):
            for c in case.consts:
                c.grad = None
            run(Tensor(x, requires_grad=True), Tensor(y, requires_grad=True), labels).backward()
            grads.append([c.grad for c in case.consts])
        assert all(same(a, b) for a, b in zip(*grads)), spec


@FUZZ
@given(
    programs(),
    st.integers(0, 2**32 - 1),
    st.sampled_from([(0, 0, 0), (0, None, 0), (None, 0, None), (1, 0, 0), (0, 0, None)]),
)
def test_vmap_equals_a_loop_and_vmap_of_grad_the_per_example_gradients(
    spec: dict[str, Any], seed: int, in_axes: tuple
) -> None:
    case = loss_case(spec, seed)
    f = case.f
    xs, ys, ks = case.inputs((2,))
    if in_axes[0] == 1:
        xs = xs.transpose(1, 0, 2)  # the batch on axis 1
    with np.errstate(all="ignore"):

        def example(n: int) -> tuple:
            x = xs[:, n] if in_axes[0] == 1 else (xs[n] if in_axes[0] == 0 else xs[0])
            return x, ys[n] if in_axes[1] == 0 else ys[0], ks[n] if in_axes[2] == 0 else ks[0]

        args = tuple(a if axis is not None else a[0] for a, axis in zip((xs, ys, ks), in_axes))
        batched = vmap(f, in_axes=in_axes)(*args)
        loop = [f(*map(Tensor, example(n)[:2]), example(n)[2]) for n in range(2)]
        for i, out in enumerate(batched):
            if out is None:
                continue
            assert close(out, np.stack([r[i].data for r in loop])), spec
        per_example = vmap(grad(case.loss, argnum=(0, 1)), in_axes=in_axes)(*args)
        loop_grads = [grad(case.loss, argnum=(0, 1))(*example(n)) for n in range(2)]
        for i in range(2):
            assert close(per_example[i], np.stack([g[i].data for g in loop_grads])), spec
        unbatched = xs.transpose(1, 0, 2) if in_axes[0] == 1 else xs
        nested = vmap(vmap(f))(np.stack([unbatched] * 2), np.stack([ys] * 2), np.stack([ks] * 2))
        assert close(nested[0][1][0], f(Tensor(unbatched[0]), Tensor(ys[0]), ks[0])[0])


@FUZZ
@given(programs(), st.integers(0, 2**32 - 1))
def test_transpose_of_linearize_is_the_gradient(spec: dict[str, Any], seed: int) -> None:
    case = loss_case(spec, seed)
    x, y, labels = case.inputs()
    loss = lambda x, y: case.loss(x, y, labels)  # noqa: E731  (linearize takes float arguments only)
    with np.errstate(all="ignore"):
        (value,), linear = linearize(loss, x, y)
        assert same(value, loss(Tensor(x), Tensor(y)))
        pulled = evaluate(transpose(linear), np.array(1.0))
        eager = grad(loss, argnum=(0, 1))(x, y)
        assert all(close(a, b) for a, b in zip(pulled, eager)), spec


def jax_function(spec: dict[str, Any], consts: list[np.ndarray]) -> Callable[..., Any]:
    """``loss_of(build(spec, ...))`` written with JAX, op for op (``stop_gradient`` for detach and no_grad)."""
    jax = pytest.importorskip("jax")
    jnp, lax = jax.numpy, jax.lax
    unary = {
        "neg": lambda a: -a,
        "exp": lambda a: jnp.exp(jnp.tanh(a)),
        "log": lambda a: jnp.log(jnp.abs(a) + 1.0),
        "sqrt": lambda a: jnp.sqrt(jnp.abs(a) + 0.5),
        "sin": jnp.sin,
        "cos": jnp.cos,
        "tanh": jnp.tanh,
        "sigmoid": jax.nn.sigmoid,
        "relu": lambda a: jnp.maximum(a, 0.0),
        "abs": jnp.abs,
        "sign": lambda a: lax.stop_gradient(jnp.sign(a)) * a,
        "clip": lambda a: jnp.clip(a, -0.5, 0.7),
        "square": lambda a: a**2.0,
        "detach": lambda a: lax.stop_gradient(a) * a,
        "no_grad": lambda a: a + lax.stop_gradient(a * 3.0),
        "identity_mul": lambda a: a * 1.0,
    }
    binary = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: a / (b * b + 1.0),
        "ge": lambda a, b: lax.stop_gradient((a >= b).astype(a.dtype)) * a + b,
        "pow": lambda a, b: (a * a + 0.5) ** jnp.tanh(b),
        "matmul": lambda a, b: a @ b,
        "affine": lambda a, b: a @ b + b.mean(),
        "stack": lambda a, b: jnp.stack([a, a * b], axis=-1),
    }

    def reduce(a: Any, kind: str, axis: Any, keepdims: bool) -> Any:
        ax = axis if axis is None or a.ndim > 0 else None
        if isinstance(ax, tuple):
            ax = tuple(x for x in ax if -a.ndim <= x < a.ndim) or None
        elif ax is not None and not -a.ndim <= ax < a.ndim:
            ax = None
        if kind in ("softmax", "log_softmax"):
            return getattr(jax.nn, kind)(a, axis=-1 if ax is None or isinstance(ax, tuple) else ax) if a.ndim else a
        return getattr(jnp, kind)(a, axis=ax, keepdims=keepdims)

    shape_ops = {
        "T": lambda a: a.T,
        "reshape": lambda a: a.reshape(-1),
        "broadcast": lambda a: jnp.broadcast_to(a, (2,) + a.shape) if a.ndim < 3 else a,
    }
    index_ops = {
        "first": lambda a: a[0] if a.ndim else a,
        "last": lambda a: a[..., -1:] if a.ndim else a,
        "mask": lambda a: a[np.arange(a.shape[-1]) % 2 == 0] if a.ndim == 1 else a,
        "pick": lambda a: a[np.array([0, 0])] if a.ndim else a,
    }

    def loss(x: Any, y: Any, labels: Any) -> Any:
        values = [x, y, *map(jnp.asarray, consts)]
        for step in spec["steps"]:
            kind, name, a = step[:3]
            v = values[a]
            if kind == "unary":
                out = unary[name](v)
            elif kind == "binary":
                out = binary[name](v, values[step[3]])
            elif kind == "static":
                out = _static(name, v, step[3])
            elif kind == "reduce":
                out = reduce(v, name, step[3], step[4])
            elif kind == "shape":
                out = shape_ops[name](v)
            elif kind == "index":
                out = index_ops[name](v)
            elif kind == "label":
                out = _LABEL_OPS[name](v, labels)
            else:
                b = values[step[3]]
                shape = jnp.broadcast_shapes(v.shape, b.shape)
                out = jnp.where(np.arange(int(np.prod(shape))).reshape(shape) % 2 == 0, v, b)
            values.append(out)
        outs = [values[i] for i in spec["outputs"]]
        outs = [*outs, outs[0]] if spec["repeat"] else outs
        return sum(((o * (k + 1.0)).sum() for k, o in enumerate(outs)), (x * 0.0).sum() + (y * 0.0).sum())

    return loss


@settings(FUZZ, max_examples=max(1, EXAMPLES // 2))  # JAX runs op by op here: slower, half the programs
@given(programs(), st.integers(0, 2**32 - 1))
def test_jit_and_grad_agree_with_jax(spec: dict[str, Any], seed: int) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    case = loss_case(spec, seed)
    loss, (x, y, labels) = case.loss, case.inputs()
    with np.errstate(all="ignore"):
        reference = jax_function(spec, [c.data for c in case.consts])
        value, grads = jax.value_and_grad(reference, argnums=(0, 1))(x, y, labels)
        with no_grad():
            assert close(jit(loss)(x, y, labels), np.asarray(value)), spec
        ours = grad(jit(loss), argnum=(0, 1))(x, y, labels)
        assert all(close(a, np.asarray(b)) for a, b in zip(ours, grads)), spec
