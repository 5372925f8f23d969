"""Typical mistakes in ps04 (topological sort), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student.
"""

MISTAKES = {
    "recursive_topo_sort": {
        # Part 1's recursion handed in for part 2: right on small graphs, RecursionError on deep ones.
        "replace": {
            "topo_sort": '''def topo_sort(output):
    """Every node output depends on, each after all of its parents."""
    order, visited = [], set()

    def visit(node):
        if node not in visited:
            visited.add(node)
            for parent in node.parents:
                visit(parent)
            order.append(node)

    visit(output)
    return order
''',
        },
        "fails": {"test_topo_sort_deep"},
        "message": "use an explicit stack",
    },
    "preorder_dfs": {
        # Appends a node before visiting its parents, then reverses: wrong on shared nodes.
        "replace": {
            "dfs_postorder": '''def dfs_postorder(output):
    """Every node output depends on, each after all of its parents."""
    order, visited = [], set()

    def visit(node):
        if node not in visited:
            visited.add(node)
            order.append(node)
            for parent in node.parents:
                visit(parent)

    visit(output)
    return order[::-1]
''',
        },
        "fails": {"test_dfs_postorder"},
        "message": "post-order, not pre-order",
    },
    "dfs_without_visited_set": {
        # Forgets the visited set: a shared node is listed once per path (3**k times on a ladder).
        "replace": {
            "dfs_postorder": '''def dfs_postorder(output):
    """Every node output depends on, each after all of its parents."""
    order = []

    def visit(node):
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(output)
    return order
''',
        },
        "fails": {"test_dfs_postorder"},
        "message": "keep a set of visited nodes",
    },
    "breadth_first_without_child_counts": {
        # Releases a parent as soon as it is reached: x comes before its child s1 in x * sin(sin(x)).
        "replace": {
            "child_count_order": '''def child_count_order(output):
    """Every node output depends on, each before all of its parents."""
    order, seen, queue = [], {output}, [output]
    while queue:
        node = queue.pop(0)
        order.append(node)
        for parent in node.parents:
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return order
''',
        },
        "fails": {"test_child_count_order"},
        "message": "released too early",
    },
    "backward_assigns_instead_of_accumulating": {
        # parent.grad = ... keeps only the last contribution of a node with several children.
        "replace": {
            "backward": '''def backward(output, order):
    """Set node.grad = d output / d node for every node in order (output first)."""
    for node in order:
        node.grad = 0.0
    output.grad = 1.0
    for node in order:
        for parent, local in zip(node.parents, node.local_grads):
            parent.grad = node.grad * local
''',
        },
        "fails": {"test_backward"},
        "message": "accumulate with +=",
    },
}

# Every part again, correct, in other idioms: marks set on the test's nodes (one fresh token per
# call, compared with `is`) and deleted after, a stack of iterators, a Counter keyed by
# id(parent), an isinstance check and positions by id() and `is`, gradients collected in a dict
# keyed by the nodes. It must score full marks.
HONEST = {
    "dfs_postorder": '''def dfs_postorder(output):
    """Every node `output` depends on (itself included), each after all of its parents."""
    order, mark = [], object()

    def visit(node):
        if getattr(node, "_dfs_mark", None) is mark:
            return
        node._dfs_mark = mark
        for parent in node.parents:
            visit(parent)
        order.append(node)

    visit(output)
    for node in order:
        del node._dfs_mark
    return order
''',
    "topo_sort": '''def topo_sort(output):
    """Every node `output` depends on (itself included), each after all of its parents."""
    order, seen = [], {id(output)}
    stack = [(output, iter(output.parents))]
    while stack:
        node, parents = stack[-1]
        for parent in parents:
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append((parent, iter(parent.parents)))
                break
        else:
            stack.pop()
            order.append(node)
    return order
''',
    "child_count_order": '''from collections import Counter


def child_count_order(output):
    """Every node `output` depends on (itself included), each before all of its parents."""
    children, nodes, todo = Counter(), {id(output): output}, [output]
    while todo:
        for parent in todo.pop().parents:
            children[id(parent)] += 1
            if id(parent) not in nodes:
                nodes[id(parent)] = parent
                todo.append(parent)
    order, ready = [], [output]
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in node.parents:
            children[id(parent)] -= 1
            if children[id(parent)] == 0:
                ready.append(parent)
    return order
''',
    "is_topological": '''def is_topological(order, output):
    """True if `order` lists each ancestor of `output` once, nothing else, parents first."""
    if not all(isinstance(node, Node) for node in [output, *order]):
        return False
    position = {id(node): k for k, node in enumerate(order)}
    if len(position) != len(order) or len(order) == 0 or order[-1] is not output:
        return False
    needed, todo = {id(output)}, [output]
    while todo:
        for parent in todo.pop().parents:
            if id(parent) not in needed:
                needed.add(id(parent))
                todo.append(parent)
    if needed != set(position):
        return False
    return all(position[id(parent)] < k for k, node in enumerate(order) for parent in node.parents)
''',
    "backward": '''from collections import defaultdict


def backward(output, order):
    """Set node.grad = d output / d node for every node in `order` (output first)."""
    grads = defaultdict(float)
    grads[output] = 1.0
    for node in order:
        for parent, local in zip(node.parents, node.local_grads):
            grads[parent] += grads[node] * local
    for node in order:
        node.grad = grads[node]
''',
}
