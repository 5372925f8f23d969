"""Typical mistakes in ps02 (forward mode), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student.
"""

MISTAKES = {
    "product_rule_missing_term": {
        # (uv)' written as u'v only: the a·ḃ term is lost.
        "replace": {
            "dual_arithmetic": '''class MyDual:
    """A dual number primal + tangent·ε, with ε² = 0."""

    def __init__(self, primal: float, tangent: float = 0.0) -> None:
        self.primal = primal
        self.tangent = tangent

    def __repr__(self) -> str:
        return f"MyDual({self.primal!r}, {self.tangent!r})"

    def __add__(self, other) -> "MyDual":
        """self + other, where other is a MyDual or a number."""
        other = as_dual(other)
        return MyDual(self.primal + other.primal, self.tangent + other.tangent)

    def __radd__(self, other) -> "MyDual":
        """other + self, for a number other (Python calls this for 3 + x)."""
        return self + other

    def __sub__(self, other) -> "MyDual":
        """self - other, where other is a MyDual or a number."""
        other = as_dual(other)
        return MyDual(self.primal - other.primal, self.tangent - other.tangent)

    def __rsub__(self, other) -> "MyDual":
        """other - self, for a number other (Python calls this for 10 - x)."""
        return as_dual(other) - self

    def __neg__(self) -> "MyDual":
        """-self."""
        return MyDual(-self.primal, -self.tangent)

    def __mul__(self, other) -> "MyDual":
        """self * other, where other is a MyDual or a number (product rule)."""
        other = as_dual(other)
        return MyDual(self.primal * other.primal,
                      self.tangent * other.primal)

    def __rmul__(self, other) -> "MyDual":
        """other * self, for a number other (Python calls this for 2 * x)."""
        return self * other


def as_dual(x) -> MyDual:
    """A MyDual stays as it is; a number c becomes the constant c + 0ε."""
    return x if isinstance(x, MyDual) else MyDual(x, 0.0)
''',
        },
        "fails": {"test_dual_arithmetic"},  # each part graded on its own (# grader: reference)
        "message": "product rule is missing a term",
    },
    "reflected_ops_missing": {
        # No __radd__, __rsub__, __rmul__: 2 * x and 3 + x raise TypeError.
        "replace": {
            "dual_arithmetic": '''class MyDual:
    """A dual number primal + tangent·ε, with ε² = 0."""

    def __init__(self, primal: float, tangent: float = 0.0) -> None:
        self.primal = primal
        self.tangent = tangent

    def __repr__(self) -> str:
        return f"MyDual({self.primal!r}, {self.tangent!r})"

    def __add__(self, other) -> "MyDual":
        """self + other, where other is a MyDual or a number."""
        other = as_dual(other)
        return MyDual(self.primal + other.primal, self.tangent + other.tangent)

    def __sub__(self, other) -> "MyDual":
        """self - other, where other is a MyDual or a number."""
        other = as_dual(other)
        return MyDual(self.primal - other.primal, self.tangent - other.tangent)

    def __neg__(self) -> "MyDual":
        """-self."""
        return MyDual(-self.primal, -self.tangent)

    def __mul__(self, other) -> "MyDual":
        """self * other, where other is a MyDual or a number (product rule)."""
        other = as_dual(other)
        return MyDual(self.primal * other.primal,
                      self.tangent * other.primal + self.primal * other.tangent)


def as_dual(x) -> MyDual:
    """A MyDual stays as it is; a number c becomes the constant c + 0ε."""
    return x if isinstance(x, MyDual) else MyDual(x, 0.0)
''',
        },
        "fails": {"test_dual_arithmetic"},  # each part graded on its own (# grader: reference)
        "message": "reflected method",
    },
    "quotient_rule_sign": {
        # (u/v)' = (u'v + uv')/v²: the wrong sign in the middle.
        "replace": {
            "dual_division_power": '''def dual_truediv(self: MyDual, other) -> MyDual:
    """self / other, where other is a MyDual or a number (quotient rule)."""
    other = as_dual(other)
    return MyDual(self.primal / other.primal,
                  (self.tangent * other.primal + self.primal * other.tangent) / other.primal**2)


def dual_rtruediv(self: MyDual, other) -> MyDual:
    """other / self, for a number other (Python calls this for 1 / x)."""
    return dual_truediv(as_dual(other), self)


def dual_pow(self: MyDual, n: float) -> MyDual:
    """self ** n for a plain number n (power rule)."""
    return MyDual(self.primal**n, n * self.primal ** (n - 1) * self.tangent)


MyDual.__truediv__ = dual_truediv
MyDual.__rtruediv__ = dual_rtruediv
MyDual.__pow__ = dual_pow
''',
        },
        "fails": {"test_dual_division_power"},  # each part graded on its own (# grader: reference)
        "message": "quotient rule sign",
    },
    "sin_primal_tangent_swapped": {
        # sin returns MyDual(tangent, primal) instead of MyDual(primal, tangent).
        "replace": {
            "elementary_functions": '''def sin(x):
    """sin x for a MyDual or a number."""
    if not isinstance(x, MyDual):
        return math.sin(x)
    return MyDual(math.cos(x.primal) * x.tangent, math.sin(x.primal))


def cos(x):
    """cos x for a MyDual or a number."""
    if not isinstance(x, MyDual):
        return math.cos(x)
    return MyDual(math.cos(x.primal), -math.sin(x.primal) * x.tangent)


def exp(x):
    """exp x for a MyDual or a number."""
    if not isinstance(x, MyDual):
        return math.exp(x)
    value = math.exp(x.primal)
    return MyDual(value, value * x.tangent)


def log(x):
    """Natural log of a MyDual or a (positive) number."""
    if not isinstance(x, MyDual):
        return math.log(x)
    return MyDual(math.log(x.primal), x.tangent / x.primal)
''',
        },
        "fails": {"test_elementary_functions"},  # each part graded on its own (# grader: reference)
        "message": "tangent and primal swapped",
    },
    "sweep_in_reverse_order": {
        # Visits the nodes children first, so parents' tangents are not ready.
        "replace": {
            "tangent_sweep": '''def tangent_sweep(order: list[Node], seeds: dict[Node, float]) -> dict[Node, float]:
    """Forward-mode tangents of every node in order (a topological order: parents first).

    A node without parents gets seeds.get(node, 0.0); any other node gets
    sum over i of node.grad_wrt_parents[i] * (tangent of node._parents[i]).
    """
    tangent = {}
    for node in reversed(order):
        if not node._parents:
            tangent[node] = seeds.get(node, 0.0)
        else:
            tangent[node] = sum(local * tangent[parent]
                                for parent, local in zip(node._parents, node.grad_wrt_parents))
    return tangent
''',
        },
        "fails": {"test_tangent_sweep"},
        "message": "topological order",
    },
}
