"""Deleting the biggest scratch folders of the tests without waiting for it."""

from __future__ import annotations

import subprocess
from pathlib import Path


def remove_in_background(folder: Path) -> None:
    """Delete ``folder`` (a virtual environment, a built book) in a detached process. On a disk
    mounted with online discard, as this project's machines are, removing tens of thousands of
    files keeps a worker waiting for a minute; nothing a test checks depends on that wait."""
    subprocess.run(
        ["sh", "-c", 'rm -rf -- "$0" &', str(folder)],
        check=True,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
