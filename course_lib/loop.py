"""Loops as primitives: ``scan`` and ``fori_loop``, one equation however many steps.

A Python loop over Tensor operations is *unrolled* by tracing: chapter 11's flight of 49
steps becomes 1,792 equations, its gradient 4,396. :func:`scan` (``jax.lax.scan``'s
contract) instead traces the loop's *body* once into a program of its own, and the loop
becomes one op, ``scan``, whose parameter is that body. Like every op it has a row in the
op table and its rules sit beside it here, in the style of JAX's Autodidax:

- *forward* (eager evaluation and ``evaluate``): the body's compiled code, run
  ``length`` times (the same NumPy calls as the unrolled loop, so the same bits);
- *NumPy rule* (``jit``): the generated code contains a ``for`` loop calling the body's
  compiled function;
- *batching rule* (``vmap``): the body is batched into a new body, and the loop runs once
  for the whole batch;
- *VJP rule* (the gradient): the forward stores the carry at the start of every step, and
  the gradient is another ``scan``, running the body's VJP backwards over the stored
  carries. Storing every carry or recomputing them is chapter 11's checkpointing question
  again: ``scan(..., checkpoint=k)`` stores every ``k``-th carry and recomputes the others
  segment by segment during the backward pass (memory ``length / k + k`` carries instead of
  ``length``, for one more forward pass). Even with ``k = 1`` only the carries are stored:
  each backward step runs its body forward again to get the values its VJP needs (JAX's
  ``scan`` stores those too, unless the body is wrapped in ``jax.checkpoint``).

The engine's nodes have one output, so the ``scan`` node's value is one vector packing the
final carry, the stacked ``ys`` and the stored carries; :func:`scan` returns slices of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course_lib import codegen as _codegen
from course_lib import vmap as _vmap
from course_lib.passes import simplify
from course_lib.program import Equation, Program, Var, run, show
from course_lib.tensor import Tensor, defvjp_argnum, gradients, record
from course_lib.tensor.grad_mode import _tracing
from course_lib.trace import Static, flatten, trace, unflatten

__all__ = ["scan", "fori_loop", "Loop", "HIGHER_ORDER"]

HIGHER_ORDER = ("scan",)
"""Ops this module adds to the op table: their parameter is a program, so the op-table
tests (which sample arrays for an op) leave them to this module's own tests."""


