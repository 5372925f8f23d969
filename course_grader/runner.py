"""The student's side of grading: runs inside the sandbox, one fresh process per graded part.

It reads its job, the notebook's set-up cells and the student's cells, as the first message
on its request channel, runs them in order (each with a time limit, its output discarded,
what happened reported as an event: :mod:`course_grader.notebook`), then answers the judge's
requests on the objects the cells made: call this function, read that attribute, turn this
into an array. It never sees a test, an expected value, a reference solution or a verdict, so
there is nothing here for answer code to read or change that would alter its grade: the judge
decides (:mod:`course_grader.judge`), from plain data (:mod:`course_grader.plain_data`).

Before the first cell it forbids starting programs (:mod:`course_grader.no_programs`): with
``--must-forbid-programs`` (the sandbox's), a machine that cannot ends the runner before any cell
runs; without it (no sandbox), the runner goes on where it cannot.

Run as ``python -I runner.py REQUEST_FD REPLY_FD [--must-forbid-programs]``, or forked for one
part by the hand-in's warm runner (``runner.py --zygote SOCKET_FD ...``, :mod:`course_grader.zygote`),
after which it goes on the same way; uses the standard library, NumPy and whatever the cells import.
"""

from __future__ import annotations

import builtins
import copy
import functools
import importlib.machinery
import importlib.util
import itertools
import operator
import os
import resource
import sys
import threading
import types
from typing import Any

# The grader's modules beside this file (in the sandbox, the ones it binds there) as the package
# they are outside it, so that they import each other by one name; nothing goes on sys.path.
_GRADER = importlib.machinery.ModuleSpec("course_grader", None, is_package=True)
_GRADER.submodule_search_locations = [os.path.dirname(os.path.abspath(__file__))]
sys.modules.setdefault("course_grader", importlib.util.module_from_spec(_GRADER))
from course_grader.endpoint import Endpoint, InPlace  # noqa: E402
from course_grader.instance_attributes import instance_dict, keep  # noqa: E402
from course_grader.kept_reads import KeptReads  # noqa: E402
from course_grader.no_programs import MUST_FORBID, ProgramsNotForbidden, forbid_programs  # noqa: E402
from course_grader.notebook import (  # noqa: E402
    MISSING,
    NAMESPACE,
    NOTEBOOK,
    SETUP_ATTRIBUTES,
    SETUP_CLASSES,
    class_methods,
    freeze,
    notebook_class,
    run_cell,
    set_up_functions,
    student_names,
    their_operator,
)
from course_grader.pickled_stand_ins import STREAM, Pending, hold, revived  # noqa: E402
from course_grader.plain_data import Codec, described  # noqa: E402
from course_grader.protocol import (  # noqa: E402
    ABILITIES,
    BINARY,
    CELL_END,
    CELL_START,
    COMPARISONS,
    MADE,
    NAMES,
    READY,
    SETUP_FAILED,
    UNARY,
    abilities,
    convert,
    signature,
)
from course_grader.reference_classes import StandsFor, stand_ins_of  # noqa: E402
from course_grader.standby import settle, small_pages, stand_by  # noqa: E402
from course_grader.zygote import ZYGOTE, serve_forks  # noqa: E402

THEIR_CLASSES = ("__main__", "course_lib")  # modules of the classes the student's cells may add to
COPYING: list = [None, {}]  # the judge's deepcopy under way (its number) and its memo here


