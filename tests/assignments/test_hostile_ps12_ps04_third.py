"""A third pass on ps04 (topological sort) and ps12 (tracing), aimed at the grader's newest code:
attribute reads kept on the student's side, operators the student's cells add to a set-up class,
and student_side with a class of the student's. One graded run (``grade`` of
test_verdict_seams.py) with two honest answers, each asserting the fair score.
"""

from __future__ import annotations

from test_verdict_seams import grade

# ps04 part 1, honest: the given Node pasted into the answer cell with a helper method of the
# student's, used on every node. In Jupyter the test's nodes are made with it (leaf, add, ...
# look Node up when they run); graded, the test's nodes stood in the student's process as the
# set-up cells' Node, without the helper ("'Node' object has no attribute 'inputs'"): 0/2 where
# Jupyter gives 2/2. A class of the set-up class's name that the student's cells defined anew now
# stands for the test's objects there, as a subclass bound to the name did.
ANEW_NODE = '''
class Node:
    """The given Node pasted here, with a helper of mine."""

    def __init__(self, value, parents=(), local_grads=(), op="", name=""):
        self.value = float(value)
        self.parents = tuple(parents)
        self.local_grads = tuple(local_grads)
        self.op = op
        self.name = name
        self.grad = 0.0

    def __repr__(self):
        return f"Node({self.name!r}, value={self.value:.4g})"

    def inputs(self):
        """The nodes this one was computed from, each once."""
        return list(dict.fromkeys(self.parents))


def dfs_postorder(output):
    order, visited = [], set()

    def visit(node):
        if node in visited:
            return
        visited.add(node)
        for parent in node.inputs():
            visit(parent)
        order.append(node)

    visit(output)
    return order
'''

# ps04 part 4, honest: Node given Python's container protocols (its length is how many parents it
# has, iterating over it gives them), so that `parent in node` asks whether parent is one of them
# and a node of length 0, an input, is false, as Python derives both from __iter__ and __len__.
# Graded, the test's nodes stood in the student's process with the judge's answers for both
# (true; "argument of type 'Node' is not iterable"): 0/2 where Jupyter gives 2/2. The runner's
# stand-in now falls back on the student's __len__ and __iter__ as Python does. (Here they go on
# part 1's Node, pasted anew; on the given Node the same answer scored 0/2 too, and now 2/2.)
CONTAINER_NODE = """
Node.__len__ = lambda self: len(self.parents)  # a node's length: how many parents it has
Node.__iter__ = lambda self: iter(self.parents)  # and iterating over it gives them (so `p in node` asks it)


def is_topological(order, output):
    position = {}
    for k, node in enumerate(order):
        if node in position:
            return False
        position[node] = k
    if not order or order[-1] is not output or order[0]:  # an order starts with an input: a node of length 0
        return False
    for k, node in enumerate(order):
        if any(later in node for later in order[k + 1:]):  # a parent listed after its child
            return False
        if any(parent not in position for parent in node):  # an ancestor missing
            return False
    children = {}
    for node in order:
        for parent in node:
            children[parent] = True
    return all(node in children for node in order[:-1])
"""


def test_ps04_the_students_own_node_and_its_protocols_work_on_the_tests_nodes():
    """Fair: 2/2 for each part, as in Jupyter."""
    answers = {"dfs_postorder": ANEW_NODE, "is_topological": CONTAINER_NODE}
    scores = grade("ps04_topological_sort", answers, {"test_dfs_postorder", "test_is_topological"}, 60)
    assert scores["test_dfs_postorder"][0] == 2, scores
    assert scores["test_is_topological"][0] == 2, scores
