"""``Value``: a reverse-mode automatic-differentiation engine for scalars.

Every arithmetic operation on ``Value`` objects returns a new ``Value`` that remembers
its parents (the operands, in order), the name of the operation and a ``_backward``
closure. The closure knows the local derivatives of that one operation: given the
gradient of the output, it adds the chain-rule contribution to each parent's ``.grad``.
``backward()`` runs the closures from the output back to the inputs, in a topological
order from :mod:`course_lib.toposort`.

Gradient semantics follow PyTorch: gradients of leaves (Values you create yourself)
accumulate across ``backward()`` calls until you zero them; gradients of intermediate
results are recomputed from scratch by every ``backward()``.

A closure keeps the numbers its rule needs from the forward pass (``x = self.data``).
If one of them was replaced since (``a.data = 5.0`` between the forward pass and
``backward()``), the closure raises instead of computing a gradient for values the
forward pass never saw, like PyTorch's "modified by an inplace operation".
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from course_lib.toposort import interior_postorder, postorder

__all__ = ["Value", "record", "OPS"]

_parents_of = attrgetter("_parents")


def _no_backward(grad: float) -> None:
    """The ``_backward`` of a leaf: there is nothing before it to pass a gradient to."""


class Value:
    """A scalar that records how it was computed, so gradients can flow back through it.

    ``_backward(grad)`` receives the output's gradient from the sweep in ``backward()``
    rather than reading ``out.grad`` itself. So a closure holds references only to the
    parents, never to its own output: no reference cycles, and a graph is freed as soon
    as the last reference to its output goes away.

    Each ``_backward`` takes what it needs as default arguments (``self=self, x=x``)
    instead of capturing it: a captured variable costs a cell object, one more thing
    for the garbage collector to scan in every graph (chapter 14 measures the effect).
    """

    __slots__ = ("data", "grad", "label", "_parents", "_op", "_backward")
    __array_ufunc__ = None  # ``np.float64(2) * v`` defers to Value.__rmul__ instead of NumPy

    def __init__(self, data: float, label: str = "", *old_parents_and_op: Any) -> None:
        """A leaf: a number of your own, with an optional ``label`` for drawings.

        Operations make the other nodes with :func:`record`. (The older spelling
        ``Value(data, label, parents, op)`` still works but is deprecated.)
        """
        self.data = data if type(data) is float else _as_float(data)
        self.grad = 0.0
        self.label = label
        self._parents: tuple[Value, ...] = ()
        self._op = ""
        self._backward: Callable[[float], None] = _no_backward
        if old_parents_and_op:
            warnings.warn(
                "Value(data, label, parents, op) is deprecated: make a computed node with record(op, data, parents)",
                DeprecationWarning,
                stacklevel=2,
            )
            self._parents, self._op = (*old_parents_and_op, "")[:2]

    def __repr__(self) -> str:
        label = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{label})"

    # ---- binary operations -------------------------------------------------------

    def __add__(self, other: Value | float) -> Value:
        other = other if isinstance(other, Value) else _lift(other)
        if other is NotImplemented:
            return NotImplemented
        out = record("add", self.data + other.data, (self, other))

        def _backward(grad: float, self=self, other=other) -> None:
            self.grad += grad
            other.grad += grad

        out._backward = _backward
        return out

    def __mul__(self, other: Value | float) -> Value:
        other = other if isinstance(other, Value) else _lift(other)
        if other is NotImplemented:
            return NotImplemented
        x, y = self.data, other.data
        out = record("mul", x * y, (self, other))

        def _backward(grad: float, self=self, other=other, x=x, y=y) -> None:
            if self.data is not x or other.data is not y:
                raise _changed("mul", self, x, other, y)
            self.grad += y * grad
            other.grad += x * grad

        out._backward = _backward
        return out

    def __truediv__(self, other: Value | float) -> Value:
        other = other if isinstance(other, Value) else _lift(other)
        if other is NotImplemented:
            return NotImplemented
        y = other.data
        out_data = self.data / y
        out = record("div", out_data, (self, other))

        def _backward(grad: float, self=self, other=other, y=y, out_data=out_data) -> None:
            if other.data is not y:
                raise _changed("div", other, y)
            self.grad += grad / y
            other.grad -= grad * out_data / y  # d(a/b)/db = -a/b**2 = -(a/b)/b

        out._backward = _backward
        return out

    def __pow__(self, exponent: float) -> Value:
        if isinstance(exponent, Value):
            raise TypeError(
                "Value ** Value is not supported: the exponent must be a number. "
                "For a Value exponent e and a positive base b, write (e * b.log()).exp()."
            )
        if not isinstance(exponent, numbers.Real):
            return NotImplemented
        x = self.data
        data = x**exponent
        if isinstance(data, complex):
            raise ValueError(f"{x} ** {exponent} is not a real number: a negative base needs an integer exponent.")
        out = record("pow", data, (self,))

        def _backward(grad: float, self=self, x=x, exponent=exponent) -> None:
            if self.data is not x:
                raise _changed("pow", self, x)
            self.grad += exponent * x ** (exponent - 1) * grad

        out._backward = _backward
        return out

    # Subtraction is addition of the negation, so it needs no backward rule of its own.
    def __sub__(self, other: Value | float) -> Value:
        if not isinstance(other, (Value, numbers.Real)):
            return NotImplemented
        return self + (-other)

    def __radd__(self, other: float) -> Value:  # other + self
        return self + other

    def __rmul__(self, other: float) -> Value:  # other * self
        return self * other

    def __rsub__(self, other: float) -> Value:  # other - self
        return (-self) + other

    def __rtruediv__(self, other: float) -> Value:  # other / self
        numerator = _lift(other)
        return NotImplemented if numerator is NotImplemented else numerator / self

    # ---- unary operations ----------------------------------------------------------

    def __neg__(self) -> Value:
        out = record("neg", -self.data, (self,))

        def _backward(grad: float, self=self) -> None:
            self.grad -= grad

        out._backward = _backward
        return out

    def exp(self) -> Value:
        out = record("exp", math.exp(self.data), (self,))
        out_data = out.data

        def _backward(grad: float, self=self, out_data=out_data) -> None:
            self.grad += out_data * grad  # d exp(x)/dx = exp(x), already computed

        out._backward = _backward
        return out

    def log(self) -> Value:
        x = self.data
        if x <= 0:
            raise ValueError(f"log() needs a positive input, got {x}: shift or clamp the argument first.")
        out = record("log", math.log(x), (self,))

        def _backward(grad: float, self=self, x=x) -> None:
            if self.data is not x:
                raise _changed("log", self, x)
            self.grad += grad / x

        out._backward = _backward
        return out

    def sin(self) -> Value:
        x = self.data
        out = record("sin", math.sin(x), (self,))

        def _backward(grad: float, self=self, x=x) -> None:
            if self.data is not x:
                raise _changed("sin", self, x)
            self.grad += math.cos(x) * grad

        out._backward = _backward
        return out

    def cos(self) -> Value:
        x = self.data
        out = record("cos", math.cos(x), (self,))

        def _backward(grad: float, self=self, x=x) -> None:
            if self.data is not x:
                raise _changed("cos", self, x)
            self.grad -= math.sin(x) * grad

        out._backward = _backward
        return out

    def tanh(self) -> Value:
        out = record("tanh", math.tanh(self.data), (self,))
        out_data = out.data

        def _backward(grad: float, self=self, out_data=out_data) -> None:
            self.grad += (1.0 - out_data * out_data) * grad  # 1 - tanh(x)**2

        out._backward = _backward
        return out

    def relu(self) -> Value:
        x = self.data
        out = record("relu", x if x > 0 else 0.0, (self,))

        def _backward(grad: float, self=self, x=x) -> None:
            if self.data is not x:
                raise _changed("relu", self, x)
            if x > 0:
                self.grad += grad

        out._backward = _backward
        return out

    def sigmoid(self) -> Value:
        x = self.data  # two forms, so exp never overflows
        s = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
        out = record("sigmoid", s, (self,))

        def _backward(grad: float, self=self, s=s) -> None:
            self.grad += s * (1.0 - s) * grad

        out._backward = _backward
        return out

    # ---- gradients -----------------------------------------------------------------

    def backward(self) -> None:
        """Add d self / d leaf to the ``.grad`` of every leaf this Value depends on.

        Nodes are sorted so that each comes after its parents (iterative DFS, so any
        depth works). Intermediate gradients restart from 0; leaves keep what they had.
        """
        topo = interior_postorder(self)  # leaves have no rule to run
        for node in topo:
            node.grad = 0.0
        self.grad += 1.0  # d self / d self
        for node in reversed(topo):
            node._backward(node.grad)

    def zero_grad(self) -> None:
        """Forget the accumulated gradients of this Value's graph: ``.grad = 0.0`` on every
        node, leaves included (a float gradient's empty state; ``Tensor.zero_grad`` and
        ``SGD.zero_grad`` set ``None``)."""
        for node in postorder(self, _parents_of):
            node.grad = 0.0


OPS: dict[str, Callable[..., Value]] = {
    "add": Value.__add__,
    "sub": Value.__sub__,
    "mul": Value.__mul__,
    "div": Value.__truediv__,
    "pow": Value.__pow__,
    "neg": Value.__neg__,
    "exp": Value.exp,
    "log": Value.log,
    "sin": Value.sin,
    "cos": Value.cos,
    "tanh": Value.tanh,
    "relu": Value.relu,
    "sigmoid": Value.sigmoid,
}
"""Every operation of ``Value`` by the name it records (the Tensor op table's names). The
tests walk this table: an op that records a name missing here, or that has no test
builder, fails them."""

_new_object = object.__new__


def record(op: str, data: float, parents: tuple[Value, ...]) -> Value:
    """A new node: the Value ``data`` computed by ``op`` from ``parents`` (in order).

    Every operation makes its result this way and then sets the result's
    ``_backward(grad)``; an operation of your own does the same (chapter 7 adds
    ``cube``). The name mirrors :func:`course_lib.tensor.record` of the Tensor engine.
    """
    out = _new_object(Value)  # not Value(data): going through __init__ costs a third more per node
    out.data = data if type(data) is float else _as_float(data)
    out.grad = 0.0
    out.label = ""
    out._parents = parents
    out._op = op
    out._backward = _no_backward
    return out


def _as_float(data: object) -> float:
    if isinstance(data, numbers.Real):
        return float(data)
    raise TypeError(
        f"Value() needs a real number, got {type(data).__name__}"
        + (": use the Value itself instead of wrapping it again." if isinstance(data, Value) else ".")
    )


def _changed(op: str, *values_and_saved: Any) -> RuntimeError:
    """The error for a closure of ``op`` whose saved input values were replaced since the forward pass."""
    pairs = zip(values_and_saved[::2], values_and_saved[1::2])
    value, saved = next((v, s) for v, s in pairs if v.data is not s)
    name = f" {value.label!r}" if value.label else ""
    return RuntimeError(
        f"a Value needed to differentiate '{op}' has been modified by an in-place change: its input{name} was "
        f"{saved:.6g} in the forward pass but its .data is now {value.data:.6g}, so the gradient would be wrong. "
        "Run the forward pass again after changing .data (e.g. update parameters only after backward())"
    )


def _lift(other: object) -> Value:
    """A number becomes a constant leaf; anything else is not ours to handle."""
    return Value(float(other)) if isinstance(other, numbers.Real) else NotImplemented
