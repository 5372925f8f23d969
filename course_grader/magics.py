"""IPython's lines in a cell, as the grader runs the cell: plain Python (:mod:`course_grader.notebook`
runs a cell that does not compile as it is this way, and :mod:`course_grader.parts` reads the names
such a cell binds and uses the same way). Standard library only: the runner imports it."""

from __future__ import annotations

import re
import tokenize

# Cell magics whose body is the cell's own Python: it runs as it would, unmeasured.
PLAIN_CELL_MAGICS = ("%%time", "%%timeit", "%%capture")
# IPython's help on a name (``np.argmin?``, ``??f``), which only shows a docstring.
HELP_LINE = re.compile(r"[ \t]*(\?\??[A-Za-z_][\w.]*\*?|[A-Za-z_*][\w.*]*\?\??)[ \t]*")


def without_magics(source: str) -> str | None:
    """``source`` with its IPython lines made plain Python, as far as they only measure, show or
    install (``%timeit f(x)``, ``%matplotlib inline``, ``!pip install ...``, ``np.argmin?``: each
    becomes ``pass``; a ``%%time`` first line is dropped, and ``%time <statement>`` runs the
    statement, as Jupyter does, once); None if it has none, or one that computes."""
    lines, changed = source.split("\n"), False
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].startswith("%%"):
        if lines[first].split()[0] not in PLAIN_CELL_MAGICS:
            return None
        lines[first], changed = "", True
    plain = _plain_lines(lines)
    return "\n".join(plain) if changed or plain != lines else None


def _plain_lines(lines: list[str]) -> list[str]:
    """``lines`` with each IPython line that starts a logical line made Python, as IPython finds
    them: a line within brackets or a string, or after a backslash (``!= b`` or ``% n`` of an
    expression black wrapped), is Python. Each line is looked at as the tokenizer reads it."""
    plain, read, start, depth = list(lines), 0, True, 0

    def readline() -> str:
        nonlocal read
        if read == len(plain):
            return ""
        line, read = plain[read], read + 1
        indent, statement = line[: len(line) - len(line.lstrip())], line.lstrip()
        if start and statement.startswith("%time ") and statement[6:].strip():
            plain[read - 1] = indent + statement[6:].strip()  # its assignment stays, as in Jupyter
        elif start and (statement.startswith(("%", "!")) or HELP_LINE.fullmatch(line)):
            plain[read - 1] = indent + "pass"
        return plain[read - 1] + "\n"

    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.OP and token.string in ("(", "[", "{", ")", "]", "}"):
                depth = max(0, depth + (1 if token.string in "([{" else -1))
            # Whether the line the tokenizer reads next starts a logical line.
            start = token.type == tokenize.NEWLINE or token.type == tokenize.NL and depth == 0
    except (tokenize.TokenError, SyntaxError):  # a cell Python cannot read further: as far as it went
        pass
    return plain
