"""Exercise rules: the course_lib functions an assignment asks students to write themselves.

Each assignment lists them once, in ``solutions/<assignment>/rules.toml``::

    # course_lib functions students write themselves here
    write_yourself = ["course_lib.check.numerical_grad"]

While that assignment is graded, the course_lib the student's code runs with is a copy in
which each listed function (or method, ``course_lib.tensor.Tensor.backward``) keeps its name
and signature but only raises :class:`ExerciseRule`'s message; a listed module-level table
(``course_lib.graph.PRIMITIVES``, the explicit graph's derivative formulas) is empty and every
lookup in it raises the same. The copy is what the sandbox sees, so a call, a default argument,
a closure, an alias or an import under another name all meet the same rule, and the feedback
names it. The judge and the tests keep the real course_lib.

Whole modules and packages go the same way, by the file system rather than by a hook in the
student's process::

    without_modules = ["course_lib.scalar"]   # course_lib modules or subpackages
    allow_packages = ["torch", "torchgen"]    # other autodiff engines this assignment uses
    without_packages = ["numba"]              # more third-party packages to leave out

A ruled-out course_lib module is, in the copy, a module whose import fails naming the rule; a
ruled-out package (every other package that would do an exercise's work, :data:`OTHER_ENGINES`,
unless the assignment allows it) is hidden by the sandbox (:mod:`course_grader.sandbox`), which
mounts such a module over each copy of the package in its view of the Python environment.

The copies live in the grader's :func:`private_folder`, never in a folder another user of the
machine could have made or may write.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import stat
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import course_lib
from course_grader.parts import parse

RULES_FILE = "rules.toml"
# Packages that would do an exercise's work: differentiate (mpmath.diff: numerical derivatives)
# or sort a graph (networkx.topological_sort, the standard library's graphlib, the toposorts
# of the mypy compiler). Absent unless an assignment allows them (tests/assignments/
# test_rules.py looks through what the sandbox shows for such functions).
OTHER_ENGINES = (
    "torch",
    "torchgen",
    "functorch",
    "jax",
    "jaxlib",
    "autograd",
    "tensorflow",
    "sympy",
    "scipy",
    "mpmath",
    "networkx",
    "graphlib",
    "mypy",
    "mypyc",
    "sqlalchemy",  # sqlalchemy.util.topological.sort (a ps04 topo_sort made of it scored 2/2)
    "alembic",  # its revision map sorts with sqlalchemy's
    "pip",  # its resolver's get_topological_weights orders any graph (a ps04 dfs_postorder made of it scored 2/2)
)


class RuleError(ValueError):
    """A rule names something course_lib does not define."""


@dataclass(frozen=True)
class Rules:
    """What an assignment's student code runs without."""

    functions: tuple[str, ...] = ()  # course_lib functions that only raise (write_yourself)
    modules: tuple[str, ...] = ()  # course_lib modules or subpackages whose import fails
    packages: tuple[str, ...] = OTHER_ENGINES  # third-party packages the sandbox does not show
    # Set-up classes the tests build their own objects of, in the judge, whatever the answers add
    # to them (tests_own_classes): what a student's cells add applies on the student's side only.
    test_classes: tuple[str, ...] = ()

    @property
    def changes_course_lib(self) -> bool:
        return bool(self.functions or self.modules)


def course_lib_root() -> Path:
    """The folder holding the ``course_lib`` package the grader grades against."""
    return Path(course_lib.__file__).resolve().parent.parent


def read_rules(assignment_dir: Path) -> Rules:
    """The assignment's rules (every other autodiff engine left out, without a rules file)."""
    path = Path(assignment_dir) / RULES_FILE
    table = tomllib.loads(path.read_text()) if path.exists() else {}

    def names(key: str, prefix: str = "") -> list[str]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.startswith(prefix) for v in value):
            raise RuleError(f"{path}: {key} must be a list of names" + (f" starting {prefix!r}" if prefix else ""))
        return value

    allowed = set(names("allow_packages"))
    packages = [p for p in OTHER_ENGINES if p not in allowed] + names("without_packages")
    return Rules(
        tuple(sorted(names("write_yourself", "course_lib."))),
        tuple(sorted(names("without_modules", "course_lib."))),
        tuple(packages),
        tuple(names("tests_own_classes")),
    )


