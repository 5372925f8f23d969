"""The notebook as the runner runs it: the module its cells run in, one cell under a time limit,
the set-up cells' functions kept as those cells defined them, and what the student's cells bound
(:mod:`course_grader.runner`)."""

from __future__ import annotations

import builtins
import io
import signal
import sys
import types
from typing import Any

from course_grader.magics import PLAIN_CELL_MAGICS, without_magics
from course_grader.protocol import Cell, CellOutcome, clip


class CellTimeout(BaseException):
    """A cell ran past its time."""


# The notebook's cells run in a module of their own that stands as __main__ while they run, as
# Jupyter's does: pickle (multiprocessing's Pool) finds a cell's function as __main__.<name>.
NOTEBOOK = types.ModuleType("__main__")
NAMESPACE: dict[str, Any] = vars(NOTEBOOK)
NAMESPACE["__builtins__"] = builtins
SETUP_CLASSES: dict[str, type] = {}  # the set-up cells' classes, by qualified name
SETUP_ATTRIBUTES: dict[type, dict[str, Any]] = {}  # each set-up class's own attributes, as its cells left them
MISSING = object()


def their_operator(cls: type, dunder: str, instead: str = "") -> Any:
    """The operator (``__lt__``, ``__add__`` ...) the student's cells gave the notebook's class
    ``cls`` (``Node.__lt__ = ...`` to keep nodes in a heap, or one on a subclass bound to its name),
    which the runner's stand-in for one of the test's objects of that class runs, as in Jupyter;
    None where it has none of theirs (the judge's object answers). With ``instead``, their
    operator of that name where ``cls`` has no ``dunder`` at all, as Python falls back on it
    (``in`` iterates with their ``__iter__``, truth is their ``__len__``)."""
    if instead:
        return None if any(dunder in vars(k) for k in cls.__mro__[:-1]) else their_operator(cls, instead)
    for klass in cls.__mro__:
        if dunder in vars(klass):
            value = vars(klass)[dunder]
            if klass.__module__ != "__main__" or SETUP_ATTRIBUTES.get(klass, {}).get(dunder, MISSING) is value:
                return None
            return value if hasattr(type(value), "__get__") else None
    return None


def notebook_class(like: str) -> type | None:
    """The class (``module.qualname``) a judge's object is an instance of, as the student's side
    knows it: the set-up cells' (or a subclass the student's cells bound to its name: ``class
    Node(Node)`` with helpers, or the class pasted anew; in Jupyter the test's objects are made
    with it) or course_lib's. None for any other."""
    module, _, qualname = like.rpartition(".")
    found = SETUP_CLASSES.get(qualname) if module == "__main__" else None
    if module.split(".")[0] == "course_lib" and module in sys.modules:
        found = getattr(sys.modules[module], qualname, None)
    if not isinstance(found, type):
        return None
    current = NAMESPACE.get(qualname) if module == "__main__" else None
    anew = isinstance(current, type) and (current.__module__, current.__qualname__) == (module, qualname)
    return current if isinstance(current, type) and (anew or issubclass(current, found)) else found


METHOD_KINDS = {types.FunctionType: 0, classmethod: 1, staticmethod: 2, property: 3}  # as the judge's KINDS reads them


def class_methods(cls: Any) -> list:
    """The functions, class and static methods and properties a class of the notebook's has (its own
    and its bases', but Python's): [name as code points, kind, function (a property's getter)], kind
    0 to 3. The judge lends them to a reference class that stands in for this one (their_methods)."""
    found: dict[str, list] = {}
    for klass in reversed(cls.__mro__) if isinstance(cls, type) else ():
        if klass.__module__ == "builtins":
            continue
        for name, value in vars(klass).items():
            kind = METHOD_KINDS.get(type(value))
            if kind is not None:
                function = value if kind == 0 else value.fget if kind == 3 else value.__func__
                found[name] = [[ord(c) for c in name], kind, function]
    return list(found.values())


def freeze(bound: dict[str, Any], scope: dict[str, Any]) -> None:
    """What a set-up cell just bound, kept in ``scope`` as it is now: each of its functions
    rebuilt from the code it was compiled to, over ``scope`` instead of the notebook's
    namespace (so replacing its ``__code__`` later, or rebinding a helper it calls, changes
    nothing here)."""
    for name, value in bound.items():
        if type(value) is types.FunctionType and value.__code__.co_filename.startswith("<set-up "):
            copy = types.FunctionType(value.__code__, scope, value.__name__, value.__defaults__, value.__closure__)
            copy.__kwdefaults__ = value.__kwdefaults__
            copy.__qualname__, copy.__doc__ = value.__qualname__, value.__doc__
            value = copy
        scope[name] = value


