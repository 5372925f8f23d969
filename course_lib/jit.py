"""``jit``: trace a function once per input signature, simplify the program and compile it
(:mod:`course_lib.codegen`) to straight-line Python calling NumPy; then, per call, find the
compiled code for the arguments and wrap its results. ``jitted.source(*args)`` shows the code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from course_lib.codegen import compile_code, generate
from course_lib.passes import fold_row_sums, simplify
from course_lib.program import Atom, Program, Var, run
from course_lib.tensor import Tensor, is_grad_enabled
from course_lib.tensor.core import constant, wrap
from course_lib.tensor.gather import integer_tensor
from course_lib.tensor.grad_mode import _grad_mode, _tracing
from course_lib.trace import Static, flatten, is_traced, trace, unflatten

__all__ = ["jit", "Jitted"]


class _Compiled:
    """One entry of the cache: the program's code, the compiled function and its source, how
    to rebuild the result, and ``fast``: the whole call for arguments of this signature (see
    :func:`_guarded`)."""

    __slots__ = ("code", "function", "source", "program", "traced", "structure", "rebuild", "fast")

    def __init__(self, traced: Program, structure: Any, name: str) -> None:
        self.traced, self.structure = traced, structure
        self.program = fold_row_sums(simplify(traced))
        self.code = generate(self.program)
        self.function, self.source = compile_code(self.code, name)
        self.fast: Callable[..., Any] | None = None
        outputs = [f"r[{k}]" for k in range(len(self.program.outputs))]
        result, statics = _result_expression(structure, self.program.outputs, outputs)
        if result is None:  # dict keys that do not print as Python
            self.rebuild = lambda results: unflatten(structure, [constant(r) for r in results])
        else:
            self.rebuild = eval(f"lambda r: {result}", {**_WRAPPERS, "S": statics})


_WRAPPERS = {"T": constant, "W": wrap, "AS": np.asarray, "F": np.dtype(np.float64)}
"""What a result expression calls (see :func:`_result_expression`)."""


def _result_expression(structure: Any, outputs: list[Atom], values: list[str]) -> tuple[str | None, list[Any]]:
    """``f``'s result as one expression of the compiled values ``values`` (``(W(r[0]), [T(r[1])])``),
    so a call pays no walk over the structure (None if a dict key does not print as Python),
    and the results that are no values (``S[k]`` in the expression). ``W`` wraps what is surely
    a float64 array (a computed variable with axes), ``W(AS(.., F))`` a computed float64 scalar
    (a NumPy scalar or a 0-d array), ``T`` anything else (a constant)."""
    count = iter(range(1 << 30))
    statics: list[Any] = []

    def expression(s: Any) -> str:
        if s is None:
            k = next(count)
            out, value = outputs[k], values[k]
            if not isinstance(out, Var) or out.dtype != "f64":
                return f"T({value})"
            return f"W({value})" if out.shape else f"W(AS({value}, F))"
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
    then the compiled code's lines run on their arrays, inline, and the results come back
    as Tensors. Without it, a call builds the signature and looks it up. None where the
    arguments are not simple enough (dicts, other dtypes, unusual static values).
    Closed-over Tensors are read afresh (their shapes checked, and that they require no
    grad or recording is off). The guards' own names start with ``_`` or a capital, or
    hold a digit, so that no variable of the program (``a``, ``b``, ..., ``len``, ...) hides one."""
    code = entry.code
    result, statics = _result_expression(entry.structure, entry.program.outputs, code.outputs)
    if result is None:
        return None
    lines: list[str] = []
    conditions: list[str] = []
    arrays: list[str] = []
    names: dict[str, Any] = {}

    def name(value: Any) -> str:
        names[f"_g{len(names)}"] = value
        return f"_g{len(names) - 1}"

    def check() -> None:  # the conditions so far, as one test
        if conditions:
            lines.append(f"    if not ({' and '.join(conditions)}):\n        return MISS")
            conditions.clear()

    def fixed(x: Any, at: str) -> bool:  # a static value: the same type and value
        if type(x) is np.ndarray:
            conditions.append(
                f"_type({at}) is A and {at}.dtype is {name(x.dtype)} and {at}.shape == {x.shape!r} "
                f"and {at}.tobytes() == {name(x.tobytes())}"
            )
        elif type(x) in _GUARDED_STATIC and (type(x) is not float or (math.isfinite(x) and x != 0.0)):
            conditions.append(f"_type({at}) is {name(type(x))} and {at} == {x!r}")
        else:
            return False
        return True

    def walk(x: Any, at: str) -> bool:
        kind = type(x)
        if kind is Tensor:
            conditions.append(f"_type({at}) is Tensor and not {at}.requires_grad and {at}._data.shape == {x.shape!r}")
            arrays.append(f"{at}._data")
        elif kind is np.ndarray and x.dtype is _FLOAT64:
            conditions.append(f"_type({at}) is A and {at}.dtype is F and {at}.shape == {x.shape!r}")
            arrays.append(at)
        elif kind is list or kind is tuple:  # checked, then its items get names of their own
            conditions.append(f"_type({at}) is {kind.__name__} and _len({at}) == {len(x)}")
            check()
            items = [f"{at}_{i}" for i in range(len(x))]
            if items:
                lines.append(f"    {''.join(i + ', ' for i in items)}= {at}")
            return all(walk(item, i) for item, i in zip(x, items))
        elif kind is np.ndarray and x.dtype.kind in "iu":
            conditions.append(f"_type({at}) is A and {at}.dtype is {name(x.dtype)} and {at}.shape == {x.shape!r}")
            arrays.append(at)
        elif kind is np.ndarray and x.dtype.kind == "f":
            return False
        else:
            return fixed(x, at)
        return True

    parameters = [f"a{i}" for i in range(len(args))]
    lines.append(f"    if _len(_args) != {len(args)}:\n        return MISS")
    if args:
        lines.append(f"    {''.join(p + ', ' for p in parameters)}= _args")
    if not all(fixed(x, a) if i in static else walk(x, a) for i, (x, a) in enumerate(zip(args, parameters))):
        return None
    for c in entry.program.consts:
        at = name(c)
        conditions.append(f"(not {at}.requires_grad or not G()) and {at}._data.shape == {c.shape!r}")
        arrays.append(f"{at}._data")
    check()
    if code.parameters:  # the compiled code's lines, on the arguments' arrays
        lines.append(f"    {''.join(p + ', ' for p in code.parameters)}= {''.join(a + ', ' for a in arrays)}")
    source = "def fast(*_args):\n" + "".join(line + "\n" for line in lines + code.lines) + f"    return {result}\n"
    namespace = {**code.namespace, **_WRAPPERS, **names, "S": statics, "G": _grad_mode.get, "MISS": MISS}
    namespace.update(Tensor=Tensor, A=np.ndarray, _type=type, _len=len)
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
        if _tracing.get() is not None:
            return self.f(*args, **kwargs)  # inside another trace: trace straight through
        if kwargs:
            return self._with_keywords(kwargs, args)(*args, *kwargs.values())
        fast = self.fast
        if fast is not None:
            result = fast(*args)
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
