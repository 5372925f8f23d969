"""take and put: indexing with integer arrays that are data (traced class labels).

Their arguments include integer arrays, so the op-table tests, which sample float arrays,
leave them out; these tests check the same properties: the eager values and gradients
(against getitem, PyTorch's gather), jit bit for bit, vmap against a loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from course_lib.functional import grad
from course_lib.jit import jit
from course_lib.tensor import Tensor
from course_lib.vmap import vmap

RNG = np.random.default_rng(7)
A = RNG.normal(size=(4, 5))
ROWS = np.array([3, 0, 3, 1])  # a repeat: the gradients add up
COLS = np.array([1, 4, 0, 4])

PICKS = {  # name -> (the pick, written with the labels `k` as a Tensor index)
    "rows": lambda x, k: x[k],
    "row and column": lambda x, k: x[np.arange(4), k],
    "after a slice": lambda x, k: x[:, k],
    "ellipsis": lambda x, k: x[..., k],
    "column and new axis": lambda x, k: x[None, 1:, k],
}


@pytest.mark.parametrize("name", sorted(PICKS))
def test_a_pick_by_traced_labels_is_the_eager_pick_for_any_labels(name: str) -> None:
    pick = PICKS[name]
    labels = ROWS if name == "rows" else COLS
    loss = lambda x, k: (pick(x, k) * pick(x, k)).sum()  # noqa: E731
    jitted, gradient = jit(loss), jit(grad(loss))
    for k in (labels, labels[::-1].copy(), np.zeros(4, int)):
        assert np.array_equal(jitted(A, k).data, loss(Tensor(A), k).data)
        assert np.array_equal(gradient(A, k).data, grad(loss)(A, k).data)  # put: np.add.at, repeats add
    assert len(jitted.cache) == 1 and len(gradient.cache) == 1


@pytest.mark.parametrize("name", sorted(PICKS))
def test_vmap_of_a_pick_by_batched_labels_is_the_loop(name: str) -> None:
    pick = PICKS[name]
    xs, ks = RNG.normal(size=(3, 4, 5)), np.stack([ROWS, COLS % 4, ROWS[::-1]])
    loss = lambda x, k: (pick(x, k) * pick(x, k).sin()).sum()  # noqa: E731
    for axes in ((0, 0), (None, 0)):
        x_of = (lambda i: xs[i]) if axes[0] == 0 else (lambda i: xs[0])
        args = (xs if axes[0] == 0 else xs[0], ks)
        np.testing.assert_allclose(
            vmap(pick, in_axes=axes)(*args).data, np.stack([pick(Tensor(x_of(i)), ks[i]).data for i in range(3)])
        )
        loop = np.stack([grad(loss)(x_of(i), ks[i]).data for i in range(3)])
        np.testing.assert_allclose(vmap(grad(loss), in_axes=axes)(*args).data, loop, rtol=1e-14)


def test_take_against_pytorch_gather() -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor(A, requires_grad=True)
    picked = torch.gather(x, 1, torch.tensor(COLS)[:, None])[:, 0]
    (picked.exp().sum()).backward()
    loss = lambda x, k: x[np.arange(4), k].exp().sum()  # noqa: E731
    np.testing.assert_allclose(jit(grad(loss))(A, COLS).data, x.grad.numpy(), rtol=1e-14)


def _program(f: Any, *args: Any) -> str:
    return str(jit(f).program(*args))


def test_labels_print_as_integer_inputs_read_by_take() -> None:
    text = _program(lambda x, k: x[np.arange(4), k].sum(), A, COLS)
    assert "i64[4]" in text and "take[(array[4], arg1)]" in text
