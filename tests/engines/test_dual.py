"""Wide candidates of a sparse design: fitted in the row space (the n x n dual) with a ridge,
screened from their shape without one.

The dual fits are checked against the primal engines on the same problem held dense and
against direct computations that share no code with either: the closed-form ridge in numpy
(gaussian) and scipy's exact trust-region minimiser of the primal objective (logistic,
Poisson).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit, logsumexp, softmax

from pearlstats.design.candidates import Candidate
from pearlstats.engines.glm import glm_cv_predict, glm_fit
from pearlstats.engines.multinomial import class_probabilities, multinomial_cv_predict
from pearlstats.engines.ols import ols_cv_predict, ols_fit
from pearlstats.families import EncodedResponse, get_family

N, P, K = 40, 60, 4


def _problem(kind: str, seed: int = 0):
    """Intercept, a covariate with a large mean, and a sparse 60-column block (p > n)."""
    rng = np.random.default_rng(seed)
    block = rng.random((N + 5, P)) * (rng.random((N + 5, P)) < 0.3)
    X = np.column_stack([np.ones(N + 5), 50 + 3 * rng.normal(size=N + 5), block])
    eta = 0.1 * (X[:, 1] - 50) + block[:, :3].sum(axis=1) - 0.7
    y = {
        "gaussian": eta + rng.normal(size=N + 5),
        "binomial": (rng.random(N + 5) < expit(eta)).astype(float),
        "poisson": rng.poisson(np.exp(0.5 * eta)).astype(float),
    }[kind]
    # the first N rows are fitted; the last 5 are new rows to predict
    return X[:N], y[:N], X[N:]


def _mean(kind: str, eta: np.ndarray) -> np.ndarray:
    return {"gaussian": eta, "binomial": expit(eta), "poisson": np.exp(eta)}[kind]


def _primal_objective(kind, X, y, ridge):
    """The engines' documented objective on original coefficients: mean loss + ridge/2 sum
    (sd_j b_j)^2 over the non-intercept columns (sd over the fitted rows; here no column is
    constant)."""
    sd2 = X.var(axis=0)
    sd2[0] = 0.0

    def value(b):
        eta = X @ b
        loss = {"gaussian": 0.5 * (y - eta) ** 2, "binomial": np.logaddexp(0, eta) - y * eta,
                "poisson": np.exp(eta) - y * eta}[kind]
        return loss.mean() + 0.5 * ridge * np.sum(sd2 * b**2)

    def gradient(b):
        mu = _mean(kind, X @ b)
        return X.T @ (mu - y) / len(y) + ridge * sd2 * b

    def hessian(b):
        mu = _mean(kind, X @ b)
        var = {"gaussian": np.ones_like(mu), "binomial": mu * (1 - mu), "poisson": mu}[kind]
        return (X.T * var) @ X / len(y) + ridge * np.diag(sd2)

    return value, gradient, hessian


def _direct_fit(kind, X, y, ridge):
    """The primal optimum without pearlstats: closed form (gaussian) or scipy trust-exact."""
    if kind == "gaussian":
        sd2 = X.var(axis=0)
        sd2[0] = 0.0
        return np.linalg.solve(X.T @ X / len(y) + ridge * np.diag(sd2), X.T @ y / len(y))
    value, gradient, hessian = _primal_objective(kind, X, y, ridge)
    start = np.zeros(X.shape[1])
    start[0] = np.log(y.mean()) if kind == "poisson" else 0.0
    b = minimize(value, start, jac=gradient, hess=hessian, method="trust-exact",
                 options={"gtol": 1e-12, "maxiter": 500}).x
    for _ in range(5):  # a few full Newton steps polish what trust-exact left (quadratic there)
        b = b - np.linalg.solve(hessian(b), gradient(b))
    assert np.max(np.abs(gradient(b))) < 1e-12
    return b


def _cv_dense(kind, X, y, candidates, folds, ridge):
    if kind == "gaussian":
        return ols_cv_predict(X, y, candidates, folds, ridge)
    return glm_cv_predict(kind, X, y, candidates, folds, ridge)


def _fit_dense(kind, X, y, columns, ridge):
    return ols_fit(X, y, columns, ridge) if kind == "gaussian" else glm_fit(kind, X, y, columns,
                                                                             ridge)[0]


@pytest.mark.parametrize("ridge", [0.05, 2.0])
@pytest.mark.parametrize("kind", ["gaussian", "binomial", "poisson"])
def test_dual_equals_the_primal_ridge_out_of_fold_and_on_new_rows(kind, ridge):
    X, y, X_new = _problem(kind)
    folds = np.arange(N) % K
    full = Candidate("cov+block", ("block",), np.arange(X.shape[1]))
    family = get_family(kind)
    response = EncodedResponse(y)
    # sparse: p = 62 >= 30 training rows, so the family routes it to the row space
    dual = family.cv_predict(sp.csr_matrix(X), response, [full], folds, ridge)
    assert not dual.failed.any()
    primal = _cv_dense(kind, X, y, [full], folds, ridge)
    np.testing.assert_allclose(dual.predictions, primal.predictions, rtol=0, atol=1e-8)
    direct = np.empty(N)
    for k in range(K):
        b = _direct_fit(kind, X[folds != k], y[folds != k], ridge)
        direct[folds == k] = _mean(kind, X[folds == k] @ b)
    np.testing.assert_allclose(dual.predictions[:, 0], direct, rtol=0, atol=1e-8)
    # the refit on all rows, and its predictions for new rows
    params, notes = family.fit_params(sp.csr_matrix(X), response, full.columns, ridge, full.label)
    assert notes == []
    new = family.predict(params, sp.csr_matrix(X_new))
    reference = _mean(kind, X_new @ _direct_fit(kind, X, y, ridge))
    np.testing.assert_allclose(new, reference, rtol=0, atol=1e-8)
    dense = _mean(kind, X_new @ _fit_dense(kind, X, y, full.columns, ridge))
    np.testing.assert_allclose(new, dense, rtol=0, atol=1e-8)


def test_dual_without_an_intercept_and_with_a_column_constant_over_training_rows():
    """No intercept: nothing is centred, and a column constant over a fold's training rows is
    penalised with its all-rows scale, as in the primal engine."""
    X, y, _ = _problem("gaussian")
    X = X[:, 1:].copy()
    X[:N // K, 5] = 0.0
    X[N // K:, 5] = 2.0  # constant 2 outside fold 0
    folds = np.arange(N) // (N // K)
    candidate = Candidate("block", ("block",), np.arange(X.shape[1]))
    dual = get_family("gaussian").cv_predict(sp.csr_matrix(X), EncodedResponse(y), [candidate],
                                             folds, 0.3)
    primal = ols_cv_predict(X, y, [candidate], folds, 0.3)
    np.testing.assert_allclose(dual.predictions, primal.predictions, rtol=0, atol=1e-8)


def test_narrow_candidates_of_a_sparse_design_equal_the_dense_engine():
    X, y, _ = _problem("binomial")
    folds = np.arange(N) % K
    candidates = [Candidate("cov", (), np.array([0, 1])),
                  Candidate("few", ("b",), np.array([0, 1, 7, 9, 30]))]
    sparse = get_family("binomial").cv_predict(sp.csr_matrix(X), EncodedResponse(y), candidates,
                                               folds, 0.0)
    dense = glm_cv_predict("binomial", X, y, candidates, folds, 0.0)
    np.testing.assert_allclose(sparse.predictions, dense.predictions, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["gaussian", "binomial", "poisson", "multinomial"])
def test_without_a_ridge_wide_candidates_are_screened_with_the_reason(kind):
    X, y, _ = _problem("poisson" if kind == "poisson" else "binomial")
    family = get_family(kind).configured(separation="drop")
    response = EncodedResponse(y.astype(np.intp), [0, 1]) if kind == "multinomial" else \
        EncodedResponse(y)
    candidates = [Candidate("cov", (), np.array([0, 1])),
                  Candidate("wide", ("b",), np.arange(X.shape[1]))]
    out = family.cv_predict(sp.csr_matrix(X), response, candidates, np.arange(N) % K, 0.0)
    assert out.failed.tolist() == [False, True]
    assert np.isnan(out.predictions[:, 1]).all() and np.isfinite(out.predictions[:, 0]).all()
    (entry,) = [e for e in out.entries if e.candidate == "wide"]
    assert entry.kind == "infeasible" and entry.excluded
    assert "62 parameters but only 30 training rows" in entry.reason
    assert "ridge > 0" in entry.action and "fewer columns" in entry.action


def test_logistic_separation_ridge_starts_wide_candidates_on_the_ladder():
    X, y, _ = _problem("binomial")
    family = get_family("binomial").configured(separation="ridge")
    wide = Candidate("wide", ("b",), np.arange(X.shape[1]))
    out = family.cv_predict(sp.csr_matrix(X), EncodedResponse(y), [wide], np.arange(N) % K, 0.0)
    assert not out.failed.any() and out.ridges.tolist() == [1e-4]
    (entry,) = out.entries
    assert entry.kind == "separation" and "ridge=0.0001" in entry.action and not entry.excluded
    primal = glm_cv_predict("binomial", X, y, [wide], np.arange(N) % K, 1e-4)
    np.testing.assert_allclose(out.predictions, primal.predictions, rtol=0, atol=1e-8)


def _direct_multinomial(X, codes, n_classes, ridge):
    """The primal multinomial ridge optimum (class 0 the reference) by scipy's trust-exact,
    polished by full Newton steps: mean softmax loss + ridge/2 sum_j sd_j^2 sum_c b_jc^2."""
    n, s = X.shape
    m = n_classes - 1
    onehot = np.eye(n_classes)[codes]
    sd2 = X.var(axis=0)
    sd2[0] = 0.0
    penalty = np.tile(sd2, m)  # coefficients stacked class by class

    def probabilities(theta):
        eta = np.column_stack([np.zeros(n), X @ theta.reshape(m, s).T])
        return softmax(eta, axis=1)

    def value(theta):
        eta = np.column_stack([np.zeros(n), X @ theta.reshape(m, s).T])
        loss = logsumexp(eta, axis=1) - np.sum(onehot * eta, axis=1)
        return loss.mean() + 0.5 * ridge * np.sum(penalty * theta**2)

    def gradient(theta):
        G = probabilities(theta)[:, 1:] - onehot[:, 1:]
        return (X.T @ G / n).T.ravel() + ridge * penalty * theta

    def hessian(theta):
        P = probabilities(theta)[:, 1:]
        H = np.empty((m * s, m * s))
        for c in range(m):
            for d in range(m):
                w = P[:, c] * ((c == d) - P[:, d]) / n
                H[c * s:(c + 1) * s, d * s:(d + 1) * s] = (X.T * w) @ X
        return H + ridge * np.diag(penalty)

    theta = minimize(value, np.zeros(m * s), jac=gradient, hess=hessian, method="trust-exact",
                     options={"gtol": 1e-12, "maxiter": 500}).x
    for _ in range(5):
        theta = theta - np.linalg.solve(hessian(theta), gradient(theta))
    assert np.max(np.abs(gradient(theta))) < 1e-12
    return theta.reshape(m, s).T


@pytest.mark.parametrize("ridge", [0.05, 1.0])
def test_multinomial_dual_equals_the_primal_ridge(ridge):
    X, y, X_new = _problem("binomial")
    codes = (y + (X[:, 2] > 0.3)).astype(np.intp)
    folds = np.arange(N) % K
    wide = Candidate("wide", ("b",), np.arange(X.shape[1]))
    family, response = get_family("multinomial"), EncodedResponse(codes, [0, 1, 2])
    out = family.cv_predict(sp.csr_matrix(X), response, [wide], folds, ridge)
    primal = multinomial_cv_predict(X, codes, 3, [wide], folds, ridge)
    assert not out.failed.any() and out.predictions.shape == (N, 1, 3)
    np.testing.assert_allclose(out.predictions, primal.predictions, rtol=0, atol=1e-8)
    direct = np.empty((N, 3))
    for k in range(K):
        b = _direct_multinomial(X[folds != k], codes[folds != k], 3, ridge)
        direct[folds == k] = class_probabilities(b, X[folds == k])
    np.testing.assert_allclose(out.predictions[:, 0], direct, rtol=0, atol=1e-8)
    params, _ = family.fit_params(sp.csr_matrix(X), response, wide.columns, ridge, wide.label)
    np.testing.assert_allclose(family.predict(params, sp.csr_matrix(X_new)),
                               class_probabilities(_direct_multinomial(X, codes, 3, ridge), X_new),
                               rtol=0, atol=1e-8)


def test_dual_is_invariant_to_the_block_scale_and_the_candidate_order():
    X, y, _ = _problem("binomial")
    folds = np.arange(N) % K
    family, response = get_family("binomial"), EncodedResponse(y)
    candidates = [Candidate("wide", ("b",), np.arange(X.shape[1])),
                  Candidate("block", ("b",), np.arange(2, X.shape[1]))]
    out = family.cv_predict(sp.csr_matrix(X), response, candidates, folds, 0.2)
    scaled = X.copy()
    scaled[:, 2:] *= 1e3
    again = family.cv_predict(sp.csr_matrix(scaled), response, candidates[::-1], folds, 0.2)
    np.testing.assert_allclose(again.predictions[:, ::-1], out.predictions, rtol=0, atol=1e-10)
