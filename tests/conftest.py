"""Fixtures shared by the test modules."""

import gc
import sys
from pathlib import Path

import pytest
from paths import ROOT

# The maintainer scripts in tools/ (course identity, publishing, MathJax) are imported by tests.
sys.path.insert(0, str(ROOT / "tools"))
# The instructor's grading package (course_grader/) is not installed: it is imported from the root.
sys.path.insert(0, str(ROOT))

from built_site import built_book  # noqa: E402
from postgres import postgres  # noqa: E402, F401  (the real PostgreSQL server fixture, for every module)


@pytest.fixture
def no_gc():
    """Pause the cyclic garbage collector while a test builds a huge graph: the engines'
    graphs hold no reference cycles, so collection passes over them only cost time."""
    was_enabled = gc.isenabled()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The HTML folder of the strictly built book (built once per session, shared by workers)."""
    return built_book(tmp_path_factory)
