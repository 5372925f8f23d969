"""jit: one compiled program per signature, the eager numbers, and the errors of tracing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from course_lib.codegen import NUMPY
from course_lib.datasets import load_iris
from course_lib.functional import grad, value_and_grad
from course_lib.jit import jit
from course_lib.nn import MLP, SGD, cross_entropy
from course_lib.simulate import drag_shot_height
from course_lib.tensor import OPS, Tensor, affine, no_grad, where
from course_lib.trace import TracingError, make_program
from course_lib.vmap import vmap

X, Y, *_ = load_iris()
LR = 0.1


def loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor, labels: np.ndarray) -> Tensor:
    return cross_entropy(affine(affine(x, w1, b1).relu(), w2, b2), labels)


def sgd_step(params: list, x: Any, labels: np.ndarray) -> tuple[Tensor, list[Tensor]]:
    """One SGD step written as a function: the loss and the new parameters."""
    value, grads = value_and_grad(loss, argnum=(0, 1, 2, 3))(*params, x, labels)
    return value, [p - LR * g for p, g in zip(params, grads)]


def test_a_jitted_sgd_step_of_the_iris_mlp_gives_the_eager_steps_numbers() -> None:
    model = MLP([4, 16, 3], rng=0)
    params = [p.data for p in model.parameters()]
    step = jit(sgd_step)
    for start in (0, 16, 32):  # three steps, a new batch each time
        x, labels = X[start : start + 16], Y[start : start + 16]
        value, params = step(params, x, labels)
        model.zero_grad()
        eager = cross_entropy(model(x), labels)
        eager.backward()
        SGD(model.parameters(), LR).step()
        assert value.item() == eager.item()
        for new, p in zip(params, model.parameters()):
            np.testing.assert_array_equal(new.data, p.data)  # exactly, not approximately


def test_the_generated_source_reads_like_the_hand_written_step() -> None:
    params = [p.data for p in MLP([4, 16, 3], rng=0).parameters()]
    source = jit(sgd_step).source(params, X[:16], Y[:16])
    assert source.startswith("def sgd_step(a, b, c, d, e, f):\n    g = np.matmul(e, a)\n    g += b\n")  # f: labels
    assert "np.maximum(g, 0.0)" in source and "np.sign(" in source and "identity" not in source
    assert source.count("np.matmul") == 5  # 2 forward, 3 backward (none for x): nothing twice


def test_one_program_per_signature_a_new_shape_retraces_never_broadcasts() -> None:
    traces = []

    def f(x: Tensor) -> Tensor:
        traces.append(x.shape)  # a side effect: it happens while tracing only
        return (x * x).sum(axis=0)

    jf = jit(f)
    np.testing.assert_array_equal(jf(np.ones((2, 3))).data, [2.0, 2.0, 2.0])
    jf(np.full((2, 3), 2.0))
    assert traces == [(2, 3)]
    assert jf(np.ones((4, 1))).shape == (1,)  # a (4, 1) input is not broadcast into the (2, 3) program
    assert traces == [(2, 3), (4, 1)] and len(jf.cache) == 2


def test_static_arguments_are_part_of_the_signature() -> None:
    jf = jit(lambda x, n: x * n if n > 2 else x - n, static_argnums=1)
    assert jf(np.ones(2), 3).data.tolist() == [3.0, 3.0]
    assert jf(np.ones(2), 1).data.tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="must be hashable"):
        jit(lambda x, s: x, static_argnums=1)(np.ones(2), [1])


def test_jit_of_grad_and_of_value_and_grad() -> None:
    f = lambda x: (x.sin() * x).sum()  # noqa: E731
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_array_equal(jit(grad(f))(x).data, grad(f)(Tensor(x)).data)
    value, g = jit(value_and_grad(f))(x)
    assert value.item() == f(Tensor(x)).item()
    np.testing.assert_array_equal(g.data, grad(f)(Tensor(x)).data)
    assert jit(jit(f))(x).item() == f(Tensor(x)).item()  # a jitted function inside a trace is traced through


def test_every_op_has_a_numpy_rule() -> None:
    assert set(OPS) - set(NUMPY) == {"first_order"}  # first_order wraps NumPy-written rules: no forward


def error_of(f: Any, *args: Any) -> str:
    with pytest.raises(TracingError) as info:
        jit(f)(*args)
    return str(info.value)


def test_python_control_flow_on_a_traced_value_names_the_users_line() -> None:
    def f(x: Tensor) -> Tensor:
        if x.sum() > 0:  # comparing makes no Tensor here; truth of the Tensor does
            return x
        return -x

    def g(x: Tensor) -> Tensor:
        return x if x.sum() else -x  # THE LINE

    with pytest.raises(TypeError):
        jit(f)(np.ones(2))  # Tensors do not compare with numbers
    message = error_of(g, np.ones(2))
    assert "Python control flow" in message and "test_jit.py" in message and "# THE LINE" in message
    assert "m = a.ge(b)" in message and "static_argnums" in message


def test_float_item_and_numpy_of_a_traced_value_are_refused() -> None:
    assert "float() or .item()" in error_of(lambda x: x * float(x.sum()), np.ones(2))
    assert "float() or .item()" in error_of(lambda x: x * x.sum().item(), np.ones(2))
    assert "A NumPy call" in error_of(lambda x: x * np.asarray(x), np.ones(2))
    assert "A NumPy call" in error_of(lambda x: x * x.data.sum(), np.ones(2))
    assert jit(lambda x: x.detach() * x)(np.arange(3.0)).data.tolist() == [0.0, 1.0, 4.0]  # detach is recorded


def test_ops_under_no_grad_are_recorded_and_backward_is_refused() -> None:
    def f(x: Tensor) -> Tensor:
        with no_grad():
            return x.exp()

    def g(x: Tensor) -> Tensor:
        (x * x).sum().backward()
        return x

    assert np.array_equal(jit(f)(np.arange(2.0)).data, np.exp(np.arange(2.0)))
    assert ".backward()" in error_of(g, np.ones(2))
    with pytest.raises(TracingError):  # chapter 11's loop stops on a value: it cannot be traced
        jit(drag_shot_height)(np.array([9.0, 0.8, 0.05]))


def test_a_traced_value_escaping_its_trace_raises_when_used() -> None:
    leaked = []

    def f(x: Tensor) -> Tensor:
        leaked.append(x * 2)
        return x

    make_program(f, np.ones(2))
    with pytest.raises(TracingError, match="escaped its trace"):
        leaked[0] + 1
    with pytest.raises(TracingError, match="escaped its trace"):
        leaked[0].exp()
    assert repr(leaked[0]) == "Tracer(escaped)"


def test_random_numbers_inside_jit_are_refused() -> None:
    with pytest.raises(TracingError, match="draws random numbers"):
        jit(lambda x: x + np.random.normal(size=2))(np.ones(2))
    with pytest.raises(TracingError, match="random Generator"):
        jit(lambda x, rng: x + rng.normal(size=2))(np.ones(2), np.random.default_rng(0))


def test_jax_jit_oracle() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    params = [p.data for p in MLP([4, 16, 3], rng=1).parameters()]

    def jax_loss(w1, b1, w2, b2, x, labels):  # type: ignore[no-untyped-def]
        logits = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        return -jax.nn.log_softmax(logits)[jnp.arange(len(labels)), labels].mean()

    ours = jit(value_and_grad(loss, argnum=(0, 1, 2, 3)))(*params, X[:32], Y[:32])
    theirs = jax.jit(jax.value_and_grad(jax_loss, argnums=(0, 1, 2, 3)))(*params, X[:32], Y[:32])
    np.testing.assert_allclose(ours[0].data, theirs[0], rtol=1e-12)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a.data, b, rtol=1e-10, atol=1e-14)


def test_results_never_share_memory_with_the_callers_arrays() -> None:
    x = np.arange(6.0)
    jf = jit(lambda v: (v.reshape(2, 3), v, v * 2.0))
    view, same, doubled = jf(x)
    x[:] = -1.0  # the caller changes their array afterwards
    np.testing.assert_array_equal(view.data, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(same.data, np.arange(6.0))
    assert jf.source(x).count(".copy()") == 2  # the view and the input itself, not the new array


def test_dying_buffers_are_reused_but_never_one_still_needed() -> None:
    def f(x: Tensor) -> tuple[Tensor, Tensor]:
        e = x.exp()
        t = e.T  # a view of e, used after e's last direct use
        return e.sin() * 2.0, t + 1.0

    x = np.random.default_rng(0).normal(size=(3, 3))
    source = jit(f).source(x)
    assert "np.sin(b)" in source and ", out=b)" not in source  # e lives on through its view
    assert "np.multiply(c, 2.0, out=c)" in source
    for got, want in zip(jit(f)(x), f(Tensor(x))):
        np.testing.assert_array_equal(got.data, want.data)


def test_a_closed_over_parameter_changed_after_tracing_is_read_afresh() -> None:
    model = MLP([4, 3], rng=0)
    predict = jit(lambda x: model(x).sum())
    with no_grad():
        assert predict(X[:2]).item() == model(X[:2]).sum().item()
        model.layers[0].weight.data = model.layers[0].weight.data * 2.0
        assert predict(X[:2]).item() == model(X[:2]).sum().item()  # the parameters are inputs (constvars)
    assert len(predict.cache) == 1


def test_results_come_back_in_the_containers_f_returned() -> None:
    jf = jit(lambda p: {"w": p["w"] * 2.0, (1, 2): [p["b"].exp(), (p["b"],)]})
    out = jf({"w": np.ones(2), "b": np.zeros(1)})
    assert set(out) == {"w", (1, 2)} and isinstance(out[(1, 2)], list) and isinstance(out[(1, 2)][1], tuple)
    assert out["w"].data.tolist() == [2.0, 2.0] and out[(1, 2)][0].data.tolist() == [1.0]


def test_grad_of_jit_gives_the_eager_gradients() -> None:
    f = lambda x, w: ((x @ w).tanh() ** 2).sum()  # noqa: E731
    x, w = Tensor(X[:5], requires_grad=True), Tensor(np.linspace(-1.0, 1.0, 12).reshape(4, 3), requires_grad=True)
    for ours, eager in zip(grad(jit(f), argnum=(0, 1))(x, w), grad(f, argnum=(0, 1))(x, w)):
        np.testing.assert_array_equal(ours.data, eager.data)
    # and a second time from the cache, and under no_grad the compiled code (a constant result)
    assert grad(jit(f))(x, w).shape == (5, 4)
    with no_grad():
        assert not jit(f)(x, w).requires_grad


def test_backward_through_jit_reaches_the_parameters_it_closes_over() -> None:
    model, eager_model = MLP([4, 3], rng=0), MLP([4, 3], rng=0)
    loss = jit(lambda x, labels: cross_entropy(model(x), labels))
    loss(X[:8], Y[:8]).backward()
    cross_entropy(eager_model(X[:8]), Y[:8]).backward()
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_array_equal(p.grad, q.grad)


def test_clip_and_max_gradients_are_recomputed_for_every_input() -> None:
    # Their masks are computed by the program (op ge), not frozen at the values traced.
    clipped = jit(grad(lambda x: x.clip(0.0, 1.0).sum()))
    peak = jit(grad(lambda x: x.max(axis=1).sum()))
    for x in (np.array([[0.5, 2.0], [3.0, -1.0]]), np.array([[2.0, 0.5], [-1.0, 3.0]])):
        np.testing.assert_array_equal(clipped(x).data, grad(lambda t: t.clip(0.0, 1.0).sum())(Tensor(x)).data)
        np.testing.assert_array_equal(peak(x).data, (x == x.max(axis=1, keepdims=True)).astype(float))
    assert len(clipped.cache) == len(peak.cache) == 1


def test_keyword_arguments_are_traced_like_positional_ones() -> None:
    traces = []

    def f(x: Tensor, scale: Tensor, shift: float = 0.0) -> Tensor:
        traces.append(1)
        return x * scale + shift

    jf = jit(f)
    np.testing.assert_array_equal(jf(np.ones(2), scale=np.full(2, 3.0)).data, [3.0, 3.0])
    np.testing.assert_array_equal(jf(np.ones(2), scale=np.full(2, 4.0)).data, [4.0, 4.0])  # same signature
    np.testing.assert_array_equal(jf(np.ones(2), scale=np.full(2, 4.0), shift=1.0).data, [5.0, 5.0])
    assert len(traces) == 2
    assert "np.multiply" in jf.source(np.ones(2), scale=np.ones(2))


def test_the_guarded_call_reruns_a_signature_only_when_everything_matches() -> None:
    traces = []

    def f(pair: list, labels: np.ndarray, n: int) -> Tensor:
        traces.append(1)
        return (pair[0] * pair[1])[np.arange(len(labels)), labels].sum() * n

    jf = jit(f)
    x, w, labels = np.arange(6.0).reshape(3, 2), np.full((3, 2), 2.0), np.array([0, 1, 1])
    expected = lambda lab, n: float((x * w)[np.arange(3), lab].sum() * n)  # noqa: E731
    assert jf([x, w], labels, 1).item() == expected(labels, 1)
    assert jf([x, w], labels, 1).item() == expected(labels, 1) and len(traces) == 1  # the guarded call
    labels[0] = 1  # the same array, other values: labels are traced, the program reads them
    assert jf([x, w], labels, 1).item() == expected(labels, 1) and len(traces) == 1
    assert jf([x, w], labels, 2).item() == expected(labels, 2) and len(traces) == 2  # a static number changed
    assert jf((x, w), labels, 2).item() == expected(labels, 2) and len(traces) == 3  # a tuple, not a list
    assert jf([x, w, w], labels, 2).item() == expected(labels, 2) and len(traces) == 4
    assert jf([x, Tensor(w)], labels, 2).item() == expected(labels, 2) and len(traces) == 4  # a Tensor: the same
    assert jf([x, w], labels.astype(np.int32), 2).item() == expected(labels, 2) and len(traces) == 5  # a new dtype
    w_grad = Tensor(w, requires_grad=True)
    jf([x, w_grad], labels, 2).backward()  # requires grad: the eager engine runs the program
    assert len(traces) == 5 and w_grad.grad is not None
    assert jf([x, w], labels, 1).item() == expected(labels, 1) and len(traces) == 5  # back to a cached one


def test_where_with_a_traced_condition_is_refused_not_frozen() -> None:
    with pytest.raises(TracingError, match=r"(?s)A where\(\) condition made of a traced value.*this example's mask"):
        jit(lambda x: where(x.relu(), x, -1.0))(np.array([1.0, -1.0]))
    with pytest.raises(TracingError, match="where"):
        vmap(lambda r: where(r.relu(), r, -1.0))(np.array([[1.0, -1.0], [-1.0, 1.0]]))
    # the data-flow form the message suggests gives the eager numbers for every input
    select = jit(lambda x: x.ge(0.0) * x + (1.0 - x.ge(0.0)) * -1.0)
    for x in (np.array([1.0, -2.0]), np.array([-2.0, 1.0])):
        np.testing.assert_array_equal(select(x).data, np.where(x >= 0.0, x, -1.0))
    # a condition that is not traced (a constant mask) stays part of the program
    assert jit(lambda x: where(np.array([True, False]), x, 0.0))(np.array([3.0, 4.0])).data.tolist() == [3.0, 0.0]


def test_the_compiled_cross_entropy_gradient_is_the_eager_one_bit_for_bit() -> None:
    # Rows whose exp underflows to +0, overflows, or is NaN: every zero keeps its sign.
    z = np.array([[0.0, -800.0, 3.0], [1e-300, -np.inf, 2.0], [np.nan, 0.0, -0.0], [5.0, 5.0, -745.0], [1e308] * 3])
    labels = np.array([0, 2, 1, 2, 1])
    for sign in (1.0, -1.0):

        def f(z: Tensor, y: np.ndarray, sign: float = sign) -> Tensor:
            return cross_entropy(z, y) * sign

        with np.errstate(all="ignore"):
            ours, eager = jit(grad(f))(z, labels).data, grad(f)(z, labels).data
        assert np.array_equal(np.isnan(ours), np.isnan(eager))
        assert np.array_equal(ours[~np.isnan(ours)].view(np.int64), eager[~np.isnan(eager)].view(np.int64))


def test_softmax_over_a_short_last_axis_of_many_rows_is_a_chain_with_the_eager_bits() -> None:
    # Enough rows, and codegen takes the row maxima and sums column by column instead of with
    # NumPy's reductions: the same operations in the same order, so the same bits, for logits
    # whose sums depend on the order (scale 20), signed zeros, infinities and NaN.
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, 745.0, -800.0, 1e308, -1e308, np.inf, -np.inf, np.nan])
    for width in range(2, 8):
        for shape in ((16 * width, width), (2, 8 * width, width)):
            z = np.where(rng.random(shape) < 0.2, rng.choice(special, shape), rng.normal(scale=20.0, size=shape))
            for op in ("softmax", "log_softmax"):
                f = jit(lambda z, op=op: getattr(z, op)())
                with np.errstate(all="ignore"):  # tracing computes too
                    source, ours, eager = f.source(z), f(z).data, getattr(Tensor(z), op)().data
                assert "maximum.reduce" not in source and "add.reduce" not in source and "[..., 1:2]" in source
                assert np.array_equal(np.isnan(ours), np.isnan(eager)), (op, shape)
                assert np.array_equal(ours[~np.isnan(ours)].view(np.int64), eager[~np.isnan(eager)].view(np.int64))
    few_rows = np.ones((16, 3))  # one reduction call beats a chain of calls here: the batch of chapter 15
    assert "np.maximum.reduce" in jit(lambda z: z.log_softmax()).source(few_rows)


def test_a_constant_of_equal_entries_is_one_number_in_the_code_with_the_eager_bits() -> None:
    x = np.array([[1.5, -0.0, np.inf], [0.0, -2.0, np.nan]])
    for value in (-0.0625, -0.0, 0.0, np.inf, np.nan):
        column = np.full((2, 1), value)

        def four(x: Tensor, column: np.ndarray = column) -> tuple[Tensor, ...]:
            return x * column, column / x, x - column, column + x

        with np.errstate(all="ignore"):
            source, ours, eager = jit(four).source(x), jit(four)(x), four(Tensor(x))
        assert "_c" not in source, source  # four operations on one number
        for a, b in zip(ours, eager):
            assert np.array_equal(np.isnan(a.data), np.isnan(b.data))
            assert np.array_equal(a.data[~np.isnan(a.data)].view(np.int64), b.data[~np.isnan(b.data)].view(np.int64))
    # Entries that differ (-0.0 beside 0.0), or a constant that gives the result its shape, stay arrays.
    assert "_c0" in jit(lambda x: x * np.array([[0.0], [-0.0]])).source(np.ones((2, 3)))
    assert "_c0" in jit(lambda x: x[0] * np.full((2, 3), 2.0)).source(np.ones((2, 3)))
