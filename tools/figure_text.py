"""Put each figure's caption and text alternative into the metadata of the cell that draws it.

    python tools/figure_text.py            # apply book/figures.toml (idempotent)
    python tools/figure_text.py --check    # exit 1 if a figure has no entry or an entry no figure

``book/figures.toml`` holds, per notebook and cell id, a ``caption``, an ``alt`` text and an
optional ``name``. They are written as myst-nb's cell-level options,
``"mystnb": {"image": {"alt": ...}, "figure": {"caption": ..., "name": ...}}``, so the built
page shows the figure with its caption and the ``<img>`` carries the alt text. A cell whose
output is HTML with its own pictures (a stepper's frames, ``course_lib.figures.stepper``) gets
a caption only: each ``<img>`` in the HTML carries its own alt text, written with the numbers
it shows by the code that draws it, and the check makes sure every one has it. Only cell
metadata is written, never sources or outputs: nothing is re-executed, and applying the
table again after a merge that re-executed a chapter restores what the merge dropped. A
notebook is rewritten only when its metadata changes, in nbformat's own layout (keys sorted,
one-space indent), so an unchanged notebook stays byte-identical.

Assignment figures are keyed by their source notebook in ``solutions/``: nbgrader copies cell
metadata into the student version, so ``make release`` carries them into ``exercises/``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "book" / "figures.toml"
FOLDERS = ("book", "solutions")
OPTIONS = ("image", "figure")  # the cell options this table writes: nothing else of mystnb is touched


def load_table(path: Path = TABLE) -> dict[str, dict[str, dict[str, str]]]:
    table = tomllib.loads(path.read_text())
    for notebook, cells in table.items():
        for cell_id, entry in cells.items():
            missing = {"caption"} - set(entry)
            unknown = set(entry) - {"caption", "alt", "name"}
            if missing or unknown:
                raise ValueError(
                    f"{path.name}: [{notebook}.{cell_id}] needs a caption and an alt (optional: name); "
                    f"missing {sorted(missing)}, unknown {sorted(unknown)}"
                )
    return table


class _Images(HTMLParser):
    """The alt text of every <img> in a piece of HTML (None where it has none)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.alts: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.alts.append(dict(attrs).get("alt"))


def html_image_alts(cell: dict) -> list[str | None]:
    """The alt texts of the <img>s in the cell's HTML outputs (a stepper's frames)."""
    parser = _Images()
    for out in cell.get("outputs", []):
        parser.feed(_text(out.get("data", {}).get("text/html", "")))
    return parser.alts


def _text(source: str | list[str]) -> str:
    return source if isinstance(source, str) else "".join(source)


def draws_a_figure(cell: dict) -> int:
    """How many outputs of the cell are figures: images, or HTML holding pictures."""
    return sum(
        1
        for out in cell.get("outputs", [])
        if any(key.startswith("image/") for key in out.get("data", {}))
        or "<img" in _text(out.get("data", {}).get("text/html", ""))
    )


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def write(path: Path, nb: dict) -> None:
    """nbformat's layout (nbformat.write: sorted keys, indent 1, unescaped Unicode, final newline)."""
    path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n")


def figure_options(entry: dict[str, str]) -> dict:
    figure = {"caption": entry["caption"]}
    if "name" in entry:
        figure["name"] = entry["name"]
    return {**({"image": {"alt": entry["alt"]}} if "alt" in entry else {}), "figure": figure}


def apply(root: Path = ROOT, table: dict | None = None) -> list[str]:
    """Write the table into the notebooks under ``root``; the notebooks changed."""
    table = load_table(root / "book" / "figures.toml") if table is None else table
    changed = []
    for notebook, cells in table.items():
        path = root / notebook
        if not path.is_file():
            raise FileNotFoundError(f"figures.toml names {notebook}, which does not exist")
        nb = read(path)
        by_id = {cell.get("id"): cell for cell in nb["cells"]}
        dirty = False
        for cell_id, entry in cells.items():
            cell = by_id.get(cell_id)
            if cell is None:
                raise KeyError(f"figures.toml: {notebook} has no cell with id {cell_id!r} (was the cell replaced?)")
            mystnb = cell.setdefault("metadata", {}).get("mystnb", {})
            wanted = {**{k: v for k, v in mystnb.items() if k not in OPTIONS}, **figure_options(entry)}
            if mystnb != wanted:
                cell["metadata"]["mystnb"] = wanted
                dirty = True
        if dirty:
            write(path, nb)
            changed.append(notebook)
    return changed


def problems(root: Path = ROOT, table: dict | None = None) -> list[str]:
    """Figures without an entry, entries without a figure, and cells whose metadata differs."""
    table = load_table(root / "book" / "figures.toml") if table is None else table
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            notebook = path.relative_to(root).as_posix()
            entries = table.get(notebook, {})
            for cell in read(path)["cells"]:
                cell_id = cell.get("id")
                images = draws_a_figure(cell) if cell.get("cell_type") == "code" else 0
                if images and cell_id not in entries:
                    found.append(f"{notebook}: cell {cell_id} draws {images} figure(s), no entry in figures.toml")
                elif cell_id in entries and not images:
                    found.append(f"{notebook}: cell {cell_id} has an entry in figures.toml but draws no figure")
                elif cell_id in entries:
                    found += _alt_problems(notebook, cell, entries[cell_id])
                    expected = figure_options(entries[cell_id])
                    mystnb = cell.get("metadata", {}).get("mystnb", {})
                    if {key: mystnb.get(key) for key in OPTIONS} != {key: expected.get(key) for key in OPTIONS}:
                        found.append(f"{notebook}: cell {cell_id}: run python tools/figure_text.py")
                    if images > 1 and "name" in entries[cell_id]:
                        found.append(f"{notebook}: cell {cell_id} draws {images} frames: a name would be duplicated")
            if notebook in table:
                ids = {cell.get("id") for cell in read(path)["cells"]}
                found += [f"{notebook}: no cell with id {i!r}" for i in entries if i not in ids]
    found += [f"figures.toml names {nb}, which does not exist" for nb in table if not (root / nb).is_file()]
    return found


def _alt_problems(notebook: str, cell: dict, entry: dict[str, str]) -> list[str]:
    """An image output needs the entry's alt; pictures in HTML carry their own, so the entry has none."""
    where = f"{notebook}: cell {cell.get('id')}"
    alts = html_image_alts(cell)
    if not alts:
        return [] if "alt" in entry else [f"{where}: figures.toml gives no alt text for its figure"]
    found = [f"{where}: an <img> in its HTML has no alt text" for alt in alts if not (alt or "").strip()]
    if "alt" in entry:
        found.append(f"{where}: its HTML pictures carry their own alt texts; drop the alt in figures.toml")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report, change nothing")
    args = parser.parse_args(argv)
    if args.check:
        found = problems()
        for line in found:
            print(f"- {line}")
        print("figure text:", "out of date" if found else "every figure has a caption and alt text")
        return 1 if found else 0
    changed = apply()
    print("==> figure text: " + (f"updated {', '.join(changed)}" if changed else "every notebook already up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