@dataclass(eq=False)
class Loop:
    """The parameter of a ``scan`` equation: the body and how the loop runs it.

    ``body`` takes ``carry`` leaves, one ``x`` leaf per ``xs`` leaf, then the values it
    closed over (``consts``); it returns the new ``carry`` leaves then the ``y`` leaves.
    Every ``checkpoint``-th carry is stored for the gradient.
    """

    body: Program
    length: int
    n_carry: int
    n_xs: int
    checkpoint: int = 1
    _runner: Any = field(default=None, repr=False)

    @property
    def carry_shapes(self) -> list[tuple[int, ...]]:
        return [v.shape for v in self.body.inputs[: self.n_carry]]

    @property
    def y_shapes(self) -> list[tuple[int, ...]]:
        return [tuple(np.shape(o)) for o in self.body.outputs[self.n_carry :]]

    def layout(self) -> list[tuple[int, tuple[int, ...]]]:
        """(offset, shape) of each packed piece: final carries, ys, stored carries."""
        shapes = (
            self.carry_shapes
            + [(self.length, *s) for s in self.y_shapes]
            + [(self.length // self.checkpoint, *s) for s in self.carry_shapes]
        )
        pieces, offset = [], 0
        for s in shapes:
            pieces.append((offset, s))
            offset += int(np.prod(s, dtype=int))
        return pieces

    def size(self) -> int:
        offset, shape = self.layout()[-1]
        return offset + int(np.prod(shape, dtype=int))

    def runner(self) -> Callable[..., np.ndarray]:
        """The loop as a compiled function of arrays (made once): what the forward and jit run."""
        if self._runner is None:
            key = self.fingerprint()
            self._runner = _RUNNERS.get(key)
        if self._runner is None:
            names = [f"a{i}" for i in range(len(self.body.inputs))]
            namespace: dict[str, Any] = {"np": np}
            lines = _emit("out", names, self, lambda p: _literal(namespace, p))
            source = "\n    ".join([f"def loop({', '.join(names)}):", *lines, "return out"]) + "\n"
            exec(compile(source, "<scan loop>", "exec"), namespace)
            self._runner = _RUNNERS[key] = namespace["loop"]
            if len(_RUNNERS) > 256:  # keep the most recent loops
                del _RUNNERS[next(iter(_RUNNERS))]
        return self._runner

    def fingerprint(self) -> tuple:
        """What the compiled loop depends on: equal for the same body traced again (an eager
        ``scan`` traces its body at every call, and compiles it only the first time)."""
        numbers: dict[int, int] = {id(v): k for k, v in enumerate(self.body.inputs)}

        def of(x: Any) -> Any:
            if isinstance(x, Var):
                return numbers[id(x)]
            if isinstance(x, np.ndarray):
                return (x.dtype.str, x.shape, x.tobytes())
            if isinstance(x, (tuple, list)):
                return tuple(of(y) for y in x)
            if isinstance(x, slice):
                return ("slice", x.start, x.stop, x.step)
            if isinstance(x, float):  # by bits: -0.0 is not 0.0
                return (float, np.float64(x).tobytes())
            return x.fingerprint() if isinstance(x, Loop) else (type(x), x)

        equations = []
        for e in self.body.equations:
            equations.append((e.op, of(e.args), of(e.params)))
            numbers[id(e.out)] = len(numbers)
        shapes = tuple(v.shape for v in self.body.inputs)
        sizes = (self.length, self.n_carry, self.n_xs, self.checkpoint)
        return (shapes, tuple(equations), of(self.body.outputs), sizes)

    def __repr__(self) -> str:
        body = show(self.body).replace("\n", "\n      ")
        every = f", checkpoint={self.checkpoint}" if self.checkpoint != 1 else ""
        return f"length={self.length}{every}; body=\n      {body}\n    "


_RUNNERS: dict[tuple, Callable[..., np.ndarray]] = {}
"""Compiled loops by :meth:`Loop.fingerprint`."""


def _literal(namespace: dict[str, Any], value: Any) -> str:
    name = f"_k{len(namespace)}"
    namespace[name] = value
    return name


# ----------------------------------------------------------------------------- forward and jit
def _emit(out: str, args: list[str], loop: Loop, lit: Callable[[Any], str]) -> list[str]:
    """The loop as lines of Python: a ``for`` over the steps calling the body's compiled
    code (its NumPy rules, so the same bits as the eager engine), writing ``ys`` and the
    stored carries into one packed buffer ``out``."""
    program = simplify(loop.body)
    body, _ = _codegen.compile_program(program, "body")
    f = lit(body)
    constant = [not isinstance(o, Var) for o in program.outputs[: loop.n_carry]]  # compiled code returns a float
    nc, nx = loop.n_carry, loop.n_xs
    carry, xs, consts = args[:nc], args[nc : nc + nx], args[nc + nx :]
    c = [f"{out}_c{i}" for i in range(nc)]
    pieces = loop.layout()
    views = [f"{out}_v{i}" for i in range(len(pieces))]
    lines = [f"{out} = np.empty({loop.size()})"]
    lines += [f"{v} = {out}[{o}:{o + int(np.prod(s, dtype=int))}].reshape({s!r})" for v, (o, s) in zip(views, pieces)]
    # A 0-d constant argument arrives as a Python float: the body's NumPy rules need arrays.
    lines += [f"{ci} = np.asarray({a})" for ci, a in zip(c, carry)]
    lines += [f"{out}_k{i} = np.asarray({a})" for i, a in enumerate(consts)]
    consts = [f"{out}_k{i}" for i in range(len(consts))]
    ys, saved = views[nc : len(views) - nc], views[len(views) - nc :]
    results = "".join(f"{r}, " for r in c + [f"{out}_y{i}" for i in range(len(ys))])
    t = f"{out}_t"  # no program variable has an underscore in its name
    lines.append(f"for {t} in range({loop.length}):")
    if loop.checkpoint == 1:
        lines += [f"    {s}[{t}] = {ci}" for s, ci in zip(saved, c)]
    else:
        lines.append(f"    if {t} % {loop.checkpoint} == 0:")
        lines += [f"        {s}[{t} // {loop.checkpoint}] = {ci}" for s, ci in zip(saved, c)]
    lines.append(f"    {results}= {f}({', '.join(c + [f'{x}[{t}]' for x in xs] + consts)})")
    lines += [f"    {y}[{t}] = {out}_y{i}" for i, y in enumerate(ys)]
    lines += [f"    {ci} = np.asarray({ci})" for ci, known in zip(c, constant) if known]
    lines += [f"{v}[...] = {ci}" for v, ci in zip(views[:nc], c)]
    return lines


def _forward(*args: Any) -> Tensor:
    """The ``scan`` op on Tensors (then its :class:`Loop`): the packed result, recorded as one node."""
    *tensors, loop = args
    token = _tracing.set(None)  # the steps are numbers, not equations of an enclosing trace
    try:
        packed = loop.runner()(*(t._data for t in tensors))
    finally:
        _tracing.reset(token)
    return record("scan", packed, tuple(tensors), (loop,))


def _unpack(packed: Tensor, loop: Loop) -> list[Tensor]:
    """The pieces of a packed ``scan`` value (final carries, ys, stored carries) as Tensors."""
    return [packed[offset : offset + int(np.prod(shape, dtype=int))].reshape(shape) for offset, shape in loop.layout()]


# ----------------------------------------------------------------------------- the user's function
def _trace_body(
    f: Callable[[Any, Any], Any], carry: list[Tensor], carry_tree: Any, x_examples: list[np.ndarray], xs_tree: Any
) -> tuple[Program, list[Tensor], Any]:
    """``f`` traced on one step: the body program (the values it closes over made its last
    inputs), those values, and the structure of ``y``."""
    examples = (unflatten(carry_tree, [c._data for c in carry]), unflatten(xs_tree, x_examples))
    program, out = trace(f, examples)
    if not (type(out) is tuple and out[0] in (tuple, list) and len(out[1]) == 2):
        raise TypeError("scan: the body must return a pair (new_carry, y); y may be None if there is nothing to stack")
    new_carry, y = out[1]
    if new_carry != carry_tree:
        raise TypeError(
            "scan: the body returned a carry of another structure than init (a carry keeps its structure, and "
            f"every leaf is a Tensor, from step to step): init is {_describe(carry_tree)}, the body returned "
            f"{_describe(new_carry)}"
        )
    for k, (c, o) in enumerate(zip(carry, program.outputs)):
        if tuple(np.shape(o)) != c.shape:
            raise ValueError(
                f"scan: carry leaf {k} has shape {c.shape} in init but the body returned shape {np.shape(o)}: "
                "a carry keeps its shape (and dtype, float64) from step to step"
            )
    statics = [s.value for s in _statics(y)]
    if any(value is not None for value in statics):
        raise TypeError(f"scan: y must be Tensors (in tuples, lists or dicts) or None, got {statics[0]!r}")
    closed = program.captured + program.consts
    return Program(program.inputs + program.constvars, program.equations, program.outputs), closed, y


def _statics(structure: Any) -> list[Static]:
    if type(structure) is Static:
        return [structure]
    if structure is None:
        return []
    return [s for part in structure[-1] for s in _statics(part)]


def _describe(structure: Any) -> str:
    """A structure as text, a Tensor leaf shown as ``T`` and anything else as itself."""
    if structure is None:
        return "T"
    if type(structure) is Static:
        return repr(structure.value)
    parts = [_describe(s) for s in structure[-1]]
    if structure[0] is dict:
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(structure[1], parts)) + "}"
    text = ", ".join(parts) + ("," if len(parts) == 1 and structure[0] is tuple else "")
    return f"[{text}]" if structure[0] is list else f"({text})"


def _leaves(tree: Any, what: str) -> tuple[list[Tensor], Any]:
    """The leaves of ``init`` or ``xs`` as Tensors (numbers and arrays made float64 constants)."""
    leaves, structure = flatten(tree)
    tensors = []
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            tensors.append(leaf)
        elif isinstance(leaf, (int, float, np.ndarray, np.number)) and not isinstance(leaf, bool):
            array = np.asarray(leaf)
            if array.dtype.kind not in "fiu":
                raise TypeError(f"scan: {what} has a leaf of dtype {array.dtype}; use float Tensors or arrays")
            tensors.append(record("", array.astype(np.float64), ()))
        else:
            raise TypeError(
                f"scan: {what} has a leaf of type {type(leaf).__name__}; its leaves must be Tensors, float arrays "
                "or numbers (in tuples, lists or dicts)"
            )
    return tensors, structure


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    checkpoint: int = 1,
) -> tuple[Any, Any]:
    """``jax.lax.scan``: ``carry = init``; for each ``x`` of ``xs`` (along axis 0):
    ``carry, y = f(carry, x)``; returns ``(carry, ys)``, the ``y`` stacked along a new axis 0.

    ``init``, ``xs`` and ``y`` are Tensors, float arrays or numbers in tuples, lists or
    dicts; the carry must keep its structure and shapes. ``xs=None`` with ``length`` runs
    ``length`` steps with ``x = None``. ``f`` is traced once, on the first step, into the
    body of one ``scan`` op (so Python ``if`` on a value raises, as under ``jit``), and
    the Tensors it closes over are the op's arguments too: gradients reach them. The
    gradient stores every ``checkpoint``-th carry (it must divide the length) and
    recomputes the others.
    """
    carry, carry_tree = _leaves(init, "init")
    if xs is None:
        x_leaves: list[Tensor] = []
        xs_tree: Any = Static(None)
    else:
        x_leaves, xs_tree = _leaves(xs, "xs")
    lengths = {x.shape[0] if x.ndim else None for x in x_leaves} | ({length} if length is not None else set())
    if None in lengths - {length} or (x_leaves and any(x.ndim == 0 for x in x_leaves)):
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over; a 0-d leaf has none")
    if not lengths:
        raise ValueError("scan: with no xs to scan over, say how many steps to run: scan(f, init, length=n)")
    if len(lengths) != 1:
        shapes = [x.shape for x in x_leaves]
        raise ValueError(
            f"scan: the leaves of xs must all have the same length (axis 0), and equal length= if given: got "
            f"leaf shapes {shapes}" + (f" and length={length}" if length is not None else "")
        )
    (steps,) = lengths
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"scan: the loop needs at least one step (a positive int length), got {steps!r}")
    if not (isinstance(checkpoint, int) and checkpoint >= 1 and steps % checkpoint == 0):
        raise ValueError(
            f"scan: checkpoint={checkpoint!r} must be a positive int dividing the length {steps} (the stored "
            "carries split the loop into segments of equal length)"
        )
    body, closed, y_tree = _trace_body(f, carry, carry_tree, [np.asarray(x._data[0]) for x in x_leaves], xs_tree)
    loop = Loop(body, int(steps), len(carry), len(x_leaves), checkpoint)
    pieces = _unpack(_forward(*carry, *x_leaves, *closed, loop), loop)
    n_ys = len(pieces) - 2 * loop.n_carry
    return unflatten(carry_tree, pieces[: loop.n_carry]), unflatten(y_tree, pieces[loop.n_carry :][:n_ys])


