"""Every chapter says under its title how long it takes, and the estimate stays true as the
chapter changes (tools/reading_time.py computes it from the words, code and exercises)."""

from __future__ import annotations

import json

import pytest
from paths import BOOK, CHAPTERS
from reading_time import (
    CODE_LINES_PER_MINUTE,
    CODING_MINUTES,
    OUTPUT_LINES_PER_MINUTE,
    QUESTION_MINUTES,
    ROUND_TO,
    WORDS_PER_MINUTE,
    Estimate,
    estimate,
    stated,
    with_line,
)


def notebook(*cells: tuple[str, str, list[str]]) -> dict:
    return {"cells": [{"cell_type": kind, "source": text, "metadata": {"tags": tags}} for kind, text, tags in cells]}


def words(n: int) -> str:
    return " ".join(["word"] * n)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem.split("_")[0] for p in CHAPTERS])
def test_the_chapter_states_a_true_estimate_under_its_title(path):
    nb = json.loads(path.read_text())
    said, computed = stated(nb), estimate(nb)
    assert said is not None, (
        f"{path.name}: no reading time: run python tools/reading_time.py {path.relative_to(BOOK.parent)}"
    )
    title, blank, line = "".join(nb["cells"][0]["source"]).splitlines()[:3]
    assert title.startswith("# ") and blank == "" and line == said.line(), "the line sits right under the title"
    assert computed.exercises >= 3 * QUESTION_MINUTES, "the chapter's exercises are recognised"
    for stated_minutes, minutes in [(said.read, computed.read), (said.exercises, computed.exercises)]:
        assert abs(stated_minutes - minutes) <= max(ROUND_TO, 0.15 * minutes), (
            f"{path.name} says {said.line()!r} but now takes {computed.line()!r}: run python tools/reading_time.py"
        )


def test_the_estimate_counts_prose_code_and_exercises_apart():
    prose = WORDS_PER_MINUTE * 10  # ten minutes
    code = "\n".join(f"x{i} = {i}" for i in range(CODE_LINES_PER_MINUTE * 10))  # ten more
    nb = notebook(
        ("markdown", f"# 1. Title\n\n{words(prose // 2)}", []),
        ("code", "\n".join(["import os"] * 200), ["hide-input"]),  # the folded set-up: not read
        ("code", code + "\n\n", []),
        ("markdown", words(prose // 2), []),
        (
            "markdown",
            f":::{{exercise}}\n:label: a\nA question?\n:::\n\n:::{{solution}} a\n:class: dropdown\n{words(3000)}\n:::",
            [],
        ),
        ("markdown", "::::{exercise}\n:label: b\n**Coding.** Write it.\n::::", []),
        (
            "markdown",
            f'<a id="c"></a>**Exercise 3.** Why?\n\n<details class="solution" data-exercise="c">\n'
            f"<summary>Solution to Exercise 3</summary>\n\n{words(3000)}\n\n</details>",
            [],
        ),
        ("markdown", '<a id="d"></a>**Exercise 4.** **Coding.** Write that.', []),
    )
    assert estimate(nb) == Estimate(read=20, exercises=2 * QUESTION_MINUTES + 2 * CODING_MINUTES)


def test_printed_text_counts_and_figures_do_not():
    printed = "\n".join(f"line {i}" for i in range(OUTPUT_LINES_PER_MINUTE * 10))  # ten minutes of output
    cell = {"cell_type": "code", "source": "print(program)", "metadata": {"tags": []}}
    nb = {"cells": [cell | {"outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]}]}
    assert estimate(nb).read == 10
    result = {"output_type": "execute_result", "data": {"text/plain": printed.splitlines(keepends=True)}}
    assert estimate({"cells": [cell | {"outputs": [result]}]}).read == 10
    figure = {"output_type": "display_data", "data": {"image/png": "...", "text/plain": printed}}
    assert estimate({"cells": [cell | {"outputs": [figure]}]}).read == ROUND_TO  # the one line of code
    folded = cell | {"metadata": {"tags": ["hide-input"]}, "outputs": nb["cells"][0]["outputs"]}
    assert estimate({"cells": [folded]}).read == 0


def test_the_line_goes_under_the_title_once():
    cell = "# 3. Forward mode\n\nChapter 2 recorded a program."
    line = "*About 30 minutes to read, 40 more for the exercises.*"
    once = with_line(cell, Estimate(30, 40).line())
    assert once == f"# 3. Forward mode\n\n{line}\n\nChapter 2 recorded a program."
    again = with_line(once, Estimate(35, 45).line())
    assert again == once.replace("30 minutes", "35 minutes").replace("40 more", "45 more")
    assert stated({"cells": [{"source": again}]}) == Estimate(35, 45)
    assert estimate(notebook(("markdown", "", []))) == Estimate(0, 0)
