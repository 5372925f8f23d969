"""The class report's pages: static HTML with Matplotlib plots, readable offline and without colour.

Every plot is a PNG with alt text that says what it shows, and its numbers stand in a table
beside it. Tables with a sortable header sort by a click (a few lines of inline JavaScript,
no network); bars carry hatches and lines markers, so nothing depends on telling colours apart.
"""

from __future__ import annotations

import html
from pathlib import Path

from course_grader.class_record import (
    ClassRecord,
    histogram,
    mistakes,
    part_table,
    progress,
    quartiles,
    term,
    timing,
)

SHOWN_MISTAKES = 5  # failure patterns shown per part (the CSV has all)

STYLE = """
body{font-family:system-ui,sans-serif;max-width:72em;margin:1em auto;padding:0 1em;color:#111;background:#fff}
table{border-collapse:collapse;margin:.5em 0 1.5em}caption{text-align:left;font-weight:bold;padding:.3em 0}
th,td{border:1px solid #666;padding:.25em .5em;vertical-align:top}td.n{text-align:right}
th button{font:inherit;font-weight:bold;background:none;border:0;padding:0;cursor:pointer;color:#00449e;
text-decoration:underline}
a{color:#00449e}.note{background:#fff4ce;border-left:4px solid #8a6d00;padding:.5em 1em}
code,pre{white-space:pre-wrap}img{max-width:100%;height:auto}figure{margin:1em 0}
"""

# Sort a table by the clicked column: numbers by data-sort, text alphabetically; once more reverses.
SORT_SCRIPT = """
document.querySelectorAll("table.sortable th button").forEach((button) => {
  button.addEventListener("click", () => {
    const th = button.closest("th"), table = th.closest("table"), body = table.tBodies[0];
    const column = [...th.parentNode.children].indexOf(th);
    const up = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    const key = (row) => { const c = row.children[column];
      return c.dataset.sort !== undefined ? parseFloat(c.dataset.sort) : c.textContent.trim(); };
    const rows = [...body.rows].sort((a, b) => { const x = key(a), y = key(b);
      const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return up ? order : -order; });
    rows.forEach((row) => body.appendChild(row));
  });
});
"""


def esc(value: object) -> str:
    return html.escape(str(value))


def num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return ""
    return f"{value:g}" if float(value).is_integer() else f"{value:.{digits}f}"


def page(title: str, body: str, script: bool = False) -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><nav aria-label='report'><a href='index.html'>Class report</a> · "
        f"<a href='students.html'>Students</a></nav></header><main><h1>{esc(title)}</h1>"
        "<p class='note'>This report names students: it is for the course's instructors only. "
        "Never publish it or send it to a student.</p>"
        f"{body}</main>{f'<script>{SORT_SCRIPT}</script>' if script else ''}</body></html>"
    )


def table(caption: str, header: list[str], rows: list[list], sortable: bool = False, numeric=()) -> str:
    """An HTML table; cells given as (text, sort key) sort by the key, the columns listed in
    ``numeric`` are right-aligned."""

    def th(name: str) -> str:
        inner = f"<button type='button'>{esc(name)}</button>" if sortable else esc(name)
        return f"<th scope='col'>{inner}</th>"

    def td(k: int, cell) -> str:
        text, key = cell if isinstance(cell, tuple) else (cell, None)
        sort = f" data-sort='{key}'" if key is not None else ""
        align = " class='n'" if k in numeric else ""
        return f"<td{align}{sort}>{esc(text)}</td>"

    body = "".join("<tr>" + "".join(td(k, c) for k, c in enumerate(row)) + "</tr>" for row in rows)
    kind = " class='sortable'" if sortable else ""
    return (
        f"<table{kind}><caption>{esc(caption)}</caption><thead><tr>{''.join(map(th, header))}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def figure(src: str, alt: str, caption: str) -> str:
    return f"<figure><img src='{esc(src)}' alt='{esc(alt)}'><figcaption>{esc(caption)}</figcaption></figure>"


# -- plots ---------------------------------------------------------------------------------------


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None})


def plot_histogram(path: Path, edges: list[float], counts: list[int], marks: tuple[float, float, float], top: float):
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.subplots()
    widths = [b - a for a, b in zip(edges, edges[1:])]
    ax.bar(edges[:-1], counts, width=widths, align="edge", color="#bbbbbb", edgecolor="black", hatch="//")
    for value, label, style in zip(marks, ("first quartile", "median", "third quartile"), (":", "-", "--")):
        ax.axvline(value, color="black", linestyle=style, linewidth=2, label=f"{label} {num(value)}")
    ax.set_xlabel(f"score (points out of {num(top)})")
    ax.set_ylabel("hand-ins")
    ax.set_xlim(min(edges[0], 0), max(edges[-1], top))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper left", frameon=True)
    _save(fig, path)


