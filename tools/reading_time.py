"""The estimated time a chapter takes, written as a short line under its title.

    python tools/reading_time.py                      # every chapter in book/
    python tools/reading_time.py book/05_*.ipynb      # only these chapters

The estimate is computed from the chapter itself: its prose (the Markdown outside the
exercises and their answers) at ``WORDS_PER_MINUTE``, its visible code at ``CODE_LINES_PER_MINUTE``
(read and run; the folded set-up cell is not counted), the text its code prints at
``OUTPUT_LINES_PER_MINUTE`` (a printed program or table is read too, faster than code), and its exercises at
``QUESTION_MINUTES`` each, ``CODING_MINUTES`` for a coding exercise. Both totals are rounded to
``ROUND_TO`` minutes. The line reads ``*About 45 minutes to read, 30 more for the exercises.*``;
the tool writes or updates it and leaves a chapter whose line is right byte-identical. Only
Markdown changes: nothing is re-executed. ``tests/book/test_reading_time.py`` checks that every
chapter's line stays true as the chapter changes.

Exercises are recognised in both forms the book uses: sphinx-exercise's ``:::{exercise}`` and
``:::{solution}`` blocks, and the notebook form ``**Exercise N.**`` with its answer in
``<details class="solution">``.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS_PER_MINUTE = 150  # technical prose with formulas
CODE_LINES_PER_MINUTE = 15
OUTPUT_LINES_PER_MINUTE = 30
QUESTION_MINUTES = 5
CODING_MINUTES = 15
ROUND_TO = 5

DIRECTIVE = re.compile(
    r"^(?P<fence>:{3,})\{(?P<name>exercise|solution)\}[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S
)
NOTEBOOK_EXERCISE = re.compile(r"\*\*Exercise \d+\.\*\*")
NOTEBOOK_SOLUTION = re.compile(r'^<details class="solution".*?^</details>[ \t]*$', re.M | re.S)
CODING = re.compile(r"^(?::[\w-]+:[^\n]*\n)*\s*\*\*Coding\b[^*\n]*\*\*")  # **Coding.** or **Coding: a title.**
LINE = re.compile(r"^\*About (?P<read>\d+) minutes to read, (?P<exercises>\d+) more for the exercises\.\*$", re.M)


@dataclass(frozen=True)
class Estimate:
    read: int  # minutes, rounded to ROUND_TO
    exercises: int

    def line(self) -> str:
        return f"*About {self.read} minutes to read, {self.exercises} more for the exercises.*"


def _rounded(minutes: float) -> int:
    """To the nearest ROUND_TO minutes, and at least ROUND_TO when there is anything at all."""
    return max(ROUND_TO, ROUND_TO * round(minutes / ROUND_TO)) if minutes > 0 else 0


def _source(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def _printed(output: dict) -> str:
    """The text an output shows: what the code printed, or the value a cell ends with (figures and
    widgets are looked at, not read line by line)."""
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    elif output.get("output_type") == "execute_result":
        text = output.get("data", {}).get("text/plain", "")
    else:
        return ""
    return "".join(text) if isinstance(text, list) else text


def estimate(nb: dict) -> Estimate:
    """The reading and exercise time of a chapter (a notebook as ``json.load`` reads it)."""
    prose, code_lines, output_lines, questions, coding = 0, 0, 0, 0, 0
    for cell in nb["cells"]:
        text = _source(cell)
        if cell["cell_type"] == "code":
            if "hide-input" not in cell.get("metadata", {}).get("tags", []):
                code_lines += _lines(text)
                output_lines += sum(_lines(_printed(out)) for out in cell.get("outputs", []))
            continue
        if cell["cell_type"] != "markdown":
            continue
        text = LINE.sub("", text)
        for block in DIRECTIVE.finditer(text):
            if block["name"] == "exercise":
                is_coding = bool(CODING.match(block["body"]))
                questions, coding = questions + (not is_coding), coding + is_coding
        # In the notebook form a question runs from its "**Exercise N.**" to the end of the cell.
        prose_text, *exercises = NOTEBOOK_EXERCISE.split(NOTEBOOK_SOLUTION.sub("", DIRECTIVE.sub("", text)))
        prose += len(prose_text.split())
        for question in exercises:
            is_coding = bool(CODING.match(question))
            questions, coding = questions + (not is_coding), coding + is_coding
    read = prose / WORDS_PER_MINUTE + code_lines / CODE_LINES_PER_MINUTE + output_lines / OUTPUT_LINES_PER_MINUTE
    return Estimate(_rounded(read), _rounded(questions * QUESTION_MINUTES + coding * CODING_MINUTES))


def stated(nb: dict) -> Estimate | None:
    """The estimate the chapter's first cell states, or None."""
    match = LINE.search(_source(nb["cells"][0]))
    return Estimate(int(match["read"]), int(match["exercises"])) if match else None


def with_line(title_cell: str, line: str) -> str:
    """The title cell with ``line`` right under its ``# Title``, replacing an older one."""
    title, _, rest = LINE.sub("", title_cell).partition("\n")
    return f"{title}\n\n{line}\n\n{rest.lstrip(chr(10))}"


def write(path: Path) -> bool:
    """Put the chapter's estimate under its title; whether the file changed."""
    text = path.read_text()
    nb = json.loads(text)
    first = nb["cells"][0]
    new = with_line(_source(first), estimate(nb).line())
    if new == _source(first):
        return False
    first["source"] = new.splitlines(keepends=True)
    path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
    return True


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "book").glob("[0-9][0-9]*_*.ipynb"))
    for path in paths:
        if write(path):
            print(f"{path.name}: {stated(json.loads(path.read_text())).line()}")  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
