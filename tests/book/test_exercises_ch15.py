"""Chapter 15's coding exercises: mistakes beyond the one slip per exercise that
test_numbers_ch15.py tries, each of which must get a ✘ that says what went wrong."""

from __future__ import annotations

import contextlib
import io

import nbformat
from notebook_text import tagged
from paths import BOOK

CH15 = BOOK / "15_from_graph_to_program.ipynb"

# Exercise 118's pass with the additions removed and later equations remapped, but the outputs not:
# the program it returns reads a variable that nothing computes any more.
OUTPUTS_NOT_REMAPPED = """
from dataclasses import replace
def remove_zero_additions(program):
    same, kept = {}, []
    for e in program.equations:
        args = [same.get(id(a), a) for a in e.args]
        zeros = [i for i, a in enumerate(args) if not isinstance(a, Var) and not a.any()]
        if e.op == "add" and zeros and args[1 - zeros[0]].shape == e.out.shape:
            same[id(e.out)] = args[1 - zeros[0]]
        else:
            kept.append(Equation(e.op, args, e.params, e.out))
    return replace(program, equations=kept)
"""


def test_the_zero_pass_check_says_when_the_outputs_were_not_remapped():
    nb = nbformat.read(CH15, as_version=4)
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:  # the chapter's code, with the stubs, as a reader runs it
            if cell.cell_type == "code" and cell.id != "setup":
                exec(cell.source, namespace)
    exec(OUTPUTS_NOT_REMAPPED, namespace)
    (check,) = [c for c in tagged(nb, "exercise-check") if "remove_zero_additions" in c.source]
    with contextlib.redirect_stdout(out):
        exec(check.source, namespace)
    verdict = out.getvalue()
    assert verdict.startswith("✘ case 4: the new program does not run:"), verdict
    assert "must replace every use of its result, in later equations and in the outputs" in verdict