def fori_loop(lower: int, upper: int, f: Callable[[Tensor, Any], Any], init: Any, checkpoint: int = 1) -> Any:
    """``jax.lax.fori_loop``: ``carry = f(i, carry)`` for ``i`` from ``lower`` to ``upper - 1``,
    a :func:`scan` over the steps (``i`` is a float64 scalar Tensor: one body serves every step)."""
    if not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (lower, upper)):
        raise TypeError(f"fori_loop: lower and upper must be ints (static loop bounds), got {lower!r} and {upper!r}")
    steps = np.arange(lower, upper, dtype=np.float64)
    return scan(lambda carry, i: (f(i, carry), None), init, steps, checkpoint=checkpoint)[0]


# ----------------------------------------------------------------------------- the gradient
def _split(items: list[Any], *counts: int) -> list[list[Any]]:
    parts, start = [], 0
    for n in counts:
        parts.append(list(items[start : start + n]))
        start += n
    return parts


def _backward(
    body: Program,
    consts: list[Tensor],
    saved: list[Tensor],
    xs: list[Tensor],
    g_ys: list[Tensor],
    g_saved: list[Tensor],
    g_carry: list[Tensor],
    length: int,
) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
    """The gradient of a loop whose every carry is ``saved``: a scan running backwards over
    the steps, each step the body's VJP at its stored carry. Returns the gradients of the
    initial carry, of the consts (summed over the steps) and of ``xs``."""
    nc, nx, ny, ns = len(g_carry), len(xs), len(g_ys), len(g_saved)

    def step(carry: list[Tensor], x: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        g_c, g_k = _split(carry, nc, len(consts))
        c, x_t, g_y, g_s = _split(x, nc, nx, ny, ns)
        ks = [record("identity", k._data, (k,)) for k in consts]  # this step's use of each const
        outs = run(body, c + x_t + ks)
        seeded = [(o * g).sum() for o, g in zip(outs, g_c + g_y)]
        total = seeded[0] if seeded else record("", np.zeros(()), ())
        for s in seeded[1:]:
            total = total + s
        grads = gradients(total, c + x_t + ks, create_graph=True, allow_unused=True)
        g_prev = [a + b for a, b in zip(grads[:nc], g_s)] if ns else list(grads[:nc])
        return g_prev + [a + b for a, b in zip(g_k, grads[nc + nx :])], list(grads[nc : nc + nx])

    zeros = [record("", np.zeros(k.shape), ()) for k in consts]
    flipped = [t[::-1] for t in saved + xs + g_ys + g_saved]
    carry, g_xs = scan(step, list(g_carry) + zeros, flipped, length=length)
    return carry[:nc], carry[nc:], [g[::-1] for g in g_xs]


def _cotangents(g: Tensor, out: Tensor, parents: list[Tensor], loop: Loop) -> list[Tensor]:
    """The VJP of a ``scan`` node for every argument at once."""
    nc, nx = loop.n_carry, loop.n_xs
    ny = len(loop.y_shapes)
    xs, consts = parents[nc : nc + nx], parents[nc + nx :]
    g_carry, g_ys, g_saved = _split(_unpack(g, loop), nc, ny, nc)
    saved = _unpack(out, loop)[nc + ny :]
    k = loop.checkpoint
    if k == 1:
        g_init, g_consts, g_xs = _backward(loop.body, consts, saved, xs, g_ys, g_saved, g_carry, loop.length)
        return g_init + g_xs + g_consts
    # Checkpointing: segments of k steps, backwards; each recomputes its carries from the stored one.
    segments = loop.length // k

    def segment(carry: list[Tensor], x: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        g_c, g_k = _split(carry, nc, len(consts))
        c0, x_seg, g_y, g_s = _split(x, nc, nx, ny, nc)

        def replay(c: list[Tensor], x_t: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
            return list(run(loop.body, c + x_t + consts)[:nc]), c

        _, carries = scan(replay, c0, x_seg, length=k)
        g_start, g_k_seg, g_x = _backward(loop.body, consts, carries, x_seg, g_y, [], g_c, k)
        return [a + b for a, b in zip(g_start, g_s)] + [a + b for a, b in zip(g_k, g_k_seg)], g_x

    grouped = [t.reshape((segments, k, *t.shape[1:])) for t in xs + g_ys]
    flipped = [t[::-1] for t in saved + grouped[:nx] + grouped[nx:] + g_saved]
    zeros = [record("", np.zeros(c.shape), ()) for c in consts]
    carry, g_x_segments = scan(segment, list(g_carry) + zeros, flipped, length=segments)
    g_xs = [t[::-1].reshape(x.shape) for t, x in zip(g_x_segments, xs)]
    return carry[:nc] + g_xs + carry[nc:]


_cache: list[Any] = [None, None, None]
"""The last node, gradient and cotangents: the backward pass asks for one argument at a
time, and the whole backward loop runs once for all of them."""


def _vjp(i: int, g: Tensor, out: Tensor, *args: Any) -> Tensor:
    *parents, loop = args
    if _cache[0] is not out or _cache[1] is not g:
        _cache[:] = [out, g, _cotangents(g, out, parents, loop)]
    result = _cache[2][i]
    if i == max(j for j, p in enumerate(parents) if p.requires_grad):  # the last one asked for: let go
        _cache[:] = [None, None, None]
    return result


# ----------------------------------------------------------------------------- vmap
def _batch(args: list[Tensor], batched: list[bool], e: Equation, size: int) -> Tensor:
    """The batching rule: batch the body, run the loop once for the batch (carries and ys
    carry the batch on their axis 1 inside the loop), and pack the result per example."""
    loop: Loop = e.params[0]
    nc, nx = loop.n_carry, loop.n_xs
    carry = [a if b else a.broadcast_to((size, *a.shape)) for a, b in zip(args[:nc], batched)]
    xs = [_vmap._moved(a, 0, 1) if b else a for a, b in zip(args[nc : nc + nx], batched[nc:])]
    consts = args[nc + nx :]
    flags = [True] * nc + list(batched[nc:])

    def batched_body(*inputs: Tensor) -> list[Tensor]:
        return _vmap.batch_program(loop.body, list(inputs), flags, size)

    examples = [c._data for c in carry] + [np.asarray(x._data[0]) for x in xs] + [k._data for k in consts]
    program, _ = trace(batched_body, tuple(examples))
    body = Program(program.inputs + program.constvars, program.equations, program.outputs)
    wide = Loop(body, loop.length, nc, nx, loop.checkpoint)
    closed = program.captured + program.consts
    pieces = _unpack(_forward(*carry, *xs, *consts, *closed, wide), wide)
    total = None
    for k, (piece, (offset, shape)) in enumerate(zip(pieces, loop.layout())):
        per_example = piece if k < nc else _vmap._moved(piece, 1, 0)
        n = int(np.prod(shape, dtype=int))
        index = (slice(None), slice(offset, offset + n))
        part = _vmap.call_op("scatter_add", [per_example.reshape((size, n))], (index, (size, loop.size())))
        total = part if total is None else total + part
    assert total is not None
    return total


defvjp_argnum("scan", _vjp, call=_forward)
_codegen.NUMPY["scan"] = lambda out, args, e, lit: _emit(out, args, e.params[0], lit)
_vmap.BATCHING["scan"] = _batch
