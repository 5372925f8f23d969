"""Typical mistakes in ps03 (reverse mode), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. The last
part's test runs random expressions with every operation, so a wrong rule fails there too.
"""

MISTAKES = {
    "assign_instead_of_accumulate": {
        # `=` instead of `+=`: right for distinct operands, wrong as soon as a value is reused (x * x).
        "replace": {
            "mul_backward": '''def mul(self, other):
    """self * other: a new Value whose _backward passes gradients to both factors."""
    other = _lift(other)
    if other is NotImplemented:
        return NotImplemented
    out = Value(self.data * other.data, (self, other), "*")

    def _backward(grad):
        self.grad = other.data * grad
        other.grad = self.data * grad

    out._backward = _backward
    return out


Value.__mul__ = mul
Value.__rmul__ = mul  # 2 * x: multiplication commutes
''',
        },
        "fails": {"test_mul_backward"},  # each part graded on its own (# grader: reference)
        "message": "accumulate with += instead of =",
    },
    "sweep_in_forward_order": {
        # Calls the closures from the inputs to the output: every closure runs before its
        # node has received its gradient.
        "replace": {
            "backward_sweep": '''def backward(self):
    """Add d self / d leaf to the .grad of every leaf that self depends on."""
    order = topological_order(self)
    for node in order:
        if node._parents:
            node.grad = 0.0
    self.grad += 1.0
    for node in order:
        node._backward(node.grad)


Value.backward = backward
''',
        },
        "fails": {"test_backward_sweep"},  # each part graded on its own (# grader: reference)
        "message": "reversed(topological_order(self))",
    },
    "power_rule_off_by_one": {
        "replace": {
            "pow_backward": '''def power(self, n):
    """self ** n for a plain number n."""
    if not isinstance(n, numbers.Real):
        return NotImplemented
    out = Value(self.data**n, (self,), f"**{n}")

    def _backward(grad):
        self.grad += n * self.data**n * grad

    out._backward = _backward
    return out


Value.__pow__ = power
''',
        },
        "fails": {"test_pow_backward"},  # each part graded on its own (# grader: reference)
        "message": "the exponent is off by one",
    },
    "tanh_derivative_is_tanh": {
        # Uses tanh(x) where 1 - tanh(x)**2 belongs; exp is right.
        "replace": {
            "exp_tanh_backward": '''def exp(self):
    """e ** self."""
    y = math.exp(self.data)
    out = Value(y, (self,), "exp")

    def _backward(grad):
        self.grad += y * grad

    out._backward = _backward
    return out


def tanh(self):
    """The hyperbolic tangent of self."""
    t = math.tanh(self.data)
    out = Value(t, (self,), "tanh")

    def _backward(grad):
        self.grad += t * grad

    out._backward = _backward
    return out


Value.exp = exp
Value.tanh = tanh
''',
        },
        "fails": {"test_exp_tanh_backward"},  # each part graded on its own (# grader: reference)
        "message": "not tanh(x)",
    },
    "intermediate_grads_not_reset": {
        # micrograd's backward: right once, but a second call starts from stale intermediate
        # gradients and adds far too much to the leaves.
        "replace": {
            "backward_sweep": '''def backward(self):
    """Add d self / d leaf to the .grad of every leaf that self depends on."""
    order = topological_order(self)
    self.grad = 1.0
    for node in reversed(order):
        node._backward(node.grad)


Value.backward = backward
''',
        },
        "fails": {"test_backward_sweep"},
        "message": "Reset the grad of every intermediate node",
    },
}
