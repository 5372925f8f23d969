"""Tensors: a NumPy reverse-mode engine whose derivative rules live in one table.

A :class:`Tensor` wraps a float64 ndarray (integer and boolean input is converted to
float64). An operation on tensors of which at least one requires gradients *records* a
node: the op's name (``._op``), its operand tensors (``._parents``) and any non-tensor
parameters such as an axis or an index (``._params``). Nothing else is stored: no
closure, no gradient code. The package ``course_lib.tensor`` is built in one direction:

- ``course_lib.tensor.grad_mode`` (recording on or off) and
  ``course_lib.tensor.table`` (the op table, which knows no Tensor) at the bottom;
- ``course_lib.tensor.backprop``: the backward sweep that walks a recorded graph and
  applies the table's rules (``Tensor.backward`` runs it);
- this module: the class and :func:`record` (every op goes through it);
- ``course_lib.tensor.combine``: ``where``, ``stack`` and ``affine``, ops of several Tensors;
- ``course_lib.tensor.rules``: each op's vector-Jacobian products (VJPs), written once
  with Tensor operations and registered in the table with ``defvjp``;
- ``course_lib.tensor.autograd``: ``gradients``, the functional form of the sweep.

**No silently wrong gradients.** A Tensor's array is never changed in place: ``.data``
and ``.numpy()`` hand out read-only arrays, inputs are copied, and the only way to
change a Tensor's values is to assign ``t.data = ...``, which bumps its *version*. Every
node remembers when it was recorded; if one of its inputs (or the node itself) got new
values after that, ``backward()`` raises instead of using them, as PyTorch does
("modified by an inplace operation").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_lib.tensor.arrays import broadcasting, checked_axes, matmul, real_array
from course_lib.tensor.backprop import _backprop, _store_grad
from course_lib.tensor.grad_mode import _grad_mode, _tracing
from course_lib.tensor.table import _methods

__all__ = ["Tensor", "record"]

_FLOAT64 = np.dtype(np.float64)
_NUMBERS = (int, float, np.integer, np.floating, np.bool_)
_now = 0
"""The clock of value changes: bumped by every ``t.data = ...``; a node records its value when created."""


# ----------------------------------------------------------------------------- Tensor
def _binary_methods(op: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[Callable, Callable]:
    """``self <op> other`` and the reflected ``other <op> self`` for Tensor methods.

    ``other`` may be a Tensor, a number or a real ndarray; for anything else the method
    returns ``NotImplemented``, so Python raises its usual TypeError. A number or array
    becomes a constant parent only if a node is recorded at all.
    """

    def method(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            if not _is_constant(other):
                return NotImplemented
            if not (self.requires_grad and _grad_mode.get()) and _tracing.get() is None:
                return record(op, fn(self._data, other), ())  # no node, so no need to wrap the constant
            other = _lift(other)  # a copy: the caller may change their array later
        return record(op, fn(self._data, other._data), (self, other))

    def reflected(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            if not _is_constant(other):
                return NotImplemented
            if not (self.requires_grad and _grad_mode.get()) and _tracing.get() is None:
                return record(op, fn(other, self._data), ())
            other = _lift(other)  # a copy: the caller may change their array later
        return record(op, fn(other._data, self._data), (other, self))

    return method, reflected


class Tensor:
    """A float64 array that remembers how it was computed.

    ``Tensor(data, requires_grad=False, label="")`` copies ``data`` (numbers, nested
    lists, real arrays; booleans and integers become floats) into a float64 array.
    Leaves with ``requires_grad=True`` are the variables gradients are taken for:
    ``backward()`` adds into their ``.grad`` (an ndarray of the same shape, ``None``
    until a backward pass reaches them; assign ``None`` to reset).

    Building a Tensor from Tensors that require grad would cut them off the graph, so it
    raises: use the Tensor itself, ``stack([...])`` to join several, or ``.detach()`` to
    cut on purpose. ``.item()``, ``float(t)``, ``.data`` and ``.numpy()`` are the exits
    from the graph: what they return is a plain value that gradients cannot flow through.
    """

    __slots__ = (
        "_data",
        "grad",
        "requires_grad",
        "label",
        "_parents",
        "_op",
        "_params",
        "_retains_grad",
        "_version",
        "_recorded",
        "_mask",
    )
    _recorded: int  # the clock when record() made this node (nodes only)
    __array_ufunc__ = None  # NumPy defers to us: ndarray * Tensor calls Tensor.__rmul__

    def __init__(self, data: Any, requires_grad: bool = False, label: str = "") -> None:
        array = real_array(_untensor(data), "Tensor()")
        self._data: np.ndarray = array.astype(np.float64)  # a copy: the caller's array stays theirs
        self._mask = array.dtype == np.bool_  # remembered for indexing: x[Tensor(mask)] selects
        self._version = 0
        self.grad: np.ndarray | None = None
        self.requires_grad = bool(requires_grad)
        self.label = label
        self._parents: tuple[Tensor, ...] = ()
        self._op = ""
        self._params: tuple = ()
        self._retains_grad = False
        trace = _tracing.get()
        if trace is not None:
            trace.created.add(id(self))

    # -- values -------------------------------------------------------------------------
    @property
    def data(self) -> np.ndarray:
        """The values: a read-only float64 array (writing into it raises).

        Assign to change them, ``t.data = new_values`` (copied; any real array-like).
        That bumps the Tensor's version, so a backward pass through a node recorded
        before the change raises instead of using the new values.
        """
        data = self._data
        data.flags.writeable = False
        return data

    @data.setter
    def data(self, values: Any) -> None:
        global _now
        self._data = real_array(_untensor(values), ".data").astype(np.float64)
        _now += 1
        self._version = _now

    def numpy(self) -> np.ndarray:
        """The values as a read-only ndarray (no copy; ``.numpy().copy()`` for one you may change)."""
        return self.data

    # -- describing ---------------------------------------------------------------------
    shape = property(lambda self: self._data.shape, doc="The shape of ``data``.")
    ndim = property(lambda self: self._data.ndim, doc="The number of axes of ``data``.")
    size = property(lambda self: self._data.size, doc="The number of elements of ``data``.")

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        body = np.array2string(self._data, separator=", ", prefix="Tensor(")
        extra = f", op={self._op!r}" if self._op else (", requires_grad=True" if self.requires_grad else "")
        return f"Tensor({body}{extra})"

    def item(self) -> float:
        """The value of a one-element Tensor as a Python float: an exit from the graph
        (the float has no history, so nothing computed from it has a gradient)."""
        if self._data.size != 1:
            raise ValueError(f"item() needs a Tensor with one element, this one has shape {self.shape}")
        return float(self._data.reshape(()))

    __float__ = item

    def detach(self) -> Tensor:
        """A Tensor with the same values, cut off from the graph (requires no grad).
        While tracing it is the op ``detach`` (a stop-gradient), so the program reads the values."""
        trace = _tracing.get()
        if trace is not None and trace.sees((self,)):
            return _node(record("", self._data, ()), "detach", (self,), ())
        return record("", self._data, ())

    def retain_grad(self) -> Tensor:
        """Make backward passes also store this intermediate node's gradient in ``.grad``
        (replaced, not accumulated, at every pass: intermediates are never double-counted).
        Returns the Tensor itself."""
        self._retains_grad = True
        return self

    def zero_grad(self) -> None:
        """Forget the accumulated gradient (``.grad = None``), as ``Module.zero_grad`` and
        ``SGD.zero_grad`` do for every parameter; the next backward pass starts afresh."""
        self.grad = None

    # -- arithmetic (each op: compute the value with NumPy, record the node) ------------
    __add__, __radd__ = _binary_methods("add", broadcasting("+", np.add))
    __sub__, __rsub__ = _binary_methods("sub", broadcasting("-", np.subtract))
    __mul__, __rmul__ = _binary_methods("mul", broadcasting("*", np.multiply))
    __truediv__, __rtruediv__ = _binary_methods("div", broadcasting("/", np.divide))
    __pow__, __rpow__ = _binary_methods("pow", broadcasting("**", np.power))
    __matmul__, __rmatmul__ = _binary_methods("matmul", matmul)
    _ge = _binary_methods("ge", broadcasting(">=", np.greater_equal))[0]

    def backward(self, grad: Any = None) -> None:
        """Add d(self)/d(leaf) to the ``.grad`` of every leaf that requires grad.

        A one-element output seeds the gradient 1. Any other output needs ``grad``, the
        gradient of some scalar with respect to this Tensor, of exactly this shape (an
        ndarray, a number or a Tensor): the result is then the VJP ``grad`` times the
        Jacobian. Leaves *accumulate* across calls (call :meth:`zero_grad` or assign
        ``None`` in between). Intermediate nodes keep no gradient (as in PyTorch) unless
        :meth:`retain_grad` was called on them. The graph is kept, so calling
        ``backward()`` twice adds the same gradient to the leaves twice.
        """
        if _tracing.get() is not None:
            _tracing.get().backward(self)
        if not self.requires_grad:
            raise RuntimeError(
                "backward() on a Tensor that does not require grad: no input of its computation had "
                "requires_grad=True (or it was computed under no_grad()). Create the inputs with "
                "Tensor(data, requires_grad=True)."
            )
        _backprop(self, _seed(self, grad, "backward()"), False, _store_grad, record)

    def ge(self, other: Any) -> Tensor:
        """1.0 where ``self >= other``, else 0.0: a mask made of numbers, so a program can
        compute it (the gradients of ``clip`` and ``max`` do). Its derivative is zero."""
        mask = self._ge(other)
        if mask is NotImplemented:
            raise TypeError(f"ge() compares with a Tensor, a number or a real array, not a {type(other).__name__}")
        return mask

    def __neg__(self) -> Tensor:
        return record("neg", -self._data, (self,))

    # -- elementwise functions -----------------------------------------------------------
    def exp(self) -> Tensor:
        return record("exp", np.exp(self._data), (self,))

    def log(self) -> Tensor:
        return record("log", np.log(self._data), (self,))

    def sin(self) -> Tensor:
        return record("sin", np.sin(self._data), (self,))

    def cos(self) -> Tensor:
        return record("cos", np.cos(self._data), (self,))

    def tanh(self) -> Tensor:
        return record("tanh", np.tanh(self._data), (self,))

    def relu(self) -> Tensor:
        return record("relu", np.maximum(self._data, 0.0), (self,))

    def sigmoid(self) -> Tensor:
        # 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) for x < 0: neither overflows.
        e = np.exp(-np.abs(self._data))
        return record("sigmoid", np.where(self._data >= 0, 1.0, e) / (1.0 + e), (self,))

    def sqrt(self) -> Tensor:
        return record("sqrt", np.sqrt(self._data), (self,))

    def abs(self) -> Tensor:
        return record("abs", np.abs(self._data), (self,))

    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign of each value (its derivative is zero wherever it has one)."""
        return record("sign", np.sign(self._data), (self,))

    def clip(self, low: float | None = None, high: float | None = None) -> Tensor:
        """Values limited to ``[low, high]`` (``None``: no limit on that side)."""
        low = -np.inf if low is None else float(low)
        high = np.inf if high is None else float(high)
        return record("clip", np.clip(self._data, low, high), (self,), (low, high))

    # -- reductions ----------------------------------------------------------------------
    def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """Sum over ``axis`` (all axes by default); the sum of nothing is 0."""
        axis = checked_axes(axis, self._data.ndim, "sum")
        return record("sum", self._data.sum(axis=axis, keepdims=keepdims), (self,), (axis, keepdims))

    def mean(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """Mean over ``axis``; as in NumPy, the mean of nothing is NaN, with a RuntimeWarning."""
        axis = checked_axes(axis, self._data.ndim, "mean")
        return record("mean", self._data.mean(axis=axis, keepdims=keepdims), (self,), (axis, keepdims))

    def max(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """Largest values; tied maxima share the gradient equally."""
        axis = checked_axes(axis, self._data.ndim, "max")
        if self._data.size == 0:
            raise ValueError(f"max() of an empty Tensor (shape {self.shape}) has no value: there is nothing to compare")
        return record("max", self._data.max(axis=axis, keepdims=keepdims), (self,), (axis, keepdims))

    def softmax(self, axis: int = -1) -> Tensor:
        """exp(x) / sum(exp(x)) along ``axis``, computed after subtracting the maximum."""
        axis = checked_axes(axis, self._data.ndim, "softmax")
        e = np.exp(self._data - self._data.max(axis=axis, keepdims=True))
        return record("softmax", e / e.sum(axis=axis, keepdims=True), (self,), (axis,))

    def log_softmax(self, axis: int = -1) -> Tensor:
        """x - log(sum(exp(x))) along ``axis``, computed after subtracting the maximum."""
        axis = checked_axes(axis, self._data.ndim, "log_softmax")
        shifted = self._data - self._data.max(axis=axis, keepdims=True)
        return record("log_softmax", shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True)), (self,), (axis,))

    # -- shapes --------------------------------------------------------------------------
    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        """Same values, new shape (one entry may be -1); ``reshape(2, 3)`` or ``reshape((2, 3))``."""
        new_shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) else shape
        if tuple(new_shape) == self._data.shape:
            return self  # nothing to do, no node
        return record("reshape", self._data.reshape(new_shape), (self,))

    def transpose(self, *axes: int) -> Tensor:
        """Permute the axes (reverse them when none are given), like ``np.transpose``."""
        ndim = self._data.ndim
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = (
            tuple(range(ndim - 1, -1, -1))
            if not axes
            else tuple(int(a) % ndim for a in checked_axes(axes, ndim, "transpose"))
        )
        if axes == tuple(range(ndim)):
            return self  # nothing to do, no node
        return record("transpose", self._data.transpose(axes), (self,), (axes,))

    T = property(lambda self: self.transpose(), doc="All axes reversed (the matrix transpose for 2-D).")
    mT = property(lambda self: self.transpose(*range(self.ndim - 2), -1, -2), doc="The last two axes swapped.")

    def broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
        """A read-only broadcast view of shape ``shape`` (NumPy's rules)."""
        shape = tuple(shape)
        return self if shape == self.shape else record("broadcast_to", np.broadcast_to(self._data, shape), (self,))

    def __getitem__(self, index: Any) -> Tensor:
        """NumPy indexing: integers, slices, ``None``, ``...``, integer arrays, boolean masks."""
        trace = _tracing.get()
        if trace is not None and (taken := trace.take(self, index)) is not None:
            return taken  # the index holds traced integer arrays: the op ``take`` reads them
        index = _plain_index(index)
        return record("getitem", self._data[index], (self,), (index,))


