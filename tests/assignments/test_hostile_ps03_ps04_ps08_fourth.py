"""A fourth pass of hostile and honest students against ps03 (reverse mode), ps04 (topological
sort) and ps08 (training an MLP), beyond the hostile files that name them.

Tried and held (graded as in Jupyter): on ps04's test nodes a search state kept in a dataclass of
the student's, ``match`` with a class pattern of ``Node``, a ``deque`` of (node, flag) pairs made
with ``itertools``, a copied order, child counts in a ``WeakKeyDictionary`` and a heap of (tick,
node) pairs; ps03's and ps04's recursive sorts that raise the limit inside their call (documented),
and ps04's recursive ``topo_sort`` whose cell raises the limit (the test lowers it again, as in
Jupyter).

Found, each graded in the real sandbox (``grade`` of test_verdict_seams.py) and asserting the fair
score, the one the notebook gets when it runs top to bottom in Jupyter (``jupyter_points`` of
idioms.py gave full marks for each):

- NumPy arrays of the test's nodes (``np.array(order, dtype=object)``): the runner's stand-in of
  every judge's object had ``__array__``, so NumPy asked the judge for numbers (0/2, 2/2 in
  Jupyter). Only a stand-in whose object's class has ``__array__`` has it now.
- A recursion limit raised by the student's cell: the runner set it back to Python's default
  before every request, though only ps04's tests set it (0/2 on ps03's chain of 200 diamonds, 2/2
  in Jupyter). A test's ``sys.setrecursionlimit`` now sets it where the student's code runs too.
- A recursive search that falls back on a stack of its own at a RecursionError: the reply to a
  read of the test's node, parsed near the limit, was a ProtocolError that ended the runner (0/2,
  2/2 in Jupyter). Replies are read with room of their own above the reader's frames.
"""

from __future__ import annotations

from test_verdict_seams import grade

# ps03 part 4, honest: a recursive search through a generator (three frames a level), in a cell
# that raises the limit for deep graphs. The hidden chain of 200 diamonds is 401 nodes deep.
RAISED_LIMIT = '''import sys

sys.setrecursionlimit(10_000)  # room for deep graphs


def topological_order(root):
    """Every node root depends on, once each, parents before children, root last."""
    order, visited = [], set()

    def visit(node):
        if id(node) not in visited:
            visited.add(id(node))
            any(visit(parent) for parent in node._parents)  # every parent first
            order.append(node)

    visit(root)
    return order
'''

# ps03 part 4, honest: the same search at Python's default limit, falling back on a stack of its own
# where the graph is too deep to recurse.
FALLS_BACK = '''def _recursive_order(root):
    """Depth-first post-order, as chapter 6 writes it."""
    order, visited = [], set()

    def visit(node):
        if id(node) not in visited:
            visited.add(id(node))
            any(visit(parent) for parent in node._parents)
            order.append(node)

    visit(root)
    return order


def _order_with_a_stack(root):
    """The same post-order with a stack of my own, for graphs too deep for Python's."""
    order, visited, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif id(node) not in visited:
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((parent, False) for parent in reversed(node._parents))
    return order


def topological_order(root):
    """Every node root depends on, once each, parents before children, root last."""
    try:
        return _recursive_order(root)
    except RecursionError:  # too deep to recurse: the same search, iteratively
        return _order_with_a_stack(root)
'''

# ps04 part 4, honest: the order as a NumPy array of nodes.
OBJECT_ARRAY = """import numpy as np


def is_topological(order, output):
    nodes = np.array(order, dtype=object)
    if len(nodes) == 0 or nodes[-1] is not output:
        return False
    position = {}
    for k, node in enumerate(nodes):
        if node in position:
            return False
        position[node] = k
    needed = {output}
    for k in range(len(nodes) - 1, -1, -1):
        node = nodes[k]
        if node not in needed:
            return False
        for parent in node.parents:
            if position.get(parent, k) >= k:
                return False
            needed.add(parent)
    return True
"""

# ps04 part 2, a shortcut: a recursive topo_sort whose cell raises the limit. The deep test sets
# Python's default first, in Jupyter too: nothing for the deep graphs there, nothing here.
RECURSIVE_TOPO_SORT = """import sys

sys.setrecursionlimit(400_000)


def topo_sort(output):
    order, seen = [], set()

    def visit(node):
        if node not in seen:
            seen.add(node)
            for parent in node.parents:
                visit(parent)
            order.append(node)

    visit(output)
    return order
"""


def test_ps03_a_limit_the_cell_raised_holds_for_the_tests_that_set_none():
    assert grade("ps03_reverse_mode", {"topological_order": RAISED_LIMIT}, {"test_topological_order"}) == {
        "test_topological_order": (2.0, "")
    }


def test_ps03_a_recursion_that_falls_back_on_a_stack_meets_its_own_recursion_error():
    assert grade("ps03_reverse_mode", {"topological_order": FALLS_BACK}, {"test_topological_order"}) == {
        "test_topological_order": (2.0, "")
    }


def test_ps04_nodes_in_an_object_array_and_a_limit_the_test_lowers_again():
    points = grade(
        "ps04_topological_sort",
        {"is_topological": OBJECT_ARRAY, "topo_sort": RECURSIVE_TOPO_SORT},
        {"test_topo_sort", "test_topo_sort_deep", "test_is_topological"},
        timeout=60,
    )
    assert {grade_id: p for grade_id, (p, _) in points.items()} == {
        "test_topo_sort": 2.0,
        "test_topo_sort_deep": 0.0,
        "test_is_topological": 2.0,
    }