def course_lib_without(
    rules: list[str] | tuple[str, ...], modules: list[str] | tuple[str, ...] = (), cache: Path | None = None
) -> Path:
    """A folder holding a ``course_lib`` package whose ruled-out functions only raise and whose
    ruled-out modules fail to import.

    Made once per set of rules and course_lib source, in this user's :func:`private_folder`."""
    source = course_lib_root() / "course_lib"
    files = sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha256("\n".join([*rules, "modules:", *modules]).encode())
    for path in files:
        digest.update(str(path.relative_to(source)).encode() + path.read_bytes())
    target = (cache or private_folder()) / f"course-lib-{digest.hexdigest()[:16]}"
    if (target / "course_lib").is_dir() and _writable_only_by_me(target):
        return target
    building = Path(tempfile.mkdtemp(prefix="course-lib-rules-", dir=target.parent))
    building.chmod(0o755)  # readable by the sandbox's user
    shutil.copytree(source, building / "course_lib", ignore=shutil.ignore_patterns("__pycache__"))
    by_file: dict[Path, list[tuple[str, list[str]]]] = {}
    for rule in rules:
        module, qualname = _defined_at(rule)
        relative = Path(*module.split(".")[1:])
        path = building / "course_lib" / relative.with_suffix(".py")
        if not path.is_file():
            path = building / "course_lib" / relative / "__init__.py"
        by_file.setdefault(path, []).append((rule, qualname.split(".")))
    for path, names in by_file.items():
        path.write_text(_without(path.read_text(), names))
    for module in modules:
        relative = Path(*module.split(".")[1:])
        path = building / "course_lib" / relative
        if path.is_dir():
            shutil.rmtree(path)
        elif path.with_suffix(".py").is_file():
            path.with_suffix(".py").unlink()
        else:
            raise RuleError(f"{module}: course_lib has no such module")
        path.with_suffix(".py").write_text(missing_module(module, "its work is the exercise"))
    try:
        building.rename(target)  # atomic: the copy is whole or absent
    except OSError:  # made meanwhile by another grader of this user, in this user's folder
        shutil.rmtree(building, ignore_errors=True)
    return target


def private_folder() -> Path:
    """This user's folder for the grader's copies (course_lib under rules, the stand-ins of
    hidden packages), in the temporary folder: made by this user, writable by no one else, so
    that nothing in it was planted by another user of the machine. A folder of that name that
    another user made (or may write) is never used: a new one is made instead."""
    base = Path(tempfile.gettempdir())
    folder = base / f"course-grader-{os.geteuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    if not _writable_only_by_me(folder):
        folder = Path(tempfile.mkdtemp(prefix=f"course-grader-{os.geteuid()}-", dir=base))
    folder.chmod(0o711)  # the sandbox's user may pass through to the copies, not list or write
    return folder


def _writable_only_by_me(path: Path) -> bool:
    """``path`` is a folder (not a link) of this user that no group or other user may write."""
    info = os.lstat(path)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _defined_at(rule: str) -> tuple[str, str]:
    """The module that defines the function a rule names, and its qualified name there (a
    name course_lib re-exports is ruled out where it is defined, so every alias meets it)."""
    import importlib
    import inspect

    parts = rule.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            raise RuleError(f"{rule}: course_lib has no such function") from None
        if isinstance(obj, dict) and cut == len(parts) - 1:  # a module's table (graph.PRIMITIVES)
            return ".".join(parts[:cut]), parts[-1]
        function = getattr(obj, "__func__", obj)  # a class method's function
        if not inspect.isfunction(function):
            raise RuleError(f"{rule} is not a function or a module's table of course_lib")
        # as written in the source (a method assigned to a class later may be renamed for its docs)
        return function.__module__, function.__code__.co_qualname
    raise RuleError(f"{rule}: no such module in course_lib")


