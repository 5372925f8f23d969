"""A hand-in cut into graded parts: what each part's sandboxed process runs.

Everything but the answers comes from the instructor's source notebook in ``solutions/``:
the set-up cells, the helpers and each test cell, visible and hidden lines. From the hand-in
only the answer cells (found by their grade id) and the cells the student added after them
are taken, so a student who edits or deletes a test, or a set-up cell, changes nothing.
"""

from __future__ import annotations

import ast
import re
import symtable
import threading
from dataclasses import dataclass, field

from course_grader.magics import without_magics
from course_grader.protocol import Cell

# CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, so two
# threads parsing at once (hand-ins graded side by side) can trip its "AST constructor
# recursion depth mismatch" check: the grader's threads parse one at a time.
_PARSING = threading.Lock()


def parse(source: str) -> ast.Module:
    """``ast.parse``, one thread at a time."""
    with _PARSING:
        return ast.parse(source)


HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[ \t]*\n(.*?)^[ \t]*### END HIDDEN TESTS[ \t]*\n?", re.S | re.M)
SECRET = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)(.*?)### END \1", re.S)
REFERENCE = re.compile(r"^[ \t]*# grader: reference ([\w ]+?)[ \t]*$", re.M)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


@dataclass
class Part:
    """One graded test cell of the source notebook."""

    grade_id: str
    points: float
    visible: str
    hidden: str
    cells: list[Cell] = field(default_factory=list)  # what runs before the test, in notebook order
    references: list[Cell] = field(default_factory=list)  # solution cells run just before the test
    answers: list[str] = field(default_factory=list)  # grade ids of the answer cells this test checks


def split_test(source: str) -> tuple[str, str]:
    """A test cell's visible lines and its hidden lines."""
    hidden = "\n".join(match.group(1) for match in HIDDEN.finditer(source))
    return HIDDEN.sub("", source), hidden


def student_blocks(hand_in, instructor: set[str]) -> dict[str, list[Cell]]:
    """Each answer cell of the hand-in with the code cells the student added (or changed) after
    it; ``instructor`` holds the sources of the released non-answer cells, which are skipped."""
    blocks: dict[str, list[Cell]] = {}
    current: list[Cell] | None = None
    leading: list[Cell] = []
    for cell in hand_in.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code":
            continue
        if meta.get("solution") and meta.get("grade_id"):
            current = blocks.setdefault(meta["grade_id"], [])
            current.append({"name": meta["grade_id"], "kind": "answer", "source": cell.source})
        elif not meta and cell.source.strip() not in instructor:  # a cell the student added
            target = current if current is not None else leading
            target.append(
                {
                    "name": f"added after {current[0]['name']}" if current else "added at the top",
                    "kind": "extra",
                    "source": cell.source,
                }
            )
    if leading and blocks:
        first = next(iter(blocks))
        blocks[first] = leading + blocks[first]
    return blocks


# A cell Python cannot compile: invalid, or nested too deeply (`x = k + k + ... + k`, 5,000 terms, raised
# RecursionError here, and the whole hand-in went to a human ungraded: in Jupyter that cell alone fails).
UNCOMPILABLE = (SyntaxError, RecursionError)


def as_run(source: str) -> ast.Module | None:
    """A cell's source as the runner runs it, parsed: as it is, or else with its IPython lines made
    plain (``%time plain = reference_descent(...)``, :func:`course_grader.notebook.run_cell`); None
    where it does not compile. Read as it is, such a cell bound and used nothing: the test cell
    defining ``reference_descent`` was left out, and a ps05 answer cell using it failed (0/3, 3/3 in
    Jupyter)."""
    for make in (lambda: source, lambda: without_magics(source)):  # the tokenizer only where needed
        text = make()
        if text is None:
            return None
        try:
            return parse(text)
        except UNCOMPILABLE:
            continue
    return None


def bound_names(sources: list[str]) -> set[str]:
    """The top-level names these cells bind (definitions, assignments, imports)."""
    names: set[str] = set()
    for source in sources:
        tree = as_run(source)
        for node in tree.body if tree else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def used_names(source: str) -> set[str]:
    """The global names a cell reads (at its top level or inside its functions and classes)."""
    try:
        top: symtable.SymbolTable | None = symtable.symtable(source, "<cell>", "exec")
    except UNCOMPILABLE:
        tree = as_run(source)  # a cell with IPython lines, as the runner runs it
        try:
            top = symtable.symtable(ast.unparse(tree), "<cell>", "exec") if tree else None
        except UNCOMPILABLE:  # parsed, yet not compiled (``nonlocal`` at the top level)
            top = None
    if top is None:
        return set()
    names, tables = set(), [top]
    while tables:
        table = tables.pop()
        names |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and (table is top or s.is_global())}
        tables.extend(table.get_children())
    return names


