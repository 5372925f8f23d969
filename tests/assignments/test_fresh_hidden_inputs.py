"""Hidden tests draw fresh inputs in every grading run: no hidden line fixes a seed.

Hidden inputs are not secret (the README says why): a hidden test's failure may show them, so
they must not be worth knowing beforehand. Every random generator a hidden test makes is
unseeded (``np.random.default_rng()``, ``random.Random()``), and every seed a hidden test hands
to a helper (``random_graph(seed)``, ``MLP(sizes, rng=seed)``, the student's ``train(seed)``) is
drawn from one. The check reads the source statically, with the AST: a name is fresh when it is
bound from an expression that draws from an unseeded generator or from another fresh name.
"""

from __future__ import annotations

import ast

import nbformat
import pytest
from nbgrader_helpers import ROOT

from course_grader.parts import HIDDEN

ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())
MAKERS = {"default_rng", "Random", "RandomState", "seed", "manual_seed", "PRNGKey", "SeedSequence", "Generator"}
SEED_PARAMETERS = {"seed", "rng", "random_state", "generator"}


def _name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _draws_fresh(node: ast.AST, fresh: set[str]) -> bool:
    """True when the expression reads a fresh name or makes an unseeded generator."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in fresh:
            return True
        if isinstance(n, ast.Call) and _name(n) in MAKERS and not n.args and not n.keywords:
            return True
    return False


def _fresh_names(tree: ast.AST) -> set[str]:
    bindings: list[tuple[ast.AST, ast.AST]] = []  # (target, value)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            bindings += [(target, node.value) for target in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            bindings.append((node.target, node.value))
        elif isinstance(node, (ast.For, ast.comprehension)):
            bindings.append((node.target, node.iter))
    fresh: set[str] = set()
    while True:
        more = {
            n.id
            for target, value in bindings
            if _draws_fresh(value, fresh)
            for n in ast.walk(target)
            if isinstance(n, ast.Name)
        }
        if more <= fresh:
            return fresh
        fresh |= more


def _seed_parameters(source: str) -> dict[str, list[int]]:
    """The positions of the seed parameters of every function the notebook defines."""
    found: dict[str, list[int]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.args]
            found[node.name] = [k for k, a in enumerate(names) if a in SEED_PARAMETERS or a.endswith("_seed")]
    return found


def fixed_seeds(hidden: str, defined: dict[str, list[int]]) -> list[str]:
    """The hidden lines (as text) that make a seeded generator or hand a helper a fixed seed."""
    tree = ast.parse(hidden)
    fresh = _fresh_names(tree)
    found = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name, args = _name(call), list(call.args)
        if name == "student_side" and args and isinstance(args[0], ast.Name):  # student_side(f, *args)
            name, args = args[0].id, args[1:]
        seeds = [args[k] for k in defined.get(name, []) if k < len(args)]
        seeds += [k.value for k in call.keywords if k.arg in SEED_PARAMETERS or (k.arg or "").endswith("_seed")]
        if name in MAKERS and (call.args or call.keywords) or any(not _draws_fresh(s, fresh) for s in seeds):
            found.append(ast.get_source_segment(hidden, call) or name)
    return found


def hidden_and_all_code(assignment: str) -> tuple[list[str], str]:
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    hidden = [m.group(1) for source in code for m in HIDDEN.finditer(source)]
    plain = ("\n".join(line for line in s.splitlines() if not line.startswith(("%", "!"))) for s in code)
    return hidden, "\n\n".join(plain)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_hidden_line_fixes_a_seed(assignment):
    hidden, code = hidden_and_all_code(assignment)
    assert hidden, f"{assignment} has no hidden tests"
    defined = _seed_parameters(code)
    fixed = [call for block in hidden for call in fixed_seeds(block, defined)]
    assert not fixed, f"{assignment}: hidden lines with a fixed seed (draw it from np.random.default_rng()): {fixed}"


def test_the_check_finds_fixed_seeds_and_accepts_fresh_ones():
    defined = {"random_case": [0], "train": [0]}
    fixed = """
rng = np.random.default_rng(1202)
other = random.Random(4)
for seed in range(20):
    f, shapes = student_side(random_case, 1200 + seed)
for seed in (1, 2, 3):
    train(seed)
model = MLP(sizes, rng=7)
"""
    assert sorted(fixed_seeds(fixed, defined)) == [
        "MLP(sizes, rng=7)",
        "np.random.default_rng(1202)",
        "random.Random(4)",
        "student_side(random_case, 1200 + seed)",
        "train(seed)",
    ]
    fresh = """
rng = np.random.default_rng()
for seed in rng.integers(2**31, size=20).tolist():
    f, shapes = student_side(random_case, seed)
for k, seed in enumerate([random.Random().randrange(9) for _ in range(3)]):
    train(seed)
model = MLP(sizes, rng=int(rng.integers(1000)))
"""
    assert fixed_seeds(fresh, defined) == []
