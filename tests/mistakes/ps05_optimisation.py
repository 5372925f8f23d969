"""Typical mistakes in ps05 (optimisation), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Parts 2 to 4
receive the gradient as a function and the tests of part 3 and 5 use their own reference descent,
so every mistake costs exactly its own part.
"""

MISTAKES = {
    "no_backward": {
        # Reads the leaves' .grad without running the backward pass: all zeros.
        "replace": {
            "value_and_gradient": '''def value_and_gradient(f, point):
    """f(*point) and its gradient."""
    leaves = [Value(float(x)) for x in point]
    out = f(*leaves)
    return out.data, np.array([leaf.grad for leaf in leaves])
''',
        },
        "fails": {"test_value_and_gradient"},
        "message": "did you call backward()",
    },
    "ascent_instead_of_descent": {
        "replace": {
            "gradient_descent": '''def gradient_descent(grad_f, start, lr, steps):
    """The points visited."""
    x = np.array(start, dtype=float)
    path = [x.copy()]
    for _ in range(steps):
        x = x + lr * grad_f(x)
        path.append(x.copy())
    return np.array(path)
''',
        },
        "fails": {"test_gradient_descent"},
        "message": "descent subtracts",
    },
    "path_without_start": {
        # Returns the points after each step only: one row short.
        "replace": {
            "gradient_descent": '''def gradient_descent(grad_f, start, lr, steps):
    """The points visited."""
    x = np.array(start, dtype=float)
    path = []
    for _ in range(steps):
        x = x - lr * grad_f(x)
        path.append(x.copy())
    return np.array(path)
''',
        },
        "fails": {"test_gradient_descent"},
        "message": "include the start as row 0",
    },
    "velocity_forgets": {
        # v = grad_f(x): beta is never used, so this is plain gradient descent.
        "replace": {
            "momentum_descent": '''def momentum_descent(grad_f, start, lr, beta, steps):
    """Momentum descent."""
    x = np.array(start, dtype=float)
    path = [x.copy()]
    for _ in range(steps):
        v = grad_f(x)
        x = x - lr * v
        path.append(x.copy())
    return np.array(path)
''',
        },
        "fails": {"test_momentum_descent"},
        "message": "the velocity must remember the previous steps",
    },
    "field_points_uphill": {
        "replace": {
            "descent_field": '''def descent_field(grad_f, a_values, b_values):
    """U, V."""
    U = np.zeros((len(b_values), len(a_values)))
    V = np.zeros_like(U)
    for i, b in enumerate(b_values):
        for j, a in enumerate(a_values):
            U[i, j], V[i, j] = grad_f(np.array([a, b], dtype=float))
    return U, V
''',
        },
        "fails": {"test_descent_field"},
        "message": "your arrows point uphill",
    },
    "field_transposed": {
        # Rows follow a: the layout of np.meshgrid(..., indexing="ij"), not what plt.quiver expects.
        "replace": {
            "descent_field": '''def descent_field(grad_f, a_values, b_values):
    """U, V."""
    U = np.zeros((len(a_values), len(b_values)))
    V = np.zeros_like(U)
    for i, a in enumerate(a_values):
        for j, b in enumerate(b_values):
            U[i, j], V[i, j] = -grad_f(np.array([a, b], dtype=float))
    return U, V
''',
        },
        "fails": {"test_descent_field"},
        "message": "rows follow b and columns follow a",
    },
    "one_over_lambda_max": {
        "replace": {
            "largest_stable_lr": '''def largest_stable_lr(hessian):
    """The largest stable learning rate."""
    return float(1.0 / np.linalg.eigvalsh(np.asarray(hessian, dtype=float)).max())
''',
        },
        "fails": {"test_largest_stable_lr"},
        "message": "up to 2 / lambda_max",
    },
}

# Every part again, correct, in other idioms: a named tuple, a preallocated path filled row by
# row, a generator of points, a meshgrid of points, the last of eigh's eigenvalues. It must
# score full marks.
HONEST = {
    "value_and_gradient": '''from collections import namedtuple

ValueAndGradient = namedtuple("ValueAndGradient", "value gradient")


def value_and_gradient(f, point):
    """f(*point) and its gradient, by one backward pass of the Value engine."""
    leaves = list(map(Value, map(float, point)))
    out = f(*leaves)
    out.backward()
    gradient = np.fromiter((leaf.grad for leaf in leaves), dtype=float, count=len(leaves))
    return ValueAndGradient(float(out.data), gradient)
''',
    "gradient_descent": '''def gradient_descent(grad_f, start, lr, steps):
    """The points x_0 = start, x_1, ..., x_steps of plain gradient descent, shape (steps + 1, d)."""
    points = np.empty((steps + 1, len(start)))
    points[0] = start
    for k in range(steps):
        points[k + 1] = points[k] - lr * np.asarray(grad_f(points[k].copy()), dtype=float)
    return points
''',
    "momentum_descent": '''def momentum_points(grad_f, start, lr, beta, steps):
    """Yield x_0 = start, x_1, ..., x_steps of gradient descent with momentum."""
    x = np.array(start, dtype=float)
    velocity = 0.0
    yield x
    for _ in range(steps):
        velocity = beta * velocity + grad_f(x)
        x = x - lr * velocity
        yield x


def momentum_descent(grad_f, start, lr, beta, steps):
    """The points x_0 = start, ..., x_steps of gradient descent with momentum beta, shape (steps + 1, d)."""
    return np.stack(list(momentum_points(grad_f, start, lr, beta, steps)))
''',
    "descent_field": '''def descent_field(grad_f, a_values, b_values):
    """U, V of shape (len(b_values), len(a_values)): -grad f at (a_values[j], b_values[i])."""
    A, B = np.meshgrid(np.asarray(a_values, dtype=float), np.asarray(b_values, dtype=float))
    grads = np.array([[grad_f(np.array([a, b])) for a, b in zip(row_a, row_b)] for row_a, row_b in zip(A, B)])
    grads = grads.reshape(A.shape + (2,))
    return -grads[..., 0], -grads[..., 1]
''',
    "largest_stable_lr": '''def largest_stable_lr(hessian):
    """The learning rate above which gradient descent on x^T H x / 2 diverges, as a float."""
    eigenvalues, _ = np.linalg.eigh(np.asarray(hessian, dtype=float))
    return 2.0 / float(eigenvalues[-1])
''',
}
