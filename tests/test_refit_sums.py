"""Candidates' inference from one pass of sums over row chunks, against statsmodels' refits.

:mod:`pearlstats.inference.refit_sums` (the per-rows kernel, run over chunks of 7 rows
here) and :mod:`pearlstats.inference.sums_refit` (covariance, df_resid, scale, llf from
the pooled sums) must give statsmodels' numbers: ``OLS``, ``Logit``, ``GLM(Poisson())``,
``GLM`` with frequency or variance weights and offsets, on real data (scikit-learn's
diabetes data), with a covariate shifted by 1e4, with collinear columns, and the ridge
sandwich ``H^-1 I H^-1`` computed directly from the columns.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from sklearn.datasets import load_diabetes

import pearlstats as pearl
from pearlstats.backends import chunks
from pearlstats.inference.refit_sums import chunk_refit_sums
from pearlstats.inference.sums_refit import refits_from_sums

RTOL = 1e-8


@pytest.fixture(autouse=True)
def seven_row_chunks(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 7)


def _diabetes(shift: float = 0.0):
    data = load_diabetes()
    X, target = data.data, data.target
    X = X.copy()
    X[:, 0] += shift  # age, shifted: sums about 0 would lose the digits
    responses = {"gaussian": target,
                 "binomial": (target > np.median(target)).astype(float),
                 "poisson": np.round(target / 10.0)}
    return X, responses


def _exog(X: np.ndarray, columns: list) -> np.ndarray:
    return np.column_stack([np.ones(len(X)), X[:, columns]])


def _direct(family: str, y, exog, **kwargs):
    """statsmodels' refit, tightly converged."""
    if family == "gaussian" and not kwargs:
        return sm.OLS(y, exog).fit()
    if family == "binomial" and not kwargs:
        return sm.Logit(y, exog).fit(disp=0, tol=1e-12, maxiter=100)
    glm = {"gaussian": sm.families.Gaussian, "binomial": sm.families.Binomial,
           "poisson": sm.families.Poisson}[family]()
    return sm.GLM(y, exog, family=glm, **kwargs).fit(tol=1e-13)


def _sums_refit(family, exog, y, params, ridge=0.0, offset=None, weights=None,
                weight_type=None, label="c"):
    columns = np.arange(exog.shape[1])
    sums, local = chunk_refit_sums(family, exog, y, [columns], [params], offset, weights)
    names = [f"x{i}" for i in columns]
    return refits_from_sums(family, sums, local, [params], [label], [names], ridge,
                            weight_type)[label]


def _assert_cov(ours, expected, rtol=RTOL):
    """Equal relative to the scale of each entry, ``sqrt(cov_ii cov_jj)`` (entries near 0,
    such as the intercept's with centred columns, are rounding noise at that scale)."""
    ours, expected = np.asarray(ours), np.asarray(expected)
    scale = np.sqrt(np.outer(np.diagonal(expected), np.diagonal(expected)))
    assert np.max(np.abs(ours - expected) / scale) < rtol


def _assert_same(ours, direct, cov=None):
    expected = np.asarray(direct.cov_params()) if cov is None else cov
    _assert_cov(ours.cov_params(), expected)
    np.testing.assert_allclose(np.asarray(ours.bse), np.sqrt(np.diagonal(expected)), rtol=RTOL)
    assert ours.df_resid == pytest.approx(direct.df_resid, rel=1e-12)
    assert ours.df_model == pytest.approx(direct.df_model, rel=1e-12)
    assert ours.llf == pytest.approx(direct.llf, rel=RTOL)
    assert ours.scale == pytest.approx(direct.scale, rel=RTOL)
    if ours.family != "gaussian" and hasattr(direct, "pearson_chi2"):  # GLM's, not Logit's
        # the same coefficients: the statistic differs by rounding of the row sums only
        assert ours.pearson_chi2 == pytest.approx(direct.pearson_chi2, rel=RTOL)


