"""A sixth pass of honest and hostile students against ps04 (topological sort), ps12 (tracing)
and ps13 (the capstone), red team 6d. Each case grades a hand-in in the real sandbox (``grade`` of
test_verdict_seams.py) and asserts the fair score, the one ``jupyter_points`` of idioms.py gave
(the notebook run top to bottom in a plain kernel), or lower where the hand-in passes only by
skipping the part's work.

Tried, and held (full marks graded, as in Jupyter): ps04's ``dfs_postorder`` recursing under a
``sys.setrecursionlimit`` raised inside the function, visited nodes marked with a per-call stamp
attribute on the hidden test's notebook ``Node``s (asked of the judge once: the class takes it);
``topo_sort`` by an explicit stack of ``iter(node.parents)`` with a ``dict.fromkeys`` ordered set,
and one with a class default ``Node.visited = False`` set on each node and reset afterwards;
``child_count_order`` by Kahn with a ``collections.Counter`` fed by ``counts.update(node.parents)``
and a ``deque``; ``is_topological`` with positions in a ``weakref.WeakKeyDictionary`` keyed by
the test's nodes; ``backward`` by ``heapq`` over ``(depth, id(node), node)``. ps12's
``eliminate_dead_code`` by ``dataclasses.replace`` of equations and program with ``dict.fromkeys``
as the live set; ``compile_program`` building an ``ast`` module, ``ast.unparse`` for the source,
``compile(textwrap.dedent(source), ..., "exec", dont_inherit=True)`` and ``types.FunctionType`` of
the inner code object with custom globals (no builtins). ps13's checkpoints kept as a float64 2-D
NumPy array (returned as it is, the gradient a NumPy array) and as ``struct.pack("4d", ...)``
bytes, unpacked when reloaded and for the answer. A ``child_count_order`` counting children in a
fresh attribute name per call (``setattr(p, f"_children_{n}", ...)``: a new question to the judge
per name) failed as in Jupyter (its ``delattr`` of the output, which never got one; 0/2 both).

Hostile, held: ps13's ``checkpointed_gradient`` that records the whole flight and runs one
``backward()`` in an ``os.fork()`` child, piping the answer back (6/6 in Jupyter, whose tracemalloc
sees no child; graded 0/6 for its memory, fair 0/6: no checkpointing done), and one that frees a
60 MB NumPy ballast kept from the previous call before recording the whole flight (0/6 graded and
in Jupyter). The new ``SETTABLE`` cache is keyed by the course class a stand-in derives from; no
hidden test of these three assignments defines a class (a subclass with a ``__dict__`` of a
slotted course class would answer for the slotted one), so nothing here reaches it.

Found: the instance ``__dict__`` of a test's object. ps04's ``is_topological`` keeping its marks in
``vars(node)`` (``vars(node).get(...)``, ``vars(node)["_mark"] = ...``) scored 0/2 graded ("vars()
argument must have __dict__ attribute"), 2/2 in Jupyter, where the hidden test's nodes are the
notebook's ``Node``, which has one. A stand-in's ``__dict__`` is now a mapping
(``course_grader/instance_attributes.py``) over the judge's object's instance attributes (their names
asked of the judge once, ``introspection.instance_names``; refused for an object without a
``__dict__``, a function, a class or a module) and those set on the student's side, read and
written through the stand-in as ``node.name`` is; 2/2. A ps03 ``topological_order`` doing the same
on the hidden test's slotted course_lib ``Value``s still fails, as in Jupyter (0/2 both).

Left (a strict xfail): ``dfs_postorder`` marking by ``object.__setattr__(node, ...)`` and reading
``object.__getattribute__(node, "__dict__")`` scores 0/2 graded, 2/2 in Jupyter: ``object``'s own
slots bypass a stand-in's ``__getattr__`` and ``__setattr__``, and a stand-in has no ``__dict__`` of
its own to give them (rare: honest code says ``vars(node)`` or ``setattr``).
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS04_TESTS = {
    "test_dfs_postorder",
    "test_topo_sort",
    "test_topo_sort_deep",
    "test_child_count_order",
    "test_is_topological",
    "test_backward",
}
PS13_TESTS = {"test_final_step", "test_aim", "test_checkpointed_gradient"}

VISITED_BY_STAMP = """def dfs_postorder(output):
    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    stamp = object()
    order = []

    def visit(node):
        if getattr(node, "_seen_by", None) is stamp:
            return
        node._seen_by = stamp
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(output)
    return order
