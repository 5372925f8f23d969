"""One sandbox per hand-in: each part's runner, forked by the zygote, is as fresh as one started anew.

All parts here share one warm sandbox (course_grader.part_runs), as a hand-in's parts do: what
one part's code leaves in the sandbox's files, does to the zygote or to its control groups must
not reach the next part's process.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from course_grader import stand_ins
from course_grader.endpoint import Endpoint
from course_grader.limits import Limits
from course_grader.meter import MemoryMeter
from course_grader.no_programs import landlock_abi
from course_grader.part_runs import PartRun, WarmSandbox
from course_grader.protocol import READY
from course_grader.sandbox import Sandbox, find_bwrap
from course_grader.stand_ins import JudgeCodec, grant, serve

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="the grader's sandbox needs bubblewrap")


def run_part(
    warm: WarmSandbox, source: str, peaks: list[int] | None = None, during: Callable[[Any], None] | None = None
) -> tuple[object, PartRun]:
    """Fork a part's runner, run one answer cell binding ``out``; ``out`` (or the error that
    ended the channel) and the finished run. With ``peaks``, the judge's meter of the runner,
    reset before the job is sent: the most memory the cell held goes into the list. With
    ``during``, called on the host with ``out`` once the cell has run, while the part's runner
    still lives."""
    run = warm.start()
    if peaks is not None:
        meter = MemoryMeter(run.pid, run.groups)
        baseline = meter.reset()
    stand_ins.connect(Endpoint(run.reply_read, run.request_write, JudgeCodec(), serve))
    sandbox = warm.sandbox
    stand_ins.CHANNEL.send(
        {
            "cells": [{"name": "cell", "kind": "answer", "source": source}],
            "cell_timeout": 10,
            "rlimits": sandbox.limits.rlimits(),
            "course_lib_parent": sandbox.inside_course_lib_parent,
            "answers": ["out"],
            "classes": [],
            "debug": False,
        }
    )
    out: object = None
    try:
        while (event := stand_ins.CHANNEL.receive()).get("event") != READY:
            pass
        out = stand_ins.CHANNEL.codec.decode(event["names"].get("out"))
        if peaks is not None:
            peaks.append(meter.peak() - baseline)
        if during is not None:
            during(out)
    except Exception as error:  # noqa: BLE001 - what ended the channel is the answer
        out = error
    finally:
        run.finish()
    return out, run


def read_change_read(warm: WarmSandbox, read: str, change: str) -> tuple[object, object, object]:
    """What a part's ``read`` cell finds, what a later part's ``change`` cell answers, and what
    ``read`` finds in the part after that."""
    return run_part(warm, read)[0], run_part(warm, change)[0], run_part(warm, read)[0]


@pytest.fixture
def warm(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "data.csv").write_text("1,2\n")
    warm = WarmSandbox(Sandbox(Limits()), tmp_path, files, ["numpy"])
    yield warm
    warm.close()


LEAVE_TRACES = """
import ctypes, os
ctypes.CDLL(None).shmget(4242, 4096, 0o1000 | 0o600)  # IPC_CREAT: shared memory outlives its process
for path in ('/tmp/trace', 'trace', '/opt/trace', '/dev/shm/trace', '/trace'):
    try:  # the root (/opt, /) is read-only
        with open(path, 'w') as f:
            f.write('left')
    except OSError:
        pass
os.mkdir('locked')
os.mkdir('locked/inner', 0)  # made without any permission (a part may not chmod)
try:
    open('data.csv', 'w').write('changed')
except OSError:
    pass
out = repr(sorted(os.listdir('.')))
"""
LOOK_FOR_TRACES = """
import ctypes, os
out = [p for p in ('/tmp/trace', 'trace', '/opt/trace', '/dev/shm/trace', '/trace', 'locked') if os.path.exists(p)]
out += ['shared memory'] if ctypes.CDLL(None).shmget(4242, 0, 0) >= 0 else []
out = repr([open('data.csv').read(), oct(os.stat('/tmp').st_mode & 0o777), *out])
"""


def test_a_part_sees_nothing_an_earlier_part_left(warm):
    written, _ = run_part(warm, LEAVE_TRACES)
    assert "'trace'" in str(written), written  # the traces were made
    seen, _ = run_part(warm, LOOK_FOR_TRACES)
    other = warm.folder / "other"
    other.mkdir()
    new = WarmSandbox(warm.sandbox, other, warm.files, [])
    fresh, _ = run_part(new, LOOK_FOR_TRACES)
    new.close()
    assert seen == fresh, "a part saw what an earlier part left in the sandbox"
    assert seen.startswith("['1,2\\n'") and warm.starts == 1, (seen, warm.starts)


ATTACK_THE_ZYGOTE = """
import os, signal
found = []
for sig in (signal.SIGSTOP, signal.SIGKILL):
    os.kill(os.getppid(), sig)
try:
    os.open(f'/proc/{os.getppid()}/mem', os.O_RDWR)
    found.append('wrote the memory of the zygote')
except OSError:
    pass
