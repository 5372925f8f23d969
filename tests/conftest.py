"""Fixtures shared by the test modules."""
import gc

import pytest


@pytest.fixture
def no_gc():
    """Pause the cyclic garbage collector while a test builds a huge graph: the engines'
    graphs hold no reference cycles, so collection passes over them only cost time."""
    was_enabled = gc.isenabled()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()