class Trusted:
    """One of the judge's objects: a function the test hands over, a graph it built, a class of
    a reference solution. Every operation is a request to the judge, which answers with plain
    data or another handle; the judge's objects are read-only here. Attributes the student's
    code sets on it (``node._seen = True``) live here, on this stand-in, and shadow the judge's
    (where Python would set them there: a slotted ``Value`` takes no new attribute in Jupyter;
    ``vars(node)`` shows both: :mod:`course_grader.instance_attributes`);
    but an object the student's code made (:data:`MADE`: one of a reference's class, or a copy)
    is its own in Jupyter, and what it sets there goes to the judge's object.

    Each stand-in is of a subclass (:func:`stand_in`) with the protocol methods its object's
    class has (``__call__``, ``__len__`` ...: :data:`ABILITIES`) and no others. A callable one,
    as a class attribute, binds like a function, so a reference method that the judge sets on
    the student's class works as ``x * y``."""

    __slots__ = (
        "_Trusted__number",
        "_Trusted__bound",
        "_Trusted__like",
        "_Trusted__own",
        "_Trusted__made",
        "__weakref__",
    )

    def __init__(self, number: int, kind: str = "", like: str = "", bound: tuple = (), made: bool = False):
        for slot, value in (("number", number), ("bound", bound), ("like", like or kind), ("own", {}), ("made", made)):
            object.__setattr__(self, f"_Trusted__{slot}", value)

    def __getattr__(self, name: str) -> Any:
        own = object.__getattribute__(self, "_Trusted__own")
        if name in own:
            return own[name]
        if name == "__dict__":  # vars(node): the judge's object's attributes and those set here
            return instance_dict(self, lambda: ask(self, "vars"), own)
        if name.startswith("__") and name not in NAMES:  # Python's probes (__array_struct__ ...): the judge shows none
            raise AttributeError(name)
        try:
            read = ask(self, "getattr", name=name)
            bound = object.__getattribute__(self, "_Trusted__bound")  # a method's signature lacks self
            return signature(read[len(bound) :]) if name == "__signature__" else read
        except AttributeError:
            # Not on the judge's object: what the student's cells put on the notebook's class or on
            # course_lib's (a helper method, a class default such as ``Node.seen = False``), as in Jupyter.
            cls = self.__class__
            found: Any = next((vars(k)[name] for k in cls.__mro__ if name in vars(k)), MISSING)
            if issubclass(cls, Trusted) or cls.__module__.split(".")[0] not in THEIR_CLASSES or found is MISSING:
                raise
            if isinstance(found, types.MemberDescriptorType):  # a slot of their subclass, never set here
                raise
            if isinstance(found, functools.cached_property):  # computed once, kept with what they set
                own[name] = found.func(self)
                return own[name]
            return found.__get__(self, cls) if hasattr(type(found), "__get__") else found

    def __setattr__(self, name: str, value: Any) -> None:
        if object.__getattribute__(self, "_Trusted__made"):
            ask(self, "setattr", name=name, value=encode(value))
        else:  # here, as Python would take it there (a slotted Value takes no new attribute)
            own, like = object.__getattribute__(self, "_Trusted__own"), object.__getattribute__(self, "_Trusted__like")
            if hasattr(type(getattr(self.__class__, name, None)), "__set__"):  # a property their cells gave the class
                own[name] = value
            else:
                keep(own, like, name, value, lambda: ask(self, "settable", name=name))

    def __delattr__(self, name: str) -> None:
        if object.__getattribute__(self, "_Trusted__own").pop(name, MISSING) is MISSING:
            raise AttributeError(f"{name}: only attributes your code set on the test's objects can be deleted")

    @property  # type: ignore[misc]  # isinstance() consults __class__
    def __class__(self) -> type:
        """The set-up cells' class (or course_lib's) the judge's object is an instance of, so
        that ``isinstance(node, Node)`` answers as in Jupyter (``type()`` still says Trusted); an
        object of a reference's class is of its class here (:mod:`course_grader.reference_classes`)."""
        if isinstance(type(self), StandsFor):
            return type(self)
        return notebook_class(object.__getattribute__(self, "_Trusted__like")) or Trusted

    def __instancecheck__(self, obj: Any) -> bool:
        return ask(self, "isinstance", item=encode(obj))

    def __bool__(self) -> bool:
        length = _theirs(self, "__bool__", "__len__")
        if length is not None:
            return operator.index(length()) != 0
        return ask(self, "convert", to="bool")

    def __copy__(self) -> Any:  # copied by the judge: a function is itself, a node a new node
        return ask(self, "copy", deep=False)

    def __deepcopy__(self, memo: dict) -> Any:  # one deepcopy, one memo in the judge too: a graph stays one
        return ask(self, "copy", deep=memo.setdefault(DEEP_COPY, next(DEEP_COPIES)))

    def __reduce_ex__(self, protocol: Any) -> Any:  # pickled: a deep copy the judge makes (pickled_stand_ins)
        return revived, (STREAM, Pending(self))

    def __repr__(self) -> str:
        return ask(self, "convert", to="repr")

    def __str__(self) -> str:
        return ask(self, "convert", to="str")


def _number_of(value: Any) -> int | None:
    """The judge's number of a stand-in, or None for anything else."""
    return object.__getattribute__(value, "_Trusted__number") if isinstance(value, Trusted) else None


DEEP_COPY = "course_grader"  # the key of a deepcopy's memo that names it to the judge (its keys are ints)
DEEP_COPIES = itertools.count(1)


