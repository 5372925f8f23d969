"""ps01 (finite differences) and ps04 (topological sort) again: honest idioms the first pass
(test_hostile_ps01_ps04.py) left untried.

One grading run per assignment (``grade`` of test_verdict_seams.py, in the real sandbox), every
answer cell but one an honest answer in an unusual but fair idiom: each part must score what the
notebook earns when it runs top to bottom in Jupyter (full marks; each answer below was run
there). The one attack, a child_count_order that counts nothing, is a strict xfail.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

from course_grader.notebook import without_magics

PS01, PS04 = "ps01_finite_differences", "ps04_topological_sort"

# ps04, honest: helpers on a subclass of Node bound to its name, as the test's nodes have them in
# Jupyter. A slot the answer reads with getattr(node, "mark", None) before it is set (graded: the
# slot's descriptor was applied to the runner's stand-in, "TypeError: descriptor 'mark' for 'Node'
# objects doesn't apply to a 'Trusted' object", 0/2), a functools.cached_property ("No '__dict__'
# attribute on 'Trusted' instance", 0/2) and an operator put on Node to keep nodes in a heap ("'<'
# not supported between instances of 'Node' and 'Node'": the judge's Node was asked, 0/2):
# course_grader/runner.py now reads an unset slot as missing, keeps a cached property's value with
# what the answer set on the stand-in, and runs the operators the answers gave Node.
SLOT_READ_UNSET = """class Node(Node):
    __slots__ = ("mark",)


def dfs_postorder(output):
    order = []

    def visit(node):
        if getattr(node, "mark", None) is order:
            return
        node.mark = order
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(output)
    return order
"""
CACHED_PROPERTY = '''import functools
import heapq


class Node(Node):
    @functools.cached_property
    def distinct_parents(self):
        return tuple({id(p): p for p in self.parents}.values())


Node.__lt__ = lambda self, other: self.name < other.name  # nodes in a heap: the smaller name first


def topo_sort(output):
    """Kahn's algorithm from the inputs, the ready nodes in a heap."""
    children, todo = {output: []}, [output]
    while todo:
        for parent in todo.pop().distinct_parents:
            if parent not in children:
                children[parent] = []
                todo.append(parent)
    for node in children:
        for parent in node.distinct_parents:
            children[parent].append(node)
    waiting = {node: len(node.distinct_parents) for node in children}
    ready = [node for node, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for child in children[node]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, child)
    return order
'''
# ps04, honest but slow: the ancestors recomputed for every node (0.2 s for the whole test in
# Jupyter). Each read of node.parents was a request to the judge: over 60 s, a time-out, 0/2. The
# runner now keeps what the judge's objects showed until the judge runs code again.
ANCESTORS_RECOMPUTED = '''def ancestors(node):
    """node and every node it depends on."""
    found, todo = {node}, [node]
    while todo:
        for parent in todo.pop().parents:
            if parent not in found:
                found.add(parent)
                todo.append(parent)
    return found


def is_topological(order, output):
    if not order or order[-1] is not output or len(set(order)) != len(order):
        return False
    for k, node in enumerate(order):
        if node not in ancestors(output):
            return False  # the output does not depend on it
        if node.parents is not node.parents or any(parent not in order[:k] for parent in node.parents):
            return False  # a parent is missing or comes later (node.parents is one tuple, as in Jupyter)
    return len(order) == len(ancestors(output))
