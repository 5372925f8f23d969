"""Typical mistakes in ps10 (one model in course_lib and PyTorch), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert (or the engine's error) must tell the
student. Every test compares with reference results computed by ``course_lib.functional``, so a
mistake costs exactly its own part.
"""

MISTAKES = {
    "course_without_requires_grad": {
        # course_lib refuses backward() on a graph without inputs that require grad, and says why.
        "replace": {
            "course_loss_and_grads": '''def course_loss_and_grads(params, X, y):
    """Loss and gradients with course_lib."""
    tensors = {name: ct.Tensor(value) for name, value in params.items()}
    loss = mlp_loss(tensors, ct.Tensor(X), ct.Tensor(y))
    loss.backward()
    return loss.item(), {name: t.grad for name, t in tensors.items()}
''',
        },
        "fails": {"test_course_loss_and_grads"},
        "message": "Create the inputs with Tensor(data, requires_grad=True)",
    },
    "torch_in_float32": {
        "replace": {
            "torch_loss_and_grads": '''def torch_loss_and_grads(params, X, y):
    """Loss and gradients with PyTorch."""
    tensors = {name: torch.tensor(value, dtype=torch.float32, requires_grad=True) for name, value in params.items()}
    loss = mlp_loss(tensors, torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32))
    loss.backward()
    return loss.item(), {name: t.grad.numpy() for name, t in tensors.items()}
''',
        },
        "fails": {"test_torch_loss_and_grads"},
        "message": "you computed in float32",
    },
    "difference_without_abs": {
        "replace": {
            "max_relative_difference": '''def max_relative_difference(grads_a, grads_b):
    """The largest relative difference."""
    worst = 0.0
    for name, b in grads_b.items():
        a = np.asarray(grads_a[name], dtype=float)
        scale = np.max(np.abs(b)) if np.any(b) else 1.0
        worst = max(worst, float(np.max(a - b) / scale))
    return worst
''',
        },
        "fails": {"test_max_relative_difference"},
        "message": "take the absolute value |a - b|",
    },
    "difference_not_relative": {
        "replace": {
            "max_relative_difference": '''def max_relative_difference(grads_a, grads_b):
    """The largest relative difference."""
    return max(float(np.max(np.abs(np.asarray(grads_a[name]) - b))) for name, b in grads_b.items())
''',
        },
        "fails": {"test_max_relative_difference"},
        "message": "divide each parameter's max|a - b| by its max|b|",
    },
    "gradients_pile_up": {
        # Never resets .grad: every backward() adds to the gradients of all earlier steps.
        "replace": {
            "torch_training": '''def torch_training(params, X, y, lr, steps):
    """Gradient descent with PyTorch."""
    tensors = [torch.tensor(value, dtype=torch.float64, requires_grad=True) for value in params.values()]
    named = dict(zip(params, tensors))
    X_t, y_t = torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    losses = []
    for step in range(steps + 1):
        loss = mlp_loss(named, X_t, y_t)
        losses.append(loss.item())
        if step == steps:
            break
        loss.backward()
        with torch.no_grad():
            for p in tensors:
                p -= lr * p.grad
    return losses
''',
        },
        "fails": {"test_torch_training"},
        "message": "backward() adds into .grad",
    },
    "training_in_float32": {
        "replace": {
            "torch_training": '''def torch_training(params, X, y, lr, steps):
    """Gradient descent with PyTorch."""
    tensors = [torch.tensor(value, dtype=torch.float32, requires_grad=True) for value in params.values()]
    named = dict(zip(params, tensors))
    X_t, y_t = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    losses = []
    for step in range(steps + 1):
        loss = mlp_loss(named, X_t, y_t)
        losses.append(loss.item())
        if step == steps:
            break
        for p in tensors:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in tensors:
                p -= lr * p.grad
    return losses
''',
        },
        "fails": {"test_torch_training"},
        "message": "train in float64",
    },
}

# Every part again, correct, in other idioms: an OrderedDict and a dict subclass of gradients,
# torch.autograd.grad instead of backward(), one generator for the worst difference, training by
# torch.optim.SGD (which imports sympy: ps10's rules allow it). It must score full marks.
HONEST = {
    "course_loss_and_grads": '''from collections import OrderedDict


def course_loss_and_grads(params, X, y):
    """mlp_loss and its gradient for every parameter, with course_lib: (float, {name: NumPy array})."""
    tensors = OrderedDict(
        (name, ct.Tensor(np.asarray(value, dtype=float), requires_grad=True)) for name, value in params.items()
    )
    loss = mlp_loss(tensors, ct.Tensor(X), ct.Tensor(y))
    loss.backward()
    return float(loss.data), OrderedDict((name, np.array(t.grad, dtype=float)) for name, t in tensors.items())
''',
    "torch_loss_and_grads": '''class Gradients(dict):
    """The gradients by parameter name."""


def torch_loss_and_grads(params, X, y):
    """mlp_loss and its gradient for every parameter, with PyTorch in float64: (float, {name: NumPy array})."""
    names = list(params)
    leaves = [torch.from_numpy(np.array(params[name], dtype=np.float64)).requires_grad_() for name in names]
    loss = mlp_loss(dict(zip(names, leaves)), torch.from_numpy(np.asarray(X, dtype=np.float64)),
                    torch.from_numpy(np.asarray(y, dtype=np.float64)))
    grads = torch.autograd.grad(loss, leaves)
    return float(loss), Gradients((name, g.detach().numpy()) for name, g in zip(names, grads))
''',
    "max_relative_difference": '''def max_relative_difference(grads_a, grads_b):
    """max over names of max|a - b| / max|b| (max|a - b| where b is all zeros), as a float."""

    def relative(a, b):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        scale = np.abs(b).max()
        return np.abs(a - b).max() / (scale if scale > 0 else 1.0)

    return float(max((relative(grads_a[name], b) for name, b in grads_b.items()), default=0.0))
''',
    "torch_training": '''def torch_training(params, X, y, lr, steps):
    """The losses [L_0, L_1, ..., L_steps] of `steps` gradient-descent steps with PyTorch (float64)."""
    named = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in params.items()}
    X_t, y_t = torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    optimiser = torch.optim.SGD(named.values(), lr=lr)
    losses = []
    for _ in range(steps):
        optimiser.zero_grad()
        loss = mlp_loss(named, X_t, y_t)
        losses.append(loss.item())
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        losses.append(mlp_loss(named, X_t, y_t).item())
    return losses
''',
}
