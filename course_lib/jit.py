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

from course_lib.passes import fold_row_sums, simplify
from course_lib.program import Atom, Equation, Program, Var, run, show
from course_lib.tensor import Tensor, is_grad_enabled
from course_lib.tensor.core import constant
from course_lib.tensor.gather import Slot, advanced, integer_tensor
from course_lib.tensor.grad_mode import _tracing
from course_lib.trace import Static, flatten, is_traced, trace, unflatten

__all__ = ["jit", "Jitted", "compile_program", "NUMPY"]

Emit = Callable[[str, list[str], Equation, Callable[[Any], str]], list[str]]
"""A NumPy rule: ``rule(out, args, equation, literal) -> lines`` assigning ``out``."""


UFUNCS = {
    "add": "np.add",
    "sub": "np.subtract",
    "mul": "np.multiply",
    "div": "np.divide",
    "pow": "np.power",
    "neg": "np.negative",
    "exp": "np.exp",
    "log": "np.log",
    "sin": "np.sin",
    "cos": "np.cos",
    "tanh": "np.tanh",
    "sqrt": "np.sqrt",
    "abs": "np.abs",
    "sign": "np.sign",
}
"""The ops that are one NumPy ufunc call: their result may be written into an argument's buffer."""


def _ufunc(fn: str) -> Emit:
    return lambda out, a, e, lit: [f"{out} = {fn}({', '.join(a)})"]


def _reduce(fn: str) -> Emit:
    return lambda out, a, e, lit: [f"{out} = {a[0]}.{fn}(axis={lit(e.params[0])}, keepdims={e.params[1]})"]