def set_up_functions(scope: dict[str, Any], theirs: set[str]):
    """How the judge's ``student_side(f, ...)`` finds the set-up cells' ``f``: as the set-up
    cells defined it (:func:`freeze`), over the set-up cells' bindings and the builtins as they
    were before any of the student's code ran, with the current values of ``theirs`` (the names
    the answers bind) and of the set-up classes (which the answers may extend) only: it runs
    the student's functions and classes and nothing else of theirs. A closure: no module
    global of the runner, which the student's cells could rebind, refers to the table."""
    table = {name: value for name, value in scope.items() if not name.startswith("__")}
    classes = {name for name, value in table.items() if isinstance(value, type)}

    def lookup(name: str) -> Any:
        if name not in table:
            raise NameError(f"the notebook's set-up cells define no {name!r}")
        for current in theirs | classes:
            value = NAMESPACE.get(current, MISSING)
            if current in theirs and value is not MISSING or isinstance(value, type):
                scope[current] = value
        found, now = table[name], NAMESPACE.get(name)
        if isinstance(found, type) and isinstance(now, type) and issubclass(now, found):
            # A subclass the student's cells bound to the class's name (``class MLP(MLP)`` with a
            # helper method): in Jupyter ``student_side(MLP, ...)`` makes one of theirs.
            return now
        return found

    return lookup


def display(*objects: Any, **options: Any) -> None:
    """IPython's ``display``, which Jupyter puts among the builtins: what it shows is not graded."""


builtins.display = display  # type: ignore[attr-defined]


class Shell:
    """What Jupyter's builtin ``get_ipython()`` gives, for the magics a cell runs through it
    (``get_ipython().run_line_magic("matplotlib", "inline")``) as :func:`without_magics` runs
    them written with ``%``: a line magic is ``pass`` but ``time``, which runs its statement; a
    cell magic that only measures runs its body; any other fails, naming it. Its ``user_ns`` is
    the cells' namespace, as IPython's is (``get_ipython().user_ns["Num"]``)."""

    user_ns = user_global_ns = NAMESPACE

    def run_line_magic(self, name: str, line: str, *args: Any, **kwargs: Any) -> None:
        if name == "time" and line.strip():
            exec(compile(line.strip(), "<%time>", "exec", dont_inherit=True), NAMESPACE)

    def run_cell_magic(self, name: str, line: str, cell: str, *args: Any, **kwargs: Any) -> None:
        if f"%%{name}" not in PLAIN_CELL_MAGICS:
            raise NotImplementedError(f"%%{name} does not run here: the grader runs cells as Python")
        exec(compile(cell, f"<%%{name}>", "exec", dont_inherit=True), NAMESPACE)


builtins.get_ipython = Shell  # type: ignore[attr-defined]  # get_ipython().run_line_magic(...)


def run_cell(cell: Cell, timeout: float) -> CellOutcome:
    try:
        kind = {"setup": "set-up"}.get(cell["kind"], cell["kind"])
        name = f"<{kind} {cell['name']}>"
        try:
            code = compile(cell["source"], name, "exec", dont_inherit=True)
        except SyntaxError:  # IPython's syntax, which Jupyter runs: its lines that only measure or show
            plain = without_magics(cell["source"])
            if plain is None:
                raise
            code = compile(plain, name, "exec", dont_inherit=True)
    except SyntaxError as error:
        return {
            "status": "syntax",
            "error": "SyntaxError",
            "message": f"{error.msg} (line {error.lineno}); the grader runs Python "
            f"{sys.version_info.major}.{sys.version_info.minor}",
        }
    except RecursionError:  # nested too deeply to compile: the cell fails, as in Jupyter, not the process
        return {"status": "syntax", "error": "RecursionError", "message": "the cell is nested too deeply to compile"}
    out = io.StringIO()
    saved = sys.stdout, sys.stderr

    def on_alarm(signum: int, frame: Any) -> None:
        raise CellTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        sys.stdout = sys.stderr = out
        exec(code, NAMESPACE)
    except CellTimeout:
        return {"status": "timeout", "error": "Timeout", "message": f"the cell ran longer than {timeout:g} s"}
    except BaseException as error:  # noqa: BLE001 - a failing cell is reported, never fatal
        return {"status": "error", "error": type(error).__name__, "message": clip(str(error))}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        sys.stdout, sys.stderr = saved
    return {"status": "ok"}


def student_names(setup_bound: dict[str, int], classes: dict[str, dict[str, int]]) -> dict[str, Any]:
    """What the student's cells bound or changed: names the set-up cells did not bind (or bound
    to something else), and the set-up cells' classes whose attributes they changed
    (``Value.__mul__ = mul``)."""
    changed = {
        name: value
        for name, value in NAMESPACE.items()
        if not name.startswith("__") and setup_bound.get(name) != id(value) and not _is_module(value)
    }
    for name, attributes in classes.items():
        cls = NAMESPACE.get(name)
        if isinstance(cls, type) and {k: id(v) for k, v in vars(cls).items()} != attributes:
            changed[name] = cls
    return changed


def _is_module(value: Any) -> bool:
    return type(value).__name__ == "module"
