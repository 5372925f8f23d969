"""Hostile and honest students against ps01 (finite differences) and ps04 (topological sort).

Each hand-in has read the grader's source, the rules (``solutions/<ps>/rules.toml``) and the
visible tests. One grading run per assignment (``grade`` of test_verdict_seams.py, in the real
sandbox) holds every case: attacks in some answer cells, honest answers in unusual idioms (or
with one typical mistake) in the others, and each part must score its fair points: what the
notebook earns in Jupyter, with an earlier slip costing only its own part.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

from course_grader.stand_ins import MAX_SEARCH, MAX_TEXT_SIZE, JudgeCodec

PS01, PS04 = "ps01_finite_differences", "ps04_topological_sort"

# ps04, attack 1: no algorithm at all. The visible tests' graphs are answered by their names;
# a Node whose .parents and .op read empty when the judge asks (its getter is called from the
# runner's serve) showed every hidden graph as one node, since a Node the answers changed
# replaced the judge's own and the tests built their graphs with it, in the student's process:
# 6/6 on three parts (fair 0/6). rules.toml's tests_own_classes keeps the judge's Node.
LYING_NODE = """
import sys

_CREATED = []
_plain_init = Node.__init__


def _init(self, *args, **kwargs):
    _plain_init(self, *args, **kwargs)
    _CREATED.append(self)


def _asked_by_the_grader():
    return sys._getframe(2).f_code.co_name == "serve"


def _parents(self):
    return () if _asked_by_the_grader() else self.__dict__["_parents"]


def _op(self):
    return "" if _asked_by_the_grader() else self.__dict__["_op"]


Node.__init__ = _init
Node.parents = property(_parents, lambda self, value: self.__dict__.__setitem__("_parents", value))
Node.op = property(_op, lambda self, value: self.__dict__.__setitem__("_op", value))
"""
BY_NAMES = {
    "backward": LYING_NODE
    + """

def backward(output, order):
    known = {"e": {"e": 1.0, "s": 4.0, "t": 5.0, "a": 4.0, "b": 9.0}, "y": {"y": 1.0, "x": 6.0}}
    for node in order:
        node.grad = known.get(output.name, {}).get(node.name, 0.0)
    output.grad = 1.0
""",
}

# ps04, attack 4: is_topological without a check: the tests asked about two valid orders of a
# graph first and only then about invalid ones, visible and hidden alike, so "True for the first
# two calls per output" scored 2/2 (fair 0/2, in Jupyter too). The hidden test shuffles its cases.
BY_CALL_COUNT = """
_CALLS = {"output": None, "count": 0}


def is_topological(order, output):
    if output is not _CALLS["output"]:
        _CALLS["output"], _CALLS["count"] = output, 0
    _CALLS["count"] += 1
    return _CALLS["count"] <= 2
"""

# ps04, attack 2: an order from pip's resolver (get_topological_weights: leaves pruned round by
# round), a package the sandbox showed: 2/2 (fair 0/2). pip is now hidden like the other engines.
BY_PIP = """
from pip._internal.resolution.resolvelib.resolver import get_topological_weights
from pip._vendor.resolvelib.structs import DirectedGraph


def dfs_postorder(output):
    graph, seen, stack = DirectedGraph(), {id(output): output}, [output]
    graph.add(None)
    graph.add(id(output))
    graph.connect(None, id(output))
    while stack:
        node = stack.pop()
        for parent in node.parents:
            if id(parent) not in seen:
                seen[id(parent)] = parent
                graph.add(id(parent))
                stack.append(parent)
            graph.connect(id(node), id(parent))
    weights = get_topological_weights(graph, set(seen))
    return [seen[i] for i in sorted(seen, key=lambda i: -weights[i])]
"""

# ps04, attack 3: no post-order either: the ancestors (a plain search) sorted by the number in
# their names, which the graph builders hand out as they make nodes (so a valid order, in
# Jupyter too), the visible diamond answered by its names: 2/2 (fair 0/2). The hidden tests now
# rename their graphs' nodes at random.
BY_NAMES_ORDER = """
import re


