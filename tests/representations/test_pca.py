"""PCA and Raw against scikit-learn's PCA and StandardScaler."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA as SklearnPCA
from sklearn.preprocessing import StandardScaler

from pearlstats.exceptions import (
    BlockError,
    DataError,
    MissingValueError,
    NotFittedError,
    OptionError,
)
from pearlstats.representations import PCA, KernelPCA, Raw


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(2)
    mixing = rng.normal(size=(4, 4))
    return {
        "train": rng.normal(size=(300, 4)) @ mixing + 5.0,
        "new": rng.normal(size=(50, 4)) @ mixing + 5.0,
    }


def align_signs(ours, reference):
    return ours * np.sign(np.sum(ours * reference, axis=0))


@pytest.mark.parametrize("k", [1, 2, 4])
def test_scores_and_variances_match_sklearn(rows, k):
    reference = SklearnPCA(k, svd_solver="full").fit(rows["train"])
    ours = PCA(k).fit(rows["train"])
    got = ours.transform(rows["new"])
    np.testing.assert_allclose(align_signs(got, reference.transform(rows["new"])),
                               reference.transform(rows["new"]), atol=1e-10)
    np.testing.assert_allclose(ours.explained_variance_, reference.explained_variance_, rtol=1e-10)
    assert np.allclose(
        np.abs(ours.components_).max(axis=1), ours.components_.max(axis=1)
    )  # sign convention


def test_standardized_pca_is_pca_of_scaled_inputs(rows):
    scaler = StandardScaler().fit(rows["train"])
    reference = SklearnPCA(2, svd_solver="full").fit(scaler.transform(rows["train"]))
    expected = reference.transform(scaler.transform(rows["new"]))
    got = PCA(2, standardize=True).fit(rows["train"]).transform(rows["new"])
    np.testing.assert_allclose(align_signs(got, expected), expected, atol=1e-10)


def test_raw_is_the_identity_or_the_standard_scaler(rows):
    np.testing.assert_array_equal(Raw().fit(rows["train"]).transform(rows["new"]), rows["new"])
    expected = StandardScaler().fit(rows["train"]).transform(rows["new"])
    np.testing.assert_allclose(
        Raw(standardize=True).fit(rows["train"]).transform(rows["new"]), expected, atol=1e-12
    )


def test_constant_column_is_zero_after_standardizing():
    X = np.column_stack([np.arange(5.0), np.full(5, 7.0)])
    np.testing.assert_array_equal(Raw(standardize=True).fit(X).transform(X)[:, 1], np.zeros(5))


def test_errors_name_the_problem(rows):
    with pytest.raises(OptionError, match="n_components=0"):
        PCA(0)
    with pytest.raises(BlockError, match="n_components <= 4"):
        PCA(5).fit(rows["train"])
    with pytest.raises(NotFittedError):
        PCA(2).transform(rows["new"])
    with pytest.raises(NotFittedError):
        Raw().transform(rows["new"])
    with pytest.raises(DataError, match="4 input columns but got 2"):
        PCA(2).fit(rows["train"]).transform(rows["new"][:, :2])
    with pytest.raises(MissingValueError, match="row 1"):
        Raw().fit(np.array([[1.0], [np.inf]]))
    with pytest.raises(DataError, match="numeric"):
        PCA(1).fit(np.array([["a"], ["b"]]))


# PCA(k) beyond the centred rank of its inputs used to return columns of rounding noise
# (variance ~1e-30) without a word, while KernelPCA(kernel='linear') refused the same fit.
def test_pca_beyond_the_rank_of_its_inputs_is_refused():
    rng = np.random.default_rng(0)
    rank_one = np.outer(rng.normal(size=30), [1.0, 2.0, 3.0])
    # scikit-learn's second component has variance ~1e-15: its scores are rounding noise
    assert SklearnPCA(2).fit(rank_one).explained_variance_[1] < 1e-12
    with pytest.raises(BlockError, match=r"found only 1 direction\(s\) with non-zero variance.*"
                                         r"use n_components <= 1"):
        PCA(2).fit(rank_one)
    assert PCA(1).fit(rank_one).transform(rank_one).shape == (30, 1)
    # the same answer as KernelPCA with the linear kernel (documented as ordinary PCA)
    with pytest.raises(BlockError, match=r"found only 1 direction"):
        KernelPCA(2, kernel="linear", method="exact").fit(rank_one)


def test_pca_of_identical_rows_is_refused():
    with pytest.raises(BlockError, match="training rows that are all identical"):
        PCA(1).fit(np.ones((10, 3)))
    with pytest.raises(BlockError, match="training rows that are all identical"):
        PCA(1, standardize=True).fit(np.ones((10, 3)))
