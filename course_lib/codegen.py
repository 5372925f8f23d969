"""Code generation: a program as straight-line Python calling NumPy (what ``jit`` runs).

Every op of the table gets a *NumPy rule* here (``NUMPY[op]``): the lines that compute
its result with the NumPy calls the eager forward makes (or what they call inside:
``np.add.reduce`` for ``x.sum()``, an operator on NumPy scalars for ``np.multiply``), so a
compiled program gives the eager engine's numbers bit for bit. Where a value dies, a ufunc
writes its result into the dead value's buffer (``out=``) instead of allocating one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from course_lib.program import Atom, Equation, Program, Var, show
from course_lib.tensor.gather import Slot, advanced

__all__ = ["compile_program", "generate", "compile_code", "Code", "NUMPY"]

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


OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
"""Ufuncs that NumPy's scalars compute alike as Python operators (the same IEEE operation), quicker."""


def _ufunc(op: str, fn: str) -> Emit:
    def emit(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
        if e.out.shape == () and any(isinstance(x, Var) for x in e.args):  # NumPy scalars: an operator
            if op == "neg":
                return [f"{out} = -{a[0]}"]
            if op in OPERATORS:
                return [f"{out} = {a[0]} {OPERATORS[op]} {a[1]}"]
        return [f"{out} = {fn}({', '.join(a)})"]

    return emit


def _reduce(ufunc: str) -> Emit:
    """``x.sum(axis, keepdims)`` as NumPy's method runs it (``np.add.reduce``), without the method's Python layer."""
    return lambda out, a, e, lit: [f"{out} = {ufunc}.reduce({a[0]}, axis={lit(e.params[0])}, keepdims={e.params[1]})"]


def _mean(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    """``x.mean(axis, keepdims)`` as NumPy's method computes it: the sum divided by the count."""
    axis, keepdims = e.params
    shape = e.args[0].shape
    axes = range(len(shape)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    count = math.prod(shape[k] for k in axes)
    if count == 0:  # the mean of nothing: the method's own warning
        return [f"{out} = {a[0]}.mean(axis={lit(axis)}, keepdims={keepdims})"]
    total = f"np.add.reduce({a[0]}, axis={lit(axis)}, keepdims={keepdims})"
    return [f"{out} = {total} / {count}"] if e.out.shape == () else [f"{out} = {total}", f"{out} /= {count}"]


def _affine(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    product = np.matmul(np.empty(e.args[0].shape), np.empty(e.args[1].shape)).shape
    bias = e.args[2].shape
    if product and np.broadcast_shapes(product, bias) == product:  # as affine(): the bias added in place
        return [f"{out} = np.matmul({a[0]}, {a[1]})", f"{out} += {a[2]}"]
    return [f"{out} = np.matmul({a[0]}, {a[1]}) + {a[2]}"]


def _transpose(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    axes = tuple(e.params[0])
    return [f"{out} = {a[0]}.T" if axes == tuple(range(len(axes)))[::-1] else f"{out} = {a[0]}.transpose({lit(axes)})"]


def _sigmoid(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    return [f"{out} = np.exp(-np.abs({a[0]}))", f"{out} = np.where({a[0]} >= 0, 1.0, {out}) / (1.0 + {out})"]


def _columns(x: str, e: Equation) -> list[str] | None:
    """The columns of ``x`` (``x[..., k:k+1]``) when ``softmax``/``log_softmax`` of equation ``e``
    is quicker with its row maxima and sums as a chain of ufunc calls over them: a last axis of
    2 to 7 entries and at least 16 rows per entry (an Iris batch of 256). NumPy reduces each row
    in a call of its own, so a reduction over a short axis costs per row; the chain costs per
    column. The bits are the same: a maximum is exact, and NumPy sums fewer than 8 entries one
    after the other, starting from +0.0, which changes no sum of exps (exp is never -0.0).
    Otherwise None."""
    axis, shape = e.params[0], e.args[0].shape
    if type(axis) is not int or len(shape) < 2 or axis % len(shape) != len(shape) - 1:
        return None
    width = shape[-1]
    if not 2 <= width <= 7 or math.prod(shape[:-1]) < 16 * width:
        return None
    return [f"{x}[..., {k}:{k + 1}]" for k in range(width)]


def _chain(ufunc: str, out: str, columns: list[str]) -> list[str]:
    """``out`` = the columns combined by ``ufunc``, left to right (a reduction, with keepdims)."""
    return [f"{out} = {ufunc}({columns[0]}, {columns[1]})"] + [f"{ufunc}({out}, {c}, out={out})" for c in columns[2:]]


def _softmax(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    axis = lit(e.params[0])
    columns = _columns(a[0], e)
    if columns is not None:
        total = f"{out}_s"  # no program variable has an underscore in its name
        return [
            *_chain("np.maximum", out, columns),
            f"{out} = np.exp({a[0]} - {out})",
            *_chain("np.add", total, _columns(out, e) or []),
            f"{out} /= {total}",
        ]
    return [
        f"{out} = np.exp({a[0]} - np.maximum.reduce({a[0]}, axis={axis}, keepdims=True))",
        f"{out} /= np.add.reduce({out}, axis={axis}, keepdims=True)",
    ]


def _log_softmax(out: str, a: list[str], e: Equation, lit: Callable[[Any], str]) -> list[str]:
    axis = lit(e.params[0])
    columns = _columns(a[0], e)
    if columns is not None:
        exp, total = f"{out}_e", f"{out}_s"  # no program variable has an underscore in its name
        return [
            *_chain("np.maximum", out, columns),
            f"{out} = {a[0]} - {out}",
            f"{exp} = np.exp({out})",
            *_chain("np.add", total, _columns(exp, e) or []),
            f"{out} -= np.log({total})",
        ]
    return [
        f"{out} = {a[0]} - np.maximum.reduce({a[0]}, axis={axis}, keepdims=True)",
        f"{out} -= np.log(np.add.reduce(np.exp({out}), axis={axis}, keepdims=True))",
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
    **{op: _ufunc(op, fn) for op, fn in UFUNCS.items()},
    "matmul": lambda out, a, e, lit: [f"{out} = np.matmul({a[0]}, {a[1]})"],
    "affine": _affine,
    "sigmoid": _sigmoid,
    "relu": lambda out, a, e, lit: [f"{out} = np.maximum({a[0]}, 0.0)"],
    "clip": lambda out, a, e, lit: [f"{out} = np.clip({a[0]}, {lit(e.params[0])}, {lit(e.params[1])})"],
    "ge": lambda out, a, e, lit: [f"{out} = np.greater_equal({a[0]}, {a[1]}).astype(np.float64)"],
    "where": lambda out, a, e, lit: [f"{out} = np.where({lit(e.params[0])}, {a[0]}, {a[1]})"],
    "sum": _reduce("np.add"),
    "mean": _mean,
    "max": _reduce("np.maximum"),
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "reshape": lambda out, a, e, lit: [f"{out} = {a[0]}.reshape({lit(e.params[0])})"],
    "transpose": _transpose,
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


class Code(NamedTuple):
    """A program as Python: its parameters' names, the body (indented lines), the outputs as
    expressions, and the names the lines use besides their own (``np``, compiled-in values)."""

    parameters: list[str]
    lines: list[str]
    outputs: list[str]
    namespace: dict[str, Any]


def generate(program: Program) -> Code:
    """The program's code: one NumPy rule per equation (see :func:`compile_program`)."""
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

    lines = []
    reusable = _reusable(program)
    for k, e in enumerate(program.equations):
        rule = NUMPY.get(e.op)
        if rule is None:
            raise NotImplementedError(f"op {e.op!r} has no NumPy rule: add one to course_lib.codegen.NUMPY")
        code = rule(e.out.name, [atom(_as_number(a, e)) for a in e.args], e, lit)
        if k in reusable:  # write into a dying argument's buffer instead of allocating one
            code[-1] = f"{code[-1][:-1]}, out={reusable[k]})"
        lines += ["    " + line for line in code]
    # A result that may share memory with an input array is copied: the caller may change their array later.
    shared = {id(v) for v in program.inputs + program.constvars}
    shared.update(id(e.out) for e in program.equations if e.op in VIEWS and id(e.args[0]) in shared)
    outputs = [atom(o) + (".copy()" if id(o) in shared else "") for o in program.outputs]
    return Code([v.name for v in program.inputs + program.constvars], lines, outputs, namespace)


def compile_code(code: Code, name: str) -> tuple[Callable[..., tuple], str]:
    """``code`` as a Python function ``name`` of arrays returning a tuple of arrays, and its source."""
    body = "".join(line + "\n" for line in code.lines)
    outputs = "".join(o + ", " for o in code.outputs)
    source = f"def {name}({', '.join(code.parameters)}):\n{body}    return ({outputs})\n"
    namespace = dict(code.namespace)
    exec(compile(source, f"<jit {name}>", "exec"), namespace)
    return namespace[name], source


def compile_program(program: Program, name: str = "compiled") -> tuple[Callable[..., tuple], str]:
    """The program as a Python function of arrays returning a tuple of arrays, and its source."""
    return compile_code(generate(program), name)


def _as_number(x: Atom, e: Equation) -> Atom:
    """A constant array operand of ``+ - * /`` whose entries are all the same float, as that one
    number (0-d) when the other operand has the result's shape: the same IEEE operation on every
    entry, and NumPy multiplies by a number about twice as fast as by a broadcast column.
    Anything else as it is."""
    if e.op not in OPERATORS or isinstance(x, Var) or x.size < 2 or x.dtype != np.float64:
        return x
    other = e.args[1] if x is e.args[0] else e.args[0]
    bits = x.reshape(-1).view(np.int64)
    return x.reshape(-1)[0].reshape(()) if other.shape == e.out.shape and np.all(bits == bits[0]) else x


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
