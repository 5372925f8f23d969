"""Honest idioms, generated: answers rewritten in other ways a student might write them, graded and
run in Jupyter side by side.

A hand-in's fair score is the one its notebook gets when it runs top to bottom in Jupyter (issue
27). Each idiom below rewrites the source of every answer cell (with the AST) without changing
what the answers compute: their results come back in other containers, they are decorated, run in
a thread, handed copies, they look at their inputs, the set-up classes get methods of the
student's. :func:`differences` grades a hand-in so rewritten and runs the same hand-in in a plain
kernel, with the hidden tests in place, and returns the parts whose points differ: for every
idiom, on the solution and on every typical mistake, there must be none.
"""

from __future__ import annotations

import ast
import importlib
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader_helpers import ROOT, answer_cells, fill_in, nbgrader_meta

from course_grader.handin import grade_hand_in
from course_grader.limits import Limits
from course_grader.parts import parts
from course_grader.rules import read_rules
from course_grader.sandbox import Sandbox
from course_grader.their_methods import OPERATORS

TIMEOUT = 60  # seconds a cell or a test may run, both ways (make autograde's default)

# What each idiom puts before an answer cell's own code; every helper's name starts with
# "_idiom" so that it stays out of the student's names.
PRELUDES = {
    "other_containers": '''
from collections import namedtuple as _idiom_namedtuple

import numpy as _idiom_np


class _IdiomList(list):
    """A list of the student's own kind."""


class _IdiomDict(dict):
    """A dict of the student's own kind."""


class _IdiomFloat(float):
    """A float of the student's own kind."""


class _IdiomArray(_idiom_np.ndarray):
    """An array of the student's own kind."""


def _idiom_other_kind(value):
    """The same value in containers a student might have chosen instead."""
    if type(value) is list:
        return _IdiomList(_idiom_other_kind(v) for v in value)
    if type(value) is dict:
        return _IdiomDict({k: _idiom_other_kind(v) for k, v in value.items()})
    if type(value) is tuple:
        fields = [f"item{k}" for k in range(len(value))]
        return _idiom_namedtuple("_IdiomTuple", fields)(*(_idiom_other_kind(v) for v in value))
    if type(value) is float:
        return _IdiomFloat(value)
    if type(value) is _idiom_np.ndarray:
        return value.view(_IdiomArray)
    return value
''',
    "decorated": '''
import functools as _idiom_functools

_idiom_calls = {}


def _idiom_counted(fn):
    """Counts the calls of fn, as a student timing their code might."""

    @_idiom_functools.wraps(fn)
    def counted(*args, **kwargs):
        _idiom_calls[fn.__name__] = _idiom_calls.get(fn.__name__, 0) + 1
        return fn(*args, **kwargs)

    return counted
''',
    "noisy": '''
import sys as _idiom_sys
import warnings as _idiom_warnings

from IPython.display import display as _idiom_display

print("working on this cell")
print("a note on stderr", file=_idiom_sys.stderr)
_idiom_display({"cell": "a first draft"})
get_ipython().run_line_magic("time", "_idiom_timed = sum(range(10))")  # noqa: F821  (as jupytext writes %time)
_idiom_warnings.warn("this cell's answer is a first draft", stacklevel=1)
_idiom_said = set()


def _idiom_noisy(fn):
    """Says on stderr when fn is first called, and warns on every call."""

    def noisy(*args, **kwargs):
        if fn.__name__ not in _idiom_said:
            _idiom_said.add(fn.__name__)
            print(f"calling {fn.__name__}", file=_idiom_sys.stderr)
        _idiom_warnings.warn(f"{fn.__name__} is not tuned yet", stacklevel=2)
        return fn(*args, **kwargs)

    noisy.__name__, noisy.__doc__ = fn.__name__, fn.__doc__
    return noisy
''',
    "threaded": '''
import concurrent.futures as _idiom_futures
import threading as _idiom_threading

_idiom_inside = _idiom_threading.local()


def _idiom_threaded(fn):
    """Runs the outermost call of fn in a worker thread."""

    def threaded(*args, **kwargs):
        if getattr(_idiom_inside, "busy", False):
            return fn(*args, **kwargs)

        def work():
            _idiom_inside.busy = True
            return fn(*args, **kwargs)

        with _idiom_futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(work).result()

    threaded.__name__, threaded.__doc__ = fn.__name__, fn.__doc__
    return threaded
''',
    "looked_at": '''
import copy as _idiom_copy
import weakref as _idiom_weakref

import numpy as _idiom_np


def _idiom_look_at(value, depth=0):
    """What a curious student does with an input: print-free repr, str, type, hash, len, truth."""
    repr(value)
    str(value)
    type(value).__name__
    isinstance(value, (list, tuple, dict, _idiom_np.ndarray))
    try:
        hash(value)
    except TypeError:  # unhashable, as a list is
        pass
    if isinstance(value, _idiom_np.ndarray):
        value.shape, value.dtype
        return
    if hasattr(type(value), "__len__") and getattr(value, "ndim", 1) != 0:  # a 0-d array or Tensor has no length
        len(value)
    if callable(value):
        getattr(value, "__name__", None)
    try:
        _idiom_weakref.ref(value)
    except TypeError:  # a list or a float cannot be referred to weakly
        pass
    _idiom_same_when_read_again(value)
    try:  # a mark of the student's on the object, read back at once
        value.idiom_seen = True
    except (AttributeError, TypeError):  # an array, a list, a class with slots
        pass
    else:
        if value.idiom_seen is not True:
            raise AssertionError("an attribute set on an object did not stay")
    for name in ("describe", "idiom_helper"):  # the helpers setup_class_extras and subclassed_setup add
        helper = getattr(value, name, None)
        if getattr(helper, "__name__", "") in ("_idiom_describe", "idiom_helper"):
            helper()
    if depth < 2 and isinstance(value, (list, tuple)):
        for item in value[:3]:
            _idiom_look_at(item, depth + 1)


def _idiom_same_when_read_again(value):
    """What the student's code reads twice is the same object, as it is in Jupyter: attributes
    (through ``vars`` too), items, the object as a dict key; a shallow copy is of its class."""
    if isinstance(getattr(type(value), "idiom_kind", None), property):  # setup_class_extras' property
        if value.idiom_kind != type(value).__name__:
            raise AssertionError("a property of the student's read another class")
    if isinstance(value, (str, bytes, int, float, complex)):
        return
    try:
        attributes = dict(vars(value))
    except TypeError:  # no __dict__: a list, an array, a class with slots
        attributes = {}
    for name, attribute in attributes.items():
        if not name.startswith("idiom") and getattr(value, name) is not attribute:
            raise AssertionError(f"reading .{name} twice gave two objects")
        if type(attribute) in (list, tuple) and not all(a is b for a, b in zip(attribute, getattr(value, name))):
            raise AssertionError(f"the items of .{name} read twice were other objects")
    if type(value) in (list, tuple) and not all(a is b for a, b in zip(value, value)):
        raise AssertionError("a list's items read twice were other objects")
    try:
        keyed = {value: "seen"}
    except TypeError:  # unhashable
        pass
    else:
        if keyed[value] != "seen" or value not in {value}:
            raise AssertionError("an object did not find itself as a key")
    try:
        copied = _idiom_copy.copy(value)
    except TypeError:  # a generator, a module
        return
    if type(copied) is not type(value):
        raise AssertionError("a shallow copy changed the class")


def _idiom_looked_at(fn):
    """Looks at fn's inputs and result before handing the result back."""

    def looked_at(*args, **kwargs):
        for value in (*args, *kwargs.values()):
            _idiom_look_at(value)
        result = fn(*args, **kwargs)
        _idiom_look_at(result)
        return result

    looked_at.__name__, looked_at.__doc__ = fn.__name__, fn.__doc__
    return looked_at
''',
    "copied_inputs": '''
import copy as _idiom_copy


def _idiom_copies(fn):
    """Hands fn copies of its list, dict and array inputs, as a careful student might."""

    def copies(*args, **kwargs):
        def copied(value):
            return _idiom_copy.copy(value) if isinstance(value, (list, dict, _idiom_np.ndarray)) else value

        return fn(*map(copied, args), **{k: copied(v) for k, v in kwargs.items()})

    copies.__name__, copies.__doc__ = fn.__name__, fn.__doc__
    return copies


import numpy as _idiom_np
''',
    "quiet_numpy": '''
import functools as _idiom_functools
import sys as _idiom_sys
import warnings as _idiom_warnings

import numpy as _idiom_np

_idiom_sys.setrecursionlimit(max(_idiom_sys.getrecursionlimit(), 5000))  # as a student whose recursion went deep


def _idiom_quiet(fn):
    """Runs fn with NumPy's floating-point warnings and Python's warnings silenced."""

    @_idiom_functools.wraps(fn)
    def quiet(*args, **kwargs):
        with _idiom_np.errstate(all="ignore"), _idiom_warnings.catch_warnings():
            _idiom_warnings.simplefilter("ignore")
            return fn(*args, **kwargs)

    return quiet
''',
    "kept_history": '''
_idiom_history = []


def _idiom_kept(fn):
    """Keeps every call's inputs and result, as a student debugging might."""

    def kept(*args, **kwargs):
        result = fn(*args, **kwargs)
        _idiom_history.append((fn.__name__, args, kwargs, result))
        return result

    kept.__name__, kept.__doc__ = fn.__name__, fn.__doc__
    return kept
''',
}

