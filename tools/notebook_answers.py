"""Exercises with answers that every notebook reader hides until clicked, and the book too.

Students read the chapters in Jupyter, Colab and nbconvert's HTML: these render Markdown and
some HTML, but no MyST directives or roles. So a chapter writes each exercise in the
*notebook form*, one exercise to a Markdown cell::

    <a id="ch01-ex1"></a>**Exercise 1.** The question, in Markdown ...

    <details class="solution" data-exercise="ch01-ex1">
    <summary>Solution to Exercise 1</summary>

    The answer, in Markdown (the blank lines around it let Jupyter render it) ...

    </details>

Every reader shows the question and a collapsed "Solution to Exercise 1" that opens on a click.
The question runs from its heading to the solution or the end of the cell; a solution may also
stand in a later cell (a coding exercise's, after the check the reader runs), found by its
``data-exercise``. The number is the one the book prints (``tools/hide_answers.py`` writes it).

This module is also a Sphinx extension (``_config.yml`` loads it): before MyST reads a
notebook it rewrites each exercise into sphinx-exercise's directives, ``:::{exercise}`` with
``:label: ch01-ex1`` and ``:::{solution} ch01-ex1`` with ``:class: dropdown``, so the book
numbers the exercises and shows each answer as a dropdown. It rewrites two more things:

- a line ``<a id="label"></a>`` (a place to link to) becomes the MyST target ``(label)=``;
- a link to a label on another page of ``book/``, ``[text](06_topological_order.ipynb#label)``,
  which Jupyter follows, becomes ``[text](#label)``, which MyST resolves across the book (it
  cannot resolve the first: it only looks for heading anchors in a linked page). A link within
  a chapter, ``[text](#label)``, works in both as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from sphinx.application import Sphinx

LABEL = r"[A-Za-z0-9][\w.:-]*"
EXERCISE_HEAD = re.compile(rf'^<a id="(?P<label>{LABEL})"></a>\*\*Exercise (?P<number>\d+)\.\*\*[ \t]*\n?', re.M)
SOLUTION_START = re.compile(r'^<details class="solution"', re.M)
SOLUTION = re.compile(
    rf'^<details class="solution" data-exercise="(?P<label>{LABEL})">[ \t]*\n'
    r"<summary>[^\n]*</summary>[ \t]*\n(?P<body>.*?)^</details>[ \t]*$",
    re.M | re.S,
)
ANCHOR = re.compile(rf'^<a id="(?P<label>{LABEL})"></a>[ \t]*$', re.M)
PAGE_LINK = re.compile(rf"\]\([\w-]+\.(?:ipynb|md)#(?P<label>{LABEL})\)")


@dataclass(frozen=True)
class Exercise:
    label: str
    body: str


@dataclass(frozen=True)
class Solution:
    label: str  # the exercise's
    body: str


Segment = str | Exercise | Solution


def trim(text: str) -> str:
    """``text`` without blank lines around it and trailing spaces (a leading indent stays)."""
    return text.rstrip().strip("\n")


def notebook_segments(text: str) -> list[Segment]:
    """The Markdown ``text`` cut into prose (str), exercises and solutions in the notebook form."""
    out: list[Segment] = []
    pos = 0
    while True:
        head = EXERCISE_HEAD.search(text, pos)
        start = SOLUTION_START.search(text, pos)
        if start and (head is None or start.start() < head.start()):
            out.append(text[pos : start.start()])
            solution = SOLUTION.match(text, start.start())
            if solution is None:
                line = text[start.start() :].partition("\n")[0]
                raise ValueError(
                    f"{line!r} opens a solution that is not in the notebook form: write "
                    '<details class="solution" data-exercise="LABEL">, then <summary>...</summary> on the next '
                    "line, then the answer, then </details> on a line of its own"
                )
            out.append(Solution(solution["label"], trim(solution["body"])))
            pos = solution.end()
        elif head:
            out.append(text[pos : head.start()])
            after = (EXERCISE_HEAD.search(text, head.end()), SOLUTION_START.search(text, head.end()))
            end = min((m.start() for m in after if m), default=len(text))
            out.append(Exercise(head["label"], trim(text[head.end() : end])))
            pos = end
        else:
            out.append(text[pos:])
            return [s for s in out if not isinstance(s, str) or s.strip()]


def directive(name: str, argument: str, options: dict[str, str], body: str) -> str:
    """A MyST colon-fenced directive, its fence longer than any colon fence in ``body``."""
    inner = max((len(m) for m in re.findall(r"^(:{3,})", body, re.M)), default=2)
    fence = ":" * max(3, inner + 1)
    head = f"{fence}{{{name}}}" + (f" {argument}" if argument else "")
    lines = [head, *(f":{key}: {value}" for key, value in options.items()), "", body, fence]
    return "\n".join(lines)


def to_myst(text: str) -> str:
    """Markdown in the notebook form rewritten for the book: directives, targets, links."""
    segments = notebook_segments(text)
    if any(not isinstance(s, str) for s in segments):
        parts = []
        for seg in segments:
            if isinstance(seg, Exercise):
                parts.append(directive("exercise", "", {"label": seg.label}, seg.body))
            elif isinstance(seg, Solution):
                parts.append(directive("solution", seg.label, {"class": "dropdown"}, seg.body))
            else:
                parts.append(trim(seg))
        text = "\n\n".join(parts)
    text = ANCHOR.sub(r"(\g<label>)=", text)
    return PAGE_LINK.sub(r"](#\g<label>)", text)


def _rewrite_notebook(app: Sphinx, docname: str, source: list[str]) -> None:
    """Sphinx's source-read: a notebook's Markdown cells as the book renders them."""
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    nb = json.loads(source[0])
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            try:
                cell["source"] = to_myst(text)
            except ValueError as error:
                raise ValueError(f"{docname}: {error}") from None
    source[0] = json.dumps(nb)


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("source-read", _rewrite_notebook)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
