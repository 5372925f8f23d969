"""A scalar engine WITHOUT a closure per node: the design floor for ``benchmarks/scalar.py``.

``course_lib.scalar.Value`` gives every node its own ``_backward`` closure, the design
chapter 5 teaches: the rule sits next to the forward computation and keeps the numbers it
needs. The price is one function object per node (and a tuple of its default arguments), which
costs time to create and, as long as the graph lives, more objects for Python's garbage
collector to scan.

This engine is the same ``Value`` with that one thing changed: each operation has ONE rule
shared by all its nodes (a table, as in HIPS Autograd), and a node keeps its parents, its
operation's rule and the numbers that rule needs (fields ``_x``, ``_y``). Everything else is as in
course_lib (the same fields, the same check that saved inputs were not replaced, the same
topological sort), so the two rows differ by the closures alone. It supports just the operations the
benchmark's workloads use. It is never taught and never imported by ``course_lib``; the
difference between its row and ``course_lib``'s row is what the closures cost.
"""

from __future__ import annotations

from course_lib.toposort import interior_postorder

_new_object = object.__new__


def _changed(node: Value) -> RuntimeError:
    """As in course_lib: the error for a rule whose saved input was replaced since the forward pass."""
    return RuntimeError(f"an input of {node._op!r} was modified after the forward pass")


def _add_rule(node: Value, grad: float) -> None:
    a, b = node._parents
    a.grad += grad
    b.grad += grad


def _mul_rule(node: Value, grad: float) -> None:
    a, b = node._parents
    x, y = node._x, node._y
    if a.data is not x or b.data is not y:
        raise _changed(node)
    a.grad += y * grad
    b.grad += x * grad


def _pow_rule(node: Value, grad: float) -> None:
    (a,) = node._parents
    x, exponent = node._x, node._y
    if a.data is not x:
        raise _changed(node)
    a.grad += exponent * x ** (exponent - 1) * grad


def _relu_rule(node: Value, grad: float) -> None:
    (a,) = node._parents
    x = node._x
    if a.data is not x:
        raise _changed(node)
    if x > 0:
        a.grad += grad


def _leaf_rule(node: Value, grad: float) -> None:
    """Leaves have nothing before them."""


class Value:
    """A scalar node with the fields of course_lib's ``Value``, but a shared rule and saved
    numbers in fields where course_lib has a closure."""

    __slots__ = ("data", "grad", "label", "_parents", "_op", "_rule", "_x", "_y")

    def __init__(self, data: float, label: str = "") -> None:
        self.data, self.grad, self.label = float(data), 0.0, label
        self._parents, self._op, self._rule = (), "", _leaf_rule

    def __add__(self, other: Value | float) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return _record("add", self.data + other.data, (self, other), _add_rule)

    def __mul__(self, other: Value | float) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        x, y = self.data, other.data
        return _record("mul", x * y, (self, other), _mul_rule, x, y)

    def __pow__(self, exponent: float) -> Value:
        x = self.data
        return _record("pow", x**exponent, (self,), _pow_rule, x, exponent)

    def relu(self) -> Value:
        x = self.data
        return _record("relu", x if x > 0 else 0.0, (self,), _relu_rule, x)

    def __neg__(self) -> Value:
        return self * -1.0

    def __sub__(self, other: Value | float) -> Value:
        return self + (-other)

    __radd__, __rmul__ = __add__, __mul__

    def backward(self) -> None:
        topo = interior_postorder(self)
        for node in topo:
            node.grad = 0.0
        self.grad += 1.0
        for node in reversed(topo):
            node._rule(node, node.grad)


def _record(op: str, data: float, parents: tuple[Value, ...], rule, x: float = 0.0, y: float = 0.0) -> Value:
    out = _new_object(Value)
    out.data, out.grad, out.label = data, 0.0, ""
    out._parents, out._op, out._rule, out._x, out._y = parents, op, rule, x, y
    return out