def stand_in(number: int, kind: str, like: str, able: str) -> Trusted:
    """The stand-in for the judge's object ``number``: with the protocol methods its class has
    (``able``, as the judge says) and those the student's cells gave the notebook's class."""
    cls = notebook_class(like or kind)
    methods = "".join(sorted({*able.replace(MADE, ""), *(abilities(cls) if cls else "")}))
    return stand_in_class(methods)(number, kind, like, made=MADE in able)


@functools.cache
def stand_in_class(able: str) -> type:
    methods = {ABILITIES[letter]: PROTOCOL[ABILITIES[letter]] for letter in able}
    if "c" in able:
        methods["__get__"] = _bind
    return type("Trusted", (Trusted,), {"__slots__": (), "__doc__": Trusted.__doc__, **methods})


def _bind(self: Trusted, obj: Any, objtype: Any = None) -> Any:
    return self if obj is None else type(self)(object.__getattribute__(self, "_Trusted__number"), bound=(obj,))


def _call(self: Trusted, *args: Any, **kwargs: Any) -> Any:
    bound = object.__getattribute__(self, "_Trusted__bound")
    return ask(self, "call", args=encode(list(bound + args)), kwargs=encode(kwargs))


def _contains(self: Trusted, item: Any) -> bool:
    iterate = _theirs(self, "__contains__", "__iter__")
    if iterate is not None:
        return any(x is item or x == item for x in iterate())
    return ask(self, "contains", item=encode(item))


def _array(self: Trusted, dtype: Any = None, copy: Any = None) -> Any:
    array = ask(self, "convert", to="array")
    return array if dtype is None else array.astype(dtype)


def _converts(to: str):
    return lambda self: ask(self, "convert", to=to)


def _binary(name: str, reflected: bool):
    def method(self: Trusted, other: Any) -> Any:
        return ask(self, "binop", name=name, other=encode(other), reflected=reflected)

    return method


def _theirs(proxy: Trusted, dunder: str, instead: str = "") -> Any:
    """The operator the student's cells gave the class of ``proxy``'s object, bound to it, or None;
    with ``instead``, theirs of that name where the class has no ``dunder`` (Python's fallback)."""
    cls = proxy.__class__
    found = their_operator(cls, dunder, instead) if not issubclass(cls, Trusted) else None
    return found.__get__(proxy, cls) if found is not None else None


def _or_theirs(dunder: str, method: Any) -> Any:
    def operator_method(self: Trusted, *args: Any) -> Any:
        theirs = _theirs(self, dunder)
        return theirs(*args) if theirs is not None else method(self, *args)

    operator_method.__name__ = dunder
    return operator_method


# The protocol methods only stand-ins whose objects have them have (each the student's own
# where their cells gave the notebook's class one, as the rest of Trusted's operators).
PROTOCOL = {
    "__call__": _call,
    "__getitem__": _or_theirs("__getitem__", lambda self, key: ask(self, "getitem", key=encode(key))),
    "__len__": _or_theirs("__len__", lambda self: ask(self, "len")),
    "__iter__": _or_theirs("__iter__", lambda self: iter(ask(self, "iter"))),
    "__contains__": _or_theirs("__contains__", _contains),
    **{f"__{to}__": _or_theirs(f"__{to}__", _converts(to)) for to in ("float", "int", "index", "complex")},
    "__array__": _or_theirs("__array__", _array),
}
for _dunder in ("__bool__", "__repr__", "__str__"):
    setattr(Trusted, _dunder, _or_theirs(_dunder, vars(Trusted)[_dunder]))
for _name in COMPARISONS:
    setattr(Trusted, f"__{_name}__", _or_theirs(f"__{_name}__", _binary(_name, False)))
for _name in BINARY:
    for _dunder, _reflected in ((f"__{_name.rstrip('_')}__", False), (f"__r{_name.rstrip('_')}__", True)):
        setattr(Trusted, _dunder, _or_theirs(_dunder, _binary(_name, _reflected)))
for _name in UNARY:
    setattr(Trusted, f"__{_name}__", _or_theirs(f"__{_name}__", lambda self, _n=_name: ask(self, "unary", name=_n)))


# One request at a time: threads of the student's (a pool mapping f_grad over points) take turns,
# where each would otherwise read the other's reply. Re-entrant: a request served meanwhile asks too.
TALKING = threading.RLock()


# Attribute reads of the judge's objects, answered again without a request until the judge may
# have run (main() tells it when the part forks).
KEPT = KeptReads()


def ask(proxy: Trusted, op: str, **fields: Any) -> Any:
    with TALKING:
        return KEPT.ask(JUDGE.request, object.__getattribute__(proxy, "_Trusted__number"), op, **fields)


