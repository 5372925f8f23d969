"""course_lib.datasets: the Iris data shipped inside the package."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np

from course_lib.datasets import load_iris


def test_iris_shapes_types_and_classes():
    X, y, feature_names, target_names = load_iris()
    assert X.shape == (150, 4) and X.dtype == np.float64
    assert y.shape == (150,) and y.dtype == np.int64
    assert np.bincount(y).tolist() == [50, 50, 50]
    assert target_names == ["setosa", "versicolor", "virginica"]
    assert feature_names == ["sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm"]


def test_iris_known_statistics():
    X, y, _, _ = load_iris()
    np.testing.assert_allclose(X.mean(axis=0), [5.843333, 3.057333, 3.758, 1.199333], atol=1e-6)
    np.testing.assert_allclose(X.min(axis=0), [4.3, 2.0, 1.0, 0.1])
    np.testing.assert_allclose(X.max(axis=0), [7.9, 4.4, 6.9, 2.5])
    np.testing.assert_allclose(X[y == 0].mean(axis=0), [5.006, 3.428, 1.462, 0.246], atol=1e-9)
    np.testing.assert_allclose(X[0], [5.1, 3.5, 1.4, 0.2])


def test_csv_is_clean_package_data():
    text = resources.files("course_lib").joinpath("data/iris.csv").read_text()
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ["sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm", "species"]
    assert len(rows) == 151 and all(len(row) == 5 for row in rows)
    assert not any(line.startswith("#") for line in text.splitlines())


def test_load_iris_cites_fisher():
    assert "Fisher (1936)" in load_iris.__doc__
