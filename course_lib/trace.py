"""Tracing: run a function of Tensors once on stand-ins and write down what it did.

The stand-ins are :class:`Tracer` s, Tensors that carry the example values (so the
engine computes with them as usual) and require grad (so every op records its node).
While a trace is active, ``record`` hands the trace every node it makes; the trace turns
them into Tracers too. When the function returns, the recorded graph between the inputs
and the outputs is read off as a :class:`~course_lib.program.Program`. A Tensor made
before the trace that the function closed over (a model's parameter) becomes an input
of its own, a *constvar* as JAX calls it, read afresh at every run; a Tensor made during
the trace (``x * 2.0`` makes one of ``2.0``) is a *literal*, a constant of the program.
Every op on a traced or closed-over value is recorded, also under ``no_grad()`` (then
followed by ``detach``, a stop-gradient), so no value of the example is baked in.

A program must not depend on the example values, so a Tracer refuses to give them out:
``bool()`` (Python control flow), ``float()``/``.item()``, ``.data``/``.numpy()`` and
NumPy calls raise :class:`TracingError`, naming the user's line. After the trace every
Tracer is poisoned, so one that escaped (stored in a global, say) raises when used.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from course_lib.program import SHAPE_PARAMS, Atom, Equation, Program, Var
from course_lib.tensor import Tensor
from course_lib.tensor.core import _plain_index
from course_lib.tensor.gather import Slot, integer_tensor, take
from course_lib.tensor.grad_mode import _tracing, set_grad_enabled

__all__ = ["Tracer", "TracingError", "make_program", "trace", "flatten", "unflatten"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))


class TracingError(TypeError):
    """A traced value was used in a way that needs its concrete value (or after its trace)."""


def user_line() -> str:
    """``file:line: code`` of the innermost frame outside course_lib and NumPy (the user's line)."""
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith((_PACKAGE, _NUMPY)):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return "<unknown>"


def _refuse(what: str, advice: str) -> TracingError:
    return TracingError(f"{what} of a traced value, at {user_line()}\n{advice}")


_NOT_KNOWN = (
    "While tracing (jit, make_program, vmap) a value has a shape but no number the program could keep: "
    "the program must work for every input of this shape."
)


_DATA_FLOW = (
    "Turn the decision into data flow: compute with Tensor operations such as clip, abs, relu or a 0/1 "
    "mask m = a.ge(b), combined as m * x + (1.0 - m) * y"
)


class Tracer(Tensor):
    """A Tensor standing for a value of the program being traced (see the module docstring)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        raise _refuse(
            "Python control flow (if, while, and/or, bool())",
            f"{_NOT_KNOWN} {_DATA_FLOW}, or make the argument static (jit(f, static_argnums=...)) so each "
            "of its values gets its own program.",
        )

    def item(self) -> float:
        raise _refuse(
            "float() or .item()",
            f"{_NOT_KNOWN} Keep computing with the Tensor, or return it and call .item() outside the function.",
        )

    __float__ = item

    def __index__(self) -> int:
        raise _refuse(
            "int() or use as a Python index (__index__)",
            f"{_NOT_KNOWN} Index Tensors with it instead (x[labels] records the op take), or make the argument "
            "static (jit(f, static_argnums=...)).",
        )

    __int__ = __index__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise _refuse(
            "A NumPy call (np.asarray, np.* function, .data, .numpy())",
            f"{_NOT_KNOWN} Use Tensor operations (course_lib.tensor's functions), which the program records.",
        )

    data = property(__array__)  # type: ignore[assignment]

    def numpy(self) -> np.ndarray:
        return self.__array__()

    def __repr__(self) -> str:
        try:
            kind = "f64" if self._data.dtype.kind == "f" else f"{self._data.dtype.kind}{self._data.dtype.itemsize * 8}"
            return f"Tracer({kind}{list(self._data.shape)})"
        except TracingError:
            return "Tracer(escaped)"


class _Escaped:
    """What an escaped Tracer holds instead of values: any use raises."""

    def __getattr__(self, name: str) -> Any:
        raise TracingError(
            f"a traced value escaped its trace and is used at {user_line()}: it stood for a value only while "
            "the function was traced (e.g. it was stored in a global or a list outside the function). "
            "Return it from the function instead."
        )

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__getattr__("__array__")


for _name in ("add", "sub", "mul", "truediv", "pow", "matmul", "neg", "getitem", "lt", "le", "gt", "ge"):
    setattr(_Escaped, f"__{_name}__", _Escaped.__array__)
    setattr(_Escaped, f"__r{_name}__", _Escaped.__array__)


class Trace:
    """The trace being recorded: its input Tracers and every node made while it is active."""

    def __init__(self, outer: Trace | None = None) -> None:
        self.tracers: list[Tensor] = []
        self.ids: set[int] = set()
        # ids of the Tensors made while tracing (shared with an enclosing trace): the program's literals.
        self.created: set[int] = outer.created if outer is not None else set()

    def new_input(self, value: Any) -> Tracer:
        if _is_integer_array(value):  # data for indexing (class labels): requires no grad
            return self.adopt(integer_tensor(value))  # type: ignore[return-value]
        x = Tensor(value._data if isinstance(value, Tensor) else value, requires_grad=True)
        return self.adopt(x)  # type: ignore[return-value]

    def adopt(self, node: Tensor) -> Tensor:
        """Make ``node`` a Tracer of this trace (called by ``record`` for every node)."""
        checked = node._parents[:1] if node._op in ("take", "put") else node._parents
        if any(p._data.dtype.kind != "f" for p in checked):
            raise _refuse(
                f"Op {node._op!r} (a traced integer array may only index)",
                "A traced integer array (class labels) can only index Tensors: x[labels], x[np.arange(n), labels], "
                "cross_entropy(logits, labels). For arithmetic, pass floats (labels.astype(float)).",
            )
        node.__class__ = Tracer
        self.tracers.append(node)
        self.ids.add(id(node))
        return node

    def sees(self, parents: tuple[Tensor, ...]) -> bool:
        """Whether an op of ``parents`` belongs in the program: one is traced or closed over."""
        return any(type(p) is Tracer or id(p) not in self.created for p in parents)

    def backward(self, output: Tensor) -> None:
        """Refuse ``backward()`` of a traced value: it would store the example's gradients in ``.grad``."""
        if type(output) is Tracer:
            raise _refuse(
                ".backward()",
                "A traced function cannot store gradients in .grad: use course_lib.functional.grad or "
                "value_and_grad inside it and return the gradients.",
            )

    def take(self, a: Tensor, index: Any) -> Tensor | None:
        """``a[index]`` as the op ``take`` if ``index`` holds traced integer arrays (else None)."""
        entries = index if isinstance(index, tuple) else (index,)
        if not any(type(e) is Tracer and e._data.dtype.kind in "iu" for e in entries):
            return None
        parts: list[Tensor] = []
        template = []
        for e in entries:
            if type(e) is Tracer and e._data.dtype.kind in "iu":
                template.append(Slot(len(parts)))
                parts.append(e)
            else:
                template.append(_plain_index(e))
        return take(a, *parts, tuple(template))

    def index(self, index: Tensor) -> None:
        """Refuse a traced (or closed-over) Tensor as an index: the program would keep this example's index."""
        if self.sees((index,)):
            raise _refuse(
                "An index made",
                f"{_NOT_KNOWN} A Tensor index is part of the program. Pass it as an integer array (traced: "
                "the program reads it at every call), or select with arithmetic, e.g. (x * onehot).sum().",
            )

    def condition(self, condition: Tensor) -> None:
        """Refuse ``where`` with a traced condition: the program would keep the example's condition."""
        if self.sees((condition,)):
            raise _refuse(
                "A where() condition made",
                f"A where() condition is a fixed mask in the program, so it would keep this example's mask for "
                f"every input. {_DATA_FLOW}; or pass the condition in as a boolean array (it is then static: "
                "one program per condition).",
            )

    def finish(self) -> None:
        """Poison every Tracer: from now on it raises when used."""
        escaped = _Escaped()
        for t in self.tracers:
            t._data = escaped  # type: ignore[assignment]


# ----------------------------------------------------------------------------- containers
Tree = Any
"""Nested tuples, lists and dicts (keys in the order of their reprs) of leaves; a leaf is anything else."""


class Static:
    """A leaf kept in a structure instead of the leaves (a result of a traced function that is no value)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def flatten(tree: Tree, static: Callable[[Any], bool] | None = None) -> tuple[list[Any], Any]:
    """The leaves of ``tree`` in order and its structure, for :func:`unflatten`; a leaf for
    which ``static(leaf)`` holds stays in the structure (wrapped in a ``Static``)."""
    leaves: list[Any] = []

    def walk(t: Tree) -> Any:
        if type(t) in (tuple, list):
            return (type(t), tuple(walk(x) for x in t))
        if type(t) is dict:
            keys = tuple(sorted(t, key=repr))
            return (dict, keys, tuple(walk(t[k]) for k in keys))
        if static is not None and static(t):
            return Static(t)
        leaves.append(t)
        return None

    return leaves, walk(tree)


def unflatten(structure: Any, leaves: Any) -> Tree:
    """The tree of ``structure`` with the given leaves (an iterator is consumed in order)."""
    it = iter(leaves)

    def build(s: Any) -> Tree:
        if s is None:
            return next(it)
        if type(s) is Static:
            return s.value
        if s[0] is dict:
            return {k: build(x) for k, x in zip(s[1], s[2])}
        return s[0](build(x) for x in s[1])

    return build(structure)


def _not_a_value(leaf: Any) -> bool:
    """Whether a result leaf is no output of the program but returned as it is (None, a
    string, a number): as the eager function returns it."""
    return not isinstance(leaf, Tensor)


def _is_integer_array(leaf: Any) -> bool:
    return isinstance(leaf, np.ndarray) and leaf.dtype.kind in "iu"


def is_traced(leaf: Any) -> bool:
    """Whether an argument leaf becomes a program input: Tensors, float and integer arrays
    (integer ones, class labels, only as indices); numbers and boolean arrays are static:
    part of the program, like JAX's static arguments."""
    return isinstance(leaf, Tensor) or (isinstance(leaf, np.ndarray) and leaf.dtype.kind in "fiu")


# ----------------------------------------------------------------------------- tracing
def _global_rng_state() -> tuple:
    """NumPy's global random state (key, position, cached normal): it changes with every draw."""
    state: Any = np.random.get_state()
    return (state[1].tobytes(), *state[2:])


def trace(f: Callable[..., Any], args: tuple, static: frozenset[int] = frozenset()) -> tuple[Program, Any]:
    """Trace ``f(*args)``: the program (inputs: the traced leaves of the non-static arguments)
    and the structure of ``f``'s result (its leaves are the program's outputs)."""
    t = Trace(_tracing.get())
    token = _tracing.set(t)
    rng = _global_rng_state()
    try:
        traced_args = []
        for i, arg in enumerate(args):
            if i in static:
                traced_args.append(arg)
                continue
            leaves, structure = flatten(arg)
            if any(isinstance(leaf, np.random.Generator) for leaf in leaves):
                raise TracingError(
                    "a random Generator was passed to a traced function: random numbers drawn while tracing would "
                    "be the same at every call. Draw them outside and pass them in as an array"
                )
            traced_args.append(unflatten(structure, [t.new_input(x) if is_traced(x) else x for x in leaves]))
        inputs = list(t.tracers)
        with set_grad_enabled(True):  # a trace records, even when called under no_grad()
            result = f(*traced_args)
        if _global_rng_state() != rng:
            raise TracingError(
                f"{getattr(f, '__name__', 'the function')} draws random numbers (np.random) while traced: they would "
                "be drawn once and repeated at every call. Draw them outside the function and pass them in"
            )
        out_leaves, out_structure = flatten(result, static=_not_a_value)
        return _read_program(inputs, out_leaves, t), out_structure
    finally:
        _tracing.reset(token)
        t.finish()


def _read_program(inputs: list[Tensor], outputs: list[Tensor], t: Trace) -> Program:
    """The program computing ``outputs`` from ``inputs``, read off the recorded graph of
    trace ``t``: Tracers of an enclosing trace are *captured*, Tensors made before the trace
    are *constvars*, those made during it literals (see the module docstring)."""
    ours = t.ids
    atoms: dict[int, Atom] = {}
    for x in inputs:
        atoms[id(x)] = Var(x.shape, dtype=_dtype(x))
    equations: list[Equation] = []
    captured: list[Tensor] = []
    consts: list[Tensor] = []

    def atom(x: Tensor) -> Atom:
        if id(x) not in atoms:
            if type(x) is Tracer:
                atoms[id(x)] = Var(x.shape, dtype=_dtype(x))
                if id(x) not in ours:
                    captured.append(x)
            elif id(x) in t.created:
                atoms[id(x)] = x._data
            else:
                atoms[id(x)] = Var(x.shape)
                consts.append(x)
        return atoms[id(x)]

    # Post-order over the traced nodes (iterative: a long simulation loop makes a deep graph).
    done: set[int] = {id(x) for x in inputs}
    for root in outputs:
        if id(root) not in ours:
            continue
        stack: list[tuple[Tensor, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in done:
                continue
            if expanded:
                done.add(id(node))
                params = (node.shape,) if node._op in SHAPE_PARAMS else node._params
                equations.append(Equation(node._op, [atom(p) for p in node._parents], params, atom(node)))  # type: ignore[arg-type]
                continue
            stack.append((node, True))
            stack.extend((p, False) for p in reversed(node._parents) if id(p) in ours and id(p) not in done)
    outs = [atom(o) for o in outputs]
    inputs_vars = [atoms[id(x)] for x in inputs] + [atoms[id(c)] for c in captured]
    constvars = [atoms[id(c)] for c in consts]
    return Program(inputs_vars, equations, outs, captured, constvars, consts)  # type: ignore[arg-type]


def _dtype(x: Tensor) -> str:
    """A value's type as a program prints it: ``f64``, or ``i64`` for an integer array."""
    kind = x._data.dtype
    return "f64" if kind.kind == "f" else f"{kind.kind}{kind.itemsize * 8}"


def make_program(f: Callable[..., Any], *args: Any) -> Program:
    """The program of ``f`` traced at ``args`` (Tensors, float arrays, containers of them),
    printable like ``jax.make_jaxpr``: ``print(make_program(loss, w, x))``."""
    return trace(f, args)[0]
