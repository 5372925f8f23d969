"""What crosses between the judge and the student's process: plain data, and names of objects.

The judge (:mod:`course_grader.judge`) runs the tests; the runner (:mod:`course_grader.runner`)
runs the student's code in the sandbox. They talk over two pipes in newline-separated JSON
messages. A value crosses as **plain data** (None, bools, ints, floats, complex numbers,
strings, NumPy arrays of a numeric dtype, and lists, tuples, dicts, sets and deques of these, and
arrays of numbers of the ``array`` module), which the
receiver rebuilds from scratch, so an object of the student's can never pass itself off as a
number or an array. Anything else stays where it lives and crosses as a **handle**, a number
the other side uses to ask for operations on it (``{"$h": n}`` for the runner's objects,
``{"$r": n}`` for the judge's): :class:`course_grader.plain_data.Codec`.

Before that, the grader sends the judge its job (:class:`course_grader.handin.JudgeJob`) and the
judge sends the runner a :class:`Job`. Then messages, each one JSON object on one line:

* a request ``{"id": n, "op": OP, ...}``: the receiver does ``op`` and answers;
* a reply ``{"re": n, "value": V}`` or ``{"re": n, "error": {"type": T, "message": M}}``;
* an event ``{"event": NAME, ...}`` from the runner while it runs the notebook's cells.

Either side may send requests while it waits for a reply (a student's function calls a
function the test handed it), so both sides use the same
:class:`course_grader.endpoint.Endpoint`. This module, ``plain_data`` and ``endpoint`` use the
standard library and NumPy only: the runner imports them inside the sandbox.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any, Literal, TypedDict

import numpy as np

# Operations the judge asks of the runner's objects (and the runner of the judge's, where
# allowed): setup (what the set-up cells bound to a name), setglobal (bind a notebook name: the
# judge's reference solutions; with save, for a while), restoreglobal (what that replaced),
# getattr (the runner's, of the judge's objects), attribute (the judge's getattr: says "a
# method" instead of sending a bound method), callmethod, setattr, call, getitem, setitem, len,
# iter, contains, binop, unary, convert, isinstance, methods (a class's functions); settle (free
# the garbage and the allocator's memory before a measured call); standby (a forked copy of
# the student's process answers it and the next request, the measured call, and ends);
# recursionlimit (a test set the notebook's recursion limit).
BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor")
COMPARISONS = ("lt", "le", "gt", "ge")
UNARY = ("neg", "pos", "abs", "invert")
CONVERSIONS = ("float", "int", "bool", "complex", "index", "str", "repr", "array")
# What Python asks of an object's type, not of the object (``callable(f)``, ``hasattr(x,
# "__len__")``, ``isinstance(x, Iterable)``): a handle of the judge's says which its object's class
# has, and the runner's stand-in for it has those and no others, so that such checks answer there
# as in Jupyter (a test's function has no ``len``, a graph node cannot be called, NumPy keeps a
# node as an object in an array of them).
ABILITIES = {
    "c": "__call__",
    "g": "__getitem__",
    "l": "__len__",
    "i": "__iter__",
    "n": "__contains__",
    "f": "__float__",
    "t": "__int__",
    "x": "__index__",
    "o": "__complex__",
    "a": "__array__",
}


def abilities(cls: type) -> str:
    """The letters of :data:`ABILITIES` whose methods ``cls`` gives its instances (from its own
    and its bases' namespaces: ``getattr(cls, "__call__")`` is the class's own, from ``type``)."""
    found = {dunder: None for dunder in ABILITIES.values()}
    for klass in reversed(cls.__mro__):
        found.update((dunder, vars(klass)[dunder]) for dunder in found if dunder in vars(klass))
    return "".join(letter for letter, dunder in ABILITIES.items() if found[dunder] is not None)


# A handle's mark beside its abilities: an object of the judge's that the student's code made (an
# instance of a reference's class, or a copy it asked for), its own in Jupyter, so the attributes it
# sets go to that object (the test's objects are read-only: what it sets on them stays on its side).
MADE = "w"

# The kinds of Python's own attributes the runner may read of the judge's objects: a function's
# name, which honest code prints (``print(f"{f.__name__} at {x}")``), and its signature, which
# ``inspect.signature(f).bind(*args)`` reads (sent as :func:`course_grader.introspection.parameters`).
NAMES = ("__name__", "__qualname__", "__signature__")


def signature(parameters: list) -> Any:
    """The ``inspect.Signature`` that :func:`course_grader.introspection.parameters` describes."""
    from inspect import Parameter, Signature

    kinds = {
        int(kind): kind
        for kind in (
            Parameter.POSITIONAL_ONLY,
            Parameter.POSITIONAL_OR_KEYWORD,
            Parameter.VAR_POSITIONAL,
            Parameter.KEYWORD_ONLY,
            Parameter.VAR_KEYWORD,
        )
    }
    return Signature(
        [
            Parameter(str(name), kinds[kind], default=default if has else Parameter.empty)
            for name, kind, has, default in parameters
        ]
    )


# Events of the runner while it runs the cells (before it serves requests).
CELL_START = "cell-start"
CELL_END = "cell-end"
SETUP_FAILED = "setup-failed"
READY = "ready"

MAX_DEPTH = 64  # nesting of lists, tuples and dicts
MAX_MESSAGE = 64 * 1024**2  # bytes of one message
# Values of one message (counted by its brackets and commas before it is parsed): each costs
# the reader up to ~64 bytes twice (parsed, then rebuilt), so ~200 MB at most per message.
MAX_VALUES = 2_000_000
MAX_ELEMENTS = 8 * 1024**2  # entries of one array


class Job(TypedDict):
    """The first message to the runner: what to run before it serves requests."""

    cells: list[Cell]
    cell_timeout: float
    rlimits: dict[str, int]
    course_lib_parent: str
    answers: list[str]  # what the solution's answer cells bind: the student's, for set-up functions
    classes: list[str]  # the notebook's classes (module.qualname), which handles are described by


class Cell(TypedDict):
    name: str
    kind: Literal["setup", "answer", "extra", "reference", "test"]
    source: str


class CellOutcome(TypedDict, total=False):
    status: Literal["ok", "error", "timeout", "syntax"]
    error: str
    message: str


class ProtocolError(Exception):
    """The other side sent something that is not a message of this protocol."""


class ChannelClosed(Exception):
    """The other side's process ended (or closed its pipe) before it answered."""


class RemoteError(Exception):
    """An exception of the other side, of a type that has no builtin counterpart here."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind = kind


BUILTIN_ERRORS: dict[str, type[BaseException]] = {
    name: value for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, Exception)
}


def rebuild_error(kind: str, message: str) -> Exception:
    """The other side's exception, as a builtin exception of the same type where there is one."""
    cls = BUILTIN_ERRORS.get(kind)
    if cls is not None:
        try:
            return cls(message)  # type: ignore[return-value]
        except TypeError:  # exception types with special constructors
            pass
    return RemoteError(kind, message)


def convert(value: Any, to: str) -> Any:
    """``value`` as the plain type ``to`` names (one of ``CONVERSIONS``; ``array``: an array of numbers)."""
    if to == "array":
        array = np.asarray(value)
        if array.dtype == object:  # a sequence of objects, each a number (0-d Tensors): as np.asarray(x, float)
            try:
                array = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                raise TypeError(f"cannot turn {type(value).__name__} into an array of numbers") from None
        return np.array(array)
    if to == "index":
        return operator.index(value)
    plain: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "bool": bool, "complex": complex}
    plain.update(str=str, repr=repr)
    return plain[to](value)


def clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"
