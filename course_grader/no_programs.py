"""No other programs while a hand-in is graded: a seccomp filter on which the kernel refuses
``execve`` and ``execveat`` (and the few calls that would keep data where the next part could
find it: message queues, keyrings, extended attributes).

The runner calls :func:`forbid_programs` once, after its own imports and before the first cell
runs. From then on starting a program fails with EPERM in the runner, in every thread it has
and in every process it forks (a seccomp filter is inherited and cannot be removed): a hand-in
cannot hand its work to ``tsort``, ``perl``, a C compiler or another Python (``python -c``),
by whatever route (``subprocess``, ``os.exec*``, ``os.posix_spawn``, ``ctypes``, a ``#!``
script). Forking stays allowed, so ``multiprocessing`` with the fork start method works.

Where the runner is started on its own (``Sandbox.start``), one process in the sandbox started
before the filter: bubblewrap's own init (pid 1, the runner's parent), same user, no filter. A
hand-in could attach to it with ``ptrace`` (or write its memory through ``/proc/1/mem``) and
make it start a program. Where the kernel has Landlock (Linux 5.13 on, enabled), the runner
also enters a Landlock domain, which the kernel lets trace or write the memory of no process
outside it; without Landlock that door stays open. Grading forks each part's runner from a warm
runner that is itself the sandbox's pid 1 and installed the filter first
(:mod:`course_grader.zygote`): no process there lacks the filter, and each runner's own, nested
Landlock domain keeps it from the warm runner and the other parts' runners.

bubblewrap's own ``--seccomp`` would not do: it loads the filter just before it starts the
runner with ``execvp``, which the filter would refuse.

Standard library only: it runs inside the sandbox, beside runner.py.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys
from typing import NamedTuple

REFUSAL = "running other programs is not allowed while grading"
MUST_FORBID = "--must-forbid-programs"  # the runner's flag in the sandbox: no filter, no grading


class ProgramsNotForbidden(OSError):
    """This machine cannot stop a process from starting programs (no filter was installed)."""


class Machine(NamedTuple):
    """What the filter needs of one processor architecture: the kernel's audit architecture
    (``AUDIT_ARCH_*``) and the numbers of ``seccomp``, ``execve`` and ``execveat`` and of the
    calls that keep data outside the sandbox's files (the comment above :data:`MACHINES`)."""

    audit_arch: int
    seccomp: int
    execs: tuple[int, int]
    channels: tuple[int, ...]
    owner_calls: tuple[int, ...]
    utimensat: int
    fcntl: int
    socket: int
    # x86_64 kernels also take x32 system calls: the same audit architecture, numbers with bit
    # 30 set (x32's execve is another number), so the filter refuses every one of those.
    x32: bool = False


# Where a part's code could leave data that outlives its processes and that the warm runner
# cannot list to put back (course_grader.zygote): POSIX message queues (mq_open ... mq_getsetattr),
# the kernel's keyrings (add_key, request_key, keyctl) and extended attributes (setxattr,
# lsetxattr, fsetxattr, setxattrat: 463 on every machine since Linux 6.13), and io_uring
# (io_uring_setup, _enter, _register: 425-427 everywhere), whose requests set attributes (POSIX
# ACLs too) with none of those calls. Nor may a part lower the warm runner's I/O priority
# (ioprio_set), which later parts would inherit, or set a write hint on a file (fcntl's
# F_SET_RW_HINT, F_SET_FILE_RW_HINT), a number kept on the inode: the host's /dev/null's, for
# any process to read. Nor may it open netlink or packet sockets, whose buffers hold memory that
# no control group counts, or inotify instances, counted against the grader's user on the host
# (128 of them and the grader's own inotify_init fails). Nor may one process of a part read,
# write or advise another's memory (process_vm_readv, process_vm_writev; process_madvise: 440
# everywhere): a measured copy wrote 100 MB into the frozen runner that way, charged to the
# runner (course_grader.measured_copy). No honest answer needs any of them; multiprocessing's
# locks are files in /dev/shm, which are put back.
# In a part's runner, changing a file's mode or setting its times (chmod, fchmod, fchmodat,
# fchmodat2: 452 everywhere; utime, utimes, futimesat, and utimensat given times) succeeds and
# does nothing: only a file's owner may, and where the grader runs as root the sandbox's user is
# the host's root to the kernel, so the owner of the host's /dev/null, /dev/zero, ... that
# bubblewrap binds into the sandbox (writable, as devices must be). So shutil.copy and copy2
# still work (the copy keeps its own mode and times). utimensat without times (a file's times
# set to now, as Path.touch does first) runs: it needs write access only and writes no number
# of the caller's choosing. The warm runner keeps all of them, to put its own folders back.
SETXATTRAT, FCHMODAT2, IO_URING, PROCESS_MADVISE = 463, 452, (425, 426, 427), 440
WRITE_HINTS = (1024 + 12, 1024 + 14)  # F_SET_RW_HINT, F_SET_FILE_RW_HINT (F_LINUX_SPECIFIC_BASE + n)
KERNEL_SOCKETS = (16, 17)  # AF_NETLINK, AF_PACKET: their buffers' memory no control group counts
MACHINES = {
    "x86_64": Machine(
        audit_arch=0xC000003E,
        seccomp=317,
        execs=(59, 322),
        channels=(240, 241, 242, 243, 244, 245, 248, 249, 250, 188, 189, 190, SETXATTRAT, *IO_URING, 251, 253, 294)
        + (310, 311, PROCESS_MADVISE),
        owner_calls=(90, 91, 268, FCHMODAT2, 132, 235, 261),
        utimensat=280,
        fcntl=72,
        socket=41,
        x32=True,
    ),
    "aarch64": Machine(
        audit_arch=0xC00000B7,
        seccomp=277,
        execs=(221, 281),
        channels=(180, 181, 182, 183, 184, 185, 217, 218, 219, 5, 6, 7, SETXATTRAT, *IO_URING, 30, 26)
        + (270, 271, PROCESS_MADVISE),
        owner_calls=(52, 53, FCHMODAT2),
        utimensat=88,
        fcntl=25,
        socket=198,
    ),
}
X32_SYSCALL_BIT = 0x40000000

