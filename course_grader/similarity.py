"""Copies found: the students' answer cells of one assignment compared pair by pair.

    python -m course_grader.similarity ps01_finite_differences    # or: make similarity ASSIGNMENT=...

Each hand-in (``submitted/<student>/<assignment>/<assignment>.ipynb``, where grading collected
it) is reduced to the code its student wrote: the answer cells only, without the lines the
released template already had. copydetect (winnowing over Pygments tokens, with names,
strings and comments normalised away) fingerprints that code; fingerprints of the template
and of the instructor's solution, and those found in more than a few hand-ins (the short,
obvious solution everyone writes), count for nobody. A pair's score is the larger of two
shares: how much of what one student wrote is found in the other's hand-in, counting only code
that is somebody's (the obvious code still counts in what they wrote, so it lowers the share).
The pairs above the threshold are listed with their shared fragments side by side in
``report/similarity-<assignment>.html``, all pairs' numbers in a CSV beside it. Nothing here
reads or writes a grade: a high score is a reason for a human to look, never a verdict.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

# copydetect's defaults are k = 25 and a window of 6, for whole programs; answer cells are short.
K = 20  # characters of normalised code (names read as one letter) per fingerprint
WINDOW = 4  # winnowing window: every shared run of K + WINDOW - 1 characters is found
THRESHOLD = 0.7  # a pair is listed when this share of one student's code is in the other's
COMMON = 0.1  # fingerprints in more than this share of the hand-ins (and more than 3) are nobody's


@dataclass
class Pair:
    first: str
    second: str
    score: float  # the larger of the two shares
    shares: tuple[float, float]  # share of first's code found in second's, and the reverse
    tokens: int  # normalised characters the first shares with the second
    sides: tuple[str, str] = ("", "")  # each student's code, shared fragments in <mark> (HTML)


def cells_by_id(path: Path) -> dict[str, str]:
    """The sources of a notebook's answer cells by grade id."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = {}
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            found[meta["grade_id"]] = "".join(source) if isinstance(source, list) else source
    return found


def own_code(hand_in: dict[str, str], template: dict[str, str]) -> str:
    """The code a student wrote: their answer cells, without the lines the released cell had."""
    pieces = []
    for grade_id, released in template.items():
        given = {line.strip() for line in released.splitlines() if line.strip()}
        lines = [line for line in hand_in.get(grade_id, "").splitlines() if line.strip() not in given]
        pieces.append("\n".join(lines))
    return "\n".join(p for p in pieces if p.strip()) + "\n"


def hand_ins(course: Path, assignment: str) -> dict[str, Path]:
    """student -> the hand-in grading collected (``submitted/``), else the inbox's (``submissions/``)."""
    collected = sorted((course / "submitted").glob(f"*/{assignment}/{assignment}.ipynb"))
    if collected:
        return {p.parent.parent.name: p for p in collected}
    return {p.parent.name: p for p in sorted((course / "submissions").glob(f"*/{assignment}.ipynb"))}


@dataclass
class Fingerprint:
    """What copydetect's ``compare_files`` reads of a document (as its ``CodeFingerprint``), made
    with a hash that is the same in every run: Python's ``hash`` of a string, which copydetect
    uses, changes from process to process, and with it which fingerprints winnowing keeps."""

    raw_code: str
    filtered_code: str
    offsets: np.ndarray
    hashes: set[int]
    hash_idx: dict[int, list[int]]
    k: int = K
    token_coverage: float = 0.0


def kgram_hashes(filtered: str) -> np.ndarray:
    """A stable 64-bit hash of every K-gram of normalised code, in order."""
    grams = (filtered[i : i + K].encode() for i in range(len(filtered) - K + 1))
    return np.array(
        [int.from_bytes(hashlib.blake2b(g, digest_size=8).digest(), "little", signed=True) for g in grams],
        dtype=np.int64,
    )


def normalised(code: str) -> tuple[str, np.ndarray]:
    """copydetect's normalisation: names, strings and comments read as one letter or nothing."""
    from copydetect.utils import filter_code

    return filter_code(code, "answer.py", "python")


def fingerprint(code: str) -> Fingerprint:
    from copydetect.utils import get_token_coverage, winnow

    filtered, offsets = normalised(code)
    hashes = kgram_hashes(filtered)
    print_ = Fingerprint(code, filtered, offsets, set(), {})
    if len(hashes):
        kept, where = winnow(hashes, WINDOW, remove_duplicates=False)
        for h, i in zip(kept.tolist(), where.tolist()):
            print_.hash_idx.setdefault(h, []).append(i)
        print_.hashes = set(print_.hash_idx)
    print_.token_coverage = float(get_token_coverage(print_.hash_idx, K, len(filtered)))
    return print_


def leave_out(fp: Fingerprint, hashes: set[int]) -> None:
    """Forget the fingerprints in ``hashes`` (wherever they occur). What they covered still
    counts as the student's code: a pair's shares stay fractions of all each student wrote, so
    code that is nobody's lowers them instead of leaving a few lines to stand for the whole."""
    fp.hashes = fp.hashes - hashes
    fp.hash_idx = {h: where for h, where in fp.hash_idx.items() if h not in hashes}


