"""Where things are, for every test module: the repository root, its main folders and the
book's pages as _toc.yml lists them."""

from __future__ import annotations

from pathlib import Path

import course  # tools/course.py
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
PAGES = course.toc_pages(ROOT)
NOTEBOOKS = sorted(p for p in PAGES if p.suffix == ".ipynb")
CHAPTERS = sorted(p for p in NOTEBOOKS if p.parent.name == "book")
SETUP_CELL = next(c for c in nbformat.read(CHAPTERS[0], 4).cells if c.cell_type == "code").source


def ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]