def _affine(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    product = np.matmul(np.empty(e.args[0].shape), np.empty(e.args[1].shape)).shape
    bias = e.args[2].shape
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
    index, shape = e.params
    hits = np.zeros(shape)
    np.add.at(hits, index, 1.0)
    if hits.max(initial=0.0) <= 1.0:  # no position twice: an assignment (np.add.at is slow); + 0.0 as 0 + (-0) is 0
        return [f"{out} = np.zeros({lit(shape)})", f"{out}[{lit(index)}] = {a[0]} + 0.0"]
    return [f"{out} = np.zeros({lit(shape)})", f"np.add.at({out}, {lit(index)}, {a[0]})"]


def _index(template: tuple, parts: list[str], lit: Callable[[Any], str]) -> str:
    """The index of ``take``/``put`` as Python: its template with the integer arguments' names in their slots."""
    return ", ".join(parts[t.k] if type(t) is Slot else lit(t) for t in template) + ("," if len(template) == 1 else "")


def _distinct(template: tuple, e: Equation) -> bool:
    """Whether ``put``'s index can hit no position twice, whatever the integer arguments: one of
    its static integer arrays covers the whole broadcast index with values all different
    (``np.arange(n)`` beside the labels), so the positions differ in that coordinate."""
    if any(isinstance(t, np.ndarray) and t.dtype == bool for t in template):
        return False
    arrays = [e.args[1 + t.k].shape if type(t) is Slot else np.shape(t) for t in template if advanced(t)]
    shape = np.broadcast_shapes(*arrays)
    return any(
        isinstance(t, np.ndarray) and t.dtype.kind in "iu" and t.shape == shape and np.unique(t).size == t.size
        for t in template
    )


def _put(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    template, shape = e.params
    index = _index(template, a[1:], lit)
    if _distinct(template, e):  # an assignment (np.add.at is slow); + 0.0 as 0 + (-0) is 0
        value = e.args[0]
        exact = isinstance(value, np.ndarray) and not np.any(np.signbit(value) & (value == 0.0))
        return [f"{out} = np.zeros({lit(shape)})", f"{out}[{index}] = {a[0]}" + ("" if exact else " + 0.0")]
    return [f"{out} = np.zeros({lit(shape)})", f"np.add.at({out}, ({index}), {a[0]})"]


NUMPY: dict[str, Emit] = {
    **{op: _ufunc(fn) for op, fn in UFUNCS.items()},
    "matmul": lambda out, a, e, lit: [f"{out} = np.matmul({a[0]}, {a[1]})"],
    "affine": _affine,
    "sigmoid": _sigmoid,
    "relu": lambda out, a, e, lit: [f"{out} = np.maximum({a[0]}, 0.0)"],
    "clip": lambda out, a, e, lit: [f"{out} = np.clip({a[0]}, {lit(e.params[0])}, {lit(e.params[1])})"],
    "ge": lambda out, a, e, lit: [f"{out} = np.greater_equal({a[0]}, {a[1]}).astype(np.float64)"],
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
    "take": lambda out, a, e, lit: [f"{out} = {a[0]}[{_index(e.params[0], a[1:], lit)}]"],
    "put": _put,
    "identity": lambda out, a, e, lit: [f"{out} = {a[0]}"],
    "detach": lambda out, a, e, lit: [f"{out} = {a[0]}"],
    "stack": lambda out, a, e, lit: [f"{out} = np.stack([{', '.join(a)}], axis={e.params[0]})"],
}
"""op name -> its NumPy rule (the op's forward, as lines of Python)."""


VIEWS = ("identity", "detach", "reshape", "transpose", "broadcast_to", "getitem")
"""Ops whose NumPy rule may return a view of its argument."""


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

    lines = [f"def {name}({', '.join(v.name for v in program.inputs + program.constvars)}):"]
    reusable = _reusable(program)
    for k, e in enumerate(program.equations):
        rule = NUMPY.get(e.op)
        if rule is None:
            raise NotImplementedError(f"op {e.op!r} has no NumPy rule: add one to course_lib.jit.NUMPY")
        code = rule(e.out.name, [atom(a) for a in e.args], e, lit)
        if k in reusable:  # write into a dying argument's buffer instead of allocating one
            code[-1] = f"{code[-1][:-1]}, out={reusable[k]})"
        lines += ["    " + line for line in code]
    # A result that may share memory with an input array is copied: the caller may change their array later.
    shared = {id(v) for v in program.inputs + program.constvars}
    shared.update(id(e.out) for e in program.equations if e.op in VIEWS and id(e.args[0]) in shared)
    outputs = [atom(o) + (".copy()" if id(o) in shared else "") for o in program.outputs]
    lines.append(f"    return ({''.join(o + ', ' for o in outputs)})")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<jit {name}>", "exec"), namespace)
    return namespace[name], source


def _reusable(program: Program) -> dict[int, str]:
    """Equation index -> the argument whose buffer its ufunc may write into (``out=``).

    The argument must hold an array this code allocated (not an input, a constant or a
    view), of the result's shape, used by no later equation, output or live view of it.
    """
    equations = program.equations
    last = {id(o): len(equations) for o in program.outputs}
    for k, e in enumerate(equations):
        for a in e.args:
            last[id(a)] = max(last.get(id(a), k), k)
    for e in reversed(equations):  # a view keeps its base alive
        if e.op in VIEWS:
            last[id(e.args[0])] = max(last[id(e.args[0])], last.get(id(e.out), 0))
    owned: set[int] = set()
    reusable = {}
    for k, e in enumerate(equations):
        if e.op in UFUNCS and e.out.shape:
            for a in e.args:
                if id(a) in owned and last[id(a)] == k and a.shape == e.out.shape:
                    reusable[k] = a.name  # type: ignore[union-attr]
                    break
        if e.op not in VIEWS and e.out.shape:
            owned.add(id(e.out))
    return reusable


class _Compiled:
    """One entry of the cache: the compiled function, its source, how to rebuild the result,
    and ``fast``: the whole call for arguments of this signature (see :func:`_guarded`)."""

    __slots__ = ("function", "source", "program", "traced", "structure", "rebuild", "fast")

    def __init__(self, traced: Program, structure: Any, name: str) -> None:
        self.traced, self.structure = traced, structure
        self.program = fold_row_sums(simplify(traced))
        self.function, self.source = compile_program(self.program, name)
        self.fast: Callable[..., Any] | None = None
        result, statics = _result_expression(structure)
        if result is None:  # dict keys that do not print as Python
            self.rebuild = lambda results: unflatten(structure, [constant(r) for r in results])
        else:
            self.rebuild = eval(f"lambda r: {result}", {"T": constant, "S": statics})


def _result_expression(structure: Any) -> tuple[str | None, list[Any]]:
    """``f``'s result as one expression of the compiled arrays ``r`` (``(T(r[0]), [T(r[1])])``),
    so a call pays no walk over the structure (None if a dict key does not print as Python),
    and the results that are no values (``S[k]`` in the expression)."""
    count = iter(range(1 << 30))
    statics: list[Any] = []

    def expression(s: Any) -> str:
        if s is None:
            return f"T(r[{next(count)}])"
        if type(s) is Static:
            statics.append(s.value)
            return f"S[{len(statics) - 1}]"
        if s[0] is dict:
            if not all(type(k) in (str, int) for k in s[1]):
                raise TypeError
            return "{" + ", ".join(f"{k!r}: {expression(x)}" for k, x in zip(s[1], s[2])) + "}"
        items = "".join(expression(x) + ", " for x in s[1])
        return f"[{items}]" if s[0] is list else f"({items})"

    try:
        return expression(structure), statics
    except TypeError:
        return None, statics


MISS = object()
"""What a guarded call returns when the arguments do not have its signature."""

_GUARDED_STATIC = (bool, int, float, str, type(None))


def _guarded(entry: _Compiled, args: tuple, static: frozenset[int]) -> Callable[..., Any] | None:
    """The call of ``entry`` as one generated function of the arguments: *guards* (as
    torch.compile calls them) check that the arguments have the signature ``args`` had,
    then the arrays go to the compiled code and its results come back as Tensors. Without
    it, a call builds the signature and looks it up. None where the arguments are not
    simple enough (dicts, other dtypes, unusual static values). Closed-over Tensors are read
    afresh (their shapes checked, and that they require no grad or recording is off)."""
    result, statics = _result_expression(entry.structure)
    if result is None:
        return None
    conditions: list[str] = []
    arrays: list[str] = []
    names: dict[str, Any] = {}

    def name(value: Any) -> str:
        names[f"_g{len(names)}"] = value
        return f"_g{len(names) - 1}"

    def fixed(x: Any, at: str) -> bool:  # a static value: the same type and value
        if type(x) is np.ndarray:
            conditions.append(
                f"type({at}) is A and {at}.dtype is {name(x.dtype)} and {at}.shape == {x.shape!r} "
                f"and {at}.tobytes() == {name(x.tobytes())}"
            )
        elif type(x) in _GUARDED_STATIC and (type(x) is not float or (math.isfinite(x) and x != 0.0)):
            conditions.append(f"type({at}) is {name(type(x))} and {at} == {x!r}")
        else:
            return False
        return True

    def walk(x: Any, at: str) -> bool:
        kind = type(x)
        if kind is Tensor:
            conditions.append(f"type({at}) is Tensor and not {at}.requires_grad and {at}._data.shape == {x.shape!r}")
            arrays.append(f"{at}._data")
        elif kind is np.ndarray and x.dtype is _FLOAT64:
            conditions.append(f"type({at}) is A and {at}.dtype is F and {at}.shape == {x.shape!r}")
            arrays.append(at)
        elif kind is list or kind is tuple:
            conditions.append(f"type({at}) is {kind.__name__} and len({at}) == {len(x)}")
            return all(walk(item, f"{at}[{i}]") for i, item in enumerate(x))
        elif kind is np.ndarray and x.dtype.kind in "iu":
            conditions.append(f"type({at}) is A and {at}.dtype is {name(x.dtype)} and {at}.shape == {x.shape!r}")
            arrays.append(at)
        elif kind is np.ndarray and x.dtype.kind == "f":
            return False
        else:
            return fixed(x, at)
        return True

    parameters = [f"a{i}" for i in range(len(args))]
    if not all(fixed(x, a) if i in static else walk(x, a) for i, (x, a) in enumerate(zip(args, parameters))):
        return None
    for c in entry.program.consts:
        at = name(c)
        conditions.append(f"(not {at}.requires_grad or not G()) and {at}._data.shape == {c.shape!r}")
        arrays.append(f"{at}._data")
    unpack = f"    {', '.join(parameters)}, = args\n" if args else ""
    source = (
        f"def fast(*args):\n    if len(args) != {len(args)}:\n        return MISS\n{unpack}"
        f"    if not ({' and '.join(conditions) or 'True'}):\n        return MISS\n"
        f"    r = compiled({', '.join(arrays)})\n    return {result}\n"
    )
    namespace: dict[str, Any] = {"Tensor": Tensor, "T": constant, "S": statics, "G": is_grad_enabled}
    namespace.update(A=np.ndarray, F=_FLOAT64, MISS=MISS, **names)
    namespace["compiled"] = entry.function
    exec(compile(source, "<jit guards>", "exec"), namespace)
    return namespace["fast"]


def _static_key(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (float, np.floating)):  # by bits: -0.0 is not 0.0, and a NaN is itself
        return (type(x), np.asarray(x).tobytes())
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"jit: a {type(x).__name__} argument is static (part of the signature), so it must be hashable"
        ) from None
    return (type(x), x)


_FLOAT64 = np.dtype(np.float64)


def _signature(x: Any, key: list[Any], arrays: list[np.ndarray], graph: list[Tensor]) -> None:
    """Add the signature of argument ``x`` to ``key``, its traced arrays to ``arrays`` and
    its Tensors that require grad to ``graph``: what :func:`~course_lib.trace.flatten` and
    ``is_traced`` decide, in one quick pass."""
    kind = type(x)
    if kind is Tensor:
        arrays.append(x._data)
        key.append(x._data.shape)
        if x.requires_grad:
            graph.append(x)
    elif kind is np.ndarray and x.dtype is _FLOAT64:
        arrays.append(x)
        key.append(x.shape)
    elif isinstance(x, np.ndarray) and x.dtype.kind == "f":  # another float dtype, or a subclass (memmap)
        arrays.append(np.asarray(x, dtype=np.float64))
        key.append(x.shape)
    elif isinstance(x, np.ndarray) and x.dtype.kind in "iu":  # class labels: traced, by dtype and shape
        arrays.append(np.asarray(x))
        key.append((x.dtype.str, x.shape))
    elif kind is list or kind is tuple:
        key.append((kind, len(x)))
        for item in x:
            _signature(item, key, arrays, graph)
    elif kind is dict:
        names = sorted(x, key=repr)
        key.append((dict, tuple(names)))
        for name in names:
            _signature(x[name], key, arrays, graph)
    elif isinstance(x, Tensor):
        arrays.append(x._data)
        key.append(x._data.shape)
        if x.requires_grad:
            graph.append(x)
    else:
        key.append(_static_key(x))


class Jitted:
    """``f`` compiled per input signature (see :func:`jit`)."""

    def __init__(self, f: Callable[..., Any], static_argnums: tuple[int, ...]) -> None:
        self.f, self.static = f, frozenset(static_argnums)
        self.cache: dict[Any, _Compiled] = {}
        self.fast: Callable[..., Any] | None = None  # the guarded call of the signature used last
        self.keywords: dict[tuple[int, tuple[str, ...]], Jitted] = {}
        self.__name__ = getattr(f, "__name__", "jitted")
        self.__doc__ = getattr(f, "__doc__", None)

    def _split(self, args: tuple) -> tuple[Any, list[np.ndarray], list[Tensor]]:
        """The signature of ``args`` (shapes of traced leaves, values of static ones), the
        traced arrays, and the Tensors among them that require grad."""
        key: list[Any] = []
        arrays: list[np.ndarray] = []
        graph: list[Tensor] = []
        for i, arg in enumerate(args):
            if i in self.static:
                key.append(("static", _static_key(arg)))
            else:
                _signature(arg, key, arrays, graph)
        return tuple(key), arrays, graph

    def lookup(self, *args: Any, **kwargs: Any) -> _Compiled:
        """The compiled entry for the signature of ``args``, tracing and compiling it on a miss."""
        if kwargs:
            return self._with_keywords(kwargs, args).lookup(*args, *kwargs.values())
        return self._entry(self._split(args)[0], args)

    def _entry(self, key: Any, args: tuple) -> _Compiled:
        entry = self.cache.get(key)
        if entry is None or any(c.shape != v.shape for c, v in zip(entry.program.consts, entry.program.constvars)):
            # New, or a closed-over Tensor got values of another shape: trace again.
            traced, structure = trace(self.f, args, self.static)
            entry = self.cache[key] = _Compiled(
                traced, structure, self.__name__ if self.__name__.isidentifier() else "jitted"
            )
            entry.fast = _guarded(entry, args, self.static)
        return entry

    def _with_keywords(self, kwargs: dict[str, Any], args: tuple) -> Jitted:
        """The jitted function of the positional arguments then the keyword ones (one per set of names)."""
        n, names = len(args), tuple(kwargs)
        inner = self.keywords.get((n, names))
        if inner is None:
            f = self.f
            inner = Jitted(lambda *a: f(*a[:n], **dict(zip(names, a[n:]))), tuple(self.static))
            inner.__name__ = self.__name__
            self.keywords[n, names] = inner
        return inner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return self._with_keywords(kwargs, args)(*args, *kwargs.values())
        if _tracing.get() is not None:
            return self.f(*args)  # inside another trace: trace straight through
        if self.fast is not None:
            result = self.fast(*args)
            if result is not MISS:
                return result
        key, arrays, graph = self._split(args)
        entry = self._entry(key, args)
        consts = entry.program.consts
        if (graph or any(c.requires_grad for c in consts)) and is_grad_enabled():
            return self._differentiable(entry, args)
        self.fast = entry.fast
        return entry.rebuild(entry.function(*arrays, *(c._data for c in consts)))

    def _differentiable(self, entry: _Compiled, args: tuple) -> Any:
        """The program run op by op by the eager engine, so gradients reach the arguments
        and parameters that require grad (``grad(jit(f))``, ``jit(f)(x).backward()``)."""
        leaves = [
            leaf
            if isinstance(leaf, Tensor)
            else integer_tensor(leaf)
            if leaf.dtype.kind in "iu"
            else constant(np.asarray(leaf, dtype=np.float64))
            for i, arg in enumerate(args)
            if i not in self.static
            for leaf in flatten(arg)[0]
            if is_traced(leaf)
        ]
        # The program as traced, not simplified: the same graph as f's, so the same gradients, bit for bit.
        return unflatten(entry.structure, run(entry.traced, leaves))

    def source(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python of the program for the signature of the arguments."""
        return self.lookup(*args, **kwargs).source

    def program(self, *args: Any, **kwargs: Any) -> Program:
        """The simplified program for the signature of the arguments."""
        return self.lookup(*args, **kwargs).program


def jit(f: Callable[..., Any], static_argnums: int | tuple[int, ...] = ()) -> Jitted:
    """``f`` compiled: traced once per input signature, then run as generated NumPy code.

    The signature is the shapes of the Tensors and float arrays among the arguments
    (containers allowed), the dtypes and shapes of the integer arrays (class labels: traced
    too, they may only index Tensors), with the values of the static ones: arguments listed
    in ``static_argnums``, numbers, and boolean arrays (masks).
    A new signature traces again; a known one runs the cached code, which gives the
    eager engine's numbers. Results are Tensors (constants: differentiate ``f``
    inside, ``jit(grad(f))``), except where gradients are wanted: when an argument or a
    parameter ``f`` closes over requires grad (and recording is on), the program runs op by
    op on the eager engine instead, so ``grad(jit(f))`` and ``jit(f)(x).backward()`` give
    the eager gradients bit for bit (at eager speed; call under ``no_grad()`` for the
    compiled code). Tensors ``f`` closes over (a model's parameters) are inputs of the
    program too, read afresh at every call: changing their values needs no new trace.
    Keyword arguments are traced like positional ones. Side effects such as ``print``
    happen only while tracing. A call with the signature of the previous one skips the
    lookup: generated *guards* check the arguments and run the compiled code directly.
    """
    return Jitted(f, (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))
