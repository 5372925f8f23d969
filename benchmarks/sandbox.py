"""What the bubblewrap sandbox costs when grading: the same hand-ins graded with and without it.

    .venv/bin/python -m benchmarks.sandbox [--rounds 3] [--assignments ps01_finite_differences ...]

Each assignment's solution is graded part by part by ``course_grader`` (the judge, and the
student's code in a fresh process per part), once in the sandbox and once with
``--unsafe-no-sandbox``'s plain process,
alternating, several rounds; the best time of each is compared. The issue's budget: at most
10 % more time with the sandbox. Instructor tooling: run it in the instructor's repository.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import nbformat

from benchmarks.handins import fill_in
from course_grader.handin import grade_hand_in
from course_grader.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[1]


def grade_once(assignment: str, sandbox: Sandbox) -> float:
    name = f"{assignment}.ipynb"
    source = nbformat.read(ROOT / "solutions" / assignment / name, as_version=4)
    release_dir = ROOT / "exercises" / assignment
    hand_in = fill_in(nbformat.read(release_dir / name, as_version=4), source, {})
    start = time.perf_counter()
    results = grade_hand_in(source, hand_in, release_dir, sandbox, 60, name)
    elapsed = time.perf_counter() - start
    assert all(r.passed for r in results), [(r.grade_id, r.message) for r in results if not r.passed]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--assignments", nargs="*", default=sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    )
    args = parser.parse_args()
    sandboxed, plain = Sandbox(), Sandbox(unsafe=True)
    total = {"sandbox": 0.0, "plain": 0.0}
    print(f"{'assignment':28s} {'plain s':>8s} {'sandbox s':>10s} {'ratio':>6s}")
    for assignment in args.assignments:
        best = {"sandbox": float("inf"), "plain": float("inf")}
        for _ in range(args.rounds):
            best["plain"] = min(best["plain"], grade_once(assignment, plain))
            best["sandbox"] = min(best["sandbox"], grade_once(assignment, sandboxed))
        for key in total:
            total[key] += best[key]
        print(f"{assignment:28s} {best['plain']:8.2f} {best['sandbox']:10.2f} {best['sandbox'] / best['plain']:6.3f}")
    ratio = total["sandbox"] / total["plain"]
    print(f"{'all assignments':28s} {total['plain']:8.2f} {total['sandbox']:10.2f} {ratio:6.3f}")
    print(f"sandbox overhead: {100 * (ratio - 1):+.1f} % (budget: at most +10 %)")


if __name__ == "__main__":
    main()
