"""A reference solution's class, as the student's code meets it in the runner.

Where an earlier part's reference runs in the judge in place of a failing answer (``# grader:
reference ...``), the class it defines (ps02's ``MyDual``) is bound to the student's name in the
runner, and the objects it makes stand there for the judge's. In Jupyter the student's later code
works on objects of a class: ``type(self)(a, b)`` or ``self.__class__(a, b)`` makes a new one,
``type(x) is MyDual`` holds. So the runner's stand-in for such a class is a class (of
:class:`StandsFor`, deriving from the runner's stand-in of any object), and the stand-ins of its
objects are its instances: calling the class, or reading its attributes, asks the judge's class.
Before, ``type(self)`` was the stand-in's own class: a ps02 hand-in whose part 1 had a slip lost
parts 2 and 3 as well, where its division and ``sin`` made their result with ``type(self)(...)``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from course_grader.notebook import NAMESPACE
from course_grader.protocol import MADE

A_CLASS = "builtins.type"  # what the judge says of a reference's class it hands over (its ``kind``)
SEQUENCE = ("__iter__", "__len__", "__getitem__", "__contains__")  # how the student's code unpacks one


class StandsFor(type):
    """The type of a reference's class in the runner: called, it makes one of the judge's class."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return vars(cls)["_judges"](*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(vars(cls)["_judges"], name)


def stand_ins_of(plain: Callable[..., Any], with_abilities: Callable[[str], type]) -> Callable[..., Any]:
    """The runner's stand-ins of the judge's objects (``make_proxy`` of its codec): ``plain``'s, but
    a class of the references is a class deriving from the stand-in class ``with_abilities`` gives
    for what its objects can do, and the stand-ins of its objects are its instances."""
    classes: dict[str, type] = {}  # module.qualname -> the stand-in class of a reference's class

    def stand_in(number: int, kind: str = "", like: str = "", able: str = "") -> Any:
        if kind == A_CLASS and like.startswith("__main__."):
            name = like.rpartition(".")[2]
            own = {"__slots__": (), "__module__": "__main__", "__qualname__": name, **as_their_sequence(name)}
            made = StandsFor(name, (with_abilities(able),), own)
            type.__setattr__(made, "_judges", plain(number, "", "", "c"))  # calls and reads go through it
            classes[like] = made
            return made
        if kind in classes:  # not StandsFor's call: made here
            return type.__call__(classes[kind], number, kind, like, made=MADE in able)
        return plain(number, kind, like, able)

    return stand_in


def as_their_sequence(name: str) -> dict[str, Any]:
    """How the student's class of that name, which the reference's replaces, unpacks its objects
    (``a, da = x``, ``x[0]``): a named tuple by its fields, read off the judge's object; any other
    class by its own ``__iter__``, ``__len__``, ``__getitem__`` or ``__contains__``, run where the
    student's code runs. Only the student's code unpacks this way: the tests read the reference's
    objects themselves. (A ps02 ``MyDual`` that was a ``NamedTuple``, with part 1's slip, lost part
    3 too: its ``sin`` unpacked ``a, da = x``, and the reference's ``MyDual`` is no tuple.)"""
    theirs = NAMESPACE.get(name)
    if not isinstance(theirs, type):
        return {}
    fields = getattr(theirs, "_fields", None)
    if issubclass(theirs, tuple) and isinstance(fields, tuple):

        def values(self: Any) -> tuple:
            return tuple(getattr(self, field) for field in fields)

        return {
            "__iter__": lambda self: iter(values(self)),
            "__len__": lambda self: len(fields),
            "__getitem__": lambda self, key: values(self)[key],
            "__contains__": lambda self, item: item in values(self),
        }
    found = {n: next((vars(k)[n] for k in theirs.__mro__ if n in vars(k)), None) for n in SEQUENCE}
    return {n: f for n, f in found.items() if isinstance(f, types.FunctionType)}