out = repr([os.getppid(), *found])
"""


@pytest.mark.skipif(not landlock_abi(), reason="this kernel has no Landlock to keep a part from the zygote")
def test_a_part_can_neither_kill_stop_nor_write_the_zygote(warm):
    attacked, _ = run_part(warm, ATTACK_THE_ZYGOTE)
    assert attacked == "[1]", attacked  # its parent is the sandbox's pid 1, unharmed
    after, _ = run_part(warm, "out = 'fine'")
    assert after == "fine" and warm.starts == 1, (after, warm.starts)


def test_a_dead_zygote_costs_no_later_part(warm):
    first, _ = run_part(warm, "out = 1")
    assert warm.run is not None and first == 1
    os.killpg(warm.run.process.pid, signal.SIGKILL)  # the whole sandbox, from outside
    warm.run.process.wait()
    later, _ = run_part(warm, "out = 2")
    assert later == 2 and warm.starts == 2, (later, warm.starts)


@pytest.mark.skipif(os.geteuid() != 0, reason="control groups need root (CI runs as root)")
def test_each_part_runs_in_control_groups_of_its_own_left_behind_by_none(warm):
    source = "out = open('/proc/self/cgroup').read()"
    first, one = run_part(warm, source)
    second, two = run_part(warm, source)
    assert warm.run is not None and warm.starts == 1
    sandbox_groups = list(warm.run.groups)
    assert one.groups and two.groups and not set(one.groups) & set(two.groups)
    for text, run in ((first, one), (second, two)):
        assert all(group.name in str(text) for group in run.groups), (text, run.groups)
        assert not any(group.name in str(text) for group in sandbox_groups), text
    warm.close()
    left = [g for g in [*sandbox_groups, *one.groups, *two.groups] if Path(g).exists()]
    assert not left, f"control groups were left behind: {left}"


LEAVE_A_MESSAGE_QUEUE = """
import ctypes, os
rt = ctypes.CDLL('librt.so.1')
queue = rt.mq_open(b'/left', os.O_CREAT | os.O_RDWR, 0o600, None)
out = repr(queue >= 0 and rt.mq_send(queue, b'from an earlier part', 20, 0) == 0)
"""
READ_A_MESSAGE_QUEUE = """
import ctypes, os
rt = ctypes.CDLL('librt.so.1')
queue = rt.mq_open(b'/left', os.O_RDWR)
text = ctypes.create_string_buffer(8192)
length = rt.mq_receive(queue, text, 8192, None) if queue >= 0 else -1
out = repr(text.raw[:length] if length >= 0 else None)
"""


ADD_A_KEY = """
import ctypes
libc = ctypes.CDLL(None)  # add_key(type, description, payload, length, KEY_SPEC_USER_KEYRING)
out = repr(libc.syscall(248, b'user', b'left', b'from an earlier part', 20, -4) >= 0)
"""
READ_A_KEY = """
import ctypes
libc = ctypes.CDLL(None)
key = libc.syscall(249, b'user', b'left', None, 0)  # request_key: searches the user keyring
text = ctypes.create_string_buffer(64)
length = libc.syscall(250, 11, key, text, 64) if key >= 0 else -1  # KEYCTL_READ
out = repr(text.raw[:length] if length >= 0 else None)
"""


@pytest.mark.parametrize(
    ("leave", "read"),
    [(LEAVE_A_MESSAGE_QUEUE, READ_A_MESSAGE_QUEUE), (ADD_A_KEY, READ_A_KEY)],
    ids=["posix-message-queue", "user-keyring-key"],
)
def test_no_ipc_object_outlives_its_part(warm, leave, read):
    # POSIX message queues live in the IPC namespace all of a hand-in's parts share (no
    # /dev/mqueue lists them for restore()), and a key in the user keyring in its user
    # namespace, outliving the process that added it: the runner's filter refuses to make either.
    made, _ = run_part(warm, leave)
    assert made == "False", made
    found, _ = run_part(warm, read)
    assert found == "None", f"a later part read what an earlier part left: {found}"


@pytest.fixture
def warm_without_groups(tmp_path, monkeypatch):
    """A warm sandbox as an ordinary user grades: no control groups (as root, run as root: the
    slot's own user cannot reach a Python under /root, and the attack does not need it)."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "data.csv").write_text("1,2\n")
    sandbox = Sandbox(Limits())
    monkeypatch.setattr(sandbox, "groups", None)
    monkeypatch.setattr(sandbox, "confined", lambda cmd: cmd)
    warm = WarmSandbox(sandbox, tmp_path, files, ["numpy"])
    yield warm
    warm.close()


DETACH = """
import os, time
if os.fork() == 0:
    os.setsid()  # out of the part's process group, all the judge kills without control groups
    if os.fork() == 0:
        while True:
            time.sleep(0.05)  # a process of this part's, alive while later parts run
    os._exit(0)
os.wait()
out = 'detached'
"""
OTHER_PROCESSES = """
import os
out = repr(sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()))
"""


def test_no_process_of_a_part_outlives_it_without_control_groups(warm_without_groups):
    # The runner ended of itself, so finish() kills nothing; and killpg() would miss a process
    # in a session of its own. It shares the sandbox with every later part (it can signal
    # their runners: the runner's Landlock domain scopes no signals).
    planted, _ = run_part(warm_without_groups, DETACH)
    assert planted == "detached", planted
    seen, _ = run_part(warm_without_groups, OTHER_PROCESSES)
    assert seen == "[1]", f"a process of an earlier part still runs beside a later part: {seen}"


REMOVE_AND_RETARGET = """
import errno, os
refused = []
for change in (
    lambda: os.rmdir('/dev/shm'),  # where POSIX semaphores live: multiprocessing's locks
    lambda: os.rename('/dev/shm', '/dev/shm-old'),
    lambda: os.unlink('/bin'),
    lambda: os.symlink('/nowhere/an-earlier-part', '/left'),  # a new symlink in the root
    lambda: os.unlink('/dev/fd'),
    lambda: os.mkdir('/opt/left'),
):
    try:
        change()
    except OSError as error:
        refused.append(errno.errorcode[error.errno])
out = repr(refused)
"""
USE_WHAT_WAS_THERE = """
import multiprocessing, os
try:
    multiprocessing.Lock()
    lock = 'lock'
except OSError as error:
    lock = repr(error)
out = repr([lock, os.readlink('/bin')])
"""


def test_restore_puts_back_what_a_part_removed_or_retargeted(warm):
    # restore() removes what is new and resets modes, but would never make again a path that
    # was there (an empty folder, a symlink): the root and /dev are read-only, /dev/shm a mount.
    done, _ = run_part(warm, REMOVE_AND_RETARGET)
    assert done == repr(["EROFS"] * 6), done
    seen, _ = run_part(warm, USE_WHAT_WAS_THERE)
    assert seen == "['lock', 'usr/bin']", f"a part broke what a later part uses: {seen}"


PLANT_A_LINK = """
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:  # each time the judge empties the home, a link where it copies data.csv
            try:
                os.symlink(OUTSIDE, 'data.csv')
            except OSError:
                pass
    os._exit(0)
os.wait()
out = 'planted'
"""


def test_the_judge_writes_no_file_outside_the_home_without_control_groups(warm_without_groups, tmp_path):
    # The home is the judge's own folder there: _fill_home() empties it, then copies the data
    # files in with shutil.copyfile, which follows a symlink a surviving process made meanwhile.
    outside = tmp_path / "the grader's own file"
    outside.write_text("grades")
    planted, _ = run_part(warm_without_groups, f"OUTSIDE = {str(outside)!r}\n{PLANT_A_LINK}")
    assert planted == "planted", planted
    for _ in range(2):
        run_part(warm_without_groups, "out = 1")
    assert outside.read_text() == "grades", "the judge wrote a file a part's process pointed it to"


def test_the_judge_empties_no_folder_outside_the_home_without_control_groups(warm_without_groups, tmp_path):
    # The home's .tmp (bound as /tmp) is a plain folder of the bound home inside the sandbox:
    # a part renames it and leaves a symlink; _fill_home() then tests tmp.is_dir() (following
    # the link), empties where it points and makes it mode 1777. No surviving process needed.
    folder = tmp_path / "the grader's folder"
    folder.mkdir()
    (folder / "grades.csv").write_text("grades")
    swap = f"import os\nos.rename('.tmp', 'old')\nos.symlink({str(folder)!r}, '.tmp')\nout = 'swapped'"
    swapped, _ = run_part(warm_without_groups, swap)
    assert swapped == "swapped", swapped
    run_part(warm_without_groups, "out = 1")
    assert (folder / "grades.csv").exists(), "the judge emptied a folder a part's symlink pointed to"


def test_no_extended_attribute_outlives_its_part(warm):
    # restore() puts back a folder's mode, not its extended attributes: the filter refuses them.
    tag = """
import os
try:
    os.setxattr('/tmp', 'user.left', b'earlier')
    out = 'tagged'
except OSError as error:
    out = error.strerror
"""
    tagged, _ = run_part(warm, tag)
    assert tagged == "Operation not permitted", tagged
    seen, _ = run_part(warm, "import os\nout = repr(os.listxattr('/tmp'))")
    assert seen == "[]", f"a later part read what an earlier part wrote: {seen}"


SET_THE_TIMES = """
import fcntl, os, struct
refused = []
for folder in ('/proc', '/dev/pts', '/tmp', '/dev/shm', '.'):  # any time it likes
    try:
        os.utime(folder, ns=(4242424242000000001, 1234567890123456789))
    except OSError:
        refused.append(folder)
for folder in ('/tmp', '/dev/shm', '.'):  # and two of its inode's flags (nodump, noatime)
    descriptor = os.open(folder, os.O_RDONLY)
    fcntl.ioctl(descriptor, 0x40086602, struct.pack('l', 0x40 | 0x80))  # FS_IOC_SETFLAGS
    os.close(descriptor)
    open(f'{folder}/new', 'w').close()  # the folder's times change as it changes, too
out = repr(refused)
"""
READ_THE_TIMES = """
import fcntl, os, struct
def flags(folder):
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        return struct.unpack('l', fcntl.ioctl(descriptor, 0x80086601, bytes(8)))[0]  # FS_IOC_GETFLAGS
    finally:
        os.close(descriptor)
times = [(os.stat(f).st_atime_ns, os.stat(f).st_mtime_ns) for f in ('/proc', '/dev/pts')]
out = repr([(os.stat(f).st_atime_ns, os.stat(f).st_mtime_ns, flags(f)) for f in ('/tmp', '/dev/shm', '.')] + times)
"""


def test_no_folder_time_or_flag_an_earlier_part_set_reaches_a_later_part(warm):
    # utime() would write two 64-bit numbers on each folder (in a part it does nothing); a
    # folder's times change with what it holds, and its inode flags (FS_IOC_SETFLAGS) are the
    # user's to set: restore() puts them back on /tmp, /dev/shm and the home.
    before, done, seen = read_change_read(warm, READ_THE_TIMES, SET_THE_TIMES)
    assert done == "[]", done
    assert seen == before, f"a later part read the times an earlier part set: {seen} (were {before})"
    flags = [eval(text)[k][2] for text in (before, seen) for k in range(3)]  # noqa: S307 - the runner's repr
    assert flags[:3] == flags[3:], f"a later part read the inode flags an earlier part set: {flags[3:]}"


CHANGE_THE_ZYGOTE = """
import os, resource
# The zygote (pid 1) has this part's user: the kernel lets a part lower its limits, its
# priority and its processors, and raise its OOM score; every later part's runner, forked
# from it, inherits them (the runner sets only the CPU, memory, file, process and core limits).
changed = []
for change in (
    lambda: resource.prlimit(1, resource.RLIMIT_DATA, (300 << 20, 300 << 20)),
    lambda: resource.prlimit(1, resource.RLIMIT_STACK, (1 << 20, 1 << 20)),
    lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (77, 77)),
    lambda: os.setpriority(os.PRIO_PROCESS, 1, 19),  # the lowest priority: always allowed
    lambda: os.sched_setaffinity(1, {max(os.sched_getaffinity(0))}),
    lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0)),
    lambda: open('/proc/1/oom_score_adj', 'w').write('777'),  # /proc is read-only
):
    try:
        change()
        changed.append('changed')
    except OSError as error:
        changed.append(error.strerror)
out = repr(changed)
"""
READ_WHAT_IT_INHERITED = """
import os, resource
names = ('RLIMIT_DATA', 'RLIMIT_STACK', 'RLIMIT_NOFILE')
out = repr([*(resource.getrlimit(getattr(resource, n)) for n in names), os.getpriority(os.PRIO_PROCESS, 0),
            os.sched_getscheduler(0), sorted(os.sched_getaffinity(0)), open('/proc/self/oom_score_adj').read().strip()])
"""
HONEST_ALLOCATION = "import numpy\nout = float(numpy.ones(50_000_000).sum())"  # 400 MB


def test_no_limit_an_earlier_part_set_on_the_zygote_reaches_a_later_part(warm):
    before, changed, after = read_change_read(warm, READ_WHAT_IT_INHERITED, CHANGE_THE_ZYGOTE)
    assert changed == repr(["changed"] * 6 + ["Read-only file system"]), changed
    assert after == before, f"a later part inherited what an earlier part set on the zygote: {after} (was {before})"
    honest, _ = run_part(warm, HONEST_ALLOCATION)
    assert honest == 5e7, f"an honest later part failed: {honest}"


def test_an_earlier_part_cannot_keep_a_later_parts_runner_from_starting(warm):
    # The zygote's hard file-size limit lowered below the one the runner sets: the next
    # runner's setrlimit fails before any cell runs, which the judge takes for a failure of
    # the machinery, and the whole hand-in goes unscored, to a human.
    lowered = "import resource\nresource.prlimit(1, resource.RLIMIT_FSIZE, (4096, 4096))\nout = 'lowered'"
    done, _ = run_part(warm, lowered)
    assert done == "lowered", done
    later, _ = run_part(warm, "out = 'ran'")
    assert later == "ran", f"a later part's runner did not start: {later!r}"


HOLD_IN_A_CHILD = """
import os, numpy
child = os.fork()
if child == 0:  # the memory is held by a process of the part's that is not the runner
    numpy.ones(40_000_000)
    os._exit(0)
os.waitpid(child, 0)
out = 'held'
"""
HOLD_THEN_RESET_THE_MARK = """
import numpy
numpy.ones(40_000_000)  # 320 MB, given back to the kernel as the array goes
try:
    with open('/proc/self/clear_refs', 'w') as marks:
        marks.write('5')  # the runner's own high-water mark, reset to what it holds now
except OSError:
    pass  # /proc is read-only
out = 'held'
"""


def test_the_meter_sees_all_the_memory_a_part_held(warm):
    # peak_memory (ps13's checkpointing test) reads the runner's VmHWM: memory a forked child
    # holds is never counted (an answer that records the whole flight in a child passes,
    # 19/19 where the same answer in the runner scores 13/19), and the runner may reset its
    # own mark through /proc/self/clear_refs just before the call returns.
    peaks: list[int] = []
    for source in (HOLD_IN_A_CHILD, HOLD_THEN_RESET_THE_MARK):
        held, _ = run_part(warm, source, peaks)
        assert held == "held", held
    assert min(peaks) >= 300e6, f"the meter read {[f'{p / 1e6:.1f} MB' for p in peaks]} for 320 MB held"


TOUCH_A_DEVICE = """
import os
done = []
for change in (lambda: os.chmod('/dev/full', 0o666), lambda: os.utime('/dev/full', ns=(1111111111000000001, 1222))):
    try:  # the mode /dev/full has: were it 0, no process of the host but root's could open it
        change()
        done.append('changed')
    except OSError as error:
        done.append(error.strerror)
out = repr(done)
"""


def test_a_part_changes_no_device_node_of_the_host(warm):
    # bubblewrap's --dev binds the host's /dev/null, zero, full, random, urandom and tty, read-
    # write; as root the sandbox's user is the host's root (uid 0, no capabilities), their owner:
    # a part could chmod the host's /dev/null for every user of the machine and every sandbox,
    # or write a number into its times that a later part, or another hand-in, reads.
    host = os.stat("/dev/full")
    try:
        done, _ = run_part(warm, TOUCH_A_DEVICE)
        after = os.stat("/dev/full")
        assert (after.st_atime_ns, after.st_mtime_ns) == (host.st_atime_ns, host.st_mtime_ns), (
            f"a part changed the host's /dev/full: {done}"
        )
    finally:
        os.utime("/dev/full", ns=(host.st_atime_ns, host.st_mtime_ns))


# io_uring (io_uring_setup, io_uring_enter), which the filter allows, does some of what it
# refuses: its SETXATTR request sets an extended attribute, or a POSIX ACL, with no setxattr
# system call the filter sees.
IO_URING_SETXATTR = """
import ctypes, mmap, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEEP = []
def address(data):
    KEEP.append(ctypes.create_string_buffer(data, len(data)))
    return ctypes.addressof(KEEP[-1])
def setxattr(path, name, value):  # IORING_OP_SETXATTR (42), waited for: its result
    params = ctypes.create_string_buffer(120)
    ring = libc.syscall(425, 4, params)  # io_uring_setup
    if ring < 0:
        return -ctypes.get_errno()
    sq_entries, cq_entries = struct.unpack_from('II', params.raw, 0)
    sq, cq = struct.unpack_from('IIIIIIIIQ', params.raw, 40), struct.unpack_from('IIIIIIIIQ', params.raw, 80)
    size = max(sq[6] + sq_entries * 4, cq[5] + cq_entries * 16)
    rings = mmap.mmap(ring, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
    sqes = mmap.mmap(ring, sq_entries * 64, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=0x10000000)
    sqes[0:64] = struct.pack('=BBHiQQIIQHHIQQ', 42, 0, 0, -1, address(value), address(name + b'\\0'),
                             len(value), 0, 1, 0, 0, 0, address(path + b'\\0'), 0)
    tail, mask = struct.unpack_from('II', rings, sq[1])
    struct.pack_into('I', rings, sq[6] + (tail & mask) * 4, 0)
    struct.pack_into('I', rings, sq[1], tail + 1)
    if libc.syscall(426, ring, 1, 1, 1, None, 0) < 0:  # io_uring_enter: submit one, wait for it
        return -ctypes.get_errno()
    head, = struct.unpack_from('I', rings, cq[0])
    result, = struct.unpack_from('i', rings, cq[5] + (head & struct.unpack_from('I', rings, cq[2])[0]) * 16 + 8)
    return result
"""


def test_no_extended_attribute_outlives_its_part_through_io_uring(warm):
    # The filter refuses setxattr, lsetxattr, fsetxattr and setxattrat, not io_uring: an
    # IORING_OP_SETXATTR puts 'user.left' on /tmp, /dev/shm and the home, which restore()
    # never looks at, and a later part reads it back with getxattr.
    tags = "out = repr([setxattr(f.encode(), b'user.left', b'earlier') for f in ('/tmp', '/dev/shm', '.')])"
    tag = IO_URING_SETXATTR + tags
    tagged, _ = run_part(warm, tag)
    assert isinstance(tagged, str), tagged
    seen, _ = run_part(warm, "import os\nout = repr([os.listxattr(f) for f in ('/tmp', '/dev/shm', '.')])")
    assert seen == "[[], [], []]", f"a later part read what an earlier part wrote through io_uring: {seen} ({tagged})"


ACL_ON_A_DEVICE = """
acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', tag, 6, 0xFFFFFFFF) for tag in (1, 4))
acl += struct.pack('<HHI', 0x20, 0, 0xFFFFFFFF)  # user rw, group rw, others nothing: mode 0660
out = repr(setxattr(b'/dev/full', b'system.posix_acl_access', acl))
"""


def test_a_part_changes_no_device_node_mode_through_io_uring(warm):
    # chmod is refused, but a POSIX ACL sets a file's mode bits as well, and io_uring's SETXATTR
    # sets one with no system call the filter sees: as root the sandbox's user owns the host's
    # /dev/full (bound read-write), so a part could make the host's /dev/null 0600 for every
    # user of the machine. Here /dev/full, put back whatever happens.
    host = os.stat("/dev/full")
    try:
        done, _ = run_part(warm, IO_URING_SETXATTR + ACL_ON_A_DEVICE)
        after = os.stat("/dev/full")
        assert after.st_mode == host.st_mode, f"a part changed the mode of the host's /dev/full: {done}"
    finally:
        os.chmod("/dev/full", host.st_mode & 0o7777)


HONEST_COPIES = """
import os, shelve, shutil
from pathlib import Path
open('table.csv', 'w').write('1,2\\n')
os.makedirs('runs/first')
open('/tmp/scratch.txt', 'w').write('x')
done = []
for copy in (
    lambda: shutil.copy('table.csv', 'copy.csv'),  # copyfile, then copymode: a chmod
    lambda: shutil.copy2('table.csv', 'copy2.csv'),  # copystat: utime and chmod
    lambda: shutil.copytree('runs', 'runs-saved'),  # copy2 for every file, copystat for every folder
    lambda: shutil.move('/tmp/scratch.txt', 'scratch.txt'),  # another file system: copy2
    lambda: shelve.open('cache').close(),  # dbm.dumb (no dbm.gnu here) chmods the files it makes
    lambda: Path('stamp').touch(),  # utimensat without times: runs, and ENOENT makes it create the file
    lambda: Path('stamp').touch(),
    lambda: os.chmod('copy.csv', 0o600),
):
    try:
        copy()
        done.append('ok')
    except OSError as error:
        done.append(str(error))
out = repr([*done, open('copy2.csv').read(), sorted(os.listdir('runs-saved')), os.path.exists('stamp')])
"""


def test_honest_file_copies_work_in_a_part(warm):
    # shutil's everyday copies (and shelve, through dbm.dumb) copy a file's mode and times:
    # chmod, and utime given times, which succeed in a part without changing anything.
    done, _ = run_part(warm, HONEST_COPIES)
    assert done == repr(["ok"] * 8 + ["1,2\n", ["first"], True]), f"honest file idioms failed in a part: {done}"


def measured_peak(warm: WarmSandbox, source: str, monkeypatch) -> tuple[object, int]:
    """Run a part whose answer cell defines ``measured()``, then the judge's own
    ``peak_memory(measured)``, with its meter made as judge_part makes it: the call's result
    and the memory it held, as the judge reads it."""
    from course_grader import test_tools

    run = warm.start()
    monkeypatch.setattr(test_tools, "METER", MemoryMeter(run.pid, run.groups))
    stand_ins.connect(Endpoint(run.reply_read, run.request_write, JudgeCodec(), serve))
    job = {"cells": [{"name": "cell", "kind": "answer", "source": source}], "cell_timeout": 10}
    job.update(rlimits=warm.sandbox.limits.rlimits(), course_lib_parent=warm.sandbox.inside_course_lib_parent)
    stand_ins.CHANNEL.send({**job, "answers": ["measured"], "classes": [], "debug": False})
    try:
        while (event := stand_ins.CHANNEL.receive()).get("event") != READY:
            pass
        return test_tools.peak_memory(stand_ins.CHANNEL.codec.decode(event["names"]["measured"]))
    finally:
        run.finish()


POSE_AS_BWRAP = """
import ctypes, os, time, numpy
if os.fork() == 0:  # younger than the runner, and holding next to nothing
    while True:
        time.sleep(1)
fields = open('/proc/self/stat').read().rpartition(')')[2].split()
start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end: where /proc/<pid>/cmdline is read
ctypes.memset(start, 0, end - start)
ctypes.memmove(start, b'/usr/bin/bwrap', 14)  # the runner's command line now ends with "bwrap"
def measured():
    return float(numpy.ones(25_000_000).sum())  # 200 MB in the runner
"""


def test_the_meter_measures_the_runner_that_poses_as_bubblewrap(warm_without_groups, monkeypatch):
    # Without control groups the meter reads the runner's VmHWM. It once took for the runner
    # "the oldest process of the sandbox that is not bubblewrap's", told by /proc/<pid>/cmdline,
    # which is the process's own memory to rewrite: a runner posing as bwrap had the meter read
    # an idle child. The judge now gives the meter the runner's pid, found when it was forked.
    result, peak = measured_peak(warm_without_groups, POSE_AS_BWRAP, monkeypatch)
    assert result == 25e6
    assert peak >= 190e6, f"the meter read {peak / 1e6:.1f} MB for a call that held 200 MB"


DEFAULT_ACL = """
acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', tag, 0, 0xFFFFFFFF) for tag in (1, 4, 0x20))
out = repr([setxattr(f.encode(), b'system.posix_acl_default', acl) for f in ('/tmp', '.')])  # files made: mode 0
"""
HONEST_SAVE_AND_LOAD = """
import numpy
numpy.save('/tmp/weights.npy', numpy.arange(3.0))
numpy.save('weights.npy', numpy.arange(3.0))
out = float(numpy.load('/tmp/weights.npy').sum() + numpy.load('weights.npy').sum())
"""


def test_no_default_acl_an_earlier_part_set_breaks_a_later_parts_files(warm):
    # A default ACL (io_uring's SETXATTR, which the filter misses) on /tmp and the home gives
    # every file made there afterwards the ACL's permissions; restore() puts back the folders'
    # modes, not their ACLs. An honest later part that saves and loads an array fails.
    done, _ = run_part(warm, IO_URING_SETXATTR + DEFAULT_ACL)
    honest, _ = run_part(warm, HONEST_SAVE_AND_LOAD)
    assert honest == 6.0, f"an honest later part failed after an earlier part set a default ACL ({done}): {honest!r}"


def test_no_io_priority_an_earlier_part_set_on_the_zygote_reaches_a_later_part(warm):
    # ioprio_set(IOPRIO_WHO_PROCESS, 1, ...) is any process of the zygote's user's to call, and
    # a fork inherits the I/O priority: the idle class (3) set on pid 1 reaches every later
    # part's runner (own_state() compares limits, priority, scheduler and processors only).
    read = "import ctypes\nout = ctypes.CDLL(None).syscall(252, 1, 0)  # ioprio_get(IOPRIO_WHO_PROCESS, self)"
    lower = "import ctypes\nout = ctypes.CDLL(None).syscall(251, 1, 1, 3 << 13)"
    before, _, after = read_change_read(warm, read, lower)
    assert after == before, f"a later part inherited the I/O priority an earlier part set on the zygote: {after}"


MARK_THE_SHARED_DESCRIPTIONS = """
import fcntl, os
fcntl.fcntl(0, fcntl.F_SETFL, os.O_NONBLOCK | os.O_APPEND)  # the zygote's own /dev/null, shared by every fork
fcntl.fcntl(0, 10, 42)  # F_SETSIG: any signal number, kept in the open file description
out = 'marked'
"""
READ_THE_SHARED_DESCRIPTIONS = """
import fcntl
out = repr([fcntl.fcntl(0, fcntl.F_GETFL), fcntl.fcntl(0, 11)])  # 11: F_GETSIG
"""


def test_no_file_status_an_earlier_part_set_reaches_a_later_part(warm):
    # The zygote's standard input and output (the judge's /dev/null) are one open file
    # description that every forked runner shares: its status flags and its F_SETSIG number
    # are the description's, not the process's, so one part sets them and the next reads them.
    before, marked, after = read_change_read(warm, READ_THE_SHARED_DESCRIPTIONS, MARK_THE_SHARED_DESCRIPTIONS)
    assert marked == "marked", marked
    assert after == before, f"a later part read the file status an earlier part set: {after} (was {before})"


def test_a_part_sets_no_write_hint_on_a_device_node_of_the_host(warm):
    # F_SET_RW_HINT (fcntl) writes a number into the inode, for its owner only: the sandbox's
    # user owns the host's /dev/null (as root), so a part sets it on the host's inode, where any
    # process of the machine, and another hand-in's part, reads it (F_GET_RW_HINT).
    import fcntl
    import struct

    hint = struct.pack("Q", 0)
    device = os.open("/dev/null", os.O_RDONLY)
    host = fcntl.fcntl(device, 1035, hint)  # F_GET_RW_HINT
    try:
        source = "import fcntl, os, struct\nfcntl.fcntl(os.open('/dev/null', os.O_RDONLY), 1036, struct.pack('Q', 5))"
        run_part(warm, source + "\nout = 'set'")
        after = fcntl.fcntl(device, 1035, hint)
        assert after == host, f"a part set the write hint of the host's /dev/null: {struct.unpack('Q', after)}"
    finally:
        fcntl.fcntl(device, 1036, host)  # F_SET_RW_HINT: as it was
        os.close(device)


def test_honest_shared_memory_works_in_a_part(warm):
    # multiprocessing.shared_memory (fork start method, as the README promises works) registers
    # each block with multiprocessing's resource tracker, a new Python it starts with exec: the
    # filter refuses it and SharedMemory(create=True) fails with BrokenPipeError.
    source = """
import time
from multiprocessing import shared_memory
seen = []
for step in range(5):  # each create and unlink writes to the tracker: each races its failed start
    block = shared_memory.SharedMemory(create=True, size=1024)
    block.buf[0] = step
    time.sleep(0.05)  # the work
    seen.append(block.buf[0])
    block.close()
    block.unlink()
out = repr(seen)
"""
    done, _ = run_part(warm, source)
    assert done == "[0, 1, 2, 3, 4]", f"multiprocessing.shared_memory failed in a part: {done!r}"


HOLD_EVERY_INOTIFY_INSTANCE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
HELD = []  # kept open while the part's runner lives
while len(HELD) < 4096:
    descriptor = libc.inotify_init()
    if descriptor < 0:
        break
    HELD.append(descriptor)
out = repr((len(HELD), os.strerror(ctypes.get_errno())))
"""


def test_a_part_leaves_the_host_its_inotify_instances(warm):
    # The kernel counts inotify instances per user (fs.inotify.max_user_instances, 128) up the
    # chain of user namespaces: the sandbox's are charged to its owner, the host's root where
    # the grader runs as root, with every root process of the host. A part that opens them all
    # leaves none to the judge, systemd, or another hand-in's part, for as long as it runs.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    host: list[str] = []

    def open_one_on_the_host(_: object) -> None:
        descriptor = libc.inotify_init()
        host.append("opened" if descriptor >= 0 else os.strerror(ctypes.get_errno()))
        if descriptor >= 0:
            os.close(descriptor)

    held, _ = run_part(warm, HOLD_EVERY_INOTIFY_INSTANCE, during=open_one_on_the_host)
    assert host == ["opened"], f"a part ({held}) left the host's root no inotify instance: {host}"


HOLD_EVERY_TIME_NAMESPACE = """
import ctypes, os, resource, time
libc = ctypes.CDLL(None, use_errno=True)
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
made, why = [], []
if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER: every capability, in a namespace of its own
    why.append(os.strerror(ctypes.get_errno()))
for _ in range(8 if not why else 0):  # each child holds one time namespace per descriptor
    read, write = os.pipe()
    if os.fork() == 0:
        count, error = 0, ''
        while True:
            if libc.unshare(0x80) != 0:  # CLONE_NEWTIME
                error = os.strerror(ctypes.get_errno())
                break
            try:
                os.open('/proc/self/ns/time_for_children', os.O_RDONLY)
            except OSError as failed:
                error = failed.strerror
                break
            count += 1
        os.write(write, f'{count} {error}'.encode())
        while True:
            time.sleep(1)
    os.close(write)
    count, _, error = os.read(read, 100).decode().partition(' ')
    made.append(int(count))
    why.append(error)
    if error != 'Too many open files':
        break
out = repr((sum(made), why[-1]))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's user is the host's root only where the grader is")
def test_a_part_leaves_the_host_its_namespaces(warm):
    # A part may make user namespaces, and in one of its own every other kind. The kernel
    # counts namespaces of each kind per user (user.max_*_namespaces) up the chain: as root,
    # the sandbox's are charged to the host's root, with the namespaces bubblewrap makes for
    # every other hand-in's sandbox. Held by descriptors, a part's time namespaces (here: no
    # other process of this machine needs one) fill the host root's count; user, mount, PID,
    # network, IPC, UTS and cgroup namespaces fill theirs the same way, and no sandbox starts.
    import subprocess

    host: list[str] = []

    def make_one_on_the_host(_: object) -> None:
        made = subprocess.run(["unshare", "--time", "true"], capture_output=True, text=True)
        host.append(made.stderr.strip() or "made")

    held, _ = run_part(warm, HOLD_EVERY_TIME_NAMESPACE, during=make_one_on_the_host)
    assert host == ["made"], f"a part ({held}) left the host's root no time namespace: {host}"


HOLD_IN_A_PACKET_RING = """
import ctypes, mmap, socket, struct, numpy
def measured():
    # In a user and network namespace of its own a part has CAP_NET_RAW there: a packet
    # socket's ring is memory the kernel allocates without charging any control group.
    if ctypes.CDLL(None).unshare(0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET
        return -1.0
    ring = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    block, blocks, frame = 1 << 22, 50, 1 << 16
    ring.setsockopt(263, 13, struct.pack('IIII', block, blocks, frame, block // frame * blocks))  # PACKET_TX_RING
    held = numpy.frombuffer(mmap.mmap(ring.fileno(), block * blocks), dtype=numpy.float64)
    held[:] = 1.0  # 210 MB the call computes with
    return float(held.sum())
"""


def test_the_meter_sees_memory_held_in_a_packet_ring(warm, monkeypatch):
    # With control groups the meter reads the part's memory group; a packet socket's TX ring
    # (mmap'd, read and written like any array) is kernel memory charged to no group, so the
    # meter reads next to nothing for 210 MB, and the group's memory limit never sees it.
    result, peak = measured_peak(warm, HOLD_IN_A_PACKET_RING, monkeypatch)
    assert result in (26214400.0, -1.0), result  # -1: no namespace of its own, no ring
    held = f"the meter read {peak / 1e6:.1f} MB for a call that held 210 MB in a packet ring"
    assert result == -1.0 or peak >= 190e6, held


def test_honest_process_pool_of_a_cells_function_works_in_a_part(warm):
    # The README promises multiprocessing with the fork start method. Pool and
    # ProcessPoolExecutor pickle a function by reference, __main__.<name>: in Jupyter a cell's
    # function lives in __main__, in a part's runner the cells run in a namespace of their own
    # and sys.modules['__main__'] is the runner's module, so mapping any cell's function fails.
    source = """
import concurrent.futures, multiprocessing
def square(x):
    return x * x
try:
    with multiprocessing.Pool(2) as pool:
        mapped = pool.map(square, range(4))
    with concurrent.futures.ProcessPoolExecutor(2) as executor:
        mapped += list(executor.map(square, range(4)))
    out = repr(mapped)
except Exception as error:
    out = repr(error)
"""
    done, _ = run_part(warm, source)
    assert done == repr([0, 1, 4, 9] * 2), f"a process pool of a cell's function failed in a part: {done!r}"


HOLD_IN_NETLINK_QUEUES = """
import resource, socket
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
def measured():
    # A netlink message larger than a page is put in memory of the kernel's (vmalloc) that no
    # control group is charged for; a queue keeps it until read back. No privilege needed.
    queues, block, stored = [], bytes(range(256)) * 234, 0  # 59904 bytes a message
    while stored < 200_000_000:
        inbox, outbox = (socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 2) for _ in range(2))  # USERSOCK
        inbox.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
        inbox.bind((0, 0))
        outbox.setblocking(False)
        queues.append((inbox, outbox))
        try:
            while True:
                stored += outbox.sendto(block, (inbox.getsockname()[0], 0))
        except BlockingIOError:
            pass
    back = 0
    for inbox, _ in queues:  # every message read back as it was sent
        inbox.setblocking(False)
        try:
            while True:
                back += len(block) if inbox.recv(len(block)) == block else 0
        except BlockingIOError:
            pass
    return float(stored if back == stored else -1)
"""


def test_the_meter_sees_memory_held_in_netlink_queues(warm, monkeypatch):
    # A part's memory group is charged for its sockets' messages on AF_UNIX, not for netlink
    # messages over a page (the kernel's vmalloc memory): a call that held 200 MB of its work
    # in NETLINK_USERSOCK queues to itself read next to nothing, beyond any group limit. The
    # filter refuses netlink (and packet) sockets: the call fails instead.
    with pytest.raises(PermissionError):
        measured_peak(warm, HOLD_IN_NETLINK_QUEUES, monkeypatch)


def test_a_rebinding_gives_back_the_students_own_binding(warm):
    # calls_to and rebound rebind a notebook name for a while; they gave it back as the set-up
    # cells had bound it, so a student's own redefinition was gone for the rest of the test.
    seen: list[object] = []

    def rebind_twice_and_give_back(out: Callable[[], object]) -> None:
        for value in ("the judge's", "the judge's again"):
            stand_ins.CHANNEL.request("setglobal", name="helper", value=grant(lambda v=value: v), save=True)
            seen.append(out())
        for _ in range(3):  # the third finds nothing to give back: the binding stays
            stand_ins.CHANNEL.request("restoreglobal", name="helper")
            seen.append(out())

    source = "def helper():\n    return 'theirs'\n\n\ndef out():\n    return helper()\n"
    run_part(warm, source, during=rebind_twice_and_give_back)
    assert seen == ["the judge's", "the judge's again", "the judge's", "theirs", "theirs"], seen


def test_a_lent_method_writes_into_the_arrays_it_is_given(warm):
    # A student's method lent to a reference class (their_methods) ran on copies of its array
    # arguments: what it wrote into them was lost, where in Jupyter it fills the caller's array.
    import numpy as np

    from course_grader.stand_ins import TheirMethod

    filled = np.zeros(3)
    run_part(warm, "def out(array):\n    array[:] = 7.0\n", during=lambda out: TheirMethod(out, "static")(filled))
    assert filled.tolist() == [7.0, 7.0, 7.0], filled