'''

# ps04, attack: no child counts at all. child_count_order is part 2's topo_sort reversed (any
# inputs-first order reversed is an output-first one, and it meets the visible test's "x released
# too early" case): 2/2, in Jupyter too. No test of the order can tell: every valid order is one
# some run of Kahn's algorithm gives (README, "Not guaranteed": results that come another way).
REVERSED_TOPO_SORT = """def child_count_order(output):
    return topo_sort(output)[::-1]
"""

# ps01, honest: a float subclass and a 0-d array returned (held before), central differences over
# the step the floats really take, (x + h) - (x - h) (within 10% of the test's tolerance over
# 200,000 draws), a gradient in a subclass of ndarray (graded: "return a NumPy array, not a
# Remote", 0/2; the runner now sends a subclass of ndarray, float, int, complex or str as the
# plain value it holds, as isinstance takes it in Jupyter), and an observed_order whose two
# errors come from a process pool's workers, which call the test's functions through the pipes they
# inherit (graded: two read each other's replies, "the grading of your code ended the Python
# process itself", 0/1; the runner now lets one process at a time wait on the channel), its
# log10 imported under %time (graded: the line ran as `pass`, "name 'log10' is not defined"; now
# the statement runs, as in Jupyter).
PS01_HONEST = {
    "forward_difference": '''class Estimate(float):
    """A float that remembers its step."""

    def __new__(cls, value, h):
        self = super().__new__(cls, value)
        self.h = h
        return self


def forward_difference(f, x, h):
    return Estimate((f(x + h) - f(x)) / h, h)
''',
    "central_difference": """def central_difference(f, x, h):
    up, down = x + h, x - h
    return np.asarray((f(up) - f(down)) / (up - down))
""",
    "observed_order": '''import multiprocessing
%time from math import log10

_JOB = {}


def _error(step):
    f, x, f_prime, method = _JOB["task"]
    return abs(method(f, x, step) - f_prime)


def observed_order(f, x, f_prime, method, h):
    """The two errors computed side by side, by two workers forked with the task."""
    _JOB["task"] = f, x, f_prime, method
    with multiprocessing.get_context("fork").Pool(2) as pool:
        coarse, fine = pool.map(_error, [h, h / 10], chunksize=1)
    return log10(coarse / fine)
''',
    "gradient_fd": '''class Gradient(np.ndarray):
    """An array that says it is a gradient."""


def gradient_fd(f, x, h=1e-6):
    grad = np.zeros(x.shape).view(Gradient)
    for index in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad
''',
}


@pytest.fixture(scope="module")
def ps04():
    answers = {
        "dfs_postorder": SLOT_READ_UNSET,
        "topo_sort": CACHED_PROPERTY,
        "is_topological": ANCESTORS_RECOMPUTED,
        "child_count_order": REVERSED_TOPO_SORT,
    }
    parts = {"test_dfs_postorder", "test_topo_sort", "test_is_topological", "test_child_count_order"}
    return grade(PS04, answers, parts, 60)


@pytest.fixture(scope="module")
def ps01():
    parts = {"test_forward_difference", "test_central_difference", "test_gradient_fd"}
    return grade(PS01, PS01_HONEST, parts | {"test_gradient_fd_leaves_x_alone", "test_observed_order"}, 60)


def test_ps04_helpers_on_a_node_subclass_work_on_the_tests_nodes(ps04):
    for part in ("test_dfs_postorder", "test_topo_sort"):
        assert ps04[part][0] == 2, ps04


def test_ps04_reading_the_tests_nodes_again_costs_no_request(ps04):
    assert ps04["test_is_topological"][0] == 2, ps04


@pytest.mark.xfail(strict=True, reason="any valid output-first order is one Kahn's algorithm can give")
def test_ps04_child_count_order_must_count(ps04):
    """Fair: 0/2 for an order that is part 2's reversed."""
    assert ps04["test_child_count_order"][0] == 0, ps04


def test_ps01_subclasses_arrive_as_their_numbers_and_pools_may_call_the_test(ps01):
    expected = {
        "test_forward_difference": 2,
        "test_central_difference": 2,
        "test_gradient_fd": 2,
        "test_gradient_fd_leaves_x_alone": 1,
        "test_observed_order": 1,
    }
    assert {part: ps01[part][0] for part in expected} == expected, ps01


def test_a_timed_statement_runs_and_a_timed_loop_still_passes():
    """%time runs its statement once (its import or assignment stays, as in Jupyter); %timeit, whose
    statement IPython runs in a scope of its own, is still pass."""
    source = "%time from math import log10\nif True:\n    %time y = 2\n%timeit log10(y)\n%time\n"
    assert without_magics(source) == "from math import log10\nif True:\n    y = 2\npass\npass\n"
