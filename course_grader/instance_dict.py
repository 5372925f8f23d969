"""``vars(node)`` of one of the test's objects, on the student's side (runner.py's ``Trusted``).

In Jupyter the hidden test's nodes of a notebook class have an instance ``__dict__``, and an answer
may keep its marks there (``vars(node).get("_mark")``, ``vars(node)["_mark"] = k``: ps04's
``is_topological`` scored 0/2 graded, 2/2 in Jupyter). A stand-in has slots and no ``__dict__``:
this mapping stands for it. It holds the names of the judge's object's instance attributes (asked
once, :func:`course_grader.introspection.instance_names`: refused, as ``vars()`` refuses, for an
object without one, such as course_lib's slotted ``Value``) and the attributes the student's code
set on the stand-in; values are read and written through the stand-in, as ``node.name`` and
``node.name = value`` are, so what Python would refuse there is refused here."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any


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