def _shifted(exog, params, cov, shift):
    """The coefficients and covariance of the same fit with column 1 shifted by *shift*
    (the intercept absorbs it: b0' = b0 - shift b1)."""
    A = np.eye(len(params))
    A[0, 1] = -shift
    return A @ params, A @ cov @ A.T


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("shift", [0.0, 1e4])
def test_sums_equal_statsmodels_refits(family, shift):
    """With a shift, statsmodels is fitted on the unshifted columns (its Logit does not
    converge on x + 1e4) and its numbers carried over: the shift moves the intercept only."""
    X, responses = _diabetes()
    y = responses[family]
    for columns in ([0, 2], [0, 2, 3, 8], list(range(10))):
        exog = _exog(X, columns)
        direct = _direct(family, y, exog)
        params, cov = _shifted(exog, np.asarray(direct.params),
                               np.asarray(direct.cov_params()), shift)
        moved = exog.copy()
        moved[:, 1] += shift
        ours = _sums_refit(family, moved, y, params)
        _assert_same(ours, direct, cov)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("weight_type", ["frequency", "variance"])
def test_sums_with_weights_and_offsets_equal_statsmodels_glm(family, weight_type):
    X, responses = _diabetes(1e4)
    y = responses[family]
    rng = np.random.default_rng(0)
    weights = rng.uniform(0.3, 3.0, size=len(y))
    offset = rng.normal(scale=0.2, size=len(y))
    exog = _exog(X, [0, 2, 3, 8])
    key = "freq_weights" if weight_type == "frequency" else "var_weights"
    direct = _direct(family, y, exog, offset=offset, **{key: weights})
    ours = _sums_refit(family, exog, y, np.asarray(direct.params), offset=offset,
                       weights=weights, weight_type=weight_type)
    _assert_same(ours, direct)


def _sandwich(family, exog, y, params, ridge, weights=None, weight_type=None):
    """``H^-1 I H^-1`` and (gaussian) ``df_resid``, ``scale`` straight from the columns."""
    n = len(y)
    rows = np.ones(n) if weights is None else weights
    eta = exog @ params
    mu = {"gaussian": eta, "binomial": 1 / (1 + np.exp(-eta)), "poisson": np.exp(eta)}[family]
    w = rows * {"gaussian": np.ones(n), "binomial": mu * (1 - mu), "poisson": mu}[family]
    info = exog.T @ (exog * w[:, None])
    # the engines' weights: each column's (weighted) variance, none on the intercept
    mean = rows @ exog / rows.sum()
    penalty = np.r_[0.0, (rows @ (exog - mean) ** 2 / rows.sum())[1:]]
    H = info + rows.sum() * ridge * np.diag(penalty)
    Hinv = np.linalg.inv(H)
    cov = Hinv @ info @ Hinv
    if family != "gaussian":
        return cov, None
    counted = rows.sum() if weight_type == "frequency" else n
    df_resid = counted - np.trace(Hinv @ info)
    return cov * (rows @ (y - eta) ** 2) / df_resid, df_resid


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("weight_type", [None, "frequency", "variance"])
def test_ridge_sandwich_from_sums(family, weight_type):
    X, responses = _diabetes()
    y = responses[family]
    exog = _exog(X, [0, 2, 3, 8])
    weights = (None if weight_type is None
               else np.random.default_rng(1).uniform(0.3, 3.0, size=len(y)))
    ridge = 0.05
    # any coefficients do: the sandwich is evaluated at the ones given
    params = _direct(family, y, exog).params * 0.8
    cov, df_resid = _sandwich(family, exog, y, params, ridge, weights, weight_type)
    ours = _sums_refit(family, exog, y, params, ridge=ridge, weights=weights,
                       weight_type=weight_type)
    _assert_cov(ours.cov_params(), cov)
    if df_resid is not None:
        assert ours.df_resid == pytest.approx(df_resid, rel=1e-12)
    assert ours.penalty_ridge == ridge
    # a shifted covariate moves the intercept only: the covariance moves with it (to 1e-8,
    # where the sandwich formed from x + 1e4 directly kept no correct digit)
    shifted = exog.copy()
    shifted[:, 1] += 1e4
    moved = params.copy()
    moved[0] -= 1e4 * params[1]
    again = _sums_refit(family, shifted, y, moved, ridge=ridge, weights=weights,
                        weight_type=weight_type)
    _assert_cov(again.cov_params(), _shifted(exog, params, cov, 1e4)[1])


