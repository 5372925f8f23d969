"""A judge killed while it measures a call leaves no part frozen (course_grader/control_groups.py).

While the judge measures one call of ps13 in a copy of the runner, it keeps the rest of the part
frozen (course_grader/measured_copy.py). cgroup v1's frozen processes cannot even die until
someone thaws them: killed then (its hand-in's time-out, an administrator), the judge left them
frozen for good. Its watchdog, a shell outside the part's groups reading the groups the judge
makes from a pipe only the judge writes to, now kills, thaws and removes them when the judge
ends, killed or not.
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

# The part's runner: given a line, it forks its standby copy; both sleep.
RUNNER = "import os, sys, time\nsys.stdin.readline()\nos.fork()\ntime.sleep(60)\n"

# A judge that measures a call the way the grader does (CopyMeter.apart, Copy.alone) and, with
# the part frozen, says what it holds and waits to be killed.
JUDGE = """
import json, subprocess, sys, time
from course_grader.control_groups import ControlGroups, Watchdog
from course_grader.measured_copy import CopyMeter, _children
from course_grader.sandbox import Limits

control, limits = ControlGroups.find(), Limits()
assert control is not None and control.can_freeze, "root without control groups and a freezer"
groups = control.make(limits)
runner = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.PIPE)
for group in groups:
    (group / "cgroup.procs").write_text(str(runner.pid))
with CopyMeter(runner.pid, groups, control, limits).apart() as copy:
    runner.stdin.write(b"\\n")
    runner.stdin.flush()
    while not _children(runner.pid) - copy.before:
        time.sleep(0.001)
    copy.alone()
    (made,) = _children(runner.pid) - copy.before
    pids = {"watchdog": Watchdog.process.pid, "runner": runner.pid, "copy": made}
    print(json.dumps({"groups": [str(g) for g in groups + copy.fresh], "pids": pids}), flush=True)
    time.sleep(60)
"""

# A process that makes groups, leaves a process in them and ends.
LEAVES = """
import json, subprocess
from course_grader.control_groups import ControlGroups, Watchdog
from course_grader.sandbox import Limits

groups = ControlGroups.find().make(Limits())
sleeper = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL)
for group in groups:
    (group / "cgroup.procs").write_text(str(sleeper.pid))
pids = {"watchdog": Watchdog.process.pid, "sleeper": sleeper.pid}
print(json.dumps({"groups": [str(g) for g in groups], "pids": pids}), flush=True)
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
        groups, pids = held(line)
        assert any(frozen(g) for g in groups), "the part was not frozen"
        watched = Path(f"/proc/{pids['watchdog']}/cgroup").read_text()
        assert not any(g.name in watched for g in groups), f"the watchdog is in the part's groups: {watched}"
    finally:
        judge.kill()
        judge.wait()
    assert_all_gone(groups, pids, "the judge was killed")


def test_a_process_that_ends_leaves_no_group_behind():
    ends = subprocess.run([sys.executable, "-c", LEAVES], cwd=ROOT, capture_output=True, text=True, timeout=10)
    assert ends.returncode == 0, ends.stderr
    assert_all_gone(*held(ends.stdout), "the process that made them ended")


def held(line: str) -> tuple[list[Path], dict[str, int]]:
    """The groups and processes a judge says it holds."""
    told = json.loads(line)
    return [Path(g) for g in told["groups"]], told["pids"]


def assert_all_gone(groups: list[Path], pids: dict[str, int], after: str) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (any(map(running, pids.values())) or any(g.exists() for g in groups)):
        time.sleep(0.01)
    alive = {name: pid for name, pid in pids.items() if running(pid)}
    assert not alive, f"still running 5 s after {after}: {alive}"
    left = {str(g): frozen(g) for g in groups if g.exists()}
    assert not left, f"groups left behind (frozen: True) 5 s after {after}: {left}"