# The op table finds an op's forward here when its row names none: ``defvjp("exp", ...)`` -> ``Tensor.exp``.
_methods.update((name, f) for name, f in vars(Tensor).items() if callable(f) and not name.startswith("_"))


# ----------------------------------------------------------------------------- recording
def record(op: str, data: Any, parents: tuple[Tensor, ...], params: tuple = ()) -> Tensor:
    """Wrap the result ``data`` of op ``op`` applied to ``parents`` (and ``params``).

    The node keeps its parents only if recording is on and some parent requires grad
    (*pruning*): otherwise the result is a constant with no parents. Every op goes
    through here; to add a primitive, compute its value with NumPy, call ``record`` and
    register its VJP with :func:`~course_lib.tensor.defvjp`. A node notes the time of the clock of value
    changes, so the backward pass can tell whether its inputs changed since.
    """
    out = constant(data)
    if _grad_mode.get():
        for parent in parents:
            if parent.requires_grad:
                out.requires_grad = True
                out._parents = parents
                out._op = op
                out._params = params
                out._recorded = _now
                trace = _tracing.get()
                if trace is not None:
                    trace.adopt(out)
                return out
    if parents:
        trace = _tracing.get()
        if trace is not None and trace.sees(parents):
            # A traced or closed-over value: the program must compute it, even with recording off.
            out = _node(out, op, parents, params)
            if not _grad_mode.get() and any(p.requires_grad for p in parents):
                out = _node(record("", data, ()), "detach", (out,), ())  # no_grad(): no gradient flows back
    return out


