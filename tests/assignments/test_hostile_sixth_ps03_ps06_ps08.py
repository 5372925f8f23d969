"""A sixth pass of honest and hostile students against ps03 (reverse mode), ps06 (custom rules and
Jacobians) and ps08 (training an MLP), red team 6a.

Tried and held (graded in the real sandbox, ``grade`` of test_verdict_seams.py, full marks as the
solution has in Jupyter): ps03's ``topological_order`` over the hidden test's course_lib Values by a
``functools.lru_cache`` keyed by nodes, a set of the nodes themselves with ``operator.attrgetter``,
a dict of nodes as an ordered set, a ``weakref.WeakSet``, a ``match`` on (node, flag) pairs with a
class pattern ``object(_parents=ps)`` and ``sys.getsizeof`` of nodes, ``sorted(key=id)`` with
``hash()`` marks, an exception that carries the next node, ``np.frompyfunc`` over an object array
of nodes; ps03's ``backward`` calling the hidden probe's ``functools.partial`` by keyword
(``node._backward(grad=...)``), by ``operator.attrgetter``, ``functools.reduce``, a ``partial`` of
it, ``__call__`` and by the name ``inspect.signature`` gives its first parameter. ps06: Jacobians
calling ``f(x=t)`` by keyword, through ``functools.wraps``, a ``weakref.ref`` of ``f``, rows in a
``typing.NamedTuple`` put together by ``functools.reduce``, ``functools.partial(jvp, f)``; hypot's
rules mixing the test's Tensor ``g`` with the student's ones, reduced by hand with ``match`` on the
shape or ``functools.reduce`` over the axes. ps08: ``accuracy`` iterating over the test's Tensor's
rows, a ``match`` with ``case Tensor(data=scores)``, ``type(logits).__name__``, the test's
``softmax`` under ``no_grad``, ``np.vectorize``, ``copy.deepcopy`` and ``sys.getsizeof`` of it, an
f-string of its repr, its elements read one by one with ``float``; an in-place ``-=`` on the test
Tensor's ``.data`` fails as in Jupyter (read-only both ways); a float subclass returned passes.

Known, documented (README, "Not guaranteed"): ``f.__code__`` and ``f.__defaults__`` of a test's
function are refused (0/2 for a Jacobian that checks ``f.__code__.co_argcount``, 2/2 in Jupyter: the
code and defaults of a hidden test's function are its text and inputs), and ``type(node)`` of a
test's object is the stand-in's class (``type(node).__name__`` is not ``Value``).

Found, each asserting the fair score, the one ``jupyter_points`` of idioms.py gave:

- ps03's ``topological_order`` that marks visited nodes with an attribute (``node._visited_by =
  order``): graded 2/2, 0/2 in Jupyter, where the hidden test's course_lib ``Value`` has slots and
  takes no new attribute (the visible test's Values are the student's class, which does). A
  stand-in now asks the judge whether its object would take the attribute (a slot, a property
  with a setter, or a ``__dict__``) before keeping it on the student's side. (ps08's ``accuracy``
  caching its prediction on the test's Tensor already failed as in Jupyter, 0/2: the judge's
  Tensor crosses by value, a course_lib Tensor with slots; kept as a case beside a slot it sets.)
- ps08's ``accuracy`` returning a NumPy long double (``np.longdouble(hits.mean())``): 2/2 graded,
  0/2 in Jupyter, where it is no Python float; a NumPy scalar crossed as a float64, a float
  subclass. It now crosses as the type it is (a float32, an int8, a long double ...).
"""

from __future__ import annotations

from test_verdict_seams import grade

# ps03 part 4: visited nodes marked with an attribute of the node (a common idiom; the visible test's
# Values are the student's class, which takes it; the hidden test's course_lib Values have slots).
MARKED_NODES = '''import sys


def topological_order(root):
    """Every node root depends on, once each, parents before children, root last."""
    order = []

    def visit(node):
        if getattr(node, "_visited_by", None) is order:
            return
        node._visited_by = order
        for parent in node._parents:
            visit(parent)
        order.append(node)

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        visit(root)
    finally:
        sys.setrecursionlimit(old)
    return order
'''


def test_ps03_a_mark_on_a_slotted_node_fails_as_in_jupyter():
    """Fair: 0/2 (jupyter_points: 0/2, AttributeError on the hidden test's Values); 2/2 before."""
    result = grade("ps03_reverse_mode", {"topological_order": MARKED_NODES}, {"test_topological_order"})
    assert result["test_topological_order"][0] == 0, result


# ps08 part 2: the prediction cached on the test's Tensor; and a slot of it (label) set, which Python allows.
CACHED_ON_THE_TENSOR = '''def accuracy(logits, labels):
    """Fraction of rows of logits (Tensor or array, shape (N, C)) whose argmax equals the label."""
    if isinstance(logits, Tensor):
        logits.cached_prediction = logits.data.argmax(axis=1)
        prediction = logits.cached_prediction
    else:
        prediction = np.asarray(logits).argmax(axis=1)
    return float(np.mean(prediction == labels))
'''

LABELLED_TENSOR = '''def accuracy(logits, labels):
    """Fraction of rows of logits (Tensor or array, shape (N, C)) whose argmax equals the label."""
    if isinstance(logits, Tensor):
        logits.label = "scored"
        scores = logits.data
    else:
        scores = np.asarray(logits)
    return float(np.mean(scores.argmax(axis=1) == labels))
'''

# ps08 part 2: a long double, no Python float in Jupyter.
LONG_DOUBLE = '''def accuracy(logits, labels):
    """Fraction of rows of logits (Tensor or array, shape (N, C)) whose argmax equals the label."""
    scores = logits.data if isinstance(logits, Tensor) else np.asarray(logits)
    return np.longdouble(np.mean(scores.argmax(axis=1) == np.asarray(labels)))
'''


def test_ps08_a_new_attribute_on_the_tests_tensor_fails_as_in_jupyter():
    """Fair: 0/2 (jupyter_points: 0/2; held before too). A slot of it (``label``) is set as in Jupyter: 2/2."""
    result = grade("ps08_training_mlp", {"accuracy": CACHED_ON_THE_TENSOR}, {"test_accuracy"})
    assert result["test_accuracy"][0] == 0, result
    result = grade("ps08_training_mlp", {"accuracy": LABELLED_TENSOR}, {"test_accuracy"})
    assert result["test_accuracy"][0] == 2, result


def test_ps08_a_numpy_scalar_crosses_as_its_own_type():
    """Fair: 0/2 (jupyter_points: 0/2, ``isinstance(got, float)`` fails); 2/2 before."""
    result = grade("ps08_training_mlp", {"accuracy": LONG_DOUBLE}, {"test_accuracy"})
    assert result["test_accuracy"][0] == 0, result
    assert "longdouble" in result["test_accuracy"][1], result
