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
