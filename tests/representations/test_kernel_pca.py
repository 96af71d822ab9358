"""KernelPCA against scikit-learn's KernelPCA (dense eigensolver) and against its own exact mode.

Agreement is measured on *new* rows, which checks the out-of-sample centring,
as principal-angle cosines between the two blocks' column spaces (invariant to
sign flips and rotations within the subspace), plus the blocks' singular values
(which a rotation keeps but a wrong scale or centring would not).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from scipy.sparse.linalg import ArpackNoConvergence
from sklearn.decomposition import KernelPCA as SklearnKernelPCA
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import pearlstats.representations.kernel_pca as kernel_pca_module
import pearlstats.representations.kernels as kernels_module
from pearlstats.exceptions import (
    BlockError,
    ConvergenceWarning,
    DataError,
    MissingValueError,
    NotFittedError,
    OptionError,
)
from pearlstats.representations import KernelPCA

KERNELS = ("rbf", "poly", "sigmoid", "cosine", "linear")
# The parameters of the paper-style simulation fixture (tests/conftest.py) and scikit-learn's
# defaults.
PAPER_SETTINGS = {"rbf": {"gamma": 0.5}, "poly": {"degree": 2, "coef0": 1.0},
                  "sigmoid": {"gamma": 0.1, "coef0": 0.5}, "cosine": {}, "linear": {}}


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(11)
    return {"train": rng.normal(size=(500, 2)), "new": rng.normal(size=(200, 2))}


def min_cosine(A, B):
    return float(np.cos(subspace_angles(A, B)).min())


def assert_same_subspace_and_scale(ours, reference, cosine=0.999, rtol=1e-6):
    assert min_cosine(ours, reference) >= cosine
    np.testing.assert_allclose(np.linalg.svd(ours, compute_uv=False),
                               np.linalg.svd(reference, compute_uv=False), rtol=rtol)


@pytest.mark.parametrize("method", ["exact", "arpack", "randomized"])
@pytest.mark.parametrize("use_defaults", [True, False], ids=["sklearn-defaults", "paper-settings"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_new_rows_agree_with_sklearn(rows, kernel, use_defaults, method):
    settings = {} if use_defaults else PAPER_SETTINGS[kernel]
    reference = SklearnKernelPCA(2, kernel=kernel, eigen_solver="dense", **settings).fit(
        rows["train"]
    )
    ours = KernelPCA(2, kernel=kernel, method=method, seed=0, **settings).fit(rows["train"])
    expected = reference.transform(rows["new"])
    got = ours.transform(rows["new"])
    assert_same_subspace_and_scale(got, expected, cosine=1 - 1e-9)
    np.testing.assert_allclose(ours.eigenvalues_, reference.eigenvalues_, rtol=1e-8)
    # With distinct eigenvalues both use the same sign convention, so the values agree outright.
    np.testing.assert_allclose(got, expected, atol=1e-7 * np.abs(expected).max())


@pytest.mark.parametrize("kernel", KERNELS)
def test_nystrom_is_close_to_sklearn_exact(rows, kernel):
    rng = np.random.default_rng(5)
    train = rng.normal(size=(1500, 2))
    reference = SklearnKernelPCA(2, kernel=kernel, eigen_solver="dense").fit(train)
    ours = KernelPCA(2, kernel=kernel, method="nystrom", n_landmarks=300, seed=1).fit(train)
    assert_same_subspace_and_scale(
        ours.transform(rows["new"]), reference.transform(rows["new"]), rtol=0.02
    )


def test_training_rows_match_sklearn_fit_transform(rows):
    # sklearn's fit_transform uses the closed form eigenvector * sqrt(eigenvalue), not a projection.
    reference = SklearnKernelPCA(3, kernel="rbf", eigen_solver="dense")
    expected = reference.fit_transform(rows["train"])
    got = KernelPCA(3, kernel="rbf", method="exact").fit(rows["train"]).transform(rows["train"])
    np.testing.assert_allclose(got, expected, atol=1e-9)


def test_standardize_matches_a_scaler_pipeline(rows):
    scale = np.array([10.0, 0.1])
    train, new = rows["train"] * scale + 3.0, rows["new"] * scale + 3.0
    reference = make_pipeline(
        StandardScaler(), SklearnKernelPCA(2, kernel="poly", eigen_solver="dense")
    )
    expected = reference.fit(train).transform(new)
    got = KernelPCA(2, kernel="poly", standardize=True, method="exact").fit(train).transform(new)
    assert_same_subspace_and_scale(got, expected, cosine=1 - 1e-9)


def test_auto_method_choice_follows_training_size(rows):
    small = KernelPCA(2, method="auto").fit(rows["train"][:150])
    medium = KernelPCA(2, method="auto", seed=0).fit(np.vstack([rows["train"], rows["new"]]))
    assert (small.method_, medium.method_) == ("exact", "arpack")


def test_randomized_that_does_not_converge_warns(rows):
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        KernelPCA(2, method="randomized", max_iter=1, tol=1e-15, oversample=0, seed=0).fit(
            rows["train"]
        )
    converged = KernelPCA(2, method="randomized", seed=0).fit(rows["train"])
    assert 1 <= converged.n_iter_ < converged.max_iter


def test_arpack_that_does_not_converge_falls_back_to_exact(rows, monkeypatch):
    def no_convergence(*args, **kwargs):
        raise ArpackNoConvergence("no convergence", np.zeros(0), np.zeros((0, 0)))

    monkeypatch.setattr(kernel_pca_module, "eigsh", no_convergence)
    with pytest.warns(ConvergenceWarning, match="exact solver"):
        explicit = KernelPCA(2, method="arpack", seed=0).fit(rows["train"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        automatic = KernelPCA(2, method="auto", seed=0).fit(np.vstack([rows["train"], rows["new"]]))
    assert explicit.method_ == automatic.method_ == "exact"
    reference = SklearnKernelPCA(2, kernel="rbf", eigen_solver="dense").fit(rows["train"])
    assert_same_subspace_and_scale(
        explicit.transform(rows["new"]), reference.transform(rows["new"]), cosine=1 - 1e-9
    )


def test_same_seed_same_block_and_seed_changes_landmarks(rows):
    def block(seed):
        return (
            KernelPCA(2, method="nystrom", n_landmarks=50, seed=seed)
            .fit(rows["train"])
            .transform(rows["new"])
        )

    np.testing.assert_array_equal(block(3), block(3))
    assert not np.array_equal(block(3), block(4))


@pytest.mark.parametrize("method", ["exact", "nystrom"])
def test_chunked_projection_equals_one_shot(rows, method, monkeypatch):
    learner = KernelPCA(2, method=method, n_landmarks=100, seed=0).fit(rows["train"])
    one_shot = learner.transform(rows["new"])
    monkeypatch.setattr(kernels_module, "CHUNK_ENTRIES", 1000)  # a few rows per chunk
    np.testing.assert_allclose(learner.transform(rows["new"]), one_shot, rtol=1e-12, atol=1e-12)


def test_too_many_components_for_a_low_rank_kernel(rows):
    # The linear kernel on two columns has rank 2: a third component would be noise.
    for method in ("exact", "randomized", "nystrom"):
        with pytest.raises(BlockError, match="only 2 direction"):
            KernelPCA(3, kernel="linear", method=method, seed=0).fit(rows["train"])


def test_input_and_option_errors(rows):
    with pytest.raises(OptionError, match="kernel='gaussian'"):
        KernelPCA(kernel="gaussian")
    with pytest.raises(OptionError, match="method"):
        KernelPCA(method="lobpcg")
    with pytest.raises(OptionError, match="gamma"):
        KernelPCA(gamma=-1.0)
    with pytest.raises(NotFittedError):
        KernelPCA().transform(rows["new"])
    bad = rows["train"].copy()
    bad[[4, 9], 1] = np.nan
    with pytest.raises(MissingValueError, match="rows 4, 9"):
        KernelPCA().fit(bad)
    fitted = KernelPCA(method="exact").fit(rows["train"])
    with pytest.raises(DataError, match="2 input columns but got 3"):
        fitted.transform(np.ones((2, 3)))
    with pytest.raises(BlockError, match="n_components <= 4"):
        KernelPCA(5).fit(rows["train"][:5])



def test_refit_with_another_method_forgets_the_landmarks():
    # a Nystrom fit's landmark indices used to outlive a refit with another method
    X = np.random.default_rng(4).normal(size=(60, 3))
    learner = KernelPCA(2, method="nystrom", n_landmarks=20, seed=0).fit(X)
    assert len(learner.landmark_indices_) == 20
    learner.method = "exact"
    assert learner.fit(X).landmark_indices_ is None


@pytest.mark.parametrize("method", ["exact", "arpack", "nystrom"])
def test_a_kernel_constant_to_rounding_is_refused_not_returned_as_a_block(method):
    """Digits' pixels (0-16, 64 columns) saturate the default sigmoid, tanh(x'y / 64 + 1):
    every kernel entry is within 7e-13 of tanh's 1.0, so the centred kernel is rounding. Its
    top eigenvalue (about 1e-12 against n max|K| = 460) set its own threshold and the block
    was rows of 1e-8 noise, with no warning (scikit-learn's KernelPCA returns the same). An
    eigenvalue below 1000 eps n max|K| is no direction."""
    from sklearn.datasets import load_digits

    X = load_digits().data[:600]
    K = np.tanh(X @ X.T / 64 + 1)
    assert np.ptp(K) < 1e-11  # the premise: constant to rounding
    for seed in range(6):  # ARPACK's start at seeds 4 and 5 hit "starting vector is zero"
        learner = KernelPCA(n_components=3, kernel="sigmoid", method=method, n_landmarks=200,
                            seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # arpack's fall-back, said
            with pytest.raises(BlockError, match="zero to rounding.*saturated sigmoid"):
                learner.fit(X)
    # a gamma that does not saturate is a block (its eigenvalues far above that floor)
    KernelPCA(n_components=3, kernel="sigmoid", gamma=1e-4, method=method,
              n_landmarks=200).fit(X)
