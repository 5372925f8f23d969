"""Exercise rules: each assignment's ``rules.toml`` names course_lib functions that, while it is
graded, only raise in the student's process, however the student's code reaches them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths import ROOT

from course_grader.rules import RuleError, course_lib_without, read_rules

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
    assert {"jax", "autograd", "sympy", "scipy", "tensorflow", "functorch"} <= set(read.packages), read.packages
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
    with pytest.raises(RuleError, match="not a function"):
        course_lib_without(["course_lib.__version__"])
