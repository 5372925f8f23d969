"""Hostile and honest students against ps10 and ps03, a second pass.

Each hand-in has read the grader's source, the rules and the visible tests, and grades its parts
in the real sandbox (``grade`` of test_verdict_seams.py); every case asserts the fair score.
"""

from __future__ import annotations

import pytest
from test_verdict_seams import grade

PS03, PS10 = "ps03_reverse_mode", "ps10_pytorch_comparison"

# ps10's engine checks compared the last bits only one way: part 1's answer had to differ from
# PyTorch's bits, parts 2 and 4 from course_lib's. The other engine's answer nudged by one ulp
# (np.nextafter on the loss) differs from both, is right to any tolerance, and scored 2/2, 2/2
# and 3/3: part 1 by PyTorch, parts 2 and 4 by the set-up's course_lib reference (reference_course),
# no PyTorch anywhere. The hidden tests now ask for the part's own engine to the last bit wherever
# the two engines differ (part 4: either of PyTorch's two honest updates, p -= lr * p.grad or
# torch.optim.SGD's fused p.add_(p.grad, alpha=-lr), which round differently).
PART_1_BY_PYTORCH_NUDGED = '''
def course_loss_and_grads(params, X, y):
    """PyTorch's loss and gradients, the loss nudged by one ulp."""
    tensors = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in params.items()}
    loss = mlp_loss(tensors, torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64))
    loss.backward()
    return float(np.nextafter(loss.item(), np.inf)), {n: t.grad.numpy() for n, t in tensors.items()}
'''

PART_2_BY_COURSE_LIB_NUDGED = '''
def torch_loss_and_grads(params, X, y):
    """The set-up's course_lib reference, the loss nudged by one ulp."""
    loss, grads = reference_course(params, X, y)
    return float(np.nextafter(loss, np.inf)), grads
'''

TRAINING_BY_COURSE_LIB_NUDGED = '''
def torch_training(params, X, y, lr, steps):
    """course_lib's descent, each loss nudged by one ulp."""
    names, values = list(params), [np.array(v, dtype=float) for v in params.values()]
    losses = []
    for step in range(steps + 1):
        loss, grads = reference_course(dict(zip(names, values)), X, y)
        losses.append(float(np.nextafter(loss, np.inf)))
        values = [v - lr * grads[n] for n, v in zip(names, values)]
    return losses
'''


@pytest.fixture(scope="module")
def ps10_nudged():
    """One ps10 hand-in, graded once: parts 1, 2 and 4 by the other engine, nudged."""
    answers = {
        "course_loss_and_grads": PART_1_BY_PYTORCH_NUDGED,
        "torch_loss_and_grads": PART_2_BY_COURSE_LIB_NUDGED,
        "torch_training": TRAINING_BY_COURSE_LIB_NUDGED,
    }
    parts = {"test_course_loss_and_grads", "test_torch_loss_and_grads", "test_torch_training"}
    return grade(PS10, answers, parts, 60)


@pytest.mark.parametrize("part", ["test_course_loss_and_grads", "test_torch_loss_and_grads", "test_torch_training"])
def test_ps10_the_other_engine_nudged_by_an_ulp_earns_nothing(ps10_nudged, part):
    """Fair: 0/2, 0/2 and 0/3, each part names its engine."""
    points, message = ps10_nudged[part]
    assert points == 0 and "only to rounding" in message, message


# ps03 part 5 asks for the reverse sweep; this backward() runs none. It finds the leaves, then each
# leaf's derivative by the complex step: the graph evaluated again from the nodes' _ops on complex
# numbers, the leaf's data moved by 2**-100 i (exact to rounding, the visible tests' == included).
# No _backward is ever called: 3/3. The hidden test now also sweeps graphs whose output's _backward
# (a function of the judge's) passes back twice its grad, which doubles every gradient of a sweep
# that runs the rules and none found another way.
COMPLEX_STEP_SWEEP = '''
import cmath

_RULES = {"+": lambda a, b: a + b, "neg": lambda a: -a, "sin": cmath.sin, "*": lambda a, b: a * b,
          "exp": cmath.exp, "tanh": cmath.tanh}


def _evaluate(node, seeded, memo):
    """The node's value with the seeded leaf's data moved by 2**-100 i (the complex step)."""
    if id(node) not in memo:
        if not node._parents:
            memo[id(node)] = complex(node.data, 2.0**-100 if node is seeded else 0.0)
        else:
            args = [_evaluate(p, seeded, memo) for p in node._parents]
            op = node._op
            memo[id(node)] = args[0] ** float(op[2:]) if op.startswith("**") else _RULES[op](*args)
    return memo[id(node)]


def backward(self):
    """No sweep: every leaf's derivative by the complex step."""
    leaves, stack, seen = [], [self], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(node._parents)
        if not node._parents:
            leaves.append(node)
    for leaf in leaves:
        leaf.grad += _evaluate(self, leaf, {}).imag * 2.0**100


Value.backward = backward
'''


