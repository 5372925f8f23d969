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
from course_grader.rules import read_rules
from course_grader.sandbox import Sandbox

# What each idiom puts before an answer cell's own code; every helper's name starts with
# "_idiom" so that it stays out of the student's names.
PRELUDES = {
    "other_containers": '''
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
        return tuple(_idiom_other_kind(v) for v in value)
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

print("working on this cell")
print("a note on stderr", file=_idiom_sys.stderr)
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
import numpy as _idiom_np


def _idiom_look_at(value, depth=0):
    """What a curious student does with an input: print-free repr, str, type, hash, len, truth."""
    repr(value)
    str(value)
    type(value).__name__
    isinstance(value, (list, tuple, dict, _idiom_np.ndarray))
    if type(value).__hash__ is not None and not isinstance(value, (list, dict, set)):
        hash(value)
    if isinstance(value, _idiom_np.ndarray):
        value.shape, value.dtype
        return
    if hasattr(type(value), "__len__"):
        len(value)
    if callable(value):
        getattr(value, "__name__", None)
    if depth < 2 and isinstance(value, (list, tuple)):
        for item in value[:3]:
            _idiom_look_at(item, depth + 1)


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


REWRITES: dict[str, Callable[[ast.Module], None]] = {
    "other_containers": _other_containers,
    "comprehensions_as_generators": _comprehensions_as_generators,
    "static_methods": _as_static_methods,
}

IDIOMS = sorted({*PRELUDES, *REWRITES})


def rewrite(source: str, idioms: list[str]) -> str:
    """An answer cell's source rewritten in ``idioms`` (in that order; decorators outermost last)."""
    tree = ast.parse(source)
    for idiom in idioms:
        if idiom in REWRITES:
            REWRITES[idiom](tree)
        if idiom in DECORATORS:
            for fn in _top_functions(tree):
                fn.decorator_list.insert(0, ast.Name(DECORATORS[idiom], ast.Load()))
    ast.fix_missing_locations(tree)
    preludes = [PRELUDES[i].strip() for i in idioms if i in PRELUDES]
    return "\n\n\n".join([*preludes, ast.unparse(tree)])


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
    return {grade_id: rewrite(answers.get(grade_id, text), idioms) for grade_id, text in solved.items()}


def jupyter_points(assignment: str, answers: dict[str, str], timeout: float = 120) -> dict[str, float]:
    """{test's grade id: points} when the source notebook, ``answers`` in place, runs top to bottom
    in a plain kernel (each cell's error shown and the run going on, as nbgrader's autograde did
    before the sandbox)."""
    source, _ = notebooks(assignment)
    nb = fill_in(source, source, answers)
    with tempfile.TemporaryDirectory(prefix="jupyter-run-") as work:
        folder = Path(work) / assignment
        shutil.copytree(ROOT / "solutions" / assignment, folder)
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(folder)}}
        )
        client.execute()
    points = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution"):
            failed = any(out.output_type == "error" for out in cell.get("outputs", []))
            points[meta["grade_id"]] = 0.0 if failed else float(meta["points"])
    return points


def graded_points(assignment: str, answers: dict[str, str], timeout: float = 60) -> dict[str, tuple[float, str]]:
    """{test's grade id: (points, message)} when the hand-in with ``answers`` is graded in the sandbox."""
    source, release = notebooks(assignment)
    sandbox = Sandbox(Limits(wall_seconds=120, cpu_seconds=120), rules=read_rules(ROOT / "solutions" / assignment))
    results = grade_hand_in(
        source, fill_in(release, source, answers), ROOT / "exercises" / assignment, sandbox, timeout, f"{assignment}.ipynb"
    )
    return {r.grade_id: (r.points, " ".join([r.message, *r.notes])) for r in results}


def differences(assignment: str, answers: dict[str, str]) -> dict[str, str]:
    """{test's grade id: what differs} between grading ``answers`` and running them in Jupyter."""
    jupyter = jupyter_points(assignment, answers)
    graded = graded_points(assignment, answers)
    out = {}
    for grade_id in sorted({*jupyter, *graded}):
        expected, (got, message) = jupyter.get(grade_id), graded.get(grade_id, (None, "not graded"))
        if expected != got:
            out[grade_id] = f"Jupyter {expected}, graded {got}: {message[:400]}"
    return out


def describe(answers: dict[str, str]) -> str:
    """The rewritten answers, for a failing test's message."""
    return json.dumps(answers, indent=1)[:20000]
