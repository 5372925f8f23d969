"""Honest hand-ins the idiom fuzzer (``test_idioms.py``) found graded below their fair score, the
one the notebook gets in Jupyter (one slip costing once).

``callable(x)``, ``hasattr(x, "__len__")`` and ``isinstance(x, Iterable)`` look at an object's
type, not at the object. The runner's stand-ins for the test's objects had every protocol
method, so a test's function claimed a length and a graph node claimed to be callable: an answer
that checks what it was handed lost every point it earned. Each stand-in now has those of its
object's class.

A program that a reference made in the judge from the student's own objects (ps12, after a
mistake in tracer_ops) printed by the student's code: course_lib's ``show`` names the constants
by id and reads the equations twice, and each read decoded the student's arrays anew (KeyError).
While the judge serves the student's call, an array read again unchanged is the same array.

``copy.copy`` and ``copy.deepcopy`` of a test's object (a snapshot kept while debugging) made a
stand-in without its state: every later read of it raised AttributeError. The judge now copies
its own object: a node's copy is a new node with the same data, a function's is itself.
"""

from __future__ import annotations

from nbgrader_helpers import load_mistakes
from test_verdict_seams import PS01, grade

PS04, PS12 = "ps04_topological_sort", "ps12_tracing"

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


# ps12: the solution's compile_program, printing the program it compiles first.
PRINTS_THE_PROGRAM = """
def compile_program(program):
    print(program)
    calls = {"add": "np.add", "mul": "np.multiply", "neg": "np.negative", "exp": "np.exp", "sin": "np.sin"}
    namespace = {"np": np}
    names = {id(v): f"v{k}" for k, v in enumerate(program.inputs)}

    def name(a):
        if isinstance(a, Var):
            return names[id(a)]
        constant = f"c{len(namespace) - 1}"
        namespace[constant] = a
        return constant

    lines = [f"def compiled({', '.join(names[id(v)] for v in program.inputs)}):"]
    for e in program.equations:
        args = ", ".join(name(a) for a in e.args)
        if e.op == "sum":
            call = f"np.sum({args}, axis={e.params[0]!r}, keepdims={e.params[1]!r})"
        else:
            call = f"{calls[e.op]}({args})"
        names[id(e.out)] = f"v{len(names)}"
        lines.append(f"    {names[id(e.out)]} = {call}")
    lines.append(f"    return ({''.join(name(o) + ', ' for o in program.outputs)})")
    source = "\\n".join(lines) + "\\n"
    exec(source, namespace)
    return namespace["compiled"], source
"""


def test_ps12_a_program_a_reference_made_prints_after_a_mistake_in_tracer_ops():
    answers = {**load_mistakes(PS12)["broadcast_to_the_left_operand"]["replace"], "compile_program": PRINTS_THE_PROGRAM}
    results = grade(PS12, answers, {"test_tracer_ops", "test_jit"}, timeout=60)
    assert {k: v[0] for k, v in results.items()} == {"test_tracer_ops": 0.0, "test_jit": 5.0}, results


# ps04: the solution's dfs_postorder, keeping copies of the output as a student debugging might.
POSTORDER_WITH_SNAPSHOTS = """
import copy


def dfs_postorder(output):
    before, whole = copy.copy(output), copy.deepcopy(output)
    assert before is not output and before.value == output.value and before.parents == output.parents
    assert whole.value == output.value and len(whole.parents) == len(output.parents)
    assert copy.copy(leaf) is leaf  # a function is its own copy
    order, visited = [], set()

    def visit(node):
        if node in visited:
            return
        visited.add(node)
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(output)
    return order
"""


def test_ps04_a_copy_of_a_test_node_is_a_node():
    results = grade(PS04, {"dfs_postorder": POSTORDER_WITH_SNAPSHOTS}, {"test_dfs_postorder"})
    assert results["test_dfs_postorder"][0] == 2.0, results
