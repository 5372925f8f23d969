"""One notation throughout the course, the one book/notation.md lists.

Every symbol the course gives a fixed meaning is on the notation page with that meaning, and no
chapter, assignment or ``course_lib`` text uses a symbol for a meaning the page gives to another:
the learning rate is η (α is the path variable of Integrated Gradients), and machine epsilon is
ε_mach (ε alone is the dual unit).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest
from paths import BOOK, CHAPTERS, ROOT

from course_lib.jit import jit

NOTATION = BOOK / "notation.md"

# The course's symbols, as the chapters write them, and a word of the meaning the page gives each.
COURSE_SYMBOLS = {
    r"\eta": "learning rate",
    r"\alpha \in [0, 1]": "path variable",
    r"\alpha_k, w_k": "quadrature",
    r"\varepsilon": "dual unit",
    r"\varepsilon_{\text{mach}}": "machine epsilon",
    "h": "finite difference",
    "x'": "baseline",
    r"\mathrm{IG}_i(x)": "attribution",
    r"\delta": "convergence delta",
    r"\delta_{ij}": "Kronecker delta",
    r"\Delta": "change",
    "F": "model",
    r"\lambda_{\min}, \lambda_{\max}": "eigenvalue",
    r"\rho": "error shrinks",
    r"\bar v = \dfrac{\partial y}{\partial v}": "adjoint",
    r"\dot v = \dfrac{\partial v}{\partial x_i}": "tangent",
}

BARE_EPSILON = r"(?:\\varepsilon|ε)(?![_\w])"
# (what is wrong, where it applies: a regex a sentence must contain, the regex that is then wrong)
MISUSES = [
    ("IG written another way (the notation page writes \\mathrm{IG}_i)", "", r"\\operatorname\{IG\}"),
    (
        "α for the learning rate (the notation page's learning rate is η)",
        r"learning rate|step size|\blr\b",
        r"\\alpha\b|α",
    ),
    ("α in a gradient step (the learning rate is η)", "", r"\\alpha\s*(?:\\[,;:!]\s*)*(?:\\nabla|\\lambda)"),
    (
        "bare ε for machine epsilon (write ε_mach: ε alone is the dual unit)",
        r"machine epsilon|rounding|round-off|float64",
        BARE_EPSILON,
    ),
    (
        "u as the weights of a VJP (the notation page writes w^T J, and J u for a JVP)",
        "",
        r"u\^\\top\s*J\b|J\^\\top\s*u\b",
    ),
    (
        "bare ε as a size (machine epsilon is ε_mach)",
        "",
        rf"(?:/\s*(?:\\ )?|\\sqrt\{{|few \$){BARE_EPSILON}|{BARE_EPSILON}\s*(?:/|\^\{{1/|\\approx)",
    ),
]
SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z`$*(])|\n\s*\n")
CODE_BLOCK = re.compile(r"^```.*?^```", re.M | re.S)


def notation_rows() -> list[tuple[list[str], str]]:
    """The page's table rows: the symbols of the first column (their LaTeX) and the row's text."""
    rows = []
    for line in NOTATION.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2:
            rows.append((re.findall(r"\$([^$]+)\$", cells[0]), " ".join(cells[1:])))
    return rows


def texts() -> list[tuple[str, str]]:
    """(where, prose) for every chapter's and solution's Markdown cell, the book's pages but the
    notation page, and every string in course_lib's source (docstrings, figure labels)."""
    found = []
    notebooks = CHAPTERS + sorted((ROOT / "solutions").glob("*/*.ipynb"))
    for path in notebooks:
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "markdown":
                found.append((f"{path.name} cell {k}", "".join(cell["source"])))
    for page in sorted(BOOK.glob("*.md")):
        if page != NOTATION:
            found.append((page.name, page.read_text()))
    for module in sorted((ROOT / "course_lib").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.JoinedStr):  # an f-string: with its fields, such as {lr:g}
                found.append((f"{module.relative_to(ROOT)} line {node.lineno}", ast.unparse(node)))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append((f"{module.relative_to(ROOT)} line {node.lineno}", node.value))
    return found


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, with each cell of a table on its own."""
    pieces = []
    for piece in SENTENCE_END.split(CODE_BLOCK.sub("", text)):
        pieces += re.split(r"(?<!\\)\|", piece) if "|" in piece else [piece]
    return [piece for piece in pieces if piece.strip()]


def misuses(text: str) -> list[str]:
    """What is wrong with the symbols in ``text``, one entry per offending sentence."""
    wrong = []
    for sentence in sentences(text):
        for what, context, symbol in MISUSES:
            if re.search(context, sentence, re.I) and re.search(symbol, sentence):
                wrong.append(f"{what}: {' '.join(sentence.split())[:160]!r}")
    return wrong


@pytest.mark.parametrize("symbol", COURSE_SYMBOLS)
def test_every_course_symbol_is_on_the_notation_page(symbol):
    meaning = COURSE_SYMBOLS[symbol]
    rows = [
        text for symbols, text in notation_rows() if any(s == symbol or s.startswith(symbol + " ") for s in symbols)
    ]
    assert rows, f"${symbol}$ is not on the notation page"
    assert any(meaning.lower() in text.lower() for text in rows), f"${symbol}$ is listed, but not as the {meaning}"


def test_no_chapter_gives_a_symbol_the_meaning_of_another():
    wrong = [f"{where}: {problem}" for where, text in texts() for problem in misuses(text)]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize(
    "text",
    [
        r"where the *learning rate* $\alpha > 0$ sets the step size.",
        r"gradient descent takes the step $\theta \leftarrow \theta - \alpha\,\nabla L(\theta)$.",
        r"Stable for $\lvert 1 - \alpha\lambda \rvert < 1$.",
        r"the rounding error grows like $\varepsilon/h^2$.",
        r"both are about $\sqrt{\varepsilon} \approx 10^{-8}$ here.",
        r"step in units of the machine epsilon $\varepsilon \approx 2.2\times 10^{-16}$.",
        r"run loss for loss against PyTorch (gaps of a few $\varepsilon$).",
        r'ax.set_title(f"Gradient descent from {n} random starts ($\\alpha = {lr:g}$)")',
        r'ax.set_ylabel(r"$|\ell_a - \ell_b|\ /\ \varepsilon$")',
        r"with **completeness** $\sum_i \operatorname{IG}_i = F(x) - F(x')$.",
        r"**reverse mode**: `vjp` gives $u^\top J$; `jacfwd` and `jacrev` assemble whole Jacobians.",
        r"Going from the last equation to the first gives $u \mapsto J^\top u$; at $u = 1$, the gradient.",
    ],
)
def test_the_guard_catches_the_old_mistakes(text):
    assert misuses(text), text


@pytest.mark.parametrize(
    "text",
    [
        r"where the *learning rate* $\eta > 0$ sets the step size.",
        r"the points $x' + \alpha(x - x')$ for $\alpha$ from 0 to 1.",
        r"A dual number $a + b\,\varepsilon$ with $\varepsilon^2 = 0$.",
        r"the rounding error grows like $\varepsilon_{\text{mach}}/h^2$. A dual number $x + \varepsilon$ has no step.",
        r"Call them $\varepsilon_1$ and $\varepsilon_2$, with $\varepsilon_1 \varepsilon_2 \ne 0$.",
        r"the VJP of that map with the vector $u$ is $(J^\top)^\top u = Ju$, and $w \mapsto J^\top w$ is linear.",
    ],
)
def test_the_guard_lets_the_notation_through(text):
    assert misuses(text) == [], misuses(text)


PROGRAM_WORDS = [
    "program",
    "equation",
    "variable",
    "tracer",
    "static argument",
    "signature",
    "batching rule",
    "linear program",
    "cotangent",
    "JVP rule",
    "partial evaluation",
    "staging",
    "abstract interpretation",
    "pytree",
    "loop primitive",
]


def test_the_programs_table_names_what_course_lib_has():
    section = NOTATION.read_text().split("\n## Programs\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Word")]
    rows = {
        cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip().strip("|").split("|")] for line in lines)
    }
    assert list(rows) == PROGRAM_WORDS
    for word, (meaning, ours, jax_name) in rows.items():
        names = re.findall(r"`(\w+)\.(\w+)", ours)
        assert meaning and names and "jax" in jax_name.lower() + meaning, word
        for module, name in names:
            assert hasattr(importlib.import_module(f"course_lib.{module}"), name), f"{word}: course_lib.{module}.{name}"
    assert "static_argnums" in inspect.signature(jit).parameters


def test_the_notation_page_is_linked_from_every_chapter():
    missing = [p.name for p in CHAPTERS if "](notation.md)" not in Path(p).read_text()]
    assert missing == [], f"chapters that do not link the notation page: {missing}"
