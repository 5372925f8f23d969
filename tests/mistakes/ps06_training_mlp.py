"""Typical mistakes in ps06 (training an MLP on Iris), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Part 5
retrains the network with the student's ``train_step``, so a broken step fails there too.
"""

MISTAKES = {
    "test_statistics_leak": {
        # Standardises each array with its own statistics: the training part is still right,
        # so training (part 5) is unaffected, but the test set leaks into the preprocessing.
        "replace": {
            "standardise": '''def standardise(X_train, X_test):
    """Both arrays standardised column by column with the mean and (ddof=0) standard
    deviation of X_train. Returns (X_train_std, X_test_std) as new arrays."""
    train_std = (X_train - X_train.mean(axis=0)) / X_train.std(axis=0)
    test_std = (X_test - X_test.mean(axis=0)) / X_test.std(axis=0)
    return train_std, test_std
''',
        },
        "fails": {"test_standardise"},
        "message": "test-statistics leak",
    },
    "largest_value_instead_of_argmax": {
        # Compares the largest logit itself, not its index, with the label.
        "replace": {
            "accuracy": '''def accuracy(logits, labels):
    """Fraction of rows of logits (Tensor or array, shape (N, C)) whose argmax equals the label."""
    scores = logits.data if isinstance(logits, Tensor) else np.asarray(logits)
    return float(np.mean(scores.max(axis=1) == np.asarray(labels)))
''',
        },
        "fails": {"test_accuracy"},
        "message": "argmax of each row",
    },
    "confusion_matrix_transposed": {
        "replace": {
            "confusion_matrix": '''def confusion_matrix(logits, labels, n_classes):
    """Counts M[true, predicted] as an int array of shape (n_classes, n_classes)."""
    scores = logits.data if isinstance(logits, Tensor) else np.asarray(logits)
    counts = np.zeros((n_classes, n_classes), dtype=int)
    np.add.at(counts, (scores.argmax(axis=1), np.asarray(labels)), 1)
    return counts
''',
        },
        "fails": {"test_confusion_matrix"},
        "message": "transposed",
    },
    "forgot_zero_grad": {
        # Gradients accumulate over the steps; training then stalls far below 90 %.
        "replace": {
            "train_step": '''def train_step(model, optimiser, X, y):
    """One SGD step on the minibatch (X, y); returns its loss (before the update) as a float."""
    loss = cross_entropy(model(X), y)
    loss.backward()
    optimiser.step()
    return loss.item()
''',
        },
        "fails": {"test_train_step"},  # each part graded on its own (# grader: reference)
        "message": "optimiser.zero_grad()",
    },
    "float_labels": {
        # Converts the class indices to floats; cross_entropy refuses them.
        "replace": {
            "train_step": '''def train_step(model, optimiser, X, y):
    """One SGD step on the minibatch (X, y); returns its loss (before the update) as a float."""
    optimiser.zero_grad()
    loss = cross_entropy(model(X), y.astype(float))
    loss.backward()
    optimiser.step()
    return loss.item()
''',
        },
        "fails": {"test_train_step"},  # each part graded on its own (# grader: reference)
        "message": "integer class indices",
    },
}
