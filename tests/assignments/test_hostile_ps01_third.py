"""ps01 (finite differences), a third red-team pass: honest idioms and shortcuts the first two
passes (test_hostile_ps01_ps04.py, test_hostile_ps01_ps04_again.py) left untried.

One grading run per fixture (``grade`` of test_verdict_seams.py, in the real sandbox); each part
must score what the notebook earns when it runs top to bottom in Jupyter (a plain kernel, hidden
tests included), or less where it passes only by skipping the part's work.
"""

from __future__ import annotations

import os

import pytest
from test_verdict_seams import grade

from course_grader.introspection import named_in_hidden_test
from course_grader.limits import Limits

PS01 = "ps01_finite_differences"
ALL_PARTS = {
    "test_forward_difference",
    "test_central_difference",
    "test_gradient_fd",
    "test_gradient_fd_leaves_x_alone",
    "test_best_step",
    "test_observed_order",
}

# Honest: the forward difference taken in extended precision against round-off (np.longdouble).
# Graded 0/2 before ("a value nested deeper than 64 levels cannot be sent": a long double's
# item() is a long double, which the codec sent as its item() again); 2/2 in Jupyter.
LONG_DOUBLE = """def forward_difference(f, x, h):
    x, h = np.longdouble(x), np.longdouble(h)  # extended precision against round-off
    return (f(x + h) - f(x)) / h
"""

# Shortcut: a gradient_fd that computes nothing leaves x alone. It scored the point of
# test_gradient_fd_leaves_x_alone (1/1, in Jupyter too), whose tests never looked at what it
# returned; the hidden test now asks for a gradient too (of a function with random weights, to
# 0.05, in any shape, any central or one-sided difference, up to a slip of a factor 2 or a sign).
# Fair: 0/1 (and 0/2 on test_gradient_fd).
NO_WORK_GRADIENT = """def gradient_fd(f, x, h=1e-6):
    return np.zeros(x.shape)  # no work at all
"""

# Honest: the names of the functions the test hands over, printed (f.__name__, method.__qualname__).
# Graded 0/2 and 0/1 before ("AttributeError: __name__": the runner asked the judge for no
# attribute of Python's own); 2/2 and 1/1 in Jupyter. A function's name is now read, but for a
# function a hidden test defines under a name of its own (the hidden test's text).
NAMES_PRINTED = """def best_step(f, x, f_prime, hs, method):
    print(f"best step for {method.__name__} on {f.__name__}")
    return min(hs, key=lambda h: abs(method(f, x, h) - f_prime))
"""
QUALNAME_LOGGED = """import logging


def observed_order(f, x, f_prime, method, h):
    logging.getLogger("ps01").info("order of %s", method.__qualname__)
    coarse, fine = (abs(method(f, x, s) - f_prime) for s in (h, h / 10))
    return np.log10(coarse / fine)
"""


@pytest.fixture(scope="module")
def first():
    answers = {"forward_difference": LONG_DOUBLE, "gradient_fd": NO_WORK_GRADIENT}
    answers |= {"best_step": NAMES_PRINTED, "observed_order": QUALNAME_LOGGED}
    return grade(PS01, answers, ALL_PARTS, 60)


def test_ps01_a_long_double_crosses_as_its_float(first):
    assert first["test_forward_difference"][0] == 2, first


def test_ps01_a_gradient_that_computes_nothing_earns_no_point_for_leaving_x_alone(first):
    assert first["test_gradient_fd"][0] == 0, first
    points, message = first["test_gradient_fd_leaves_x_alone"]
    assert points == 0 and "did not return a gradient" in message, first


def test_ps01_the_names_of_the_tests_functions_can_be_printed(first):
    assert (first["test_best_step"][0], first["test_observed_order"][0]) == (2, 1), first


def test_ps01_the_other_parts_keep_their_points(first):
    assert first["test_central_difference"][0] == 2, first


def test_a_hidden_tests_own_function_names_stay_in_the_judge():
    """A lambda's name is '<lambda>' everywhere; a function a hidden test names is its text,
    which neither its names nor its repr show."""
    scope: dict = {}
    exec(compile("def probe_twice(t):\n    return t\nsquare = lambda t: t * t\n", "<hidden test>", "exec"), scope)
    exec(compile("def given(t):\n    return t\n", "<set-up tools>", "exec"), scope)
    assert not named_in_hidden_test(scope["square"]) and not named_in_hidden_test(scope["given"])
    assert named_in_hidden_test(scope["probe_twice"])


