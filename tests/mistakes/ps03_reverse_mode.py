"""Typical mistakes in ps03 (reverse mode), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Later
parts run the reference of an earlier part that failed, so each mistake costs its own part only.
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
    "preorder_reversed": {
        # Appends a node before visiting its parents, then reverses: wrong on shared nodes. Parts 5
        # and 6 sort with it: the reference stands in for it there, so it costs part 4 only.
        "replace": {
            "topological_order": '''def topological_order(root):
    """Every node root depends on, once each, parents before children, root last."""
    order, visited = [], set()

    def visit(node):
        if id(node) in visited:
            return
        visited.add(id(node))
        order.append(node)
        for parent in node._parents:
            visit(parent)

    visit(root)
    return order[::-1]
''',
        },
        "fails": {"test_topological_order"},
        "message": "a node comes before one of its parents",
    },
}

# Every part again, correct, in other idioms: x.grad = x.grad + ..., rules made by a factory,
# 1 / cosh², an explicit stack with a set of the nodes themselves, a sweep by index, isinstance
# tests before dividing. It must score full marks.
HONEST = {
    "mul_backward": '''def mul(self, other):
    """self * other: a new Value whose _backward passes gradients to both factors."""
    other = _lift(other)
    if other is NotImplemented:
        return NotImplemented
    out = Value(self.data * other.data, (self, other), "*")

    def _backward(grad):
        for mine, theirs in ((self, other), (other, self)):
            mine.grad = mine.grad + theirs.data * grad

    out._backward = _backward
    return out


Value.__mul__ = mul
Value.__rmul__ = mul
''',
    "pow_backward": '''def power(self, n):
    """self ** n for a plain number n."""
    if not isinstance(n, numbers.Real):
        return NotImplemented
    out = Value(self.data**n, (self,), f"**{n}")

    def _backward(grad):
        slope = n * self.data ** (n - 1)
        self.grad = self.grad + grad * slope

    out._backward = _backward
    return out


Value.__pow__ = power
''',
    "exp_tanh_backward": '''def unary(name, function, slope):
    """The Value method `name`: function of the data, slope(x, y) its derivative at x."""

    def method(self):
        y = function(self.data)
        out = Value(y, (self,), name)

        def _backward(grad):
            self.grad += slope(self.data, y) * grad

        out._backward = _backward
        return out

    return method


Value.exp = unary("exp", math.exp, lambda x, y: y)
Value.tanh = unary("tanh", math.tanh, lambda x, y: 1.0 / math.cosh(x) ** 2)
''',
    "topological_order": '''def topological_order(root):
    """Every node root depends on, once each, parents before children, root last."""
    order, seen = [], {root}
    stack = [(root, iter(root._parents))]
    while stack:
        node, parents = stack[-1]
        for parent in parents:
            if parent not in seen:
                seen.add(parent)
                stack.append((parent, iter(parent._parents)))
                break
        else:
            stack.pop()
            order.append(node)
    return order
''',
    "backward_sweep": '''def backward(self):
    """Add d self / d leaf to the .grad of every leaf that self depends on."""
    order = topological_order(self)
    for node in order:
        if len(node._parents) > 0:
            node.grad = 0.0
    self.grad = self.grad + 1.0
    for k in range(len(order) - 1, -1, -1):
        order[k]._backward(order[k].grad)


Value.backward = backward
''',
    "division": '''def divide(self, other):
    """self / other, built from * and **."""
    if isinstance(other, numbers.Real):
        other = Value(other)
    if not isinstance(other, Value):
        return NotImplemented
    return self * other**-1


def rdivide(self, other):
    """other / self, for a number on the left."""
    if not isinstance(other, numbers.Real):
        return NotImplemented
    return Value(other) * self**-1


Value.__truediv__ = divide
Value.__rtruediv__ = rdivide
''',
}
