"""Fixtures shared by the test modules."""

import gc
from pathlib import Path

import pytest
from built_site import built_book
from postgres import postgres  # noqa: F401  (the real PostgreSQL server fixture, for every module)


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
