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
    "rsub_backwards_with_own_methods": {
        # 10 - x computed as x - 10; the later parts are right but put methods of their own on
        # MyDual (a reciprocal helper, sin/cos/exp/log as methods, a class and a static method),
        # which the reference MyDual standing in for this one must keep: one slip costs 3 points.
        "replace": {
            "dual_arithmetic": '''class MyDual:
    """A dual number primal + tangent·ε, with ε² = 0."""

    def __init__(self, primal: float, tangent: float = 0.0) -> None:
        self.primal = primal
        self.tangent = tangent

    def __repr__(self) -> str:
        return f"MyDual({self.primal!r}, {self.tangent!r})"

    def __add__(self, other) -> "MyDual":
        other = as_dual(other)
        return MyDual(self.primal + other.primal, self.tangent + other.tangent)

    def __radd__(self, other) -> "MyDual":
        return self + other

    def __sub__(self, other) -> "MyDual":
        other = as_dual(other)
        return MyDual(self.primal - other.primal, self.tangent - other.tangent)

    def __rsub__(self, other) -> "MyDual":
        return self - other

    def __neg__(self) -> "MyDual":
        return MyDual(-self.primal, -self.tangent)

    def __mul__(self, other) -> "MyDual":
        other = as_dual(other)
        return MyDual(self.primal * other.primal,
                      self.tangent * other.primal + self.primal * other.tangent)

    def __rmul__(self, other) -> "MyDual":
        return self * other


def as_dual(x) -> MyDual:
    return x if isinstance(x, MyDual) else MyDual(x, 0.0)
''',
            "dual_division_power": '''def reciprocal(self):
    """1 / self: d/dx 1/u = -u'/u²."""
    return MyDual(1.0 / self.primal, -self.tangent / self.primal**2)


def dual_truediv(self, other):
    return self * as_dual(other).reciprocal()


def dual_rtruediv(self, other):
    return self.reciprocal() * other


def dual_pow(self, n):
    return MyDual(self.primal**n, n * self.primal ** (n - 1) * self.tangent)


MyDual.reciprocal = reciprocal
MyDual.__truediv__ = dual_truediv
MyDual.__rtruediv__ = dual_rtruediv
MyDual.__pow__ = dual_pow
''',
            "elementary_functions": """def _dual_sin(self):
    return MyDual(math.sin(self.primal), math.cos(self.primal) * self.tangent)


def _dual_cos(self):
    return MyDual(math.cos(self.primal), -math.sin(self.primal) * self.tangent)


def _dual_exp(self):
    return MyDual(math.exp(self.primal), math.exp(self.primal) * self.tangent)


def _dual_log(self):
    return MyDual(math.log(self.primal), self.tangent / self.primal)


MyDual.sin, MyDual.cos, MyDual.exp, MyDual.log = _dual_sin, _dual_cos, _dual_exp, _dual_log


def sin(x):
    return x.sin() if isinstance(x, MyDual) else math.sin(x)


def cos(x):
    return x.cos() if isinstance(x, MyDual) else math.cos(x)


def exp(x):
    return x.exp() if isinstance(x, MyDual) else math.exp(x)


def log(x):
    return x.log() if isinstance(x, MyDual) else math.log(x)
""",
            "derivative_gradient": """MyDual.variable = classmethod(lambda cls, x: cls(x, 1.0))
MyDual.constant = staticmethod(lambda x: MyDual(x, 0.0))


def derivative(f, x):
    out = f(MyDual.variable(x))
    return out.tangent if isinstance(out, MyDual) else 0.0


def gradient(f, point):
    partials = []
    for i in range(len(point)):
        seeded = [MyDual.variable(p) if j == i else MyDual.constant(p) for j, p in enumerate(point)]
        out = f(*seeded)
        partials.append(out.tangent if isinstance(out, MyDual) else 0.0)
    return partials
""",
        },
        "fails": {"test_dual_arithmetic"},  # each part graded on its own (# grader: reference)
        "message": "10 - x1 should be 8.0",
    },
}

