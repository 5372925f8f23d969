"""Exercise rules: each assignment's ``rules.toml`` names course_lib functions that, while it is
graded, only raise in the student's process, however the student's code reaches them."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from paths import ROOT

from course_grader.rules import OTHER_ENGINES, RuleError, course_lib_without, read_rules
from course_grader.sandbox import package_folders

ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())


def run_with(lib: Path, code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter that imports course_lib from ``lib`` (as the runner does)."""
    prelude = f"import sys\nsys.path.insert(0, {str(lib)!r})\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, cwd=lib
    )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_assignment_lists_its_rules_and_each_one_holds(assignment):
    read = read_rules(ROOT / "solutions" / assignment)
    rules = read.functions
    assert (ROOT / "solutions" / assignment / "rules.toml").exists(), f"{assignment} has no rules.toml"
    assert ("torch" in read.packages) is (assignment != "ps10_pytorch_comparison"), read.packages
    others = {"jax", "autograd", "sympy", "scipy", "tensorflow", "functorch", "mpmath", "networkx", "graphlib"}
    if assignment == "ps10_pytorch_comparison":
        others -= {"sympy", "mpmath"}  # torch.optim imports sympy (and sympy mpmath)
    assert others <= set(read.packages), read.packages
    if not rules and not read.modules:
        text = (ROOT / "solutions" / assignment / "rules.toml").read_text()
        assert "nothing is ruled out" in text, f"{assignment}: an empty rule list must say why"
        return
    lib = course_lib_without(rules, read.modules)
    checks = "\n".join(
        f"""
import importlib
module, name = {rule!r}.rsplit(".", 1)
try:
    target = importlib.import_module(module)
except ImportError:
    owner, cls = module.rsplit(".", 1)
    target = getattr(importlib.import_module(owner), cls)
import inspect
function = getattr(target, name)
if isinstance(function, dict):  # a table: empty, and every lookup raises
    assert not function, {rule!r} + " still holds its rows"
    required, function = [None], function.__getitem__
else:
    required = [p for p in inspect.signature(function).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
try:
    function(*([None] * len(required)))
except RuntimeError as error:
    assert {rule!r} in str(error) and "write it yourself" in str(error), error
else:
    raise AssertionError({rule!r} + " still works")
"""
        for rule in rules
    ) + "".join(
        f"""
import importlib
try:
    importlib.import_module({module!r})
except ModuleNotFoundError as error:
    assert "exercise rule" in str(error), error
else:
    raise AssertionError({module!r} + " still imports")
"""
        for module in read.modules
    )
    proc = run_with(lib, "import course_lib\nassert course_lib.__file__.startswith(sys.path[0])\n" + checks)
    assert proc.returncode == 0, proc.stderr


def test_a_ruled_function_fails_under_every_name_and_in_every_capture(tmp_path):
    lib = course_lib_without(["course_lib.check.numerical_grad", "course_lib.tensor.unbroadcast"])
    proc = run_with(
        lib,
        """
        import course_lib.check as check
        from course_lib.check import numerical_grad as ng
        from course_lib.tensor import unbroadcast
        import course_lib.tensor as tensor
        import numpy as np

        def with_default(f, x, reference=check.numerical_grad):
            return reference(f, x)

        def closure():
            captured = ng
            return lambda f, x: captured(f, x)

        attempts = [
            lambda: check.numerical_grad(np.sin, 1.0),
            lambda: ng(np.sin, 1.0),
            lambda: with_default(np.sin, 1.0),
            lambda: closure()(np.sin, 1.0),
            lambda: getattr(__import__("course_lib.check").check, "numerical_grad")(np.sin, 1.0),
            lambda: unbroadcast(None, (1,)),
            lambda: tensor.unbroadcast(None, (1,)),
        ]
        for attempt in attempts:
            try:
                attempt()
            except RuntimeError as error:
                assert "exercise rule" in str(error), error
            else:
                raise AssertionError("a ruled function worked")
        # What does not use them still works.
        from course_lib.forward import derivative
        assert derivative(lambda x: x * x, 3.0) == 6.0
        """,
    )
    assert proc.returncode == 0, proc.stderr


def test_a_rule_naming_nothing_is_refused():
    with pytest.raises(RuleError, match="no such function"):
        course_lib_without(["course_lib.check.no_such_function"])
    with pytest.raises(RuleError, match="not a function or a module's table"):
        course_lib_without(["course_lib.__version__"])


# Functions and classes that, by their name, would do an exercise's work: differentiate or sort
# a graph. A package the sandbox shows that defines one is either hidden (OTHER_ENGINES in
# course_grader/rules.py, or an assignment's without_packages) or reviewed here, with the reason
# it does not do a student's exercise; an assignment's allow_packages are its own review.
WORK = (
    "toposort|topsort|[a-z_]*topological[a-z_]*|TopologicalSorter|static_order|jacobian|hessian|grad"
    "|value_and_grad|vjp|jvp|approx_fprime|check_grad|approx_derivative|derivative|deriv|diff|gradient"
    "|polynomial_derivative"
)
REVIEWED = {
    ("numpy", "gradient"): "differences of samples on a grid the caller made, not a function's derivative",
    ("numpy", "diff"): "differences of neighbouring entries of an array",
    ("numpy", "deriv"): "the derivative of a polynomial's coefficients",
    ("matplotlib", "gradient"): "the gradient of a triangulation's interpolant",
    ("piptools", "diff"): "the difference of two sets of requirements",
    ("setuptools", "polynomial_derivative"): "the derivative of a polynomial's coefficients",
    ("lib2to3", "diff"): "a text diff in lib2to3's own tests",
}


def definitions_the_sandbox_shows() -> dict[tuple[str, str], str]:
    """{(top-level package, function): a file defining it} in the grader's package folders and
    standard library, the only ones the sandbox shows (less what it never shows, OTHER_ENGINES:
    an assignment that allows one says why in its rules.toml)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    skip = [f"--exclude-dir={name}" for name in ("site-packages", "dist-packages", *OTHER_ENGINES)]
    pattern = rf"^[[:space:]]*(def|class) ({WORK})\b"
    found = {}
    for folder in [stdlib, *package_folders()]:
        grep = subprocess.run(
            ["grep", "-rHoE", "--include=*.py", *skip, pattern, "."], cwd=folder, capture_output=True, text=True
        )
        assert grep.returncode in (0, 1), grep.stderr
        for line in grep.stdout.splitlines():
            path, definition = line.rsplit(":", 1)
            top = Path(path).parts[0].removesuffix(".py")  # grep prints ./numpy/..., Path drops the "./"
            found.setdefault((top, definition.split()[-1]), str(folder / path))
    return found


def test_every_package_the_sandbox_shows_is_reviewed_for_each_assignment():
    found = definitions_the_sandbox_shows()
    unreviewed = {}
    for assignment in ASSIGNMENTS:
        hidden = read_rules(ROOT / "solutions" / assignment).packages
        for (top, name), path in found.items():
            if top not in hidden and (top, name) not in REVIEWED:
                unreviewed.setdefault(f"{top}.{name} in {path}", []).append(assignment[:4])
    assert not unreviewed, f"hide these packages (OTHER_ENGINES, without_packages) or review them here: {unreviewed}"
