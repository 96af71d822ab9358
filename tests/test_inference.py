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
from pearlstats.inference import conformal

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


def _direct_full_average(params: dict, bse: dict, weights: pd.Series, revised=True,
                         z_factor=None) -> tuple[dict, dict]:
    """Burnham & Anderson (2002) by hand, term by term: eq. 6.12 (revised) or eq. 4.9."""
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
@pytest.mark.parametrize("revised", [True, False])
def test_conf_int_is_mean_plus_minus_normal_quantile_times_se(family, revised):
    fits = _fits(family)
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    ci = inf.averaged_conf_int(params, bse, WEIGHTS, alpha=0.1, revised=revised)
    avg, se = _direct_full_average(params, bse, WEIGHTS, revised=revised)
    z = stats.norm.ppf(0.95)
    np.testing.assert_allclose(ci["lower"], [avg[t] - z * se[t] for t in avg], rtol=1e-12)
    np.testing.assert_allclose(ci["upper"], [avg[t] + z * se[t] for t in avg], rtol=1e-12)


@pytest.mark.parametrize("revised", [True, False])
def test_adjusted_se_inflates_each_candidate_by_its_t_over_z_ratio(revised):
    fits = _fits("gaussian")
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    df = {j: r.df_resid for j, r in fits.items()}
    ratio = {j: stats.t.ppf(0.975, df[j]) / stats.norm.ppf(0.975) for j in fits}
    avg, se = _direct_full_average(params, bse, WEIGHTS, revised=revised, z_factor=ratio)
    got = inf.adjusted_se(params, bse, WEIGHTS, df, revised=revised)
    np.testing.assert_allclose(got.to_numpy(), list(se.values()), rtol=1e-13)
    ci = inf.averaged_conf_int(params, bse, WEIGHTS, df_resid=df, revised=revised)
    np.testing.assert_allclose(ci["upper"] - ci["lower"],
                               [2 * stats.norm.ppf(0.975) * se[t] for t in avg], rtol=1e-12)
    assert (got > inf.unconditional_se(params, bse, WEIGHTS, revised=revised)).all()


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


def test_default_formula_is_the_revised_one_and_larger_for_rare_terms():
    fits = _fits("binomial")
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    default = inf.unconditional_se(params, bse, WEIGHTS)
    revised = inf.unconditional_se(params, bse, WEIGHTS, revised=True)
    eq49 = inf.unconditional_se(params, bse, WEIGHTS, revised=False)
    pd.testing.assert_series_equal(default, revised)
    # Jensen: sqrt of a weighted mean >= weighted mean of sqrts, strictly when they differ.
    assert (revised >= eq49 - 1e-15).all() and revised["block(b)"] > eq49["block(b)"]


def _direct_conditional_average(params: dict, bse: dict, weights: pd.Series, revised: bool):
    """MuMIn's subset average by hand: par.avg over the candidates that have the term."""
    avg, se, importance = {}, {}, {}
    for t in ["Intercept", "age", "a[0]", "a[1]", "block(b)"]:
        having = [j for j in params if t in params[j].index]
        total = sum(weights[j] for j in having)
        w = {j: weights[j] / total for j in having}
        avg[t] = sum(w[j] * float(params[j][t]) for j in having)
        parts = [float(bse[j][t]) ** 2 + (float(params[j][t]) - avg[t]) ** 2 for j in having]
        se[t] = (math.sqrt(sum(w[j] * v for j, v in zip(having, parts))) if revised
                 else sum(w[j] * math.sqrt(v) for j, v in zip(having, parts)))
        importance[t] = total
    return avg, se, importance


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
@pytest.mark.parametrize("revised", [True, False])
def test_conditional_average_matches_direct_computation(family, revised):
    fits = _fits(family)
    params = {j: r.params for j, r in fits.items()}
    bse = {j: r.bse for j, r in fits.items()}
    avg, se, importance = _direct_conditional_average(params, bse, WEIGHTS, revised)
    got = inf.conditional_params(params, WEIGHTS)
    got_se = inf.conditional_se(params, bse, WEIGHTS, revised=revised)
    terms = ["Intercept", "age", "a[0]", "a[1]", "block(b)"]
    np.testing.assert_allclose(got[terms], [avg[t] for t in terms], rtol=1e-13)
    np.testing.assert_allclose(got_se[terms], [se[t] for t in terms], rtol=1e-13)
    np.testing.assert_allclose(inf.term_weights(params, WEIGHTS)[terms],
                               [importance[t] for t in terms], rtol=1e-15)
    # block(b) is in a+b and b only: their weights 0.5 and 0.3, renormalised.
    expected = (0.5 * params["a+b"]["block(b)"] + 0.3 * params["b"]["block(b)"]) / 0.8
    assert got["block(b)"] == pytest.approx(expected, rel=1e-13)