def dfs_postorder(output):
    found, todo = {id(output): output}, [output]
    while todo:
        for parent in todo.pop().parents:
            if id(parent) not in found:
                found[id(parent)] = parent
                todo.append(parent)
    if output.name == "e":
        return [n for name in ("a", "b", "s", "one", "t", "e") for n in found.values() if n.name == name]
    letter = {"w": 2, "v": 1}
    return sorted(found.values(), key=lambda n: (int(re.sub(r"\\D", "", n.name) or 0), letter.get(n.name[0], 0)))
"""

# ps04, honest: a class default and a helper method put on the notebook's Node, as in Jupyter,
# working on the test's nodes (before: the deep test's graphs were then built through the
# student's Node one request per node and timed out, 0/2), and counts keyed by the nodes.
HONEST_NODE_IDIOMS = {
    "topo_sort": """
Node.visited_by = None  # a class default: every node starts unvisited


def topo_sort(output):
    token, order, stack = object(), [], [(output, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif node.visited_by is not token:
            node.visited_by = token
            stack.append((node, True))
            stack.extend((p, False) for p in node.parents if p.visited_by is not token)
    return order
""",
    "child_count_order": '''from collections import Counter


def _ancestors(self):
    """Every node self depends on, itself included: a helper method on the notebook's Node."""
    found, todo = {self}, [self]
    while todo:
        for parent in todo.pop().parents:
            if parent not in found:
                found.add(parent)
                todo.append(parent)
    return found


Node.ancestors = _ancestors


def child_count_order(output):
    counts = Counter()
    for node in output.ancestors():
        counts.update(Counter(node.parents))
    order, ready = [], [output]
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in node.parents:
            counts[parent] -= 1
            if counts[parent] == 0:
                ready.append(parent)
    return order
''',
}

# ps04, honest: a subclass of the notebook's Node bound to its name, with a helper method, and
# isinstance checks against it: the test's nodes are instances of it, as in Jupyter.
NODE_SUBCLASS = """
class Node(Node):
    def ancestors(self):
        found, todo = {self}, [self]
        while todo:
            for parent in todo.pop().parents:
                if parent not in found:
                    found.add(parent)
                    todo.append(parent)
        return found


def is_topological(order, output):
    if not all(isinstance(node, Node) for node in [output, *order]):
        return False
    if not order or order[-1] is not output or len(set(order)) != len(order) or set(order) != output.ancestors():
        return False
    position = {node: k for k, node in enumerate(order)}
    return all(position[p] < position[n] for n in order for p in n.parents)
"""

# ps01, attack: a hidden message that prints a large value of the student's (here a set of
# 60,000 numbers, never in hs), searched for each string the student's code sent before (here
# 1,000, handed to f and refused): 20,000 strings and a 17 MB message kept the judge busy 12
# minutes after the test's time was up. The search is bounded; beyond it the message is withheld.
REPLACE_BOMB = """
def best_step(f, x, f_prime, hs, method):
    if isinstance(hs, list):  # the visible test: answered honestly
        return min(hs, key=lambda h: abs(method(f, x, h) - f_prime))
    try:
        f([f"q{k:05d}" for k in range(1_000)])
    except Exception:
        pass
    return {k + 0.123456789 for k in range(60_000)}
"""

# ps01, honest: IPython's help on a name (a SyntaxError in plain Python: 0/2 before), the typical
# mistake in central_difference (0/2, fair), a gradient_fd built on the student's own
# central_difference (0/2 before: it failed with it; now graded with the course's central
# difference standing in), display() (Jupyter's builtin), a %%time cell, and an observed_order
# that hands the test's method a cached f (0/1 before: the test's method is course_lib's
# numerical_grad, which then ran in the student's process, where the rules had removed it).
PS01_HONEST = {
    "forward_difference": """np.log10?

def forward_difference(f, x, h):
    return (f(x + h) - f(x)) / h
""",
    "central_difference": """def central_difference(f, x, h):
    return (f(x + h) - f(x)) / h  # the typical mistake: a forward difference
""",
    "gradient_fd": """def gradient_fd(f, x, h=1e-6):
    grad = np.zeros(np.shape(x))
    for index in np.ndindex(np.shape(x)):
        unit = np.zeros(np.shape(x))
        unit[index] = 1.0
        grad[index] = central_difference(lambda t: f(x + t * unit), 0.0, h)
    return grad
""",
    "observed_order": """%%time
def observed_order(f, x, f_prime, method, h):
    seen = {}  # each value of f computed once, handed to method as a function of its own

    def cached(t):
        if t not in seen:
            seen[t] = f(t)
        return seen[t]

    coarse, fine = (abs(method(cached, x, s) - f_prime) for s in (h, h / 10))
    display(coarse, fine)
    return float(np.log10(coarse / fine))


display(observed_order(np.sin, 1.0, np.cos(1.0), lambda g, x, h: (g(x + h) - g(x - h)) / (2 * h), 0.01))
""",
}


@pytest.fixture(scope="module")
def ps04():
    answers = {"dfs_postorder": BY_PIP, "is_topological": BY_CALL_COUNT, **BY_NAMES, **HONEST_NODE_IDIOMS}
    parts = {"test_dfs_postorder", "test_topo_sort", "test_topo_sort_deep", "test_child_count_order"}
    return grade(PS04, answers, parts | {"test_is_topological", "test_backward"}, 60)


@pytest.fixture(scope="module")
def ps04_more():
    answers = {"dfs_postorder": BY_NAMES_ORDER, "is_topological": NODE_SUBCLASS}
    return grade(PS04, answers, {"test_dfs_postorder", "test_is_topological"}, 60)


@pytest.fixture(scope="module")
def ps01():
    parts = {"test_forward_difference", "test_central_difference", "test_gradient_fd"}
    parts |= {"test_gradient_fd_leaves_x_alone", "test_best_step", "test_observed_order"}
    return grade(PS01, {**PS01_HONEST, "best_step": REPLACE_BOMB}, parts, 60)


def test_ps04_a_node_that_lies_to_the_judge_changes_nothing(ps04):
    """Fair: 0/2 (gradients by the visible graphs' names)."""
    assert ps04["test_backward"][0] == 0, ps04


def test_ps04_is_topological_cannot_answer_by_the_order_of_the_questions(ps04):
    assert ps04["test_is_topological"][0] == 0, ps04


def test_ps04_orders_are_not_borrowed_from_pip(ps04):
    points, message = ps04["test_dfs_postorder"]
    assert points == 0 and "No module named 'pip'" in message and "exercise rule" in message, message


def test_ps04_an_order_read_off_the_nodes_names_scores_nothing(ps04_more):
    points, message = ps04_more["test_dfs_postorder"]
    assert points == 0 and "comes after its child" in message, message


def test_ps04_a_subclass_of_node_bound_to_its_name_works_on_the_tests_nodes(ps04_more):
    assert ps04_more["test_is_topological"][0] == 2, ps04_more


def test_ps04_what_an_answer_adds_to_node_works_on_the_tests_nodes(ps04):
    """Fair: 2/2 three times; the deep test's graphs stay the judge's (and fast)."""
    for part in ("test_topo_sort", "test_topo_sort_deep", "test_child_count_order"):
        assert ps04[part][0] == 2, ps04


def test_ps01_honest_idioms_and_one_slip_cost_only_their_own_part(ps01):
    expected = {
        "test_forward_difference": 2,
        "test_central_difference": 0,
        "test_gradient_fd": 2,
        "test_gradient_fd_leaves_x_alone": 1,
        "test_observed_order": 1,
    }
    assert {part: ps01[part][0] for part in expected} == expected, ps01
    assert "looks like a forward difference" in ps01["test_central_difference"][1]
    assert not any("not valid Python" in m or "display" in m for _, m in ps01.values()), ps01


def test_ps01_a_large_value_in_a_hidden_message_is_not_searched_for_every_text(ps01):
    points, message = ps01["test_best_step"]
    assert points == 0 and "raised during the hidden tests" in message and ".123456789" not in message, message


def test_the_judge_keeps_and_searches_a_bounded_amount_of_the_students_text():
    """What the judge holds to clean hidden messages: at most MAX_TEXT_SIZE characters (40
    strings of 40 MB filled the judge's 1.5 GB), searched at most MAX_SEARCH times over."""
    codec = JudgeCodec()
    codec.decode(["ab" * 1000, "cd" * 1000])
    assert codec.without_their_text("got " + "ab" * 1000) == "got <your text>"
    assert codec.without_their_text("x" * (MAX_SEARCH // 2 + 1)) is None
    codec.decode("y" * (MAX_TEXT_SIZE + 1))
    assert codec.texts is None and codec.without_their_text("short") is None