def _without(text: str, names: list[tuple[str, list[str]]]) -> str:
    """The module's source with each named function's body replaced by the rule's error, and
    each named table by an empty one whose every lookup raises it."""
    tree = parse(text)
    for rule, qualname in names:
        message = (
            f"{rule} is not available in this assignment: the exercise asks you to write it "
            "yourself (an exercise rule of the course)"
        )
        table = next((k for k, node in enumerate(tree.body) if _assigns(node, qualname)), None)
        if table is not None:
            name = qualname[0]
            tree.body[table : table + 1] = parse(
                f"class _RuledOut_{name}(dict):\n"
                f"    def __missing__(self, key):\n        raise RuntimeError({message!r})\n"
                f"{name} = _RuledOut_{name}()\n"
            ).body
            continue
        scope: list[ast.stmt] = tree.body
        found: ast.stmt | None = None
        for part in qualname:
            found = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None)
            if found is None:
                raise RuleError(f"{rule}: its definition was not found in course_lib's source")
            if isinstance(found, ast.ClassDef):
                scope = found.body
        assert isinstance(found, ast.FunctionDef)
        docstring = found.body[:1] if ast.get_docstring(found) else []
        found.body = docstring + parse(f"raise RuntimeError({message!r})").body
    return ast.unparse(tree)


def _assigns(node: ast.stmt, qualname: list[str]) -> bool:
    """Whether ``node`` binds the module-level name ``qualname`` (``NAME = ...``, ``NAME: T = ...``)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return len(qualname) == 1 and any(isinstance(t, ast.Name) and t.id == qualname[0] for t in targets)


def missing_module(name: str, why: str) -> str:
    """The source of a module whose import fails, saying why (an exercise rule)."""
    message = f"No module named {name!r} in this assignment: {why} (an exercise rule of the course)"
    return f"raise ModuleNotFoundError({message!r}, name={name!r})\n"


def hidden_packages(
    packages: tuple[str, ...], package_folders: list[Path] | tuple[Path, ...] = (), cache: Path | None = None
) -> list[tuple[Path, Path]]:
    """(what to mount, where) for each of ``packages`` this Python has: a folder whose
    ``__init__`` fails to import, over the package's folder (or that file over a module file),
    wherever import finds it and in each of ``package_folders`` (a package installed twice)."""
    folder = (cache or private_folder()) / "hidden"
    mounts = []
    for name in packages:
        try:
            # The path first: importlib.util.find_spec("pip") alone lets setuptools' distutils hack
            # (a finder of its own) give up for the whole process, and nbgrader's import then fails.
            spec = importlib.machinery.PathFinder.find_spec(name) or importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        copies = [f for f in package_folders if (f / name).is_dir() or any(f.glob(f"{name}.*"))]
        modules: list[Path] = []
        if (spec is None and not copies) or name in sys.builtin_module_names:
            continue
        stub = folder / name
        if not (stub / "__init__.py").is_file():
            stub.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o755)
            stub.chmod(0o755)
            text = missing_module(name, "it would do work the exercises ask you to do yourself")
            (stub / "__init__.py").write_text(text)
            (stub / "__init__.py").chmod(0o644)
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                mounts.append((stub, Path(location).resolve()))
        elif spec is not None and spec.origin:
            modules.append(Path(spec.origin).resolve())
        for copy in copies:
            if (copy / name).is_dir():
                mounts.append((stub, (copy / name).resolve()))
            modules += [m.resolve() for m in copy.glob(f"{name}.*") if m.is_file() and m.suffix in (".py", ".so")]
        for module in modules:  # a module file and its compiled copies (a .pyc loads by itself)
            cached = module.parent / "__pycache__"
            for path in [module, *(cached.glob(f"{name}.*.pyc") if cached.is_dir() else [])]:
                mounts.append((stub / "__init__.py", path))
    return sorted(set(mounts))
