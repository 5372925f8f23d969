"""A fourth pass of hostile and honest students against ps01 (finite differences), ps02 (forward
mode) and ps05 (optimisation), beyond the hostile files that name them.

Tried and held (graded as in Jupyter, checked with ``differences`` of idioms.py): on ps01 a
forward difference made of ``functools.reduce(operator.sub, map(f, ...))``, a central difference
through ``np.vectorize`` of the test's function, a gradient from a generator of steps under
``warnings.catch_warnings`` and ``np.errstate``, ``functools.partial`` of the test's method and an
order taken with ``decimal``; on ps05 leaves made with ``map(Value, ...)`` and read with
``np.fromiter``, ``contextlib.suppress``, descent from a generator through ``itertools.islice``,
momentum kept in a dataclass, a field by ``np.apply_along_axis`` over the grid and
``np.linalg.eigvals``. Attacks left as before: course_lib's and the other engines' derivatives stay
ruled out, and a verdict is the judge's.

Found, each graded in the real sandbox (``grade`` of test_verdict_seams.py) and asserting the fair
score, the one the notebook gets when it runs top to bottom in Jupyter (``jupyter_points`` of
idioms.py gave full marks for each):

- ps02's dual number class written under a name of the student's and bound to ``MyDual``
  (``MyDual = DualNumber``): its objects were not of the notebook's class for the judge, so the
  test's ``x1 * x2`` turned them into numbers first (0/3, 3/3 in Jupyter). The runner now takes a
  class bound to a notebook class's name for that class.
- ``inspect.signature`` of the test's function (ps01's ``best_step`` checking that the method
  takes three arguments): the stand-in had no signature (0/2, 2/2 in Jupyter). A stand-in of a
  callable now has the signature of the judge's function.
- After a slip in ps02's part 1, a division that sets the parts of a ``copy.copy(self)`` and a
  power that sets those of a new ``MyDual(0.0, 0.0)``: they stayed on the runner's stand-in, the
  reference's object the judge reads had none of them (0/2, 2/2 in Jupyter). An object the
  student's code made of the judge's (a reference class's, or a copy) is theirs: what they set
  on it goes to the judge's object; the test's own objects stay read-only.
"""

from __future__ import annotations

from test_verdict_seams import grade

# ps02 part 1, honest: the class under a name of the student's, bound to the notebook's name.
ALIASED_DUAL = '''class DualNumber:
    """A dual number primal + tangent·ε, with ε² = 0."""

    def __init__(self, primal, tangent=0.0):
        self.primal = primal
        self.tangent = tangent

    def __repr__(self):
        return f"DualNumber({self.primal!r}, {self.tangent!r})"

    def __add__(self, other):
        other = as_dual(other)
        return DualNumber(self.primal + other.primal, self.tangent + other.tangent)

    __radd__ = __add__

    def __sub__(self, other):
        other = as_dual(other)
        return DualNumber(self.primal - other.primal, self.tangent - other.tangent)

    def __rsub__(self, other):
        return as_dual(other) - self

    def __neg__(self):
        return DualNumber(-self.primal, -self.tangent)

    def __mul__(self, other):
        other = as_dual(other)
        return DualNumber(self.primal * other.primal, self.tangent * other.primal + self.primal * other.tangent)

    __rmul__ = __mul__


MyDual = DualNumber


def as_dual(x):
    return x if isinstance(x, DualNumber) else DualNumber(x, 0.0)
'''


def test_ps02_a_dual_class_bound_to_the_notebooks_name_is_its_class():
    assert grade("ps02_forward_mode", {"dual_arithmetic": ALIASED_DUAL}, {"test_dual_arithmetic"}) == {
        "test_dual_arithmetic": (3.0, "")
    }


# ps01 part 4, honest: the method's arguments counted before it is used.
COUNTED_ARGUMENTS = """import functools
import inspect


def best_step(f, x, f_prime, hs, method):
    if len(inspect.signature(method).parameters) != 3:
        raise TypeError("method must take (f, x, h)")
    estimate = functools.partial(method, f, x)
    errors = [abs(estimate(h) - f_prime) for h in hs]
    return hs[int(np.argmin(errors))]
"""


def test_ps01_the_signature_of_the_tests_function_can_be_read():
    assert grade("ps01_finite_differences", {"best_step": COUNTED_ARGUMENTS}, {"test_best_step"}) == {
        "test_best_step": (2.0, "")
    }


# ps02 part 1 with the product rule's slip, then a division and a power that fill in objects they made.
PRODUCT_RULE_SLIP = """class MyDual:
    def __init__(self, primal, tangent=0.0):
        self.primal = primal
        self.tangent = tangent

    def __add__(self, other):
        other = as_dual(other)
        return MyDual(self.primal + other.primal, self.tangent + other.tangent)

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        other = as_dual(other)
        return MyDual(self.primal - other.primal, self.tangent - other.tangent)

    def __rsub__(self, other):
        return as_dual(other) - self

    def __neg__(self):
        return MyDual(-self.primal, -self.tangent)

    def __mul__(self, other):
        other = as_dual(other)
        return MyDual(self.primal * other.primal, self.tangent * other.primal)

    def __rmul__(self, other):
        return self * other


def as_dual(x):
    return x if isinstance(x, MyDual) else MyDual(x, 0.0)
"""

FILLED_IN = """import copy


def dual_truediv(self: MyDual, other) -> MyDual:
    other = as_dual(other)
    out = copy.copy(self)
    out.primal = self.primal / other.primal
    out.tangent = (self.tangent * other.primal - self.primal * other.tangent) / other.primal**2
    return out


def dual_rtruediv(self: MyDual, other) -> MyDual:
    return dual_truediv(as_dual(other), self)


def dual_pow(self: MyDual, n: float) -> MyDual:
    out = MyDual(0.0, 0.0)
    out.primal = self.primal**n
    out.tangent = n * self.primal ** (n - 1) * self.tangent
    return out


MyDual.__truediv__ = dual_truediv
MyDual.__rtruediv__ = dual_rtruediv
MyDual.__pow__ = dual_pow
"""


def test_ps02_objects_made_of_the_references_class_are_theirs_to_fill_in():
    answers = {"dual_arithmetic": PRODUCT_RULE_SLIP, "dual_division_power": FILLED_IN}
    scores = grade("ps02_forward_mode", answers, {"test_dual_arithmetic", "test_dual_division_power"})
    assert scores["test_dual_arithmetic"][0] == 0.0
    assert scores["test_dual_division_power"] == (2.0, "")


# The test's own objects stay read-only: a division that sets the parts of its operand (one the test
# made) and returns it changes nothing the test reads (a copy of theirs would hold those parts).
OPERAND_FILLED_IN = FILLED_IN.replace("    out = copy.copy(self)\n", "    out = self\n")


def test_ps02_the_tests_own_objects_stay_read_only():
    assert OPERAND_FILLED_IN != FILLED_IN
    answers = {"dual_arithmetic": PRODUCT_RULE_SLIP, "dual_division_power": OPERAND_FILLED_IN}
    scores = grade("ps02_forward_mode", answers, {"test_dual_arithmetic", "test_dual_division_power"})
    points, message = scores["test_dual_division_power"]
    assert points == 0.0 and "primal 3/4, got 3.0" in message, message  # 0/2 in Jupyter too: its tangent
