"""Where things are, for every test module: the repository root, its main folders and the
book's pages as _toc.yml lists them."""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())


def toc_files(node) -> list[str]:
    files = []
    if isinstance(node, dict):
        if "file" in node:
            files.append(node["file"])
        for value in node.values():
            files += toc_files(value)
    elif isinstance(node, list):
        for item in node:
            files += toc_files(item)
    return files


def resolve(entry: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (ROOT / f"{entry}{suffix}").exists():
            return ROOT / f"{entry}{suffix}"
    raise AssertionError(f"_toc.yml lists '{entry}', which is neither {entry}.ipynb nor {entry}.md")


PAGES = [resolve(f) for f in [TOC["root"], *toc_files(TOC.get("parts", []))]]
NOTEBOOKS = sorted(p for p in PAGES if p.suffix == ".ipynb")
CHAPTERS = sorted(p for p in NOTEBOOKS if p.parent.name == "book")
SETUP_CELL = next(c for c in nbformat.read(CHAPTERS[0], 4).cells if c.cell_type == "code").source


def ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]