def test_collinear_candidate_uses_the_pseudo_inverse():
    X, responses = _diabetes()
    exog = np.column_stack([_exog(X, [0, 2]), X[:, 0] + X[:, 2]])  # rank 3 of 4
    y = responses["gaussian"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = sm.OLS(y, exog).fit()
    ours = _sums_refit("gaussian", exog, y, np.asarray(direct.params))
    assert ours.rank == 3 and ours.df_resid == direct.df_resid == len(y) - 3
    np.testing.assert_allclose(np.asarray(ours.cov_params()), np.asarray(direct.cov_params()),
                               rtol=1e-7, atol=1e-9 * np.abs(direct.cov_params()).max())
    assert set(ours.unidentified) == {"x1", "x2", "x3"}
    # binomial: statsmodels' Logit cannot invert the singular Hessian; the sums give the
    # pseudo-inverse of X'WX as the GLM does
    yb = responses["binomial"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' SingularMatrixWarning: as intended
        glm = sm.GLM(yb, exog, family=sm.families.Binomial()).fit()
    ours = _sums_refit("binomial", exog, yb, np.asarray(glm.params))
    eta = exog @ glm.params
    w = np.exp(eta) / (1 + np.exp(eta)) ** 2
    np.testing.assert_allclose(np.asarray(ours.cov_params()),
                               np.linalg.pinv(exog.T @ (exog * w[:, None]), rcond=1e-10,
                                              hermitian=True), rtol=1e-7)


def _fit_diabetes(family, shift=0.0, **kwargs):
    X, responses = _diabetes(shift)
    data = {"y": responses[family], "age": X[:, 0], "a": X[:, 1:4], "b": X[:, 4:8],
            "c": X[:, 8:10]}
    return pearl.fit("y ~ age + block(a) + block(b) + block(c)", data, family=family, seed=0,
                     honest=False, **kwargs)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_results_inference_needs_no_statsmodels_refit(family):
    res = _fit_diabetes(family)
    table = res.coef_table(terms="all")
    bse, ci = res.bse, res.conf_int()
    candidates = res.candidate_params()
    frame = res.candidate_table
    res.summary()
    assert not res.candidates._cache  # no statsmodels refit was made for any of it
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(res)).bse, bse)  # the sums pickle
    for label in res.weights.index[res.weights > 0]:
        direct = res.candidates[label]  # built on request, as before
        np.testing.assert_allclose(candidates.loc[label, "std err"].dropna().to_numpy(),
                                   np.asarray(direct.bse), rtol=RTOL)
        assert frame.loc[label, "df_model"] == direct.df_model
    assert table.loc["age", "std err"] == pytest.approx(bse["age"], rel=1e-12)
    assert np.all(ci["lower"] < res.params) and np.all(res.params < ci["upper"])
    # age + 1e4: the same slopes and SEs (statsmodels' Logit on the shifted columns is off
    # by 1e-6 here: its Hessian's inverse loses digits)
    moved = _fit_diabetes(family, shift=1e4).candidate_params()
    slopes = candidates.index.get_level_values("term") != "Intercept"
    np.testing.assert_allclose(moved.loc[slopes, ["coef", "std err"]].to_numpy(),
                               candidates.loc[slopes, ["coef", "std err"]].to_numpy(),
                               rtol=1e-7)


def test_results_with_frequency_weights_equal_statsmodels_glm():
    rng = np.random.default_rng(1)
    X, responses = _diabetes()
    weights = rng.integers(1, 4, size=len(X)).astype(float)
    res = _fit_diabetes("poisson", weights=weights, weight_type="frequency")
    for label in res.weights.index[res.weights > 0]:
        ours = res.candidate_params([label])["std err"].to_numpy()
        np.testing.assert_allclose(ours, np.asarray(res.candidates[label].bse), rtol=RTOL)
