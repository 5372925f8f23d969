"""What Python asks of a type, asked of the test's objects: duck typing as in Jupyter.

``callable(x)``, ``hasattr(x, "__len__")`` and ``isinstance(x, Iterable)`` look at an object's
type, not at the object. The runner's stand-ins for the test's objects had every protocol
method, so a test's function claimed a length and a graph node claimed to be callable: an honest
answer that checks what it was handed (found by the idiom fuzzer, ``test_idioms.py``) lost
every point it earned. Each stand-in now has those of its object's class. Fair scores are the
ones the notebook gets in Jupyter.
"""

from __future__ import annotations

from test_verdict_seams import PS01, grade

PS04 = "ps04_topological_sort"

# ps01: f may be one function or a list of them (a gradient each), told apart by a length.
GRADIENT_OF_ONE_OR_MANY = '''
def gradient_fd(f, x, h=1e-6):
    """Central differences of f (or of each function of a list of them) at x."""
    if hasattr(f, "__len__"):
        return np.array([gradient_fd(g, x, h) for g in f])
    if not callable(f):
        raise TypeError(f"f must be a function, not a {type(f).__name__}")
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad
'''

# ps04: the output, or any collection of outputs; a function handed by mistake is refused.
POSTORDER_OF_ONE_OR_MANY = '''
from collections.abc import Iterable


def dfs_postorder(output):
    """Every node the output(s) depend on, each after all of its parents."""
    if callable(output):
        raise TypeError("pass the output node, not a function that makes it")
    outputs = list(output) if isinstance(output, Iterable) else [output]
    order, visited = [], set()

    def visit(node):
        if node in visited:
            return
        visited.add(node)
        for parent in node.parents:
            visit(parent)
        order.append(node)

    for out in outputs:
        visit(out)
    return order
'''


def test_ps01_a_test_function_has_no_length():
    parts = {"test_gradient_fd": 2.0, "test_gradient_fd_leaves_x_alone": 1.0}
    results = grade(PS01, {"gradient_fd": GRADIENT_OF_ONE_OR_MANY}, set(parts))
    assert {k: v[0] for k, v in results.items()} == parts, results


def test_ps04_a_test_node_cannot_be_called_nor_iterated():
    results = grade(PS04, {"dfs_postorder": POSTORDER_OF_ONE_OR_MANY}, {"test_dfs_postorder"})
    assert results["test_dfs_postorder"][0] == 2.0, results
