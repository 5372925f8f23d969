"""Fixtures shared by the test modules."""

import gc
from pathlib import Path

import pytest
from built_site import built_book
from postgres import postgres  # noqa: F401  (the real PostgreSQL server fixture, for every module)
from xdist.scheduler import LoadScopeScheduling


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


# The nbgrader pipeline grades every assignment in one module (a module-scoped fixture per
# assignment). xdist's loadscope would run that module, the suite's longest, on one worker;
# each assignment is a unit of its own instead, so the two workers share the pipeline.
PIPELINE_MODULES = ("tests/assignments/test_assignments.py",)


class AssignmentScopes(LoadScopeScheduling):
    """loadscope, with the pipeline module split into one scope per assignment."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        if module in PIPELINE_MODULES and nodeid.endswith("]"):
            return f"{module}[{nodeid.rsplit('[', 1)[1]}"
        return super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") == "loadscope":
        return AssignmentScopes(config, log)
    return None
