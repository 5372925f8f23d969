"""``jit``: trace a function once per input signature, simplify the program and compile it
to straight-line Python calling NumPy.

Every op of the table gets a *NumPy rule* here (``NUMPY[op]``): the lines that compute
its result with exactly the NumPy calls the eager forward makes, so a compiled program
gives the eager engine's numbers bit for bit. ``jitted.source(*args)`` shows the code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from course_lib.passes import simplify
from course_lib.program import Atom, Equation, Program, Var, show
from course_lib.tensor import Tensor, record
from course_lib.trace import Tracer, flatten, is_traced, trace, unflatten

__all__ = ["jit", "Jitted", "compile_program", "NUMPY"]

Emit = Callable[[str, list[str], Equation, Callable[[Any], str]], list[str]]
"""A NumPy rule: ``rule(out, args, equation, literal) -> lines`` assigning ``out``."""


def _unary(fn: str) -> Emit:
    return lambda out, a, e, lit: [f"{out} = {fn}({a[0]})"]


def _binary(fn: str) -> Emit:
    return lambda out, a, e, lit: [f"{out} = {fn}({a[0]}, {a[1]})"]


def _reduce(fn: str) -> Emit:
    return lambda out, a, e, lit: [f"{out} = {a[0]}.{fn}(axis={lit(e.params[0])}, keepdims={e.params[1]})"]


def _affine(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    product, bias = e.out.shape, e.args[2].shape
    if product and np.broadcast_shapes(product, bias) == product:  # as affine(): the bias added in place
        return [f"{out} = np.matmul({a[0]}, {a[1]})", f"{out} += {a[2]}"]
    return [f"{out} = np.matmul({a[0]}, {a[1]}) + {a[2]}"]


def _sigmoid(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    return [f"{out} = np.exp(-np.abs({a[0]}))", f"{out} = np.where({a[0]} >= 0, 1.0, {out}) / (1.0 + {out})"]


def _softmax(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    axis = lit(e.params[0])
    return [
        f"{out} = np.exp({a[0]} - {a[0]}.max(axis={axis}, keepdims=True))",
        f"{out} = {out} / {out}.sum(axis={axis}, keepdims=True)",
    ]


def _log_softmax(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    axis = lit(e.params[0])
    return [
        f"{out} = {a[0]} - {a[0]}.max(axis={axis}, keepdims=True)",
        f"{out} = {out} - np.log(np.exp({out}).sum(axis={axis}, keepdims=True))",
    ]


def _scatter_add(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    return [f"{out} = np.zeros({lit(e.params[1])})", f"np.add.at({out}, {lit(e.params[0])}, {a[0]})"]


NUMPY: dict[str, Emit] = {
    "add": _binary("np.add"),
    "sub": _binary("np.subtract"),
    "mul": _binary("np.multiply"),
    "div": _binary("np.divide"),
    "pow": _binary("np.power"),
    "matmul": _binary("np.matmul"),
    "affine": _affine,
    "neg": _unary("np.negative"),
    "exp": _unary("np.exp"),
    "log": _unary("np.log"),
    "sin": _unary("np.sin"),
    "cos": _unary("np.cos"),
    "tanh": _unary("np.tanh"),
    "sigmoid": _sigmoid,
    "relu": lambda out, a, e, lit: [f"{out} = np.maximum({a[0]}, 0.0)"],
    "sqrt": _unary("np.sqrt"),
    "abs": _unary("np.abs"),
    "sign": _unary("np.sign"),
    "clip": lambda out, a, e, lit: [f"{out} = np.clip({a[0]}, {lit(e.params[0])}, {lit(e.params[1])})"],
    "where": lambda out, a, e, lit: [f"{out} = np.where({lit(e.params[0])}, {a[0]}, {a[1]})"],
    "sum": _reduce("sum"),
    "mean": _reduce("mean"),
    "max": _reduce("max"),
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "reshape": lambda out, a, e, lit: [f"{out} = {a[0]}.reshape({lit(e.params[0])})"],
    "transpose": lambda out, a, e, lit: [f"{out} = {a[0]}.transpose({lit(e.params[0])})"],
    "broadcast_to": lambda out, a, e, lit: [f"{out} = np.broadcast_to({a[0]}, {lit(e.params[0])})"],
    "getitem": lambda out, a, e, lit: [f"{out} = {a[0]}[{lit(e.params[0])}]"],
    "scatter_add": _scatter_add,
    "identity": lambda out, a, e, lit: [f"{out} = {a[0]}"],
    "stack": lambda out, a, e, lit: [f"{out} = np.stack([{', '.join(a)}], axis={e.params[0]})"],
}
"""op name -> its NumPy rule (the op's forward, as lines of Python)."""


def _plain(p: Any) -> bool:
    """Whether ``repr(p)`` is Python that evaluates back to ``p``."""
    if isinstance(p, tuple):
        return all(_plain(q) for q in p)
    return p is None or isinstance(p, (bool, int, str)) or (isinstance(p, float) and math.isfinite(p))


def compile_program(program: Program, name: str = "compiled") -> tuple[Callable[..., tuple], str]:
    """The program as a Python function of arrays returning a tuple of arrays, and its source."""
    show(program)  # names the variables
    namespace: dict[str, Any] = {"np": np}
    names: dict[int, str] = {}

    def lit(p: Any) -> str:
        if _plain(p):
            return repr(p)
        if id(p) not in names:
            names[id(p)] = f"_k{len(names)}" if not isinstance(p, np.ndarray) or p.dtype == bool else f"_c{len(names)}"
            namespace[names[id(p)]] = p
        return names[id(p)]

    def atom(x: Atom) -> str:
        if isinstance(x, Var):
            return x.name
        return repr(float(x)) if x.shape == () and math.isfinite(float(x)) else lit(x)

    lines = [f"def {name}({', '.join(v.name for v in program.inputs)}):"]
    for e in program.equations:
        rule = NUMPY.get(e.op)
        if rule is None:
            raise NotImplementedError(f"op {e.op!r} has no NumPy rule: add one to course_lib.jit.NUMPY")
        lines += ["    " + line for line in rule(e.out.name, [atom(a) for a in e.args], e, lit)]
    lines.append(f"    return ({''.join(atom(o) + ', ' for o in program.outputs)})")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<jit {name}>", "exec"), namespace)
    return namespace[name], source


class _Compiled:
    """One entry of the cache: the compiled function, its source and how to rebuild the result."""

    __slots__ = ("function", "source", "program", "structure")

    def __init__(self, function: Callable[..., tuple], source: str, program: Program, structure: Any) -> None:
        self.function, self.source, self.program, self.structure = function, source, program, structure


def _static_key(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"jit: a {type(x).__name__} argument is static (part of the signature), so it must be hashable"
        ) from None
    return (type(x), x)


class Jitted:
    """``f`` compiled per input signature (see :func:`jit`)."""

    def __init__(self, f: Callable[..., Any], static_argnums: tuple[int, ...]) -> None:
        self.f, self.static = f, frozenset(static_argnums)
        self.cache: dict[Any, _Compiled] = {}
        self.__name__ = getattr(f, "__name__", "jitted")
        self.__doc__ = getattr(f, "__doc__", None)

    def _split(self, args: tuple) -> tuple[Any, list[np.ndarray]]:
        """The signature of ``args`` (shapes of traced leaves, values of static ones) and the traced arrays."""
        key: list[Any] = []
        arrays: list[np.ndarray] = []
        for i, arg in enumerate(args):
            if i in self.static:
                key.append(_static_key(arg))
                continue
            leaves, structure = flatten(arg)
            key.append(structure)
            for leaf in leaves:
                if type(leaf) is Tensor:
                    arrays.append(leaf._data)
                    key.append(leaf._data.shape)
                elif is_traced(leaf):
                    array = leaf._data if isinstance(leaf, Tensor) else leaf.astype(np.float64)
                    arrays.append(array)
                    key.append(array.shape)
                else:
                    key.append(_static_key(leaf))
        return tuple(key), arrays

    def lookup(self, *args: Any) -> _Compiled:
        """The compiled entry for the signature of ``args``, tracing and compiling it on a miss."""
        key, _ = self._split(args)
        entry = self.cache.get(key)
        if entry is None:
            program, structure = trace(self.f, args, self.static)
            program = simplify(program)
            function, source = compile_program(program, self.__name__ if self.__name__.isidentifier() else "jitted")
            entry = self.cache[key] = _Compiled(function, source, program, structure)
        return entry

    def __call__(self, *args: Any) -> Any:
        if any(isinstance(leaf, Tracer) for arg in args for leaf in flatten(arg)[0]):
            return self.f(*args)  # inside another trace: trace straight through
        key, arrays = self._split(args)
        entry = self.cache.get(key) or self.lookup(*args)
        results = entry.function(*arrays)
        return unflatten(entry.structure, [record("", r, ()) for r in results])

    def source(self, *args: Any) -> str:
        """The generated Python of the program for ``args``' signature."""
        return self.lookup(*args).source

    def program(self, *args: Any) -> Program:
        """The simplified program for ``args``' signature."""
        return self.lookup(*args).program


def jit(f: Callable[..., Any], static_argnums: int | tuple[int, ...] = ()) -> Jitted:
    """``f`` compiled: traced once per input signature, then run as generated NumPy code.

    The signature is the shapes of the Tensors and float arrays among the arguments
    (containers allowed), with the values of the static ones: arguments listed in
    ``static_argnums``, numbers, and integer or boolean arrays (class labels, masks).
    A new signature traces again; a known one runs the cached code, which gives the
    eager engine's numbers. Results are Tensors (constants: differentiate ``f``
    inside, ``jit(grad(f))``). Side effects such as ``print`` happen only while tracing.
    """
    return Jitted(f, (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))
