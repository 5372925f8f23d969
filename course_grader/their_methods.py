"""The student's own methods, lent to a reference class that stands in for their class.

When an earlier part's reference solution runs in the judge in place of the student's failing
answer (``# grader: reference ...``), a class it defines (ps02's ``MyDual``) replaces the
student's class of that name, for the test and for the student's later code. In Jupyter that
later code would still find the methods the student's own cells gave their class: helpers of
their own (``MyDual.reciprocal``), methods a later cell patched on (``MyDual.sin = _sin``), class
and static methods (``MyDual.variable``), properties (``MyDual.parts``, read through their
getter). :func:`lend_their_methods` gives the reference class each of those it lacks, as a
:class:`~course_grader.stand_ins.TheirMethod` that calls the student's function in their
process, so one mistake costs its own part only.

What is lent never changes how a test compares or counts: only names the reference class has
nowhere (its own, its bases' and ``object``'s stay), only functions (a property lent as a getter
only, no data descriptor, so an instance's attributes always win), and of Python's special names only the arithmetic
operators, which the reference class lacks only where the solution never uses them. Equality,
hashing, ordering, truth, conversions, attribute access, construction, iteration, copying and
NumPy's hooks stay the reference's.
"""

from __future__ import annotations

from typing import Any

from course_grader import stand_ins
from course_grader.protocol import BINARY, UNARY, ProtocolError
from course_grader.stand_ins import Remote, TheirMethod

OPERATORS = frozenset(
    [f"__{name.rstrip('_')}__" for name in BINARY]
    + [f"__r{name.rstrip('_')}__" for name in BINARY]
    + [f"__{name}__" for name in UNARY]
)
KINDS = {0: "function", 1: "class", 2: "static", 3: "property"}  # as the runner's "methods" reply numbers them
MAX_METHODS = 500  # of one class: more is not a notebook's class
MAX_NAME = 100


def lendable(name: str) -> bool:
    """Whether a method of this name may be lent: a name of the student's own (a helper, a
    method), or an arithmetic operator; never another of Python's special names."""
    return name.isidentifier() and len(name) <= MAX_NAME and (not name.startswith("__") or name in OPERATORS)


def lend_their_methods(namespace: dict[str, Any], before: dict[str, Any]) -> None:
    """After the references ran: each class they made in place of a class of the student's
    (a name that was the student's before and is now a class of the reference's cells) gets
    the student's methods it lacks."""
    earlier = {id(value) for value in before.values()}
    for name, theirs in before.items():
        reference = namespace.get(name)
        if (
            type(theirs) is Remote
            and isinstance(reference, type)
            and reference.__module__ == "__main__"
            and id(reference) not in earlier  # made by the references, not a set-up cell's class
        ):
            lend(reference, theirs)


def lend(reference: type, theirs: Remote) -> None:
    """Give ``reference`` the methods of the student's class ``theirs`` that it lacks."""
    listed = stand_ins.CHANNEL.request("methods", target=stand_ins.send(theirs))
    if type(listed) is not list or len(listed) > MAX_METHODS:
        raise ProtocolError("the methods of the student's class are not a list of a class's size")
    for entry in listed:
        name, kind, function = _method(entry)
        if type(function) is Remote and lendable(name) and not hasattr(reference, name):
            setattr(reference, name, TheirMethod(function, kind))


def _method(entry: Any) -> tuple[str, str, Any]:
    """One entry of the runner's "methods" reply: [name, kind, function]. The name crosses as its
    characters' code points: a string the student's process sent is kept out of the feedback's
    messages (``JudgeCodec.texts``), and a test's own message may well say "sin". A name too long
    to lend is read, and then not lent (:func:`lendable`): an odd name costs no other method."""
    if type(entry) is not list or len(entry) != 3:
        raise ProtocolError("a method of the student's class is not [name, kind, function]")
    codes, kind, function = entry
    if type(codes) is not list or any(type(c) is not int or not 0 < c < 0x110000 for c in codes):
        raise ProtocolError("a method's name is not a list of characters")
    if type(kind) is not int or kind not in KINDS:
        raise ProtocolError("a method's kind is not 0, 1, 2 or 3")
    return "".join(map(chr, codes)), KINDS[kind], function
