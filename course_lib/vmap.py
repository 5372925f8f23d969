"""``vmap``: a function of one example turned into a function of a batch.

``vmap(f)`` traces ``f`` on one example, then runs the program on the whole batch: each
equation is handed to its op's *batching rule* (``BATCHING[op]``), which computes the op
for every example at once from arguments that carry the batch on axis 0 (or not at all,
for values shared by every example). The rules are written with Tensor operations, so
a vmapped function can be differentiated, jitted and vmapped again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_lib.program import Atom, Equation, Program, Var, call_op, run
from course_lib.tensor import Tensor, record, stack
from course_lib.tensor.gather import Slot, advanced, integer_tensor
from course_lib.trace import Tracer, flatten, is_traced, trace, unflatten

__all__ = ["vmap", "BATCHING", "batch_program"]

Rule = Callable[[list[Tensor], list[bool], Equation, int], Tensor]
"""A batching rule: ``rule(args, batched, equation, size)``, the op for all ``size``
examples at once; a batched argument has the batch on axis 0; the result has it too."""


def _rank(x: Atom) -> int:
    return len(x.shape)


def _aligned(args: list[Tensor], batched: list[bool], e: Equation) -> list[Tensor]:
    """Batched arguments reshaped to ``(B, 1, ..., 1, *shape)`` of the output's rank + 1,
    so that NumPy's broadcasting matches every example's axes with the others'."""
    rank = len(e.out.shape)
    return [
        a.reshape((a.shape[0],) + (1,) * (rank - _rank(x)) + tuple(x.shape)) if b else a
        for a, b, x in zip(args, batched, e.args)
    ]


def _elementwise(args: list[Tensor], batched: list[bool], e: Equation, size: int) -> Tensor:
    return call_op(e.op, _aligned(args, batched, e), e.params)


def _matmul(args: list[Tensor], batched: list[bool], e: Equation, size: int) -> Tensor:
    """Matrices per example ((1, k) for a 1-D left operand, (k, 1) for a 1-D right one); the
    batch becomes the leading broadcast axis of NumPy's matmul."""
    rank = max(max(_rank(x), 2) for x in e.args[:2])
    operands = []
    for i, (a, b, x) in enumerate(zip(args[:2], batched, e.args)):
        shape = tuple(x.shape) if _rank(x) >= 2 else ((1,) + tuple(x.shape) if i == 0 else tuple(x.shape) + (1,))
        lead = ((size,) if b else ()) + (1,) * (rank - len(shape)) * b
        operands.append(a.reshape(lead + shape))
    out = operands[0] @ operands[1]
    product = np.matmul(np.empty(e.args[0].shape), np.empty(e.args[1].shape)).shape  # affine's bias may add axes
    out = out.reshape((size,) + product)
    if e.op == "affine":
        product_var = Var(product)
        return _elementwise(
            [out, args[2]], [True, batched[2]], Equation("add", [product_var, e.args[2]], (), e.out), size
        )
    return out


def _axes(e: Equation) -> Any:
    """The reduction's axes, moved past the batch axis."""
    axis, ndim = e.params[0], _rank(e.args[0])
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, tuple):
        return tuple(a % ndim + 1 for a in axis)
    return axis % ndim + 1


def _loop(args: list[Tensor], batched: list[bool], e: Equation, size: int) -> Tensor:
    """The op example by example, stacked: correct for any op, and as slow as a loop."""
    return stack([call_op(e.op, [a[i] if b else a for a, b in zip(args, batched)], e.params) for i in range(size)])


def _advanced_adjacent(index: tuple) -> bool:
    """Whether the advanced entries of an index (arrays; integers too when there is an
    array) are next to each other, so NumPy keeps them in place behind a leading slice."""
    arrays = [isinstance(i, (np.ndarray, list)) for i in index]
    advanced = [k for k, i in enumerate(index) if arrays[k] or (any(arrays) and isinstance(i, (int, np.integer)))]
    return not advanced or advanced[-1] - advanced[0] == len(advanced) - 1


def _indexed(args: list[Tensor], batched: list[bool], e: Equation, size: int) -> Tensor:
    """getitem and scatter_add with the index applied to every example at once, when NumPy's
    indexing keeps the batch axis first; example by example otherwise."""
    index = e.params[0] if isinstance(e.params[0], tuple) else (e.params[0],)
    if not _advanced_adjacent(index):  # NumPy would put the indexed axes before the batch axis
        return _loop(args, batched, e, size)
    params = ((slice(None),) + index,) + (((size,) + e.params[1],) if e.op == "scatter_add" else ())
    try:
        out = call_op(e.op, args, params)
    except (IndexError, ValueError):
        out = None
    if out is None or out.shape != (size,) + e.out.shape:
        return _loop(args, batched, e, size)
    return out