DECORATORS = {
    "decorated": "_idiom_counted",
    "noisy": "_idiom_noisy",
    "threaded": "_idiom_threaded",
    "looked_at": "_idiom_looked_at",
    "kept_history": "_idiom_kept",
    "copied_inputs": "_idiom_copies",
    "quiet_numpy": "_idiom_quiet",
}

# What the first answer cell does to each class the set-up cells define (``{cls}``), before any
# answer: a student's helpers, a repr of their own, an order to keep objects in a heap, and (with
# ``subclassed_setup``) the class rebound to a subclass of it, as a student adding methods might.
CLASS_PRELUDES = {
    "setup_class_extras": '''
{cls}.__repr__ = lambda self: f"<{{type(self).__name__}} of the student's>"
{cls}.idiom_visited = False
if {cls}.__lt__ is object.__lt__:
    {cls}.__lt__ = lambda self, other: id(self) < id(other)
{cls}.idiom_kind = property(lambda self: type(self).__name__)


def _idiom_describe(self):
    """A helper method of the student's."""
    return type(self).__name__


{cls}.describe = _idiom_describe
''',
    "subclassed_setup": '''
import functools as _idiom_functools


class {cls}({cls}):
    """The given class, with helpers of the student's."""

    __slots__ = ("idiom_mark",)

    def idiom_helper(self):
        has_dict = any("__dict__" in vars(k) for k in self.__class__.__mro__)  # not where the given class has slots
        return type(self).__name__, getattr(self, "idiom_mark", None), self.idiom_cached if has_dict else None

    @_idiom_functools.cached_property
    def idiom_cached(self):
        return type(self).__name__
''',
}


