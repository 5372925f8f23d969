"""The judge's memory meter (course_grader/meter.py), read from outside a bubblewrap sandbox: it
measures the sandboxed process it is given (the judge finds the runner by its pid in the
sandbox, never by what the process says of itself), not a younger process the student's code
starts, and reads one call's peak from a reset high-water mark."""

from __future__ import annotations

import subprocess
import sys

import pytest

from course_grader.meter import MemoryMeter, MeterError, descendants
from course_grader.sandbox import find_bwrap

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="the grader's sandbox needs bubblewrap")

# Waits for a line before each step: a child that holds 120 MB and sleeps (younger, and heavier
# than its parent), then 40 MB held and freed by the process itself.
CHILD = """
import os, sys, time
def hold(mb):
    block = bytearray(mb * 1024**2)
    for k in range(0, len(block), 4096):
        block[k] = 1
    return block
sys.stdin.readline()
if os.fork() == 0:
    kept = hold(120)
    time.sleep(60)
sys.stdout.write("forked\\n"); sys.stdout.flush()
sys.stdin.readline()
hold(40)
sys.stdout.write("done\\n"); sys.stdout.flush()
sys.stdin.readline()
"""


def test_the_meter_reads_one_calls_peak_of_the_sandboxed_process():
    command = [find_bwrap(), "--unshare-all", "--as-pid-1", "--die-with-parent", "--ro-bind", "/", "/"]
    command += ["--proc", "/proc", "--dev", "/dev", sys.executable, "-c", CHILD]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:

        def step() -> str:
            process.stdin.write("\n")
            process.stdin.flush()
            return process.stdout.readline().strip()

        assert step() == "forked"
        sandboxed, child = descendants(process.pid)[1:]  # bubblewrap, its Python (pid 1 there), the child
        meter = MemoryMeter(sandboxed)
        baseline = meter.reset()
        assert 0 < baseline < 100 * 1024**2, "the meter read the child that holds 120 MB, not the process"
        assert step() == "done"
        peak = meter.peak() - baseline
        assert 39 * 1024**2 <= peak < 45 * 1024**2, f"a 40 MB call read as {peak / 1024**2:.1f} MB"
        meter.reset()
        assert meter.peak() - baseline < 2 * 1024**2, "the reset did not lower the high-water mark"
        step()
        process.wait(10)
        with pytest.raises(MeterError):
            meter.reset()
    finally:
        process.kill()
        process.wait()
