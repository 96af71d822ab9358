"""Kernel functions against scikit-learn's pairwise_kernels (the reference KernelPCA uses)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import pairwise_kernels

from pearlstats.representations.kernels import KERNEL_PARAMETERS, KERNELS, kernel_matrix, row_chunks

SETTINGS = [{}, {"gamma": 0.3, "degree": 2, "coef0": 0.5}]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_matrix_matches_sklearn(kernel, settings):
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(30, 4)), rng.normal(size=(20, 4))
    A[0] = 0.0  # a zero row: cosine similarity defines it as 0, not NaN
    ours = kernel_matrix(A, B, kernel, **settings)
    params = {name: value for name, value in settings.items() if name in KERNEL_PARAMETERS[kernel]}
    np.testing.assert_allclose(
        ours, pairwise_kernels(A, B, metric=kernel, **params), rtol=1e-12, atol=1e-12
    )


def test_default_gamma_is_one_over_features_like_sklearn():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(10, 5))
    np.testing.assert_allclose(
        kernel_matrix(A, A, "rbf"), np.exp(-np.square(A[:, None] - A[None]).sum(-1) / 5)
    )


def test_rbf_of_identical_rows_is_exactly_one():
    A = np.full(
        (3, 2), 1e8
    )  # the |a|^2 + |b|^2 - 2ab expansion cancels; the kernel must not exceed 1
    assert np.all(kernel_matrix(A, A, "rbf") <= 1.0)


def test_row_chunks_cover_all_rows_once():
    covered = np.concatenate([np.arange(10_001)[s] for s in row_chunks(10_001, 3_000)])
    np.testing.assert_array_equal(covered, np.arange(10_001))