def _top_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [node for node in tree.body if isinstance(node, ast.FunctionDef)]


class _Returns(ast.NodeTransformer):
    """``return e`` becomes ``return _idiom_other_kind(e)`` in one function (not in the functions
    and classes it defines)."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_ClassDef(self, node):
        return node

    def visit_Return(self, node):
        if node.value is not None:
            node.value = ast.Call(ast.Name("_idiom_other_kind", ast.Load()), [node.value], [])
        return node


def _other_containers(tree: ast.Module) -> None:
    for fn in _top_functions(tree):
        fn.body = [_Returns().visit(statement) for statement in fn.body]


class _Comprehensions(ast.NodeTransformer):
    """``[e for ...]`` becomes ``list(e for ...)``: the same list, made from a generator."""

    def visit_ListComp(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("list", ast.Load()), [ast.GeneratorExp(node.elt, node.generators)], [])


def _comprehensions_as_generators(tree: ast.Module) -> None:
    _Comprehensions().visit(tree)


def _as_static_methods(tree: ast.Module) -> None:
    """Top-level functions become static methods of a helper class, bound back to their names."""
    functions = _top_functions(tree)
    if not functions:
        return
    first = tree.body.index(functions[0])
    for fn in functions:
        fn.decorator_list.insert(0, ast.Name("staticmethod", ast.Load()))
        tree.body.remove(fn)
    helper = ast.ClassDef("_IdiomAnswers", [], [], functions, [])
    binds = [
        ast.Assign([ast.Name(fn.name, ast.Store())], ast.Attribute(ast.Name("_IdiomAnswers", ast.Load()), fn.name))
        for fn in functions
    ]
    tree.body[first:first] = [helper, *binds]


def _as_lambdas(tree: ast.Module) -> None:
    """``def f`` becomes ``def _idiom_f`` and ``f = lambda *args, **kwargs: _idiom_f(*args, **kwargs)``."""
    for fn in _top_functions(tree):
        name, fn.name = fn.name, f"_idiom_{fn.name}"
        call = ast.Call(
            ast.Name(fn.name, ast.Load()),
            [ast.Starred(ast.Name("args", ast.Load()), ast.Load())],
            [ast.keyword(None, ast.Name("kwargs", ast.Load()))],
        )
        arguments = ast.arguments([], [], ast.arg("args"), [], [], ast.arg("kwargs"), [])
        at = tree.body.index(fn) + 1
        tree.body.insert(at, ast.Assign([ast.Name(name, ast.Store())], ast.Lambda(arguments, call)))


def _made_by_factories(tree: ast.Module) -> None:
    """Each top-level function is made by a factory function and bound to its name."""
    for fn in _top_functions(tree):
        factory = ast.FunctionDef(
            f"_idiom_make_{fn.name}",
            ast.arguments([], [], None, [], [], None, []),
            [fn, ast.Return(ast.Name(fn.name, ast.Load()))],
            [],
        )
        made = ast.Assign([ast.Name(fn.name, ast.Store())], ast.Call(ast.Name(factory.name, ast.Load()), [], []))
        at = tree.body.index(fn)
        tree.body[at : at + 1] = [factory, made]


class _Floats(ast.NodeTransformer):
    """Float literals become NumPy scalars (``np.float64(0.5)``), as from arithmetic on arrays."""

    def visit_Constant(self, node):
        if type(node.value) is not float:
            return node
        return ast.Call(ast.Attribute(ast.Name("_idiom_np", ast.Load()), "float64"), [node], [])

    def visit_arguments(self, node):  # defaults stay as written
        return node


def _numpy_literals(tree: ast.Module) -> None:
    tree.body[:0] = ast.parse("import numpy as _idiom_np").body
    _Floats().visit(tree)


def _annotated(tree: ast.Module) -> None:
    """Type hints on every argument and result, postponed (``from __future__ import annotations``)."""
    for fn in _top_functions(tree):
        for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
            arg.annotation = ast.parse("np.ndarray | float | list", mode="eval").body
        fn.returns = ast.Name("Any", ast.Load())


class _OwnClass(ast.NodeTransformer):
    """``Value(...)`` in a method of ``Value`` becomes ``type(self)(...)``, as a student writing
    for subclasses might."""

    def __init__(self, cls: str):
        self.cls = cls

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == self.cls:
            node.func = ast.Call(ast.Name("type", ast.Load()), [ast.Name("self", ast.Load())], [])
        return node


def _own_class_constructors(tree: ast.Module) -> None:
    """In the methods of a class of the cell, and in functions the cell sets on a class
    (``Value.__mul__ = mul``), the class's own constructor becomes ``type(self)``."""
    owners = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            owners.update((id(fn), node.name) for fn in node.body if isinstance(fn, ast.FunctionDef))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    owners.update((id(fn), target.value.id) for fn in _top_functions(tree) if fn.name == node.value.id)
    for fn in ast.walk(tree):
        arguments = fn.args.posonlyargs + fn.args.args if isinstance(fn, ast.FunctionDef) else []
        if id(fn) in owners and arguments and arguments[0].arg == "self" and not fn.decorator_list:
            fn.body = [_OwnClass(owners[id(fn)]).visit(statement) for statement in fn.body]


