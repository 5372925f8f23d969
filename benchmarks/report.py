"""How long ``make report`` and ``make similarity`` take for a large class.

    python -m benchmarks.report [--students 300] [--postgres URL]

Builds the crafted class of benchmarks/crafted_class.py with ``--students`` students (two
assignments, so about twice as many graded hand-ins) in a sqlite gradebook (or the empty
PostgreSQL database ``--postgres`` names), then runs the two commands as make runs them, each
in a fresh process: ``python -m course_grader.report`` and ``python -m course_grader.similarity``
on ``--students`` hand-ins of ps01 (benchmarks/crafted_copies.py, one disguised copy among
them). Wall-clock seconds, process start and imports included (nbgrader's import alone takes
a few seconds). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import crafted_class, crafted_copies

ROOT = Path(__file__).resolve().parents[1]


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed, proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--postgres", help="an empty PostgreSQL database's URL (default: a sqlite file)")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="report-benchmark-") as work:
        course = Path(work) / "class"
        url = args.postgres or f"sqlite:///{course / 'gradebook.db'}"
        env["DB_URL"] = url
        start = time.perf_counter()
        plan = crafted_class.build(course, url, args.students)
        hand_ins = sum(r.kind == "graded" for results in plan.values() for r in results.values())
        took = time.perf_counter() - start
        print(f"built the class: {args.students} students, {hand_ins} graded hand-ins ({took:.1f} s)")
        seconds, out = timed([sys.executable, "-m", "course_grader.report"], course, env)
        print(f"make report:     {seconds:6.1f} s  ({out.splitlines()[0]})")

        copies = Path(work) / "copies"
        crafted_copies.write_class(copies, honest_students=args.students - 2)
        command = [sys.executable, "-m", "course_grader.similarity", crafted_copies.ASSIGNMENT]
        seconds, out = timed(command, copies, env)
        print(f"make similarity: {seconds:6.1f} s  ({out.splitlines()[0]}; top: {out.splitlines()[1].strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
