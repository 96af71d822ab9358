"""Model-averaged inference: coefficients, SEs, intervals, residuals and CV+.

Every number is checked against statsmodels or against a direct computation
written here from the published formula (loops over terms and candidates with
plain Python numbers), never against the module's own helpers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from pearlstats import inference as inf
from pearlstats.exceptions import DataError, FoldError, OptionError

WEIGHTS = pd.Series({"a": 0.2, "a+b": 0.5, "b": 0.3})


def _frame(n: int = 160, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    site = rng.integers(0, 3, n)
    return pd.DataFrame({
        "Intercept": 1.0,
        "age": rng.normal(size=n),
        "C(site)[T.b]": (site == 1).astype(float),
        "C(site)[T.c]": (site == 2).astype(float),
        "a[0]": rng.normal(size=n),
        "a[1]": rng.normal(size=n),
        "block(b)": rng.normal(size=n),
    })


SHARED = ["Intercept", "age", "C(site)[T.b]", "C(site)[T.c]"]
COLUMNS = {"a": SHARED + ["a[0]", "a[1]"], "a+b": SHARED + ["a[0]", "a[1]", "block(b)"],
           "b": ["block(b)"] + SHARED}


def _fits(family: str, seed: int = 0) -> dict:
    X = _frame(seed=seed)
    rng = np.random.default_rng(seed + 1)
    eta = 0.3 + 0.5 * X["age"] + 0.4 * X["a[0]"] - 0.3 * X["block(b)"]
    fits = {}
    for label, cols in COLUMNS.items():
        if family == "gaussian":
            y = eta + rng.normal(size=len(X)) if not fits else fits["_y"]
            fits[label] = sm.OLS(y, X[cols]).fit()
        elif family == "binomial":
            y = rng.binomial(1, 1 / (1 + np.exp(-eta))) if not fits else fits["_y"]
            fits[label] = sm.Logit(y, X[cols]).fit(disp=0)
        else:
            y = rng.poisson(np.exp(eta)) if not fits else fits["_y"]
            fits[label] = sm.GLM(y, X[cols], family=sm.families.Poisson()).fit()
        fits["_y"] = y
    fits.pop("_y")
    return fits


def _direct_full_average(params: dict, bse: dict, weights: pd.Series, revised=False,
                         z_factor=None) -> tuple[dict, dict]:
    """Buckland et al. (1997) / Burnham & Anderson (2002) by hand, term by term."""
    terms = []
    for p in params.values():
        terms += [t for t in p.index if t not in terms]
    avg, se = {}, {}
    for t in terms:
        b = {j: float(params[j][t]) if t in params[j].index else 0.0 for j in params}
        s = {j: float(bse[j][t]) if t in bse[j].index else 0.0 for j in params}
        if z_factor is not None:
            s = {j: s[j] * z_factor[j] for j in s}
        avg[t] = sum(weights[j] * b[j] for j in params)
        if revised:
            se[t] = math.sqrt(sum(weights[j] * (s[j] ** 2 + (b[j] - avg[t]) ** 2)
                                  for j in params))
        else:
            se[t] = sum(weights[j] * math.sqrt(s[j] ** 2 + (b[j] - avg[t]) ** 2)
                        for j in params)
    return avg, se


# ---------------------------------------------------------------------------
# coefficients and standard errors


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("revised", [False, True])
def test_full_average_matches_direct_computation(family, revised):
    fits = _fits(family)
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    avg, se = _direct_full_average(params, bse, WEIGHTS, revised=revised)

    got = inf.averaged_params(params, WEIGHTS)
    got_se = inf.unconditional_se(params, bse, WEIGHTS, revised=revised)
    assert list(got.index) == list(avg) == SHARED + ["a[0]", "a[1]", "block(b)"]
    np.testing.assert_allclose(got.to_numpy(), list(avg.values()), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got_se.to_numpy(), list(se.values()), rtol=1e-13)
    # A block term missing from some candidates is shrunk toward 0 by their weight.
    only_b = fits["a+b"].params["block(b)"] * 0.5 + fits["b"].params["block(b)"] * 0.3
    assert got["block(b)"] == pytest.approx(only_b, rel=1e-13)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_conf_int_is_mean_plus_minus_normal_quantile_times_se(family):
    fits = _fits(family)
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    ci = inf.averaged_conf_int(params, bse, WEIGHTS, alpha=0.1)
    avg, se = _direct_full_average(params, bse, WEIGHTS)
    z = stats.norm.ppf(0.95)
    np.testing.assert_allclose(ci["lower"], [avg[t] - z * se[t] for t in avg], rtol=1e-12)
    np.testing.assert_allclose(ci["upper"], [avg[t] + z * se[t] for t in avg], rtol=1e-12)


def test_adjusted_se_inflates_each_candidate_by_its_t_over_z_ratio():
    fits = _fits("gaussian")
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    df = {j: r.df_resid for j, r in fits.items()}
    ratio = {j: stats.t.ppf(0.975, df[j]) / stats.norm.ppf(0.975) for j in fits}
    avg, se = _direct_full_average(params, bse, WEIGHTS, z_factor=ratio)
    got = inf.adjusted_se(params, bse, WEIGHTS, df)
    np.testing.assert_allclose(got.to_numpy(), list(se.values()), rtol=1e-13)
    ci = inf.averaged_conf_int(params, bse, WEIGHTS, df_resid=df)
    np.testing.assert_allclose(ci["upper"] - ci["lower"],
                               [2 * stats.norm.ppf(0.975) * se[t] for t in avg], rtol=1e-12)
    assert (got > inf.unconditional_se(params, bse, WEIGHTS)).all()


def test_single_ols_candidate_reproduces_statsmodels():
    res = _fits("gaussian")["a+b"]
    w = pd.Series({"m": 1.0})
    params, bse = {"m": res.params}, {"m": res.bse}
    np.testing.assert_array_equal(inf.averaged_params(params, w), res.params)
    np.testing.assert_array_equal(inf.unconditional_se(params, bse, w), res.bse)
    ci = inf.averaged_conf_int(params, bse, w, df_resid={"m": res.df_resid})
    np.testing.assert_allclose(ci.to_numpy(), res.conf_int().to_numpy(), rtol=1e-12)
    assert list(ci.columns) == ["lower", "upper"] and list(ci.index) == list(res.params.index)
    fitted = inf.averaged_fitted({"m": res.fittedvalues}, w)
    np.testing.assert_array_equal(fitted, res.fittedvalues)
    np.testing.assert_array_equal(inf.averaged_resid(res.model.endog, fitted), res.resid)


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_single_glm_candidate_conf_int_and_pearson_residuals(family):
    X = _frame()[COLUMNS["a"]]
    y = _fits(family)["a"].model.endog
    glm_family = sm.families.Binomial() if family == "binomial" else sm.families.Poisson()
    res = sm.GLM(y, X, family=glm_family).fit()
    w = pd.Series({"m": 1.0})
    ci = inf.averaged_conf_int({"m": res.params}, {"m": res.bse}, w)
    np.testing.assert_allclose(ci.to_numpy(), res.conf_int().to_numpy(), rtol=1e-12)
    mu = inf.averaged_fitted({"m": res.fittedvalues}, w)
    pearson = inf.averaged_resid(y, mu, kind="pearson", family=family)
    np.testing.assert_allclose(pearson, res.resid_pearson, rtol=1e-12)
    np.testing.assert_allclose(inf.averaged_resid(y, mu), res.resid_response, rtol=1e-12)


def test_multinomial_averages_each_class_column():
    X = _frame(n=300)
    rng = np.random.default_rng(3)
    y = np.argmax(np.c_[np.zeros(300), X["age"], X["a[0]"] - X["block(b)"]]
                  + rng.gumbel(size=(300, 3)), axis=1)
    fits = {j: sm.MNLogit(y, X[cols]).fit(disp=0) for j, cols in COLUMNS.items()}
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    got = inf.averaged_params(params, WEIGHTS)
    got_se = inf.unconditional_se(params, bse, WEIGHTS)
    for c in got.columns:
        avg, se = _direct_full_average({j: p[c] for j, p in params.items()},
                                       {j: s[c] for j, s in bse.items()}, WEIGHTS)
        np.testing.assert_allclose(got[c], list(avg.values()), rtol=1e-12)
        np.testing.assert_allclose(got_se[c], list(se.values()), rtol=1e-12)
    one = fits["a"]
    ci = inf.averaged_conf_int({"m": one.params}, {"m": one.bse}, pd.Series({"m": 1.0}))
    np.testing.assert_allclose(ci.to_numpy(), one.conf_int().to_numpy(), rtol=1e-12)
    assert ci.index[0] == (one.params.columns[0], "Intercept")


def test_coefficient_order_puts_shared_covariates_first():
    params = {j: r.params for j, r in _fits("gaussian").items()}
    assert inf.term_union(params) == SHARED + ["a[0]", "a[1]", "block(b)"]
    reordered = {"b": params["b"], "a": params["a"]}
    assert inf.term_union(reordered)[0] == "block(b)"
    assert inf.coefficient_order(reordered) == SHARED + ["block(b)", "a[0]", "a[1]"]


def test_zero_weight_candidate_may_be_absent_or_present():
    params = {j: r.params for j, r in _fits("gaussian").items()}
    w = pd.Series({"a": 0.4, "a+b": 0.0, "b": 0.6, "failed": 0.0})
    got = inf.averaged_params(params, w)
    assert "block(b)" in got.index and "failed" not in got.index
    expected = 0.4 * params["a"]["age"] + 0.6 * params["b"]["age"]
    assert got["age"] == pytest.approx(expected, rel=1e-13)


# ---------------------------------------------------------------------------
# averaged mean of linear candidates


def test_averaged_mean_se_single_candidate_is_statsmodels_prediction():
    res = _fits("gaussian")["a"]
    new = _frame(n=7, seed=9)[COLUMNS["a"]]
    out = inf.averaged_mean_se({"m": new}, {"m": res.cov_params()}, {"m": res.params},
                               pd.Series({"m": 1.0}), df_resid={"m": res.df_resid})
    frame = res.get_prediction(new).summary_frame(alpha=0.05)
    for col in ["mean", "mean_se", "mean_ci_lower", "mean_ci_upper"]:
        np.testing.assert_allclose(out[col], frame[col], rtol=1e-10)


def test_averaged_mean_se_combines_candidates_like_coefficients():
    fits = _fits("gaussian")
    new = _frame(n=5, seed=11)
    out = inf.averaged_mean_se({j: new[COLUMNS[j]] for j in fits},
                               {j: r.cov_params() for j, r in fits.items()},
                               {j: r.params for j, r in fits.items()}, WEIGHTS)
    for row in range(5):
        pred = {j: r.get_prediction(new[COLUMNS[j]].iloc[[row]]) for j, r in fits.items()}
        m = {j: float(p.predicted_mean[0]) for j, p in pred.items()}
        s = {j: float(p.se_mean[0]) for j, p in pred.items()}
        avg = sum(WEIGHTS[j] * m[j] for j in fits)
        se = sum(WEIGHTS[j] * math.sqrt(s[j] ** 2 + (m[j] - avg) ** 2) for j in fits)
        assert out["mean"][row] == pytest.approx(avg, rel=1e-12)
        assert out["mean_se"][row] == pytest.approx(se, rel=1e-10)