REWRITES: dict[str, Callable[[ast.Module], None]] = {
    "other_containers": _other_containers,
    "comprehensions_as_generators": _comprehensions_as_generators,
    "static_methods": _as_static_methods,
    "lambdas": _as_lambdas,
    "made_by_factories": _made_by_factories,
    "numpy_literals": _numpy_literals,
    "annotated": _annotated,
    "own_class_constructors": _own_class_constructors,
}

STRUCTURAL = ("lambdas", "made_by_factories", "static_methods")  # how the functions are bound
IDIOMS = sorted({*PRELUDES, *REWRITES, *CLASS_PRELUDES})


def setup_classes(source: nbformat.NotebookNode) -> dict[str, bool]:
    """The classes the set-up cells (neither answers nor tests) define (True) or import from
    course_lib (False)."""
    names = {}
    for cell in source.cells:
        if (
            cell.cell_type == "code"
            and not nbgrader_meta(cell).get("grade")
            and not nbgrader_meta(cell).get("solution")
        ):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.ClassDef):
                    names[node.name] = True
                elif isinstance(node, ast.ImportFrom) and node.module.startswith("course_lib"):
                    module = importlib.import_module(node.module)
                    for alias in node.names:
                        if isinstance(getattr(module, alias.name, None), type):
                            names[alias.asname or alias.name] = False
    return names


