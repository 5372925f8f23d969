"""The public API: every module says what it exports, every export exists and has a
docstring, and the book's API page documents every module."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest
from paths import ROOT

import course_lib

PLOTTING = {"figures"}  # the plotting code the chapters call, one call per figure: not on the API page
MODULES = sorted(
    name
    for info in pkgutil.iter_modules(course_lib.__path__)
    if not (name := info.name).startswith("_") and name not in PLOTTING
)


@pytest.mark.parametrize("name", MODULES)
def test_every_module_lists_its_public_names_and_documents_them(name):
    module = importlib.import_module(f"course_lib.{name}")
    assert inspect.getdoc(module), f"course_lib.{name} needs a module docstring"
    exported = getattr(module, "__all__", None)
    assert exported, f"course_lib.{name} needs an __all__ listing its public names"
    for public in exported:
        assert hasattr(module, public), f"course_lib.{name}.__all__ names {public!r}, which does not exist"
        obj = getattr(module, public)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert inspect.getdoc(obj), f"course_lib.{name}.{public} needs a docstring"


def test_the_api_page_documents_every_module():
    page = (ROOT / "book" / "api.md").read_text()
    documented = set(re.findall(r"automodule:: course_lib\.(\w+)", page))
    assert documented == set(MODULES), f"book/api.md: missing {set(MODULES) - documented}"
