"""Answers hidden where students read the chapters: Jupyter, Colab and nbconvert's HTML.

Each chapter is rendered as Jupyter renders a notebook (nbconvert's HTML exporter: Markdown
through mistune, raw HTML kept). Every answer must lie inside a closed ``<details>``: no
sentence of it may show in the page's text once the contents of closed ``<details>`` elements
(all but their summary) are left out, while each of its sentences is in the page (so the check
sees it). No MyST markup (``{ref}``, ``:::{solution}``, ``(label)=``...) may show anywhere.

Then the notebook form itself (``tools/notebook_answers.py``) and its converter
(``tools/hide_answers.py``): the chapters are converted and numbered as the book numbers them,
the conversion is idempotent and splits cells, and the book form it produces is the one
sphinx-exercise renders.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import course  # tools/course.py
import hide_answers
import nbformat
import pytest
from bs4 import BeautifulSoup, NavigableString, PageElement
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbformat import NotebookNode
from notebook_answers import Exercise, Solution, notebook_segments, to_myst
from notebook_text import solutions
from paths import CHAPTERS, ids

MYST_MARKUP = re.compile(
    r"\{(?:ref|doc|numref|eq|term|download|cite|exercise|solution|dropdown|note|admonition)\}"
    r"|^:{3,}|^`{3,}\{|^\([\w.:-]+\)=$|^:(?:label|class):",
    re.M,
)


BLOCKS = ["p", "li", "td", "th", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6"]


def sentences(markdown: str) -> list[str]:
    """The sentences of at least 30 characters of rendered Markdown, each within one paragraph,
    list item or table cell (code blocks left out)."""
    soup = BeautifulSoup(markdown2html_mistune(markdown), "html.parser")
    for pre in soup.find_all("pre"):
        pre.replace_with("\n\n")
    for block in soup.find_all(BLOCKS):
        block.append("\n\n")
    paragraphs = [" ".join(p.split()) for p in soup.get_text(" ").split("\n\n")]
    return [s for p in paragraphs for s in re.split(r"(?<=[.?!])\s+", p) if len(s) >= 30]


@cache
def rendered(path: Path) -> BeautifulSoup:
    """The chapter as nbconvert's HTML exporter renders it (its default, JupyterLab's template),
    without its scripts and styles."""
    html, _ = HTMLExporter().from_notebook_node(nbformat.read(path, as_version=4))
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(["script", "style"]):
        tag.decompose()
    return soup


def shown(string: NavigableString) -> bool:
    """Whether ``string`` shows before any ``<details>`` is opened: every closed ``<details>``
    around it shows only its summary."""
    inner: PageElement = string
    for outer in string.parents:
        if outer.name == "details" and not outer.has_attr("open") and inner.name != "summary":
            return False
        inner = outer
    return True


def page_text(soup: BeautifulSoup, *, click: bool) -> str:
    """The notebook's text; without ``click``, only what shows before any <details> is opened."""
    strings = soup.strings if click else filter(shown, soup.strings)
    return " ".join(" ".join(strings).split())


def shown_solutions(nb: NotebookNode, soup: BeautifulSoup) -> list[str]:
    """The labels of the solutions whose text a reader sees without a click."""
    visible = page_text(soup, click=False)
    return [s.label for s in solutions(nb) if any(sentence in visible for sentence in sentences(s.body))]


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_jupyter_shows_no_answer_before_a_click(path):
    nb, soup = nbformat.read(path, as_version=4), rendered(path)
    answers = solutions(nb)
    assert len(answers) >= 3, f"{path.name}: {len(answers)} solutions found, every chapter has at least 3"
    everything = page_text(soup, click=True)
    for answer in answers:
        assert sentences(answer.body), f"the solution of {answer.label} has no sentence to look for"
        missing = [s for s in sentences(answer.body) if s not in everything]
        assert not missing, f"the solution of {answer.label} is not in the rendered page: {missing[:2]}"
    assert shown_solutions(nb, soup) == [], "solutions visible without a click: run tools/hide_answers.py"
    closed = soup.select("details.solution:not([open]) > summary")
    assert len(closed) == len(answers), f"{len(answers)} solutions, {len(closed)} closed <details> with a summary"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_jupyter_shows_no_myst_markup(path):
    prose = (s for s in rendered(path).strings if not s.find_parent(["pre", "code"]))
    raw = MYST_MARKUP.findall("\n".join(prose))
    assert raw == [], f"{path.name} shows MyST markup that only the book renders: {raw[:5]}"


def test_a_visible_answer_is_found():
    """The check above fails on the directive form, where every answer shows."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(
            ":::{exercise}\n:label: q\nWhat is two plus two?\n:::\n\n"
            ":::{solution} q\n:class: dropdown\nFour, since two and two make four in every base above four.\n:::"
        )
    ]
    html, _ = HTMLExporter().from_notebook_node(nb)
    assert shown_solutions(nb, BeautifulSoup(html, "html.parser")) == ["q"]


def test_chapters_are_in_the_notebook_form_and_numbered_as_the_book():
    assert hide_answers.main(["--check"]) == 0, "run `python tools/hide_answers.py` and commit the chapters"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids(CHAPTERS))
def test_book_form_keeps_every_exercise_and_answer(path):
    """What the Sphinx extension hands to MyST: each exercise and solution as a directive, and
    nothing of the notebook form left."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        book = to_myst(cell.source)
        segments = notebook_segments(cell.source)
        assert [s for s in hide_answers.myst_segments(book, path.name) if not isinstance(s, str)] == [
            s for s in segments if not isinstance(s, str)
        ]
        assert "<details" not in book and 'data-exercise="' not in book and "**Exercise" not in book
        for seg in segments:
            if isinstance(seg, Exercise):
                assert f":label: {seg.label}\n" in book
            elif isinstance(seg, Solution):
                assert re.search(rf"^:{{3,}}\{{solution\}} {re.escape(seg.label)}\n:class: dropdown\n", book, re.M)