def encode(value: Any) -> Any:
    with TALKING:
        return JUDGE.codec.encode(value)


RUNNER_MODULE = sys.modules[__name__]  # this file's module, alive while it stands aside
REBOUND: dict[str, list] = {}  # notebook names a test rebinds for a while: what each was before
_ABSENT = object()
SET_RECURSION_LIMIT = sys.setrecursionlimit


class RunnerCodec(Codec):
    classes: set[str] = set()  # the notebook's classes

    def kind(self, value: Any) -> list[str]:
        return described(value, self.classes, NAMESPACE)

    def setup_function(self, name: str) -> Any:
        raise NameError(f"the notebook's set-up cells define no {name!r}")


def serve(message: dict) -> Any:
    """One request of the judge on the notebook's objects."""
    op = message.get("op")
    decode = JUDGE.codec.decode
    KEPT.forget()  # the judge ran before asking
    if op == "recursionlimit":  # a test set the notebook's limit: Python's own, whatever answer code did to sys
        return SET_RECURSION_LIMIT(int(message.get("limit")))  # type: ignore[arg-type]
    if op == "setup":
        return JUDGE.codec.setup_function(str(message.get("name")))
    if op == "setglobal":  # with "save", what it replaces comes back at "restoreglobal"
        name = str(message.get("name"))
        if message.get("save") is True:
            REBOUND.setdefault(name, []).append(NAMESPACE.get(name, _ABSENT))
        NAMESPACE[name] = decode(message.get("value"))
        return None
    if op == "restoreglobal":  # the student's own binding, as a test's rebinding found it
        saved = REBOUND.get(str(message.get("name")))
        if saved:
            previous = saved.pop()
            if previous is _ABSENT:
                NAMESPACE.pop(str(message.get("name")), None)
            else:
                NAMESPACE[str(message.get("name"))] = previous
        return None
    if op == "settle":  # before the judge measures a call's memory
        settle()
        return None
    if op == "standby":
        return stand_by(JUDGE, message)
    target = decode(message.get("target"))
    if op == "attribute":  # (True, None) for a method bound to target, else (False, the value)
        value = getattr(target, str(message.get("name")))
        bound = getattr(value, "__self__", None) is target and callable(value)
        return (True, None) if bound else (False, value)
    if op in ("call", "callmethod"):
        function = getattr(target, str(message.get("name"))) if op == "callmethod" else target
        JUDGE.codec.arrays = []
        try:
            args, kwargs = decode(message.get("args")), decode(message.get("kwargs"))
            arrays = JUDGE.codec.arrays
        finally:
            JUDGE.codec.arrays = None
        return InPlace(function(*args, **kwargs), arrays)
    if op == "setattr":
        setattr(target, str(message.get("name")), decode(message.get("value")))
        return None
    if op == "copy":  # one of theirs in an object the judge copies (a reference's Program of their Vars)
        if message.get("deep") is not True:
            return copy.copy(target)
        if COPYING[0] != message.get("memo"):  # a deepcopy of the judge's begins: one memo here for all of it
            COPYING[:] = [message.get("memo"), {}]
        return copy.deepcopy(target, COPYING[1])
    if op == "getitem":
        return target[decode(message.get("key"))]
    if op == "setitem":
        target[decode(message.get("key"))] = decode(message.get("value"))
        return None
    if op == "len":
        return len(target)
    if op == "iter":
        return list(target)
    if op == "contains":
        return decode(message.get("item")) in target
    if op == "binop":
        name = str(message.get("name"))
        if name not in BINARY:
            raise ValueError(f"no binary operation {name}")
        other = decode(message.get("other"))
        function = getattr(operator, name)
        return function(other, target) if message.get("reflected") else function(target, other)
    if op == "unary":
        name = str(message.get("name"))
        if name not in UNARY:
            raise ValueError(f"no unary operation {name}")
        return getattr(operator, name)(target)
    if op == "convert":
        return convert(target, str(message.get("to")))
    if op == "isinstance":
        return isinstance(decode(message.get("item")), target)
    if op == "methods":
        return class_methods(target)
    raise ValueError(f"unknown request {op!r}")


def encodable(names: dict[str, Any]):
    """The names as the judge first sees them: numbers and strings by value, anything else
    (a list of a million entries, a model) by handle, read only if a test asks."""
    for name, value in names.items():
        if value is None or type(value) in (bool, int, float, complex, str) and len(str(value)) < 10_000:
            yield name, encode(value)
        else:
            yield name, JUDGE.codec.by_handle(value)


