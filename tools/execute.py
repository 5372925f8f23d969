"""Execute notebooks in place, the way they are committed: ``make execute [NOTEBOOKS=...]``.

Chapters and solutions are committed executed, and nbval compares their stored outputs with
a fresh run. Each notebook runs in its own folder with the course's kernel; afterwards the
consecutive pieces of one stream are joined into one output, so a line that Jupyter happened
to deliver in two messages reads as one line (as the tests and readers expect).

    python tools/execute.py                      # every chapter and solution notebook
    python tools/execute.py book/05_scalar_engine.ipynb
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def join_streams(nb: nbformat.NotebookNode) -> None:
    """Merge consecutive stream outputs of the same name (stdout, stderr) in every cell."""
    for cell in nb.cells:
        joined: list = []
        for output in cell.get("outputs", []):
            previous = joined[-1] if joined else None
            if (
                previous is not None
                and output.output_type == previous.output_type == "stream"
                and output.name == previous.name
            ):
                previous.text += output.text
            else:
                joined.append(output)
        if "outputs" in cell:
            cell.outputs = joined


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    join_streams(nb)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(ROOT.glob("book/*.ipynb")) + sorted(ROOT.glob("solutions/*/*.ipynb"))
    for path in paths:
        print(f"==> executing {path}", flush=True)
        execute(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
