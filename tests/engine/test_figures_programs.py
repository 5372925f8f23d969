"""course_lib.figures.programs: the tracing stepper (one frame per equation, the value computed
as it is recorded, later lines dashed) and the transpose stepper (one frame per equation from
the last, cotangents summed into the arguments: the gradient at the end), each frame one size,
its every drawn number in its text alternative, and a clear error for programs of arrays."""

from __future__ import annotations

import re

import numpy as np
import pytest

from course_lib.figures.programs import trace_stepper, transpose_stepper
from course_lib.linearize import linearize, transpose
from course_lib.program import evaluate
from course_lib.trace import make_program
from course_lib.viz import HIGHLIGHT


def f(x1, x2):
    return x1.log() + x1 * x2 - x2.sin()


AT = (np.array(2.0), np.array(5.0))


def drawn_numbers(svg: str) -> tuple[set[float], bool]:
    texts = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg)).replace("&#45;", "-")
    return {float(x) for x in re.findall(r"-?\d+\.\d+", texts)}, "?" in texts


def filled(svg: str) -> list[str]:
    return re.findall(rf'class="node">\s*<title>([^<]*)</title>\s*<path fill="{HIGHLIGHT}"', svg)


def test_the_trace_stepper_records_one_equation_a_frame_with_its_value():
    program = make_program(f, *AT)
    stepper = trace_stepper(program, *AT, name="trace")
    assert len(stepper) == len(program.equations) == 5
    assert len({frame.size for frame in stepper.frames}) == 1
    assert [filled(frame.svg) for frame in stepper.frames] == [["c"], ["d"], ["e"], ["f"], ["g"]]
    assert stepper.frames[1].caption == (
        "Step 2 of 5: the tracer records d = mul a b, from a = 2.000, b = 5.000, and computes its value at once: "
        "d = 10.000."
    )
    (y,) = evaluate(program, *AT)
    assert stepper.frames[-1].caption.endswith(f"g = {y:.3f}.")
    assert stepper.frames[0].svg.count("not recorded yet") == 4 and "not recorded yet" not in stepper.frames[-1].svg


def test_the_transpose_stepper_walks_back_to_the_gradient():
    _, linear = linearize(f, *AT)
    stepper = transpose_stepper(linear, name="transpose")
    assert len(stepper) == len(linear.equations) == 7
    assert len({frame.size for frame in stepper.frames}) == 1
    order = [e.out.name for e in reversed(linear.equations)]
    assert [filled(frame.svg) for frame in stepper.frames] == [[name] for name in order]
    gradient = evaluate(transpose(linear), np.ones(()))
    bar = "\u0304"  # a combining macron: a + bar is the adjoint ā
    assert stepper.frames[-1].caption.endswith(f"a{bar} = {gradient[0]:.3f}, b{bar} = {gradient[1]:.3f}.")
    first = f"i = sub g h sends its cotangent i{bar} back: g{bar} += 1.000 × 1, now 1.000; h{bar} += 1.000 × -1"
    assert first in stepper.frames[0].caption


def test_every_number_a_frame_draws_is_in_its_text_alternative():
    _, linear = linearize(f, *AT)
    for stepper in (trace_stepper(make_program(f, *AT), *AT, name="a"), transpose_stepper(linear, name="b")):
        for k, frame in enumerate(stepper.frames, start=1):
            shown, unknown = drawn_numbers(frame.svg)
            said = {float(x) for x in re.findall(r"-?\d+\.\d+", frame.alt)}
            assert shown <= said, (stepper.name, k, shown - said)
            assert ("question mark" in frame.alt) == unknown


def test_programs_of_arrays_are_refused_with_what_to_do():
    program = make_program(lambda x: (x * x).sum(), np.ones(3))
    with pytest.raises(ValueError, match=r"programs of scalars .* make_program\(f, 2.0, 5.0\)"):
        trace_stepper(program, np.ones(3), name="arrays")
    with pytest.raises(ValueError, match="programs of scalars"):
        transpose_stepper(linearize(lambda x: (x * x).sum(), np.ones(3))[1], name="arrays")
