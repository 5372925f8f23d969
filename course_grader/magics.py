"""IPython's lines in a cell, as the grader runs the cell: plain Python (:mod:`course_grader.notebook`
runs a cell that does not compile as it is this way, and :mod:`course_grader.parts` reads the names
such a cell binds and uses the same way). Standard library only: the runner imports it."""

from __future__ import annotations

import re

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
    for k, line in enumerate(lines):
        indent, statement = line[: len(line) - len(line.lstrip())], line.lstrip()
        if statement.startswith("%time ") and statement[6:].strip():  # its assignment stays, as in Jupyter
            lines[k], changed = indent + statement[6:].strip(), True
        elif statement.startswith(("%", "!")) or HELP_LINE.fullmatch(line):
            lines[k], changed = indent + "pass", True
    return "\n".join(lines) if changed else None