"""


STACK_OF_ITERATORS = """def topo_sort(output):
    done = dict.fromkeys([])
    on_path = {output}
    stack = [(output, iter(output.parents))]
    while stack:
        node, parents = stack[-1]
        for parent in parents:
            if parent not in done and parent not in on_path:
                on_path.add(parent)
                stack.append((parent, iter(parent.parents)))
                break
        else:
            stack.pop()
            done[node] = None
    return list(done)
"""


COUNTER_KAHN = """from collections import Counter, deque

def child_count_order(output):
    counts = Counter()
    seen, todo = {output}, deque([output])
    while todo:
        node = todo.popleft()
        counts.update(node.parents)
        for p in node.parents:
            if p not in seen:
                seen.add(p)
                todo.append(p)
    order, ready = [], [output]
    while ready:
        node = ready.pop()
        order.append(node)
        for p in node.parents:
            counts[p] -= 1
            if not counts[p]:
                ready.append(p)
    return order
"""


VARS_MARKS = """import itertools
_calls = itertools.count()

def is_topological(order, output):
    call = next(_calls)
    for k, node in enumerate(order):
        if vars(node).get("_mark", (None,))[0] == call:
            return False
        vars(node)["_mark"] = (call, k)
    if not order or order[-1] is not output:
        return False
    needed = {output}
    for k in range(len(order) - 1, -1, -1):
        node = order[k]
        if node not in needed:
            return False
        for p in node.parents:
            mark = vars(p).get("_mark", (None, None))
            if mark[0] != call or mark[1] >= k:
                return False
            needed.add(p)
    return True
"""


VARS_OF_VALUES = """import sys


def topological_order(root):
    order = []
    stamp = object()

    def visit(node):
        if vars(node).get("_by") is stamp:
            return
        vars(node)["_by"] = stamp
        for parent in node._parents:
            visit(parent)
        order.append(node)

    sys.setrecursionlimit(10_000)
    visit(root)
    return order
"""


HEAP_OF_DEPTHS = """import heapq

def backward(output, order):
    depth = {}
    for node in order:
        node.grad = 0.0
    for k, node in enumerate(order):
        depth[node] = k
    output.grad = 1.0
    heap = [(depth[output], id(output), output)]
    queued = {output}
    while heap:
        _, _, node = heapq.heappop(heap)
        for parent, local in zip(node.parents, node.local_grads):
            parent.grad += node.grad * local
            if parent not in queued:
                queued.add(parent)
                heapq.heappush(heap, (depth[parent], id(parent), parent))
"""


OBJECT_DICT_MARKS = """def dfs_postorder(output):
    order = []

    def visit(node):
        if object.__getattribute__(node, "__dict__").get("_done"):
            return
        object.__setattr__(node, "_done", True)
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(output)
    for node in order:
        del node._done
    return order
"""


CLASS_DEFAULT_RESET = """Node.visited = False

