"""The ridge penalty: standardised by training rows, invariant to shifts and scales, sane at the
extremes."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import expit

from pearlstats.design.candidates import build_candidates
from pearlstats.design.folds import make_folds
from pearlstats.engines._common import MAX_RIDGE, check_ridge, ridge_penalty_weights
from pearlstats.engines.glm import glm_cv_predict, glm_fit
from pearlstats.engines.multinomial import multinomial_cv_predict, multinomial_fit
from pearlstats.engines.ols import ols_cv_predict, ols_fit
from pearlstats.exceptions import OptionError

N = 120


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(N, 2)) * [1.0, 5.0], rng.normal(size=(N, 3))
    X = np.column_stack([np.ones(N), a, b])
    candidates = build_candidates(
        "all", {"a": slice(1, 3), "b": slice(3, 6)}, [f"c{i}" for i in range(6)], 1
    )
    eta = 0.8 * a[:, 0] - 0.1 * a[:, 1] + 0.5 * b[:, 2]
    return rng, X, candidates, eta


def _responses(rng, eta):
    return {
        "gaussian": eta + rng.normal(size=N),
        "binomial": (rng.random(N) < expit(eta)).astype(float),
        "poisson": rng.poisson(np.exp(0.5 * eta)).astype(float),
        "multinomial": np.digitize(eta + rng.normal(size=N), [-0.5, 0.5]),
    }


def _cv(family, X, y, candidates, folds, ridge):
    if family == "gaussian":
        return ols_cv_predict(X, y, candidates, folds, ridge).predictions
    if family == "multinomial":
        return multinomial_cv_predict(X, y, 3, candidates, folds, ridge).predictions
    return glm_cv_predict(family, X, y, candidates, folds, ridge).predictions


def _fit(family, X, y, columns, ridge):
    if family == "gaussian":
        return ols_fit(X, y, columns, ridge)
    if family == "multinomial":
        return multinomial_fit(X, y, 3, columns, ridge)[0]
    return glm_fit(family, X, y, columns, ridge)[0]


FAMILIES = ["gaussian", "binomial", "poisson", "multinomial"]


@pytest.mark.parametrize("family", FAMILIES)
def test_ridge_fit_is_invariant_to_shifting_or_rescaling_a_block_column(family):
    rng, X, candidates, eta = _problem(1)
    y = _responses(rng, eta)[family]
    folds = make_folds(4, N, seed=0)
    columns = candidates[-1].columns
    base_cv, base_params = (
        _cv(family, X, y, candidates, folds, 0.5),
        _fit(family, X, y, columns, 0.5),
    )
    for column, shift, factor in [(1, 10.0, 1.0), (4, -250.0, 1.0), (2, 0.0, 1e3), (5, 3.0, 1e-4)]:
        moved = X.copy()
        moved[:, column] = moved[:, column] * factor + shift
        np.testing.assert_allclose(
            _cv(family, moved, y, candidates, folds, 0.5), base_cv, rtol=1e-8, atol=1e-10
        )
        params = _fit(family, moved, y, columns, 0.5)
        # the coefficient of the moved column scales by 1/factor; the shift goes into the intercept
        # only
        expected = np.array(base_params, dtype=float, copy=True)
        expected[column] = expected[column] / factor
        np.testing.assert_allclose(np.delete(params, [0, column], axis=0),
                                   np.delete(expected, [0, column], axis=0), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(params[column], expected[column], rtol=1e-8)


@pytest.mark.parametrize("family", FAMILIES)
def test_fold_scales_use_training_rows_only(family):
    """Changing a held-out row's value changes nothing about that fold's coefficients."""
    rng, X, candidates, eta = _problem(2)
    y = _responses(rng, eta)[family]
    folds = make_folds(4, N, seed=0)
    held = np.flatnonzero(folds == 2)
    changed = X.copy()
    changed[held[0], 4] = (
        40.0  # an outlier in fold 2's held-out rows: its SD over all rows grows a lot
    )
    before = _cv(family, X, y, candidates, folds, 1.0)
    after = _cv(family, changed, y, candidates, folds, 1.0)
    np.testing.assert_allclose(after[held[1:]], before[held[1:]], rtol=1e-8, atol=1e-12)


def _penalised_fit_by_scipy(loss, X, y, ridge):
    """Minimise mean loss + ridge/2 ||gamma||^2 on training-standardised columns (plus a free
    intercept) by scipy's trust-region Newton method on the exact gradient and Hessian.

    *loss* is ``(mean loss, d loss / d eta, d2 loss / d eta2)`` of the linear predictor. Returns
    the predictor of new rows and the bound on each new row's prediction error: ``||(1, z)||``
    times the distance of either solver's stop from the optimum, ten times over. For this strongly
    convex objective that distance is at most ``||H^-1||`` times the gradient's size there:
    scipy's final gradient, the rounding of a gradient sum (``eps |Z|'|r| / n``, met by both
    solvers), and the engine's stop (a Newton decrement of 1e-20 ``max(1, |f|)``, i.e. a distance
    of at most ``sqrt(2e-20 max(1, |f|) / lambda_min)``), plus the rounding of a solve with
    condition number cond(H).
    """
    value, first, second = loss
    mean, sd = X.mean(axis=0), X.std(axis=0)
    Z = np.column_stack([np.ones(len(X)), (X - mean) / sd])
    penalty = ridge * np.r_[0.0, np.ones(X.shape[1])]

    def objective(theta):
        return value(Z @ theta, y) + 0.5 * theta @ (penalty * theta)

    def gradient(theta):
        return Z.T @ first(Z @ theta, y) / len(y) + penalty * theta

    def hessian(theta):
        return (Z.T * second(Z @ theta)) @ Z / len(y) + np.diag(penalty)

    theta = minimize(objective, np.zeros(Z.shape[1]), jac=gradient, hess=hessian,
                     method="trust-exact", options={"gtol": 1e-14}).x
    curvature = np.linalg.eigvalsh(hessian(theta))
    eps = np.finfo(float).eps
    gradient_rounding = eps * np.abs(Z).T @ np.abs(first(Z @ theta, y)) / len(y)
    error = ((np.linalg.norm(gradient(theta)) + 2 * np.linalg.norm(gradient_rounding))
             / curvature[0]
             + np.sqrt(2e-20 * max(1.0, abs(objective(theta))) / curvature[0])
             + curvature[-1] / curvature[0] * eps * np.linalg.norm(theta))

    def predictor(new):
        Znew = np.column_stack([np.ones(len(new)), (new - mean) / sd])
        return Znew @ theta, 10 * error * np.linalg.norm(Znew, axis=1)

    return predictor


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_out_of_fold_ridge_predictions_equal_a_penalised_fit_per_fold(family):
    rng, X, candidates, eta = _problem(3)
    y = _responses(rng, eta)[family]
    folds = make_folds(3, N, seed=1)
    ridge = 0.2
    # (mean loss, its derivative and second derivative in the linear predictor, inverse link)
    losses = {
        "gaussian": (lambda f, t: 0.5 * np.mean((t - f) ** 2), lambda f, t: f - t,
                     np.ones_like, lambda f: f),
        "binomial": (lambda f, t: np.mean(np.logaddexp(0, f) - t * f), lambda f, t: expit(f) - t,
                     lambda f: expit(f) * expit(-f), expit),
        "poisson": (lambda f, t: np.mean(np.exp(f) - t * f), lambda f, t: np.exp(f) - t,
                    np.exp, np.exp),
    }
    *loss, inverse_link = losses[family]
    out = _cv(family, X, y, candidates, folds, ridge)
    columns = candidates[-1].columns[1:]
    for k in range(3):
        train = folds != k
        eta, eta_error = _penalised_fit_by_scipy(loss, X[train][:, columns], y[train], ridge)(
            X[~train][:, columns])
        # the engine's own Newton decrement stops at 1e-20 relative: scipy's stop sets the bound,
        # carried to the mean scale by the inverse link's slope (at most 1 for expit, e^eta for exp)
        slope = {"gaussian": 1.0, "binomial": 0.25, "poisson": np.exp(eta + eta_error)}[family]
        np.testing.assert_array_less(np.abs(out[~train, -1] - inverse_link(eta)),
                                     slope * eta_error + 1e-300)


def test_gaussian_ridge_equals_closed_form_with_fold_scales():
    rng, X, candidates, eta = _problem(4)
    y = eta + rng.normal(size=N)
    folds = make_folds(5, N, seed=2)
    ridge = 0.7
    out = ols_cv_predict(X, y, candidates, folds, ridge).predictions
    for k in range(5):
        train = folds != k
        Z = X[train][:, 1:]
        mean, sd = Z.mean(axis=0), Z.std(axis=0)
        Zs = np.column_stack([np.ones(train.sum()), (Z - mean) / sd])
        gamma = np.linalg.solve(
            Zs.T @ Zs + ridge * train.sum() * np.diag(np.r_[0.0, np.ones(5)]), Zs.T @ y[train]
        )
        expected = gamma[0] + ((X[~train][:, 1:] - mean) / sd) @ gamma[1:]
        np.testing.assert_allclose(out[~train, -1], expected, rtol=1e-10)


@pytest.mark.parametrize("family", FAMILIES)
def test_more_ridge_never_means_less_shrinkage_and_huge_ridge_is_the_intercept_only_fit(family):
    rng, X, candidates, eta = _problem(5)
    y = _responses(rng, eta)[family]
    columns = candidates[-1].columns
    norms, last = [], None
    for exponent in range(-8, 301, 4):
        last = np.asarray(_fit(family, X, y, columns, 10.0**exponent), dtype=float)
        assert np.isfinite(last).all()
        norms.append(np.linalg.norm(np.delete(last, 0, axis=0)))
    assert all(b <= a * (1 + 1e-9) + 1e-300 for a, b in zip(norms, norms[1:])), norms
    assert norms[-1] < 1e-250
    # intercept never penalised: the huge-ridge fit is the intercept-only fit
    if family == "gaussian":
        np.testing.assert_allclose(last[0], y.mean(), rtol=1e-12)
    elif family == "binomial":
        np.testing.assert_allclose(expit(last[0]), y.mean(), rtol=1e-8)
    elif family == "poisson":
        np.testing.assert_allclose(np.exp(last[0]), y.mean(), rtol=1e-8)
    else:
        counts = np.bincount(y)  # intercept-only multinomial: log-odds of the class frequencies
        np.testing.assert_allclose(last[0], np.log(counts[1:] / counts[0]), rtol=1e-8)
    huge = _cv(family, X, y, candidates, make_folds(4, N, seed=0), MAX_RIDGE)
    assert np.isfinite(huge).all()


@pytest.mark.parametrize("ridge", [1e-14, 1e-12])
def test_a_tiny_gaussian_ridge_on_nearly_collinear_columns_keeps_its_penalty(ridge):
    """Columns z and z + 1e-6 u: the penalised system's condition is about 1 / ridge, which the
    Cholesky check flags, and the fallback solved the *unpenalised* minimum-norm problem
    (fitted values off by 2.4 of sd(y) 1.6; weights moved 0.41). The penalised optimum is
    unique: QR on the augmented rows [Z; sqrt(ridge n) I] (condition ~ 1 / sqrt(ridge), so
    about 1e7 eps relative, hence 1e-7) is the reference, per fold and on all rows."""
    rng = np.random.default_rng(3)
    n = 200
    z, u, x = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    X = np.column_stack([np.ones(n), x, z, z + 1e-6 * u])
    y = u + x + 0.5 * rng.normal(size=n)
    candidates = build_candidates("all", {"a": slice(2, 4)}, ["1", "x", "a0", "a1"], 2)
    folds = make_folds(5, n, seed=1)

    def penalised(rows, new_rows):
        Z = X[rows][:, 1:]
        mean, sd = Z.mean(axis=0), Z.std(axis=0)
        Zs = np.column_stack([np.ones(rows.sum()), (Z - mean) / sd])
        root = np.sqrt(ridge * rows.sum()) * np.diag(np.r_[0.0, np.ones(3)])
        gamma = np.linalg.lstsq(np.vstack([Zs, root]), np.r_[y[rows], np.zeros(4)],
                                rcond=None)[0]
        return gamma[0] + ((X[new_rows][:, 1:] - mean) / sd) @ gamma[1:]

    out = ols_cv_predict(X, y, candidates, folds, ridge)
    assert not [e for e in out.entries if e.kind == "rank deficient"]
    for k in range(5):
        train = folds != k
        np.testing.assert_allclose(out.predictions[~train, -1], penalised(train, ~train),
                                   rtol=0, atol=1e-7)
    everything = np.ones(n, dtype=bool)
    np.testing.assert_allclose(X[:, candidates[-1].columns] @ ols_fit(X, y, candidates[-1].columns,
                                                                     ridge),
                               penalised(everything, everything), rtol=0, atol=1e-7)


def test_gaussian_ridge_1e10_shrinks_instead_of_falling_back_to_least_squares():
    rng, X, candidates, eta = _problem(6)
    y = eta + rng.normal(size=N)
    beta = ols_fit(X, y, candidates[-1].columns, 1e10)
    assert (
        np.abs(beta[1:]).max() < 1e-8 * np.abs(ols_fit(X, y, candidates[-1].columns, 0.0)[1:]).max()
    )


@pytest.mark.parametrize("value", [0, 2, 0.5, np.float32(0.25), np.int64(3), np.float64(1e300)])
def test_check_ridge_accepts_real_numbers(value):
    assert check_ridge(value) == float(value) and isinstance(check_ridge(value), float)


@pytest.mark.parametrize("value, message", [
    (True, "ridge=True; use a non-negative number"),
    (-1.0, r"ridge=-1\.0; use a non-negative number"),
    (float("nan"), "ridge=nan"),
    (float("inf"), "ridge=inf"),
    ("0.1", "ridge='0.1'"),
    (1e301, "above the largest accepted value 1e\\+300"),
])
def test_check_ridge_refuses_with_the_bound(value, message):
    with pytest.raises(OptionError, match=message):
        check_ridge(value)


def test_fit_validates_ridge_through_check_ridge():
    import pearlstats as pearl

    rng = np.random.default_rng(0)
    data = {"y": rng.normal(size=30), "a": rng.normal(size=(30, 2))}
    with pytest.raises(OptionError, match="largest accepted value"):
        pearl.fit("y ~ block(a)", data, ridge=1e305, seed=0)
    res = pearl.fit("y ~ block(a)", data, ridge=np.float32(0.5), seed=0)
    assert res.ridge == 0.5 and isinstance(res.ridge, float)


def test_statsmodels_penalty_weights_reproduce_the_engines_refit():
    rng, X, candidates, eta = _problem(7)
    y = eta + rng.normal(size=N)
    columns = candidates[-1].columns
    alpha = 0.3 * ridge_penalty_weights(X[:, columns])
    assert alpha[0] == 0.0
    np.testing.assert_allclose(alpha[1:], 0.3 * X[:, columns[1:]].var(axis=0), rtol=1e-12)
    reference = sm.OLS(y, X[:, columns]).fit_regularized(alpha=alpha, L1_wt=0.0).params
    np.testing.assert_allclose(ols_fit(X, y, columns, 0.3), reference, rtol=1e-6)


@settings(max_examples=12, deadline=None)
@given(exponent=st.integers(min_value=-200, max_value=150), family=st.sampled_from(FAMILIES))
def test_predictions_invariant_to_rescaling_a_block_by_any_power_of_ten(exponent, family):
    rng, X, candidates, eta = _problem(8)
    y = _responses(rng, eta)[family]
    folds = make_folds(3, N, seed=0)
    scaled = X.copy()
    scaled[:, 3:] *= 10.0**exponent
    for ridge in (0.0, 0.3):
        np.testing.assert_allclose(
            _cv(family, scaled, y, candidates, folds, ridge),
            _cv(family, X, y, candidates, folds, ridge),
            rtol=1e-8,
            atol=1e-12,
        )


def test_batched_penalised_problems_that_backtrack_each_reach_their_own_optimum():
    # Three logistic problems on different rows, started far from their optima so the line search
    # halves its steps: every halving compares a problem's trial value with its own value, not
    # with another problem's (a bug once compared all of them with the first problem's loss).
    from pearlstats.engines.newton import penalised_newton

    rng = np.random.default_rng(5)
    n, p = 80, 6
    X = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
    y = (rng.random(n) < expit(X @ rng.normal(size=p))).astype(float)
    weights = (rng.random((3, n)) < [[0.9], [0.6], [0.3]]).astype(float)
    penalty = np.r_[0.0, np.ones(p - 1)] * np.ones((3, 1))
    ridge = 0.05

    def loss(theta, order):
        eta = theta @ X.T
        size = weights.sum(axis=1)
        f = np.sum(weights * (np.logaddexp(0, eta) - y * eta), axis=1) / size
        if order == 0:
            return f
        mu = expit(eta)
        g = (weights * (mu - y)) @ X / size[:, None]
        if order == 1:
            return f, g
        H = np.matmul(X.T[None] * (weights * mu * (1 - mu))[:, None, :], X) / size[:, None, None]
        return f, g, H

    start = np.full((3, p), 4.0)
    result = penalised_newton(loss, start, ridge, penalty)
    assert result.converged.all()
    for k in range(3):
        rows = weights[k] > 0

        def objective(b, rows=rows):
            eta = X[rows] @ b
            return np.mean(np.logaddexp(0, eta) - y[rows] * eta) + 0.5 * ridge * b[1:] @ b[1:]

        expected = minimize(objective, np.zeros(p), method="BFGS", options={"gtol": 1e-10}).x
        np.testing.assert_allclose(result.theta[k], expected, atol=1e-6)
