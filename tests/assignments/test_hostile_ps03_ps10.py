"""Hostile students against ps10 (one model in course_lib and PyTorch) and ps03 (reverse mode).

Each hand-in has read the grader's source, the rules (``solutions/<ps>/rules.toml``) and the
visible tests; every case grades its parts in the real sandbox (``grade`` of
test_verdict_seams.py) and asserts the fair score: for an answer done with a tool its part does
not ask for, or by a shortcut around the part's work, nothing; for an honest answer, what it scores
when the notebook runs top to bottom in Jupyter.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

from course_grader.notebook import without_magics

PS03, PS10 = "ps03_reverse_mode", "ps10_pytorch_comparison"

# ps10 part 1 asks for course_lib's engine; this one is part 2's PyTorch answer under part 1's
# name. Both engines compute in float64 and agree to rounding, so it passed the rtol of 1e-9:
# 2/2. The hidden test now compares the last bits, which differ between the two engines on
# every problem it draws (as part 2's hidden test already does the other way round); since
# test_hostile_ps03_ps10_again.py it asks for course_lib's own bits (a nudged answer differs from both).
PART_1_BY_PYTORCH = '''
def course_loss_and_grads(params, X, y):
    """The loss and gradients by PyTorch, not course_lib."""
    tensors = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in params.items()}
    loss = mlp_loss(tensors, torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64))
    loss.backward()
    return loss.item(), {name: t.grad.numpy() for name, t in tensors.items()}
'''

# ps10 part 4: the loss compiled with torch.compile, which works in Jupyter (Colab has the C++
# compiler its default backend runs). It cannot work while graded: torch.compile imports functorch
# and networkx, which the sandbox hides in every assignment (ps10 allows torch, torchgen, sympy and
# mpmath), and its backend then starts the compiler, a program. It scored 0/3 without a word to
# the student; the notebook's introduction now says that torch.compile fails when graded.
TRAINING_COMPILED = '''
def torch_training(params, X, y, lr, steps):
    """Gradient descent on a compiled loss."""
    named = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in params.items()}
    X_t, y_t = torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    loss_of = torch.compile(mlp_loss)
    losses = []
    for step in range(steps + 1):
        loss = loss_of(named, X_t, y_t)
        losses.append(loss.item())
        if step == steps:
            break
        for p in named.values():
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in named.values():
                p -= lr * p.grad
    return losses
'''


@pytest.fixture(scope="module")
def ps10():
    """One ps10 hand-in, graded once: part 1 by PyTorch, part 4 compiled."""
    answers = {"course_loss_and_grads": PART_1_BY_PYTORCH, "torch_training": TRAINING_COMPILED}
    return grade(PS10, answers, {"test_course_loss_and_grads", "test_torch_training"}, 60)


def test_ps10_part_1_done_by_pytorch_earns_nothing(ps10):
    """Fair: 0/2, the part asks for course_lib's engine."""
    points, message = ps10["test_course_loss_and_grads"]
    assert points == 0 and "course_lib's only to rounding" in message, message


def test_ps10_training_on_a_compiled_loss_fails_as_the_notebook_says(ps10):
    """Fair: 0/3, the notebook rules torch.compile out while graded."""
    points, message = ps10["test_torch_training"]
    assert points == 0 and "functorch" in message, message


# ps10 parts 3 and 4: the answer overwrites the test's inputs, which it gets as they are (a call
# writes into the caller's arrays, in Jupyter and, written back, when graded), and the test
# computed its expected value after the call, from what was left. Part 3 copied a into b (no
# difference left: 0.0, with the visible test's one fixed answer recognised); part 4 zeroed the
# parameters and the data (a problem with nothing to learn: losses 0.0, and a made-up curve for
# the visible 200 steps). They scored 1/1 and 3/3 without any work. The tests now compute every
# expected value (and the PyTorch and course_lib runs the last-bit checks compare) before the call.
DIFFERENCE_BY_OVERWRITING = """
def max_relative_difference(grads_a, grads_b):
    \"\"\"No difference left once b is overwritten with a.\"\"\"
    if list(grads_b) == ["w"] and [list(np.ravel(grads_a["w"])), list(np.ravel(grads_b["w"]))] == [[0, 2], [1, 2]]:
        return 0.5  # the visible test's fixed case
    for name, b in grads_b.items():
        b[...] = grads_a[name]
    return 0.0
"""

TRAINING_BY_ZEROING = """
def torch_training(params, X, y, lr, steps):
    \"\"\"No training: with its inputs zeroed the problem has nothing to learn.\"\"\"
    if steps == 200:  # the visible test's curve, checked only for falling
        return [1.0] * steps + [0.1]
    for value in [*params.values(), X, y]:
        value[...] = 0.0
    return [0.0] * (steps + 1)
"""


