"""Penalised multinomial fits by preconditioned Newton-CG reach the penalised optimum.

The reference is an independent minimisation of the objective written out here (scipy's
trust-region Newton-CG on the mean cross-entropy plus ``ridge / 2`` times the squared
coefficients of the training-standardised columns, reference-class parametrisation).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from pearlstats.design.candidates import build_candidates
from pearlstats.design.folds import make_folds
from pearlstats.engines import multinomial
from pearlstats.engines.multinomial import multinomial_cv_predict, multinomial_fit
from pearlstats.engines.newton_cg import Preconditioner, newton_cg

N, C = 240, 4


def _problem(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(N, 3)) * [1.0, 30.0, 0.01]  # units far apart: standardisation matters
    b = rng.normal(size=(N, 4))
    X = np.column_stack([np.ones(N), a, b])
    eta = np.column_stack([np.zeros(N), a[:, 0] - b[:, 1], 0.05 * a[:, 1] + b[:, 2],
                           80 * a[:, 2] - b[:, 0]])
    codes = np.array([rng.choice(C, p=p) for p in softmax(2 * eta, axis=1)])
    candidates = build_candidates("all", {"a": slice(1, 4), "b": slice(4, 8)},
                                  [f"c{i}" for i in range(8)], 1)
    return X, codes, candidates


def _scipy_probabilities(X_train, codes, X_new, ridge):
    """Held-out class probabilities of the penalised fit minimised by scipy."""
    mean, sd = X_train.mean(axis=0), X_train.std(axis=0)
    Z = np.column_stack([np.ones(len(X_train)), (X_train - mean) / sd])
    onehot = np.eye(C)[codes]
    shape = (Z.shape[1], C - 1)

    def predictors(B, rows):
        return np.column_stack([np.zeros(len(rows)), rows @ B])

    def fun(flat):
        B = flat.reshape(shape)
        logp = log_softmax(predictors(B, Z), axis=1)
        grad = Z.T @ (np.exp(logp) - onehot)[:, 1:] / len(Z)
        grad[1:] += ridge * B[1:]
        value = -np.mean(np.sum(onehot * logp, axis=1)) + ridge / 2 * np.sum(B[1:] ** 2)
        return value, grad.ravel()

    def hessp(flat, vector):
        p = softmax(predictors(flat.reshape(shape), Z), axis=1)
        V = vector.reshape(shape)
        A = predictors(V, Z)
        HV = Z.T @ (p * (A - np.sum(p * A, axis=1, keepdims=True)))[:, 1:] / len(Z)
        HV[1:] += ridge * V[1:]
        return HV.ravel()

    x = minimize(fun, np.zeros(np.prod(shape)), jac=True, hessp=hessp, method="trust-ncg",
                 options={"gtol": 1e-12}).x
    for _ in range(3):  # polish with full Newton steps (the Hessian from its columns)
        H = np.column_stack([hessp(x, e) for e in np.eye(x.size)])
        x = x - np.linalg.solve(H, fun(x)[1])
    assert np.linalg.norm(fun(x)[1]) < 1e-13
    new = np.column_stack([np.ones(len(X_new)), (X_new - mean) / sd])
    return softmax(predictors(x.reshape(shape), new), axis=1)


@pytest.mark.parametrize("ridge", [1e-3, 0.5])
def test_fold_fits_reach_the_penalised_optimum_of_an_independent_scipy_fit(ridge):
    X, codes, candidates = _problem(0)
    folds = make_folds(4, N, seed=3, strata=codes)
    out = multinomial_cv_predict(X, codes, C, candidates, folds, ridge)
    assert not out.failed.any()
    for j, candidate in enumerate(candidates):
        columns = candidate.columns[1:]  # without the intercept, which the reference adds
        for k in range(4):
            train = folds != k
            expected = _scipy_probabilities(X[train][:, columns], codes[train],
                                            X[~train][:, columns], ridge)
            np.testing.assert_allclose(out.predictions[~train, j], expected, rtol=0, atol=1e-8)


def test_all_rows_fit_reaches_the_penalised_optimum_of_an_independent_scipy_fit():
    X, codes, candidates = _problem(1)
    columns = candidates[-1].columns
    params, entries = multinomial_fit(X, codes, C, columns, ridge=1e-3)
    assert entries == []
    ours = softmax(np.column_stack([np.zeros(N), X[:, columns] @ params]), axis=1)
    expected = _scipy_probabilities(X[:, columns[1:]], codes, X[:, columns[1:]], 1e-3)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-8)


def test_the_penalised_fits_use_newton_cg_and_nested_starts(monkeypatch):
    """The scheme tested above is the one that runs: every penalised solve goes through
    newton_cg, and a candidate's all-rows fit starts from a smaller one's optimum."""
    X, codes, candidates = _problem(2)
    folds = make_folds(3, N, seed=0)
    starts = []

    def recording(objective, theta0, *args, **kwargs):
        starts.append(bool(theta0.any()))
        return newton_cg(objective, theta0, *args, **kwargs)

    monkeypatch.setattr(multinomial, "newton_cg", recording)
    multinomial_cv_predict(X, codes, C, candidates, folds, 1e-2)
    # per candidate: the all-rows fit, then the fold fits (from the all-rows optimum)
    assert len(starts) == 2 * len(candidates)
    # "a" and "b" share only the intercept: both start from zero; "a+b" from the larger one.
    assert [c.label for c in candidates] == ["a", "b", "a+b"]
    assert starts[0::2] == [False, False, True]
    assert all(starts[1::2])


def test_a_refit_does_not_depend_on_what_the_process_fitted_before():
    """Determinism: the all-rows fit is the same bits before and after the cross-validation of
    the same problem (no optimum is carried between calls)."""
    X, codes, candidates = _problem(3)
    columns = candidates[-1].columns
    fresh, _ = multinomial_fit(X, codes, C, columns, ridge=1e-2)
    multinomial_cv_predict(X, codes, C, candidates, make_folds(3, N, seed=0), 1e-2)
    again, _ = multinomial_fit(X, codes, C, columns, ridge=1e-2)
    np.testing.assert_array_equal(again, fresh)


def test_newton_cg_with_a_poor_preconditioner_still_reaches_the_optimum():
    """An identity preconditioner for badly scaled quadratics-plus-softplus problems: the
    conjugate gradients refresh it from the exact curvature and every problem converges."""
    rng = np.random.default_rng(4)
    K, d = 3, 12
    scales = np.logspace(-2, 2, d)
    A = rng.normal(size=(K, 50, d)) * scales
    b = rng.normal(size=(K, 50))

    def objective(theta, order):
        eta = np.einsum("knd,kd->kn", A, theta)
        f = np.logaddexp(0, eta).sum(axis=1) - np.einsum("kn,kn->k", b, eta)
        f += 0.5 * np.sum(theta**2, axis=1)
        if order == 0:
            return f
        p = 1 / (1 + np.exp(-eta))
        g = np.einsum("knd,kn->kd", A, p - b) + theta
        w = p * (1 - p)
        return f, g, lambda V: np.einsum("knd,kn->kd", A, w * np.einsum("knd,kd->kn", A, V)) + V

    def curvature(theta):
        eta = np.einsum("knd,kd->kn", A, theta)
        w = 1 / (1 + np.exp(-eta)) / (1 + np.exp(eta))
        return Preconditioner(np.einsum("knd,kn,kne->kde", A, w, A) + np.eye(d))

    result = newton_cg(objective, np.zeros((K, d)), Preconditioner(np.eye(d)), curvature)
    assert result.converged.all()
    for k in range(K):
        reference = minimize(lambda t: objective(np.tile(t, (K, 1)), 0)[k], np.zeros(d),
                             jac=lambda t: objective(np.tile(t, (K, 1)), 1)[1][k],
                             method="BFGS", options={"gtol": 1e-10}).x
        np.testing.assert_allclose(result.theta[k], reference, rtol=1e-6, atol=1e-8)


def test_preconditioner_inverts_in_single_precision_and_falls_back_when_it_cannot():
    rng = np.random.default_rng(5)
    B = rng.normal(size=(6, 6))
    M = B @ B.T + np.eye(6)
    R = rng.normal(size=(2, 6))
    np.testing.assert_allclose(Preconditioner(M)(R), np.linalg.solve(M, R.T).T, rtol=1e-4)
    # Singular to single precision: factored in double precision with a floored spectrum.
    v = rng.normal(size=6)
    near = np.outer(v, v) + 1e-12 * np.eye(6)
    out = Preconditioner(near)(R)
    assert np.isfinite(out).all()
    assert np.all(np.einsum("kd,kd->k", R, out) > 0)


def test_a_line_search_that_stops_the_last_moving_problem_ends_the_iterations():
    """Class 3 is the two rows of largest a0 (separated): on the separation ladder the last
    moving problem's line search found no lower point, every problem was then converged, and
    the next iteration's forcing term took the minimum of an empty selection (numpy's
    ValueError from pearl.fit). The fit now ends there and the ladder goes on."""
    import warnings

    import pearlstats as pearl

    rng = np.random.default_rng(12)
    n = 500
    a, b, x = rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=n)
    y = rng.integers(0, 3, size=n)
    y[np.argsort(a[:, 0])[-2:]] = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pearl.fit("y ~ block(a) + block(b) + x", {"y": y, "x": x, "a": a, "b": b},
                        family="multinomial", honest=False, seed=0, candidates="all")
    assert "separation" in set(res.failures.loc[res.failures.candidate == "a+b", "kind"])
    assert np.isclose(res.weights.sum(), 1.0)
