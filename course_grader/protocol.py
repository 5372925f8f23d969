"""What crosses between the judge and the student's process: plain data, and names of objects.

The judge (:mod:`course_grader.judge`) runs the tests; the runner (:mod:`course_grader.runner`)
runs the student's code in the sandbox. They talk over two pipes in newline-separated JSON
messages. A value crosses as **plain data** (None, bools, ints, floats, complex numbers,
strings, NumPy arrays of a numeric dtype, and lists, tuples, dicts and sets of these), which the
receiver rebuilds from scratch, so an object of the student's can never pass itself off as a
number or an array. Anything else stays where it lives and crosses as a **handle**, a number
the other side uses to ask for operations on it (``{"$h": n}`` for the runner's objects,
``{"$r": n}`` for the judge's).

Before that, the grader sends the judge its job (:class:`course_grader.handin.JudgeJob`) and the
judge sends the runner a :class:`Job`. Then messages, each one JSON object on one line:

* a request ``{"id": n, "op": OP, ...}``: the receiver does ``op`` and answers;
* a reply ``{"re": n, "value": V}`` or ``{"re": n, "error": {"type": T, "message": M}}``;
* an event ``{"event": NAME, ...}`` from the runner while it runs the notebook's cells.

Either side may send requests while it waits for a reply (a student's function calls a
function the test handed it), so both sides use the same :class:`Endpoint`. This module uses
the standard library and NumPy only: the runner imports it inside the sandbox.
"""

from __future__ import annotations

import base64
import builtins
import collections
import copy
import functools
import json
import operator
import os
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any, Literal, TypedDict

import numpy as np

# Operations the judge asks of the runner's objects (and the runner of the judge's, where
# allowed): setup (what the set-up cells bound to a name), setglobal (bind a notebook name: the
# judge's reference solutions; with save, for a while), restoreglobal (what that replaced),
# getattr (the runner's, of the judge's objects), attribute (the judge's getattr: says "a
# method" instead of sending a bound method), callmethod, setattr, call, getitem, setitem, len,
# iter, contains, binop, unary, convert, isinstance, methods (a class's functions); settle (free
# the garbage and the allocator's memory before a measured call); standby (a forked copy of
# the student's process answers it and the next request, the measured call, and ends).
BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor")
COMPARISONS = ("lt", "le", "gt", "ge")
UNARY = ("neg", "pos", "abs", "invert")
CONVERSIONS = ("float", "int", "bool", "complex", "index", "str", "repr", "array")

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
ARRAY_DTYPES = {"f8": np.float64, "i8": np.int64, "b1": np.bool_, "c16": np.complex128}


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
        if array.dtype == object:
            raise TypeError(f"cannot turn {type(value).__name__} into an array of numbers")
        return np.array(array)
    if to == "index":
        return operator.index(value)
    plain: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "bool": bool, "complex": complex}
    plain.update(str=str, repr=repr)
    return plain[to](value)


def clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


