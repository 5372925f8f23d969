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
# assignment), and the idiom fuzzer grades and runs each in Jupyter. xdist's loadscope would run
# each module, the suite's longest, on one worker; each assignment is a unit of its own instead,
# so the workers share them.
PIPELINE_MODULES = ("tests/assignments/test_assignments.py", "tests/assignments/test_idioms.py")


# Scopes that take minutes, longest first (measured with --durations, summed per scope). xdist
# hands out scopes with the most tests first, which leaves these few-test scopes to the end, where
# one worker runs the last of them while the others wait; started first (longest first, as in
# longest-processing-time scheduling), the short ones fill the gaps at the end.
LONG_SCOPES = (
    "tests/assignments/test_assignments.py[ps13_capstone]",
    "tests/assignments/test_assignments.py[ps10_pytorch_comparison]",
    "tests/site/test_release.py",
    "tests/book/test_colab_path.py",
    "tests/assignments/test_hub.py",
    "tests/assignments/test_hostile_verdicts.py",
    "tests/site/test_accessibility.py",
    "tests/assignments/test_hostile_class.py",
    "tests/assignments/test_assignments.py[ps08_training_mlp]",
    "tests/assignments/test_assignments.py[ps03_reverse_mode]",
    "tests/assignments/test_assignments.py[ps02_forward_mode]",
    "tests/assignments/test_assignments.py[ps04_topological_sort]",
    "tests/assignments/test_assignments.py[ps11_cheap_gradient]",
    "tests/assignments/test_assignments.py[ps06_custom_rules_jacobians]",
    "tests/assignments/test_grading.py",
    "tests/assignments/test_assignments.py[ps12_tracing]",
    "tests/assignments/test_grading_postgres.py",
    "tests/assignments/test_assignments.py[ps01_finite_differences]",
    "tests/assignments/test_assignments.py[ps05_optimisation]",
    "tests/site/test_browser.py",
    "tests/assignments/test_classmates_safe.py",
)


class AssignmentScopes(LoadScopeScheduling):
    """loadscope, with the pipeline module split into one scope per assignment, and the long
    scopes (``LONG_SCOPES``, then the rest of the pipeline) handed out first."""

    ordered = False

    def _assign_work_unit(self, node) -> None:
        if not self.ordered:
            self.ordered = True
            rank = {scope: k for k, scope in enumerate(LONG_SCOPES)}

            def first(scope: str) -> int:
                return rank.get(scope, len(rank) + (0 if scope.startswith(PIPELINE_MODULES) else 1))

            ordered = sorted(self.workqueue.items(), key=lambda item: first(item[0]))  # stable
            self.workqueue.clear()
            self.workqueue.update(ordered)
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        if module in PIPELINE_MODULES and nodeid.endswith("]"):
            return f"{module}[{nodeid.rsplit('[', 1)[1]}"
        return super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") == "loadscope":
        return AssignmentScopes(config, log)
    return None
