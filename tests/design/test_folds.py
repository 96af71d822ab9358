"""Fold assignment."""

from __future__ import annotations

import numpy as np
import pytest

from pearlstats.design.folds import check_class_coverage, make_folds
from pearlstats.exceptions import FoldError, ResponseError


def test_kfold_sizes_balanced_and_seeded():
    folds = make_folds(7, 100, seed=3)
    counts = np.bincount(folds)
    assert counts.max() - counts.min() <= 1 and counts.sum() == 100
    np.testing.assert_array_equal(folds, make_folds(7, 100, seed=3))
    assert not np.array_equal(folds, make_folds(7, 100, seed=4))


def test_stratified_folds_keep_class_proportions():
    strata = np.repeat([0, 1, 2], [50, 30, 20])
    folds = make_folds(5, 100, seed=0, strata=strata)
    table = np.array([[np.sum((folds == k) & (strata == c)) for c in range(3)] for k in range(5)])
    np.testing.assert_array_equal(table, np.tile([10, 6, 4], (5, 1)))


def test_loo_and_given_labels():
    np.testing.assert_array_equal(make_folds("loo", 4), [0, 1, 2, 3])
    np.testing.assert_array_equal(make_folds(np.array(["b", "a", "b", "c"]), 4), [1, 0, 1, 2])


@pytest.mark.parametrize(
    "cv, fragment",
    [
        (1, "at least 2 folds"),
        (11, "only 10 rows"),
        ("kfold", "not understood"),
        (np.zeros(9), "exactly one label per row"),
        (np.zeros(10), "single value"),
        (True, "not understood"),
    ],
)
def test_bad_cv_specs(cv, fragment):
    with pytest.raises(FoldError, match=fragment):
        make_folds(cv, 10, seed=0)


def test_class_coverage():
    codes = np.array([0, 0, 1, 1, 2])
    with pytest.raises(ResponseError, match=r"\['c'\] occur in only one row"):
        check_class_coverage(codes, np.array([0, 1, 0, 1, 0]), ["a", "b", "c"])
    codes = np.array([0, 0, 1, 1])
    with pytest.raises(FoldError, match=r"fold 0 contain no row of class\(es\) \['a'\]"):
        check_class_coverage(codes, np.array([0, 0, 1, 1]), ["a", "b"])
