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
    target = (cache or Path(tempfile.gettempdir())) / f"course-lib-rules-{digest.hexdigest()[:16]}"
    if (target / "course_lib").is_dir():
        return target
    building = Path(tempfile.mkdtemp(prefix="course-lib-rules-", dir=target.parent))
    shutil.copytree(source, building / "course_lib", ignore=shutil.ignore_patterns("__pycache__"))
    by_module: dict[str, list[list[str]]] = {}
    for rule in rules:
        parts = rule.split(".")
        for cut in range(len(parts) - 1, 1, -1):
            module = building / Path(*parts[:cut]).with_suffix(".py")
            if module.is_file():
                by_module.setdefault(str(module), []).append(parts[cut:])
                break
        else:
            raise RuleError(f"{rule}: no such module in course_lib")
    for module, names in by_module.items():
        path = Path(module)
        path.write_text(_without(path.read_text(), names, path.stem))
    try:
        building.rename(target)
    except OSError:  # made meanwhile by another grader
        shutil.rmtree(building, ignore_errors=True)
    return target


def _without(text: str, names: list[list[str]], module: str) -> str:
    tree = ast.parse(text)
    for name in names:
        scope: list[ast.stmt] = tree.body
        found = None
        for k, part in enumerate(name):
            found = next(
                (n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part),
                None,
            )
            if found is None or (k < len(name) - 1 and not isinstance(found, ast.ClassDef)):
                raise RuleError(f"course_lib.{module}.{'.'.join(name)}: not defined there")
            if isinstance(found, ast.ClassDef):
                scope = found.body
        if not isinstance(found, ast.FunctionDef):
            raise RuleError(f"course_lib.{module}.{'.'.join(name)} is not a function")
        dotted = f"course_lib.{module}.{'.'.join(name)}"
        message = (
            f"{dotted} is not available in this assignment: the exercise asks you to write it "
            "yourself (an exercise rule of the course)"
        )
        stub = ast.parse(f"raise RuntimeError({message!r})").body
        docstring = found.body[:1] if ast.get_docstring(found) else []
        found.body = docstring + stub
    return ast.unparse(tree)