def test_conditional_average_of_a_term_only_unweighted_candidates_have_is_nan():
    params = {j: r.params for j, r in _fits("gaussian").items()}
    got = inf.conditional_params(params, pd.Series({"a": 1.0, "a+b": 0.0, "b": 0.0}))
    assert np.isnan(got["block(b)"]) and got["a[0]"] == params["a"]["a[0]"]


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
    out_49 = inf.averaged_mean_se({j: new[COLUMNS[j]] for j in fits},
                                  {j: r.cov_params() for j, r in fits.items()},
                                  {j: r.params for j, r in fits.items()}, WEIGHTS, revised=False)
    for row in range(5):
        pred = {j: r.get_prediction(new[COLUMNS[j]].iloc[[row]]) for j, r in fits.items()}
        m = {j: float(p.predicted_mean[0]) for j, p in pred.items()}
        s = {j: float(p.se_mean[0]) for j, p in pred.items()}
        avg = sum(WEIGHTS[j] * m[j] for j in fits)
        # eq. 6.12 (the default, as unconditional_se), eq. 4.9 with revised=False
        se = math.sqrt(sum(WEIGHTS[j] * (s[j] ** 2 + (m[j] - avg) ** 2) for j in fits))
        se_49 = sum(WEIGHTS[j] * math.sqrt(s[j] ** 2 + (m[j] - avg) ** 2) for j in fits)
        assert out["mean"][row] == pytest.approx(avg, rel=1e-12)
        assert out["mean_se"][row] == pytest.approx(se, rel=1e-10)
        assert out_49["mean_se"][row] == pytest.approx(se_49, rel=1e-10)


# ---------------------------------------------------------------------------
# CV+ prediction intervals


def _brute_cv_plus(y, oof, folds, fold_pred, alpha):
    """Barber et al. (2021) CV+ by sorting lists, with exact rational ranks."""
    n = len(y)
    a = Fraction(str(alpha))
    lo_rank = math.floor(a * (n + 1))
    hi_rank = math.ceil((1 - a) * (n + 1))
    resid = [abs(y[i] - oof[i]) for i in range(n)]
    lower, upper = [], []
    for j in range(fold_pred.shape[1]):
        lows = sorted(fold_pred[folds[i], j] - resid[i] for i in range(n))
        highs = sorted(fold_pred[folds[i], j] + resid[i] for i in range(n))
        lower.append(lows[lo_rank - 1] if lo_rank >= 1 else -math.inf)
        upper.append(highs[hi_rank - 1] if hi_rank <= n else math.inf)
    return np.array(lower), np.array(upper)


@pytest.mark.parametrize("n,k,alpha", [(37, 4, 0.1), (39, 3, 0.05), (19, 5, 0.1),
                                       (19, 5, 0.4), (10, 2, 0.04), (199, 5, 0.1)])
@pytest.mark.parametrize("ties", [False, True])
def test_cv_plus_matches_brute_force(n, k, alpha, ties, monkeypatch):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n)
    oof = y + rng.standard_t(3, size=n)
    if ties:
        # Count-like data: many equal residuals inside and across folds.
        y, oof = np.round(y * 2), np.round(oof)
    folds = rng.permutation(np.arange(n) % k)
    fold_pred = rng.normal(size=(k, 23))
    # Tiny blocks so the selection runs over several column blocks.
    monkeypatch.setattr(conformal, "_BLOCK_ELEMENTS", 3 * n)
    lower, upper = inf.cv_plus_interval(y, oof, folds, fold_pred, alpha)
    exp_lower, exp_upper = _brute_cv_plus(y, oof, folds, fold_pred, alpha)
    np.testing.assert_array_equal(lower, exp_lower)
    np.testing.assert_array_equal(upper, exp_upper)
    # n = 10, alpha = 0.04: ceil(0.96 * 11) = 11 > n, so the interval is the whole line.
    assert np.isinf(upper).all() == (n == 10)


