"""The reader's check for coding exercises: right, wrong, unfinished and crashing answers."""

import math

from course_lib.selfcheck import check

CASES = [((0.0,), 1.0), ((math.pi,), -1.0)]


def test_a_right_answer_passes(capsys):
    check(math.cos, CASES)
    assert capsys.readouterr().out == "✔ cos: all 2 cases right.\n"


def test_a_wrong_answer_names_the_first_bad_case(capsys):
    check(math.sin, CASES)
    assert capsys.readouterr().out == "✘ case 1: sin(0.0) returned 0.0, expected 1.0.\n"


def test_an_unwritten_stub_is_reported_without_raising(capsys):
    def mine(x):
        raise NotImplementedError

    check(mine, CASES)
    assert "mine is not written yet" in capsys.readouterr().out


def test_a_crash_is_reported_without_raising(capsys):
    check(lambda x: 1 / 0, CASES)
    assert capsys.readouterr().out == "✘ <lambda>(0.0) raised ZeroDivisionError: division by zero\n"


def test_tuples_arrays_and_non_numbers(capsys):
    check(lambda x: (x, 2 * x), [((1.0,), (1.0, 2.0000000001))])
    check(lambda x: "a", [((1.0,), "b")])
    check(lambda x: [x, x], [((0.5,), [0.5, 0.5])])
    assert [line[0] for line in capsys.readouterr().out.splitlines()] == ["✔", "✘", "✔"]
