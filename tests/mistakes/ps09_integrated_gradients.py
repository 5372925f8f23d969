"""Typical mistakes in ps09 (Integrated Gradients), for ``tests/assignments/test_assignments.py``.

Each entry swaps the named answer cells of the solution for a mistaken version and says which
test cells must then score zero and what their failing assert must tell the student. Parts 3
and 5 use earlier parts; where one of those failed, its reference stands in (``# grader:
reference``), so every mistake costs exactly its own part.
"""

MISTAKES = {
    "right_rule_starts_at_zero": {
        # np.arange(m) / m for every rule: the left points handed in as the right ones.
        "replace": {
            "riemann_alphas": '''def riemann_alphas(steps, method="right"):
    """The `steps` points alpha_1 < ... < alpha_m of a Riemann sum on [0, 1]."""
    offset = {"left": 0.0, "middle": 0.5, "right": 0.0}[method]
    return (np.arange(steps) + offset) / steps
''',
        },
        "fails": {"test_riemann_alphas"},
        "message": "the right rule starts at 1/m",
    },
    "path_ignores_baseline": {
        # alpha * x: the path of a zero baseline, used for every baseline.
        "replace": {
            "path": '''def path(x, baseline, alphas):
    """The points baseline + alpha (x - baseline), one row per alpha: an array of shape (m, d)."""
    return np.asarray(alphas, dtype=float)[:, None] * np.asarray(x, dtype=float)
''',
        },
        "fails": {"test_path"},
        "message": "only right for a zero baseline",
    },
    "forgot_times_displacement": {
        # Returns the average gradient along the path, never multiplied by (x - baseline): tf-explain's bug.
        "replace": {
            "integrated_gradients_riemann": '''def integrated_gradients_riemann(f_grad, x, baseline, steps):
    """Integrated Gradients by the right Riemann sum with `steps` points."""
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    alphas = np.arange(1, steps + 1) / steps
    grads = f_grad(baseline + alphas[:, None] * (x - baseline))
    return grads.mean(axis=0)
''',
        },
        "fails": {"test_integrated_gradients_riemann"},  # each part graded on its own (# grader: reference)
        "message": "multiply the average gradient by (x - baseline)",
    },
    "left_points_in_ig": {
        # alpha = k / m for k = 0 .. m-1: the sum starts at the baseline and never reaches x.
        "replace": {
            "integrated_gradients_riemann": '''def integrated_gradients_riemann(f_grad, x, baseline, steps):
    """Integrated Gradients by the right Riemann sum with `steps` points."""
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    alphas = np.arange(steps) / steps
    grads = f_grad(baseline + alphas[:, None] * (x - baseline))
    return (x - baseline) * grads.mean(axis=0)
''',
        },
        "fails": {"test_integrated_gradients_riemann"},  # each part graded on its own (# grader: reference)
        "message": "the left rule",
    },
    "gap_sign_flipped": {
        # (f(x) - f(baseline)) - sum(attributions): the right size, the wrong sign.
        "replace": {
            "completeness_gap": '''def completeness_gap(attributions, f, x, baseline):
    """sum(attributions) - (f(x) - f(baseline)), as a float (f is a model, see Tools)."""
    return float((value(f, x) - value(f, baseline)) - np.sum(attributions))
''',
        },
        "fails": {"test_completeness_gap"},
        "message": "the sign is flipped",
    },
    "gap_forgets_the_baseline_value": {
        # sum(attributions) - f(x): as if f(baseline) were 0. Part 5's shot uses this gap, and
        # the reference completeness_gap stands in there, so the slip costs part 4 only.
        "replace": {
            "completeness_gap": '''def completeness_gap(attributions, f, x, baseline):
    """sum(attributions) - (f(x) - f(baseline)), as a float (f is a model, see Tools)."""
    return float(np.sum(attributions) - value(f, x))
''',
        },
        "fails": {"test_completeness_gap"},
        "message": "expected +0, got",
    },
}

# Every part again, correct, in other idioms: a table of offsets, one row per alpha in a loop,
# the student's own riemann_alphas and path reused, the model called once on a batch of both
# points, a named tuple as the result. It must score full marks.
HONEST = {
    "riemann_alphas": '''OFFSETS = {"left": 0.0, "middle": 0.5, "right": 1.0}


def riemann_alphas(steps, method="right"):
    """The `steps` points alpha_1 < ... < alpha_m of a Riemann sum on [0, 1]."""
    return np.array([(k + OFFSETS[method]) / steps for k in range(steps)], dtype=float)
''',
    "path": '''def path(x, baseline, alphas):
    """The points baseline + alpha (x - baseline), one row per alpha: an array of shape (m, d)."""
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    return np.array([baseline + alpha * (x - baseline) for alpha in alphas], dtype=float).reshape(len(alphas), -1)
''',
    "integrated_gradients_riemann": '''def integrated_gradients_riemann(f_grad, x, baseline, steps):
    """Integrated Gradients by the right Riemann sum with `steps` points."""
    x, baseline = np.asarray(x, dtype=float), np.asarray(baseline, dtype=float)
    gradients = np.asarray(f_grad(path(x, baseline, riemann_alphas(steps, "right"))), dtype=float)
    return (x - baseline) * np.mean(gradients, axis=0)
''',
    "completeness_gap": '''def completeness_gap(attributions, f, x, baseline):
    """sum(attributions) - (f(x) - f(baseline)), as a float."""
    at_x, at_baseline = (value(f, point) for point in (x, baseline))
    return float(sum(np.ravel(attributions))) - (at_x - at_baseline)
''',
    "shot_attributions": '''from collections import namedtuple

Shot = namedtuple("Shot", "hit attributions gap")


def shot_attributions(steps=50):
    """IG of the height at the hoop, from chapter 11's first throw (baseline) to the hit (input)."""
    history = fit_shot()
    hit = np.array([history.v[-1], history.theta[-1]], dtype=float)
    miss = np.asarray(START_SHOT, dtype=float)
    attributions = integrated_gradients_riemann(gradient_function(shot_height), hit, miss, steps)
    return Shot(hit, attributions, completeness_gap(attributions, shot_height, hit, miss))
''',
}
