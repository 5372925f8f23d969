"""What one graded part may use: time, memory, files, processes and output."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Limits:
    """Limits of one graded part's process (and, with cgroups, of everything it starts)."""

    wall_seconds: float = 90.0
    cpu_seconds: int = 90
    memory_bytes: int = 3 * 1024**3  # address space of one process (PyTorch reserves a lot)
    group_memory_bytes: int = 2 * 1024**3  # memory actually used by the whole sandbox, /tmp included
    file_bytes: int = 64 * 1024**2
    # Processes and threads (the kernel counts both): what Python's pools start by default, one
    # worker per core (multiprocessing.Pool()) or up to 32 threads (ThreadPoolExecutor()), and
    # more; a fork bomb gets this many and no more (16 in all failed Pool() on a 16-core machine).
    processes: int = field(default_factory=lambda: 32 + (os.cpu_count() or 1))
    output_bytes: int = 1024**2
    # The judge's own heap (RLIMIT_DATA, set on itself): the protocol's caps keep a reply to a
    # few hundred MB; this bounds the rest (a test of the judge's own run amok).
    judge_memory_bytes: int = 1536 * 1024**2

    def rlimits(self) -> dict[str, int]:
        """The kernel's resource limits, by ``resource`` name, for the runner to set on itself
        (soft = hard, before any of the student's code runs)."""
        return {
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_AS": self.memory_bytes,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NPROC": self.processes,
            "RLIMIT_CORE": 0,
        }
