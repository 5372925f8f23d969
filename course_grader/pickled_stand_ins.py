"""A test's object pickled by the student's code (``pickle.loads(pickle.dumps(program))``, a
common way to copy one): the runner's stand-in pickles as the number of a deep copy the judge
makes of its object, and :func:`revived`, which pickle finds here by name (not in the runner's
own module, which is not ``__main__`` while the notebook's cells run), gives the copy's stand-in
back. Only stand-ins this process already holds come back: bytes naming another number are
refused, so pickled bytes reach nothing that a stand-in made by hand could not.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

_HELD: list[Mapping[int, Any]] = [{}]  # the runner's stand-ins, by the judge's numbers (its codec's)


def hold(stand_ins: Mapping[int, Any]) -> None:
    """Where the runner keeps its stand-ins (its codec's proxies, kept while it lives)."""
    _HELD[0] = stand_ins


def revived(number: int) -> Any:
    """What ``pickle.loads`` gives for a test's object pickled in this process: its copy."""
    stand_in = _HELD[0].get(number) if type(number) is int else None
    if stand_in is None:
        raise pickle.UnpicklingError(
            "these bytes name an object of the test's that this process does not hold: a test's object "
            "pickled while your notebook is graded reads back only in the process that pickled it"
        )
    return stand_in