def topo_sort(output):
    order, stack = [], [(output, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif not node.visited:
            node.visited = True
            stack.append((node, True))
            stack.extend((p, False) for p in node.parents if not p.visited)
    for node in order:
        node.visited = False
    return order
"""


WEAK_POSITIONS = """import weakref

def is_topological(order, output):
    position = weakref.WeakKeyDictionary()
    for k, node in enumerate(order):
        if node in position:
            return False
        position[node] = k
    if not order or order[-1] is not output:
        return False
    needed = {output}
    for k in range(len(order) - 1, -1, -1):
        node = order[k]
        if node not in needed:
            return False
        for p in node.parents:
            if position.get(p, k) >= k:
                return False
            needed.add(p)
    return True
"""


REPLACED_EQUATIONS = """import dataclasses

def eliminate_dead_code(program):
    live = dict.fromkeys(id(o) for o in program.outputs if isinstance(o, Var))
    kept = []
    for e in reversed(program.equations):
        if id(e.out) in live:
            kept.append(dataclasses.replace(e, args=list(e.args)))
            live.update(dict.fromkeys(id(a) for a in e.args))
    return dataclasses.replace(
        program, inputs=list(program.inputs), equations=kept[::-1], outputs=list(program.outputs)
    )
"""


AST_COMPILED = """import ast, textwrap, types

def compile_program(program):
    calls = {"add": "add", "mul": "multiply", "neg": "negative", "exp": "exp", "sin": "sin"}
    env = {"np": np, "__builtins__": {}}
    names = {id(v): f"v{k}" for k, v in enumerate(program.inputs)}

    def node(a):
        if isinstance(a, Var):
            return ast.Name(names[id(a)], ast.Load())
        c = f"c{len(env)}"
        env[c] = a
        return ast.Name(c, ast.Load())

    body = []
    for e in program.equations:
        args = [node(a) for a in e.args]
        if e.op == "sum":
            axis = e.params[0]
            if isinstance(axis, tuple):
                axis = ast.Tuple([ast.Constant(x) for x in axis], ast.Load())
            else:
                axis = ast.Constant(axis)
            keywords = [ast.keyword("axis", axis), ast.keyword("keepdims", ast.Constant(e.params[1]))]
            call = ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "sum", ast.Load()), args, keywords)
        else:
            call = ast.Call(ast.Attribute(ast.Name("np", ast.Load()), calls[e.op], ast.Load()), args, [])
        names[id(e.out)] = f"v{len(names)}"
        body.append(ast.Assign([ast.Name(names[id(e.out)], ast.Store())], call))
    body.append(ast.Return(ast.Tuple([node(o) for o in program.outputs], ast.Load())))
    parameters = [ast.arg(names[id(v)]) for v in program.inputs]
    signature = ast.arguments([], parameters, None, [], [], None, [])
    fn = ast.FunctionDef("compiled", signature, body, [], None)
    module = ast.fix_missing_locations(ast.Module([fn], []))
    source = ast.unparse(module) + "\\n"
    code = compile(textwrap.dedent(source), "<compiled>", "exec", dont_inherit=True)
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(inner, env, "compiled"), source
"""


def test_ps04_honest_marks_stacks_counters_and_heaps_score_as_in_jupyter():
    answers = {
        "dfs_postorder": VISITED_BY_STAMP,
        "topo_sort": STACK_OF_ITERATORS,
        "child_count_order": COUNTER_KAHN,
        "is_topological": WEAK_POSITIONS,
        "backward": HEAP_OF_DEPTHS,
    }
    graded = grade("ps04_topological_sort", answers, PS04_TESTS, timeout=60)
    assert {k: v[0] for k, v in graded.items()} == dict.fromkeys(PS04_TESTS, 2.0), graded


def test_ps04_a_class_default_mark_reset_after_the_sort_scores_as_in_jupyter():
    graded = grade("ps04_topological_sort", {"topo_sort": CLASS_DEFAULT_RESET}, {"test_topo_sort"}, timeout=60)
    assert graded["test_topo_sort"][0] == 2.0, graded


def test_ps04_marks_in_vars_of_the_nodes_score_as_in_jupyter():
    graded = grade("ps04_topological_sort", {"is_topological": VARS_MARKS}, {"test_is_topological"}, timeout=60)
    assert graded["test_is_topological"][0] == 2.0, graded


def test_ps03_vars_of_a_slotted_value_fails_as_in_jupyter():
    graded = grade("ps03_reverse_mode", {"topological_order": VARS_OF_VALUES}, {"test_topological_order"}, timeout=60)
    assert graded["test_topological_order"][0] == 0.0, graded


@pytest.mark.xfail(strict=True, reason="object.__getattribute__(node, '__dict__') of a stand-in (docstring)")
def test_ps04_marks_through_object_dunders_score_as_in_jupyter():
    graded = grade("ps04_topological_sort", {"dfs_postorder": OBJECT_DICT_MARKS}, {"test_dfs_postorder"}, timeout=60)
    assert graded["test_dfs_postorder"][0] == 2.0, graded


def test_ps12_replaced_equations_and_an_ast_compiler_score_as_in_jupyter():
    answers = {"eliminate_dead_code": REPLACED_EQUATIONS, "compile_program": AST_COMPILED}
    graded = grade("ps12_tracing", answers, {"test_eliminate_dead_code", "test_jit"}, timeout=60)
    assert {k: v[0] for k, v in graded.items()} == {"test_eliminate_dead_code": 3.0, "test_jit": 5.0}, graded


SEGMENTS = """
    k_leaf, adjoint, height = Value(k), None, None
    for index in reversed(range(max(len(checkpoints), 1))):
        if index == 0:
            v_leaf, theta_leaf = Value(v), Value(theta)
            begin = state = launch(v_leaf, theta_leaf)
        else:
            begin = state = tuple(Value(float(s)) for s in LOAD(checkpoints[index]))
        for _ in range(index * every, min((index + 1) * every, steps)):
            state = heun_step(state, k_leaf, dt)
        if adjoint is None:
            out = final_step(state, k_leaf)
            height = out.data
        else:
            out = sum(s * a for s, a in zip(state, adjoint))
        out.backward()
        if index:
            adjoint = [s.grad for s in begin]
        del out, state
