"""A class of ps01 hand-ins with one disguised copy, for the similarity detector's test
(tests/assignments/test_similarity.py) and benchmark (benchmarks/report.py).

Honest students write gradient_fd, best_step and observed_order each in one of several
different ways (no two of the first ten share more than one of the three), and every one of
them writes the same short, obvious forward and central differences. One student writes a
solution of their own; the copier takes it and renames every variable, swaps the helper
functions' order, rewrites the comments and changes the spacing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "ps01_finite_differences"
SOURCE, COPIER = "orig", "copier"

OBVIOUS = {
    "forward_difference": "    return (f(x + h) - f(x)) / h\n",
    "central_difference": "    return (f(x + h) - f(x - h)) / (2 * h)\n",
}

GRADIENTS = [
    """    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad
""",
    """    flat = x.astype(float).ravel()
    out = np.empty_like(flat)
    for i in range(flat.size):
        up = flat.copy()
        up[i] += h
        down = flat.copy()
        down[i] -= h
        out[i] = (f(up.reshape(x.shape)) - f(down.reshape(x.shape))) / (2 * h)
    return out.reshape(x.shape)
""",
    """    basis = np.eye(x.size).reshape((x.size,) + x.shape)
    values = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in basis]
    return np.array(values).reshape(x.shape)
""",
    """    work = np.array(x, dtype=float, copy=True)
    result = np.zeros_like(work)
    it = np.nditer(work, flags=["multi_index"])
    while not it.finished:
        idx = it.multi_index
        saved = work[idx]
        work[idx] = saved + h
        plus = f(work)
        work[idx] = saved - h
        minus = f(work)
        work[idx] = saved
        result[idx] = (plus - minus) / (2 * h)
        it.iternext()
    return result
""",
    """    def bump(idx, s):
        y = x.copy()
        y[idx] += s
        return f(y)

    g = np.zeros_like(x, dtype=float)
    for idx in np.ndindex(*x.shape):
        g[idx] = (bump(idx, h) - bump(idx, -h)) / (2.0 * h)
    return g
""",
]

BEST_STEPS = [
    """    errors = [abs(method(f, x, h) - f_prime) for h in hs]
    return hs[int(np.argmin(errors))]
""",
    """    return min(hs, key=lambda s: abs(method(f, x, s) - f_prime))
""",
    """    best, best_err = None, float("inf")
    for step in hs:
        err = abs(method(f, x, step) - f_prime)
        if err < best_err:
            best, best_err = step, err
    return best
""",
    """    ranked = sorted(enumerate(hs), key=lambda pair: (abs(method(f, x, pair[1]) - f_prime), pair[0]))
    return ranked[0][1]
""",
    """    table = {}
    for position, candidate in enumerate(hs):
        table.setdefault(abs(method(f, x, candidate) - f_prime), position)
    return hs[table[min(table)]]
""",
]

ORDERS = [
    """    error_h = abs(method(f, x, h) - f_prime)
    error_h10 = abs(method(f, x, h / 10) - f_prime)
    return float(np.log10(error_h / error_h10))
""",
    """    import math

    coarse = abs(method(f, x, h) - f_prime)
    fine = abs(method(f, x, h / 10) - f_prime)
    return math.log10(coarse) - math.log10(fine)
""",
    """    errs = [abs(method(f, x, s) - f_prime) for s in (h, h / 10)]
    return float(np.log10(errs[0]) - np.log10(errs[1]))
""",
    """    def err(s):
        return abs(method(f, x, s) - f_prime)

    return float(np.log(err(h) / err(h / 10)) / np.log(10))
""",
    """    ratio = abs(method(f, x, h) - f_prime) / abs(method(f, x, 0.1 * h) - f_prime)
    return float(np.log10(ratio))
