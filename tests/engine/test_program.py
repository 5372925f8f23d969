"""Programs: tracing, printing, exact evaluation, the gradient program and its passes."""

from __future__ import annotations

import numpy as np
import pytest

from course_lib.datasets import load_iris
from course_lib.functional import grad, value_and_grad
from course_lib.nn import MLP, cross_entropy
from course_lib.passes import eliminate_common_subexpressions, eliminate_dead_code, remove_noops, simplify
from course_lib.program import Equation, Program, Var, evaluate
from course_lib.simulate import heun_step, launch
from course_lib.tensor import OPS, Tensor, affine
from course_lib.trace import make_program

X, Y, *_ = load_iris()
PARAMS = [p.data for p in MLP([4, 16, 3], rng=0).parameters()]


def mlp_loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor) -> Tensor:
    return cross_entropy(affine(affine(x, w1, b1).relu(), w2, b2), Y[:16])


def ops(program: Program) -> list[str]:
    return [e.op for e in program.equations]


def test_the_mlp_loss_prints_like_a_jaxpr_and_runs_to_the_eager_numbers() -> None:
    program = make_program(mlp_loss, *PARAMS, X[:16])
    text = str(program)
    assert text.startswith("{ lambda a:f64[4,16] b:f64[16] c:f64[16,3] d:f64[3] e:f64[16,4]. let")
    assert "    f:f64[16,16] = affine e a b" in text and "log_softmax[-1]" in text
    assert text.endswith("  in (l,) }")
    assert ops(program) == ["affine", "relu", "affine", "log_softmax", "getitem", "mean", "neg"]
    assert set(ops(program)) <= set(OPS)  # the one op table, no second list
    (value,) = evaluate(program, *PARAMS, X[:16])
    eager = mlp_loss(*map(Tensor, PARAMS), Tensor(X[:16]))
    assert value == eager.item()  # exactly: the same float operations


def test_evaluate_refuses_another_shape_and_another_number_of_inputs() -> None:
    program = make_program(lambda x: x.exp(), np.ones(3))
    with pytest.raises(ValueError, match=r"traced with shape \(3,\), got shape \(4,\)"):
        evaluate(program, np.ones(4))
    with pytest.raises(TypeError, match="takes 1 input"):
        evaluate(program, np.ones(3), np.ones(3))


def test_a_simulation_loop_traces_to_a_flat_program_with_the_eager_numbers() -> None:
    def height(v: Tensor, theta: Tensor) -> Tensor:
        state = launch(v, theta)
        for _ in range(30):
            state = heun_step(state, 0.05, 0.02)
        return state[1]

    program = make_program(height, np.array(9.0), np.array(0.8))
    assert len(program.equations) > 30 * 20  # unrolled: no loop in a program
    (value,) = evaluate(program, np.array(9.0), np.array(0.8))
    assert value == height(Tensor(9.0), Tensor(0.8)).item()


def test_the_gradient_program_is_the_vjp_rules_traced_and_gives_grads_numbers() -> None:
    value_and_grads = value_and_grad(mlp_loss, argnum=(0, 1, 2, 3))
    program = make_program(value_and_grads, *PARAMS, X[:16])
    assert {"matmul", "sign", "exp", "sum", "transpose"} <= set(ops(program))  # affine's, relu's, log_softmax's VJPs
    results = evaluate(program, *PARAMS, X[:16])
    value, grads = value_and_grads(*map(Tensor, PARAMS), Tensor(X[:16]))
    for got, want in zip(results, [value, *grads]):
        np.testing.assert_array_equal(got, want.data)
    assert "identity" in ops(program)  # grad's fresh inputs: removed by the passes
    assert "identity" not in ops(simplify(program))


def test_second_derivatives_trace_too() -> None:
    program = make_program(grad(grad(lambda x: x.sin())), np.array(0.7))
    (value,) = evaluate(program, np.array(0.7))
    assert value == grad(grad(lambda x: x.sin()))(Tensor(0.7)).item()
    assert value == pytest.approx(-np.sin(0.7), abs=1e-15)


def test_a_program_using_a_variable_nothing_computes_says_so() -> None:
    x, removed = Var((3,)), Var((3,))
    program = Program([x], [Equation("exp", [x], (), removed), Equation("cos", [removed], (), Var((3,)))], [])
    program.outputs = [removed]
    str(program)  # names the variables: x is a, removed is b
    del program.equations[0]  # a pass removed the equation but kept its uses
    with pytest.raises(ValueError, match="variable b of shape \\(3,\\) is used, but it is not an input"):
        evaluate(program, np.ones(3))


def test_dead_code_elimination_drops_what_no_output_needs() -> None:
    def f(x: Tensor) -> Tensor:
        _ = x.exp().sin()  # unused
        return x.cos()

    program = make_program(f, np.ones(3))
    assert ops(program) == ["cos"]  # tracing from the outputs already skips it
    x, y = Var((3,)), Var((3,))
    dead = Program([x], [Equation("exp", [x], (), y), Equation("cos", [x], (), Var((3,)))], [])
    dead.outputs = [dead.equations[1].out]
    assert ops(eliminate_dead_code(dead)) == ["cos"]


def test_common_subexpressions_are_computed_once() -> None:
    program = make_program(lambda x: x.exp() * x.exp() + x.sum(axis=0) + x.sum(axis=0), np.ones((2, 3)))
    assert ops(program).count("exp") == 2 and ops(program).count("sum") == 2
    shared = eliminate_common_subexpressions(program)
    assert ops(shared).count("exp") == 1 and ops(shared).count("sum") == 1
    assert ops(eliminate_common_subexpressions(make_program(lambda x: x.sum(0) + x.sum(1), np.ones((3, 3))))) == [
        "sum",
        "sum",
        "add",
    ]  # different parameters: not the same value
    np.testing.assert_array_equal(evaluate(shared, np.ones((2, 3)))[0], evaluate(program, np.ones((2, 3)))[0])


def test_algebraic_noops_are_removed() -> None:
    x = Var((2, 3))
    eqs = [
        Equation("mul", [x, np.ones(())], (), Var((2, 3))),
        Equation(
            "reshape",
            [
                x,
            ],
            ((2, 3),),
            Var((2, 3)),
        ),
        Equation("broadcast_to", [x], ((2, 3),), Var((2, 3))),
        Equation("sum", [x], ((), False), Var((2, 3))),
        Equation("transpose", [x], ((0, 1),), Var((2, 3))),
        Equation("mul", [np.ones((1, 3)), x], (), Var((2, 3))),
        Equation("mul", [x, np.ones((4, 2, 3))], (), Var((4, 2, 3))),  # broadcasts: not a no-op
        Equation("mul", [x, np.full((), 2.0)], (), Var((2, 3))),
    ]
    program = remove_noops(Program([x], eqs, [e.out for e in eqs]))
    assert ops(program) == ["mul", "mul"]
    assert program.outputs[:6] == [x] * 6


def test_jaxpr_oracle_the_same_primitives_in_the_same_order() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def f(x, y):  # type: ignore[no-untyped-def]
        return (
            (x.sin() * y + x.exp()).sum() if isinstance(x, Tensor) else (jax.numpy.sin(x) * y + jax.numpy.exp(x)).sum()
        )

    ours = ops(make_program(f, np.ones(3), np.ones(3)))
    theirs = [e.primitive.name for e in jax.make_jaxpr(f)(np.ones(3), np.ones(3)).jaxpr.eqns]
    assert ours == ["sin", "mul", "exp", "add", "sum"]
    assert theirs == ["sin", "mul", "exp", "add", "reduce_sum"]
