"""A local copy of MathJax, so the book's formulas render without a network.

Sphinx loads MathJax from a CDN by default. ``_config.yml`` points ``mathjax_path`` at
``mathjax/tex-mml-chtml.js`` in the static path ``_vendor/`` instead; this module fills
``_vendor/mathjax/`` (git-ignored, about 24 MB) with the ``es5/`` build of MathJax 3.2.2.

The files come from PyPI, like the rest of the stack: ``requirements.txt`` pins
``django-static-mathjax``, a dependency-free package that only carries MathJax's files (nothing
of Django is imported), so set-up needs neither npm nor a CDN.

The folder is deliberately not ``_static/``: Jupyter Book 1 adds every ``*.js`` file found under
a root ``_static/`` folder to every page (``jupyter_book/config.py``), which would load all
of MathJax's components on every page. Files under ``_vendor/`` are only copied.

Called by ``make setup`` and by the tests that build the book::

    python tools/mathjax_assets.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

ENTRY = "tex-mml-chtml.js"


def packaged_mathjax() -> Path:
    """The ``es5/`` folder of the installed MathJax files package."""
    try:
        es5 = Path(str(resources.files("mathjax").joinpath("static", "mathjax", "es5")))
    except ModuleNotFoundError:
        raise RuntimeError(
            "MathJax's files are missing: pip install -r requirements.txt "
            "(it pins django-static-mathjax), or run `make book` once"
        ) from None
    if not (es5 / ENTRY).is_file():
        raise RuntimeError(f"{es5} has no {ENTRY}: reinstall django-static-mathjax from requirements.txt")
    return es5


def ensure_mathjax(root: str | os.PathLike) -> Path:
    """``<root>/_vendor/mathjax`` holding MathJax's ``es5/`` build, copied once."""
    target = Path(root).resolve() / "_vendor" / "mathjax"
    if (target / ENTRY).is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)  # a copy left incomplete by an interrupted run
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        copy = Path(tmp) / "mathjax"
        shutil.copytree(packaged_mathjax(), copy)
        try:
            copy.rename(target)  # atomic: a concurrent call never sees half a copy
        except OSError:
            if not (target / ENTRY).is_file():  # not just another process that won the race
                raise
    return target


if __name__ == "__main__":
    print("==> mathjax: local copy in", ensure_mathjax(Path(__file__).resolve().parents[1]))