""",
]

# The original of the copied pair: helpers of their own, then the three answers.
ORIGINAL = {
    "gradient_fd": """    # perturb one coordinate at a time on a private copy
    def shifted(point, where, amount):
        moved = point.astype(float).copy()
        moved[where] = moved[where] + amount
        return moved

    def slope_at(point, where):
        ahead = f(shifted(point, where, h))
        behind = f(shifted(point, where, -h))
        return (ahead - behind) / (h + h)

    answer = np.zeros(point_shape(x), dtype=float)
    for where in np.ndindex(answer.shape):
        answer[where] = slope_at(x, where)
    return answer


def point_shape(array):
    return tuple(int(n) for n in np.shape(array))
""",
    "best_step": """    scores = np.array([abs(method(f, x, candidate) - f_prime) for candidate in hs])
    winner = int(np.flatnonzero(scores == scores.min())[0])
    return hs[winner]
""",
    "observed_order": """    small, large = h / 10, h
    e_large = abs(method(f, x, large) - f_prime)
    e_small = abs(method(f, x, small) - f_prime)
    if e_small == 0:
        return float("inf")
    return float(np.log10(e_large) - np.log10(e_small))
""",
}

# The copy: every name changed, the two helpers and the module-level function in another
# order, other comments, other spacing.
DISGUISED = {
    "gradient_fd": """    def derivative_along(pt, pos):   # two-sided slope
        fwd = f( moved_copy(pt, pos, h) )
        bwd = f( moved_copy(pt, pos, -h) )
        return ( fwd - bwd ) / ( h + h )

    def moved_copy(pt, pos, delta):
        # nudge a single entry
        tmp = pt.astype(float).copy()
        tmp[pos] = tmp[pos] + delta
        return tmp

    result = np.zeros(dims_of(x), dtype=float)
    for pos in np.ndindex(result.shape):
        result[pos] = derivative_along(x, pos)
    return result


def dims_of(arr):
    return tuple(int(d) for d in np.shape(arr))
""",
    "best_step": """    errs = np.array( [abs(method(f, x, c) - f_prime) for c in hs] )
    idx = int(np.flatnonzero(errs == errs.min())[0])   # first of the smallest
    return hs[idx]
""",
    "observed_order": """    tiny, big = h / 10, h
    err_big = abs(method(f, x, big) - f_prime)
    err_tiny = abs(method(f, x, tiny) - f_prime)
    if err_tiny == 0:
        return float('inf')
    return float(np.log10(err_big) - np.log10(err_tiny))
""",
}


def honest(i: int) -> dict[str, str]:
    """Student i's answers: no two of students 0 to 9 share more than one way of writing."""
    g, b = i % 5, (i + i // 5) % 5
    o = (i + 2 * (i // 5)) % 5
    body = {"gradient_fd": GRADIENTS[g], "best_step": BEST_STEPS[b], "observed_order": ORDERS[o]}
    return {**OBVIOUS, **body}


def filled(release: dict, bodies: dict[str, str]) -> dict:
    """The released notebook with each answer cell's stub replaced by the body given."""
    nb = json.loads(json.dumps(release))
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if cell["metadata"].get("nbgrader", {}).get("solution") and grade_id in bodies:
            source = "".join(cell["source"])
            head = source.split("    # YOUR CODE HERE")[0]
            cell["source"] = head + bodies[grade_id]
    return nb


def write_class(course: Path, honest_students: int = 10) -> list[str]:
    """The assignment released into ``course`` and every hand-in collected into ``submitted/``;
    returns the honest students' ids."""
    for folder in ("exercises", "solutions"):
        shutil.copytree(ROOT / folder / ASSIGNMENT, course / folder / ASSIGNMENT, dirs_exist_ok=True)
    release = json.loads((course / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    students = {f"h{i:03d}": honest(i) for i in range(honest_students)}
    students |= {SOURCE: {**OBVIOUS, **ORIGINAL}, COPIER: {**OBVIOUS, **DISGUISED}}
    for student, bodies in students.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(filled(release, bodies), indent=1))
    return [s for s in students if s not in (SOURCE, COPIER)]
