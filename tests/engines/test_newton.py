"""The batched Newton solver: optima against statsmodels, Hessian reuse, singular systems."""

from __future__ import annotations

import numpy as np
import statsmodels.api as sm
from scipy.special import expit

from pearlstats.engines.newton import batched_newton


def _logistic_objective(X, Y, counter):
    """Mean logistic negative log-likelihood for K problems sharing X, with Y (K, n); counts
    Hessians."""
    n = len(X)

    def objective(theta, order):
        eta = theta @ X.T
        f = np.mean(np.logaddexp(0.0, eta) - Y * eta, axis=1)
        if order == 0:
            return f
        mu = expit(eta)
        g = (mu - Y) @ X / n
        if order == 1:
            return f, g
        counter.append(len(theta))
        H = np.matmul(X.T[None] * (mu * (1 - mu))[:, None, :], X) / n
        return f, g, H

    return objective


def _problems(seed=0, n=400, K=4):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 5))])
    beta = rng.normal(scale=1.5, size=(K, X.shape[1]))
    Y = (rng.uniform(size=(K, n)) < expit(beta @ X.T)).astype(float)
    return X, Y


def test_reused_hessians_reach_statsmodels_optimum_with_fewer_hessians():
    X, Y = _problems()
    plain_count, reuse_count = [], []
    plain = batched_newton(
        _logistic_objective(X, Y, plain_count),
        np.zeros((len(Y), X.shape[1])),
        reuse_contraction=0.0,
    )
    reused = batched_newton(_logistic_objective(X, Y, reuse_count), np.zeros((len(Y), X.shape[1])))
    assert plain.converged.all() and reused.converged.all()
    for k, y in enumerate(Y):
        reference = sm.Logit(y, X).fit(method="newton", tol=1e-12, maxiter=100, disp=False).params
        np.testing.assert_allclose(plain.theta[k], reference, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(reused.theta[k], reference, rtol=1e-9, atol=1e-10)
    # Plain Newton forms a Hessian at every step; the default keeps one for the last steps.
    assert len(plain_count) == plain.iterations
    assert len(reuse_count) < len(plain_count)


def test_start_near_the_optimum_converges_in_few_hessians():
    X, Y = _problems(seed=1)
    first = batched_newton(_logistic_objective(X, Y, []), np.zeros((len(Y), X.shape[1])))
    # Drop 10% of the rows: the new optimum is near the old one, as for a CV fold.
    keep = np.random.default_rng(2).uniform(size=len(X)) > 0.1
    count = []
    refit = batched_newton(_logistic_objective(X[keep], Y[:, keep], count), first.theta)
    for k, y in enumerate(Y[:, keep]):
        reference = (
            sm.Logit(y, X[keep]).fit(method="newton", tol=1e-12, maxiter=100, disp=False).params
        )
        np.testing.assert_allclose(refit.theta[k], reference, rtol=1e-9, atol=1e-10)
    assert len(count) <= 4


def test_a_given_start_hessian_and_chord_runs_reach_statsmodels_optimum_with_fewer_hessians():
    # As for CV folds: start from the all-rows optimum with the all-rows fit's last Hessian.
    X, Y = _problems(seed=4)
    first = batched_newton(_logistic_objective(X, Y, []), np.zeros((len(Y), X.shape[1])))
    hessian0 = _logistic_objective(X, Y, [])(first.theta, 2)[2]
    keep = np.random.default_rng(5).uniform(size=len(X)) > 0.2
    objective = _logistic_objective(X[keep], Y[:, keep], cold := [])
    plain = batched_newton(objective, first.theta, reuse_contraction=0.0)
    warm = batched_newton(_logistic_objective(X[keep], Y[:, keep], count := []), first.theta,
                          reuse_contraction=0.3, max_chord=100, hessian0=hessian0)
    assert warm.converged.all()
    for k, y in enumerate(Y[:, keep]):
        reference = (
            sm.Logit(y, X[keep]).fit(method="newton", tol=1e-12, maxiter=100, disp=False).params
        )
        np.testing.assert_allclose(warm.theta[k], reference, rtol=1e-9, atol=1e-10)
    assert plain.converged.all() and len(count) < len(cold)


def test_singular_hessian_gives_minimum_norm_steps_and_is_flagged():
    X, Y = _problems(seed=3, K=2)
    duplicated = np.column_stack([X, X[:, 1]])  # column 1 twice: the Hessian is singular
    result = batched_newton(
        _logistic_objective(duplicated, Y, []), np.zeros((len(Y), duplicated.shape[1]))
    )
    assert result.singular.all() and result.converged.all()
    for k, y in enumerate(Y):
        reference = sm.Logit(y, X).fit(method="newton", tol=1e-12, maxiter=100, disp=False).params
        # Steps stay in the row space, so the two copies share the coefficient equally.
        np.testing.assert_allclose(result.theta[k, [1, -1]], [reference[1] / 2] * 2, rtol=1e-8)
        np.testing.assert_allclose(
            np.delete(result.theta[k], [1, 6]), np.delete(reference, 1), rtol=1e-8, atol=1e-10
        )


def test_penalised_objective_values_are_each_problems_own_in_the_line_search():
    # Backtracking evaluates the objective alone (order 0); it once gave every problem the
    # loss of problem 0 plus its own penalty, so folds 1..K-1 compared wrong values.
    from pearlstats.engines.newton import penalised_newton

    X, Y = _problems(seed=3)
    ridge, weights = 0.5, np.column_stack([np.zeros(len(Y)), np.ones((len(Y), 5))])
    theta = np.random.default_rng(1).normal(size=(len(Y), X.shape[1]))
    seen = {}

    def probe(objective, theta0, stop=None):
        seen["alone"] = objective(theta0, 0)
        seen["with_gradient"] = objective(theta0, 1)[0]
        return batched_newton(objective, theta0)

    penalised_newton(_logistic_objective(X, Y, []), theta, ridge, weights, newton=probe)
    eta = theta @ X.T  # the solver sees u = theta / r, and the loss r * u = theta
    direct = np.mean(np.logaddexp(0.0, eta) - Y * eta, axis=1)
    direct += 0.5 * ridge * np.sum(weights * theta**2, axis=1)
    np.testing.assert_allclose(seen["alone"], direct, rtol=1e-12)
    np.testing.assert_allclose(seen["with_gradient"], direct, rtol=1e-12)