# Honest: a process pool of one worker per core, Pool(os.cpu_count()), as on a 16-core grading
# machine, and a thread per step. Graded 0/1 before ("BlockingIOError: [Errno 11] Resource
# temporarily unavailable": 16 processes and threads in all, Pool's 16 workers and 3 threads
# beside the runner); 1/1 in Jupyter. A part may now have 32 more than the machine has cores.
POOL_PER_CORE = """import multiprocessing

_JOB = {}


def _error(step):
    f, x, f_prime, method = _JOB["task"]
    return abs(method(f, x, step) - f_prime)


def observed_order(f, x, f_prime, method, h):
    _JOB["task"] = f, x, f_prime, method
    with multiprocessing.get_context("fork").Pool(16) as pool:  # os.cpu_count() on a 16-core machine
        coarse, fine = pool.map(_error, [h, h / 10])
    return float(np.log10(coarse / fine))
"""
THREAD_PER_STEP = '''from concurrent.futures import ThreadPoolExecutor


def best_step(f, x, f_prime, hs, method):
    """All the estimates at once, one thread per step."""
    with ThreadPoolExecutor(max_workers=len(hs)) as pool:
        errors = list(pool.map(lambda h: abs(method(f, x, h) - f_prime), hs))
    return hs[int(np.argmin(errors))]
'''

# Honest: a magic run through Jupyter's builtin get_ipython() (as jupytext and exported scripts
# write `%config ...`). Graded 0/2 before ("name 'get_ipython' is not defined": the cell stopped
# before its function); 2/2 in Jupyter. get_ipython() now runs such lines as their `%` forms run.
SHELL_MAGIC = """get_ipython().run_line_magic("config", "InlineBackend.figure_format = 'retina'")
get_ipython().run_line_magic("time", "from math import fsum")


def forward_difference(f, x, h):
    return fsum([f(x + h), -f(x)]) / h
"""

# Shortcut: x made writeable again, perturbed in place and restored exactly. 1/1 in Jupyter
# before, where the hidden test's x owned its data (setflags(write=False) can be undone); the part
# forbids writing to x, even changed and changed back. Fair: 0/1, graded (the runner's read-only
# arrays lie over immutable bytes) and now in Jupyter too (the hidden x lies over bytes).
WRITEABLE_AGAIN = """def gradient_fd(f, x, h=1e-6):
    x.flags.writeable = True  # the test makes x read-only
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        old = x[index]
        x[index] = old + h
        up = f(x)
        x[index] = old - h
        down = f(x)
        x[index] = old
        grad[index] = (up - down) / (2 * h)
    return grad
"""


@pytest.fixture(scope="module")
def second():
    answers = {"observed_order": POOL_PER_CORE, "best_step": THREAD_PER_STEP}
    answers |= {"forward_difference": SHELL_MAGIC, "gradient_fd": WRITEABLE_AGAIN}
    return grade(PS01, answers, ALL_PARTS, 60)


def test_ps01_a_pool_of_one_worker_per_core_may_start(second):
    assert (second["test_best_step"][0], second["test_observed_order"][0]) == (2, 1), second


def test_ps01_magics_run_through_get_ipython(second):
    assert second["test_forward_difference"][0] == 2, second


def test_ps01_x_made_writeable_again_costs_the_point(second):
    assert second["test_gradient_fd"][0] == 2, second
    assert second["test_gradient_fd_leaves_x_alone"][0] == 0, second


def test_a_part_may_start_what_pythons_pools_start_by_default():
    """Pool(): a worker per core, 3 threads and the runner; ThreadPoolExecutor(): up to 32 threads."""
    assert Limits().processes >= max(os.cpu_count() + 4, 32 + 1)


# The classic slip, (f(x + h e_i) - f(x - h e_i)) / h in gradient_fd, costs Part 3 alone (the hidden
# test of test_gradient_fd_leaves_x_alone takes a gradient up to a factor 2 or a sign).
SLIP_OF_2H = """def gradient_fd(f, x, h=1e-6):
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / h
    return grad
"""


@pytest.fixture(scope="module")
def third():
    return grade(PS01, {"gradient_fd": SLIP_OF_2H}, {"test_gradient_fd", "test_gradient_fd_leaves_x_alone"}, 60)


def test_ps01_the_slip_of_2h_costs_only_part_3(third):
    assert (third["test_gradient_fd"][0], third["test_gradient_fd_leaves_x_alone"][0]) == (0, 1), third
