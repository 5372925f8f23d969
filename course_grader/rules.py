"""Exercise rules: the course_lib functions an assignment asks students to write themselves.

Each assignment lists them once, in ``solutions/<assignment>/rules.toml``::

    # course_lib functions students write themselves here
    write_yourself = ["course_lib.check.numerical_grad"]

While that assignment is graded, the course_lib the student's code runs with is a copy in
which each listed function (or method, ``course_lib.tensor.Tensor.backward``) keeps its name
and signature but only raises :class:`ExerciseRule`'s message. The copy is what the sandbox
sees, so a call, a default argument, a closure, an alias or an import under another name all
meet the same rule, and the feedback names it. The judge and the tests keep the real course_lib.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import tempfile
import tomllib
from pathlib import Path

RULES_FILE = "rules.toml"


class RuleError(ValueError):
    """A rule names something course_lib does not define."""


def read_rules(assignment_dir: Path) -> list[str]:
    """The assignment's ``write_yourself`` list (empty without a rules file)."""
    path = Path(assignment_dir) / RULES_FILE
    if not path.exists():
        return []
    rules = tomllib.loads(path.read_text()).get("write_yourself", [])
    if not isinstance(rules, list) or not all(isinstance(r, str) and r.startswith("course_lib.") for r in rules):
        raise RuleError(f"{path}: write_yourself must be a list of names like 'course_lib.check.numerical_grad'")
    return sorted(rules)


def course_lib_without(rules: list[str] | tuple[str, ...], cache: Path | None = None) -> Path:
    """A folder holding a ``course_lib`` package whose ruled-out functions only raise.

    Made once per set of rules and course_lib source (cached under the temporary folder)."""
    from course_grader.sandbox import course_lib_root

    source = course_lib_root() / "course_lib"
    files = sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha256("\n".join(rules).encode())
    for path in files:
        digest.update(str(path.relative_to(source)).encode() + path.read_bytes())
    # One copy per user (a folder another user made may not be theirs to trust or read).
    folder = f"course-lib-rules-{os.geteuid()}-{digest.hexdigest()[:16]}"
    target = (cache or Path(tempfile.gettempdir())) / folder
    if (target / "course_lib").is_dir() and target.stat().st_uid == os.geteuid():
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
    try:
        building.rename(target)
    except OSError:  # made meanwhile by another grader
        shutil.rmtree(building, ignore_errors=True)
    return target


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
        function = getattr(obj, "__func__", obj)  # a class method's function
        if not inspect.isfunction(function):
            raise RuleError(f"{rule} is not a function of course_lib")
        return function.__module__, function.__qualname__
    raise RuleError(f"{rule}: no such module in course_lib")


def _without(text: str, names: list[tuple[str, list[str]]]) -> str:
    """The module's source with each named function's body replaced by the rule's error."""
    tree = ast.parse(text)
    for rule, qualname in names:
        scope: list[ast.stmt] = tree.body
        found: ast.stmt | None = None
        for part in qualname:
            found = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None)
            if found is None:
                raise RuleError(f"{rule}: its definition was not found in course_lib's source")
            if isinstance(found, ast.ClassDef):
                scope = found.body
        assert isinstance(found, ast.FunctionDef)
        message = (
            f"{rule} is not available in this assignment: the exercise asks you to write it "
            "yourself (an exercise rule of the course)"
        )
        docstring = found.body[:1] if ast.get_docstring(found) else []
        found.body = docstring + ast.parse(f"raise RuntimeError({message!r})").body
    return ast.unparse(tree)