def _gathered(args: list[Tensor], batched: list[bool], e: Equation, size: int) -> Tensor:
    """take and put for every example at once: ``np.arange(size)`` is put first in the index
    (the example's own row), the batched integer arguments carry the batch on their axis 0.
    Where the index's arrays sit together after a leading slice, NumPy keeps them in place per
    example but moves them first with the batch: the axes are moved back (see :func:`_order`)."""
    template = e.params[0]
    parts, part_flags, part_atoms = args[1:], batched[1:], e.args[1:]
    shapes = [part_atoms[t.k].shape if type(t) is Slot else np.shape(t) for t in template if advanced(t)]
    if any(isinstance(t, np.ndarray) and t.dtype == bool for t in template):
        raise NotImplementedError("vmap: indexing with a boolean mask beside traced integer arrays is not supported")
    rank = len(np.broadcast_shapes(*shapes))
    for b, x in zip(part_flags, part_atoms):
        if b and len(x.shape) < rank:
            raise NotImplementedError(
                "vmap: a batched integer index with fewer axes than the other arrays of its index: give it "
                "their number of axes (labels[:, None] outside the function)"
            )
    rows = np.arange(size).reshape((size,) + (1,) * rank)
    index = (rows,) + template
    first = e.args[0]
    source = args[0] if batched[0] else args[0].broadcast_to((size,) + args[0].shape)
    if e.op == "take":
        order = _order(template, len(first.shape), rank, len(e.out.shape))
    else:
        order = _order(template, len(e.params[1]), rank, len(first.shape))
    if e.op == "take":
        out = call_op("take", [source, *parts], (index,))
        return out if order is None else out.transpose(*order)
    if order is not None:
        source = source.transpose(*np.argsort(order))
    return call_op("put", [source, *parts], (index, (size,) + e.params[1]))


def _order(template: tuple, ndim: int, rank: int, out_ndim: int) -> list[int] | None:
    """The axes of the batched take's result in the order of the examples' results, or None if
    already so: with the arrays of the index together after ``p`` axes of slices, NumPy gives an
    example (p axes, the arrays' ``rank`` axes, the rest) but the batch (B, rank axes, p axes, rest)."""
    places = [k for k, t in enumerate(template) if advanced(t)]
    if places[0] == 0 or places[-1] - places[0] != len(places) - 1:
        return None
    consumed = sum(1 for t in template if t is not None and t is not Ellipsis)
    p = sum(ndim - consumed if t is Ellipsis else 1 for t in template[: places[0]])
    r = 1 + rank
    return [0, *range(r, r + p), *range(1, r), *range(r + p, 1 + out_ndim)]


BATCHING: dict[str, Rule] = {
    **dict.fromkeys(
        ("add", "sub", "mul", "div", "pow", "neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu"),
        _elementwise,
    ),
    **dict.fromkeys(("sqrt", "abs", "sign", "ge", "clip", "where", "identity", "detach"), _elementwise),
    "matmul": _matmul,
    "affine": _matmul,
    **dict.fromkeys(("sum", "mean", "max"), lambda a, b, e, n: call_op(e.op, a, (_axes(e),) + e.params[1:])),
    **dict.fromkeys(("softmax", "log_softmax"), lambda a, b, e, n: call_op(e.op, a, (_axes(e),))),
    "reshape": lambda a, b, e, n: a[0].reshape((n,) + e.params[0]),
    "transpose": lambda a, b, e, n: a[0].transpose(0, *(i + 1 for i in e.params[0])),
    "broadcast_to": lambda a, b, e, n: _aligned(a, b, e)[0].broadcast_to((n,) + e.params[0]),
    "getitem": _indexed,
    "scatter_add": _indexed,
    "take": _gathered,
    "put": _gathered,
    "stack": lambda a, b, e, n: stack(
        [x if bx else x.broadcast_to((n,) + x.shape) for x, bx in zip(a, b)], axis=e.params[0] + 1
    ),
}
"""op name -> its batching rule."""


def batch_program(program: Program, inputs: Sequence[Tensor], batched: Sequence[bool], size: int) -> list[Tensor]:
    """Run ``program`` for ``size`` examples at once: ``inputs[i]`` carries the batch on axis 0
    when ``batched[i]``. Every output comes back batched."""
    env: dict[int, tuple[Tensor, bool]] = {id(v): (x, b) for v, x, b in zip(program.inputs, inputs, batched)}
    env.update((id(v), (c, False)) for v, c in zip(program.constvars, program.consts))  # closed over: shared

    def read(x: Atom) -> tuple[Tensor, bool]:
        return env[id(x)] if isinstance(x, Var) else (record("", x, ()), False)

    for e in program.equations:
        args, flags = zip(*(read(a) for a in e.args))
        if not any(flags):
            env[id(e.out)] = (call_op(e.op, args, e.params), False)
            continue
        rule = BATCHING.get(e.op)
        if rule is None:
            raise NotImplementedError(f"vmap: op {e.op!r} has no batching rule: add one to course_lib.vmap.BATCHING")
        env[id(e.out)] = (rule(list(args), list(flags), e, size), True)
    results = []
    for o in program.outputs:
        value, b = read(o)
        results.append(value if b else value.broadcast_to((size,) + value.shape))
    return results


