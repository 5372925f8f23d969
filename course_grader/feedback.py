"""Feedback a student may see: per part passed or failed, points, the teaching message and
the visible test's output; never a hidden test's or a solution's text, nor the grader's paths.

Every text that came out of a sandbox goes through :class:`Redactor` before it is written
anywhere a student can read it.
"""

from __future__ import annotations

import html
from pathlib import Path

REMOVED = "[removed: text of a hidden test or a solution]"
MAX_CHARS = 2000


class Redactor:
    """Removes every line holding a secret line (hidden tests, solutions) or a grader path."""

    def __init__(self, secret_lines: set[str], paths: list[Path]):
        self.secrets = sorted(secret_lines, key=len, reverse=True)
        self.paths = sorted({str(p) for p in paths if str(p) not in ("", "/")}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate becomes "?"
        lines: list[str] = []
        for line in text[: MAX_CHARS * 4].splitlines():
            squeezed = " ".join(line.split())
            if any(secret in line or " ".join(secret.split()) in squeezed for secret in self.secrets):
                if not lines or lines[-1] != REMOVED:
                    lines.append(REMOVED)
                continue
            for path in self.paths:
                line = line.replace(path, "<course>")
            lines.append(line)
        text = "\n".join(lines)
        return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + " [...]"


def part_line(result) -> str:
    """One line of plain text for a part (the summary and the autograded notebook)."""
    state = "passed" if result.passed else "failed"
    text = f"{result.grade_id}: {state}, {result.points:g}/{result.max_points:g} points"
    return text + (f". {result.message}" if result.message else "")


def write_html(path: Path, student: str, assignment: str, results, problem: str | None = None) -> None:
    """The feedback page of one hand-in (``results`` already redacted)."""
    total = sum(r.points for r in results)
    maximum = sum(r.max_points for r in results)
    rows = []
    for r in results:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in r.notes)
        output = f"<pre>{html.escape(r.output)}</pre>" if r.output.strip() else ""
        rows.append(
            f"<tr class='{'pass' if r.passed else 'fail'}'><td>{html.escape(r.grade_id)}</td>"
            f"<td>{'passed' if r.passed else 'failed'}</td><td>{r.points:g} / {r.max_points:g}</td>"
            f"<td>{html.escape(r.message)}{output}<ul>{notes}</ul></td></tr>"
        )
    body = (
        f"<p class='problem'>{html.escape(problem)}</p>"
        if problem
        else f"<p>Score: {total:g} / {maximum:g}</p><table><tr><th>part</th><th>result</th><th>points</th>"
        f"<th>feedback</th></tr>{''.join(rows)}</table>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(assignment)}: {html.escape(student)}</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}td{vertical-align:top;padding:.3em}"
        ".pass td:nth-child(2){color:#060}.fail td:nth-child(2){color:#a00}pre{white-space:pre-wrap}</style>"
        f"</head><body><h1>{html.escape(assignment)}</h1><p>Student: {html.escape(student)}</p>{body}</body></html>",
        encoding="utf-8",
        errors="replace",
    )