def runnable_test(visible: str) -> str:
    """A test cell's visible lines as the student's process runs them, for the names they
    define (as in Jupyter, where the answers below may use them): without its top-level
    asserts, so a failed check stops nothing there. What happens there never counts."""
    try:
        tree = parse(visible)
    except SyntaxError:
        return ""
    tree.body = [node for node in tree.body if not isinstance(node, ast.Assert)]
    return ast.unparse(tree)


def used_test_cells(cells: list[Cell]) -> list[Cell]:
    """``cells`` without the test cells whose names no later cell (the student's or a set-up
    cell) reads, directly or through another test cell kept."""
    wanted: set[str] = set()
    kept: list[Cell] = []
    for cell in reversed(cells):
        if cell["kind"] == "test" and not bound_names([cell["source"]]) & wanted:
            continue
        wanted |= used_names(cell["source"])
        kept.append(cell)
    return kept[::-1]


def notebook_classes(source_nb) -> set[str]:
    """The classes the instructor's notebook defines (set-up and answer cells), as the runner
    names them: the student's objects whose arithmetic a test may use."""
    names = set()
    for cell in source_nb.cells:
        if cell.cell_type == "code" and not nbgrader_meta(cell).get("grade"):
            try:
                tree = parse(cell.source)
            except SyntaxError:
                continue
            names |= {f"__main__.{n.name}" for n in tree.body if isinstance(n, ast.ClassDef)}
    return names


def answer_names(source_nb) -> set[str]:
    """The names the solution's answer cells bind: all a test may take from the student."""
    return bound_names([c.source for c in source_nb.cells if nbgrader_meta(c).get("solution")])


def parts(source_nb, hand_in) -> list[Part]:
    """The graded parts of the source notebook, each with the cells that run before its test."""
    instructor = {
        split_test(c.source)[0].strip() if nbgrader_meta(c).get("grade") else c.source.strip()
        for c in source_nb.cells
        if not nbgrader_meta(c).get("solution")
    }
    answers = student_blocks(hand_in, instructor)
    solutions = {nbgrader_meta(c)["grade_id"]: c.source for c in source_nb.cells if nbgrader_meta(c).get("solution")}
    cells: list[Cell] = []
    found: list[Part] = []
    since_last_test: list[str] = []
    for k, cell in enumerate(source_nb.cells):
        if cell.cell_type != "code":
            continue
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution"):
            visible, hidden = split_test(cell.source)
            references: list[Cell] = [
                {"name": name, "kind": "reference", "source": solutions[name]}
                for match in REFERENCE.findall(hidden)
                for name in match.split()
            ]
            tested = since_last_test or (found[-1].answers if found else [])
            found.append(
                Part(
                    meta["grade_id"],
                    float(meta.get("points", 0)),
                    visible,
                    hidden,
                    used_test_cells(cells),
                    references,
                    tested,
                )
            )
            since_last_test = []
            if runnable := runnable_test(visible).strip():
                cells.append({"name": f"{meta['grade_id']} (its visible lines)", "kind": "test", "source": runnable})
        elif meta.get("solution"):
            cells.extend(answers.get(meta["grade_id"], []))
            since_last_test.append(meta["grade_id"])
        else:
            cells.append(
                {"name": meta.get("grade_id") or f"set-up cell {k + 1}", "kind": "setup", "source": cell.source}
            )
    return found


def secret_lines(source_nb, minimum: int = 8) -> set[str]:
    """Stripped lines of the solutions and hidden tests that never stand in a visible place.

    A line that a test quotes inside a longer line, such as a teaching message naming
    ``optimiser.zero_grad()``, is a hint the instructor chose to give, and is not counted."""
    inside, outside, tests = set(), set(), []
    for cell in source_nb.cells:
        for match in SECRET.finditer(cell.source):
            inside |= {line.strip() for line in match.group(2).splitlines()}
        outside |= {line.strip() for line in SECRET.sub("", cell.source).splitlines()}
        if nbgrader_meta(cell).get("grade"):
            tests.append(cell.source)
    test_lines = [line.strip() for test in tests for line in test.splitlines()]
    quoted = {line for line in inside if any(line in other and line != other for other in test_lines)}
    return {line for line in inside - outside - quoted if len(line) >= minimum}