def plot_parts(path: Path, parts: list[dict]) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 0.45 * len(parts) + 1.2), layout="constrained")
    ax = fig.subplots()
    names = [p["part"] for p in parts][::-1]
    rates = [p["pass_rate"] for p in parts][::-1]
    bars = ax.barh(names, rates, color="#dddddd", edgecolor="black", hatch="..")
    ax.bar_label(bars, labels=[f"{r:.0f}%" for r in rates], padding=3)
    ax.set_xlim(0, 110)
    ax.set_xlabel("hand-ins that passed the part (%)")
    _save(fig, path)


def plot_progress(path: Path, rows: list[dict]) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.subplots()
    x = list(range(len(rows)))
    medians = [r["median"] for r in rows]
    spread = [[r["median"] - r["q1"] for r in rows], [r["q3"] - r["median"] for r in rows]]
    ax.errorbar(x, medians, yerr=spread, color="black", marker="o", capsize=5, label="median score, quartiles as bars")
    ax.plot(x, [r["handed_in_rate"] for r in rows], color="black", marker="s", linestyle="--", label="class handed in")
    ax.set_xticks(x, [r["assignment"] for r in rows], rotation=20, ha="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel("percent")
    ax.legend(loc="lower left")
    _save(fig, path)


# -- pages ---------------------------------------------------------------------------------------


def assignment_page(record: ClassRecord, a, out: Path) -> str:
    sections = []
    scores = [h.score for h in a.hand_ins]
    top = a.max_score
    if scores:
        q1, median, q3 = quartiles(scores)
        edges, counts = histogram(a)
        plot_histogram(out / "img" / f"{a.name}-scores.png", edges, counts, (q1, median, q3), top)
        busiest = max(range(len(counts)), key=lambda k: counts[k])
        alt = (
            f"Histogram of the {len(scores)} graded scores of {a.name} out of {num(top)} points: median {num(median)}, "
            f"quartiles {num(q1)} and {num(q3)}; the most frequent range is {bin_label(edges, busiest)} "
            f"with {counts[busiest]} hand-ins. The table below lists every bar."
        )
        sections.append(
            "<h2>Scores</h2>"
            + table(
                "Summary of the scores (points)",
                ["graded hand-ins", "max points", "mean", "first quartile", "median", "third quartile"],
                [[len(scores), num(top), num(sum(scores) / len(scores)), num(q1), num(median), num(q3)]],
                numeric=range(6),
            )
            + figure(f"img/{a.name}-scores.png", alt, f"Scores of {a.name}: a histogram with the quartiles.")
            + table(
                "Histogram of the scores",
                ["score range (points)", "hand-ins"],
                [[bin_label(edges, k), c] for k, c in enumerate(counts)],
                numeric=(1,),
            )
        )
    else:
        sections.append("<h2>Scores</h2><p>No hand-in of this assignment is graded yet.</p>")
    parts = part_table(a)
    if scores:
        plot_parts(out / "img" / f"{a.name}-parts.png", parts)
        alt = "Pass rate of each part, as horizontal bars: " + "; ".join(
            f"{p['part']} {p['pass_rate']:.0f}%" for p in parts
        )
        sections.append(
            "<h2>Parts</h2>" + figure(f"img/{a.name}-parts.png", alt, "The share of hand-ins that passed each part.")
        )
    sections.append(
        table(
            "Each part: pass rate and mean points",
            ["part", "max points", "passed", "graded hand-ins", "pass rate (%)", "mean points"],
            [
                [
                    p["part"],
                    num(p["max_points"]),
                    p["passed"],
                    p["hand_ins"],
                    num(p["pass_rate"]),
                    num(p["mean_points"], 2),
                ]
                for p in parts
            ],
            numeric=range(1, 6),
        )
    )
    sections.append(
        "<h2>Most common mistakes</h2><p>Failure messages of each part, grouped so that the same "
        "mistake made with other numbers counts once (numbers read as #); one example each, without "
        f"the student's name. Up to {SHOWN_MISTAKES} per part here; all in "
        f"<a href='csv/{esc(a.name)}-mistakes.csv'>{esc(a.name)}-mistakes.csv</a>.</p>"
    )
    for part, groups in mistakes(a, record.students).items():
        if groups:
            sections.append(
                table(
                    f"{part}: failure messages",
                    ["students", "message (numbers as #)", "example"],
                    [[g["students"], g["pattern"], g["example"]] for g in groups[:SHOWN_MISTAKES]],
                    numeric=(0,),
                )
            )
    times = timing(a)
    if times:
        slow = sorted((h for h in a.hand_ins if h.seconds is not None), key=lambda h: -(h.seconds or 0))[:5]
        sections.append(
            "<h2>Time per hand-in</h2>"
            + table(
                "Grading time (seconds)",
                ["timed hand-ins", "median", "90th percentile", "longest", "total"],
                [[times["timed"], num(times["median"]), num(times["p90"]), num(times["max"]), num(times["total"])]],
                numeric=range(5),
            )
            + table(
                "The slowest hand-ins",
                ["student", "seconds"],
                [[h.student, num(h.seconds)] for h in slow],
                numeric=(1,),
            )
        )
    else:
        sections.append(
            "<h2>Time per hand-in</h2><p>Not recorded: grading records it in "
            "autograded/&lt;student&gt;/&lt;assignment&gt;/grading.json.</p>"
        )
    sections.append("<h2>Hand-ins for a human</h2>")
    sections.append(
        table(
            "Hand-ins grading could not score alone, and why", ["student", "status", "why"], [list(r) for r in a.human]
        )
        if a.human
        else "<p>None: every hand-in was graded.</p>"
    )
    links = ", ".join(
        f"<a href='csv/{esc(a.name)}-{kind}.csv'>{kind}</a>"
        for kind in ("hand-ins", "parts", "mistakes", "for-a-human")
    )
    due = f"Due {esc(a.duedate)}. " if a.duedate else ""
    head = f"<p>{due}{len(a.hand_ins)} graded hand-ins, {num(top)} points. The numbers as CSV: {links}.</p>"
    return page(f"{a.name}: the class's results", head + "".join(sections))


def bin_label(edges: list[float], k: int) -> str:
    low, high = edges[k], edges[k + 1]
    if high - low == 1.0 and (low + 0.5).is_integer():
        return num(low + 0.5)
    return f"{num(low)} to {num(high)}"


def index_page(record: ClassRecord, out: Path) -> str:
    rows = progress(record)
    plot_progress(out / "img" / "progress.png", rows)
    alt = (
        "Class progress by assignment, median score with quartile bars and the share of the class that handed in: "
        + (
            "; ".join(
                f"{r['assignment']} median {num(r['median'])}%, handed in {num(r['handed_in_rate'])}%" for r in rows
            )
        )
    )
    listing = "".join(f"<li><a href='{esc(r['assignment'])}.html'>{esc(r['assignment'])}</a></li>" for r in rows)
    checked = sorted(out.glob("similarity-*.html"))  # what make similarity wrote
    copies = "".join(f"<li><a href='{esc(p.name)}'>{esc(p.stem.removeprefix('similarity-'))}</a></li>" for p in checked)
    body = (
        f"<p>{len(record.students)} students, {len(rows)} assignments. "
        "<a href='students.html'>Each student's scores and who is falling behind</a>. "
        "The numbers as CSV: <a href='csv/progress.csv'>progress.csv</a>, "
        "<a href='csv/students.csv'>students.csv</a>.</p>"
        f"<h2>Assignments</h2><ul>{listing}</ul>"
        + (f"<h2>Similar hand-ins (make similarity)</h2><ul>{copies}</ul>" if copies else "")
        + "<h2>Class progress</h2>"
        + figure("img/progress.png", alt, "The class assignment by assignment (scores in percent of the points).")
        + table(
            "Class progress by assignment (scores in %)",
            [
                "assignment",
                "graded",
                "for a human",
                "students",
                "handed in (%)",
                "mean",
                "first quartile",
                "median",
                "third quartile",
            ],
            [
                [
                    r["assignment"],
                    r["graded"],
                    r["for_a_human"],
                    r["students"],
                    num(r["handed_in_rate"]),
                    num(r["mean"]),
                    num(r["q1"]),
                    num(r["median"]),
                    num(r["q3"]),
                ]
                for r in rows
            ],
            numeric=range(1, 9),
        )
    )
    return page("Class report", body)


def students_page(record: ClassRecord, drop: float) -> str:
    names = [a.name for a in record.assignments]
    rows = term(record, drop)

    def score(value) -> tuple[str, float]:
        return (f"{value:.1f}", value) if isinstance(value, float) else (value, -1.0)

    behind = [r for r in rows if r["behind"]]
    listing = "".join(f"<li>{esc(r['student'])}: {esc(r['behind'])}</li>" for r in behind) or "<li>Nobody.</li>"
    body = (
        f"<p>Scores in percent of each assignment's points. Falling behind: a missing hand-in, or the "
        f"latest score {num(drop)} points or more under the student's earlier mean. "
        "Click a column's name to sort by it. As CSV: <a href='csv/students.csv'>students.csv</a>.</p>"
        f"<h2>Falling behind ({len(behind)})</h2><ul>{listing}</ul><h2>Every student</h2>"
        + table(
            "Each student's score (%) by assignment",
            ["student", "last name", "first name", *names, "mean", "missing", "falling behind"],
            [
                [r["student"], r["last_name"], r["first_name"], *[score(r["scores"][n]) for n in names]]
                + [score(r["mean"]) if r["mean"] is not None else ("", -1.0), r["missing"], r["behind"]]
                for r in rows
            ],
            sortable=True,
            numeric=range(3, 5 + len(names)),
        )
    )
    return page("Students", body, script=True)


def write_pages(record: ClassRecord, out: Path, drop: float) -> list[Path]:
    pages = {"index.html": index_page(record, out), "students.html": students_page(record, drop)}
    for a in record.assignments:
        pages[f"{a.name}.html"] = assignment_page(record, a, out)
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    return [out / name for name in pages]
