"""Checks on a hand-in before it is graded: who it names, how big it is, whether it is a notebook;
and the repairs of a notebook an editor reshaped (nbgrader metadata dropped, cells moved).

Everything here runs in the grader's own process on files students made, so each check is
cheap, never executes anything, and ends in a sentence an instructor can act on. A hand-in
that fails one is listed for a human and left out; the rest of the class is graded.
"""

from __future__ import annotations

import difflib
import unicodedata
import warnings
from collections import defaultdict
from collections.abc import Iterable

from course_grader.parts import nbgrader_meta

MAX_NOTEBOOK_BYTES = 20 * 1024**2  # far above any honest hand-in (the largest solution is ~0.3 MB)
MAX_CELLS = 1000
CELL_TYPES = ("code", "markdown", "raw")
FORBIDDEN_IN_IDS = set(",;\"'\\/`|<>=+@")  # separators, quotes and spreadsheet formula starts


def normalised(student: str) -> str:
    """The id as the gradebook stores it (Unicode NFC)."""
    return unicodedata.normalize("NFC", student)


def id_problem(student: str) -> str | None:
    """Why ``student`` cannot be a student id, or None."""
    if not student or student.startswith("."):
        return "is empty or starts with a dot"
    for char in student:
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or (char.isspace() and char != " "):
            name = unicodedata.name(char, f"U+{ord(char):04X}")
            return f"contains an invisible or control character ({name})"
        if char in FORBIDDEN_IN_IDS:
            return f"contains the character {char!r}, which would break the grade table"
    if len(student) > 100:
        return "is longer than 100 characters"
    return None


# Letters of other scripts that look like Latin ones (the common part of Unicode's confusables
# for Cyrillic and Greek): an id is compared with the others as it looks, not as it is coded.
LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁԛԝһӏԌАВЕКМНОРСТХІЈЅԜУοαντικρεηχυοΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdqwhlGABEKMHOPCTXIJSWYoavtikpenxuoABEZHIKMNOPTYX",
)


def skeleton(student: str) -> str:
    """What an id looks like: compatibility forms folded, look-alike letters mapped to Latin
    ones, case ignored."""
    return unicodedata.normalize("NFKC", student).translate(LOOKALIKES).casefold()


def id_problems(students: Iterable[str]) -> dict[str, str]:
    """Every id that is invalid, or that looks like another id of the class (``Alice`` and
    ``alice``, ``ａｌｉｃｅ`` and ``alice``): a human decides who is who."""
    problems = {s: f"the student id {s!r} {p}" for s in students if (p := id_problem(s))}
    looks: dict[str, list[str]] = defaultdict(list)  # ids that look the same
    for student in students:
        looks[skeleton(student)].append(student)
    for group in looks.values():
        if len(set(group)) > 1:
            for student in group:
                others = ", ".join(repr(o) for o in sorted(set(group)) if o != student)
                problems.setdefault(student, f"the student id {student!r} looks like {others}")
    return problems


def read_notebook(path) -> tuple[object, list[str]]:
    """The notebook at ``path`` as nbformat reads it, and what its reading repaired, in words for
    the instructor: cells without an id or with another cell's id (an editor's copy and paste, a
    merge by hand) get ids of their own, which nbformat would otherwise only warn about."""
    import nbformat
    from nbformat.warnings import DuplicateCellId, MissingIDFieldWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        nb = nbformat.read(path, as_version=4)
    repairs = {
        DuplicateCellId: "gave cells that repeated another cell's id ids of their own",
        MissingIDFieldWarning: "gave cells without an id ids of their own",
    }
    for warning in seen:
        if warning.category not in repairs:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return nb, [text for kind, text in repairs.items() if any(w.category is kind for w in seen)]


def notebook_problem(nb) -> str | None:
    """Why ``nb`` (as nbformat read it) cannot be graded, or None."""
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return "it has no list of cells"
    if len(cells) > MAX_CELLS:
        return f"it has {len(cells)} cells, more than the {MAX_CELLS} the grader accepts"
    for k, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            return f"cell {k} is not a cell"
        if cell.get("cell_type") not in CELL_TYPES:
            return f"cell {k} has the unknown type {str(cell.get('cell_type'))[:40]!r}"
        if not isinstance(cell.get("source"), str):
            return f"cell {k} has a source that is not text"
        metadata = cell.get("metadata", {})
        if not isinstance(metadata, dict):
            return f"cell {k} has metadata that is not a dictionary"
        grading = metadata.get("nbgrader", {})
        if not isinstance(grading, dict):
            return f"cell {k} has grading metadata that is not a dictionary"
        if "grade_id" in grading and not isinstance(grading["grade_id"], str):
            return f"cell {k} has a grade id that is not text"
        if "points" in grading and (
            isinstance(grading["points"], bool) or not isinstance(grading["points"], (int, float))
        ):
            return f"cell {k} has points that are not a number"
        for flag in ("grade", "solution", "locked"):
            if flag in grading and not isinstance(grading[flag], bool):
                return f"cell {k} has a grading flag '{flag}' that is not true or false"
    return None


def restore_metadata(nb, release) -> int:
    """Give cells whose nbgrader metadata was dropped (Colab does this) the metadata of the
    released cell they correspond to, by aligning the two notebooks' cell sources.

    Unchanged cells align exactly; an answer cell the student filled in sits at the same
    place between them. Returns the number of cells repaired."""
    if any(nbgrader_meta(c) for c in nb.cells):
        return 0
    key = [(c.cell_type, c.source.strip()) for c in release.cells]
    theirs = [(c.cell_type, c.source.strip()) for c in nb.cells]
    repaired = 0
    matcher = difflib.SequenceMatcher(a=key, b=theirs, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for i, j in zip(range(i1, i2), range(j1, j2)):
                meta = nbgrader_meta(release.cells[i])
                if meta and release.cells[i].cell_type == nb.cells[j].cell_type:
                    nb.cells[j].metadata["nbgrader"] = dict(meta)
                    repaired += 1
    return repaired


def restore_order(nb, release) -> bool:
    """Put graded and answer cells back in the released order, each carrying along the
    cells the student added after it. Returns True when the order changed."""
    rank = {nbgrader_meta(c)["grade_id"]: k for k, c in enumerate(release.cells) if nbgrader_meta(c)}
    blocks: list[list] = [[]]
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") in rank:
            blocks.append([cell])
        else:
            blocks[-1].append(cell)
    head, rest = blocks[0], blocks[1:]
    ordered = sorted(rest, key=lambda b: rank[nbgrader_meta(b[0])["grade_id"]])
    if ordered == rest:
        return False
    nb.cells = head + [cell for block in ordered for cell in block]
    return True