class Codec:
    """Plain data by value, anything else by handle.

    ``mine`` is this side's table of objects it has handed out (handle number -> object);
    ``theirs`` turns a handle of the other side into a local stand-in (a proxy)."""

    def __init__(
        self, own_tag: str, other_tag: str, make_proxy: Callable[[int, str, str], Any], keep_proxies: bool = False
    ):
        self.own_tag, self.other_tag = own_tag, other_tag
        self.objects: dict[int, Any] = {}
        self.numbers: dict[int, int] = {}  # id(object) -> handle number
        self.counter = 0
        # Proxies live as long as this side uses them; then the other side may forget the object.
        # With ``keep_proxies`` they live as long as this side (the runner's stand-ins for the
        # test's objects: the same object read twice is the same stand-in, with the same id(),
        # even when the student's code kept only its id, as a Counter keyed by id(node) does).
        self.proxies: MutableMapping[int, Any] = {} if keep_proxies else weakref.WeakValueDictionary()
        self.make_proxy = make_proxy
        self.proxy_numbers: dict[int, int] = {}  # id(proxy) -> the other side's handle number
        self.unused: list[int] = []  # the other side's handles no proxy here stands for any more
        self.budget: int | None = None  # values an answer may still hold, while one is encoded
        # Writeable arrays crossing as a call's arguments, in order, while they are encoded
        # (the judge's originals) or decoded (the runner's copies, with their contents then):
        # what the student's code changes in them is written back (:class:`InPlace`).
        self.arrays: list | None = None

    def setup_function(self, name: str) -> Any:
        raise ProtocolError("no set-up functions on this side")

    def handle(self, obj: Any) -> int:
        number = self.numbers.get(id(obj))
        if number is None:
            self.counter += 1
            number = self.counter
            self.objects[number] = obj
            self.numbers[id(obj)] = number
        return number

    def forget(self, numbers: Any) -> None:
        """The other side no longer uses these handles of ours."""
        for number in numbers if type(numbers) is list else ():
            obj = self.objects.pop(number, None) if type(number) is int else None
            if obj is not None:
                self.numbers.pop(id(obj), None)

    def proxy(self, number: int, kind: str = "", like: str = "") -> Any:
        proxy = self.proxies.get(number)
        if proxy is None:
            proxy = self.make_proxy(number, kind, like)
            self.proxies[number] = proxy
            self.proxy_numbers[id(proxy)] = number
            if number in self.unused:
                self.unused.remove(number)
            if isinstance(self.proxies, weakref.WeakValueDictionary):
                weakref.finalize(proxy, self._unused, number, id(proxy))
        return proxy

    def _unused(self, number: int, key: int) -> None:
        self.proxy_numbers.pop(key, None)
        if number not in self.proxies:
            self.unused.append(number)

    def encode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"a value nested deeper than {MAX_DEPTH} levels cannot be sent")
        if self.budget is not None:
            self.budget -= 1
            if self.budget < 0:
                raise ValueError(f"a value too large to send: more than {MAX_VALUES:,} numbers, lists or other values")
        number = self.proxy_numbers.get(id(value))
        if number is not None and self.proxies.get(number) is value:
            return {self.other_tag: number}
        kind = type(value)
        if value is None or kind in (bool, str):
            return value
        if kind is int:
            return value if abs(value) < 2**63 else {"$big": str(value)}
        if kind is float:
            return value if value == value and abs(value) != float("inf") else {"$f": repr(value)}
        if isinstance(value, np.generic) and value.dtype.kind in "biufc":
            code = {"b": "b1", "i": "i8", "u": "i8", "f": "f8", "c": "c16"}[value.dtype.kind]
            return {"$ns": [code, self.encode(value.item(), depth + 1)]}
        if kind is complex:
            return {"$c": [self.encode(value.real), self.encode(value.imag)]}
        if kind is list:
            return [self.encode(v, depth + 1) for v in value]
        if kind is tuple:
            return {"$t": [self.encode(v, depth + 1) for v in value]}
        if kind in (set, frozenset):
            return {"$s": [self.encode(v, depth + 1) for v in value]}
        if kind is dict:
            return {"$d": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in value.items()]}
        if kind is np.ndarray and value.dtype.kind in "biufc" and value.dtype != object:
            if self.arrays is not None and value.flags.writeable:
                self.arrays.append(value)
            code = {"b": "b1", "i": "i8", "u": "i8", "f": "f8", "c": "c16"}[value.dtype.kind]
            data: np.ndarray = np.array(value, dtype=ARRAY_DTYPES[code], order="C")
            return {
                "$nd": [code, list(data.shape), base64.b64encode(data.tobytes()).decode(), bool(value.flags.writeable)]
            }
        if self.own_tag == "$h" and (plain := self.plain_container(value)) is not None:
            if isinstance(value, dict) and (default := _default_of(value)) is not None:
                # a Counter or defaultdict: a test reading a key it lacks gets what it would get
                return {"$dd": [self.encode(default[0], depth + 1), self.encode(plain, depth + 1)]}
            return self.encode(plain, depth)
        return self.by_handle(value)

    def plain_container(self, value: Any) -> Any:
        """A student's container of a type of its own (a named tuple, an OrderedDict, a dict or
        list subclass) as the plain container of its items: a test reads it as data, as it reads
        a plain one (``isinstance(grads, dict)``). None for anything else, and for course_lib's
        and the notebook's classes, which stay themselves."""
        kind = type(value)
        if kind.__module__.split(".")[0] == "course_lib" or f"{kind.__module__}.{kind.__qualname__}" in getattr(
            self, "classes", ()
        ):
            return None
        base = next((b for b in (dict, list, tuple, set, frozenset) if issubclass(kind, b)), None)
        if base is dict:  # read as a test reads it: through the class's own __getitem__
            return {key: value[key] for key in value}
        return base(value) if base is not None else None

    def by_handle(self, value: Any) -> dict:
        """``value`` sent as a handle (with what this side says of it), never by value."""
        number = self.handle(value)
        described = self.kind(value)
        return {self.own_tag: [number, *described] if described else number}

    def kind(self, value: Any) -> list[str]:
        """What a handle of ours says about its object: nothing, or its class and the class it
        is to be taken for (:func:`described`)."""
        return []

    def decode(self, data: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ProtocolError(f"a value nested deeper than {MAX_DEPTH} levels")
        kind = type(data)
        if data is None or kind in (bool, int, float, str):
            return data
        if kind is list:
            return [self.decode(v, depth + 1) for v in data]
        if kind is not dict or len(data) != 1:
            raise ProtocolError(f"not a value: {type(data).__name__}")
        ((tag, body),) = data.items()
        if tag == "$t":
            return tuple(self.decode(v, depth + 1) for v in _list(body))
        if tag == "$s":
            return {self.decode(v, depth + 1) for v in _list(body)}
        if tag == "$dd":  # a dict whose missing keys read as a value (a Counter's 0): a defaultdict here
            default, items = (self.decode(v, depth + 1) for v in _list(body))
            if type(items) is not dict:
                raise ProtocolError("a dict with a default and no dict")
            return collections.defaultdict(functools.partial(copy.deepcopy, default), items)
        if tag == "$d":
            pairs = [_list(p) for p in _list(body)]
            if any(len(p) != 2 for p in pairs):
                raise ProtocolError("a dict entry is not a pair")
            return {self.decode(k, depth + 1): self.decode(v, depth + 1) for k, v in pairs}
        if tag == "$c":
            re, im = (float(self.decode(v, depth + 1)) for v in _list(body))
            return complex(re, im)
        if tag == "$f":
            if body not in ("nan", "inf", "-inf"):
                raise ProtocolError("not a special float")
            return float(body)
        if tag == "$big":
            return int(_str(body)[:5000])
        if tag == "$nd":
            array = _array(body)
            if self.arrays is not None and array.flags.writeable:
                self.arrays.append((array, array.copy()))
            return array
        if tag == "$ns":  # a NumPy scalar (it has .shape, .ndim, .item() as the student's had)
            code, item = _list(body)
            if code not in ARRAY_DTYPES or type(item) not in (bool, int, float, dict):
                raise ProtocolError("a malformed NumPy scalar")
            return ARRAY_DTYPES[code](self.decode(item, depth + 1))
        if tag == "$fn" and self.own_tag == "$h":  # a function of the notebook's set-up cells
            return self.setup_function(_str(body))
        if tag == "$T" and self.own_tag == "$h":  # a Tensor the judge sends by value
            from course_lib.tensor import Tensor

            data, requires_grad = _list(body)
            array = self.decode(data, depth + 1)
            if type(array) is not np.ndarray:
                raise ProtocolError("a Tensor without an array")
            return Tensor(array, requires_grad=requires_grad is True)
        if tag == self.own_tag:
            if type(body) is not int or body not in self.objects:
                raise ProtocolError("a handle this side never gave out")
            return self.objects[body]
        if tag == self.other_tag:
            number, cls, like = (body, "", "") if type(body) is int else (_list(body) + ["", ""])[:3]
            if type(number) is not int or number <= 0 or any(type(n) is not str or len(n) > 300 for n in (cls, like)):
                raise ProtocolError("a malformed handle")
            return self.proxy(number, cls, like)
        raise ProtocolError(f"unknown tag {tag!r}")


def _default_of(mapping: dict) -> tuple[Any] | None:
    """What reading a missing key of ``mapping`` gives, as (value,), where that is the same
    every time and plain: a Counter's 0, a defaultdict's ``default_factory()``."""
    if isinstance(mapping, collections.Counter):
        return (0,)
    factory = getattr(mapping, "default_factory", None) if isinstance(mapping, collections.defaultdict) else None
    if factory is None:
        return None
    default = factory()
    return (default,) if _plain(default) else None


def _plain(value: Any) -> bool:
    kind = type(value)
    if value is None or kind in (bool, int, float, complex, str):
        return True
    if kind in (list, tuple, set, frozenset):
        return all(_plain(v) for v in value)
    return kind is dict and all(_plain(k) and _plain(v) for k, v in value.items())


def described(value: Any, notebook_classes: set[str]) -> list[str]:
    """The class of ``value`` and, where that class is neither course_lib's nor one of the
    notebook's (``module.qualname``), its first base class that is: a student's ``class
    PrunedProgram(Program)`` is taken for a Program, as ``isinstance`` takes it in Jupyter."""
    exact = f"{type(value).__module__}.{type(value).__qualname__}"
    for cls in type(value).__mro__:
        name = f"{cls.__module__}.{cls.__qualname__}"
        if cls.__module__.split(".")[0] == "course_lib" or name in notebook_classes:
            return [exact] if name == exact else [exact, name]
    return [exact]


def _list(value: Any) -> list:
    if type(value) is not list:
        raise ProtocolError("expected a list")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise ProtocolError("expected a string")
    return value


def _array(body: Any) -> np.ndarray:
    code, shape, text, writeable = _list(body)
    if code not in ARRAY_DTYPES or type(shape) is not list or any(type(s) is not int or s < 0 for s in shape):
        raise ProtocolError("a malformed array")
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if size > MAX_ELEMENTS or len(shape) > 32:
        raise ProtocolError(f"an array of more than {MAX_ELEMENTS} entries")
    raw = base64.b64decode(_str(text), validate=True)
    dtype = np.dtype(ARRAY_DTYPES[code])
    if len(raw) != size * dtype.itemsize:
        raise ProtocolError("an array whose data does not fit its shape")
    if writeable:
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    # Over immutable bytes: no one can make it writeable again (setflags(write=True) fails).
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


Handler = Callable[[dict], Any]


class Endpoint:
    """One side of the conversation: send requests, wait for replies, serve the other side's
    requests that arrive meanwhile (with ``serve``)."""

    def __init__(self, read_fd: int, write_fd: int, codec: Codec, serve: Handler):
        self.reader = os.fdopen(read_fd, "rb", buffering=65536)
        self.writer = os.fdopen(write_fd, "wb", buffering=0)
        self.codec = codec
        self.serve = serve
        self.counter = 0  # requests sent
        self.served = 0
        self.debug = False  # print the tracebacks of failed requests (on stderr)

    def send(self, message: dict) -> None:
        self.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def write(self, data: bytes) -> None:
        try:
            self.writer.write(data)
        except (BrokenPipeError, OSError) as error:
            raise ChannelClosed(str(error)) from None

    def receive(self) -> dict:
        line = self.reader.readline(MAX_MESSAGE + 1)
        if not line:
            raise ChannelClosed("the other side closed the channel")
        if len(line) > MAX_MESSAGE or not line.endswith(b"\n"):
            raise ProtocolError(f"a message longer than {MAX_MESSAGE} bytes")
        if too_large(line):
            raise ProtocolError(f"a message of more than {MAX_VALUES:,} values")
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise ProtocolError("a message that is not JSON") from None
        except MemoryError:
            raise ProtocolError("a message too large to read in the grader's memory") from None
        if type(message) is not dict:
            raise ProtocolError("a message that is not a JSON object")
        return message

    def request(self, op: str, write_back: list | None = None, **fields: Any) -> Any:
        """Ask the other side to do ``op``; serve its own requests until the reply comes.

        ``write_back``: the writeable arrays the request's arguments hold (``Codec.arrays``),
        which get what the other side's code wrote into its copies of them, as a call in one
        process would leave them."""
        self.counter += 1
        number = self.counter
        if self.codec.unused:
            fields["free"], self.codec.unused = self.codec.unused, []
        self.send({"id": number, "op": op, **fields})
        while True:
            message = self.receive()
            if "op" in message:
                self.answer(message)
                continue
            if message.get("re") != number:
                raise ProtocolError("a reply to a request that was not asked")
            if "error" in message:
                error = message["error"]
                if type(error) is not dict:
                    raise ProtocolError("a malformed error")
                raise rebuild_error(clip(str(error.get("type", "Error")), 100), clip(str(error.get("message", ""))))
            if write_back and type(message.get("changed")) is list:
                self._write_back(write_back, message["changed"])
            return self.codec.decode(message.get("value"))

    def _write_back(self, arrays: list, changed: list) -> None:
        for entry in changed:
            index, data = _list(entry)
            new = self.codec.decode(data)
            if type(index) is int and 0 <= index < len(arrays) and type(new) is np.ndarray:
                if new.shape == arrays[index].shape:
                    np.copyto(arrays[index], new, casting="unsafe")

    def answer(self, message: dict) -> None:
        """Serve one request of the other side and send the reply."""
        number = message.get("id")
        self.served += 1
        if "free" in message:
            self.codec.forget(message["free"])
        try:
            result = self.serve(message)
            if result is ANSWERED:
                return
            changed = []
            if isinstance(result, InPlace):
                result, changed = result.value, result.changed
            self.codec.budget = MAX_VALUES // 2  # a value may take two brackets or commas
            try:
                reply = {"re": number, "value": self.codec.encode(result)}
                if changed:
                    reply["changed"] = [[k, self.codec.encode(a)] for k, a in changed]
            finally:
                self.codec.budget = None
            data = json.dumps(reply, separators=(",", ":")).encode() + b"\n"
            if len(data) > MAX_MESSAGE or too_large(data):
                raise ValueError(
                    f"a value too large to send ({len(data):,} bytes; at most {MAX_MESSAGE:,} bytes "
                    f"and {MAX_VALUES:,} numbers, lists or other values in one answer)"
                )
        except (ChannelClosed, ProtocolError):
            raise
        except BaseException as error:  # noqa: BLE001 - every failure is the other side's answer
            kind = type(error).__name__
            if self.debug:
                import traceback

                traceback.print_exc()
            self.send({"re": number, "error": {"type": kind, "message": clip(_message(error))}})
            if _fatal(error):
                raise
            return
        self.write(data)


ANSWERED = object()  # a request answered by another process (a forked copy): no reply from here


class InPlace:
    """A call's result, with the argument arrays the call changed: (their index among the
    writeable arrays of the arguments, their contents now)."""

    def __init__(self, value: Any, arrays: list[tuple[np.ndarray, np.ndarray]]):
        self.value = value
        self.changed = [
            (k, now)
            for k, (now, before) in enumerate(arrays)
            if now.shape != before.shape or now.tobytes() != before.tobytes()
        ]


def too_large(data: bytes) -> bool:
    """Whether a message holds more than ``MAX_VALUES`` values (an upper bound: its brackets
    and commas, counted without parsing it)."""
    return data.count(b",") + data.count(b"[") + data.count(b"{") > MAX_VALUES


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a student's exception whose __str__ fails
        return "(an exception whose message could not be read)"


def _fatal(error: BaseException) -> bool:
    """Errors that must still end the serving side (the judge's time limit)."""
    return type(error).__name__ == "CellTimeout"
