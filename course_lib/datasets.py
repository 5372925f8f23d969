"""Small data sets shipped inside the package (no download needed)."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np

__all__ = ["load_iris"]


def load_iris() -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Fisher's Iris data: 150 flowers, 50 of each of three species.

    Source: R. A. Fisher (1936), "The use of multiple measurements in taxonomic
    problems", Annals of Eugenics 7(2), 179-188 (measurements by Edgar Anderson); the
    copy shipped as ``course_lib/data/iris.csv`` is the one distributed with
    scikit-learn, which follows Fisher's paper (the UCI copy has two wrong entries).

    Returns ``(X, y, feature_names, target_names)``: ``X`` float64 of shape (150, 4)
    (sepal length, sepal width, petal length, petal width, in cm), ``y`` int64 of shape
    (150,) with class indices 0, 1, 2 naming ``target_names[y]``.
    """
    rows = list(csv.reader(resources.files("course_lib").joinpath("data/iris.csv").read_text().splitlines()))
    header, body = rows[0], rows[1:]
    feature_names = header[:-1]
    target_names = list(dict.fromkeys(row[-1] for row in body))  # in order of first appearance
    X = np.array([[float(v) for v in row[:-1]] for row in body], dtype=np.float64)
    y = np.array([target_names.index(row[-1]) for row in body], dtype=np.int64)
    return X, y, feature_names, target_names
