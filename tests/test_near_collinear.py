"""Nearly collinear but identified designs: their standard errors are the least-squares ones.

A design whose centred, unit-scale Gram had an eigenvalue ratio below 1e-10 (a singular-value
ratio of 1e-5: ``z = x + 1e-5 w``, condition number 2e5) got a pseudo-inverse of its raw
moments truncated at that ratio, which dropped the very direction with the large variance:
SE(z) 0.055 where least squares gives 1.0e4, p-values of 0, mean SEs of predictions 2-3 times
too small, all without a warning; below a ratio of about 6e-6 the coefficients were NaN and
"not identified". The references are computed independently: a Householder QR of the design
(accurate to about cond x eps = 1e-10 here) and statsmodels' GLM, and for a cubic trend in
calendar years a fit on centred years mapped exactly back to the raw parametrisation.
"""

from __future__ import annotations

import warnings
from math import comb

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl

# pearlstats solves normal equations in standardised columns: at cond(X) = 2e6 their condition
# number is 4e12, so a coefficient along the weak direction keeps about cond^2 x eps = 1e-3 of
# its SE (the estimates are compared in units of their SEs); the covariance, inverted at
# unit scale, the same relative to itself.
RTOL = 1e-3


def _fit(formula, data, blocks, family="gaussian"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit(formula, data, blocks=blocks, family=family, seed=0, honest=False)
    return res, {w.category.__name__ for w in caught}


@pytest.mark.parametrize("eps", [1e-5, 5e-6, 1e-6])
def test_a_nearly_duplicated_covariate_keeps_its_least_squares_se(eps):
    rng = np.random.default_rng(6)
    n = 100
    x, w, a = rng.normal(size=n), rng.normal(size=n), rng.normal(size=(n, 2))
    y = x + a[:, 0] + rng.normal(size=n)
    data = pd.DataFrame({"y": y, "x": x, "z": x + eps * w})
    res, warned = _fit("y ~ x + z + block(a)", data, {"a": a})
    assert "UnidentifiedCoefficientWarning" not in warned
    X = np.column_stack([np.ones(n), data.x, data.z, a])
    Q, R = np.linalg.qr(X)
    beta = np.linalg.solve(R, Q.T @ y)
    sigma2 = np.sum((y - X @ beta) ** 2) / (n - X.shape[1])
    R_inv = np.linalg.solve(R, np.eye(X.shape[1]))
    se = np.sqrt(sigma2 * np.sum(R_inv**2, axis=1))
    table = res.candidate_params(["a"]).loc["a"]
    np.testing.assert_allclose(table["std err"].to_numpy(), se, rtol=RTOL)
    assert np.all(np.abs(table["coef"].to_numpy() - beta) <= RTOL * se)
    assert se[2] > 1e4  # the weak direction's variance, which the truncation dropped
    # the averaged model (one candidate of weight 1) and its tests say the same
    np.testing.assert_allclose(res.bse[["x", "z"]].to_numpy(), se[1:3], rtol=RTOL)
    assert res.pvalues["z"] == pytest.approx(sm.OLS(y, X).fit().pvalues[2], rel=1e-2)
    new = pd.DataFrame({"x": [0.5, -1.0], "z": [0.5, -1.0]})
    frame = res.get_prediction(new, blocks={"a": np.zeros((2, 2))}).summary_frame()
    direct = sm.OLS(y, X).fit().get_prediction(
        np.column_stack([np.ones(2), new.x, new.z, np.zeros((2, 2))])).summary_frame()
    np.testing.assert_allclose(frame["mean_se"], direct["mean_se"], rtol=RTOL)


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_glm_standard_errors_of_a_nearly_duplicated_covariate_equal_statsmodels(family):
    rng = np.random.default_rng(6)
    n = 400
    x, w, a = rng.normal(size=n), rng.normal(size=n), rng.normal(size=(n, 2))
    eta = 0.5 * x + 0.5 * a[:, 0]
    y = ((rng.random(n) < 1 / (1 + np.exp(-eta))) if family == "binomial"
         else rng.poisson(np.exp(eta))).astype(float)
    data = pd.DataFrame({"y": y, "x": x, "z": x + 1e-5 * w})
    res, warned = _fit("y ~ x + z + block(a)", data, {"a": a}, family)
    assert "UnidentifiedCoefficientWarning" not in warned
    X = np.column_stack([np.ones(n), data.x, data.z, a])
    sm_family = sm.families.Binomial() if family == "binomial" else sm.families.Poisson()
    direct = sm.GLM(y, X, family=sm_family).fit(tol=1e-12)
    np.testing.assert_allclose(res.candidate_params(["a"]).loc["a"]["std err"].to_numpy(),
                               direct.bse, rtol=RTOL)


def test_a_cubic_trend_in_calendar_years_is_identified_with_its_standard_errors():
    """y ~ t + I(t**2) + I(t**3) with t the year 1990..2020: all four trend coefficients were
    NaN ("not identified"); with t in 1950..2020 the SEs were 1e-22..1e-12 and p-values 0."""
    rng = np.random.default_rng(11)
    n = 300
    for low, high, centre in [(1990, 2021, 2005.0), (1950, 2021, 1985.0)]:
        t = rng.integers(low, high, n).astype(float)
        a = rng.normal(size=(n, 1))
        u = (t - centre) / (high - low)
        y = 0.5 * u - 0.8 * u**2 + 0.6 * u**3 + a[:, 0] + rng.normal(size=n)
        res, warned = _fit("y ~ t + I(t**2) + I(t**3) + block(a)", pd.DataFrame({"y": y, "t": t}),
                           {"a": a})
        assert "UnidentifiedCoefficientWarning" not in warned
        v = t - centre  # the centred fit is well conditioned; map it back exactly
        centred = sm.OLS(y, np.column_stack([np.ones(n), v, v**2, v**3, a])).fit()
        T = np.eye(5)
        for j in range(4):
            for k in range(j, 4):
                T[j, k] = comb(k, j) * (-centre) ** (k - j)
        beta, cov = T @ centred.params, T @ centred.cov_params() @ T.T
        se = np.sqrt(np.diag(cov))
        table = res.candidate_params(["a"]).loc["a"]
        np.testing.assert_allclose(table["std err"].to_numpy(), se, rtol=RTOL)
        assert np.all(np.abs(table["coef"].to_numpy() - beta) <= RTOL * se)