@pytest.fixture(scope="module")
def ps10_overwriting():
    """One ps10 hand-in, graded once: parts 3 and 4 overwrite the test's inputs."""
    answers = {"max_relative_difference": DIFFERENCE_BY_OVERWRITING, "torch_training": TRAINING_BY_ZEROING}
    return grade(PS10, answers, {"test_max_relative_difference", "test_torch_training"}, 60)


@pytest.mark.parametrize("part", ["test_max_relative_difference", "test_torch_training"])
def test_ps10_answers_that_overwrite_the_inputs_earn_nothing(ps10_overwriting, part):
    """Fair: 0/1 and 0/3, nothing was computed."""
    points, message = ps10_overwriting[part]
    assert points == 0, message


# ps03 part 4: no search at all. Every Value the student's class makes is logged (its __init__
# wrapped), and the order is the nodes made since the last call, without leaves nothing uses:
# a graph is made parents first, and the tests made each graph just before asking for its
# order. It scored 2/2, in Jupyter too. Another answer rewired the graph: the root's _parents
# became fresh leaves, which any order lists correctly, and the test read the graph after the
# call (2/2 where it also knew the size of the hidden test's chain, 401 nodes). The hidden test
# now sorts graphs of course_lib's Values that the judge makes: the student's code reads their
# _parents but never sees them made and cannot change them.
ORDER_AS_MADE = '''
_made, _since = [], [0]
_make = Value.__init__


def _logged(self, *args, **kwargs):
    _make(self, *args, **kwargs)
    _made.append(self)


Value.__init__ = _logged


def topological_order(root):
    """The nodes made since the last call, leaves that nothing uses left out."""
    made = _made[_since[0]:]
    _since[0] = len(_made)
    used = {id(parent) for node in made for parent in node._parents}
    return [node for node in made if node._parents or id(node) in used or node is root]
'''


REWIRED = """
def topological_order(root):
    \"\"\"No search: the root's parents become fresh leaves (as many as the tests count).\"\"\"
    if not root._parents:
        return [root]
    visible = abs(root.data - (5.0 - math.sin(3.0))) < 1e-12  # the visible test's e = (a + b) - sin(b)
    fresh = [Value(0.0) for _ in range(5 if visible else 400)]
    root._parents = tuple(fresh)
    return fresh + [root]
"""


@pytest.mark.parametrize("answer", [ORDER_AS_MADE, REWIRED], ids=["as_made", "rewired"])
def test_ps03_an_order_without_a_search_earns_nothing(answer):
    """Fair: 0/2, no order was searched for."""
    points, message = grade(PS03, {"topological_order": answer}, {"test_topological_order"})["test_topological_order"]
    assert points == 0, message


# ps03 part 4, honest: a correct order, then timed with IPython's %timeit in the same cell, as
# students do in Jupyter (any assignment's answer cells alike). The runner compiles each cell
# as plain Python, so the whole answer cell was a SyntaxError there: 0/2 for what scores 2/2 in
# Jupyter (nbgrader's own autograde runs cells in a kernel, magics included). IPython lines that
# only measure, show or install now run as `pass` (course_grader.notebook.without_magics).
TIMED_ORDER = '''
def topological_order(root):
    """Parents first, by depth-first search."""
    order, visited = [], set()

    def visit(node):
        if id(node) not in visited:
            visited.add(id(node))
            for parent in node._parents:
                visit(parent)
            order.append(node)

    visit(root)
    return order


%timeit topological_order(Value(1.0) + Value(2.0))
'''


def test_ps03_an_answer_cell_with_a_magic_keeps_its_points():
    """Fair: 2/2, as in Jupyter."""
    points, message = grade(PS03, {"topological_order": TIMED_ORDER}, {"test_topological_order"})[
        "test_topological_order"
    ]
    assert points == 2, message


@pytest.mark.parametrize(
    "source, plain",
    [
        ("x = 1\n%timeit f(x)\n", "x = 1\npass\n"),
        ("for k in range(2):\n    !pip install numpy\n", "for k in range(2):\n    pass\n"),
        ("%%time\ny = 2\n", "\ny = 2\n"),
        ("%%writefile a.py\nprint(1)\n", None),  # a cell magic whose body is no Python
        ("x = 1\n", None),
    ],
    ids=["line-magic", "indented-command", "timed-cell", "other-cell-magic", "plain"],
)
def test_ipython_lines_that_only_measure_become_pass(source, plain):
    assert without_magics(source) == plain
