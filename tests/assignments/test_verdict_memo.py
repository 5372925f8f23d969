"""Verdicts reused within one grading run (course_grader.verdict_memo), in the real sandbox.

The hand-in's first answer draws a random token in the student's process and every visible
test prints it, so the printed output tells a part judged afresh (a new token) from a part
whose verdict was reused (the earlier token).
"""

from __future__ import annotations

import nbformat
import pytest

from course_grader.handin import grade_hand_in
from course_grader.limits import Limits
from course_grader.sandbox import Sandbox, find_bwrap
from course_grader.verdict_memo import VerdictMemo

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="the grader's sandbox needs bubblewrap")

TOKEN = "TOKEN = __import__('os').urandom(8).hex()\n"
TWICE = "def twice(x):\n    return 2 * x\n"


def notebook(token: str = TOKEN, twice: str = TWICE):
    def cell(source: str, grade_id: str, test: bool):
        meta = {"grade_id": grade_id, "grade": test, "solution": not test, "locked": test}
        return nbformat.v4.new_code_cell(source, metadata={"nbgrader": {**meta, **({"points": 1} if test else {})}})

    return nbformat.v4.new_notebook(
        cells=[
            cell(token, "token", False),
            cell("print('token', TOKEN)\nassert len(TOKEN) == 16\n", "test_token", True),
            cell(twice, "twice", False),
            cell("print('token', TOKEN)\nassert twice(3) == 6\n", "test_twice", True),
        ]
    )


def outputs(hand_in, memo, tmp_path) -> dict[str, tuple[bool, str]]:
    release = tmp_path / "release"
    release.mkdir(exist_ok=True)
    sandbox = Sandbox(Limits(wall_seconds=30, cpu_seconds=30))
    results = grade_hand_in(notebook(), hand_in, release, sandbox, 10, "memo.ipynb", memo=memo)
    return {r.grade_id: (r.passed, r.output) for r in results}


def test_identical_parts_are_judged_once_and_a_change_is_judged_afresh(tmp_path):
    memo = tmp_path / "memo"
    memo.mkdir()
    first = outputs(notebook(), memo, tmp_path)
    assert all(passed for passed, _ in first.values()), first
    assert first["test_token"] != first["test_twice"], "each part runs in a process of its own"
    assert outputs(notebook(), memo, tmp_path) == first, "an identical hand-in must reuse the verdicts"
    fresh = outputs(notebook(), None, tmp_path)
    assert fresh["test_token"] != first["test_token"], "without the memo, every part is judged afresh"

    changed = outputs(notebook(twice="def twice(x):\n    return x + x\n"), memo, tmp_path)
    assert changed["test_token"] == first["test_token"], "the part before the change is the same"
    assert changed["test_twice"][0] and changed["test_twice"] != first["test_twice"], "the changed part runs"


def test_a_time_out_or_a_crash_is_never_reused(tmp_path):
    job = {
        "files": str(tmp_path),
        "names": [],
        "classes": [],
        "limits": {},
        "unsafe": False,
        "rules": {},
        "cell_timeout": 10,
    }
    memo = VerdictMemo(tmp_path, job)  # type: ignore[arg-type]
    calm = {"crashed_cell": "", "timed_out_cells": [], "process_end": "", "machinery": "", "error": "", "passed": True}
    for field, value in [
        ("timed_out_cells", ["twice"]),
        ("crashed_cell", "twice"),
        ("process_end", "killed"),
        ("machinery", "broken"),
    ]:
        memo.put(field, {**calm, field: value})
        assert memo.get(field) is None, field
    memo.put("calm", calm)
    assert memo.get("calm") == calm


def test_the_key_sees_the_data_files_and_the_limits(tmp_path):
    (tmp_path / "data.csv").write_text("1,2\n")
    job = {"files": str(tmp_path), "names": [], "classes": [], "limits": {"cpu": 1}, "unsafe": False}
    job |= {"rules": {}, "cell_timeout": 10}
    part = {"grade_id": "t", "cells": [], "references": [], "visible": "", "hidden": ""}
    key = VerdictMemo(tmp_path, job).key(part)  # type: ignore[arg-type]
    (tmp_path / "memo.ipynb").write_text("{}")  # the hand-in's own notebook is left out
    assert VerdictMemo(tmp_path, job).key(part) == key  # type: ignore[arg-type]
    assert VerdictMemo(tmp_path, job | {"limits": {"cpu": 2}}).key(part) != key  # type: ignore[arg-type]
    assert VerdictMemo(tmp_path, job).key(part | {"hidden": "assert False"}) != key  # type: ignore[arg-type]
    (tmp_path / "data.csv").write_text("1,3\n")
    assert VerdictMemo(tmp_path, job).key(part) != key  # type: ignore[arg-type]