# Every part again, correct, in other idioms: __slots__ and type(self), duck typing instead of
# isinstance, division by a reciprocal, functions made by a factory from a table, gradient from
# derivative, tangents kept by id(node) with `is` tests. It must score full marks.
HONEST = {
    "dual_arithmetic": '''class MyDual:
    """A dual number primal + tangent·ε, with ε² = 0."""

    __slots__ = ("primal", "tangent")

    def __init__(self, primal: float, tangent: float = 0.0) -> None:
        self.primal = primal
        self.tangent = tangent

    def __repr__(self) -> str:
        return f"MyDual({self.primal!r}, {self.tangent!r})"

    def _pair(self, other):
        if hasattr(other, "tangent"):
            return other.primal, other.tangent
        return other, 0.0

    def __add__(self, other):
        b, db = self._pair(other)
        return type(self)(self.primal + b, self.tangent + db)

    __radd__ = __add__

    def __sub__(self, other):
        b, db = self._pair(other)
        return type(self)(self.primal - b, self.tangent - db)

    def __rsub__(self, other):
        return -self + other

    def __neg__(self):
        return type(self)(-self.primal, -self.tangent)

    def __mul__(self, other):
        b, db = self._pair(other)
        return type(self)(self.primal * b, self.primal * db + self.tangent * b)

    __rmul__ = __mul__


def as_dual(x) -> MyDual:
    """A MyDual stays as it is; a number c becomes the constant c + 0ε."""
    return x if type(x) is MyDual else MyDual(x, 0.0)
''',
    "dual_division_power": '''def reciprocal(d):
    """1 / d for a MyDual d: d/dx 1/u = -u'/u²."""
    return MyDual(1.0 / d.primal, -d.tangent / (d.primal * d.primal))


def dual_truediv(self: MyDual, other) -> MyDual:
    """self / other, where other is a MyDual or a number (quotient rule)."""
    return self * reciprocal(as_dual(other))


def dual_rtruediv(self: MyDual, other) -> MyDual:
    """other / self, for a number other (Python calls this for 1 / x)."""
    return reciprocal(self) * other


def dual_pow(self: MyDual, n: float) -> MyDual:
    """self ** n for a plain number n (power rule)."""
    return MyDual(math.pow(self.primal, n), self.tangent * n * math.pow(self.primal, n - 1))


for name, method in {"__truediv__": dual_truediv, "__rtruediv__": dual_rtruediv, "__pow__": dual_pow}.items():
    setattr(MyDual, name, method)
''',
    "elementary_functions": '''RULES = {
    "sin": (math.sin, math.cos),
    "cos": (math.cos, lambda t: -math.sin(t)),
    "exp": (math.exp, math.exp),
    "log": (math.log, lambda t: 1.0 / t),
}


def lifted(name):
    """The function `name` for numbers and MyDuals, by the chain rule."""
    value, slope = RULES[name]

    def function(x):
        if isinstance(x, MyDual):
            return MyDual(value(x.primal), slope(x.primal) * x.tangent)
        return value(x)

    function.__name__ = name
    return function


sin, cos, exp, log = (lifted(name) for name in ("sin", "cos", "exp", "log"))
''',
    "derivative_gradient": '''def derivative(f, x: float) -> float:
    """f'(x) for a function f of one number: one forward pass with MyDual."""
    out = f(MyDual(x, 1.0))
    return getattr(out, "tangent", 0.0)


def gradient(f, point: list[float]) -> list[float]:
    """[∂f/∂x_1, ..., ∂f/∂x_n] at point: one forward pass per input."""
    return [
        derivative(lambda t, i=i: f(*point[:i], t, *point[i + 1:]), point[i])
        for i in range(len(point))
    ]
''',
    "tangent_sweep": '''def tangent_sweep(order, seeds):
    """Forward-mode tangents of every node in order (a topological order: parents first)."""
    by_id = {}
    for node in order:
        parents = node._parents
        if len(parents) == 0:
            by_id[id(node)] = next((t for seeded, t in seeds.items() if seeded is node), 0.0)
            continue
        total = 0.0
        for k, parent in enumerate(parents):
            total += node.grad_wrt_parents[k] * by_id[id(parent)]
        by_id[id(node)] = total
    return {node: by_id[id(node)] for node in order}
''',
}
