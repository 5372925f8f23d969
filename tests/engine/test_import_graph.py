"""The import graph of course_lib: modules import in one direction, and the scalar engines
know nothing of tensors (book/architecture.md). The grader, course_grader, imports in one
direction too, and every module of both stays small enough to read in one sitting.

The graph is read from the source with ``ast``, imports inside functions included, so a
lazy import cannot hide a cycle. Each rule is also shown to fail on a temporary copy of
the package with a planted violation.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from paths import ROOT

PACKAGE = ROOT / "course_lib"
GRADER = ROOT / "course_grader"
MOST_LINES = 500  # CONTRIBUTING.md: small modules
SCALAR = {"check", "toposort", "graph", "forward", "scalar", "viz"}
"""The modules of chapters 1-7 (book/architecture.md): none may import a tensor module."""
TENSOR = {"tensor", "ops", "sweep", "functional", "nn", "ig", "physics", "simulate"}


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the course_lib modules it imports (anywhere in its source)."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                    base = ".".join(anchor + ([base] if base else []))
                # `from package import submodule` imports the submodule; `from module import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in files and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of imports as a list of modules (first == last), or None. Iterative DFS."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def top(module: str) -> str:
    """``course_lib.tensor.core`` -> ``tensor``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def scalar_imports_of_tensors(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, t) for m, targets in graph.items() for t in targets if top(m) in SCALAR and top(t) in TENSOR)


def violations(package: Path) -> list[str]:
    graph = import_graph(package)
    problems = [f"{m} imports {t}" for m, t in scalar_imports_of_tensors(graph)]
    cycle = find_cycle(graph)
    if cycle:
        problems.append("import cycle: " + " -> ".join(cycle))
    return problems


def test_course_lib_imports_in_one_direction_and_scalars_know_no_tensors():
    graph = import_graph(PACKAGE)
    assert {"course_lib.tensor.core", "course_lib.check", "course_lib.functional"} <= set(graph)
    assert "course_lib.tensor.table" in graph["course_lib.tensor.core"]  # the graph does see edges
    assert "course_lib.tensor.backprop" in graph["course_lib.tensor.core"]  # Tensor.backward runs the sweep
    assert violations(PACKAGE) == []


def test_course_grader_imports_in_one_direction():
    graph = import_graph(GRADER)
    assert "course_grader.limits" in graph["course_grader.control_groups"]  # the graph does see edges
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


@pytest.mark.parametrize("package", [PACKAGE, GRADER], ids=["course_lib", "course_grader"])
def test_no_module_is_longer_than_the_guide(package):
    long = {
        str(p.relative_to(ROOT)): n
        for p in package.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MOST_LINES
    }
    assert long == {}, f"split these modules by responsibility (at most {MOST_LINES} lines): {long}"


def test_no_module_level_getattr_shim():
    """Names are imported, not looked up on demand: no module defines ``__getattr__``."""
    shims = [
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in ast.parse(p.read_text()).body)
    ]
    assert shims == []


@pytest.mark.parametrize(
    "module, planted, expected",
    [
        (
            "check.py",
            "def planted():\n    from course_lib.tensor import Tensor\n",
            "course_lib.check imports course_lib.tensor",
        ),
        ("toposort.py", "def planted():\n    import course_lib.graph\n", "import cycle"),
        ("tensor/table.py", "def planted():\n    from . import core\n", "import cycle"),
    ],
    ids=["scalar-imports-tensor", "lazy-cycle", "relative-cycle"],
)
def test_the_check_fails_on_a_planted_violation(tmp_path, module, planted, expected):
    copy = tmp_path / "course_lib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    with open(copy / module, "a") as f:
        f.write("\n\n" + planted)
    assert any(expected in problem for problem in violations(copy)), violations(copy)