def rewrite(source: str, idioms: list[str], classes: dict[str, bool] | None = None) -> str:
    """An answer cell's source rewritten in ``idioms`` (decorators in that order, the last outermost);
    ``classes``: the set-up classes this cell changes first (the first answer cell's), each True
    where the set-up cells define it: only those are subclassed (a course_lib class rebound to a
    subclass fails the tests' ``isinstance`` in Jupyter)."""
    classes = classes or {}
    tree = ast.parse(source)
    for idiom in idioms:  # what the functions do, then how they are wrapped, then how they are bound
        if idiom in REWRITES and idiom not in STRUCTURAL:
            REWRITES[idiom](tree)
    for idiom in idioms:
        for fn in _top_functions(tree) if idiom in DECORATORS else ():
            fn.decorator_list.insert(0, ast.Name(DECORATORS[idiom], ast.Load()))
    for idiom in idioms:
        if idiom in STRUCTURAL:
            REWRITES[idiom](tree)
    ast.fix_missing_locations(tree)
    preludes = [PRELUDES[i].strip() for i in idioms if i in PRELUDES]
    preludes += [
        CLASS_PRELUDES[i].format(cls=c).strip()
        for i in idioms
        if i in CLASS_PRELUDES
        for c, defined in classes.items()
        if defined or i != "subclassed_setup"
    ]
    future = ["from __future__ import annotations"] if "annotated" in idioms else []  # a cell's first line
    return "\n\n\n".join([*future, *preludes, ast.unparse(tree)])


def notebooks(assignment: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """The assignment's source (with hidden tests) and its released student version."""
    name = f"{assignment}.ipynb"
    source = nbformat.read(ROOT / "solutions" / assignment / name, as_version=4)
    release = nbformat.read(ROOT / "exercises" / assignment / name, as_version=4)
    return source, release


def rewritten_answers(assignment: str, answers: dict[str, str], idioms: list[str]) -> dict[str, str]:
    """Every answer cell (``answers`` where given, else the solution's) rewritten in ``idioms``."""
    source, _ = notebooks(assignment)
    solved = {grade_id: cell.source for grade_id, cell in answer_cells(source).items()}
    first, classes = next(iter(solved)), setup_classes(source)
    return {
        grade_id: rewrite(answers.get(grade_id, text), idioms, classes if grade_id == first else {})
        for grade_id, text in solved.items()
    }


def _run(assignment: str, nb: nbformat.NotebookNode, timeout: float) -> dict[str, float]:
    """{test's grade id: points} of ``nb`` run top to bottom in a plain kernel in a copy of the
    assignment's folder (each cell's error shown and the run going on, as nbgrader's autograde
    did before the sandbox; a cell still running after ``timeout`` seconds interrupted)."""
    with tempfile.TemporaryDirectory(prefix="jupyter-run-") as work:
        folder = Path(work) / assignment
        shutil.copytree(ROOT / "solutions" / assignment, folder)
        client = NotebookClient(
            nb,
            timeout=timeout,
            interrupt_on_timeout=True,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(folder)}},
        )
        client.execute()
    points = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution"):
            failed = any(out.output_type == "error" for out in cell.get("outputs", []))
            points[meta["grade_id"]] = 0.0 if failed else float(meta["points"])
    return points


