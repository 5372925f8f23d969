"""The op table tests itself: every op registered in ``course_lib.tensor.OPS`` is checked here,
from its own table entry and its sampler in ``op_samples.SAMPLES``, so a new op with a wrong
rule, or with no sampler, fails without anyone writing a test of its own.

For each op, on random inputs drawn from the op's domain (broadcasting included) in float64:

- gradcheck: the VJP against central differences, for a random cotangent;
- gradgradcheck: the recorded VJP (``create_graph=True``) is itself differentiated and
  checked against central differences; for a rule declared first-order (``order=1``) the
  second differentiation must raise instead;
- the value and the VJP agree with PyTorch's counterpart, where PyTorch has the op.

The last test registers a deliberately wrong ``tan`` rule in a temporary copy of the table and
shows that the same check catches it.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_samples import SAMPLES, TORCH, elementwise

import course_lib.tensor as tensor_module
from course_lib.check import gradcheck
from course_lib.loop import HIGHER_ORDER
from course_lib.tensor import OPS, Op, Tensor, defvjp, gradients, record

EXAMPLES = settings(max_examples=10, deadline=None, database=None)
INTERNAL = {"first_order", *HIGHER_ORDER}  # first_order wraps first-order rules' results: no forward of its own;
# scan's parameter is a program, not something to sample (tests/engine/test_loop.py tests it)


STOP_GRADIENT = {"detach"}  # its derivative is zero by definition, not that of its values: tests of its own


INTEGER_INDEX = {"take", "put"}  # an integer array among the arguments: tests of their own (test_take.py)


def ops_under_test() -> list[str]:
    return sorted(name for name in OPS if name not in INTERNAL | STOP_GRADIENT | INTEGER_INDEX)


def apply(op: Op, params: dict, *xs: Tensor) -> Tensor:
    return op.call(*xs, **params)


def check_op(op: Op, seed: int) -> None:
    """Gradients, second derivatives and PyTorch agreement of ``op`` on inputs drawn with ``seed``
    from its sampler in ``SAMPLES``."""
    rng = np.random.default_rng(seed)
    arrays, params = SAMPLES[op.name](rng)
    out = apply(op, params, *(Tensor(a) for a in arrays))
    cotangent = rng.standard_normal(out.shape)

    def loss(*xs: Tensor) -> Tensor:
        return (apply(op, params, *xs) * cotangent).sum()

    assert gradcheck(loss, *arrays), op.name
    if op.order is None:
        directions = [rng.standard_normal(a.shape) for a in arrays]

        def first_derivative_along(*xs: Tensor) -> Tensor:
            grads = gradients(loss(*xs), xs, create_graph=True, allow_unused=True)
            return sum(((g * d).sum() for g, d in zip(grads, directions)), Tensor(0.0))

        assert gradcheck(first_derivative_along, *arrays, atol=1e-4, rtol=1e-3), op.name
    else:
        xs = [Tensor(a, requires_grad=True) for a in arrays]
        grads = gradients(loss(*xs), xs, create_graph=True)
        with pytest.raises(RuntimeError, match="first-order"):
            gradients(sum((g.sum() for g in grads), Tensor(0.0)), xs, allow_unused=True)
    counterpart = TORCH.get(op.name)
    if counterpart is not None:
        compare_with_torch(op, counterpart, arrays, params, cotangent)


def compare_with_torch(op: Op, counterpart: Any, arrays: list[np.ndarray], params: dict, cotangent: np.ndarray) -> None:
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    function = (
        getattr(torch, counterpart) if isinstance(counterpart, str) else (lambda *t, **p: counterpart(torch, *t, **p))
    )
    expected = function(*ts, **params)
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    out = apply(op, params, *xs)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=op.name)
    out.backward(cotangent)
    expected.backward(torch.tensor(cotangent))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=op.name)


@pytest.mark.parametrize("name", ops_under_test())
def test_every_registered_op(name):
    @EXAMPLES
    @given(st.integers(0, 2**32 - 1))
    def check(seed):
        check_op(OPS[name], seed)

    check()


def test_every_op_of_the_table_can_be_called_and_sampled():
    """An op without a way to call it or a domain to sample from could not be tested."""
    assert {name for name, op in OPS.items() if name not in SAMPLES or op.call is None} == INTERNAL | INTEGER_INDEX
    assert set(SAMPLES) <= set(OPS), "op_samples.SAMPLES names an op the table does not have"
    # ... and each op is tested from the table, with a fixed seed as well (a quick, reproducible pass).
    for name in ops_under_test():
        check_op(OPS[name], zlib.crc32(name.encode()))


def test_the_chapters_op_list_is_the_table():
    assert tensor_module.VJP_RULES is OPS and "mul" in OPS and "sin" in OPS


def tan(x: Tensor) -> Tensor:
    return record("tan", np.tan(x.data), (x,))


@pytest.mark.parametrize(
    "rule, order, caught",
    [
        (lambda g, out, a: g * (1.0 + out * out), None, False),  # right: d tan = 1 + tan^2
        (lambda g, out, a: g * (1.0 + a * a), None, True),  # wrong: 1 + x^2
        (lambda g, out, a: g * Tensor(1.0 + out.data**2), None, True),  # NumPy inside, not declared: 2nd order wrong
        (lambda g, out, a: g.data * (1.0 + out.data**2), 1, False),  # NumPy, declared first-order: fine
    ],
    ids=["right", "wrong-first-derivative", "undeclared-numpy-rule", "declared-first-order"],
)
def test_the_generic_check_catches_a_wrong_new_op(monkeypatch, rule, order, caught):
    monkeypatch.setitem(OPS, "tan", None)  # undone after the test: the real tables end without tan
    monkeypatch.setitem(SAMPLES, "tan", elementwise((-1.2, 1.2)))
    monkeypatch.setitem(TORCH, "tan", "tan")
    defvjp("tan", rule, order=order, call=tan)
    new_op = OPS["tan"]
    if caught:
        with pytest.raises(AssertionError):
            check_op(new_op, seed=1)
    else:
        check_op(new_op, seed=1)
    assert OPS["tan"] is new_op


def test_an_op_without_a_sampler_fails_the_table_test(monkeypatch):
    """Registering an op is not enough: without a sampler in op_samples the table test fails."""
    monkeypatch.setitem(OPS, "tan", None)
    defvjp("tan", lambda g, out, a: g * (1.0 + out * out), call=tan)
    with pytest.raises(AssertionError):
        test_every_op_of_the_table_can_be_called_and_sampled()