def _node(out: Tensor, op: str, parents: tuple[Tensor, ...], params: tuple) -> Tensor:
    """``out`` made a node of the trace being recorded (see :func:`record`)."""
    out.requires_grad = True
    out._parents, out._op, out._params, out._recorded = parents, op, params, _now
    return _tracing.get().adopt(out)


def constant(data: Any) -> Tensor:
    """A Tensor of ``data`` that records nothing; a float64 array is not copied (the
    quick way to wrap results that are arrays already: ``jit`` does)."""
    if type(data) is not np.ndarray or data.dtype is not _FLOAT64:
        data = np.asarray(data, dtype=np.float64)
    out = wrap(data)
    trace = _tracing.get()
    if trace is not None:
        trace.created.add(id(out))  # made while tracing: a literal of the program, not a closed-over Tensor
    return out


def wrap(data: np.ndarray) -> Tensor:
    """:func:`constant` without its checks: ``data`` must be a float64 array, and no trace running."""
    out = _new_tensor(Tensor)
    out._data = data
    out.grad = None
    out.label = ""
    out._retains_grad = out._mask = out.requires_grad = False
    out._version = 0
    out._parents = out._params = ()
    out._op = ""
    return out


_new_tensor = Tensor.__new__


def _is_constant(x: Any) -> bool:
    """Whether ``x`` is a number or a real (bool, integer or float) array."""
    return isinstance(x, _NUMBERS) or (isinstance(x, np.ndarray) and x.dtype.kind in "biuf")