# The references' cell: the solution's answers, then what the grader lends a class they make
# anew in place of the student's (course_grader.their_methods): the student's methods it lacks.
REFERENCES = """
_idiom_theirs = {{name: value for name, value in globals().items() if isinstance(value, type)}}
{references}
for _idiom_name, _idiom_class in _idiom_theirs.items():
    _idiom_made = globals().get(_idiom_name)
    if not isinstance(_idiom_made, type) or _idiom_made in _idiom_theirs.values():
        continue
    for _idiom_klass in reversed(_idiom_class.__mro__[:-1]):
        for _idiom_attr, _idiom_method in vars(_idiom_klass).items():
            if (
                _idiom_attr.isidentifier()
                and (not _idiom_attr.startswith("__") or _idiom_attr in {operators!r})
                and isinstance(_idiom_method, (type(len), type(lambda: 0), classmethod, staticmethod))
                and not hasattr(_idiom_made, _idiom_attr)
            ):
                setattr(_idiom_made, _idiom_attr, _idiom_method)
"""


def _with_references(nb: nbformat.NotebookNode, test: str, names: list[str], solved: dict[str, str]):
    """``nb`` up to the test ``test``, with the solution's answer cells ``names`` run just before it."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    at = next(k for k, cell in enumerate(nb.cells) if nbgrader_meta(cell).get("grade_id") == test)
    made = "\n\n".join(solved[name] for name in names)
    references = nbformat.v4.new_code_cell(REFERENCES.format(references=made, operators=set(sorted(OPERATORS))))
    nb.cells = [*nb.cells[:at], references, nb.cells[at]]
    return nb


def jupyter_points(assignment: str, answers: dict[str, str], timeout: float = TIMEOUT) -> dict[str, float]:
    """{test's grade id: points} when the source notebook, ``answers`` in place, runs top to bottom
    in a plain kernel, one slip costing once as the grader has it: a test whose hidden lines name
    references (``# grader: reference <answers>``), once one of those answers failed its own test,
    runs again with the solution's answers from that one on, just before it (as the grader runs
    them, in a process of the part's own)."""
    source, _ = notebooks(assignment)
    nb = fill_in(source, source, answers)
    first = _run(assignment, nb, timeout)
    solved = {grade_id: cell.source for grade_id, cell in answer_cells(source).items()}
    points: dict[str, float] = {}
    failed: set[str] = set()
    for part in parts(source, nb):
        names = [cell["name"] for cell in part.references]
        needed = next((k for k, name in enumerate(names) if name in failed), None)
        if needed is None:
            points[part.grade_id] = first[part.grade_id]
        else:
            again = _with_references(nb, part.grade_id, names[needed:], solved)
            points[part.grade_id] = _run(assignment, again, timeout)[part.grade_id]
        if points[part.grade_id] == 0:
            failed.update(part.answers)
    return points


def graded_points(assignment: str, answers: dict[str, str], timeout: float = TIMEOUT) -> dict[str, tuple[float, str]]:
    """{test's grade id: (points, message)} when the hand-in with ``answers`` is graded in the sandbox."""
    source, release = notebooks(assignment)
    sandbox = Sandbox(Limits(wall_seconds=120, cpu_seconds=120), rules=read_rules(ROOT / "solutions" / assignment))
    results = grade_hand_in(
        source,
        fill_in(release, source, answers),
        ROOT / "exercises" / assignment,
        sandbox,
        timeout,
        f"{assignment}.ipynb",
    )
    return {r.grade_id: (r.points, " ".join([r.message, *r.notes])) for r in results}


def differences(assignment: str, answers: dict[str, str]) -> tuple[dict[str, float], dict[str, str]]:
    """Jupyter's points for ``answers``, and {test's grade id: what differs} where grading them gives
    other points."""
    jupyter, graded = jupyter_points(assignment, answers), graded_points(assignment, answers)
    differ = {}
    for part in sorted({*jupyter, *graded}):
        points, message = graded.get(part, (None, "not graded"))
        if jupyter.get(part) != points:
            differ[part] = f"Jupyter {jupyter.get(part)}, graded {points}: {_shortened(message)}"
    return jupyter, differ


def _shortened(message: str, head: int = 200, tail: int = 600) -> str:
    """A long message's beginning (what was checked) and end (what went wrong)."""
    return message if len(message) <= head + tail else f"{message[:head]} ... {message[-tail:]}"
