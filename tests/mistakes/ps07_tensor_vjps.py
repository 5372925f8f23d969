"""Typical mistakes in ps07 (tensor VJPs), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Parts 3
and 5 use the functions of earlier parts; where one of those failed, its reference stands in
(``# grader: reference``), so every mistake costs exactly its own part.
"""

MISTAKES = {
    "matmul_transpose_missing": {
        # g @ B instead of g @ B.T: the factors (m, n) and (k, n) do not fit.
        "replace": {
            "matmul_vjp": '''def matmul_vjp(g, A, B):
    """The VJP of C = A @ B for 2-D arrays."""
    return g @ B, A.T @ g
''',
        },
        "fails": {"test_matmul_vjp"},  # each part graded on its own (# grader: reference)
        "message": "did you compute g @ B instead of g @ B.T?",
    },
    "unbroadcast_forgets_size1_axes": {
        # Sums the added leading axes only: right for a bias of shape (C,), wrong for (4, 1).
        "replace": {
            "unbroadcast": '''def unbroadcast(grad, shape):
    """Sum grad down to `shape`."""
    lead = grad.ndim - len(shape)
    return grad.sum(axis=tuple(range(lead)))
''',
        },
        "fails": {"test_unbroadcast"},  # each part graded on its own (# grader: reference)
        "message": "with keepdims=True",
    },
    "mul_vjp_without_unbroadcast": {
        "replace": {
            "mul_vjp": '''def mul_vjp(g, a, b):
    """The VJP of c = a * b."""
    return g * b, g * a
''',
        },
        "fails": {"test_mul_vjp"},
        "message": "pass it through unbroadcast",
    },
    "softmax_without_max_shift": {
        # exp(1001) overflows to inf: the loss and gradient become nan for large logits.
        "replace": {
            "softmax_cross_entropy": '''def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy of integer labels under softmax(logits), and its gradient."""
    N = logits.shape[0]
    rows = np.arange(N)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    loss = -np.log(probs[rows, labels]).mean()
    dlogits = probs.copy()
    dlogits[rows, labels] -= 1.0
    return float(loss), dlogits / N
''',
        },
        "fails": {"test_softmax_cross_entropy"},
        "message": "Subtract the row maximum",
    },
    "sum_instead_of_mean": {
        # Forgets to divide by the batch size N, in the loss and in the gradient.
        "replace": {
            "softmax_cross_entropy": '''def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy of integer labels under softmax(logits), and its gradient."""
    rows = np.arange(logits.shape[0])
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_probs[rows, labels].sum()
    dlogits = np.exp(log_probs)
    dlogits[rows, labels] -= 1.0
    return float(loss), dlogits
''',
        },
        "fails": {"test_softmax_cross_entropy"},  # each part graded on its own (# grader: reference)
        "message": "divide by the batch size N",
    },
}

# Every part again, correct, in other idioms: einsum, a named tuple of gradients, a loop that
# sums axis by axis, log-sum-exp with one-hot rows from np.eye, the bias gradient as column sums.
# It must score full marks.
HONEST = {
    "matmul_vjp": '''from collections import namedtuple

Grads = namedtuple("Grads", "gA gB")


def matmul_vjp(g, A, B):
    """The VJP of C = A @ B for 2-D arrays: (dL/dA, dL/dB)."""
    return Grads(np.einsum("mn,kn->mk", g, B), np.einsum("mk,mn->kn", A, g))
''',
    "unbroadcast": '''def unbroadcast(grad, shape):
    """Sum grad down to `shape`, the VJP of broadcasting an operand of that shape."""
    grad = np.asarray(grad)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad
''',
    "mul_vjp": '''def mul_vjp(g, a, b):
    """The VJP of c = a * b (elementwise, with NumPy broadcasting): (dL/da, dL/db)."""
    ga = unbroadcast(np.multiply(g, b), np.shape(a))
    gb = unbroadcast(np.multiply(g, a), np.shape(b))
    return ga, gb
''',
    "softmax_cross_entropy": '''def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy of integer labels under softmax(logits), and its gradient."""
    n, classes = logits.shape
    top = np.max(logits, axis=1, keepdims=True)
    log_total = top + np.log(np.sum(np.exp(logits - top), axis=1, keepdims=True))
    onehot = np.eye(classes)[np.asarray(labels)]
    loss = np.mean(log_total[:, 0] - np.sum(onehot * logits, axis=1))
    return float(loss), (np.exp(logits - log_total) - onehot) / n
''',
    "linear_classifier": '''def linear_classifier(X, W, b, labels):
    """Loss and gradients of softmax_cross_entropy(X @ W + b, labels): (loss, gW, gb)."""
    loss, g = softmax_cross_entropy(X @ W + b, labels)
    gA, gW = matmul_vjp(g, X, W)
    return loss, gW, g.sum(axis=0)
''',
}
