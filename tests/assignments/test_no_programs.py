"""The filter that keeps a hand-in from starting programs (course_grader/no_programs.py), read
as the kernel reads it, and what grading does on a machine that cannot install it. What it
does to hand-ins in the real sandbox: tests/assignments/test_sandbox_view.py."""

from __future__ import annotations

import errno
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from course_grader import no_programs
from course_grader.grading import main
from course_grader.sandbox import Sandbox, find_bwrap

# The kernel's values (linux/filter.h, linux/seccomp.h, linux/audit.h, the system-call tables),
# written out here rather than read from the module under test.
AUDIT_ARCH = {"x86_64": 0xC000003E, "i386": 0x40000003, "aarch64": 0xC00000B7, "arm": 0x40000028}
EXECVE = {"x86_64": (59, 322), "x32": (0x40000000 + 520, 0x40000000 + 545), "aarch64": (221, 281)}
ALLOWED, REFUSED, IGNORED = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000
# Calls that would outlive a part (mq_open, add_key, keyctl, setxattr) and calls a file's owner
# makes (chmod, fchmodat, utimensat), on each machine.
CHANNELS = {  # ... and process_vm_readv, process_vm_writev, process_madvise
    "x86_64": (240, 248, 250, 188, 425, 426, 251, 253, 294, 310, 311, 440),
    "aarch64": (180, 217, 219, 5, 425, 426, 30, 26, 270, 271, 440),
}
FCNTL, SOCKET = {"x86_64": 72, "aarch64": 25}, {"x86_64": 41, "aarch64": 198}
OWNER_CALLS = {"x86_64": (90, 268, 452), "aarch64": (53, 452)}
UTIMENSAT = {"x86_64": 280, "aarch64": 88}


def decide(program: bytes, arch: int, number: int, first: int = 0, second: int = 0, third: int = 0) -> int:
    """What the kernel's BPF machine returns for a system call (with these first three
    arguments): a small interpreter of the instructions seccomp accepts (load a word of
    seccomp_data, jump if equal / at least, return)."""
    data = struct.pack("=iIQ6Q", number, arch, 0, first, second, third, 0, 0, 0)  # nr, arch, instruction pointer, args
    steps = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    accumulator, at = 0, 0
    while True:
        code, if_true, if_false, k = steps[at]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            accumulator, at = struct.unpack_from("=I", data, k)[0], at + 1
        elif code in (0x15, 0x35):  # BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JGE | BPF_K
            hit = accumulator == k if code == 0x15 else accumulator >= k
            at += 1 + (if_true if hit else if_false)
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"an instruction seccomp does not run: {code:#x}")


def test_the_filter_refuses_every_way_to_execve_and_nothing_else():
    """execve and execveat fail with EPERM, so do every x32 call (x32's execve has a number of
    its own) and every call of another ABI (i386's int 0x80 on x86_64, arm on aarch64); other
    calls, the same numbers on the other machine included, are allowed."""
    x86 = no_programs.filter_program(no_programs.MACHINES["x86_64"])
    arm = no_programs.filter_program(no_programs.MACHINES["aarch64"])
    for number in (*EXECVE["x86_64"], *EXECVE["x32"], 0x40000000 + 39):
        assert decide(x86, AUDIT_ARCH["x86_64"], number) == REFUSED, number
    for number in (0, 1, 39, 57, 56, 435, 221, 281):  # read, write, getpid, fork, clone, clone3...
        assert decide(x86, AUDIT_ARCH["x86_64"], number) == ALLOWED, number
    assert decide(x86, AUDIT_ARCH["i386"], 11) == decide(x86, AUDIT_ARCH["i386"], 20) == REFUSED
    for number in EXECVE["aarch64"]:
        assert decide(arm, AUDIT_ARCH["aarch64"], number) == REFUSED, number
    for number in (63, 64, 172, 220, 435, *EXECVE["x86_64"]):  # read, write, getpid, clone, clone3...
        assert decide(arm, AUDIT_ARCH["aarch64"], number) == ALLOWED, number
    assert decide(arm, AUDIT_ARCH["arm"], 11) == decide(arm, AUDIT_ARCH["x86_64"], 39) == REFUSED


