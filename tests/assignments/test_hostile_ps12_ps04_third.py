"""A third pass on ps04 (topological sort) and ps12 (tracing), aimed at the grader's newest code:
attribute reads kept on the student's side, operators the student's cells add to a set-up class,
and student_side with a class of the student's. One graded run per assignment
(``grade`` of test_verdict_seams.py), every case asserting the fair score.
"""

from __future__ import annotations

from test_verdict_seams import grade

# ps04 part 4, honest: Node given Python's container protocols (its length is how many parents it
# has, iterating over it gives them), so that `parent in node` asks whether parent is one of them
# and a node of length 0, an input, is false, as Python derives both from __iter__ and __len__.
# Graded, the test's nodes stood in the student's process with the judge's answers for both
# (true; "argument of type 'Node' is not iterable"): 0/2 where Jupyter gives 2/2. The runner's
# stand-in now falls back on the student's __len__ and __iter__ as Python does.
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


def test_ps04_a_node_with_pythons_container_protocols_scores_in_full():
    """Fair: 2/2, as in Jupyter."""
    points, message = grade("ps04_topological_sort", {"is_topological": CONTAINER_NODE}, {"test_is_topological"}, 60)[
        "test_is_topological"
    ]
    assert points == 2, message
