"""Tensors: a NumPy reverse-mode engine whose derivative rules live in one table.

A :class:`Tensor` wraps a float64 ndarray (integer and boolean input is converted to
float64). An operation on tensors of which at least one requires gradients *records* a
node: the op's name (``._op``), its operand tensors (``._parents``) and any non-tensor
parameters such as an axis or an index (``._params``). Nothing else is stored: no
closure, no gradient code. The derivative of every op is written once, as a
vector-Jacobian product (VJP), in the table :data:`VJP_RULES`, filled with
:func:`defvjp` at the bottom of this module.

A VJP rule for argument ``i`` of an op is a function ``rule(g, out, *args)``: ``g`` is
the gradient arriving at the op's output ``out`` and ``args`` are the op's parents
followed by its parameters; it returns ``g`` pulled back to argument ``i`` (a Tensor
of that argument's shape). Rules are written with Tensor operations, so the backward
pass can either

- run them with graph recording switched off (``backward()``, the fast path: the same
  rules, but no nodes are created), or
- record them like any other computation (``gradients(..., create_graph=True)``, used
  by :mod:`course_lib.functional`), which is what makes higher derivatives work: the
  gradient is itself a Tensor with a graph, ready to be differentiated again.

The backward pass visits nodes in Autograd's child-count order
(:func:`course_lib.toposort.child_count_order`), iteratively, so graphs of any depth work.

**No silently wrong gradients.** A Tensor's array is never changed in place: ``.data``
and ``.numpy()`` hand out read-only arrays, inputs are copied, and the only way to
change a Tensor's values is to assign ``t.data = ...``, which bumps its *version*. Every
node remembers when it was recorded; if one of its inputs (or the node itself) got new
values after that, ``backward()`` raises instead of using them, as PyTorch does
("modified by an inplace operation"). A rule registered as first-order (``order=1``,
written with NumPy) is differentiated once; differentiating its result again raises.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from functools import partial
from operator import attrgetter
from typing import Any

import numpy as np

from course_lib.toposort import child_count_order

__all__ = [
    "Tensor",
    "no_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "record",
    "defvjp",
    "defvjp_argnum",
    "OPS",
    "Op",
    "VJP_RULES",
    "unbroadcast",
    "gradients",
    "affine",
    "where",
    "stack",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "relu",
    "sigmoid",
    "sqrt",
    "softmax",
    "log_softmax",
]

_FLOAT64 = np.dtype(np.float64)
_NUMBERS = (int, float, np.integer, np.floating, np.bool_)
_parents_of = attrgetter("_parents")
_now = 0
"""The clock of value changes: bumped by every ``t.data = ...``; a node records its value when created."""


# ----------------------------------------------------------------------------- grad mode
# Per thread (and per asyncio task), as in PyTorch: one thread's no_grad() never switches
# recording off in another. A new thread starts with recording on.
_grad_mode: ContextVar[bool] = ContextVar("course_lib_grad_mode", default=True)


class set_grad_enabled:
    """Context manager that switches graph recording on (``True``) or off (``False``)
    for the ``with`` block, then restores the previous mode."""

    __slots__ = ("mode", "tokens")

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.tokens: list = []

    def __enter__(self) -> None:
        self.tokens.append(_grad_mode.set(self.mode))

    def __exit__(self, *exc_info: object) -> None:
        _grad_mode.reset(self.tokens.pop())


def no_grad() -> set_grad_enabled:
    """``with no_grad(): ...`` computes values only: results record no parents and do not
    require grad (use it for parameter updates and evaluation)."""
    return set_grad_enabled(False)


def is_grad_enabled() -> bool:
    """Whether operations currently record the graph."""
    return _grad_mode.get()


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
            if not (self.requires_grad and _grad_mode.get()):
                return record(op, fn(self._data, other), ())  # no node, so no need to wrap the constant
            other = _lift(other)  # a copy: the caller may change their array later
        return record(op, fn(self._data, other._data), (self, other))

    def reflected(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            if not _is_constant(other):
                return NotImplemented
            if not (self.requires_grad and _grad_mode.get()):
                return record(op, fn(other, self._data), ())
            other = _lift(other)  # a copy: the caller may change their array later
        return record(op, fn(other._data, self._data), (other, self))

    return method, reflected


def _broadcasting(symbol: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable:
    """``fn`` with an error that says what to do when the operands' shapes do not broadcast."""

    def apply(a: Any, b: Any) -> np.ndarray:
        try:
            return fn(a, b)
        except ValueError:
            if _broadcastable(np.shape(a), np.shape(b)):
                raise
            raise ValueError(
                f"shapes {np.shape(a)} and {np.shape(b)} do not broadcast for '{symbol}': axes are matched "
                "from the right and each pair must be equal or 1; reshape an operand so they line up "
                "(e.g. x[:, None] for a column, x.reshape(1, -1) for a row)"
            ) from None

    return apply


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(m == n or 1 in (m, n) for m, n in zip(a[::-1], b[::-1]))


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.matmul(a, b)
    except ValueError:
        pass
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"matmul needs operands with at least one axis, got shapes {a.shape} and {b.shape}: "
            "use * to scale by a number"
        )
    inner = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if a.shape[-1] != inner:
        which = "first" if b.ndim == 1 else "second-to-last"
        raise ValueError(
            f"matmul shapes {a.shape} and {b.shape} do not fit: the last axis of the left operand "
            f"({a.shape[-1]}) must equal the {which} axis of the right operand ({inner})"
        )
    raise ValueError(
        f"matmul shapes {a.shape} and {b.shape} do not fit: "
        f"their batch axes {a.shape[:-2]} and {b.shape[:-2]} do not broadcast"
    )


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
        array = _real_array(_untensor(data), "Tensor()")
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
        self._data = _real_array(_untensor(values), ".data").astype(np.float64)
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
        """A Tensor with the same values, cut off from the graph (requires no grad)."""
        return record("", self._data, ())

    def retain_grad(self) -> Tensor:
        """Make backward passes also store this intermediate node's gradient in ``.grad``
        (replaced, not accumulated, at every pass: intermediates are never double-counted).
        Returns the Tensor itself."""
        self._retains_grad = True
        return self

    def zero_grad(self) -> None:
        """Set the accumulated gradient to zeros of this Tensor's shape."""
        self.grad = np.zeros_like(self._data)

    # -- backward ---------------------------------------------------------------------
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
        if not self.requires_grad:
            raise RuntimeError(
                "backward() on a Tensor that does not require grad: no input of its computation had "
                "requires_grad=True (or it was computed under no_grad()). Create the inputs with "
                "Tensor(data, requires_grad=True)."
            )
        _backprop(self, _seed(self, grad, "backward()"), create_graph=False, on_grad=_store_grad)

    # -- arithmetic (each op: compute the value with NumPy, record the node) ------------
    __add__, __radd__ = _binary_methods("add", _broadcasting("+", np.add))
    __sub__, __rsub__ = _binary_methods("sub", _broadcasting("-", np.subtract))
    __mul__, __rmul__ = _binary_methods("mul", _broadcasting("*", np.multiply))
    __truediv__, __rtruediv__ = _binary_methods("div", _broadcasting("/", np.divide))
    __pow__, __rpow__ = _binary_methods("pow", _broadcasting("**", np.power))
    __matmul__, __rmatmul__ = _binary_methods("matmul", _matmul)

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

    def clip(self, low: float | None = None, high: float | None = None) -> Tensor:
        """Values limited to ``[low, high]`` (``None``: no limit on that side)."""
        low = -np.inf if low is None else float(low)
        high = np.inf if high is None else float(high)
        return record("clip", np.clip(self._data, low, high), (self,), (low, high))

    # -- reductions ----------------------------------------------------------------------
    def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """Sum over ``axis`` (all axes by default); the sum of nothing is 0."""
        axis = _axes(axis, self._data.ndim, "sum")
        return record("sum", self._data.sum(axis=axis, keepdims=keepdims), (self,), (axis, keepdims))

    def mean(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """Mean over ``axis``; as in NumPy, the mean of nothing is NaN, with a RuntimeWarning."""
        axis = _axes(axis, self._data.ndim, "mean")
        return record("mean", self._data.mean(axis=axis, keepdims=keepdims), (self,), (axis, keepdims))

    def max(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """Largest values; tied maxima share the gradient equally."""
        axis = _axes(axis, self._data.ndim, "max")
        if self._data.size == 0:
            raise ValueError(f"max() of an empty Tensor (shape {self.shape}) has no value: there is nothing to compare")
        return record("max", self._data.max(axis=axis, keepdims=keepdims), (self,), (axis, keepdims))

    def softmax(self, axis: int = -1) -> Tensor:
        """exp(x) / sum(exp(x)) along ``axis``, computed after subtracting the maximum."""
        axis = _axes(axis, self._data.ndim, "softmax")
        e = np.exp(self._data - self._data.max(axis=axis, keepdims=True))
        return record("softmax", e / e.sum(axis=axis, keepdims=True), (self,), (axis,))

    def log_softmax(self, axis: int = -1) -> Tensor:
        """x - log(sum(exp(x))) along ``axis``, computed after subtracting the maximum."""
        axis = _axes(axis, self._data.ndim, "log_softmax")
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
            tuple(range(ndim - 1, -1, -1)) if not axes else tuple(int(a) % ndim for a in _axes(axes, ndim, "transpose"))
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
        index = _plain_index(index)
        return record("getitem", self._data[index], (self,), (index,))


# ----------------------------------------------------------------------------- recording
def record(op: str, data: Any, parents: tuple[Tensor, ...], params: tuple = ()) -> Tensor:
    """Wrap the result ``data`` of op ``op`` applied to ``parents`` (and ``params``).

    The node keeps its parents only if recording is on and some parent requires grad
    (*pruning*): otherwise the result is a constant with no parents. Every op goes
    through here; to add a primitive, compute its value with NumPy, call ``record`` and
    register its VJP with :func:`defvjp`. A node notes the time of the clock of value
    changes, so the backward pass can tell whether its inputs changed since.
    """
    out = Tensor.__new__(Tensor)
    if type(data) is not np.ndarray or data.dtype is not _FLOAT64:
        data = np.asarray(data, dtype=np.float64)
    out._data = data
    out.grad = None
    out.label = ""
    out._retains_grad = out._mask = False
    out._version = 0
    if _grad_mode.get():
        for parent in parents:
            if parent.requires_grad:
                out.requires_grad = True
                out._parents = parents
                out._op = op
                out._params = params
                out._recorded = _now
                return out
    out.requires_grad = False
    out._parents = ()
    out._op = ""
    out._params = ()
    return out


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
        return data._data
    if isinstance(data, (list, tuple)):
        return [_untensor(item) for item in data]
    return data


def _real_array(data: Any, where: str) -> np.ndarray:
    """``data`` as an array of real numbers (bool, integer or float), or a clear TypeError."""
    array = np.asarray(data)
    if array.dtype.kind not in "biuf":
        kind = "complex numbers" if array.dtype.kind == "c" else f"{type(data).__name__} (dtype {array.dtype})"
        raise TypeError(
            f"{where} needs real numbers (numbers, nested lists or real arrays), got {kind}"
            + (
                ": pass the real and imaginary parts as separate Tensors"
                if array.dtype.kind == "c"
                else ": convert text with float(...) first"
                if array.dtype.kind in "US"
                else ""
            )
        )
    return array


def _plain_index(index: Any) -> Any:
    """An index NumPy understands: a Tensor built from booleans is a mask, any other Tensor
    must hold whole numbers (Tensors store floats). Arrays are copied, so the caller may
    change theirs without changing the recorded node."""
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    if isinstance(index, Tensor):
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


def _axes(axis: Any, ndim: int, op: str) -> Any:
    """``axis`` (None, an int or a tuple of ints) checked against ``ndim`` axes, negative ones
    counted from the end; out of range is an error, never wrapped around."""
    if axis is None:
        return None
    for a in axis if isinstance(axis, tuple) else (axis,):
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise np.exceptions.AxisError(
                f"{op}: axis {a!r} is out of range for a Tensor with {ndim} axes (use 0..{ndim - 1} or -{ndim}..-1)"
            )
    return axis


# ----------------------------------------------------------------------------- functions
def where(condition: Any, x: Any, y: Any) -> Tensor:
    """``x`` where ``condition`` holds, else ``y`` (broadcast like ``np.where``).

    ``condition`` is a boolean array (it is not differentiated); ``x`` and ``y`` are
    Tensors or numbers.
    """
    cond = np.array(condition._data if isinstance(condition, Tensor) else condition, dtype=bool)
    x, y = _lift(x), _lift(y)
    if x is NotImplemented or y is NotImplemented:
        raise TypeError("where(condition, x, y) needs x and y to be Tensors, numbers or real arrays")
    return record("where", np.where(cond, x._data, y._data), (x, y), (cond,))


def stack(tensors: Iterable[Any], axis: int = 0) -> Tensor:
    """Join equally shaped Tensors along a new axis (like ``np.stack``)."""
    parts = tuple(_lift(t) for t in tensors)
    if not parts or any(p is NotImplemented for p in parts):
        raise TypeError("stack() needs a non-empty sequence of Tensors (or numbers / real arrays)")
    axis = _axes(axis, parts[0].ndim + 1, "stack") % (parts[0].ndim + 1)
    return record("stack", np.stack([p._data for p in parts], axis=axis), parts, (axis,))


def affine(x: Any, weight: Any, bias: Any) -> Tensor:
    """``x @ weight + bias`` as one op, like PyTorch's ``addmm``: the bias is added in place
    into the product's fresh buffer, so the graph gets one node and one array fewer.
    Its VJP is the matmul's for ``x`` and ``weight`` and the add's for ``bias``."""
    x, weight, bias = _lift(x), _lift(weight), _lift(bias)
    if x is NotImplemented or weight is NotImplemented or bias is NotImplemented:
        raise TypeError("affine(x, weight, bias) needs Tensors, numbers or real arrays")
    data = _matmul(x._data, weight._data)
    if np.ndim(data) and np.broadcast_shapes(data.shape, bias._data.shape) == data.shape:
        data += bias._data
    else:  # the bias has more axes than the product, or the product is a number
        data = data + bias._data
    return record("affine", data, (x, weight, bias))


def _tensor_function(name: str) -> Callable[..., Tensor]:
    def function(x: Any, *args: Any, **kwargs: Any) -> Tensor:
        x = _lift(x)
        if x is NotImplemented:
            raise TypeError(f"{name}() needs a Tensor, a number or a real array")
        return getattr(x, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}`` of a Tensor (numbers and arrays are converted): the same as ``Tensor.{name}``."
    return function


exp, log, sin, cos, tanh, relu, sigmoid, sqrt, softmax, log_softmax = map(
    _tensor_function, ["exp", "log", "sin", "cos", "tanh", "relu", "sigmoid", "sqrt", "softmax", "log_softmax"]
)


# ----------------------------------------------------------------------------- backward pass
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
        seed = record("", _real_array(grad, caller + "'s seed").astype(np.float64), ())
    if seed.shape != output.shape:
        raise ValueError(
            f"{caller}: the seed gradient has shape {seed.shape} but the output has shape {output.shape}; "
            f"the seed must have exactly the output's shape (it is not broadcast), e.g. np.ones({output.shape})"
        )
    return seed


def _backprop(
    root: Tensor,
    seed: Tensor,
    create_graph: bool,
    on_grad: Callable[[Tensor, Tensor, bool], None],
    needed: set[int] | None = None,
) -> None:
    """The reverse sweep shared by :meth:`Tensor.backward` and :func:`gradients`.

    Nodes come output first, each one after all of its children, so its gradient is
    complete when it is reached; ``on_grad(node, g, owned)`` then receives it (``owned``:
    the array was allocated by this sweep and is referenced nowhere else). A node whose
    inputs (or itself) got new values since it was recorded is an error. The node's
    VJP rules pull ``g`` back to every parent that requires grad (and, if ``needed``
    is given, leads to a node in it). A parent reached along several paths gets the
    sum: a fresh buffer, into which later contributions are added in place.
    """
    grads: dict[int, Tensor] = {id(root): seed}
    owned: set[int] = set()  # ids of nodes whose buffer is ours to add into in place
    with set_grad_enabled(create_graph):
        for node in child_count_order(root, _parents_of):
            g = grads.pop(id(node), None)
            if g is None:
                continue  # a constant, or a node that does not lead to what is needed
            on_grad(node, g, id(node) in owned)
            parents = node._parents
            if not parents:
                continue
            op = OPS.get(node._op)
            if op is None:
                raise NotImplementedError(
                    f"no VJP rule for op {node._op!r}: register one with defvjp({node._op!r}, ...)"
                )
            recorded = node._recorded
            if node._version > recorded:
                raise _changed(node, node)
            args = parents + node._params
            for i, parent in enumerate(parents):
                if parent._version > recorded:
                    raise _changed(node, parent, i)
                key = id(parent)
                if not parent.requires_grad or (needed is not None and key not in needed):
                    continue
                try:
                    rule = op.rules[i]
                except IndexError:
                    raise NotImplementedError(
                        f"op {node._op!r} has no VJP rule for argument {i}: give defvjp one rule per argument"
                    ) from None
                result = rule(g, node, *args)
                if type(result) is Tensor and result._data.shape == parent._data.shape:
                    contribution = result
                else:
                    contribution = _checked(result, i, node)
                if create_graph and (op.order == 1 or type(result) is not Tensor):
                    # A rule written with NumPy: its result is right, but it has no graph of its own.
                    contribution = record("first_order", contribution._data, (g,) + parents, (node._op,))
                previous = grads.get(key)
                if previous is None:
                    grads[key] = contribution
                    # A rule returns g itself, a view (its base is set) or a new array: only the last is ours.
                    data = contribution._data
                    if not create_graph and data is not g._data and data.base is None:
                        owned.add(key)
                elif key in owned:
                    previous._data += contribution._data
                else:
                    grads[key] = previous + contribution
                    if not create_graph:
                        owned.add(key)


def _changed(node: Tensor, changed: Tensor, i: int | None = None) -> RuntimeError:
    """The error for a node whose input ``i`` (or, with ``i`` None, the node itself) got new values."""
    which = "its output" if i is None else f"its input {i}"
    name = f"{changed.label!r}, " if changed.label else ""
    return RuntimeError(
        f"a Tensor needed to differentiate op {node._op!r} has been modified by an in-place change: {which} "
        f"({name}shape {changed.shape}) got new values (t.data = ...) after the op was recorded, so the "
        "gradient would be computed with the wrong values. Run the forward pass again after changing "
        "values (e.g. call the optimizer's step() only after backward())"
    )


def _checked(result: Any, i: int, node: Tensor) -> Tensor:
    """A rule's result as a Tensor of argument ``i``'s shape, or a clear error."""
    result = _lift(result)
    if result is NotImplemented:
        raise TypeError(f"the VJP rule of {node._op!r} for argument {i} must return a Tensor")
    expected = node._parents[i]._data.shape
    if result._data.shape != expected:
        raise ValueError(
            f"the VJP rule of {node._op!r} for argument {i} returned shape {result._data.shape}, but that argument "
            f"has shape {expected}: a gradient has its variable's shape (did the rule forget unbroadcast?)"
        )
    return result


def _store_grad(node: Tensor, g: Tensor, owned: bool) -> None:
    """``backward()``'s use of a finished gradient: leaves accumulate it, retained intermediates keep it."""
    if node._parents:
        if node._retains_grad:  # a copy: g may travel on to the parents (add passes it through)
            node.grad = g._data.copy()
    elif node.grad is None:
        node.grad = g._data if owned else g._data.copy()
    else:
        node.grad = node.grad + g._data


def gradients(
    output: Tensor, inputs: Sequence[Tensor], seed: Any = None, create_graph: bool = False, allow_unused: bool = False
) -> tuple[Tensor, ...]:
    """The gradients of ``output`` with respect to ``inputs``, returned as Tensors.

    Like ``torch.autograd.grad``: nothing's ``.grad`` changes and only paths leading to
    ``inputs`` are followed. An input the output does not depend on is an error (its
    gradient would be zeros, most often because the computation left the graph); with
    ``allow_unused=True`` it gets zeros. ``seed`` is as in :meth:`Tensor.backward` (a
    Tensor seed that requires grad is kept in the graph). With ``create_graph=True`` the
    VJP rules are recorded, so the results carry a graph and can be differentiated again.
    """
    inputs = tuple(inputs)
    for x in inputs:
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise ValueError("gradients() needs inputs that are Tensors with requires_grad=True")
    seed = _seed(output, seed, "gradients()", keep_graph=create_graph)
    order = child_count_order(output, _parents_of) if output.requires_grad else []
    wanted = {id(x) for x in inputs}
    needed = set(wanted)
    for node in reversed(order):  # parents first: does the node lead to an input?
        if any(id(p) in needed for p in node._parents):
            needed.add(id(node))
    reached = {id(node) for node in order}
    unused = [i for i, x in enumerate(inputs) if id(x) not in reached]
    if unused and not allow_unused:
        x = inputs[unused[0]]
        raise ValueError(
            f"the output does not depend on input {unused[0]} ({f'{x.label!r}, ' if x.label else ''}shape {x.shape}): "
            "no recorded operation leads from it to the output, so its gradient would be zero everywhere. Usually "
            "the computation left the graph (.item(), float(), .data, .numpy(), Tensor(...) of a Tensor) or ran "
            "under no_grad(). If the output really does not depend on it, pass allow_unused=True to get zeros"
        )
    found: dict[int, Tensor] = {}

    def collect(node: Tensor, g: Tensor, owned: bool) -> None:
        if id(node) in wanted:
            found[id(node)] = g if owned or create_graph else record("", g._data.copy(), ())

    if id(output) in needed:
        _backprop(output, seed, create_graph, collect, needed)
    return tuple(found[id(x)] if id(x) in found else record("", np.zeros(x.shape), ()) for x in inputs)


def unbroadcast(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape``: the VJP of broadcasting.

    Broadcasting copies a value along the leading axes it adds and along axes where
    ``shape`` has size 1; each copy sends back a gradient, so those axes are summed.
    """
    g_shape = g.shape
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g_shape[lead + i] != 1)
    return g.sum(axis=axes).reshape(shape)


# ----------------------------------------------------------------------------- the op table
Sample = Callable[[np.random.Generator], tuple[list[np.ndarray], dict[str, Any]]]
"""Draws test inputs of an op: its argument arrays and its keyword parameters."""


class Op:
    """One row of the op table :data:`OPS`: everything the engine and its tests know about an op.

    - ``rules``: the VJP, ``rules[i](g, out, *parents, *params)`` for argument ``i``;
    - ``order``: ``None`` for rules written with Tensor operations (differentiable to any
      order), ``1`` for rules written with NumPy (differentiable once; a second
      derivative through them raises);
    - ``call(*tensors, **params)``: applies the op, as a user would;
    - ``sample(rng)``: random inputs from the op's domain, for the tests;
    - ``torch``: PyTorch's counterpart for the oracle test, a function name or
      ``f(torch, *tensors, **params)``; ``None`` when PyTorch has none.
    """

    __slots__ = ("name", "rules", "order", "call", "sample", "torch")

    def __init__(
        self,
        name: str,
        rules: Any,
        order: int | None,
        call: Callable[..., Tensor] | None,
        sample: Sample | None,
        torch: str | Callable | None,
    ) -> None:
        self.name, self.rules, self.order, self.call, self.sample, self.torch = name, rules, order, call, sample, torch

    def __repr__(self) -> str:
        return f"Op({self.name!r}" + (", order=1)" if self.order == 1 else ")")


OPS: dict[str, Op] = {}
"""op name -> :class:`Op`. A rule returns ``g`` itself, a view of ``g`` or a new Tensor,
never one it keeps elsewhere (the backward pass adds into new ones in place)."""
VJP_RULES = OPS
"""The op table under the name the chapters use for it (the same dict as :data:`OPS`)."""


def defvjp(
    op: str,
    *rules: Callable[..., Tensor],
    order: int | None = None,
    call: Callable[..., Tensor] | None = None,
    sample: Sample | None = None,
    torch: str | Callable | None = "",
) -> None:
    """Register ``op`` in the table: its VJP rules, one per argument, in argument order.

    ``order=1`` declares rules written with NumPy (first derivatives only). ``call``
    defaults to the Tensor method or ``operator`` module's function of that name, ``sample`` to
    arguments that broadcast against each other with values in [-2, 2], and ``torch`` to
    PyTorch's function of the same name. Every registered op is checked by the op-table
    test (gradients, second derivatives, PyTorch), so a wrong rule cannot go unnoticed.
    """
    _register(op, rules, order, call, sample or elementwise(*[(-2.0, 2.0)] * len(rules)), torch)


def _register(
    op: str,
    rules: Any,
    order: int | None,
    call: Callable[..., Tensor] | None,
    sample: Sample | None,
    torch: str | Callable | None,
) -> None:
    call = call or getattr(Tensor, op, None) or getattr(operator, op, None)
    OPS[op] = Op(op, rules, order, call, sample, op if torch == "" else torch)


class _EveryArgument:
    """The rules of an op with any number of arguments: argument ``i`` uses ``rule(i, g, out, *args)``."""

    def __init__(self, rule: Callable[..., Tensor]) -> None:
        self.rule = rule

    def __getitem__(self, i: int) -> Callable[..., Tensor]:
        return partial(self.rule, i)


def defvjp_argnum(
    op: str,
    rule: Callable[..., Tensor],
    order: int | None = None,
    call: Callable[..., Tensor] | None = None,
    sample: Sample | None = None,
    torch: str | Callable | None = "",
) -> None:
    """Register one rule ``rule(i, g, out, *args)`` serving every argument ``i`` of ``op``
    (an op with any number of arguments); the keywords are those of :func:`defvjp`."""
    _register(op, _EveryArgument(rule), order, call, sample, torch)


# ----------------------------------------------------------------------------- test domains
def _shape(rng: np.random.Generator, min_dims: int = 0, max_dims: int = 3) -> tuple[int, ...]:
    return tuple(int(n) for n in rng.integers(1, 4, rng.integers(min_dims, max_dims + 1)))


def elementwise(*ranges: tuple[float, float]) -> Sample:
    """Arguments whose shapes broadcast against each other (leading axes left out, axes of
    size 1), argument ``i`` uniform in ``ranges[i]``."""

    def sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
        full = _shape(rng)
        arrays = []
        for k, (low, high) in enumerate(ranges):
            shape = (
                full
                if k == 0
                else tuple(1 if rng.random() < 0.3 else n for n in full[rng.integers(0, len(full) + 1) :])
            )
            arrays.append(rng.uniform(low, high, shape))
        return arrays, {}

    return sample


def _random_axis(rng: np.random.Generator, ndim: int) -> int | tuple[int, ...] | None:
    """None, one axis (maybe negative) or a tuple of distinct axes of an array with ``ndim`` axes."""
    kind = rng.integers(0, 3)
    if kind == 0 or ndim == 0:
        return None
    if kind == 1:
        return int(rng.integers(-ndim, ndim))
    return tuple(int(a) for a in rng.choice(ndim, rng.integers(1, ndim + 1), replace=False))


def reduction(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One array, an axis (None, one or several) and keepdims."""
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {
        "axis": _random_axis(rng, len(shape)),
        "keepdims": bool(rng.integers(0, 2)),
    }


def along_axis(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    """One array and one axis (softmax and friends)."""
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {"axis": int(rng.integers(-len(shape), len(shape)))}


def _matmul_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, k, m, batch = (int(v) for v in rng.integers(1, 4, 4))
    a_shape, b_shape = [
        ((k,), (k, m)),
        ((n, k), (k,)),
        ((n, k), (k, m)),
        ((batch, n, k), (k, m)),
        ((batch, n, k), (1, k, m)),
        ((k,), (batch, k, m)),
    ][rng.integers(0, 6)]
    return [rng.uniform(-2.0, 2.0, a_shape), rng.uniform(-2.0, 2.0, b_shape)], {}


def _affine_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, k, m = (int(v) for v in rng.integers(1, 4, 3))
    x_shape = (n, k) if rng.integers(0, 2) else (k,)
    return [rng.uniform(-2.0, 2.0, s) for s in (x_shape, (k, m), (m,))], {}


def _reshape_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng, 1)
    return [rng.uniform(-2.0, 2.0, shape)], {"shape": (-1,) if rng.integers(0, 2) else shape[::-1]}


def _transpose_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng, 2)
    return [rng.uniform(-2.0, 2.0, shape)], {"axes": tuple(int(a) for a in rng.permutation(len(shape)))}


def _broadcast_to_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    target = (2,) + _shape(rng, 1)
    shape = tuple(1 if rng.random() < 0.5 else n for n in target[1:])
    return [rng.uniform(-2.0, 2.0, shape)], {"shape": target}


def _index(rng: np.random.Generator, shape: tuple[int, int]) -> Any:
    """An index into an array of ``shape``: repeated integers, a slice, a mask or a mix."""
    kind = rng.integers(0, 4)
    if kind == 0:
        return (rng.integers(0, shape[0], 4),)  # repeats: their gradients add up
    if kind == 1:
        return (slice(1, None), rng.integers(0, shape[1], 2))
    if kind == 2:
        return (rng.random(shape) < 0.5,)
    return (int(rng.integers(0, shape[0])), slice(None, None, 2))


def _getitem_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = (3, 4)
    return [rng.uniform(-2.0, 2.0, shape)], {"index": _index(rng, shape)}


def _scatter_add_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = (3, 4)
    index = _index(rng, shape)
    return [rng.uniform(-2.0, 2.0, np.zeros(shape)[index].shape)], {"index": index, "shape": shape}


def _where_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    arrays, _ = elementwise((-2.0, 2.0), (-2.0, 2.0))(rng)
    return arrays, {"cond": rng.random(arrays[0].shape) < 0.5}


def _stack_sample(rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = _shape(rng)
    return [rng.uniform(-2.0, 2.0, shape) for _ in range(rng.integers(1, 4))], {
        "axis": int(rng.integers(-len(shape) - 1, len(shape) + 1))
    }


def _torch_axis(a: Any, axis: Any) -> Any:
    """PyTorch's ``dim`` for a NumPy ``axis`` (``None``: every axis)."""
    return tuple(range(a.ndim)) if axis is None else axis


def _kept_shape(shape: tuple[int, ...], axis: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """``shape`` after a reduction over ``axis`` with ``keepdims=True``."""
    if axis is None:
        return (1,) * len(shape)
    axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _expand(g: Tensor, shape: tuple[int, ...], axis: Any, keepdims: bool) -> Tensor:
    """Undo a reduction's shape: put the reduced axes back (size 1), then broadcast to ``shape``."""
    if not keepdims:
        g = g.reshape(_kept_shape(shape, axis))
    return g.broadcast_to(shape)


def _max_vjp(g: Tensor, out: Tensor, a: Tensor, axis: Any, keepdims: bool) -> Tensor:
    peak = out.data if keepdims else out.data.reshape(_kept_shape(a.shape, axis))
    hits = a.data == peak
    return _expand(g, a.shape, axis, keepdims) * (hits / hits.sum(axis=axis, keepdims=True))


def _matmul_vjp(argnum: int, g: Tensor, out: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """dA = G Bᵀ and dB = Aᵀ G, on the last two axes, summed over broadcast batch axes.

    A 1-D left operand acts as a row (1, k) and a 1-D right operand as a column (k, 1);
    ``g`` gets the matching size-1 axis back first.
    """
    if a.ndim == 1 or b.ndim == 1:
        shape = g.shape + (1,) if b.ndim == 1 else g.shape
        shape = shape[:-1] + (1,) + shape[-1:] if a.ndim == 1 else shape
        g = g.reshape(shape)
        a, b = (a.reshape(1, -1) if a.ndim == 1 else a), (b.reshape(-1, 1) if b.ndim == 1 else b)
    if argnum == 0:
        return unbroadcast(g @ b.mT, a.shape).reshape(out._parents[0].shape)
    return unbroadcast(a.mT @ g, b.shape).reshape(out._parents[1].shape)


def _pow_vjp_base(g: Tensor, out: Tensor, a: Tensor, b: Tensor) -> Tensor:
    if not b.requires_grad and not b.data.any():
        # a ** 0 is constant. (The formula would give 0 * a ** -1: NaN at a = 0, which is
        # where the third derivative of x ** 2 lands, since its second one is 2 * x ** 0.)
        return record("", np.zeros(a.shape), ())
    return unbroadcast(g * b * a ** (b - 1), a.shape)


def _stack_vjp(i: int, g: Tensor, out: Tensor, *args: Any) -> Tensor:
    axis = args[-1]  # args: the stacked tensors, then the axis
    return g[(slice(None),) * axis + (i,)]


def _first_order_vjp(i: int, g: Tensor, out: Tensor, *args: Any) -> Tensor:
    raise RuntimeError(
        f"op {args[-1]!r} has a first-order VJP rule (registered with order=1, or a rule that returns a NumPy "
        "array): its gradient can be computed but not differentiated again, so this second derivative (or "
        "jvp) is not available. Write the rule with Tensor operations to get higher derivatives"
    )


def _scatter_add(g: Tensor, index: Any, shape: tuple[int, ...]) -> Tensor:
    """A zero array of ``shape`` with ``g`` added at ``index`` (repeated indices add up)."""
    data = np.zeros(shape)
    np.add.at(data, index, g._data)
    return record("scatter_add", data, (g,), (index, shape))


# fmt: off  (one row per op, the rules of its arguments aligned)
defvjp("add", lambda g, out, a, b: unbroadcast(g, a.shape), lambda g, out, a, b: unbroadcast(g, b.shape))
defvjp("sub", lambda g, out, a, b: unbroadcast(g, a.shape), lambda g, out, a, b: unbroadcast(-g, b.shape))
defvjp("mul", lambda g, out, a, b: unbroadcast(g * b, a.shape), lambda g, out, a, b: unbroadcast(g * a, b.shape))
defvjp(
    "div",
    lambda g, out, a, b: unbroadcast(g / b, a.shape),
    lambda g, out, a, b: unbroadcast(-g * out / b, b.shape),
    call=operator.truediv,
    sample=elementwise((-2.0, 2.0), (0.5, 2.0)),
)
defvjp(
    "pow",
    _pow_vjp_base,
    lambda g, out, a, b: unbroadcast(g * out * a.log(), b.shape),
    sample=elementwise((0.5, 2.0), (-2.0, 2.0)),
)
defvjp("matmul", partial(_matmul_vjp, 0), partial(_matmul_vjp, 1), sample=_matmul_sample)
defvjp(
    "affine",
    lambda g, out, x, weight, bias: _matmul_vjp(0, g, out, x, weight),
    lambda g, out, x, weight, bias: _matmul_vjp(1, g, out, x, weight),
    lambda g, out, x, weight, bias: unbroadcast(g, bias.shape),
    call=affine,
    sample=_affine_sample,
    torch=lambda torch, x, weight, bias: x @ weight + bias,
)
defvjp("neg", lambda g, out, a: -g)
defvjp("exp", lambda g, out, a: g * out)
defvjp("log", lambda g, out, a: g / a, sample=elementwise((0.1, 4.0)))
defvjp("sin", lambda g, out, a: g * a.cos())
defvjp("cos", lambda g, out, a: -g * a.sin())
defvjp("tanh", lambda g, out, a: g * (1.0 - out * out))
defvjp("sigmoid", lambda g, out, a: g * out * (1.0 - out))
defvjp("relu", lambda g, out, a: g * (a.data > 0))
defvjp("sqrt", lambda g, out, a: g / (2.0 * out), sample=elementwise((0.1, 4.0)))
defvjp("abs", lambda g, out, a: g * np.sign(a.data))
defvjp(
    "clip",
    lambda g, out, a, low, high: g * ((a.data >= low) & (a.data <= high)),
    sample=lambda rng: (elementwise((-2.0, 2.0))(rng)[0], {"low": -1.0, "high": 0.5}),
    torch=lambda torch, a, low, high: torch.clamp(a, low, high),
)
defvjp(
    "where",
    lambda g, out, x, y, cond: unbroadcast(where(cond, g, 0.0), x.shape),
    lambda g, out, x, y, cond: unbroadcast(where(cond, 0.0, g), y.shape),
    call=lambda x, y, cond: where(cond, x, y),
    sample=_where_sample,
    torch=lambda torch, x, y, cond: torch.where(torch.as_tensor(cond), x, y),
)
defvjp(
    "sum",
    lambda g, out, a, axis, keepdims: _expand(g, a.shape, axis, keepdims),
    sample=reduction,
    torch=lambda torch, a, axis, keepdims: torch.sum(a, dim=_torch_axis(a, axis), keepdim=keepdims),
)
defvjp(
    "mean",
    lambda g, out, a, axis, keepdims: _expand(g, a.shape, axis, keepdims) * (out.size / max(a.size, 1)),
    sample=reduction,
    torch=lambda torch, a, axis, keepdims: torch.mean(a, dim=_torch_axis(a, axis), keepdim=keepdims),
)
defvjp(
    "max",
    _max_vjp,
    sample=reduction,
    torch=lambda torch, a, axis, keepdims: torch.amax(a, dim=_torch_axis(a, axis), keepdim=keepdims),
)
defvjp(
    "softmax",
    lambda g, out, a, axis: out * (g - (g * out).sum(axis=axis, keepdims=True)),
    sample=along_axis,
    torch=lambda torch, a, axis: torch.softmax(a, dim=axis),
)
defvjp(
    "log_softmax",
    lambda g, out, a, axis: g - out.exp() * g.sum(axis=axis, keepdims=True),
    sample=along_axis,
    torch=lambda torch, a, axis: torch.log_softmax(a, dim=axis),
)
defvjp(
    "reshape",
    lambda g, out, a: g.reshape(a.shape),
    call=lambda a, shape: a.reshape(shape),
    sample=_reshape_sample,
    torch=lambda torch, a, shape: a.reshape(shape),
)
defvjp(
    "transpose",
    lambda g, out, a, axes: g.transpose(*np.argsort(axes)),
    call=lambda a, axes: a.transpose(axes),
    sample=_transpose_sample,
    torch=lambda torch, a, axes: a.permute(axes),
)
defvjp(
    "broadcast_to",
    lambda g, out, a: unbroadcast(g, a.shape),
    call=lambda a, shape: a.broadcast_to(shape),
    sample=_broadcast_to_sample,
    torch=lambda torch, a, shape: a.broadcast_to(shape),
)
defvjp(
    "getitem",
    lambda g, out, a, index: _scatter_add(g, index, a.shape),
    call=lambda a, index: a[index],
    sample=_getitem_sample,
    torch=lambda torch, a, index: a[tuple(torch.as_tensor(i) if isinstance(i, np.ndarray) else i for i in index)],
)
defvjp(
    "scatter_add", lambda g, out, src, index, shape: g[index], call=_scatter_add, sample=_scatter_add_sample, torch=None
)
defvjp("identity", lambda g, out, a: g, call=lambda a: record("identity", a._data, (a,)), torch=None)
defvjp_argnum(
    "stack",
    _stack_vjp,
    call=lambda *parts, axis: stack(parts, axis=axis),
    sample=_stack_sample,
    torch=lambda torch, *parts, axis: torch.stack(parts, dim=axis),
)
defvjp_argnum("first_order", _first_order_vjp, torch=None)  # wraps the results of order=1 rules
# fmt: on