"""
ARRAY_CHECKPOINTS = (
    """
def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    LOAD = lambda row: row
    state, steps, rows = launch(float(v), float(theta)), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            rows.append(state)
        state = heun_step(state, k, dt)
        steps += 1
    checkpoints = np.array(rows, dtype=np.float64).reshape(-1, 4)
"""
    + SEGMENTS
    + """
    return height, np.array([v_leaf.grad, theta_leaf.grad, k_leaf.grad]), checkpoints
"""
)
PACKED_CHECKPOINTS = (
    """
import struct

def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    LOAD = lambda row: struct.unpack("4d", row)
    state, steps, checkpoints = launch(float(v), float(theta)), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(struct.pack("4d", *state))
        state = heun_step(state, k, dt)
        steps += 1
"""
    + SEGMENTS
    + """
    return height, [v_leaf.grad, theta_leaf.grad, k_leaf.grad], [struct.unpack("4d", b) for b in checkpoints]
"""
)

WHOLE_FLIGHT = """
def _whole(v, theta, k, dt, every):
    state, steps, checkpoints = launch(float(v), float(theta)), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(float(s) for s in state))
        state = heun_step(state, k, dt)
        steps += 1
    v_leaf, theta_leaf, k_leaf = Value(v), Value(theta), Value(k)
    state = launch(v_leaf, theta_leaf)
    for _ in range(steps):
        state = heun_step(state, k_leaf, dt)
    out = final_step(state, k_leaf)
    out.backward()
    return out.data, [v_leaf.grad, theta_leaf.grad, k_leaf.grad], checkpoints
"""
IN_A_FORKED_CHILD = (
    WHOLE_FLIGHT
    + """
import os, pickle

def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        with os.fdopen(w, "wb") as out:
            pickle.dump(_whole(v, theta, k, dt, every), out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as got:
        result = pickle.load(got)
    os.waitpid(pid, 0)
    return result
"""
)
FREED_BALLAST = (
    WHOLE_FLIGHT
    + """
import numpy as np
_BALLAST = [np.ones(60_000_000 // 8)]

def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    _BALLAST.clear()
    result = _whole(v, theta, k, dt, every)
    _BALLAST.append(np.ones(60_000_000 // 8))
    return result
"""
)


def test_ps13_checkpoints_in_an_array_or_packed_bytes_score_as_in_jupyter():
    for answer in (ARRAY_CHECKPOINTS, PACKED_CHECKPOINTS):
        graded = grade("ps13_capstone", {"checkpointed_gradient": answer}, PS13_TESTS, timeout=120)
        assert {k: v[0] for k, v in graded.items()} == {
            "test_final_step": 2.0,
            "test_aim": 2.0,
            "test_checkpointed_gradient": 6.0,
        }, graded


def test_ps13_the_whole_flight_in_a_child_or_in_freed_ballast_scores_nothing():
    for answer in (IN_A_FORKED_CHILD, FREED_BALLAST):
        graded = grade("ps13_capstone", {"checkpointed_gradient": answer}, PS13_TESTS, timeout=120)
        assert graded["test_checkpointed_gradient"][0] == 0.0, graded
        assert (graded["test_final_step"][0], graded["test_aim"][0]) == (2.0, 2.0), graded
