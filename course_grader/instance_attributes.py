"""The instance attributes of one of the test's objects, on the student's side (runner.py's ``Trusted``):
what the student's code may set on it, and ``vars(node)``.

An attribute set on a test's object lives on its stand-in, where Python would let the judge's
object take it (:func:`keep`): a slotted course_lib ``Value`` takes no new attribute in Jupyter, so
marking a node a test made there must fail graded too (ps03, ``node._visited_by = order``: 2/2
graded, 0/2 in Jupyter, before). The judge says so once per class and attribute.

In Jupyter the test's nodes of a notebook class have an instance ``__dict__``, and an answer
may keep its marks there (``vars(node).get("_mark")``, ``vars(node)["_mark"] = k``: ps04's
``is_topological`` scored 0/2 graded, 2/2 in Jupyter). A stand-in has slots and no ``__dict__``:
this mapping stands for it. It holds the names of the judge's object's instance attributes (asked
once, :func:`course_grader.introspection.instance_names`: refused, as ``vars()`` refuses, for an
object without one, such as course_lib's slotted ``Value``) and the attributes the student's code
set on the stand-in; values are read and written through the stand-in, as ``node.name`` and
``node.name = value`` are, so what Python would refuse there is refused here."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

SETTABLE: set[tuple[str, str]] = set()  # (class, attribute) the judge said its objects take: asked once


def keep(own: dict[str, Any], like: str, name: str, value: Any, settable: Callable[[], Any]) -> None:
    """``own[name] = value``, once ``settable()`` (a question to the judge) did not raise, where
    the stand-in's class (named ``like``) has no descriptor of that name of the student's."""
    if name not in own and (like, name) not in SETTABLE:
        settable()
        if like:
            SETTABLE.add((like, name))  # every node of a graph marked: one question, not one a node
    own[name] = value


class InstanceDict(MutableMapping):
    """The instance attributes of ``stand_in``: the judge's object's ``names`` and ``own``, the
    ones set on the student's side (which shadow the judge's)."""

    def __init__(self, stand_in: Any, names: Any, own: dict[str, Any]):
        if type(names) is not list or not all(type(n) is str for n in names):
            raise TypeError("vars() argument must have __dict__ attribute")
        self._stand_in, self._names, self._own = stand_in, names, own

    def __getitem__(self, name: str) -> Any:
        if name in self._own or name in self._names:
            return getattr(self._stand_in, name)
        raise KeyError(name)

    def __setitem__(self, name: str, value: Any) -> None:
        setattr(self._stand_in, name, value)

    def __delitem__(self, name: str) -> None:
        if name not in self._own:
            raise KeyError(name)
        delattr(self._stand_in, name)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._names, *self._own]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self._names, *self._own]))

    def __repr__(self) -> str:
        return repr(dict(self))


def instance_dict(stand_in: Any, names: Callable[[], Any], own: dict[str, Any]) -> InstanceDict:
    """``stand_in.__dict__``: its attributes' ``names()`` (a question to the judge). Where the
    judge's object shows none (no ``__dict__``, or a function's: the test's own text) there is
    no such attribute, so ``functools.wraps`` of a test's function goes on without it as before,
    and ``vars()`` raises TypeError as Python does."""
    try:
        return InstanceDict(stand_in, names(), own)
    except TypeError:
        raise AttributeError("__dict__") from None
