"""Typical mistakes in ps06 (custom rules and Jacobians), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. The test of
part 2 builds the softplus node with a reference forward pass, and parts 4 and 5 use only the
engine's own ops, so every mistake costs exactly its own part.
"""

MISTAKES = {
    "softplus_overflows": {
        "replace": {
            "softplus": '''def softplus(x):
    """log(1 + exp(x))."""
    return record("softplus", np.log(1 + np.exp(x.data)), (x,))
''',
        },
        "fails": {"test_softplus"},
        "message": "overflows for x > 709",
    },
    "softplus_from_three_ops": {
        # Correct values for moderate x, but three nodes (exp, add, log) instead of one op.
        "replace": {
            "softplus": '''def softplus(x):
    """log(1 + exp(x))."""
    return (x.exp() + 1.0).log()
''',
        },
        "fails": {"test_softplus"},
        "message": "make it one node",
    },
    "vjp_uses_out": {
        "replace": {
            "softplus_vjp": '''def softplus_vjp(g, out, x):
    """The gradient for x."""
    return g * out
''',
        },
        "fails": {"test_softplus_vjp"},
        "message": "the rule of exp",
    },
    "vjp_in_numpy": {
        # Right first derivative; the rule is a constant to the engine, so the second derivative is 0.
        "replace": {
            "softplus_vjp": '''def softplus_vjp(g, out, x):
    """The gradient for x."""
    return g * (1.0 / (1.0 + np.exp(-x.data)))
''',
        },
        "fails": {"test_softplus_vjp"},
        "message": "write the rule with Tensor operations",
    },
    "hypot_without_unbroadcast": {
        "replace": {
            "hypot_vjps": '''def hypot_vjp_a(g, out, a, b):
    """The gradient for a."""
    return g * a / out


def hypot_vjp_b(g, out, a, b):
    """The gradient for b."""
    return g * b / out
''',
        },
        "fails": {"test_hypot_vjps"},
        "message": "sum the broadcast copies with unbroadcast",
    },
    "one_vjp_with_ones": {
        "replace": {
            "jacobian_by_vjps": '''def jacobian_by_vjps(f, x):
    """The Jacobian."""
    y, vjp_fn = vjp(f, x)
    return vjp_fn(np.ones(y.shape[0])).data
''',
        },
        "fails": {"test_jacobian_by_vjps"},
        "message": "row i needs its own VJP",
    },
    "jvps_stacked_as_rows": {
        "replace": {
            "jacobian_by_jvps": '''def jacobian_by_jvps(f, x):
    """The Jacobian."""
    n = len(x)
    return np.stack([jvp(f, x, np.eye(n)[j])[1].data for j in range(n)])
''',
        },
        "fails": {"test_jacobian_by_jvps"},
        "message": "the transpose: the Jacobian of f: R^n -> R^m has m rows",
    },
}

# Every part again, correct, in other idioms: softplus as max(x, 0) + log1p(exp(-|x|)), its
# derivative as exp(x - softplus(x)) in Tensor operations, the factor a / out first, rows and
# columns gathered in lists. It must score full marks.
HONEST = {
    "softplus": '''def softplus(x):
    """log(1 + exp(x)) elementwise, as one node "softplus" of the graph, without overflow."""
    values = np.maximum(x.data, 0.0) + np.log1p(np.exp(-np.abs(x.data)))
    return record("softplus", values, (x,))
''',
    "softplus_vjp": '''def softplus_vjp(g, out, x):
    """The gradient for x of out = softplus(x): g * sigmoid(x), with sigmoid(x) = exp(x - softplus(x))."""
    return (x - softplus(x)).exp() * g
''',
    "hypot_vjps": '''def hypot_vjp_a(g, out, a, b):
    """The gradient for a of out = hypot(a, b), shape a.shape."""
    return unbroadcast((a / out) * g, a.shape)


def hypot_vjp_b(g, out, a, b):
    """The gradient for b of out = hypot(a, b), shape b.shape."""
    return unbroadcast((b / out) * g, b.shape)
''',
    "jacobian_by_vjps": '''def jacobian_by_vjps(f, x):
    """The Jacobian of f at x, shape (m, n), one VJP per row."""
    y, pull_back = vjp(f, x)
    rows = []
    for i in range(y.shape[0]):
        basis = np.zeros(y.shape[0])
        basis[i] = 1.0
        rows.append(np.asarray(pull_back(basis).data, dtype=float))
    return np.array(rows)
''',
    "jacobian_by_jvps": '''def jacobian_by_jvps(f, x):
    """The Jacobian of f at x, shape (m, n), one JVP per column."""
    columns = []
    for j in range(len(x)):
        basis = np.zeros(len(x))
        basis[j] = 1.0
        _, tangent = jvp(f, (x,), (basis,))
        columns.append(np.asarray(tangent.data, dtype=float))
    return np.column_stack(columns)
''',
}
