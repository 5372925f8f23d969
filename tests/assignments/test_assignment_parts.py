"""What the assignments ps05, ps06, ps10 and ps11 promise beyond the nbgrader pipeline.

``test_assignments.py`` grades every assignment end to end. Here: every assignment is on the
course map; ps10, which compares with PyTorch, stops at its Tools cell with one sentence saying
what to install when PyTorch is missing (instead of grading skipped cells), and the README tells
instructors so; ps11 measures costs by counting operations, so its numbers are exact.
"""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest
from nbgrader_helpers import ROOT, nbgrader_meta

ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())


def cell_source(assignment: str, grade_id: str) -> str:
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    return next(c.source for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_assignment_is_on_the_course_map(assignment):
    number = assignment.split("_")[0]
    map_rows = [line for line in (ROOT / "book" / "index.md").read_text().splitlines() if line.startswith("|")]
    assert any(f"| {number} " in row for row in map_rows), f"book/index.md's course map does not list {number}"


def test_assignments_are_numbered_in_the_order_students_meet_them():
    """The course map lists chapters in reading order with each chapter's assignment: the
    numbers must rise down the map (the capstone, after the last chapter, comes last), and the
    book's table of contents lists the assignments in the same order."""
    text = (ROOT / "book" / "index.md").read_text()
    on_the_map = [int(n) for n in re.findall(r"\| ps(\d\d) ", text)]
    assert on_the_map == list(range(1, len(ASSIGNMENTS) + 1)), (
        f"book/index.md meets the assignments in the order {on_the_map}: number them in chapter order"
    )
    in_the_toc = re.findall(r"file: exercises/(ps\d\d)_", (ROOT / "_toc.yml").read_text())
    assert in_the_toc == [name.split("_")[0] for name in ASSIGNMENTS], in_the_toc


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_ps10_without_pytorch_stops_at_the_tools_cell_saying_what_to_install():
    tools = cell_source("ps10_pytorch_comparison", "tools")
    # A None entry in sys.modules makes `import torch` fail exactly as on a machine without it.
    proc = run_python("import sys\nsys.modules['torch'] = None\n" + tools)
    assert proc.returncode != 0, "the Tools cell must stop when PyTorch is missing"
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: ") and "pip install torch" in last, proc.stderr[-800:]
    assert "During handling" not in proc.stderr, "one error, not a chained traceback"
    assert run_python(tools).returncode == 0, "with PyTorch installed the Tools cell runs"


def test_readme_says_grading_ps10_needs_pytorch():
    text = " ".join((ROOT / "README.md").read_text().split())
    assert re.search(r"\*\*ps10\*\*.*needs \*\*PyTorch\*\*.*requirements-oracles\.txt", text), (
        "README must say that grading ps10 needs PyTorch (and which version)"
    )


def test_ps11_counts_are_exact_and_the_reverse_ratio_is_bounded():
    """The counting numbers of ps11's Tools cell: fixed, repeatable counts, and one reverse sweep
    within 5x the cost of f for every n."""
    namespace: dict = {}
    exec(cell_source("ps11_cheap_gradient", "tools"), namespace)
    Num, Var, count_ops, backward, wave = (namespace[k] for k in ("Num", "Var", "count_ops", "backward", "wave"))

    def reverse(x):
        leaves = [Var(Num(v)) for v in x]
        backward(wave(leaves))
        return [leaf.grad.value for leaf in leaves]

    for n in (1, 2, 10, 100):
        x = [0.1 * k - 0.3 for k in range(n)]
        _, f_ops = count_ops(wave, [Num(v) for v in x])
        assert f_ops == 2 + 3 * (n - 1)
        gradient, ops = count_ops(reverse, x)
        assert ops <= 5 * f_ops
        assert count_ops(reverse, x)[1] == ops, "counting is deterministic"
        assert len(gradient) == n


def solved(assignment: str) -> dict:
    """The namespace of an assignment's Tools and answer cells, solutions included."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    namespace: dict = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and (meta.get("solution") or meta.get("grade_id") == "tools"):
            exec(cell.source, namespace)
    return namespace


def test_ps10_closing_numbers_float64_agrees_to_rounding_float32_to_1e_7():
    import torch  # an oracle of the test environment (make setup-test), as for grading ps10

    ns = solved("ps10_pytorch_comparison")
    params, X, y = ns["PARAMS"], ns["X"], ns["y"]
    ours = ns["course_loss_and_grads"](params, X, y)[1]
    assert ns["max_relative_difference"](ns["torch_loss_and_grads"](params, X, y)[1], ours) < 1e-15

    single = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in params.items()}
    ns["mlp_loss"](single, torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)).backward()
    float32 = {k: t.grad.numpy().astype(float) for k, t in single.items()}
    assert 1e-8 < ns["max_relative_difference"](float32, ours) < 1e-6