def compare(
    codes: dict[str, str], shared_code: list[str], common: float = COMMON, threshold: float = THRESHOLD
) -> list[Pair]:
    """Every pair of students that shares any fingerprint, highest score first; the pairs at
    or above ``threshold`` carry their code with the shared fragments marked."""
    from copydetect import compare_files
    from copydetect.utils import highlight_overlap

    given = {h for code in shared_code for h in kgram_hashes(normalised(code)[0]).tolist()}
    prints = {name: fingerprint(code) for name, code in codes.items()}
    seen = Counter(h for fp in prints.values() for h in fp.hashes)
    limit = max(3, math.floor(common * len(codes)))
    nobodys = given | {h for h, n in seen.items() if n > limit}
    for fp in prints.values():
        leave_out(fp, nobodys)
    holders: dict[int, list[str]] = defaultdict(list)
    for name, fp in prints.items():
        for h in fp.hashes:
            holders[h].append(name)
    candidates = {pair for names in holders.values() for pair in combinations(sorted(names), 2)}
    pairs = []
    for a, b in sorted(candidates):
        tokens, shares, slices = compare_files(prints[a], prints[b])
        if tokens == 0:
            continue
        pair = Pair(a, b, float(max(shares)), (float(shares[0]), float(shares[1])), int(tokens))
        if pair.score >= threshold:
            pair.sides = tuple(  # type: ignore[assignment]
                highlight_overlap(prints[n].raw_code, s, "<mark>", "</mark>", escape_html=True)[0]
                for n, s in ((a, slices[0]), (b, slices[1]))
            )
        pairs.append(pair)
    pairs.sort(key=lambda p: (-p.score, p.first, p.second))
    return pairs


def find_copies(
    course: Path, assignment: str, threshold: float = THRESHOLD, common: float = COMMON
) -> tuple[list[Pair], int]:
    """The pairs of an assignment's hand-ins, scored, and how many hand-ins were compared."""
    release = course / "exercises" / assignment / f"{assignment}.ipynb"
    if not release.is_file():
        raise FileNotFoundError(f"no released notebook {release.relative_to(course)}: is {assignment!r} an assignment?")
    template = cells_by_id(release)
    shared = list(template.values())
    solution = course / "solutions" / assignment / f"{assignment}.ipynb"
    if solution.is_file():
        shared += list(cells_by_id(solution).values())
    codes = {student: own_code(cells_by_id(path), template) for student, path in hand_ins(course, assignment).items()}
    return compare(codes, shared, common, threshold), len(codes)


def write_page(pairs: list[Pair], compared: int, assignment: str, out: Path, threshold: float) -> Path:
    """The listed pairs side by side, and every pair's numbers as CSV, into ``out``."""
    import html

    from course_grader.report import write_csv
    from course_grader.report_pages import page, table

    out.mkdir(parents=True, exist_ok=True)
    write_csv(
        out / "csv" / f"similarity-{assignment}.csv",
        ["student_a", "student_b", "score", "share_of_a_in_b", "share_of_b_in_a", "shared_characters"],
        [[p.first, p.second, round(p.score, 4), round(p.shares[0], 4), round(p.shares[1], 4), p.tokens] for p in pairs],
    )
    listed = [p for p in pairs if p.score >= threshold]
    sections = [
        f"<p>{compared} hand-ins compared, answer cells only (the template's lines, the solution and code "
        f"found in more than a few hand-ins left out). Listed below ({len(listed)}): the pairs at or above a "
        f"score of {threshold:g}, the larger share of one student's code found in the other's. A high score is a "
        "reason to look, not a verdict: no grade was changed. Every pair's numbers: "
        f"<a href='csv/similarity-{html.escape(assignment)}.csv'>similarity-{html.escape(assignment)}.csv</a>.</p>",
        table(
            "The most similar pairs",
            ["rank", "student A", "student B", "score", "share of A in B", "share of B in A"],
            [
                [k, p.first, p.second, f"{p.score:.2f}", f"{p.shares[0]:.2f}", f"{p.shares[1]:.2f}"]
                for k, p in enumerate(pairs[: max(10, len(listed))], 1)
            ],
            numeric=(0, 3, 4, 5),
        ),
    ]
    for k, p in enumerate(listed, 1):
        sections.append(
            f"<h2>{k}. {html.escape(p.first)} and {html.escape(p.second)}: score {p.score:.2f}</h2>"
            "<div class='sides'>"
            + "".join(
                f"<section aria-label='code of {html.escape(name)}'><h3>{html.escape(name)}</h3>"
                f"<pre tabindex='0'>{side}</pre></section>"
                for name, side in zip((p.first, p.second), p.sides)
            )
            + "</div>"
        )
    style = (
        "<style>.sides{display:grid;grid-template-columns:1fr 1fr;gap:1em}mark{background:#ffe08a;color:#000}</style>"
    )
    target = out / f"similarity-{assignment}.html"
    target.write_text(page(f"{assignment}: similar hand-ins", style + "".join(sections)), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_grader.similarity", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment")
    parser.add_argument("--course", type=Path, default=Path("."), help="the course root (default: here)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the page (default: report/)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="list pairs from this score (0 to 1)")
    parser.add_argument(
        "--common", type=float, default=COMMON, help="code in more than this share of hand-ins counts for nobody"
    )
    args = parser.parse_args(argv)
    course = args.course.resolve()
    try:
        pairs, compared = find_copies(course, args.assignment, args.threshold, args.common)
    except FileNotFoundError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    if compared < 2:
        print(
            f"ERROR: {compared} hand-in(s) of {args.assignment} found in submitted/ or submissions/: nothing to compare"
        )
        return 2
    page = write_page(pairs, compared, args.assignment, args.out or course / "report", args.threshold)
    listed = [p for p in pairs if p.score >= args.threshold]
    print(f"similarity: {compared} hand-ins, {len(listed)} pair(s) at or above {args.threshold:g}")
    for p in listed:
        print(f"  {p.first} and {p.second}: {p.score:.2f}")
    print(f"            open {page} (it names students: for instructors only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