JUDGE: Endpoint


def forbid(must: bool, part: bool = True) -> None:
    """No programs from here on (a seccomp filter, a Landlock domain): where the machine cannot
    and ``must``, end before anything runs. The warm runner (not a ``part``'s) keeps chmod."""
    try:
        forbid_programs(part)
    except ProgramsNotForbidden as error:
        if must:
            raise SystemExit(f"the sandbox cannot forbid running other programs here: {error}") from None


def main() -> None:
    global JUDGE
    must_forbid = MUST_FORBID in sys.argv[2:]
    if sys.argv[1] == ZYGOTE:  # the hand-in's warm runner: returns here in each part's fresh child
        forbid(must_forbid, part=False)
        request_fd, reply_fd = serve_forks(int(sys.argv[2]))
        sys.argv[1:3] = [str(request_fd), str(reply_fd)]  # as the command line of a runner of its own
    else:
        request_fd, reply_fd = int(sys.argv[1]), int(sys.argv[2])
    codec = RunnerCodec("$h", "$r", stand_ins_of(stand_in, stand_in_class), keep_proxies=True)
    JUDGE = Endpoint(request_fd, reply_fd, codec, serve, in_turn=True)
    hold(codec.proxies, _number_of)
    # This part's forks, not the zygote's.
    os.register_at_fork(after_in_parent=KEPT.mark_forked, after_in_child=KEPT.mark_forked)
    job = JUDGE.receive()
    JUDGE.codec.classes = {str(name) for name in job.get("classes", [])}  # type: ignore[attr-defined]
    JUDGE.debug = job.get("debug") is True
    for name, value in job["rlimits"].items():  # before any of the student's code runs
        resource.setrlimit(getattr(resource, name), (value, value))
    small_pages()
    forbid(must_forbid)  # a forked part's runner: a filter and a Landlock domain of its own, nested in the zygote's
    if job["course_lib_parent"] not in sys.path:
        sys.path.insert(0, job["course_lib_parent"])
    import logging

    logging._srcfile = None  # type: ignore[attr-defined]  # logging without frame lookups
    timeout = float(job["cell_timeout"])
    # What the set-up cells bound, as they bound it, with the builtins as they are before any
    # of the student's code runs: the namespace of the set-up functions the judge calls.
    setup_scope: dict[str, Any] = {"__name__": "__main__", "__builtins__": dict(vars(builtins))}
    setup_bound: dict[str, int] = {}  # what the set-up cells bound: id of each name's value
    classes: dict[str, dict[str, int]] = {}  # the set-up cells' classes: ids of their attributes
    student_ran = False
    sys.modules["__main__"] = NOTEBOOK
    for cell in job["cells"]:
        if cell["kind"] != "setup":
            student_ran = True
        if student_ran:
            JUDGE.send({"event": CELL_START, "cell": cell["name"]})
        before = {k: id(v) for k, v in NAMESPACE.items()}
        outcome = run_cell(cell, timeout)
        if not student_ran and outcome["status"] != "ok":  # before any answer: the instructor's cells
            JUDGE.send({"event": SETUP_FAILED, "cell": cell["name"], **outcome})
            return
        if student_ran:
            JUDGE.send({"event": CELL_END, "cell": cell["name"], **outcome})
        if cell["kind"] == "setup":
            bound = {k: v for k, v in NAMESPACE.items() if before.get(k) != id(v)}
            setup_bound.update((k, id(v)) for k, v in bound.items())
            freeze(bound, setup_scope)
            classes.update(
                (k, {a: id(b) for a, b in vars(v).items()})
                for k, v in bound.items()
                if isinstance(v, type) and v.__module__ == "__main__"
            )
            SETUP_CLASSES.update(
                (v.__qualname__, v) for v in bound.values() if isinstance(v, type) and v.__module__ == "__main__"
            )
            SETUP_ATTRIBUTES.update(
                (v, dict(vars(v))) for v in bound.values() if isinstance(v, type) and v.__module__ == "__main__"
            )
    answers = {str(n) for n in job.get("answers", [])}
    JUDGE.codec.setup_function = set_up_functions(setup_scope, answers)  # type: ignore[method-assign]
    del setup_scope
    names = student_names(setup_bound, classes)
    JUDGE.send({"event": READY, "names": dict(encodable(names))})
    while True:
        JUDGE.answer(JUDGE.receive())


if __name__ == "__main__":
    main()