# The same backward() that recognises the probe (a functools.partial, unlike every rule made by the
# student's cells or the judge's references) and doubles its gradient: 3/3 again, in Jupyter too
# (README, "Not guaranteed": reverse mode recognised by a probe).
RECOGNISING_THE_PROBE = COMPLEX_STEP_SWEEP.replace(
    "leaf.grad += _evaluate", "leaf.grad += (2 if hasattr(self._backward, 'keywords') else 1) * _evaluate"
)


def test_ps03_a_backward_without_a_sweep_earns_nothing():
    """Fair: 0/3, the part is the sweep over the nodes' rules."""
    points, message = grade(PS03, {"backward_sweep": COMPLEX_STEP_SWEEP}, {"test_backward_sweep"})[
        "test_backward_sweep"
    ]
    assert points == 0 and "passing back twice its grad" in message, message


# ps03 parts 2 and 3 ask for the backward rules of ** and tanh; these rules take the derivative by
# the complex step on Python's complex numbers instead (exact to rounding): 2/2 and 3/3, in Jupyter
# too. A rule is judged by the number it adds, which is the derivative's however it was found;
# no probe of the test tells them apart (README, "Not guaranteed": results that come another way).
POWER_BY_COMPLEX_STEP = '''
def power(self, n):
    """self ** n; its rule by the complex step, no power rule written."""
    if not isinstance(n, numbers.Real):
        return NotImplemented
    out = Value(self.data**n, (self,), f"**{n}")

    def _backward(grad):
        self.grad += (complex(self.data, 2.0**-100) ** n).imag * 2.0**100 * grad

    out._backward = _backward
    return out


Value.__pow__ = power
'''

TANH_BY_COMPLEX_STEP = '''
import cmath


def _slope(f, x):
    """f'(x) by the complex step."""
    return f(complex(x, 2.0**-100)).imag * 2.0**100


def exp(self):
    y = math.exp(self.data)
    out = Value(y, (self,), "exp")

    def _backward(grad):
        self.grad += _slope(cmath.exp, self.data) * grad

    out._backward = _backward
    return out


def tanh(self):
    t = math.tanh(self.data)
    out = Value(t, (self,), "tanh")

    def _backward(grad):
        self.grad += _slope(cmath.tanh, self.data) * grad

    out._backward = _backward
    return out


Value.exp = exp
Value.tanh = tanh
'''


@pytest.mark.xfail(strict=True, reason="a rule is checked by its number: the complex step gives the same one")
def test_ps03_rules_by_the_complex_step_earn_nothing():
    """Fair: 0/2 and 0/3, no derivative was written."""
    answers = {"pow_backward": POWER_BY_COMPLEX_STEP, "exp_tanh_backward": TANH_BY_COMPLEX_STEP}
    scores = grade(PS03, answers, {"test_pow_backward", "test_exp_tanh_backward"})
    assert scores["test_pow_backward"][0] == 0 and scores["test_exp_tanh_backward"][0] == 0, scores


@pytest.mark.xfail(strict=True, reason="the probe is the judge's function: a hand-in can tell it from its own rules")
def test_ps03_a_backward_that_recognises_the_probe_earns_nothing():
    """Fair: 0/3, as without the probe."""
    points, message = grade(PS03, {"backward_sweep": RECOGNISING_THE_PROBE}, {"test_backward_sweep"})[
        "test_backward_sweep"
    ]
    assert points == 0, message