def _ols_cv_plus_coverage(reps: int, n: int, k: int, alpha: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    beta = np.array([1.0, 2.0, -1.0])
    m = 100
    covered = np.empty(reps)
    for r in range(reps):
        X = np.c_[np.ones(n + m), rng.normal(size=(n + m, 2))]
        y = X @ beta + rng.standard_t(4, size=n + m)
        Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
        folds = rng.permutation(np.arange(n) % k)
        oof = np.empty(n)
        fold_pred = np.empty((k, m))
        for f in range(k):
            out = folds == f
            b = np.linalg.lstsq(Xtr[~out], ytr[~out], rcond=None)[0]
            oof[out] = Xtr[out] @ b
            fold_pred[f] = Xte @ b
        lower, upper = inf.cv_plus_interval(ytr, oof, folds, fold_pred, alpha)
        covered[r] = np.mean((lower <= yte) & (yte <= upper))
    return covered


def test_cv_plus_covers_new_ols_responses_at_the_nominal_level():
    covered = _ols_cv_plus_coverage(reps=200, n=60, k=5, alpha=0.1, seed=2021)
    coverage = covered.mean()
    print(f"CV+ coverage {coverage:.4f}")
    assert coverage >= 1 - 2 * 0.1
    # 200 x 100 test points; the spread over repetitions gives a standard error near 0.004.
    assert abs(coverage - 0.9) < 0.025, coverage


def test_cv_plus_poisson_is_on_the_count_scale():
    y = np.array([0, 1, 0, 2, 5, 1, 0, 3, 1, 0, 2, 1], dtype=float)
    oof = np.full(12, 1.2)
    folds = np.arange(12) % 3
    fold_pred = np.array([[0.3, 4.2], [0.5, 4.0], [0.4, 4.4]])
    raw_lo, raw_hi = inf.cv_plus_interval(y, oof, folds, fold_pred, 0.2)
    lo, hi = inf.cv_plus_interval(y, oof, folds, fold_pred, 0.2, family="poisson")
    assert raw_lo[0] < 0 and lo[0] == 0.0
    np.testing.assert_array_equal(hi, raw_hi)
    ilo, ihi = inf.cv_plus_interval(y, oof, folds, fold_pred, 0.2, family="poisson",
                                    integer=True)
    np.testing.assert_array_equal(ilo, np.ceil(lo))
    np.testing.assert_array_equal(ihi, np.floor(hi))
    # The same integers lie in the real and in the integer interval.
    for j in range(2):
        counts = np.arange(0, 20)
        assert np.array_equal((counts >= lo[j]) & (counts <= hi[j]),
                              (counts >= ilo[j]) & (counts <= ihi[j]))


def test_cv_plus_at_ten_thousand_rows_agrees_with_a_full_sort_on_sampled_new_rows():
    # The partition over column blocks is exact: check sampled columns against a full sort.
    rng = np.random.default_rng(0)
    n, m, k = 10_000, 2_000, 5
    y = rng.normal(size=n)
    oof = y + rng.normal(size=n)
    folds = np.arange(n) % k
    new = rng.normal(size=(k, m))
    lower, upper = inf.cv_plus_interval(y, oof, folds, new, 0.1)
    residual = np.abs(y - oof)
    lo_rank, hi_rank = int(np.floor(0.1 * (n + 1))), int(np.ceil(0.9 * (n + 1)))
    for j in rng.choice(m, size=5, replace=False):
        centre = new[folds, j]
        assert lower[j] == np.sort(centre - residual)[lo_rank - 1]
        assert upper[j] == np.sort(centre + residual)[hi_rank - 1]


# ---------------------------------------------------------------------------
# bad input: a pearlstats exception that names the problem


def _two_candidates():
    params = {"a": pd.Series({"x": 1.0}), "b": pd.Series({"x": 2.0, "z": 1.0})}
    bse = {"a": pd.Series({"x": 0.1}), "b": pd.Series({"x": 0.2, "z": 0.3})}
    return params, bse


@pytest.mark.parametrize("weights,error,match", [
    (pd.Series({"a": -0.5, "b": 1.5}), DataError, r"\['a'\] are negative"),
    (pd.Series({"a": 0.5, "b": 0.6}), DataError, "sum to 1.1"),
    (pd.Series({"a": 1.0}), DataError, r"candidates \['b'\] that have no weight"),
    (pd.Series({"a": 0.5, "b": 0.25, "c": 0.25}), DataError, r"\['c'\] have positive weight"),
    ({"a": 0.5, "b": 0.5}, DataError, "pandas Series"),
    (pd.Series({"a": np.nan, "b": 1.0}), DataError, "not finite"),
])
def test_bad_weights(weights, error, match):
    params, bse = _two_candidates()
    with pytest.raises(error, match=match):
        inf.unconditional_se(params, bse, weights)


def test_bad_params_and_options():
    params, bse = _two_candidates()
    w = pd.Series({"a": 0.5, "b": 0.5})
    with pytest.raises(DataError, match="mixes Series and DataFrames"):
        inf.averaged_params({"a": params["a"], "b": params["b"].to_frame()}, w)
    with pytest.raises(DataError, match=r"bse\['b'\] has terms \['x'\]"):
        inf.unconditional_se(params, {"a": bse["a"], "b": bse["b"][["x"]]}, w)
    with pytest.raises(DataError, match="non-finite"):
        inf.averaged_params({"a": params["a"], "b": params["b"] * np.nan}, w)
    with pytest.raises(DataError, match="same classes"):
        inf.averaged_params({"a": pd.DataFrame({1: [1.0]}), "b": pd.DataFrame({2: [1.0]})}, w)
    with pytest.raises(OptionError, match="alpha=1.5"):
        inf.averaged_conf_int(params, bse, w, alpha=1.5)
    # no residual df (statsmodels' df_resid <= 0): no t quantile, so NaN, not an error
    # for the terms of that candidate; z, which it lacks (se 0), keeps a finite SE
    se = inf.adjusted_se(params, bse, w, {"a": 0, "b": 3})
    assert np.isnan(se["x"]) and np.isfinite(se["z"])
    with pytest.raises(DataError, match="df_resid must be numbers"):
        inf.adjusted_se(params, bse, w, {"a": np.nan, "b": 3})
    with pytest.raises(DataError, match=r"df_resid has no entry for candidates \['b'\]"):
        inf.adjusted_se(params, bse, w, {"a": 3})
    with pytest.raises(DataError, match="differ in shape"):
        inf.averaged_fitted({"a": [1.0, 2.0], "b": [1.0]}, w)
    with pytest.raises(OptionError, match="kind='deviance' is not known"):
        inf.averaged_resid([1.0], [1.0], kind="deviance")
    with pytest.raises(OptionError, match="family='multinomial'"):
        inf.averaged_resid([1.0], [0.5], kind="pearson", family="multinomial")
    with pytest.raises(DataError, match="row 1;"):
        inf.averaged_resid([1.0, 1.0], [0.5, 1.0], kind="pearson", family="binomial")


def test_bad_cv_plus_input():
    y, oof, folds = np.zeros(6), np.ones(6), np.arange(6) % 2
    pred = np.zeros((2, 3))
    with pytest.raises(FoldError, match="fold indices 0..1"):
        inf.cv_plus_interval(y, oof, folds + 1, pred)
    with pytest.raises(DataError, match="y has 6 rows but oof_prediction has 5"):
        inf.cv_plus_interval(y, oof[:5], folds, pred)
    with pytest.raises(DataError, match=r"oof_prediction is not finite at row 2"):
        inf.cv_plus_interval(y, np.where(np.arange(6) == 2, np.nan, 1.0), folds, pred)
    with pytest.raises(DataError, match=r"\(K, m\) array"):
        inf.cv_plus_interval(y, oof, folds, np.zeros((2, 3, 1)))
    with pytest.raises(OptionError, match="prediction sets"):
        inf.cv_plus_interval(y, oof, folds, pred, family="binomial")
    with pytest.raises(OptionError, match="integer=True is for counts"):
        inf.cv_plus_interval(y, oof, folds, pred, integer=True)


# ---------------------------------------------------------------------------
# adaptive prediction sets


def _brute_aps_score(p, c, u):
    """Romano, Sesia & Candès (2020): mass of the classes ranked above c, plus u * p_c.

    Classes are ranked by decreasing probability, ties by class order.
    """
    above = sum(q for d, q in enumerate(p) if q > p[c] or (q == p[c] and d < c))
    return above + u * p[c]


def _dirichlet_folds(rng, n, k, m, n_classes):
    """Random class probabilities on a 1/64 grid, so sums are exact and ties occur."""

    def grid(size):
        p = np.floor(rng.dirichlet(np.ones(n_classes), size=size) * 64) / 64
        p[..., 0] += 1 - p.sum(axis=-1)
        return p

    y = rng.integers(0, n_classes, n)
    folds = rng.permutation(np.arange(n) % k)
    return y, grid(n), folds, grid((k, m))


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("alpha", [0.1, 0.3])
def test_aps_sets_match_brute_force(randomize, alpha):
    rng = np.random.default_rng(5)
    n, k, m, n_classes = 41, 4, 9, 4
    y, oof, folds, new = _dirichlet_folds(rng, n, k, m, n_classes)
    sets = inf.aps_prediction_sets(y, oof, folds, new, alpha, randomize=randomize, seed=17)
    # The documented draws: n uniforms for the training rows, then m for the new rows.
    draws = np.random.default_rng(17)
    u_train = draws.uniform(size=n) if randomize else np.ones(n)
    u_new = draws.uniform(size=m) if randomize else np.ones(m)
    train = [_brute_aps_score(list(oof[i]), y[i], u_train[i]) for i in range(n)]
    threshold = (1 - Fraction(str(alpha))) * (n + 1)
    for j in range(m):
        for c in range(n_classes):
            count = sum(train[i] < _brute_aps_score(list(new[folds[i], j]), c, u_new[j])
                        for i in range(n))
            assert sets[j, c] == (count < threshold), (j, c)
    assert sets.any(axis=1).all()


def _gaussian_class_proba(y_train, x_train, x_new, n_classes=3):
    """Gaussian classes with estimated means and priors and a common unit variance."""
    mu = np.array([x_train[y_train == c].mean() for c in range(n_classes)])
    prior = np.array([np.mean(y_train == c) for c in range(n_classes)])
    logit = np.log(prior) - 0.5 * (x_new[:, None] - mu) ** 2
    p = np.exp(logit - logit.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def test_aps_sets_cover_the_true_class_at_the_nominal_level():
    rng = np.random.default_rng(7)
    n, k, m, alpha, means = 90, 5, 50, 0.1, np.array([-1.0, 0.0, 1.5])
    covered, sizes = [], []
    for _ in range(200):
        y = rng.integers(0, 3, n + m)
        x = means[y] + rng.normal(size=n + m)
        folds = rng.permutation(np.arange(n) % k)
        oof = np.empty((n, 3))
        new = np.empty((k, m, 3))
        for f in range(k):
            out = folds == f
            oof[out] = _gaussian_class_proba(y[:n][~out], x[:n][~out], x[:n][out])
            new[f] = _gaussian_class_proba(y[:n][~out], x[:n][~out], x[n:])
        sets = inf.aps_prediction_sets(y[:n], oof, folds, new, alpha, seed=rng)
        covered.append(sets[np.arange(m), y[n:]].mean())
        sizes.append(sets.sum(axis=1).mean())
    coverage = np.mean(covered)
    print(f"APS coverage {coverage:.4f}, mean set size {np.mean(sizes):.2f}")
    assert coverage >= 1 - 2 * alpha
    assert abs(coverage - (1 - alpha)) < 0.025, coverage
    assert 1.0 < np.mean(sizes) < 3.0


def test_bad_aps_input():
    y, oof, folds, new = _dirichlet_folds(np.random.default_rng(0), 12, 3, 2, 3)
    with pytest.raises(DataError, match="outside 0..2"):
        inf.aps_prediction_sets(np.where(np.arange(12) == 4, 3, y), oof, folds, new)
    with pytest.raises(DataError, match=r"\(K, m, C\)"):
        inf.aps_prediction_sets(y, oof, folds, new[:, :, :2])
    with pytest.raises(FoldError, match="fold index 0..2"):
        inf.aps_prediction_sets(y, oof, folds + 1, new)
