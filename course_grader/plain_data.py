"""How a value crosses between the judge and the runner: plain data by value, anything else by
handle (:mod:`course_grader.protocol`)."""

from __future__ import annotations

import array
import base64
import collections
import copy
import functools
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any

import numpy as np

from course_grader.protocol import ABILITIES, MADE, MAX_DEPTH, MAX_ELEMENTS, MAX_VALUES, ProtocolError

MAX_KEPT_BYTES = 64 * 1024**2  # of the arrays a side keeps while it serves a call (Codec.kept)

ARRAY_DTYPES = {"f8": np.float64, "i8": np.int64, "b1": np.bool_, "c16": np.complex128}
# A NumPy scalar crosses as the type it is (its dtype's character code): a float32 or long double
# is no Python float in Jupyter, where ``isinstance(accuracy(...), float)`` fails (graded, as a
# float64, it passed: ps08, test_hostile_sixth_ps03_ps06_ps08.py).
SCALAR_TYPES = (
    {np.dtype(t).char: t for t in (np.bool_, np.float16, np.float32, np.float64, np.longdouble)}
    | {np.dtype(t).char: t for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)}
    | {np.dtype(t).char: t for t in (np.complex64, np.complex128, np.clongdouble)}
)
NUMBER_CODES = "bBhHiIlLqQfd"  # the typecodes of the array module's arrays of numbers


