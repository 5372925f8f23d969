"""Running the README's make targets from a test, as a user would: without the test's own
virtual environment on PATH (make must find and use the course's set-up itself)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from paths import ROOT

MAKE_ENV = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
MAKE_ENV["PATH"] = os.pathsep.join(
    p for p in os.environ["PATH"].split(os.pathsep) if p and not Path(p).resolve().is_relative_to(ROOT)
)


def make(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=cwd, env=env or MAKE_ENV, capture_output=True, text=True
    )
