"""The judge's side of the conversation with the student's process (:mod:`course_grader.judge`).

:class:`Remote` stands, in the judge, for an object of the student's process: every operation
on it is a request to the runner, whose answers arrive as plain data or as another ``Remote``.
:func:`serve` answers the runner's requests on the judge's own objects (the test's inputs, a
function to differentiate, a reference solution standing in for an earlier part), which are
read-only there: only what a test hands over (:func:`grant`) or a reference's code may be called.
"""

from __future__ import annotations

import copy
import itertools
import operator
import sys
import types
from collections.abc import Callable
from typing import Any

from course_grader import introspection
from course_grader.endpoint import Endpoint
from course_grader.introspection import A_HIDDEN_FUNCTION, attribute, by_their_names, named_in_hidden_test, settable
from course_grader.plain_data import Codec, described
from course_grader.protocol import (
    BINARY,
    COMPARISONS,
    CONVERSIONS,
    MADE,
    UNARY,
    ProtocolError,
    abilities,
    convert,
)
from course_grader.reference_classes import A_CLASS

CHANNEL: Endpoint  # to the student's process of the part being judged


def connect(channel: Endpoint) -> None:
    """Judge the next part over ``channel``."""
    global CHANNEL
    CHANNEL = channel


class Remote:
    """An object of the student's process, as the test sees it.

    Every operation is a request to the runner; results arrive as plain data or as another
    ``Remote``. Identity is this process's: two handles of one object are the same ``Remote``,
    so ``is``, ``==`` between handles, hashing and dict keys behave as for the objects
    themselves. Comparisons with plain values go through the number the student's object
    turns into (``float``), so a rigged ``__eq__`` has nothing to say."""

    __slots__ = ("__n", "__kind", "__like", "__weakref__")

    def __init__(self, number: int, kind: str = "", like: str = ""):
        object.__setattr__(self, "_Remote__n", number)
        object.__setattr__(self, "_Remote__kind", kind)  # its class, as the runner says
        object.__setattr__(self, "_Remote__like", like or kind)  # the course's class it derives from

    def __ask(self, op: str, **fields: Any) -> Any:
        fields.setdefault("target", {"$h": object.__getattribute__(self, "_Remote__n")})
        return CHANNEL.request(op, **fields)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        key = (object.__getattribute__(self, "_Remote__kind"), name)
        if key not in METHODS:
            is_method, value = self.__ask("attribute", name=name)
            if not is_method:
                return value
            METHODS.add(key)  # calls go by name from now on: one request each, not two
        return RemoteMethod(self, name)

    @property  # type: ignore[misc]  # isinstance() consults __class__: see below
    def __class__(self) -> type:
        """The judge's course_lib class of that name, for an object of a course_lib class or of
        a class derived from one (a student's ``PrunedProgram(Program)``), so that
        ``isinstance(y, Program)`` in a test means what it says (``type()`` still says Remote).
        Any other object is a Remote."""
        return course_lib_class(object.__getattribute__(self, "_Remote__like")) or Remote

    def __setattr__(self, name: str, value: Any) -> None:
        self.__ask("setattr", name=name, value=grant(value))

    def __copy__(self) -> Any:  # copied where it lives, as in one process (in a copy of a test's object)
        return self.__ask("copy", deep=False)

    def __deepcopy__(self, memo: dict) -> Any:  # theirs shared in it copied once (one memo there too)
        return self.__ask("copy", deep=True, memo=memo.setdefault("$copy", next(DEEP_COPIES)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arrays, (args_data, kwargs_data) = granted_arguments(args, kwargs)
        return self.__ask("call", args=args_data, kwargs=kwargs_data, write_back=arrays)

    def __getitem__(self, key: Any) -> Any:
        return self.__ask("getitem", key=send(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__ask("setitem", key=send(key), value=grant(value))

    def __len__(self) -> int:
        return operator.index(self.__ask("len"))

    def __iter__(self):
        return iter(self.__ask("iter"))

    def __contains__(self, item: Any) -> bool:
        return self.__ask("contains", item=send(item)) is True

    def __instancecheck__(self, obj: Any) -> bool:
        return self.__ask("isinstance", item=send(obj)) is True

    def __convert(self, to: str) -> Any:
        value = self.__ask("convert", to=to)
        expected = {"float": float, "int": int, "bool": bool, "complex": complex, "index": int, "str": str, "repr": str}
        if to in expected and type(value) is not expected[to]:
            raise TypeError(f"the student's object gave a {type(value).__name__} for {to}()")
        return value

    def __float__(self) -> float:
        return self.__convert("float")

    def __int__(self) -> int:
        return self.__convert("int")

    def __index__(self) -> int:
        return self.__convert("index")

    def __complex__(self) -> complex:
        return self.__convert("complex")

    def __bool__(self) -> bool:
        return self.__convert("bool")

    def __repr__(self) -> str:
        return self.__placeholder() if HIDDEN[0] else self.__convert("repr")

    def __str__(self) -> str:
        return self.__placeholder() if HIDDEN[0] else self.__convert("str")

    def __placeholder(self) -> str:
        """What a hidden test's message shows of the student's object: text the judge makes,
        naming the object's class only where that is the course's (a student's ``__repr__``
        or class name could carry a forged note to the grader)."""
        like = object.__getattribute__(self, "_Remote__like")
        known = course_lib_class(like) is not None or like in ARITHMETIC
        return f"<your object of type {like.rpartition('.')[2]}>" if known else "<your object>"

    def __format__(self, spec: str) -> str:
        return format(self.__float__(), spec) if spec else self.__str__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        value = self.__convert("array")
        if type(value) is not np.ndarray:
            raise TypeError("the student's object did not give an array of numbers")
        return value.astype(dtype) if dtype is not None else value

    def __eq__(self, other: Any) -> Any:
        return self is other if isinstance(other, Remote) else NotImplemented

    def __ne__(self, other: Any) -> Any:
        return self is not other if isinstance(other, Remote) else NotImplemented

    __hash__ = object.__hash__

    def __lt__(self, other: Any) -> Any:
        return self.__float__() < other

    def __le__(self, other: Any) -> Any:
        return self.__float__() <= other

    def __gt__(self, other: Any) -> Any:
        return self.__float__() > other

    def __ge__(self, other: Any) -> Any:
        return self.__float__() >= other


DEEP_COPIES = itertools.count(1)  # the judge's deepcopies of objects holding the student's
METHODS: set[tuple[str, str]] = set()  # (class, name): the attributes that are methods
ARITHMETIC: set[str] = set()  # the notebook's classes: their operators run in the student's process
SERVING = [0]  # > 0 while the judge runs a function the student's code called
HIDDEN = [False]  # True while the hidden tests run: no text of the student's process is read


def course_lib_class(name: str) -> type | None:
    """The judge's course_lib class called ``name`` (``module.qualname``), if there is one."""
    module, _, qualname = name.rpartition(".")
    if module.split(".")[0] == "course_lib" and module in sys.modules:
        found = getattr(sys.modules[module], qualname, None)
        if isinstance(found, type):
            return found
    return None


class RemoteMethod:
    """A method of one of the student's objects: calling it is one request (by name, so the
    object's current method is the one called)."""

    __slots__ = ("owner", "name")

    def __init__(self, owner: Remote, name: str):
        self.owner, self.name = owner, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = {"$h": object.__getattribute__(self.owner, "_Remote__n")}
        arrays, (args_data, kwargs_data) = granted_arguments(args, kwargs)
        return CHANNEL.request(
            "callmethod", target=target, name=self.name, args=args_data, kwargs=kwargs_data, write_back=arrays
        )

    def __repr__(self) -> str:
        return f"<method {self.name} of {self.owner!r}>"


class TheirMethod:
    """One of the student's own methods (a function on their class, put there by any of their
    cells) on the reference class that stands in for theirs (:mod:`course_grader.their_methods`):
    calling it calls their function in their process, with the arguments read-only there, as
    their code would call it in Jupyter. Bound as a method, a class method or a static method, or
    read as a property (``kind``), like the student's; never a data descriptor, so an instance's own
    attributes win."""

    __slots__ = ("function", "kind")

    def __init__(self, function: Remote, kind: str):
        self.function, self.kind = function, kind

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if self.kind == "class":
            return types.MethodType(self, objtype if objtype is not None else type(obj))
        if self.kind == "property":  # their getter, called on the object
            return self if obj is None else self(obj)
        return self if obj is None or self.kind == "static" else types.MethodType(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arrays, (args_data, kwargs_data) = written_back(args, kwargs, send)
        return CHANNEL.request(
            "call", target=send(self.function), args=args_data, kwargs=kwargs_data, write_back=arrays
        )


def _operates_there(remote: Remote) -> bool:
    """Whether an operator on ``remote`` runs in the student's process: for objects of the
    notebook's own classes (a dual number, a Value), and for anything while the student's
    code is being served (a function to differentiate builds on its arguments). Otherwise
    the object is first turned into plain numbers, so a test's ``abs(result - expected)``
    never asks the student's object for the answer. An object is of a notebook's class as the
    runner takes it (:func:`course_grader.plain_data.described`: a subclass, or a class bound to
    the class's name)."""
    return SERVING[0] > 0 or object.__getattribute__(remote, "_Remote__like") in ARITHMETIC


def _numbers(remote: Remote) -> Any:
    value = remote._Remote__convert("array")
    return value[()] if value.ndim == 0 else value


def _binary(name: str, reflected: bool):
    def method(self: Remote, other: Any) -> Any:
        if _operates_there(self):
            return self._Remote__ask("binop", name=name, other=send(other), reflected=reflected)
        function, mine = getattr(operator, name), _numbers(self)
        return function(other, mine) if reflected else function(mine, other)

    return method


def _unary(name: str):
    def method(self: Remote) -> Any:
        if _operates_there(self):
            return self._Remote__ask("unary", name=name)
        return getattr(operator, name)(_numbers(self))

    return method


for _name in BINARY:
    _dunder = _name.rstrip("_")
    setattr(Remote, f"__{_dunder}__", _binary(_name, False))
    setattr(Remote, f"__r{_dunder}__", _binary(_name, True))
for _name in UNARY:
    setattr(Remote, f"__{_name}__", _unary(_name))


class JudgeCodec(Codec):
    """The judge's side: objects it hands over by handle are read-only for the student's code;
    only what it grants (a function passed as an argument) may be called."""

    def __init__(self) -> None:
        # What the runner says its object can do (a handle's abilities) is not read here.
        super().__init__("$r", "$h", lambda number, kind, like, _able: Remote(number, kind, like))
        self.callable: set[int] = set()
        self.granting = False
        self.setup_functions: dict[int, tuple[str, Any]] = {}  # id -> the set-up cells' functions
        self.reference_classes: set[int] = set()  # ids of the classes references made: classes there too
        self.made: dict[int, Any] = {}  # id -> what the student's code made of the judge's (protocol.MADE)
        self.deep_copy: tuple[int, dict] = (0, {})  # the student's last deepcopy: its number, the judge's memo
        # Strings the student's process sent, and the judge's own: what hidden messages must not show.
        self.texts: set[str] | None = set()  # None: too many to look for
        self.text_size = 0  # characters of the strings in texts
        self.sent: set[str] = set()

    def handle(self, obj: Any) -> int:
        number = super().handle(obj)
        if self.granting:
            self.callable.add(number)
        return number

    def encode(self, value: Any, depth: int = 0) -> Any:
        """A course_lib Tensor goes by value (its numbers and requires_grad, not its history),
        so the student's code gets a Tensor of its own engine."""
        from course_lib.tensor import Tensor

        if type(value) is str and self.texts is not None and value not in self.texts and len(self.sent) < MAX_TEXTS:
            self.sent.add(value)  # the judge's own (a test's input), not the echo of one of theirs
        if type(value) is Tensor:
            return {"$T": [super().encode(value.data, depth + 1), bool(value.requires_grad)]}
        name, function = self.setup_functions.get(id(value), (None, None))
        if name is not None and function is value:
            # A function of the set-up cells runs where the student's code runs: that process
            # ran the same cells, and the function works on its objects (counts its operations).
            return {"$fn": name}
        return super().encode(value, depth)

    def kind(self, value: Any) -> list[str]:
        """The class of one of the judge's objects, where it is the course's (the notebook's or
        course_lib's), so that ``isinstance(node, Node)`` answers as in Jupyter there, and what
        its class can do (:func:`course_grader.protocol.abilities`); a class a reference made is
        said to be one, with what its objects can do (:mod:`course_grader.reference_classes`)."""
        if id(value) in self.reference_classes:
            return [A_CLASS, f"{value.__module__}.{value.__qualname__}", abilities(value)]
        names = described(value, ARITHMETIC)
        known = course_lib_class(names[-1]) or names[-1] in ARITHMETIC
        cls, like = (names + [""])[:2] if known else ("", "")
        return [cls, like, abilities(type(value)) + (MADE if self.made.get(id(value)) is value else "")]

    def decode(self, data: Any, depth: int = 0) -> Any:
        value = super().decode(data, depth)
        if type(value) is str and len(value) > 2 and self.texts is not None:
            self.texts.add(value)
            self.text_size += len(value)
            if len(self.texts) > MAX_TEXTS or self.text_size > MAX_TEXT_SIZE:  # kept, they would fill the judge
                self.texts = None
        return value

    def without_their_text(self, message: str) -> str | None:
        """``message`` (a hidden test's own) with every string the student's process sent (but
        the judge never did) replaced, as it reads and as its repr reads: a text the student's code
        made never reaches the feedback as the test's. None when there were too many, or when
        looking for them all would take longer than the test may: a message that prints a large
        value of the student's, searched for each of 20,000 strings sent earlier, kept the judge
        busy for 12 minutes after the test's time was up."""
        if self.texts is None:
            return None
        theirs = self.texts - self.sent
        if len(message) * len(theirs) > MAX_SEARCH:
            return None
        for text in sorted(theirs, key=len, reverse=True):
            for shown in (repr(text), text):
                message = message.replace(shown, "<your text>")
        return message


MAX_TEXTS = 20_000  # strings of one part looked for in its hidden message
MAX_TEXT_SIZE = 32 * 1024**2  # their characters (40 strings of 40 MB once filled the judge's 1.5 GB)
MAX_SEARCH = 50_000_000  # characters of message times strings looked for: well under a second


def send(value: Any) -> Any:
    """``value`` encoded for a request: the judge's objects in it are read-only handles."""
    return CHANNEL.codec.encode(value)


def grant(value: Any) -> Any:
    """``value`` encoded for a request: functions in it may be called by the student's code."""
    codec = CHANNEL.codec
    assert isinstance(codec, JudgeCodec)
    codec.granting = True
    try:
        return codec.encode(value)
    finally:
        codec.granting = False


def granted_arguments(args: tuple, kwargs: dict) -> tuple[list, tuple[Any, Any]]:
    """A call's arguments, encoded (granted), and the writeable arrays among them: what the
    student's code writes into its copies of those is written back into them, so a test that
    checks its inputs were left alone sees what a call in Jupyter would have left."""
    return written_back(args, kwargs, grant)


def written_back(args: tuple, kwargs: dict, encode: Callable[[Any], Any]) -> tuple[list, tuple[Any, Any]]:
    """A call's arguments, encoded with ``encode``, and the writeable arrays among them (what
    the student's code writes into its copies of them is written back)."""
    codec = CHANNEL.codec
    codec.arrays = []
    try:
        data = encode(list(args)), encode(kwargs)
        return codec.arrays, data
    finally:
        codec.arrays = None


class ReadOnly(Exception):
    """The student's code tried to change or call one of the test's objects."""


def serve(message: dict) -> Any:
    """A request of the student's process on one of the judge's objects."""
    codec = CHANNEL.codec
    if not SERVING[0]:  # while the student's code waits on the judge, its arrays read are kept
        codec.kept, codec.kept_bytes = {}, 0
    SERVING[0] += 1
    try:
        return _serve(message)
    finally:
        SERVING[0] -= 1
        if not SERVING[0]:
            codec.kept = None


def _serve(message: dict) -> Any:
    codec = CHANNEL.codec
    assert isinstance(codec, JudgeCodec)
    op = message.get("op")
    target_data = message.get("target")
    if type(target_data) is not dict or set(target_data) != {"$r"}:
        raise ProtocolError("a request on an object that is not the judge's")
    number = target_data["$r"]
    target = codec.decode(target_data)
    if op == "call":
        if number not in codec.callable and not _from_reference(target):
            raise ReadOnly("only the functions a test hands to your code may be called")
        args, kwargs = codec.decode(message.get("args")), codec.decode(message.get("kwargs"))
        result = target(*args, **by_their_names(target, kwargs))
        return _made(result) if id(target) in codec.reference_classes else result
    if op == "getattr":
        return attribute(target, str(message.get("name")))
    if op == "getitem":
        return target[codec.decode(message.get("key"))]
    if op == "len":
        return len(target)
    if op == "iter":
        return list(target)
    if op == "contains":
        return codec.decode(message.get("item")) in target
    if op == "isinstance":
        return isinstance(codec.decode(message.get("item")), target)
    if op == "copy":  # a deepcopy (numbered) shares the judge's memo across the student's objects in it
        deep = message.get("deep")
        if type(deep) is int and deep != codec.deep_copy[0]:
            codec.deep_copy = (deep, {})
        copied = copy.deepcopy(target, codec.deep_copy[1]) if type(deep) is int else copy.copy(target)
        return _made(copied) if copied is not target else copied
    if op == "setattr" and codec.made.get(id(target)) is target and not str(message.get("name")).startswith("__"):
        return setattr(target, str(message["name"]), codec.decode(message.get("value")))  # their own object's
    if op == "settable":  # the test's objects: set on the student's side, where Python would let them
        return settable(target, str(message.get("name")))
    if op == "vars":  # the names of its instance attributes, for vars(node) on the student's side
        return introspection.instance_names(target)
    if op == "binop" and message.get("name") in BINARY + COMPARISONS:
        function = getattr(operator, str(message["name"]))
        other = codec.decode(message.get("other"))
        return function(other, target) if message.get("reflected") else function(target, other)
    if op == "unary" and message.get("name") in UNARY:
        return getattr(operator, str(message["name"]))(target)
    if op == "convert" and message.get("to") in ("repr", "str") and named_in_hidden_test(target):
        return A_HIDDEN_FUNCTION
    if op == "convert" and message.get("to") in CONVERSIONS:
        return convert(target, str(message["to"]))
    raise ReadOnly(f"the test's objects are read-only here ({op})")


def _made(value: Any) -> Any:
    """``value``, made by the student's code (one of a reference's class, or a copy): its own to set
    attributes of, as in Jupyter (ps02's ``MyDual(0.0, 0.0)`` given its parts lost part 2, 0/2)."""
    codec = CHANNEL.codec
    assert isinstance(codec, JudgeCodec)
    codec.made[id(value)] = value
    return value


def _from_reference(target: Any) -> bool:
    """Whether ``target`` is code of a reference solution standing in for an earlier part (a
    method of the reference ``MLP``, or one of its instances, called), or one of the student's
    own methods lent to a reference class (:class:`TheirMethod`): the student's later code uses
    it as it would use its own."""
    function = getattr(target, "__func__", target)
    if type(function) is TheirMethod:
        return True
    if not isinstance(function, types.FunctionType):
        function = vars(type(target)).get("__call__")
    code = getattr(function, "__code__", None)
    return isinstance(code, types.CodeType) and code.co_filename.startswith("<reference ")