def _shared(program: Program, inputs: list[Tensor], flags: list[bool]) -> list[Tensor]:
    """The results for ``out_axes=None``: the same for every example, so they are refused if
    they depend on a batched argument."""
    depends = {id(v) for v, b in zip(program.inputs, flags) if b}
    for e in program.equations:
        if any(id(a) in depends for a in e.args):
            depends.add(id(e.out))
    if any(id(o) in depends for o in program.outputs):
        raise ValueError("vmap: out_axes=None needs results that do not depend on a batched argument")
    unbatched = [
        x if not b else x[0] if type(x) is Tracer or x._data.dtype.kind == "f" else integer_tensor(x._data[0])
        for x, b in zip(inputs, flags)
    ]
    return run(program, unbatched + program.captured)


def _moved(x: Tensor, source: int, destination: int) -> Tensor:
    """``x`` with axis ``source`` moved to ``destination`` (a transpose)."""
    axes = list(range(x.ndim))
    axes.insert(destination % x.ndim, axes.pop(source % x.ndim))
    return x.transpose(*axes)


def vmap(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """``f`` of one example -> ``f`` of a batch, as ``jax.vmap``.

    ``in_axes``: for every argument, the axis of its batch (an int) or ``None`` (shared by
    every example); one int or None applies to all. ``out_axes``: where the batch axis goes
    in each result (an int for all, or None for results shared by every example).
    Arguments may be containers of Tensors, float arrays and integer arrays (class labels:
    traced, they index Tensors with the op ``take``, whose batching rule picks every example's
    own row). Boolean arrays are static and cannot carry a batch. Tensors ``f`` closes over are
    shared by every example and stay in the graph: gradients reach them.
    """

    if not (out_axes is None or isinstance(out_axes, int)):
        raise TypeError(
            f"vmap: out_axes must be one int (or None for results shared by all examples), not {out_axes!r}"
        )
    if not (in_axes is None or isinstance(in_axes, (int, tuple, list))) or (
        isinstance(in_axes, (tuple, list)) and not all(a is None or isinstance(a, int) for a in in_axes)
    ):
        raise TypeError(f"vmap: in_axes must be an int, None, or a tuple of them (one per argument), got {in_axes!r}")

    def batched_f(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(
                f"vmap: keyword arguments ({', '.join(kwargs)}) are not batched; pass them positionally "
                "(with an in_axes entry each) or bind them first with functools.partial"
            )
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(axes)} entries but the function got {len(args)} arguments")
        examples, inputs, flags, sizes = [], [], [], set()
        for arg, axis in zip(args, axes):
            leaves, structure = flatten(arg)
            example = []
            for leaf in leaves:
                if not is_traced(leaf):  # static: the same for every example
                    if axis is not None and isinstance(leaf, np.ndarray):
                        raise ValueError(
                            f"vmap: a {leaf.dtype} array is static (part of the program), so it cannot carry a "
                            "batch; pass it with in_axes None, or as floats or integers"
                        )
                    example.append(leaf)
                    continue
                if isinstance(leaf, Tensor):
                    x = leaf
                elif leaf.dtype.kind in "iu":  # class labels: they index, as the op take
                    x = integer_tensor(leaf)
                else:
                    x = record("", np.asarray(leaf, dtype=np.float64), ())
                if axis is not None:
                    if not -x.ndim <= axis < x.ndim:
                        raise ValueError(
                            f"vmap: in_axes {axis} is out of range for an argument of shape {x.shape} "
                            f"(valid: {-x.ndim} to {x.ndim - 1})"
                        )
                    if axis % x.ndim:
                        x = (
                            _moved(x, axis, 0)
                            if type(x) is Tracer or x._data.dtype.kind == "f"
                            else (integer_tensor(np.moveaxis(x._data, axis, 0)))
                        )
                    if x.shape[0] == 0:
                        raise ValueError("vmap: the batch is empty (size 0): there is no example to trace f on")
                    sizes.add(x.shape[0])
                example.append(np.asarray(x._data[0]) if axis is not None else x._data)
                inputs.append(x)
                flags.append(axis is not None)
            examples.append(unflatten(structure, example))
        if not sizes:
            raise ValueError("vmap needs at least one batched argument (an in_axes entry that is not None)")
        if len(sizes) != 1:
            raise ValueError(f"vmap needs one batch size for all batched arguments, got sizes {sorted(sizes)}")
        program, structure = trace(f, tuple(examples))
        size = sizes.pop()
        if out_axes is None:
            return unflatten(structure, _shared(program, inputs, flags))
        outs = batch_program(program, inputs + program.captured, flags + [False] * len(program.captured), size)
        for k, o in enumerate(outs):
            if not -o.ndim <= out_axes < o.ndim:
                raise ValueError(f"vmap: out_axes {out_axes} is out of range for a result of shape {o.shape}")
            if out_axes % o.ndim:
                outs[k] = _moved(o, 0, out_axes)
        return unflatten(structure, outs)

    return batched_f