def _lift(x: Any) -> Tensor:
    """``x`` as a Tensor: numbers and real arrays become constants (copies, so the caller
    may go on changing the array); anything else is refused."""
    if isinstance(x, Tensor):
        return x
    return record("", np.array(x, dtype=np.float64), ()) if _is_constant(x) else NotImplemented


def _untensor(data: Any) -> Any:
    """``data`` with Tensors (also inside lists and tuples) replaced by their arrays, refusing
    to cut a Tensor that requires grad off the graph."""
    if isinstance(data, Tensor):
        if data.requires_grad and _grad_mode.get():
            raise ValueError(
                "a Tensor that requires grad cannot be copied into a new Tensor: that would cut it off the "
                "graph and its gradient would silently be lost. Use it as it is, stack([...]) to join "
                "several, or .detach() to cut it on purpose"
            )
        return data._data if type(data) is Tensor else np.asarray(data.data)  # a Tracer refuses .data
    if isinstance(data, (list, tuple)):
        return [_untensor(item) for item in data]
    return data


def _plain_index(index: Any) -> Any:
    """An index NumPy understands: a Tensor built from booleans is a mask, any other Tensor
    must hold whole numbers (Tensors store floats). Arrays are copied, so the caller may
    change theirs without changing the recorded node."""
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    if isinstance(index, Tensor):
        if _tracing.get() is not None:
            _tracing.get().index(index)
        if index._mask:
            return index._data.astype(bool)
        if not np.all(np.mod(index._data, 1) == 0):
            raise IndexError("a Tensor used as an index must hold whole numbers (or be built from a boolean mask)")
        return index._data.astype(np.intp)
    if isinstance(index, np.ndarray):
        return index.copy()
    if isinstance(index, list):
        array = np.array(index)
        return array if array.dtype.kind in "biu" else index
    return index


def _seed(output: Tensor, grad: Any, caller: str, keep_graph: bool = False) -> Tensor:
    """The gradient that starts a backward pass at ``output``, checked against its shape."""
    if grad is None:
        if output._data.size != 1:
            raise ValueError(
                f"{caller} on a Tensor of shape {output.shape} needs a seed gradient of that shape: "
                f"pass np.ones({output.shape}) to get the gradient of y.sum(), or reduce the output to a scalar first"
            )
        return record("", np.ones(output.shape), ())
    if isinstance(grad, Tensor):
        seed = grad if keep_graph else record("", grad._data.copy(), ())
    else:
        seed = record("", real_array(grad, caller + "'s seed").astype(np.float64), ())
    if seed.shape != output.shape:
        raise ValueError(
            f"{caller}: the seed gradient has shape {seed.shape} but the output has shape {output.shape}; "
            f"the seed must have exactly the output's shape (it is not broadcast), e.g. np.ones({output.shape})"
        )
    return seed
