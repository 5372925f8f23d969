"""Typical mistakes in ps01 (finite differences), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student.
"""

MISTAKES = {
    "forward_difference_instead_of_central": {
        "replace": {
            "central_difference": '''def central_difference(f, x, h):
    """Central-difference estimate (f(x + h) - f(x - h)) / (2 h) of f'(x)."""
    return (f(x + h) - f(x)) / h
''',
        },
        "fails": {"test_central_difference"},
        "message": "looks like a forward difference",
    },
    "gradient_modifies_x_in_place": {
        # Perturbs the caller's array and changes it back: right values, but x is written to.
        "replace": {
            "gradient_fd": '''def gradient_fd(f, x, h=1e-6):
    """Central-difference gradient of a scalar function f at the array x."""
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        x[index] += h
        f_plus = f(x)
        x[index] -= 2 * h
        f_minus = f(x)
        x[index] += h
        grad[index] = (f_plus - f_minus) / (2 * h)
    return grad
''',
        },
        "fails": {"test_gradient_fd_leaves_x_alone"},
        "message": "x was modified in place",
    },
    "gradient_has_the_wrong_shape": {
        # Works on the flattened array and forgets to give the result the shape of x.
        "replace": {
            "gradient_fd": '''def gradient_fd(f, x, h=1e-6):
    """Central-difference gradient of a scalar function f at the array x."""
    flat = x.ravel()
    grad = []
    for i in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[i] += h
        minus[i] -= h
        grad.append((f(plus.reshape(x.shape)) - f(minus.reshape(x.shape))) / (2 * h))
    return np.array(grad)
''',
        },
        "fails": {"test_gradient_fd"},
        "message": "wrong shape",
    },
    "best_step_returns_the_index": {
        "replace": {
            "best_step": '''def best_step(f, x, f_prime, hs, method):
    """The step h in hs whose estimate method(f, x, h) has the smallest |estimate - f_prime|."""
    errors = [abs(method(f, x, h) - f_prime) for h in hs]
    return int(np.argmin(errors))
''',
        },
        "fails": {"test_best_step"},
        "message": "not its index",
    },
    "order_from_the_inverted_ratio": {
        "replace": {
            "observed_order": '''def observed_order(f, x, f_prime, method, h):
    """Estimate the order p of method from its errors at the steps h and h / 10."""
    error_h = abs(method(f, x, h) - f_prime)
    error_h10 = abs(method(f, x, h / 10) - f_prime)
    return float(np.log10(error_h10 / error_h))
''',
        },
        "fails": {"test_observed_order"},
        "message": "not the other way round",
    },
}

# Every part again, correct, in other idioms: a stored value, a generator over signs, a flat copy
# reshaped at the end, min() with a key, a named tuple. It must score full marks.
HONEST = {
    "forward_difference": '''def forward_difference(f, x, h):
    """Forward-difference estimate (f(x + h) - f(x)) / h of f'(x)."""
    at_x = f(x)
    return (f(x + h) - at_x) / h
''',
    "central_difference": '''def central_difference(f, x, h):
    """Central-difference estimate (f(x + h) - f(x - h)) / (2 h) of f'(x)."""
    return sum(sign * f(x + sign * h) for sign in (1, -1)) / (2 * h)
''',
    "gradient_fd": '''def gradient_fd(f, x, h=1e-6):
    """Central-difference gradient of a scalar function f at the array x."""
    flat = np.array(x, dtype=float).ravel()
    partials = []
    for i in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[i] += h
        minus[i] -= h
        partials.append((f(plus.reshape(np.shape(x))) - f(minus.reshape(np.shape(x)))) / (2 * h))
    return np.array(partials).reshape(np.shape(x))
''',
    "best_step": '''def best_step(f, x, f_prime, hs, method):
    """The step h in hs whose estimate method(f, x, h) has the smallest |estimate - f_prime|."""
    return min(hs, key=lambda h: abs(method(f, x, h) - f_prime))
''',
    "observed_order": '''import math
from collections import namedtuple

Errors = namedtuple("Errors", "coarse fine")


def observed_order(f, x, f_prime, method, h):
    """Estimate the order p of method from its errors at the steps h and h / 10."""
    errors = Errors(*(abs(method(f, x, step) - f_prime) for step in (h, h / 10)))
    return math.log10(errors.coarse / errors.fine)
''',
}
