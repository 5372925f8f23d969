"""Typical mistakes in ps13 (the capstone: your engine, end to end), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. The later
parts build on the earlier ones (the training runs on the Tensor operations, the shot on the
Value engine, both on the topological order), and their hidden tests run the course's answer in
place of an earlier part that failed (``# grader: reference``), so each mistake costs its own
part only. The last two borrow course_lib's engine, which the assignment's rules switch off in
the student's process: the training and the shot then fail, whatever they computed at home.
"""

MISTAKES = {
    "add_without_unbroadcast": {
        # The incoming gradient has the output's shape; a broadcast operand needs its own shape.
        "replace": {
            "tensor_ops": '''def add(self, other):
    """self + other, broadcasting like NumPy."""
    other = as_tensor(other)
    out = Tensor(self.data + other.data, (self, other), "+")

    def _backward(grad):
        self.grad += grad
        other.grad += grad

    out._backward = _backward
    return out


def mul(self, other):
    """self * other, elementwise, broadcasting like NumPy."""
    other = as_tensor(other)
    out = Tensor(self.data * other.data, (self, other), "*")

    def _backward(grad):
        self.grad += grad * other.data
        other.grad += grad * self.data

    out._backward = _backward
    return out


def relu(self):
    """max(self, 0), elementwise."""
    out = Tensor(np.maximum(self.data, 0.0), (self,), "relu")

    def _backward(grad):
        self.grad += grad * (self.data > 0)

    out._backward = _backward
    return out


Tensor.__add__ = add
Tensor.__mul__ = mul
Tensor.relu = relu
''',
        },
        "fails": {"test_tensor_ops"},
        "message": "unbroadcast(share, operand.shape)",
    },
    "recursive_topological_order": {
        # Chapter 4's recursive depth-first search: right on small graphs, RecursionError on deep ones.
        "replace": {
            "topological_order": '''def topological_order(root):
    """Every node root depends on (root included), each once and after all of its parents."""
    order, visited = [], set()

    def visit(node):
        if node not in visited:
            visited.add(node)
            for parent in node._parents:
                visit(parent)
            order.append(node)

    visit(root)
    return order
''',
        },
        "fails": {"test_topological_order"},
        "message": "use an explicit stack",
    },
    "assigns_instead_of_accumulating": {
        # `=` keeps only the last share: x * x gets one share instead of two, and a gradient
        # already collected elsewhere is lost.
        "replace": {
            "tensor_ops": '''def add(self, other):
    """self + other, broadcasting like NumPy."""
    other = as_tensor(other)
    out = Tensor(self.data + other.data, (self, other), "+")

    def _backward(grad):
        self.grad += unbroadcast(grad, self.shape)
        other.grad += unbroadcast(grad, other.shape)

    out._backward = _backward
    return out


def mul(self, other):
    """self * other, elementwise, broadcasting like NumPy."""
    other = as_tensor(other)
    out = Tensor(self.data * other.data, (self, other), "*")

    def _backward(grad):
        self.grad = unbroadcast(grad * other.data, self.shape)
        other.grad = unbroadcast(grad * self.data, other.shape)

    out._backward = _backward
    return out


def relu(self):
    """max(self, 0), elementwise."""
    out = Tensor(np.maximum(self.data, 0.0), (self,), "relu")

    def _backward(grad):
        self.grad += grad * (self.data > 0)

    out._backward = _backward
    return out


Tensor.__add__ = add
Tensor.__mul__ = mul
Tensor.relu = relu
''',
        },
        "fails": {"test_tensor_ops"},
        "message": "add both shares with += (not =)",
    },
    "forgot_zero_grad": {
        # Gradients pile up over the steps: the first step is right, the next ones are not.
        "replace": {
            "train_step": '''def train_step(model, X, y, lr):
    """One SGD step on the minibatch (X, y); returns its loss (before the update) as a float."""
    loss = cross_entropy(model(X), y)
    loss.backward()
    for p in model.parameters():
        p.data = p.data - lr * p.grad
    return float(loss.data)
''',
        },
        "fails": {"test_train_step"},
        "message": "set every parameter's grad to zeros",
    },
    "no_checkpoint": {
        # Stores the states as checkpoints but never recomputes: one backward pass through the
        # whole recorded flight, so its whole graph is alive at once.
        "replace": {
            "checkpointed_gradient": '''def checkpointed_gradient(v, theta, k=DRAG, dt=DT, every=10):
    """d height / d (v, theta, k) with checkpoints every `every` steps: (height, gradient, checkpoints)."""
    leaves = Value(v), Value(theta), Value(k)
    state, steps, checkpoints = launch(leaves[0], leaves[1]), 0, []
    while not reaches_hoop(state, k, dt):
        if steps % every == 0:
            checkpoints.append(tuple(number(s) for s in state))
        state = heun_step(state, leaves[2], dt)
        steps += 1
    height = final_step(state, leaves[2])
    height.backward()
    return height.data, [leaf.grad for leaf in leaves], checkpoints
''',
        },
        "fails": {"test_checkpointed_gradient"},
        "message": "recompute one segment at a time",
    },
    "course_lib_in_the_training_loop": {
        # Chapter 10's loop verbatim, on course_lib's engine: right at home, switched off when graded.
        "replace": {
            "train_iris": '''def train_iris(epochs=100, lr=0.1, batch_size=16, seed=0, shuffle_seed=1):
    """Chapter 10's training run: returns (model, losses of every step)."""
    from course_lib.nn import MLP as LibraryMLP
    from course_lib.nn import SGD
    from course_lib.nn import cross_entropy as library_cross_entropy

    model = LibraryMLP([4, 16, 3], rng=seed)
    optimiser = SGD(model.parameters(), lr=lr)
    order_rng = np.random.default_rng(shuffle_seed)
    losses = []
    for epoch in range(epochs):
        order = order_rng.permutation(len(y_train))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            optimiser.zero_grad()
            loss = library_cross_entropy(model(X_train[rows]), y_train[rows])
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
    return model, losses
''',
        },
        "fails": {"test_train_iris"},
        "message": "exercise rule",
    },
    "course_lib_aims_the_shot": {
        # Chapter 11's own descent through course_lib's simulator instead of the student's engine.
        "replace": {
            "aim": '''def aim(v0, theta0, k=DRAG, lr=0.01, tol=1e-3, max_steps=100, dt=DT):
    """Gradient descent on (hoop_height - HOOP[1])**2 over (v, theta): the rows [(v, theta, height), ...]."""
    from course_lib.simulate import fit_shot_with_drag

    history = fit_shot_with_drag(v0, theta0, k=k, lr=lr, max_steps=max_steps, tol=tol, dt=dt)
    return list(zip(history.v, history.theta, history.height))
''',
        },
        "fails": {"test_aim"},
        "message": "exercise rule",
    },
}
