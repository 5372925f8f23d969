"""A fifth pass against the mechanisms of the last session: copies of the test's objects asked of the
judge (``copy.copy``, ``copy.deepcopy``), objects the student's code made of the judge's whose
attributes it sets there (``protocol.MADE``), ``inspect.signature`` of a test's function, and a
class bound to a notebook class's name; then honest students on ps02, ps04 and ps05.

Tried and held: a test's own object never becomes the student's to write. A copy is marked only
when it is a new object; the objects a copy shares with the test's (a Node's ``_parents`` list, a
partial's keywords) cross by value or stay read-only; a reference class's instance, its class and
its class attributes are reached only by dunder names, which setattr refuses; the aliasing route of
a copied bound method (``copy.copy(obj.method)`` re-reads ``getattr(obj, name)``, which an instance
attribute the student set on a copy answers) needs a non-dunder method on a judge object with a
``__dict__``, and neither ps02's reference ``MyDual`` (its methods are dunders; the student's lent
methods are not functions and cannot be copied that way), nor ps02's ``Node`` nor ps04's ``Node``
has one. What the judge keeps of copies is kept anyway as handles (the runner never drops them). A
default read off a signature is a handle that cannot be called; a class bound to a notebook class's
name is taken for it as a subclass would be, so it lets the judge run no operator that a subclass
could not already.

Found, each graded in the real sandbox (``grade`` of test_verdict_seams.py) and asserting the fair
score, the one the notebook gets when it runs top to bottom in Jupyter (``jupyter_points`` of
idioms.py gave full marks for each):

- ps02's ``tangent_sweep`` that works on ``copy.deepcopy(order)`` (the caller's graph untouched),
  setting a tangent on each copy and reading the parents' copies: the judge copied each node with
  a memo of its own, so a copy's parents were other copies than the list's, without a tangent
  (0/3, 3/3 in Jupyter); so did one that deep-copied the order and the seeds together (0/3, 3/3),
  and a ps04 ``is_topological`` that deep-copied the order and the output together (0/2, 2/2): in
  the judge the output's copy was not the order's last. One deepcopy of the student's now shares
  one memo in the judge.
- ps05's ``value_and_gradient`` that prints ``f.__name__``: the hidden test's ``counted`` raised
  AttributeError (0/1, 1/1 in Jupyter). A hidden test's function now has a placeholder name.
- ps02's ``gradient`` that calls ``f`` by the names of its signature (``f(**{name: dual})``): the
  hidden test's ``lambda a, b, c`` shows numbered names, which the judge then called it with
  (0/2, 2/2 in Jupyter). A call of a hidden test's function by its numbered names now reaches its
  own parameters.
"""

from __future__ import annotations

from test_verdict_seams import grade

# ps02 part 5, honest: the tangents set on a deep copy of the order, which keeps the caller's graph as it was.
DEEP_COPIED_ORDER = """import copy


def tangent_sweep(order, seeds):
    nodes = copy.deepcopy(order)  # the caller's graph stays as it was
    for node, mine in zip(order, nodes):
        if not mine._parents:
            mine.tangent = seeds.get(node, 0.0)
        else:
            mine.tangent = sum(local * p.tangent for p, local in zip(mine._parents, mine.grad_wrt_parents))
    return {node: mine.tangent for node, mine in zip(order, nodes)}
"""


def test_ps02_a_deep_copy_of_the_order_is_one_graph():
    assert grade("ps02_forward_mode", {"tangent_sweep": DEEP_COPIED_ORDER}, {"test_tangent_sweep"}, timeout=60) == {
        "test_tangent_sweep": (3.0, "")
    }


# ps02 part 5, honest: the order and the seeds deep-copied together, so that the seeds' keys are the copies.
DEEP_COPIED_ORDER_AND_SEEDS = """import copy


def tangent_sweep(order, seeds):
    nodes, seeded = copy.deepcopy((list(order), dict(seeds)))  # one copy of the graph and its seeds
    tangent = {}
    for node in nodes:
        if not node._parents:
            tangent[node] = seeded.get(node, 0.0)
        else:
            tangent[node] = sum(local * tangent[p] for p, local in zip(node._parents, node.grad_wrt_parents))
    return {node: tangent[mine] for node, mine in zip(order, nodes)}
"""


def test_ps02_the_order_and_its_seeds_deep_copied_together():
    answers = {"tangent_sweep": DEEP_COPIED_ORDER_AND_SEEDS}
    assert grade("ps02_forward_mode", answers, {"test_tangent_sweep"}, timeout=60) == {"test_tangent_sweep": (3.0, "")}


# ps04 part 4, honest: the order and the output deep-copied together, to work on copies of one graph.
DEEP_COPIED_GRAPH = """import copy


def is_topological(order, output):
    order, output = copy.deepcopy((list(order), output))  # copies to work on, one graph
    position = {}
    for k, node in enumerate(order):
        if node in position:
            return False
        position[node] = k
    if not order or order[-1] is not output:
        return False
    has_later_child = set()
    for k, node in enumerate(order):
        for parent in node.parents:
            if position.get(parent, k) >= k:
                return False
            has_later_child.add(parent)
    return all(node in has_later_child for node in order[:-1])
"""


def test_ps04_the_order_and_the_output_deep_copied_together():
    answers = {"is_topological": DEEP_COPIED_GRAPH}
    scores = grade("ps04_topological_sort", answers, {"test_is_topological"}, timeout=60)
    assert scores == {"test_is_topological": (2.0, "")}


# ps05 part 1, honest: the function's name printed.
PRINTS_THE_NAME = """def value_and_gradient(f, point):
    print(f"value_and_gradient of {f.__name__} at {point}")
    leaves = [Value(float(x)) for x in point]
    out = f(*leaves)
    out.backward()
    return out.data, np.array([leaf.grad for leaf in leaves])
"""


def test_ps05_a_hidden_tests_function_has_a_name_to_print():
    scores = grade(
        "ps05_optimisation", {"value_and_gradient": PRINTS_THE_NAME}, {"test_value_and_gradient"}, timeout=60
    )
    assert scores == {"test_value_and_gradient": (1.0, "")}


# ps02 part 4, honest: f called with its arguments by the names its signature gives.
BY_NAME = """import inspect


def derivative(f, x: float) -> float:
    out = f(MyDual(x, 1.0))
    return out.tangent if isinstance(out, MyDual) else 0.0


def gradient(f, point):
    names = list(inspect.signature(f).parameters)  # f's arguments, passed by name
    partials = []
    for i in range(len(point)):
        seeded = {n: MyDual(p, 1.0 if j == i else 0.0) for j, (n, p) in enumerate(zip(names, point))}
        out = f(**seeded)
        partials.append(out.tangent if isinstance(out, MyDual) else 0.0)
    return partials
"""


def test_ps02_a_hidden_tests_function_called_by_the_names_it_shows():
    assert grade("ps02_forward_mode", {"derivative_gradient": BY_NAME}, {"test_derivative_gradient"}, timeout=60) == {
        "test_derivative_gradient": (2.0, "")
    }
