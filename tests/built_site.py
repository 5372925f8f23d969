"""The book built strictly into a temporary folder, once per test session, and where a page lands in it."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mathjax_assets import ensure_mathjax
from paths import ROOT

BIN = Path(sys.executable).parent


def html_path(page: Path) -> str:
    """Where Jupyter Book puts a source page in the built site, relative to its root."""
    return page.relative_to(ROOT).with_suffix(".html").as_posix()


def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML folder of the book built strictly (``-W -n --keep-going``) in a temporary folder.

    Built once per test session: pytest-xdist workers share the session's base temporary
    folder and take turns through a file lock, so the first one builds and the others reuse it.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, shared by all workers
    out = base / "book-build"
    with open(base / "book-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "built").exists():
            ensure_mathjax(ROOT)
            shutil.rmtree(out, ignore_errors=True)
            env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
            proc = subprocess.run(
                [str(BIN / "jupyter-book"), "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"],
                env=env,
                capture_output=True,
                text=True,
            )
            assert proc.returncode == 0, f"the strict book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
            (out / "built").touch()
    return out / "_build" / "html"
