"""Fold fits start from values summed by fold in the all-rows fit's pass (issue 35).

The all-rows fit of a binomial or Poisson candidate sums its loss and gradient by fold in
every pass; at its last evaluated point each fold's training-row values are the sums over
the other folds. The fold fits start there with those values instead of a pass of their own.
Checked against the direct training-row sums (with observation weights and an offset), and
the fits against statsmodels.
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from pearlstats.design.candidates import Candidate
from pearlstats.engines import glm


def _problem(kind: str, n: int = 4000, seed: int = 3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 4))])
    eta = X @ np.array([0.2, 0.6, -0.5, 0.3, 0.0])
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))) if kind == "binomial" else rng.poisson(
        np.exp(eta))
    return X, y.astype(float), rng.integers(0, 4, n), rng.uniform(0.5, 2.0, n), \
        rng.normal(scale=0.2, size=n)


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
def test_fold_values_equal_each_folds_training_row_sums(kind):
    X, y, labels, w, offset = _problem(kind)
    folds = [np.flatnonzero(labels == k) for k in range(4)]
    result = glm._solve(kind, X, y, w[None], np.zeros((1, 5)), 0.0, 0, None, folds=folds,
                        offset=offset)
    point, f, g = result.fold_values
    # the point is the fit's last evaluation: within its final Newton step of the optimum
    assert np.abs(point - result.theta[0]).max() < 1e-6
    fold_weights = np.repeat(w[None], 4, axis=0)
    for k, rows in enumerate(folds):
        fold_weights[k, rows] = 0.0
    direct = glm._make_loss(kind, X, y, fold_weights, fold_weights.sum(axis=1),
                            offset=offset)(np.repeat(point[None], 4, axis=0), 1)
    # The same sums in another order: a few units in the last place of f (about 1), and of
    # the gradient's terms (of order 1) summed over 4 000 rows.
    np.testing.assert_allclose(f, direct[0], rtol=1e-13)
    np.testing.assert_allclose(g, direct[1], rtol=0, atol=1e-13)


def test_known_values_are_served_once_without_a_pass(monkeypatch):
    X, y, labels, _, _ = _problem("binomial", n=500)
    weights = np.ones((2, 500))
    passes: list = []
    row_terms = glm.row_terms
    monkeypatch.setattr(glm, "row_terms", lambda *a: passes.append(1) or row_terms(*a))
    theta = np.zeros((2, 5))
    known = (theta, np.array([1.0, 2.0]), np.ones((2, 5)))
    loss = glm._make_loss("binomial", X, y, weights, weights.sum(axis=1), known=known)
    f, g = loss(theta.copy(), 1)
    assert passes == [] and f.tolist() == [1.0, 2.0]
    f, g = loss(theta.copy(), 1)  # served once only: now computed
    assert passes and np.allclose(f, np.log(2.0))


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
def test_out_of_fold_predictions_match_statsmodels(kind):
    X, y, labels, w, offset = _problem(kind, seed=5)
    candidate = Candidate("all", ("a",), np.arange(5))
    output = glm.glm_cv_predict(kind, X, y, [candidate], labels, row_weights=w, offset=offset)
    family = sm.families.Binomial() if kind == "binomial" else sm.families.Poisson()
    for k in range(4):
        train, test = labels != k, labels == k
        fit = sm.GLM(y[train], X[train], family=family, freq_weights=w[train],
                     offset=offset[train]).fit(tol=1e-14)
        expected = fit.predict(X[test], offset=offset[test])
        # both optima to about 1e-12 in the coefficients (well-conditioned, n = 4 000)
        np.testing.assert_allclose(output.predictions[test, 0], expected, rtol=1e-9)


def test_folds_at_the_all_rows_optimum_take_one_confirming_pass(monkeypatch):
    # Stratified folds with equal class counts: the intercept-only model's fold optima equal
    # the all-rows one. The fold fits' first values are known, their first step is at the
    # rounding level of f, and they must not backtrack pass after pass comparing values of f
    # that differ only by the order of the sums (they took 60 halvings, a pass each, before).
    n = 100_000  # 25 blocks of rows: sums in another order differ in their last digits
    rng = np.random.default_rng(0)
    y = rng.permutation(np.arange(n) < 50_200).astype(float)  # mean 0.502: optimum not 0
    labels = np.empty(n, dtype=int)
    for value in (0.0, 1.0):  # each class dealt evenly into the five folds
        rows = np.flatnonzero(y == value)
        labels[rows] = rng.permutation(np.arange(len(rows)) % 5)
    X = np.ones((n, 1))
    calls: list = []
    make_loss = glm._make_loss

    def counting(kind, Z, y, weights, *args, **kwargs):
        loss = make_loss(kind, Z, y, weights, *args, **kwargs)
        return lambda theta, order: calls.append((len(weights), order)) or loss(theta, order)

    monkeypatch.setattr(glm, "_make_loss", counting)
    output = glm.glm_cv_predict("binomial", X, y, [Candidate("1", (), np.arange(1))], labels)
    np.testing.assert_allclose(output.predictions[:, 0], 0.502, rtol=1e-12)
    fold_calls = [order for K, order in calls if K == 5]
    assert len(fold_calls) <= 2, fold_calls  # the known values, then at most one pass


def test_the_secant_update_matches_the_step_and_stays_symmetric():
    from pearlstats.engines.newton import _bfgs_update

    rng = np.random.default_rng(4)
    A = rng.normal(size=(3, 5, 5))
    H = A @ A.transpose(0, 2, 1) + 5 * np.eye(5)
    s = rng.normal(size=(3, 5))
    s[2] = 0.0  # a problem that did not move keeps its matrix
    B = rng.normal(size=(3, 5, 5))
    y = np.einsum("kij,kj->ki", B @ B.transpose(0, 2, 1) + np.eye(5), s)  # positive curvature
    out = _bfgs_update(H, s, y)
    # the secant equation (H+ s = y) to rounding of entries of order 10-100
    np.testing.assert_allclose(np.einsum("kij,kj->ki", out[:2], s[:2]), y[:2], atol=1e-10)
    np.testing.assert_allclose(out, out.transpose(0, 2, 1), atol=1e-12)
    np.testing.assert_array_equal(out[2], H[2])
    assert np.all(np.linalg.eigvalsh(out) > 0)
    assert _bfgs_update(H, s, -y) is None  # negative curvature: no update