@pytest.mark.skipif(find_bwrap() is None, reason="the refusal concerns the bubblewrap sandbox")
def test_a_machine_that_cannot_forbid_programs_refuses_to_grade(tmp_path, monkeypatch, capsys):
    """No filter, no sandboxed grading: an instructor learns why before any hand-in is graded,
    and the unsafe mode (hand-ins you trust) still grades."""
    monkeypatch.setattr(no_programs.platform, "machine", lambda: "riscv64")
    (tmp_path / "submissions").mkdir()
    assert main([str(tmp_path / "submissions"), "--course", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "cannot stop a hand-in from running other programs" in out and "riscv64" in out, out
    assert "--unsafe-no-sandbox" in out, out
    assert not Sandbox(unsafe=True).isolated
    with pytest.raises(no_programs.ProgramsNotForbidden, match="x86_64 and aarch64"):
        no_programs.forbid_programs()  # installs nothing: this test's process still runs programs


# Installed in a fresh Python (the runner's way, with no sandbox around it): a thread started
# before the filter, a forked child and its own child all meet it; forking and a fork Pool work.
BOUND = """
import ctypes, multiprocessing, os, sys, threading
sys.path.insert(0, GRADER)
from no_programs import forbid_programs

libc = ctypes.CDLL(None, use_errno=True)
argv = (ctypes.c_char_p * 4)(b"/bin/sh", b"-c", b"exit 3", None)


def raw_execve():  # the system call itself: no C library wrapper, no audit event
    libc.syscall(ctypes.c_long(EXECVE), b"/bin/sh", argv, None)
    return ctypes.get_errno()


def in_the_earlier_thread():
    go.wait()
    seen["thread"] = raw_execve()


go, seen = threading.Event(), {}
earlier = threading.Thread(target=in_the_earlier_thread)
earlier.start()
forbid_programs()
go.set()
earlier.join()
try:
    os.execv("/bin/sh", ["sh", "-c", "exit 3"])
except PermissionError as error:
    seen["execv"] = str(error)
pid = os.fork()
if pid == 0:
    grandchild = os.fork()
    if grandchild == 0:
        os._exit(raw_execve())
    os._exit(os.waitstatus_to_exitcode(os.waitpid(grandchild, 0)[1]))
seen["grandchild"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
with multiprocessing.get_context("fork").Pool(2) as pool:
    seen["pool"] = pool.map(abs, [-1, -2, 3])
print(seen)
"""


@pytest.mark.skipif(no_programs.unavailable() is not None, reason="this machine cannot install the filter")
def test_threads_children_and_grandchildren_start_no_program_and_forking_works():
    execve = no_programs.MACHINES[no_programs.platform.machine()].execs[0]
    source = f"GRADER = {str(Path(no_programs.__file__).parent)!r}\nEXECVE = {execve}\n{BOUND}"
    proc = subprocess.run([sys.executable, "-I", "-c", source], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(
        {
            "thread": errno.EPERM,
            "execv": f"[Errno 1] {no_programs.REFUSAL}: '/bin/sh'",
            "grandchild": errno.EPERM,
            "pool": [1, 2, 3],
        }
    )


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_a_parts_filter_refuses_lasting_channels_and_ignores_a_files_owner_calls(machine):
    """In a part's runner: message queues, keys and extended attributes fail with EPERM; chmod,
    and utimensat given times, return 0 having done nothing, while utimensat without times
    (touch) runs. The warm runner's own filter refuses the channels too but lets it chmod and
    set times (it puts the sandbox's folders back)."""
    part = no_programs.filter_program(no_programs.MACHINES[machine])
    zygote = no_programs.filter_program(no_programs.MACHINES[machine], part=False)
    arch = AUDIT_ARCH[machine]
    for number in CHANNELS[machine]:
        assert decide(part, arch, number) == decide(zygote, arch, number) == REFUSED, number
    for number in OWNER_CALLS[machine]:
        assert decide(part, arch, number) == IGNORED and decide(zygote, arch, number) == ALLOWED, number
    for number in EXECVE[machine]:
        assert decide(part, arch, number) == decide(zygote, arch, number) == REFUSED, number
    utimensat = UTIMENSAT[machine]
    assert decide(part, arch, utimensat) == decide(zygote, arch, utimensat) == ALLOWED  # times NULL
    for times in (0x7FFD12345678, 1 << 32, 1):  # a pointer to the times, in either word
        assert decide(part, arch, utimensat, third=times) == IGNORED
        assert decide(zygote, arch, utimensat, third=times) == ALLOWED
    assert decide(part, arch, 0, third=0x7FFD12345678) == ALLOWED  # another call's third argument: no matter
    fcntl = FCNTL[machine]
    for command in (1036, 1038):  # F_SET_RW_HINT, F_SET_FILE_RW_HINT
        assert decide(part, arch, fcntl, second=command) == decide(zygote, arch, fcntl, second=command) == REFUSED
    for command in (0, 1, 2, 3, 4, 1033, 1037):  # F_DUPFD ... F_SETFL, F_ADD_SEALS, F_GET_RW_HINT
        assert decide(part, arch, fcntl, second=command) == ALLOWED, command
    assert decide(part, arch, 0, second=1036) == ALLOWED  # another call's second argument: no matter
    for family, expected in ((16, REFUSED), (17, REFUSED), (1, ALLOWED), (2, ALLOWED), (10, ALLOWED)):
        # netlink, packet; unix, inet, inet6
        assert decide(part, arch, SOCKET[machine], first=family) == expected, family
