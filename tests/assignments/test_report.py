"""The class report (``make report``) of a crafted class of 32 students and two assignments,
whose every result is known (benchmarks/crafted_class.py): each number on every page and in
every CSV is checked against the class's rules, the report of a PostgreSQL gradebook is the
same as the sqlite one's, and the pages work in Chromium, offline, with no serious or
critical axe-core finding.
"""

from __future__ import annotations

import csv
import html
import re
import statistics
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import publish  # tools/publish.py
import pytest
from paths import ROOT

from benchmarks.crafted_class import ASSIGNMENTS, build, expected, parts, person, student_id
from benchmarks.crafted_copies import ASSIGNMENT as COPIED
from benchmarks.crafted_copies import write_class
from course_grader import class_record, report, similarity

sys.path.insert(0, str(ROOT / "tests" / "site"))  # the Chromium fixture of the browser tests
from test_browser import browser, missing  # noqa: E402, F401

N = 32
AXE = ROOT / "tests/site/axe/node_modules/axe-core/axe.min.js"


class Tables(HTMLParser):
    """Every table of a page by caption, as (header, rows of cell texts); and every image."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: dict[str, tuple[list[str], list[list[str]]]] = {}
        self.images: list[dict] = []
        self._caption = self._cell = None
        self._rows: list[list[str]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._rows = []
        elif tag == "caption":
            self._caption = ""
        elif tag == "tr":
            self._rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "img":
            self.images.append(dict(attrs))

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        elif self._caption is not None and not self._rows:
            self._caption += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._rows[-1].append(self._cell.strip())
            self._cell = None
        elif tag == "table":
            self.tables[self._caption] = (self._rows[0], self._rows[1:])
            self._caption = None


def numbers(row: list[str]) -> list[float]:
    return [float(cell) for cell in row]


def close(got: list[str], want: list[float], digits: int = 1) -> bool:
    return all(abs(g - w) <= 0.51 * 10**-digits for g, w in zip(numbers(got), want, strict=True))


# -- the class's results, from its rules (not from the report) ----------------------------------------


def graded_scores(assignment: str) -> dict[str, float]:
    top = dict(parts(assignment))
    return {
        sid: sum(top.values()) - sum(top[p] for p in result.failed)
        for sid, result in expected(N)[assignment].items()
        if result.kind == "graded"
    }


def percents() -> dict[str, dict[str, float]]:
    return {a: {s: 100 * v / sum(dict(parts(a)).values()) for s, v in graded_scores(a).items()} for a in ASSIGNMENTS}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    course = tmp_path_factory.mktemp("class")
    url = f"sqlite:///{course / 'gradebook.db'}"
    build(course, url, N)
    record = class_record.read_class(url, course)
    pages = report.write_report(record, course / "report")
    return course, record, {p.name: p.read_text() for p in pages}


def test_known_pass_rates_of_the_crafted_class():
    """The class is what the tests below assume: ps01's parts pass at 50% to 83% of 30 hand-ins."""
    rates = [
        100
        * sum(s.kind == "graded" and p not in s.failed for s in expected(N)["ps01_finite_differences"].values())
        / 30
        for p, _ in parts("ps01_finite_differences")
    ]
    assert [round(r, 1) for r in rates] == [50.0, 66.7, 73.3, 80.0, 83.3, 83.3]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_page_numbers(crafted, assignment):
    course, _, pages = crafted
    page = Tables(pages[f"{assignment}.html"])
    plan = expected(N)[assignment]
    scores = list(graded_scores(assignment).values())
    top = sum(dict(parts(assignment)).values())
    q1, median, q3 = statistics.quantiles(scores, n=4, method="inclusive")
    assert median == statistics.median(scores)

    header, rows = page.tables["Summary of the scores (points)"]
    assert close(rows[0], [len(scores), top, statistics.fmean(scores), q1, median, q3])

    _, rows = page.tables["Histogram of the scores"]
    assert [(float(r[0]), int(r[1])) for r in rows] == [(v, scores.count(v)) for v in np.arange(0, top + 1)]

    _, rows = page.tables["Each part: pass rate and mean points"]
    for row, (name, points) in zip(rows, parts(assignment), strict=True):
        graded = [s for s in plan.values() if s.kind == "graded"]
        passed = sum(name not in s.failed for s in graded)
        assert row[0] == name
        assert close(row[1:5], [points, passed, len(graded), 100 * passed / len(graded)])
        assert close(row[5:], [points * passed / len(graded)], digits=2)
    with (course / "report" / "csv" / f"{assignment}-parts.csv").open() as table:
        assert [r["passed"] for r in csv.DictReader(table)] == [row[2] for row in rows]

    for name, _ in parts(assignment):
        failing = [(sid, s.failed[name]) for sid, s in plan.items() if name in s.failed]
        if not failing:
            assert f"{name}: failure messages" not in page.tables
            continue
        _, rows = page.tables[f"{name}: failure messages"]
        kinds = {}  # the message's kind (crafted_class.message: by student number mod 3) -> students
        for sid, _ in failing:
            kinds.setdefault(int(sid[1:]) % 3, []).append(sid)
        assert sorted(int(r[0]) for r in rows) == sorted(len(v) for v in kinds.values()), "grouped once per mistake"
        assert sum(int(r[0]) for r in rows) == len(failing)
        for row in rows:
            assert "#" in row[1] and not re.search(r"\d", row[1]), "numbers read as #"
            assert not re.search(r"s\d{3}|Tester\d", row[2]), f"an example names a student: {row[2]}"
        if 2 in kinds:
            assert any("/home/[student]/scratch_" in r[2] and "(ask [student])" in r[2] for r in rows)

    seconds = [s.seconds for s in plan.values() if s.kind == "graded"]
    _, rows = page.tables["Grading time (seconds)"]
    assert close(rows[0], [len(seconds), np.median(seconds), np.percentile(seconds, 90), max(seconds), sum(seconds)])
    _, rows = page.tables["The slowest hand-ins"]
    assert [float(r[1]) for r in rows] == sorted(seconds, reverse=True)[:5]

    _, rows = page.tables["Hand-ins grading could not score alone, and why"]
    assert rows == [[sid, s.status, s.why] for sid, s in plan.items() if s.kind == "human"]

    alts = [img["alt"] for img in page.images]
    assert f"median {median:g}" in alts[0] and f"quartiles {q1:g} and {q3:g}" in alts[0]
    assert all(len(alt) > 60 for alt in alts)
    for img in page.images:
        assert (course / "report" / img["src"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_class_progress_and_every_student(crafted):
    course, _, pages = crafted
    _, rows = Tables(pages["index.html"]).tables["Class progress by assignment (scores in %)"]
    share = percents()
    for row, assignment in zip(rows, ASSIGNMENTS, strict=True):
        plan = expected(N)[assignment]
        got = list(share[assignment].values())
        humans = sum(s.kind == "human" for s in plan.values())
        assert row[0] == assignment
        want = [len(got), humans, N, 100 * (len(got) + humans) / N, statistics.fmean(got)]
        assert close(
            row[1:],
            want
            + statistics.quantiles(got, n=4, method="inclusive")[:1]
            + [statistics.median(got)]
            + statistics.quantiles(got, n=4, method="inclusive")[2:],
        )

    page = Tables(pages["students.html"])
    _, rows = page.tables["Each student's score (%) by assignment"]
    assert len(rows) == N
    behind = []
    for row, i in zip(rows, range(N), strict=True):
        sid = student_id(i)
        first, last, _ = person(i)
        assert row[:3] == [sid, last, first]
        cells, mine = [], []
        for a in ASSIGNMENTS:
            outcome = expected(N)[a][sid]
            if outcome.kind == "graded":
                mine.append(share[a][sid])
                cells.append(f"{share[a][sid]:.1f}")
            else:
                cells.append("missing" if outcome.kind == "missing" else "for a human")
        assert row[3:5] == cells
        missing_ = cells.count("missing")
        dropping = len(mine) == 2 and mine[1] <= mine[0] - class_record.DROP_POINTS
        reasons = ([f"{missing_} missing"] if missing_ else []) + (["scores dropping"] if dropping else [])
        assert row[5:] == [f"{statistics.fmean(mine):.1f}" if mine else "", str(missing_), "; ".join(reasons)]
        behind += [f"{sid}: {'; '.join(reasons)}"] if reasons else []
    listed = re.findall(r"<li>(s\d{3}: [^<]*)</li>", pages["students.html"])
    assert listed == behind and len(behind) >= 8
    with (course / "report" / "csv" / "students.csv").open() as table:
        assert [r["behind"] for r in csv.DictReader(table)] == [row[-1] for row in rows]


def test_an_assignment_not_graded_yet_is_nobodys_missing_hand_in(crafted):
    _, record, _ = crafted
    later = class_record.Assignment("ps13_capstone", "", [("test_value", 2.0)], hand_ins=[])
    before = class_record.term(record)
    after = class_record.term(class_record.ClassRecord(record.students, [*record.assignments, later]))
    assert all(row["scores"]["ps13_capstone"] == class_record.NOT_YET for row in after)
    assert [row["behind"] for row in after] == [row["behind"] for row in before]


@pytest.mark.parametrize(
    "one, other",
    [
        ("got -1.5e-3, expected 2", "got 0.25, expected -7"),
        ("wrong shape: (3, 4) instead of (12,)", "wrong shape: (2, 5) instead of (10,)"),
        ("object at 0x7f3a9c", "object at 0x55e0d1"),
        ("f(x)-2 is off", "f(x)-31 is off"),
    ],
)
def test_the_same_mistake_with_other_numbers_reads_the_same(one, other):
    assert class_record.mistake_pattern(one) == class_record.mistake_pattern(other)


def test_different_mistakes_stay_apart_and_names_go():
    assert class_record.mistake_pattern("x - 3 failed") != class_record.mistake_pattern("x + 3 failed")
    anonymise = class_record.Anonymiser([class_record.Person("jdoe7", "Jane", "Doe", "jane@uni.example")])
    assert anonymise("JDOE7 wrote /home/jdoe7/a.py, ask Jane Doe (jane@uni.example)") == (
        "[student] wrote /home/[student]/a.py, ask [student] [student] ([student])"
    )
    assert anonymise("Janet Doering") == "Janet Doering", "only whole names"


def test_postgresql_gradebook_gives_the_same_report(crafted, postgres, tmp_path, monkeypatch):
    sqlite_course, record, pages = crafted
    url = postgres("class_report")
    course = tmp_path / "class"
    build(course, url, N)
    monkeypatch.setenv("DB_URL", url.replace("postgresql+psycopg://", "postgresql://"))  # as grading reads it
    assert report.main(["--course", str(course)]) == 0
    assert not (course / "gradebook.db").exists()
    assert class_record.read_class(url, course) == record
    for name, text in pages.items():
        assert (course / "report" / name).read_text() == text, name
    for table in sorted((sqlite_course / "report" / "csv").iterdir()):
        assert (course / "report" / "csv" / table.name).read_text() == table.read_text(), table.name


def test_without_a_gradebook_it_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DB_URL", raising=False)
    assert report.main(["--course", str(tmp_path)]) == 2
    assert "make autograde" in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


def test_the_report_is_never_published(tmp_path):
    """Outside git, publish copies only its list of paths: a report/ beside them stays behind,
    and so does a benchmark that uses course_grader."""
    files = {
        "book/01.md": "x",
        "report/index.html": "x",
        "report/csv/students.csv": "x",
        "benchmarks/crafted_class.py": "from course_grader import report\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert publish.public_files(tmp_path) == ["book/01.md"]
    assert "report/" in (ROOT / ".gitignore").read_text().splitlines()


RUN_AXE = """
const done = arguments[arguments.length - 1];
axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
                   resultTypes: ["violations"]})
  .then((r) => done(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help}))),
        (error) => done({error: String(error)}));
"""


def test_pages_in_chromium_offline_accessible_and_sortable(crafted, browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    if not AXE.is_file():
        missing("axe-core is not installed: make setup-browser (npm ci in tests/site/axe)")
    course, _, pages = crafted
    copies = tmp_path / "copies"  # and the page of make similarity, on its own crafted class
    write_class(copies)
    assert similarity.main([COPIED, "--course", str(copies)]) == 0
    shown = [course / "report" / name for name in pages] + [copies / "report" / f"similarity-{COPIED}.html"]
    for path in shown:
        name = path.name
        browser.get_log("browser")
        browser.get(path.as_uri())
        errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], f"{name}: {errors}"
        broken = browser.execute_script(
            "return [...document.images].filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.src)"
        )
        assert broken == [], f"{name}: images that did not load: {broken}"
        browser.execute_script(AXE.read_text())
        found = browser.execute_async_script(RUN_AXE)
        assert isinstance(found, list), found
        grave = [v for v in found if v["impact"] in ("serious", "critical")]
        assert grave == [], f"{name}: {grave}"

    browser.get((course / "report" / "students.html").as_uri())
    header = browser.find_element(By.XPATH, "//th[button[text()='ps04_topological_sort']]")
    column = "return [...document.querySelector('table.sortable').tBodies[0].rows].map((r) => r.cells[%d].textContent)"
    header.find_element(By.TAG_NAME, "button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    shown = browser.execute_script(column % 4)
    share = percents()["ps04_topological_sort"]
    want = sorted(share.values())
    assert [float(v) for v in shown if v[0].isdigit()] == [round(v, 1) for v in want]
    assert shown[: N - len(want)] == sorted(shown[: N - len(want)]) and not shown[0][0].isdigit()
    header.find_element(By.TAG_NAME, "button").click()
    assert header.get_attribute("aria-sort") == "descending"
    assert [float(v) for v in browser.execute_script(column % 4)[: len(want)]] == [round(v, 1) for v in want[::-1]]


def check_report_of_graded_class(course: Path, rows: list[dict], assignment: str) -> None:
    """``make report`` on a class graded by course_grader itself (test_grading_postgres.py calls
    this after grading: one right hand-in, one with its first part undone, one unreadable)."""
    assert report.main(["--course", str(course)]) == 0
    page = Tables((course / "report" / f"{assignment}.html").read_text())
    scores = sorted(float(r["score"]) for r in rows if r["status"] == "graded")
    _, summary = page.tables["Summary of the scores (points)"]
    assert numbers(summary[0])[0] == 2 and numbers(summary[0])[4] == statistics.median(scores)
    order = class_record.part_order(course, assignment)
    _, groups = page.tables[f"{min(order, key=order.__getitem__)}: failure messages"]
    assert groups[0][0] == "1" and groups[0][2] != class_record.NOT_RECORDED
    feedback = (course / "feedback" / "bob" / assignment / f"{assignment}.html").read_text()
    assert html.escape(groups[0][2]) in feedback, "the message grading gave bob's part"
    _, human = page.tables["Hand-ins grading could not score alone, and why"]
    assert [r[:2] for r in human] == [["cy", "unreadable"]] and "not a readable notebook" in human[0][2]
    timed = sorted((course / "autograded").glob(f"*/{assignment}/{class_record.TIMING_FILE}"))
    seconds = [class_record.grading_seconds(path) for path in timed]
    assert len(seconds) == 2 and all(s is not None and s > 0 for s in seconds), "grading records each run's time"
    _, timing = page.tables["Grading time (seconds)"]
    assert numbers(timing[0])[0] == 2 and close(timing[0][-1:], [sum(s or 0 for s in seconds)])


def test_make_targets_run_the_report_and_the_similarity_check():
    from commands import make

    assert "-m course_grader.report" in make("-n", "report", cwd=ROOT).stdout
    dry = make("-n", "similarity", "ASSIGNMENT=ps01_finite_differences", "THRESHOLD=0.5", cwd=ROOT).stdout
    assert '-m course_grader.similarity "ps01_finite_differences" --threshold 0.5' in dry