# ---- the converter on a small book ------------------------------------------------------------

DIRECTIVE_CHAPTER = [
    "# A chapter\n\n(the-claim)=\n### Why it holds\n\nBecause.",
    "Prose before.\n\n:::{exercise}\n:label: c-ex1\nFirst question?\n:::\n\n"
    ":::{solution} c-ex1\n:class: dropdown\nFirst answer.\n:::\n\n"
    "::::{exercise}\n:label: c-code\n\n```python\nx = 1\n```\n::::\n\nProse after, see {ref}`the claim <the-claim>`.",
    "::::{solution} c-code\n:class: dropdown\n\nThe code answer:\n\n```text\n:::\n```\n::::",
]


@pytest.fixture
def small_book(tmp_path: Path) -> Path:
    (tmp_path / "book").mkdir()
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/index\nchapters:\n  - file: book/a\n  - file: book/b\n"
    )
    (tmp_path / "book" / "index.md").write_text("# Index\n\n:::{exercise}\n:label: i-ex\nIn the index.\n:::\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text) for text in DIRECTIVE_CHAPTER]
    nb.cells.insert(2, nbformat.v4.new_code_cell("x = 1"))
    nbformat.write(nb, tmp_path / "book" / "a.ipynb")
    other = nbformat.v4.new_notebook()
    other.cells = [nbformat.v4.new_markdown_cell("# B\n\nAs chapter A shows ({ref}`the-claim`), and {ref}`c-ex1`.")]
    nbformat.write(other, tmp_path / "book" / "b.ipynb")
    return tmp_path


def convert_all(root: Path) -> None:
    pages = course.toc_pages(root)
    numbers, targets = hide_answers.book_index(pages)
    for page in pages:
        if page.suffix == ".ipynb" and (nb := hide_answers.convert(page, numbers, targets)) is not None:
            nbformat.write(nb, page)


def test_converter_splits_numbers_links_and_is_idempotent(small_book):
    convert_all(small_book)
    a = nbformat.read(small_book / "book" / "a.ipynb", as_version=4)
    sources = [c.source for c in a.cells]
    assert sources[0] == '# A chapter\n\n<a id="the-claim"></a>\n### Why it holds\n\nBecause.'
    assert sources[1] == "Prose before."
    # the index page's exercise is number 1: the book counts in the order of _toc.yml
    assert sources[2] == (
        '<a id="c-ex1"></a>**Exercise 2.** First question?\n\n'
        '<details class="solution" data-exercise="c-ex1">\n<summary>Solution to Exercise 2</summary>\n\n'
        "First answer.\n\n</details>"
    )
    assert sources[3] == '<a id="c-code"></a>**Exercise 3.**\n\n```python\nx = 1\n```'
    assert sources[4] == "Prose after, see [the claim](#the-claim)."
    assert a.cells[5].cell_type == "code"
    assert sources[6].startswith('<details class="solution" data-exercise="c-code">\n<summary>Solution to Exercise 3')
    assert [c.id for c in a.cells][2:4] == ["c-ex1", "c-code"]
    assert len({c.id for c in a.cells}) == len(a.cells)
    b = nbformat.read(small_book / "book" / "b.ipynb", as_version=4)
    assert (
        b.cells[0].source
        == "# B\n\nAs chapter A shows ([Why it holds](a.ipynb#the-claim)), and [Exercise 2](a.ipynb#c-ex1)."
    )
    # the book form: a fence longer than any inside, links that resolve across the book
    book = to_myst(a.cells[6].source)
    assert book == "::::{solution} c-code\n:class: dropdown\n\nThe code answer:\n\n```text\n:::\n```\n::::"
    assert to_myst(b.cells[0].source).endswith("([Why it holds](#the-claim)), and [Exercise 2](#c-ex1).")

    before = {p: p.read_bytes() for p in (small_book / "book").glob("*.ipynb")}
    convert_all(small_book)
    assert {p: p.read_bytes() for p in before} == before, "a second run changed a converted chapter"


def test_converter_renumbers_when_the_toc_changes(small_book):
    convert_all(small_book)
    (small_book / "_toc.yml").write_text("format: jb-book\nroot: book/b\nchapters:\n  - file: book/a\n")
    convert_all(small_book)
    a = nbformat.read(small_book / "book" / "a.ipynb", as_version=4)
    assert a.cells[2].source.startswith('<a id="c-ex1"></a>**Exercise 1.**')
    assert "<summary>Solution to Exercise 1</summary>" in a.cells[2].source


@pytest.mark.parametrize(
    ("markdown", "message"),
    [
        (":::{exercise} A title\n:label: t\nQ?\n:::", "title"),
        (":::{exercise}\nQ without a label?\n:::", ":label:"),
        (":::{solution} nowhere\n:class: dropdown\nA.\n:::", "no exercise's label"),
        ("See {doc}`the notation <notation>`.", "no notebook form"),
        ("See {ref}`nothing <no-such-label>`.", "no page of _toc.yml"),
        ('<details class="solution" data-exercise="c-ex1">\nno summary\n</details>', "<summary>"),
    ],
)
def test_converter_says_what_to_write_instead(small_book, markdown, message):
    path = small_book / "book" / "a.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(markdown))
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match=re.escape(message)):
        numbers, targets = hide_answers.book_index(course.toc_pages(small_book))
        hide_answers.convert(path, numbers, targets)
