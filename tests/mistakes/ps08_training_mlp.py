"""Typical mistakes in ps08 (training an MLP on Iris), for ``tests/assignments/test_assignments.py``.

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

# Every part again, correct, in other idioms: a named tuple of statistics, a loop over rows with
# `isinstance`, nested lists turned into an array, zero_grad after the forward pass, a helper
# class that keeps the training state, trained on X_train_std as part 1's test cell made it (a
# name an earlier test cell defines, as in Jupyter top to bottom). It must score full marks.
HONEST = {
    "standardise": '''from collections import namedtuple

Statistics = namedtuple("Statistics", "mean std")


def standardise(X_train, X_test):
    """Both arrays standardised column by column with X_train's mean and (ddof=0) std."""
    stats = Statistics(np.mean(X_train, axis=0), np.std(X_train, axis=0))
    return tuple(np.divide(np.subtract(X, stats.mean), stats.std) for X in (X_train, X_test))
''',
    "accuracy": '''def accuracy(logits, labels):
    """Fraction of rows of logits whose argmax equals the label."""
    rows = logits.data if isinstance(logits, Tensor) else logits
    hits = sum(1 for row, label in zip(rows, labels) if int(np.argmax(row)) == int(label))
    return hits / len(labels)
''',
    "confusion_matrix": '''def confusion_matrix(logits, labels, n_classes):
    """Counts M[true, predicted] as an int array of shape (n_classes, n_classes)."""
    rows = logits.data if isinstance(logits, Tensor) else logits
    counts = [[0] * n_classes for _ in range(n_classes)]
    for row, label in zip(rows, labels):
        counts[int(label)][int(np.argmax(row))] += 1
    return np.array(counts, dtype=int)
''',
    "train_step": '''def train_step(model, optimiser, X, y):
    """One SGD step on the minibatch (X, y); returns its loss (before the update) as a float."""
    loss = cross_entropy(model(X), y)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
    return float(loss.data)
''',
    "train": '''class Trainer:
    """An MLP, its optimiser and the random order of the minibatches, from one seed."""

    def __init__(self, seed, batch=16, lr=0.1):
        self.model = MLP([4, 16, 3], rng=seed)
        self.optimiser = SGD(self.model.parameters(), lr=lr)
        self.rng = np.random.default_rng(seed)
        self.batch = batch

    def epoch(self, X, y):
        order = self.rng.permutation(len(y))
        for start in range(0, len(order), self.batch):
            rows = order[start:start + self.batch]
            train_step(self.model, self.optimiser, X[rows], y[rows])


def train(seed):
    """Train an MLP on the standardised training flowers; return the trained model."""
    trainer = Trainer(seed)  # X_train_std: as part 1's test cell standardised them
    for _ in range(100):
        trainer.epoch(X_train_std, y_train)
    return trainer.model
''',
}