# Classic BPF, as seccomp runs it on a struct seccomp_data (nr at offset 0, arch at 4).
LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_IF_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_IF_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
SYSCALL_NUMBER, AUDIT_ARCH = 0, 4
TIMES_ARGUMENT = 16 + 2 * 8  # utimensat's third argument (times), low word first (little-endian)
COMMAND_ARGUMENT = 16 + 1 * 8  # fcntl's second argument (the command)
DOMAIN_ARGUMENT = 16  # socket's first argument (the address family)
ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
REFUSE = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO: the call fails with EPERM
IGNORE = 0x00050000  # SECCOMP_RET_ERRNO with error 0: the call returns 0, having done nothing

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1  # every thread of the process, not only the calling one
LANDLOCK_CREATE_RULESET, LANDLOCK_RESTRICT_SELF = 444, 446  # the same numbers on both machines
LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11  # a right the runner never uses: a domain needs one
LANDLOCK_CREATE_RULESET_VERSION = 1


def instruction(code: int, k: int, if_true: int = 0, if_false: int = 0) -> bytes:
    """One ``struct sock_filter``; a jump's targets count instructions after the next one."""
    return struct.pack("=HBBI", code, if_true, if_false, k)


def filter_program(machine: Machine, part: bool = True) -> bytes:
    """The filter: a system call of another architecture (an i386 ``int 0x80`` on x86_64), an
    x32 one, ``execve``, ``execveat``, one of the machine's ``channels``, ``fcntl`` setting a
    write hint or ``socket`` of a kernel family fails with EPERM; in a ``part``'s runner, its
    ``owner_calls`` and ``utimensat`` given times return 0 having done nothing; every other
    call is allowed."""
    refused = [(JUMP_IF_AT_LEAST, X32_SYSCALL_BIT)] if machine.x32 else []
    refused += [(JUMP_IF_EQUAL, number) for number in (*machine.execs, *machine.channels)]
    ignored = machine.owner_calls if part else ()
    first = 3  # after: load the architecture, check it, load the call's number
    allow = first + len(refused) + len(ignored) + 4 + 4 + (5 if part else 0)
    refuse, ignore = allow + 1, allow + 2

    def to(target: int, at: int) -> int:  # a jump from ``at`` to ``target``: instructions skipped
        return target - at - 1

    program = [
        instruction(LOAD_WORD, AUDIT_ARCH),
        instruction(JUMP_IF_EQUAL, machine.audit_arch, if_false=to(refuse, 1)),
        instruction(LOAD_WORD, SYSCALL_NUMBER),
    ]
    program += [instruction(code, k, if_true=to(refuse, first + i)) for i, (code, k) in enumerate(refused)]
    at = first + len(refused)
    program += [instruction(JUMP_IF_EQUAL, k, if_true=to(ignore, at + i)) for i, k in enumerate(ignored)]
    at += len(ignored)  # fcntl: refused for a write hint, allowed for any other command
    program += [
        instruction(JUMP_IF_EQUAL, machine.fcntl, if_false=to(at + 4, at)),
        instruction(LOAD_WORD, COMMAND_ARGUMENT),
        instruction(JUMP_IF_EQUAL, WRITE_HINTS[0], if_true=to(refuse, at + 2)),
        instruction(JUMP_IF_EQUAL, WRITE_HINTS[1], if_true=to(refuse, at + 3), if_false=to(allow, at + 3)),
    ]
    at += 4  # socket: refused for netlink and packet sockets
    program += [
        instruction(JUMP_IF_EQUAL, machine.socket, if_false=to(at + 4, at)),
        instruction(LOAD_WORD, DOMAIN_ARGUMENT),
        instruction(JUMP_IF_EQUAL, KERNEL_SOCKETS[0], if_true=to(refuse, at + 2)),
        instruction(JUMP_IF_EQUAL, KERNEL_SOCKETS[1], if_true=to(refuse, at + 3), if_false=to(allow, at + 3)),
    ]
    if part:  # utimensat: allowed with times NULL (both words 0), ignored otherwise
        at += 4
        program += [
            instruction(JUMP_IF_EQUAL, machine.utimensat, if_false=to(allow, at)),
            instruction(LOAD_WORD, TIMES_ARGUMENT),
            instruction(JUMP_IF_EQUAL, 0, if_false=to(ignore, at + 2)),
            instruction(LOAD_WORD, TIMES_ARGUMENT + 4),
            instruction(JUMP_IF_EQUAL, 0, if_true=to(allow, at + 4), if_false=to(ignore, at + 4)),
        ]
    program += [instruction(RETURN, ALLOW), instruction(RETURN, REFUSE), instruction(RETURN, IGNORE)]
    return b"".join(program)


