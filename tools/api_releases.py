"""Which course_lib names each release has, and which the notebooks use.

Students' notebooks install the release that ``course.toml`` names, not the course_lib of this
checkout, so a chapter that uses a name added since that release stops at its import in Colab.
``tools/api_releases.json`` records the public names of every release, module by module (a
module's ``__all__``, the functions and classes it defines under public names, and its
submodules). A private helper that a chapter shows (``vmap._aligned``) is not API and is not
checked::

    python tools/api_releases.py record   # add or refresh the entry of the importable course_lib
    python tools/api_releases.py check    # exit 1 and list the names course.toml's release lacks

Record the entry when you raise ``__version__``; an older release's entry is recorded by running
``record`` with that release's course_lib first on ``PYTHONPATH``.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import sys
import types
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "tools" / "api_releases.json"
USERS = ("book/*.ipynb", "exercises/*/*.ipynb")


def public_api() -> dict[str, list[str]]:
    """The importable course_lib's public names: module -> sorted names."""
    import course_lib

    api = {"course_lib": _public(course_lib)}
    for info in pkgutil.walk_packages(course_lib.__path__, "course_lib."):
        api[info.name] = _public(importlib.import_module(info.name))
    return api


def _public(module: types.ModuleType) -> list[str]:
    """``__all__``, every function or class the module defines under a public name (not those it
    imports), and its submodules."""
    names = set(getattr(module, "__all__", ()))
    names |= {name for name, obj in vars(module).items() if not name.startswith("_") and _defined_in(obj, module)}
    if hasattr(module, "__path__"):
        names |= {info.name for info in pkgutil.iter_modules(module.__path__) if not info.name.startswith("_")}
    return sorted(names)


def _defined_in(obj: object, module: types.ModuleType) -> bool:
    return not isinstance(obj, types.ModuleType) and getattr(obj, "__module__", None) == module.__name__


def used_names(sources: Iterable[str]) -> set[tuple[str, str]]:
    """(module, name) for every course_lib name the Python ``sources`` import or read as an
    attribute of an imported course_lib module (``from course_lib.nn import MLP``,
    ``import course_lib.simulate as sim`` then ``sim.DT``). Dunder names are left out."""
    used: set[tuple[str, str]] = set()
    for source in sources:
        tree = ast.parse(source)
        modules: dict[str, str] = {}  # a local name -> the course_lib module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "course_lib":
                        modules[alias.asname or "course_lib"] = alias.name if alias.asname else "course_lib"
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "course_lib":
                for alias in node.names:
                    used.add((node.module, alias.name))
                    if _is_module(f"{node.module}.{alias.name}"):
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            chain = _dotted(node)
            if len(chain) < 2 or chain[0] not in modules:
                continue
            module = modules[chain[0]]
            for attr in chain[1:]:  # course_lib.scalar.Value: the module course_lib.scalar, then its Value
                if attr.startswith("__"):
                    break
                used.add((module, attr))
                if not _is_module(f"{module}.{attr}"):
                    break
                module = f"{module}.{attr}"
    return used


def _dotted(node: ast.AST) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]``; ``[]`` for anything but names joined by dots."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return [node.id, *reversed(attrs)] if isinstance(node, ast.Name) else []


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def notebook_code(root: Path = ROOT) -> dict[str, str]:
    """The code of every student-facing notebook (IPython's ``%`` and ``!`` lines left out)."""
    import nbformat

    code = {}
    for pattern in USERS:
        for path in sorted(root.glob(pattern)):
            cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
            lines = [line for cell in cells for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))]
            code[str(path.relative_to(root))] = "\n".join(lines)
    return code


def missing(release: str, root: Path = ROOT) -> list[str]:
    """Every course_lib name a notebook uses that ``release`` (a version, such as 0.4.0) lacks."""
    manifest = json.loads(MANIFEST.read_text())
    if release not in manifest:
        return [f"release {release} is not recorded in {MANIFEST.name}: run tools/api_releases.py record"]
    api = manifest[release]
    problems = []
    for path, source in notebook_code(root).items():
        for module, name in sorted(used_names([source])):
            if not name.startswith("_") and name not in api.get(module, []):
                problems.append(f"{path}: {module}.{name}")
    return problems


def release_version(root: Path = ROOT) -> str:
    """The version of the release course.toml names (its tag without the ``v``)."""
    sys.path.insert(0, str(root / "tools"))
    import course

    return course.load(root).release.removeprefix("v")


def main(argv: list[str] | None = None) -> int:
    command = (argv if argv is not None else sys.argv[1:]) or ["check"]
    if command == ["record"]:
        import course_lib

        manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
        manifest[course_lib.__version__] = public_api()
        MANIFEST.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
        print(f"recorded the public names of course_lib {course_lib.__version__} in {MANIFEST.relative_to(ROOT)}")
        return 0
    if command == ["check"]:
        release = release_version()
        problems = missing(release)
        for line in problems:
            print(f"- {line}")
        print(f"course_lib {release} (course.toml):", "lacks the names above" if problems else "has every name used")
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
