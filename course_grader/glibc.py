"""glibc's help for the runner's measured calls (ps13's memory), where there is a glibc: memory
handed back before a call, and pages of 4 kB. Runs inside the sandbox, beside runner.py."""

from __future__ import annotations


def release_free_memory() -> None:
    """Hand the C allocator's free memory back to the system (glibc's malloc_trim), so that a
    measured call starts from what the process holds, not from what it held once."""
    libc("malloc_trim", 0)


def libc(function: str, *args: int) -> None:
    """A function of glibc, where there is one (a measurement's help, never needed)."""
    try:
        import ctypes

        getattr(ctypes.CDLL("libc.so.6"), function)(*args)
    except (OSError, AttributeError):
        pass