def this_machine() -> Machine:
    """This process's architecture, or :class:`ProgramsNotForbidden` saying why there is none."""
    name = platform.machine()
    if sys.platform != "linux":
        raise ProgramsNotForbidden(f"seccomp filters are Linux's; this is {sys.platform}")
    if name not in MACHINES or struct.calcsize("P") != 8:
        raise ProgramsNotForbidden(
            f"the grader knows the system calls of 64-bit x86_64 and aarch64 Pythons only; "
            f"this is {name} ({8 * struct.calcsize('P')}-bit Python)"
        )
    return MACHINES[name]


def unavailable() -> str | None:
    """Why :func:`forbid_programs` would fail on this machine, read without installing anything
    (the kernel's seccomp support, the architecture); ``None`` if it should work."""
    try:
        this_machine()
    except ProgramsNotForbidden as error:
        return str(error)
    try:
        with open("/proc/self/status") as status:
            if not any(line.startswith("Seccomp:") for line in status):
                return "this Linux kernel was built without seccomp"
    except OSError as error:
        return f"cannot read /proc/self/status ({error.strerror})"
    actions = "/proc/sys/kernel/seccomp/actions_avail"  # Linux 4.14 on; the runner checks older ones
    if os.path.exists(actions):
        with open(actions) as available:
            if "errno" not in available.read().split():
                return "this Linux kernel's seccomp filters cannot return an error"
    return None


def forbid_programs(part: bool = True) -> None:
    """From now on no program can start in this process or any it forks (execve fails with
    EPERM), nor, in a ``part``'s runner, can a file's mode or times change;
    :class:`ProgramsNotForbidden` if the kernel refused the filter."""
    machine = this_machine()
    program = filter_program(machine, part)
    instructions = ctypes.create_string_buffer(program, len(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.addressof(instructions))
    libc = ctypes.CDLL(None, use_errno=True)
    # Required for an unprivileged process to install a filter; bubblewrap has set it already.
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ProgramsNotForbidden(f"prctl(PR_SET_NO_NEW_PRIVS) failed: {_reason()}")
    call = (ctypes.c_long(n) for n in (machine.seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC))
    failed = libc.syscall(*call, ctypes.byref(fprog))
    if failed:  # -1 with errno set, or the id of a thread the filter could not be given to
        why = _reason() if failed == -1 else f"thread {failed} could not take it"
        raise ProgramsNotForbidden(f"the kernel refused the seccomp filter: {why}")
    sys.addaudithook(_word_the_refusal)
    _trace_no_process_outside(libc)


def landlock_abi() -> int:
    """The version of this kernel's Landlock, 0 if it has none (or it is disabled)."""
    call = ctypes.c_long(LANDLOCK_CREATE_RULESET)
    return max(0, ctypes.CDLL(None).syscall(call, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION))


def _trace_no_process_outside(libc: ctypes.CDLL) -> bool:
    """Enter a Landlock domain that only forbids making block devices: from then on this thread
    (and the threads and processes it starts; the runner has no other thread yet) can trace, or
    write the memory of, no process outside the domain, such as bubblewrap's init. False where
    this kernel has no Landlock."""
    handled = ctypes.c_uint64(LANDLOCK_ACCESS_FS_MAKE_BLOCK)  # struct landlock_ruleset_attr, ABI 1
    ruleset = libc.syscall(ctypes.c_long(LANDLOCK_CREATE_RULESET), ctypes.byref(handled), ctypes.c_size_t(8), 0)
    if ruleset < 0:
        return False
    try:
        return libc.syscall(ctypes.c_long(LANDLOCK_RESTRICT_SELF), ruleset, 0) == 0
    finally:
        os.close(ruleset)


def _reason() -> str:
    return os.strerror(ctypes.get_errno())


# Python's audit events for starting a program. The kernel refuses these anyway; the hook only
# raises first, with a message that says why (the kernel's says "Operation not permitted").
STARTS_A_PROGRAM = frozenset({"os.exec", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen", "pty.spawn"})


def _word_the_refusal(event: str, args: tuple) -> None:
    if event in STARTS_A_PROGRAM:
        raise PermissionError(errno.EPERM, REFUSAL, args[0] if args else None)
