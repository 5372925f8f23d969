"""What the student's code may learn of a test's function by looking at it (the judge's side):
its name and its signature, which honest code prints and binds, and nothing that leads into the
judge (code, frames, namespaces). A function a hidden test defines shows neither its name nor its
parameters' names and defaults: they are the hidden test's text and inputs."""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

from course_grader.protocol import NAMES

# What leads from an object to the judge's code, frames and namespaces: dunders (__globals__,
# __closure__, __self__, __dict__ ...) and the fields of frames, code, generators, tracebacks.
HIDDEN_ATTRIBUTES = ("__", "f_", "co_", "gi_", "cr_", "ag_", "tb_")
A_HIDDEN_DEFAULT = "<a default of the hidden test>"
A_HIDDEN_FUNCTION = "<a function of the hidden test>"  # its name and repr


def in_hidden_test(target: Any) -> bool:
    """Whether ``target`` is a function a hidden test defines, or made of one: a method of it, a
    ``functools.partial`` of it (ps03's probe), a wrapper of it (``functools.wraps``)."""
    for _ in range(100):
        code = getattr(getattr(target, "__func__", target), "__code__", None)
        if isinstance(code, types.CodeType) and code.co_filename == "<hidden test>":
            return True
        if isinstance(target, functools.partial):
            target = target.func
        elif isinstance(target, types.FunctionType) and "__wrapped__" in vars(target):
            target = vars(target)["__wrapped__"]
        else:
            return False
    return False


def named_in_hidden_test(target: Any) -> bool:
    """Whether ``target`` is a function a hidden test defines under a name of its own (a lambda
    at its top level is '<lambda>'): its name, which its names and repr show, is the hidden test's
    text. Other functions' names (``f.__name__``, which honest code prints) may be read."""
    qualname = getattr(getattr(target, "__func__", target), "__qualname__", None)
    return in_hidden_test(target) and qualname != "<lambda>"


def parameters(function: Any) -> list:
    """``inspect.signature(function)`` as data the runner makes a signature of again
    (:func:`course_grader.protocol.signature`): each parameter's name, kind, whether it has a
    default, and the default (an object the student's code may read, not call). A hidden test's
    own function keeps its names and defaults (ps06's ``counted_f = lambda x, f=f: ...`` keeps
    the uncounted ``f``): its parameters are numbered and its defaults a placeholder."""
    try:
        found = inspect.signature(function)
    except (TypeError, ValueError):  # none to read (a builtin's): none on the student's side either
        raise AttributeError("__signature__") from None
    hidden = in_hidden_test(function)
    return [
        [
            f"arg{k}" if hidden else p.name,
            int(p.kind),
            p.default is not p.empty,
            A_HIDDEN_DEFAULT if hidden else None if p.default is p.empty else p.default,
        ]
        for k, p in enumerate(found.parameters.values())
    ]


def by_their_names(function: Any, kwargs: Any) -> Any:
    """A call's keyword arguments, where ``function`` is a hidden test's own, with the numbered names
    :func:`parameters` gave its parameters (``arg0``) as its own: code that passes the arguments by
    the names it read off the signature calls it as in Jupyter (ps02's ``gradient`` calling
    ``f(**{name: dual ...})`` lost the hidden test's ``lambda a, b, c: ...``, 0/2)."""
    if type(kwargs) is not dict or not kwargs or not in_hidden_test(function):
        return kwargs
    names = {f"arg{k}": name for k, name in enumerate(inspect.signature(function).parameters)}
    return {names.get(key, key): value for key, value in kwargs.items()}


def attribute(target: Any, name: str) -> Any:
    """``target.name``, read by the student's code: data, and of Python's own attributes only a
    function's name and signature (:data:`course_grader.protocol.NAMES`), a hidden test's own as
    placeholders (printed as in Jupyter, but not the test's text)."""
    if name == "__signature__":
        return parameters(target)
    if name in NAMES and named_in_hidden_test(target):
        return A_HIDDEN_FUNCTION
    if name.startswith(HIDDEN_ATTRIBUTES) and name not in NAMES:
        raise AttributeError(f"{name}: the test's objects show only their data, not Python's internals")
    return getattr(target, name)


def settable(target: Any, name: str) -> None:
    """Raise AttributeError as Python would for ``target.name = ...``, without setting it: an
    object with neither a ``__dict__`` nor a slot or property of that name (course_lib's ``Value``
    and ``Tensor`` have slots) takes no new attribute in Jupyter, so marking a test's node
    (``node._seen = True``) fails there and must fail graded too."""
    found = next((vars(k)[name] for k in type(target).__mro__ if name in vars(k)), None)
    if isinstance(found, property) and found.fset is None:
        raise AttributeError(f"property {name!r} of {type(target).__name__!r} object has no setter")
    if not hasattr(type(found), "__set__") and not hasattr(target, "__dict__"):
        raise AttributeError(f"{type(target).__name__!r} object has no attribute {name!r}")


def instance_names(target: Any) -> list[str]:
    """The names of ``vars(target)`` (the runner's :class:`course_grader.instance_attributes.InstanceDict`),
    for an object of data with an instance ``__dict__`` (a notebook ``Node``); TypeError, as
    ``vars()`` raises, without one. Functions, classes and modules show none: their names are the
    test's text and lead into the judge."""
    if not hasattr(target, "__dict__") or callable(target) or isinstance(target, types.ModuleType):
        raise TypeError("vars() argument must have __dict__ attribute")
    return [name for name in vars(target) if type(name) is str and not name.startswith(HIDDEN_ATTRIBUTES)]
