"""A judge killed while it measures a call leaves no part frozen (course_grader/control_groups.py).

While the judge measures one call of ps13 in a copy of the runner, it keeps the rest of the part
frozen (course_grader/measured_copy.py). cgroup v1's frozen processes cannot even die until
someone thaws them: killed then (the grading run's time-out, an administrator), the judge left
them frozen for good. Its watchdog, a shell outside the part's groups that holds the other end
of a pipe only the judge writes to, now thaws, empties and removes the groups when the judge dies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="control groups need root (CI runs as root)")

# The part's runner: for each line, a child (its standby copy) that sleeps that many seconds.
RUNNER = """
import os, signal, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # its copies are reaped even while it is frozen
for line in sys.stdin:
    if os.fork() == 0:
        time.sleep(float(line))
        os._exit(0)
"""

# A judge that measures one call the way the grader does (CopyMeter.apart, Copy.alone), ends
# that copy and leaves; then measures a second call and, with the part frozen, says what it
# holds and waits to be killed.
JUDGE = """
import json, os, signal, subprocess, sys, time
from course_grader.control_groups import ControlGroups
from course_grader.measured_copy import CopyMeter, _children
from course_grader.sandbox import Limits

def copy_made(copy, runner, seconds):
    runner.stdin.write(f"{seconds}\\n".encode())
    runner.stdin.flush()
    while not _children(runner.pid) - copy.before:
        time.sleep(0.001)
    copy.alone()
    (made,) = _children(runner.pid) - copy.before
    return made

control, limits = ControlGroups.find(), Limits()
assert control is not None and control.can_freeze, "root without control groups and a freezer"
groups = control.make(limits)
runner = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.PIPE)
for group in groups:
    (group / "cgroup.procs").write_text(str(runner.pid))
meter = CopyMeter(runner.pid, groups, control, limits)
with meter.apart() as copy:
    os.kill(copy_made(copy, runner, 60), signal.SIGKILL)
watchdog = copy.watchdog
assert watchdog is not None and watchdog.process.returncode == 0, "the first watchdog did not end"
assert all(group.is_dir() for group in groups) and runner.poll() is None, "the part did not outlive its call"
with meter.apart() as copy:
    made = copy_made(copy, runner, 60)
    fresh = [str(group) for group in copy.fresh]
    pids = {"watchdog": copy.watchdog.process.pid, "runner": runner.pid, "copy": made}
    print(json.dumps({"groups": [str(g) for g in groups], "fresh": fresh, "pids": pids}), flush=True)
    time.sleep(60)
"""


def frozen(group: Path) -> bool | None:
    """Whether the group's processes are stopped; ``None`` where it is no freezer."""
    if (group / "freezer.state").exists():
        return (group / "freezer.state").read_text().strip() == "FROZEN"
    if (group / "cgroup.freeze").exists():
        return "frozen 1" in (group / "cgroup.events").read_text()
    return None


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (an orphan's zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_judge_killed_with_its_part_frozen_leaves_nothing_frozen_behind():
    judge = subprocess.Popen(
        [sys.executable, "-c", JUDGE, RUNNER], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        line = judge.stdout.readline()
        assert line, f"the judge ended before it froze the part (exit status {judge.wait(10)})"
        held = json.loads(line)
        groups, pids = [Path(g) for g in held["groups"] + held["fresh"]], held["pids"]
        assert any(frozen(g) for g in groups), "the part was not frozen"
        watched = Path(f"/proc/{pids['watchdog']}/cgroup").read_text()
        assert not any(g.name in watched for g in groups), f"the watchdog is in the part's groups: {watched}"
    finally:
        judge.kill()
        judge.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (any(map(running, pids.values())) or any(g.exists() for g in groups)):
        time.sleep(0.01)
    alive = {name: pid for name, pid in pids.items() if running(pid)}
    assert not alive, f"still running 5 s after the judge was killed: {alive}"
    left = {str(g): frozen(g) for g in groups if g.exists()}
    assert not left, f"groups left behind (frozen: True) 5 s after the judge was killed: {left}"