class Codec:
    """Plain data by value, anything else by handle.

    ``mine`` is this side's table of objects it has handed out (handle number -> object);
    ``theirs`` turns a handle of the other side into a local stand-in (a proxy)."""

    def __init__(
        self, own_tag: str, other_tag: str, make_proxy: Callable[[int, str, str, str], Any], keep_proxies: bool = False
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
        # what the student's code changes in them is written back (:class:`course_grader.endpoint.InPlace`).
        self.arrays: list | None = None
        # While not None, the arrays of the other side read so far, by the id it sent: one read
        # again unchanged is the same array here too (:meth:`kept_array`).
        self.kept: dict[int, np.ndarray] | None = None
        self.kept_bytes = 0

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

    def proxy(self, number: int, kind: str = "", like: str = "", able: str = "") -> Any:
        proxy = self.proxies.get(number)
        if proxy is None:
            proxy = self.make_proxy(number, kind, like, able)
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
            code = value.dtype.char if value.dtype.char in SCALAR_TYPES else "?lLdD"["biufc".index(value.dtype.kind)]
            # Python's own number (a long double's item() is itself: it was sent over and over)
            item = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[value.dtype.kind](value)
            return {"$ns": [code, self.encode(item, depth + 1)]}
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
        # The standard library's other containers of plain data, rebuilt as they are (ps13's checkpoints
        # in a deque, or each in an array("d"), came back from a measured call, whose copy then ends)
        if kind is collections.deque:
            return {"$q": [[self.encode(v, depth + 1) for v in value], value.maxlen]}
        if kind is array.array and value.typecode in NUMBER_CODES:
            return {"$a": [value.typecode, [self.encode(v, depth + 1) for v in value]]}
        if kind is np.ndarray and value.dtype.kind in "biufc" and value.dtype != object:
            if self.arrays is not None and value.flags.writeable:
                self.arrays.append(value)
            code = {"b": "b1", "i": "i8", "u": "i8", "f": "f8", "c": "c16"}[value.dtype.kind]
            data: np.ndarray = np.array(value, dtype=ARRAY_DTYPES[code], order="C")
            return {
                "$nd": [
                    code,
                    list(data.shape),
                    base64.b64encode(data.tobytes()).decode(),
                    bool(value.flags.writeable),
                    id(value),  # which array it is (see ``kept``)
                ]
            }
        if self.own_tag == "$h" and (plain := self.plain_container(value)) is not None:
            if isinstance(value, dict) and (default := _default_of(value)) is not None:
                # a Counter or defaultdict: a test reading a key it lacks gets what it would get
                return {"$dd": [self.encode(default[0], depth + 1), self.encode(plain, depth + 1)]}
            return self.encode(plain, depth)
        return self.by_handle(value)

    def kept_array(self, array: np.ndarray, ident: list) -> np.ndarray:
        """``array`` as read before, where the other side's array is the same (its id) and unchanged:
        code that keeps ids of arrays between two reads of an object of the other side's (course_lib's
        ``show`` naming a program's constants) finds them again, as in one process."""
        if self.kept is None or len(ident) != 1 or type(ident[0]) is not int:
            return array
        was = self.kept.get(ident[0])
        if was is not None and (was.dtype, was.shape, was.flags.writeable) == (
            array.dtype,
            array.shape,
            array.flags.writeable,
        ):
            if was.tobytes() == array.tobytes():
                return was
        self.kept_bytes += array.nbytes
        if self.kept_bytes > MAX_KEPT_BYTES:  # held for a while only: a bound on the memory held
            self.kept.clear()
            self.kept_bytes = array.nbytes
        self.kept[ident[0]] = array
        return array

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
        if issubclass(kind, np.ndarray):  # a subclass of ndarray (np.matrix, their Gradient): its numbers
            numbers = np.ndarray.view(value, np.ndarray)  # ndarray's own view: never theirs
            if numbers.dtype.names:  # a structured array (ps13's checkpoints as records): its records, as tuples
                records = numbers.tolist()
                return records if _plain(records) else None
            return numbers if numbers.dtype.kind in "biufc" else None
        number = next((b for b in (float, int, complex, str) if issubclass(kind, b)), None)
        if number is not None:  # a float subclass of theirs: the number it holds, as isinstance takes it
            return getattr(number, f"__{number.__name__}__")(value)
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
            return tuple(self.decode(v, depth + 1) for v in checked_list(body))
        if tag == "$s":
            return {self.decode(v, depth + 1) for v in checked_list(body)}
        if tag == "$dd":  # a dict whose missing keys read as a value (a Counter's 0): a defaultdict here
            default, items = (self.decode(v, depth + 1) for v in checked_list(body))
            if type(items) is not dict:
                raise ProtocolError("a dict with a default and no dict")
            return collections.defaultdict(functools.partial(copy.deepcopy, default), items)
        if tag == "$d":
            pairs = [checked_list(p) for p in checked_list(body)]
            if any(len(p) != 2 for p in pairs):
                raise ProtocolError("a dict entry is not a pair")
            return {self.decode(k, depth + 1): self.decode(v, depth + 1) for k, v in pairs}
        if tag in ("$q", "$a"):
            return _container(tag, checked_list(body), lambda items: [self.decode(v, depth + 1) for v in items])
        if tag == "$c":
            re, im = (float(self.decode(v, depth + 1)) for v in checked_list(body))
            return complex(re, im)
        if tag == "$f":
            if body not in ("nan", "inf", "-inf"):
                raise ProtocolError("not a special float")
            return float(body)
        if tag == "$big":
            return int(checked_str(body)[:5000])
        if tag == "$nd":
            array = self.kept_array(_array(body), checked_list(body)[4:])
            if self.arrays is not None and array.flags.writeable:
                self.arrays.append((array, array.copy()))
            return array
        if tag == "$ns":  # a NumPy scalar (it has .shape, .ndim, .item() as the student's had)
            code, item = checked_list(body)
            if code not in SCALAR_TYPES or type(item) not in (bool, int, float, dict):
                raise ProtocolError("a malformed NumPy scalar")
            number = self.decode(item, depth + 1)
            try:
                return SCALAR_TYPES[code](number)
            except (OverflowError, TypeError, ValueError):  # out of its type's range: made by hand
                raise ProtocolError("a malformed NumPy scalar") from None
        if tag == "$fn" and self.own_tag == "$h":  # a function of the notebook's set-up cells
            return self.setup_function(checked_str(body))
        if tag == "$T" and self.own_tag == "$h":  # a Tensor the judge sends by value
            from course_lib.tensor import Tensor

            data, requires_grad = checked_list(body)
            array = self.decode(data, depth + 1)
            if type(array) is not np.ndarray:
                raise ProtocolError("a Tensor without an array")
            return Tensor(array, requires_grad=requires_grad is True)
        if tag == self.own_tag:
            if type(body) is not int or body not in self.objects:
                raise ProtocolError("a handle this side never gave out")
            return self.objects[body]
        if tag == self.other_tag:
            fields: list[Any] = [body] if type(body) is int else checked_list(body)
            number, cls, like, able = (fields + ["", "", ""])[:4]
            if type(number) is not int or number <= 0 or any(type(n) is not str or len(n) > 300 for n in (cls, like)):
                raise ProtocolError("a malformed handle")
            if type(able) is not str or not set(able) <= {*ABILITIES, MADE}:
                raise ProtocolError("a handle's abilities are letters of ABILITIES (or MADE)")
            return self.proxy(number, cls, like, able)
        raise ProtocolError(f"unknown tag {tag!r}")


def _container(tag: str, fields: list, decode: Callable[[list], list]) -> Any:
    """A deque (``$q``: its items and maxlen) or an array of the array module (``$a``: its typecode
    and items), rebuilt."""
    if len(fields) != 2:
        raise ProtocolError("a malformed container")
    first, second = fields
    if tag == "$q" and (second is None or type(second) is int and second >= 0):
        return collections.deque(decode(checked_list(first)), second)
    if tag == "$a" and type(first) is str and len(first) == 1 and first in NUMBER_CODES:
        try:
            return array.array(first, decode(checked_list(second)))
        except (TypeError, OverflowError):
            raise ProtocolError("an array whose items do not fit its typecode") from None
    raise ProtocolError("a malformed container")


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


def described(value: Any, notebook_classes: set[str], bound: dict[str, Any] | None = None) -> list[str]:
    """The class of ``value`` and, where that class is neither course_lib's nor one of the
    notebook's (``module.qualname``), its first base class that is: a student's ``class
    PrunedProgram(Program)`` is taken for a Program, as ``isinstance`` takes it in Jupyter. With
    ``bound`` (the notebook's names), a class bound to a notebook class's name is taken for it:
    ``MyDual = DualNumber`` is the student's ``MyDual`` (its objects lost ps02's part 1, 0/3)."""
    exact = f"{type(value).__module__}.{type(value).__qualname__}"
    for cls in type(value).__mro__:
        name = f"{cls.__module__}.{cls.__qualname__}"
        if cls.__module__.split(".")[0] == "course_lib" or name in notebook_classes:
            return [exact] if name == exact else [exact, name]
    for name in sorted(notebook_classes) if bound is not None else ():
        named = (bound or {}).get(name.rpartition(".")[2])
        if name.startswith("__main__.") and isinstance(named, type) and issubclass(type(value), named):
            return [exact, name]
    return [exact]


def checked_list(value: Any) -> list:
    if type(value) is not list:
        raise ProtocolError("expected a list")
    return value


def checked_str(value: Any) -> str:
    if type(value) is not str:
        raise ProtocolError("expected a string")
    return value


def _array(body: Any) -> np.ndarray:
    fields = checked_list(body)
    if len(fields) not in (4, 5):
        raise ProtocolError("a malformed array")
    code, shape, text, writeable = fields[:4]
    if code not in ARRAY_DTYPES or type(shape) is not list or any(type(s) is not int or s < 0 for s in shape):
        raise ProtocolError("a malformed array")
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if size > MAX_ELEMENTS or len(shape) > 32:
        raise ProtocolError(f"an array of more than {MAX_ELEMENTS} entries")
    raw = base64.b64decode(checked_str(text), validate=True)
    dtype = np.dtype(ARRAY_DTYPES[code])
    if len(raw) != size * dtype.itemsize:
        raise ProtocolError("an array whose data does not fit its shape")
    if writeable:
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    # Over immutable bytes: no one can make it writeable again (setflags(write=True) fails).
    return np.frombuffer(raw, dtype=dtype).reshape(shape)
