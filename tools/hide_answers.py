"""Rewrite the chapters' exercises in the notebook form, so Jupyter and Colab hide the answers.

    python tools/hide_answers.py                      # every chapter listed in _toc.yml
    python tools/hide_answers.py book/13_*.ipynb      # only these chapters
    python tools/hide_answers.py --check              # exit 1 if a chapter needs rewriting

In the Markdown cells of each chapter it rewrites

- sphinx-exercise's ``:::{exercise}`` (with a ``:label:``) and ``:::{solution} LABEL`` blocks,
  which Jupyter and Colab show as plain text with every answer in view, into the notebook form
  of ``notebook_answers.py``: the question under "**Exercise N.**" and the answer in a
  ``<details>`` element, collapsed until clicked; the book still renders them as directives;
- a ``{ref}`text <label>``` role into a Markdown link, ``[text](#label)`` within a chapter and
  ``[text](06_topological_order.ipynb#label)`` into another, and a target ``(label)=`` into
  an anchor ``<a id="label"></a>``;

and splits every cell that holds several exercises, or an exercise and other prose, so that
each exercise and its answer is a cell of its own (the first piece keeps the cell's id; the
others are named after their exercise). N is the number the book prints: sphinx-exercise
counts the exercises of all the pages in the order of ``_toc.yml``, from 1, so a new or moved
chapter renumbers the ones after it, and this tool rewrites their headings.

It is idempotent: a chapter already in the notebook form with the right numbers stays
byte-identical, so run it again whenever a merge brings exercises in the directive form or
changes ``_toc.yml`` (``--check`` says whether it is needed). Only Markdown cells change:
nothing is re-executed. A directive or role with no notebook form (an exercise without a
label, a titled exercise, ``{doc}``, ``:::{note}``...) stops it with the chapter and what to
write instead; chapters with such a problem are left as they were.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import course  # tools/course.py
import nbformat
from nbformat import NotebookNode
from notebook_answers import LABEL, Exercise, Segment, Solution, notebook_segments, trim

ROOT = course.ROOT
DIRECTIVE = re.compile(
    r"^(?P<fence>:{3,})\{(?P<name>exercise|solution)\}[ \t]*(?P<argument>[^\n]*)\n(?P<content>.*?)^(?P=fence)[ \t]*$",
    re.M | re.S,
)
OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
REF = re.compile(rf"\{{ref\}}`(?:(?P<text>[^`<]*?)\s*<(?P<target>{LABEL})>|(?P<bare>{LABEL}))`")
TARGET = re.compile(
    rf'^(?:\((?P<myst>{LABEL})\)=|<a id="(?P<html>{LABEL})"></a>)[ \t]*\n(?:#+[ \t]+(?P<title>[^\n]*))?', re.M
)
# MyST that Jupyter would show raw, once the conversions above are done.
LEFTOVER = re.compile(r"\{[\w:-]+\}`|^(?::{3,}|`{3,})\{|^\([\w.:-]+\)=[ \t]*$", re.M)
# Code, where MyST syntax is only shown: fenced blocks and inline code (not a role's text).
CODE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$|(?<!\})`[^`\n]+`", re.M | re.S)
# A Markdown line that starts a block of its own, so "**Exercise N.**" cannot run into it.
BLOCK_START = re.compile(r"(#|[-*+] |\d+[.)] |>|```|~~~|\$\$|\||<| {4}|\\begin)")


def myst_segments(text: str, where: str) -> list[Segment]:
    """``text`` cut into prose, exercises and solutions, in the directive or the notebook form."""
    out: list[Segment] = []
    pos = 0
    for m in DIRECTIVE.finditer(text):
        out += notebook_segments(text[pos : m.start()])
        lines = m["content"].split("\n")
        options = {}
        while lines and (option := OPTION.match(lines[0])):
            options[option["key"]] = option["value"].strip()
            lines.pop(0)
        body = trim("\n".join(lines))
        argument = m["argument"].strip()
        if m["name"] == "exercise":
            if argument or set(options) != {"label"}:
                raise ValueError(
                    f"{where}: an exercise with {f'the title {argument!r}' if argument else f'options {options}'}: "
                    "the notebook form has a :label: and nothing else (put a title in the question's first sentence)"
                )
            out.append(Exercise(options["label"], body))
        else:
            if not argument or set(options) - {"class"}:
                raise ValueError(
                    f"{where}: a solution with argument {argument!r} and options {options}: "
                    "write `:::{solution} LABEL` with LABEL the exercise's :label:, and no option but :class:"
                )
            if re.search(r"^</details>", body, re.M):
                raise ValueError(f"{where}: the solution of {argument} has a line </details>, which would end it early")
            out.append(Solution(argument, body))
        pos = m.end()
    out += notebook_segments(text[pos:])
    return out


def markdown_texts(path: Path) -> list[str]:
    if path.suffix == ".md":
        return [path.read_text()]
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def book_index(pages: list[Path]) -> tuple[dict[str, int], dict[str, tuple[Path, str | None]]]:
    """Every exercise's number as the book prints it, and every label's page and title."""
    numbers: dict[str, int] = {}
    targets: dict[str, tuple[Path, str | None]] = {}
    for page in pages:
        for text in markdown_texts(page):
            for seg in myst_segments(text, page.name):
                if isinstance(seg, Exercise):
                    numbers[seg.label] = len(numbers) + 1
                    targets[seg.label] = (page, f"Exercise {numbers[seg.label]}")
            for m in TARGET.finditer(text):
                targets[m["myst"] or m["html"]] = (page, m["title"])
    return numbers, targets


def exercise_cell(ex: Exercise, number: int) -> str:
    sep = "\n\n" if not ex.body or BLOCK_START.match(ex.body) else " "
    return f'<a id="{ex.label}"></a>**Exercise {number}.**{sep}{ex.body}'


def solution_cell(sol: Solution, number: int) -> str:
    return (
        f'<details class="solution" data-exercise="{sol.label}">\n'
        f"<summary>Solution to Exercise {number}</summary>\n\n{sol.body}\n\n</details>"
    )


def links(text: str, page: Path, targets: dict[str, tuple[Path, str | None]]) -> str:
    """``{ref}`` roles as Markdown links and ``(label)=`` targets as anchors."""

    def link(m: re.Match) -> str:
        label = m["target"] or m["bare"]
        if label not in targets:
            raise ValueError(f"{page.name}: {{ref}} to {label!r}, which no page of _toc.yml defines")
        where, title = targets[label]
        text = m["text"] if m["target"] else title
        if not text:
            raise ValueError(f"{page.name}: {{ref}}`{label}` has no text and its target no heading: write the text")
        into = "" if where == page else os.path.relpath(where, page.parent)
        return f"[{text}]({into}#{label})"

    text = REF.sub(link, text)
    return re.sub(rf"^\((?P<label>{LABEL})\)=[ \t]*$", r'<a id="\g<label>"></a>', text, flags=re.M)


def pieces(segments: list[Segment]) -> list[list[Segment]]:
    """Cells to be: each exercise with the answer right after it, each other segment alone."""
    out: list[list[Segment]] = []
    for seg in segments:
        prev = out[-1] if out else []
        answers_prev = len(prev) == 1 and isinstance(prev[0], Exercise) and prev[0].label == getattr(seg, "label", None)
        if isinstance(seg, Solution) and answers_prev:
            prev.append(seg)
        else:
            out.append([seg])
    return out


def cell_id(piece: list[Segment], taken: set[str], fallback: str) -> str:
    first = piece[0]
    base = fallback
    if isinstance(first, Exercise):
        base = first.label
    elif isinstance(first, Solution):
        base = f"{first.label}-solution"
    base = re.sub(r"[^\w-]", "-", base)[:60]
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    return name


def cell_sources(text: str, path: Path, numbers: dict[str, int]) -> list[tuple[str, list[Segment]]]:
    """The sources of the cells a Markdown cell becomes, each with the segments it holds."""
    segments = myst_segments(text, path.name)
    if all(isinstance(seg, str) for seg in segments):
        return [(text, segments)]
    sources = []
    for piece in pieces(segments):
        parts = []
        for seg in piece:
            if isinstance(seg, str):
                parts.append(trim(seg))
            elif seg.label not in numbers:
                raise ValueError(f"{path.name}: a solution to {seg.label!r}, which is no exercise's label")
            elif isinstance(seg, Exercise):
                parts.append(exercise_cell(seg, numbers[seg.label]))
            else:
                parts.append(solution_cell(seg, numbers[seg.label]))
        sources.append(("\n\n".join(parts), piece))
    return sources


def convert(path: Path, numbers: dict[str, int], targets: dict[str, tuple[Path, str | None]]) -> NotebookNode | None:
    """The chapter with its Markdown cells in the notebook form, or None if it is already."""
    nb = nbformat.read(path, as_version=4)
    taken = {c.get("id", "") for c in nb.cells}
    cells, changed = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            cells.append(cell)
            continue
        sources = cell_sources(links(cell.source, path, targets), path, numbers)
        if len(sources) == 1 and sources[0][0] == cell.source:
            cells.append(cell)
            continue
        changed = True
        for k, (source, piece) in enumerate(sources):
            new = nbformat.from_dict(dict(cell, source=source, metadata=dict(cell.metadata)))
            if k:
                new["id"] = cell_id(piece, taken, f"{cell.get('id', 'cell')}-{k}")
                taken.add(new["id"])
            cells.append(new)
    for cell in cells:
        if cell.cell_type == "markdown" and (leftover := LEFTOVER.search(CODE.sub("", cell.source))):
            raise ValueError(
                f"{path.name}: {leftover.group(0)!r} has no notebook form and Jupyter shows it raw: "
                "write it in Markdown (a link, an anchor <a id=...></a>, a bold heading)"
            )
    if not changed:
        return None
    nb.cells = cells
    nbformat.validate(nb)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="chapter notebooks (default: every chapter of _toc.yml)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a chapter needs rewriting")
    args = parser.parse_args(argv)
    pages = course.toc_pages(ROOT)
    chapters = [p.resolve() for p in args.chapters]
    chapters = chapters or [p for p in pages if p.suffix == ".ipynb" and p.parent.name == "book"]
    outside = [str(p) for p in chapters if p not in pages]
    if outside:
        print(f"not a page of _toc.yml: {', '.join(outside)} (list a new chapter in _toc.yml first)", file=sys.stderr)
        return 1
    try:
        numbers, targets = book_index(pages)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    changed, failed = [], []
    for path in chapters:
        try:
            nb = convert(path, numbers, targets)
        except ValueError as error:
            failed.append(str(error))
            continue
        if nb is not None:
            changed.append(path)
            if not args.check:
                nbformat.write(nb, path)
    for path in changed:
        print(f"{'needs rewriting' if args.check else 'rewrote'}: {path.relative_to(ROOT)}")
    for problem in failed:
        print(problem, file=sys.stderr)
    return 1 if failed or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
