"""A test's object pickled by the student's code (``pickle.loads(pickle.dumps(program))``, a
common way to copy one): the runner's stand-in pickles as the number of a deep copy the judge
makes of its object, and :func:`revived`, which pickle finds here by name (not in the runner's
own module, which is not ``__main__`` while the notebook's cells run), gives a copy of it back.
Only stand-ins this process already holds come back: bytes naming another number are refused,
so pickled bytes reach nothing that a stand-in made by hand could not.

As in Jupyter, one pickle is one graph and each ``pickle.loads`` new objects: the test's objects
in one ``pickle.dumps`` are copied with one memo (a node and its parents listed together stay one
graph: ps04's ``is_topological`` that checked a pickled copy of ``(order, output)`` found every
parent missing, 0/2 where Jupyter gives 2/2), and each ``pickle.loads`` copies that copy again,
with one memo of its own. Both memos ride on :data:`STREAM`, which each stand-in's pickle names
before its copy: the pickler writes it once per pickle (its memo holds it from then on), and the
unpickler makes it once per load.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Mapping
from typing import Any

_HELD: list[Mapping[int, Any]] = [{}]  # the runner's stand-ins, by the judge's numbers (its codec's)
_NUMBER: list[Callable[[Any], int | None]] = [lambda value: None]  # a stand-in's number, or None
_WRITING: list[dict] = [{}]  # the deepcopy memo of the pickle being written


def hold(stand_ins: Mapping[int, Any], number_of: Callable[[Any], int | None] = lambda value: None) -> None:
    """Where the runner keeps its stand-ins (its codec's proxies, kept while it lives), and how
    it reads the number of one."""
    _HELD[0], _NUMBER[0] = stand_ins, number_of


class _Stream:
    """Pickled once per pickle, before the first copy in it: a new memo for its copies."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        _WRITING[0] = {}
        return _loading, ()


STREAM = _Stream()


def _loading() -> dict:
    """The memo of one ``pickle.loads``'s copies."""
    return {}


class Pending:
    """A stand-in in a pickle being written: its object's copy, made with the pickle's memo."""

    __slots__ = ("stand_in",)

    def __init__(self, stand_in: Any):
        self.stand_in = stand_in

    def __reduce_ex__(self, protocol: Any) -> Any:
        copied = copy.deepcopy(self.stand_in, _WRITING[0])
        number = _NUMBER[0](copied)
        return (held, (number,)) if number is not None else (_plain, (copied,))


def _plain(value: Any) -> Any:
    """A copy that came back as plain data (pickled as it is)."""
    return value


def held(number: int) -> Any:
    """The stand-in of a copy made while this process pickled; no other number."""
    stand_in = _HELD[0].get(number) if type(number) is int else None
    if stand_in is None:
        raise pickle.UnpicklingError(
            "these bytes name an object of the test's that this process does not hold: a test's object "
            "pickled while your notebook is graded reads back only in the process that pickled it"
        )
    return stand_in


def revived(memo: Any, value: Any) -> Any:
    """What ``pickle.loads`` gives for a test's object pickled in this process: a new copy of its
    copy, one graph with the load's other copies (``memo``)."""
    return copy.deepcopy(value, memo if type(memo) is dict else {})
