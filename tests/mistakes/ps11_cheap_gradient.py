"""Typical mistakes in ps11 (the cheap-gradient ratio), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Costs are
counted operations, so every verdict is exact; parts 4 and 5 are tested on reference gradient
methods, so every mistake costs exactly its own part.
"""

MISTAKES = {
    "forward_differences": {
        # (f(x + h e_i) - f(x)) / h: n + 1 evaluations and an error of order h.
        "replace": {
            "gradient_by_differences": '''def gradient_by_differences(f, x, h=1e-5):
    """Differences."""
    base = f([Num(v) for v in x])
    gradient = []
    for i in range(len(x)):
        up = [Num(v + h) if j == i else Num(v) for j, v in enumerate(x)]
        gradient.append(((f(up) - base) / h).value)
    return gradient
''',
        },
        "fails": {"test_gradient_by_differences"},
        "message": "that is forward differences",
    },
    "one_pass_all_tangents": {
        # Seeds every input with tangent 1 in a single pass: the directional derivative along (1, ..., 1).
        "replace": {
            "gradient_by_forward_mode": '''def gradient_by_forward_mode(f, x):
    """Forward mode."""
    out = f([Dual(Num(v), Num(1.0)) for v in x])
    return [out.tangent.value] * len(x)
''',
        },
        "fails": {"test_gradient_by_forward_mode"},
        "message": "seed one input at a time",
    },
    "reverse_once_per_input": {
        # Right numbers, but n recordings and n sweeps: the cost grows with n like forward mode's.
        "replace": {
            "gradient_by_reverse_mode": '''def gradient_by_reverse_mode(f, x):
    """Reverse mode."""
    gradient = []
    for i in range(len(x)):
        leaves = [Var(Num(v)) for v in x]
        backward(f(leaves))
        gradient.append(leaves[i].grad.value)
    return gradient
''',
        },
        "fails": {"test_gradient_by_reverse_mode"},
        "message": "do not repeat the passes once per input",
    },
    "ratio_inverted": {
        "replace": {
            "cost_ratio": '''def cost_ratio(method, f, x):
    """Cost ratio."""
    _, method_ops = count_ops(method, f, x)
    _, f_ops = count_ops(f, [Num(v) for v in x])
    return f_ops / method_ops if method_ops else 0.0
''',
        },
        "fails": {"test_cost_ratio"},
        "message": "the ratio is the method's cost divided by f's cost",
    },
    "bound_forgets_the_operation": {
        "replace": {
            "reverse_ratio_bound": '''def reverse_ratio_bound(costs):
    """The bound."""
    return max(local + 2 * parents for parents, local in costs.values())
''',
        },
        "fails": {"test_reverse_ratio_bound"},
        "message": "count the operation itself too",
    },
}

# Every part again, correct, in other idioms: the two points from one helper and the difference
# taken of plain floats, the seed as float(i == j), the leaves kept in a dict by position, the
# counts from a list comprehension, a loop keeping the largest cost. It must score full marks.
HONEST = {
    "gradient_by_differences": '''def shifted(x, i, step):
    """x as Nums, with x[i] moved by step."""
    return [Num(v + step) if j == i else Num(v) for j, v in enumerate(x)]


def gradient_by_differences(f, x, h=1e-5):
    """Central differences of f at x (a list of floats), f evaluated on Nums: a list of n floats."""
    return [(f(shifted(x, i, h)) - f(shifted(x, i, -h))).value / (2 * h) for i in range(len(x))]
''',
    "gradient_by_forward_mode": '''def gradient_by_forward_mode(f, x):
    """The gradient of f at x by n forward-mode passes with Duals: a list of n floats."""
    partials = []
    for i in range(len(x)):
        seeded = [Dual(Num(v), Num(float(i == j))) for j, v in enumerate(x)]
        partials.append(f(seeded).tangent.value)
    return partials
''',
    "gradient_by_reverse_mode": '''def gradient_by_reverse_mode(f, x):
    """The gradient of f at x by one recording pass and one backward sweep: a list of n floats."""
    leaves = {k: Var(Num(v)) for k, v in enumerate(x)}
    out = f([leaves[k] for k in range(len(x))])
    backward(out)
    return [leaves[k].grad.value for k in sorted(leaves)]
''',
    "cost_ratio": '''def cost_ratio(method, f, x):
    """Operations of method(f, x) divided by the operations of f evaluated on Nums at x, as a float."""
    method_ops, f_ops = (count_ops(*call)[1] for call in ((method, f, x), (f, [Num(v) for v in x])))
    return float(method_ops) / f_ops
''',
    "reverse_ratio_bound": '''def reverse_ratio_bound(costs):
    """The largest reverse-mode cost per operation, max over ops of 1 + l + 2 p."""
    largest = None
    for op in costs:
        parents, local = costs[op]
        cost = 1 + local + 2 * parents
        if largest is None or cost > largest:
            largest = cost
    return largest
''',
}
