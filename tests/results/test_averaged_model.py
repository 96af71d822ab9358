"""The averaged model's statsmodels-like API: params, bse, conf_int, fittedvalues, resid.

Expected numbers are computed here, term by term, from ``res.candidates`` (the
statsmodels refits) and ``res.weights`` with the published formulas (MuMIn's
full and conditional averages; Burnham & Anderson 2002, eq. 6.12, eq. 4.9 and
section 4.3.3), or from a direct statsmodels fit -- never with
pearlstats.inference. MuMIn itself is not installed here (Debian has no
r-cran-mumin), so the formulas are the reference.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

import pearlstats as pearl
from pearlstats.exceptions import OptionError, PearlWarning

FORMULA = "y ~ age + block(a) + block(b)"


def _data(seed: int = 0, n: int = 150):
    """Blocks a and b are noisy proxies of one latent z, so all three candidates get weight."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    age = rng.normal(size=n)
    a = np.c_[z + rng.normal(scale=0.8, size=n), rng.normal(size=n)]
    b = (z + rng.normal(scale=0.8, size=n))[:, None]
    eta = 0.4 * age + 0.8 * z
    ys = {
        "gaussian": eta + rng.normal(size=n),
        "binomial": np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), "low", "high"),
        "poisson": rng.poisson(np.exp(0.3 + 0.5 * eta)),
    }
    return {"age": age, "a": a, "b": b}, ys


@pytest.fixture(scope="module")
def fits():
    blocks, ys = _data()
    return {family: pearl.fit(FORMULA, {**blocks, "y": y}, family=family, seed=0)
            for family, y in ys.items()}


COMMON = ["Intercept", "age"]


def _direct_average(res, revised=True, average="full", z_factor=False, alpha=0.05):
    """Full or conditional average and its SE (eq. 6.12 or 4.9) over the positive-weight
    candidates, term by term; with *z_factor* each se_j is inflated by t_{df_j} / z."""
    w = {j: float(v) for j, v in res.weights.items() if v > 0}
    refits = {j: res.candidates[j] for j in w}
    terms = []
    for r in refits.values():
        terms += [t for t in r.params.index if t not in terms]
    z = stats.norm.ppf(1 - alpha / 2)
    avg, se = {}, {}
    for t in terms:
        having = list(w) if average == "full" else [j for j in w if t in refits[j].params]
        total = sum(w[j] for j in having)
        v = {j: w[j] / total for j in having}
        b = {j: float(refits[j].params.get(t, 0.0)) for j in having}
        s = {j: float(refits[j].bse.get(t, 0.0))
             * (stats.t.ppf(1 - alpha / 2, refits[j].df_resid) / z if z_factor else 1.0)
             for j in having}
        avg[t] = sum(v[j] * b[j] for j in having)
        parts = {j: s[j] ** 2 + (b[j] - avg[t]) ** 2 for j in having}
        se[t] = (math.sqrt(sum(v[j] * parts[j] for j in having)) if revised
                 else sum(v[j] * math.sqrt(parts[j]) for j in having))
    return w, refits, avg, se


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_params_and_bse_are_the_average_of_the_refits_over_common_terms(fits, family):
    res = fits[family]
    w, refits, avg, se = _direct_average(res)
    assert len(w) >= 2, "the fixture must weight several candidates"
    assert list(res.params.index) == COMMON == list(res.bse.index)  # no block columns
    # The engines' coefficients equal statsmodels' to its convergence tolerance.
    tol = {"rtol": 1e-10, "atol": 1e-12} if family == "gaussian" else {"rtol": 1e-6, "atol": 1e-8}
    np.testing.assert_allclose(res.params, [avg[t] for t in COMMON], **tol)
    np.testing.assert_allclose(res.bse, [se[t] for t in COMMON], **tol)  # eq. 6.12 by default


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
@pytest.mark.parametrize("revised", [True, False])
@pytest.mark.parametrize("average", ["full", "conditional"])
def test_coef_table_is_mumins_full_or_conditional_average(fits, family, revised, average):
    res = fits[family]
    w, refits, avg, se = _direct_average(res, revised=revised, average=average)
    table = res.coef_table(terms="all", average=average, revised=revised)
    assert list(table.index) == COMMON + ["a[0]", "a[1]", "b[0]"]
    tol = {"rtol": 1e-10, "atol": 1e-12} if family == "gaussian" else {"rtol": 1e-6, "atol": 1e-8}
    np.testing.assert_allclose(table["coef"], [avg[t] for t in table.index], **tol)
    np.testing.assert_allclose(table["std err"], [se[t] for t in table.index], **tol)
    importance = [sum(w[j] for j in w if t in refits[j].params) for t in table.index]
    np.testing.assert_allclose(table["weight"], importance, rtol=1e-12)
    # Block columns get no interval; the common terms get conf_int's.
    assert table.loc[["a[0]", "a[1]", "b[0]"], ["lower", "upper"]].isna().all().all()
    pd.testing.assert_frame_equal(table.loc[COMMON, ["lower", "upper"]],
                                  res.conf_int(revised=revised), check_names=False)
    assert "no interval" in table.attrs["note"]


def test_eq_4_9_is_available_and_smaller_than_the_default(fits):
    res = fits["gaussian"]
    _, _, _, se49 = _direct_average(res, revised=False)
    old = res.coef_table(revised=False)["std err"]
    np.testing.assert_allclose(old, [se49[t] for t in COMMON], rtol=1e-10)
    assert (old <= res.bse + 1e-15).all()


def test_candidate_params_table_is_each_candidates_statsmodels_fit(fits):
    res = fits["gaussian"]
    table = res.candidate_params()
    w = {j: float(v) for j, v in res.weights.items() if v > 0}
    assert list(table.index.get_level_values("candidate").unique()) == list(w)
    for j in w:
        direct = res.candidates[j]
        part = table.loc[j]
        assert (part["weight"] == w[j]).all()
        np.testing.assert_allclose(part["coef"], direct.params, rtol=1e-10)
        np.testing.assert_allclose(part["std err"], direct.bse, rtol=1e-10)
        np.testing.assert_allclose(part[["lower", "upper"]], direct.conf_int(), rtol=1e-10)
    one = res.candidate_params(["a"], alpha=0.1)
    np.testing.assert_allclose(one[["lower", "upper"]], res.candidates["a"].conf_int(0.1),
                               rtol=1e-10)
    with pytest.raises(OptionError, match="average='subset'"):
        res.coef_table(average="subset")


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_conf_int_uses_t_quantiles_for_ols_and_z_otherwise(fits, family):
    res = fits[family]
    for revised in (True, False):
        w, refits, avg, se = _direct_average(res, revised=revised, alpha=0.1,
                                             z_factor=family == "gaussian")
        z = stats.norm.ppf(0.95)
        ci = res.conf_int(alpha=0.1, revised=revised)
        assert list(ci.index) == COMMON
        for t in COMMON:
            assert ci.loc[t, "lower"] == pytest.approx(avg[t] - z * se[t], rel=1e-6, abs=1e-8)
            assert ci.loc[t, "upper"] == pytest.approx(avg[t] + z * se[t], rel=1e-6, abs=1e-8)


def test_single_ols_candidate_reproduces_statsmodels():
    blocks, ys = _data(seed=1)
    x = blocks["age"]
    res = pearl.fit("y ~ x + block(a)", {"y": ys["gaussian"], "x": x, "a": blocks["a"]}, seed=0)
    assert res.weights.tolist() == [1.0]
    X = pd.DataFrame({"Intercept": 1.0, "x": x, "a[0]": blocks["a"][:, 0],
                      "a[1]": blocks["a"][:, 1]})
    direct = sm.OLS(ys["gaussian"], X).fit()
    common = ["Intercept", "x"]
    assert list(res.params.index) == common
    np.testing.assert_allclose(res.params, direct.params[common], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(res.bse, direct.bse[common], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(res.conf_int(), direct.conf_int().loc[common], rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(res.conf_int(0.2), direct.conf_int(0.2).loc[common],
                               rtol=1e-10, atol=1e-10)
    every = res.candidate_params(alpha=0.2).loc["a"]
    assert list(every.index) == list(X.columns)
    np.testing.assert_allclose(every["coef"], direct.params, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(every["std err"], direct.bse, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(every[["lower", "upper"]], direct.conf_int(0.2), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(res.fittedvalues, direct.fittedvalues, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(res.resid, direct.resid, rtol=1e-10, atol=1e-10)
    new = {"x": np.array([0.0, 1.5]), "a": np.array([[0.2, -1.0], [1.0, 0.5]])}
    got = res.predict(new, interval="confidence", alpha=0.1)
    frame = direct.get_prediction(np.c_[np.ones(2), new["x"], new["a"]]).summary_frame(alpha=0.1)
    assert list(got.columns) == ["mean", "mean_se", "lower", "upper"]
    for ours, theirs in [("mean", "mean"), ("mean_se", "mean_se"), ("lower", "mean_ci_lower"),
                         ("upper", "mean_ci_upper")]:
        np.testing.assert_allclose(got[ours], frame[theirs], rtol=1e-10, atol=1e-10)


def test_fitted_values_keep_the_data_rows_labels_as_statsmodels_does():
    # A DataFrame with string labels and a missing value: statsmodels' formula API indexes its
    # fitted values and residuals by the labels of the rows it kept; so do ours, and the
    # out-of-fold predictions.
    blocks, ys = _data(seed=2)
    n = len(ys["gaussian"])
    labels = [f"r{i}" for i in range(n)][::-1]
    frame = pd.DataFrame({"y": ys["gaussian"], "x": blocks["age"], "a0": blocks["a"][:, 0],
                          "a1": blocks["a"][:, 1]}, index=labels)
    frame.iloc[3, 1] = np.nan
    block = {"a": frame[["a0", "a1"]]}
    res = pearl.fit("y ~ x + block(a)", frame, blocks=block, missing="drop", seed=0,
                    honest=False)
    assert res.dropped_rows.tolist() == [3]
    direct = sm.OLS.from_formula("y ~ x + a0 + a1", frame, missing="drop").fit()
    pd.testing.assert_index_equal(res.row_labels, direct.fittedvalues.index)
    pd.testing.assert_series_equal(res.fittedvalues, direct.fittedvalues, check_names=False,
                                   rtol=1e-10, atol=1e-10)
    pd.testing.assert_series_equal(res.resid, direct.resid, check_names=False, rtol=1e-10,
                                   atol=1e-10)
    pd.testing.assert_index_equal(res.cv_predictions.index, direct.fittedvalues.index)
    # Arrays and dicts have no labels: positions, as before.
    plain = pearl.fit("y ~ x + block(a)", {"y": ys["gaussian"], "x": blocks["age"]},
                      blocks={"a": blocks["a"]}, seed=0, honest=False)
    pd.testing.assert_index_equal(plain.fittedvalues.index, pd.RangeIndex(n))


def test_confidence_interval_combines_candidates_like_coefficients(fits):
    res = fits["gaussian"]
    w = {j: float(v) for j, v in res.weights.items() if v > 0}
    blocks, _ = _data(seed=5, n=4)
    assert len(w) > 1  # the two formulas differ only for an average
    got = res.predict(blocks, interval="confidence")
    got_49 = res.predict(blocks, interval="confidence", revised=False)
    rows = {"Intercept": np.ones(4), "age": blocks["age"], "a[0]": blocks["a"][:, 0],
            "a[1]": blocks["a"][:, 1], "b[0]": blocks["b"][:, 0]}
    for i in range(4):
        pred = {j: res.candidates[j].get_prediction(
            np.array([[rows[t][i] for t in res.candidates[j].params.index]])) for j in w}
        m = {j: float(p.predicted_mean[0]) for j, p in pred.items()}
        s = {j: float(p.se_mean[0]) for j, p in pred.items()}
        mean = sum(w[j] * m[j] for j in w)
        assert got["mean"][i] == pytest.approx(mean, rel=1e-10)
        assert got["mean"][i] == pytest.approx(res.predict(blocks)[i], rel=1e-12)
        # Burnham & Anderson (2002) eq. 6.12, as bse; eq. 4.9 with revised=False
        assert got["mean_se"][i] == pytest.approx(
            math.sqrt(sum(w[j] * (s[j] ** 2 + (m[j] - mean) ** 2) for j in w)), rel=1e-8)
        assert got_49["mean_se"][i] == pytest.approx(
            sum(w[j] * math.sqrt(s[j] ** 2 + (m[j] - mean) ** 2) for j in w), rel=1e-8)


def test_the_mean_at_a_row_that_picks_a_coefficient_has_that_coefficients_interval():
    """A row whose covariates and block columns are all 0 has the intercept as its mean: its SE
    and interval are the intercept's (gaussian: the mean is linear in the coefficients; a
    GLM's averaged mean averages the candidates' means, not their linear predictors)."""
    blocks, ys = _data(seed=4)
    res = pearl.fit("y ~ age + block(a) + block(b)", dict(blocks, y=ys["gaussian"]), seed=0,
                    honest=False)
    assert (res.weights > 1e-6).sum() > 1  # an average, where eq. 6.12 and eq. 4.9 differ
    zero = {"age": np.zeros(1), "a": np.zeros((1, 2)), "b": np.zeros((1, 1))}
    frame = res.get_prediction(zero).summary_frame(alpha=0.1)
    # the same linear functional and the same sums: equal to rounding
    assert frame["mean"].iloc[0] == pytest.approx(res.params["Intercept"], rel=1e-10)
    assert frame["mean_se"].iloc[0] == pytest.approx(res.bse["Intercept"], rel=1e-10)
    lower, upper = res.conf_int(alpha=0.1).loc["Intercept"]
    assert frame["mean_ci_lower"].iloc[0] == pytest.approx(lower, rel=1e-10)
    assert frame["mean_ci_upper"].iloc[0] == pytest.approx(upper, rel=1e-10)
    old = res.get_prediction(zero, revised=False).summary_frame(alpha=0.1)
    lower, upper = res.conf_int(alpha=0.1, revised=False).loc["Intercept"]
    assert old["mean_ci_lower"].iloc[0] == pytest.approx(lower, rel=1e-10)
    assert old["mean_se"].iloc[0] < frame["mean_se"].iloc[0]  # Jensen: eq. 4.9 <= eq. 6.12


def test_binomial_predictions_are_named_after_their_class_and_match_logit():
    blocks, ys = _data(seed=2)
    y = ys["binomial"]
    res = pearl.fit("y ~ block(a)", {"y": y, "a": blocks["a"]}, family="binomial", seed=0)
    assert res.classes == ["high", "low"]
    direct = sm.Logit((y == "low").astype(float), sm.add_constant(blocks["a"])).fit(disp=0)
    pred = res.predict({"a": blocks["a"][:5]})
    assert pred.name == "P(y=low)" and res.fittedvalues.name == "P(y=low)"
    np.testing.assert_allclose(pred, direct.predict(sm.add_constant(blocks["a"][:5])), rtol=1e-7)
    np.testing.assert_allclose(res.fittedvalues, direct.predict(), rtol=1e-7)
    glm = sm.GLM((y == "low").astype(float), sm.add_constant(blocks["a"]),
                 family=sm.families.Binomial()).fit()
    np.testing.assert_allclose(res.resid_pearson, glm.resid_pearson, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(res.resid, glm.resid_response, rtol=1e-6, atol=1e-9)


def test_poisson_residuals_are_those_of_the_averaged_mean(fits):
    res = fits["poisson"]
    w = {j: float(v) for j, v in res.weights.items() if v > 0}
    mu = sum(w[j] * np.asarray(res.candidates[j].fittedvalues) for j in w)
    y = np.asarray(res.candidates[next(iter(w))].model.endog)
    np.testing.assert_allclose(res.fittedvalues, mu, rtol=1e-7)
    np.testing.assert_allclose(res.resid, y - mu, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res.residuals(kind="pearson"), (y - mu) / np.sqrt(mu), rtol=1e-6)


def test_candidate_table_matches_statsmodels_refits(fits):
    res = fits["gaussian"]
    table = res.candidate_table
    assert list(table.columns) == ["weight", "cv_risk", "n_params", "df_model", "llf", "aic",
                                   "aicc", "bic"]
    for j in res.candidate_labels:
        assert table.loc[j, "n_params"] == len(res.candidates[j].params)
        assert table.loc[j, "df_model"] == res.candidates[j].df_model
        assert table.loc[j, "weight"] == res.weights[j]


def test_terms_of_zero_weight_candidates_do_not_enter():
    blocks, ys = _data(seed=0)
    junk = np.random.default_rng(9).normal(size=(150, 3))
    res = pearl.fit("y ~ age + block(a) + block(c)", {"y": ys["gaussian"], "age": blocks["age"],
                                                     "a": blocks["a"], "c": junk}, seed=0)
    assert res.weights["a"] == 1.0, "the junk block should get weight 0 here"
    table = res.coef_table(terms="all")
    assert list(table.index) == ["Intercept", "age", "a[0]", "a[1]"]
    np.testing.assert_allclose(table["coef"], res.candidates["a"].params, rtol=1e-10)


def test_multinomial_params_average_each_class_equation():
    blocks, ys = _data(seed=3)
    y = np.digitize(ys["gaussian"], [-0.5, 0.5])
    res = pearl.fit(FORMULA, {**blocks, "y": y}, family="multinomial", seed=0)
    w = {j: float(v) for j, v in res.weights.items() if v > 0}
    assert list(res.params.columns) == [1, 2]
    for c, column in enumerate(res.params.columns):
        for t in res.params.index:
            refit = {j: res.candidates[j].params for j in w}
            expected = sum(w[j] * (float(p.loc[t, c]) if t in p.index else 0.0)
                           for j, p in refit.items())
            assert res.params.loc[t, column] == pytest.approx(expected, rel=1e-6, abs=1e-8)
    assert res.conf_int().index[0] == (1, "Intercept")
    table = res.coef_table(terms="all", average="conditional")
    for (column, t), value in table["coef"].items():
        having = {j: res.candidates[j].params for j in w if t in res.candidates[j].params.index}
        total = sum(w[j] for j in having)
        c = list(res.params.columns).index(column)
        expected = sum(w[j] * float(p.loc[t, c]) for j, p in having.items()) / total
        assert value == pytest.approx(expected, rel=1e-6, abs=1e-8)
    tidy = res.candidate_params()
    assert list(tidy.index.names) == ["candidate", "class", "term"]
    j = next(iter(w))
    np.testing.assert_allclose(tidy.loc[(j, 2), "std err"], res.candidates[j].bse[1], rtol=1e-6)
    assert res.resid.shape == (150, 3)
    np.testing.assert_allclose(res.resid.sum(axis=1), 0.0, atol=1e-12)


def test_ridge_sandwich_standard_errors_and_warning():
    blocks, ys = _data(seed=1)
    y, ridge = ys["gaussian"], 0.05
    res = pearl.fit("y ~ x + block(a)", {"y": y, "x": blocks["age"], "a": blocks["a"]},
                    seed=0, ridge=ridge)
    X = np.c_[np.ones(150), blocks["age"], blocks["a"]]
    n = len(y)
    # Engines' penalty: ridge / 2 * sum(var(column) * b**2) on the mean loss, none on the intercept.
    A = X.T @ X + n * ridge * np.diag(np.r_[0.0, X[:, 1:].var(axis=0)])
    b = np.linalg.solve(A, X.T @ y)
    inv = np.linalg.inv(A)
    df = n - np.trace(X @ inv @ X.T)
    cov = np.sum((y - X @ b) ** 2) / df * inv @ X.T @ X @ inv
    np.testing.assert_allclose(res.params, b[:2], rtol=1e-9)
    with pytest.warns(PearlWarning, match="ridge-penalised"):
        se = res.bse
    np.testing.assert_allclose(se, np.sqrt(np.diag(cov))[:2], rtol=1e-8)
    with pytest.warns(PearlWarning, match="ridge-penalised"):
        table = res.coef_table(terms="all")
    np.testing.assert_allclose(table["coef"], b, rtol=1e-9)
    np.testing.assert_allclose(table["std err"], np.sqrt(np.diag(cov)), rtol=1e-8)
    with pytest.warns(PearlWarning, match="ridge-penalised"):
        res.conf_int()
    assert "ridge=0.05" in res.ridge_note


def test_ridge_note_of_a_separated_candidate_does_not_advise_refitting_with_ridge_0():
    # The fit's ridge is 0; the ladder chose 1e-4 because block a separates the classes.
    # "refit with ridge=0 for valid inference" would repeat the very fit that separated.
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=(80, 2)), rng.normal(size=(80, 2))
    y = np.where(a[:, 0] > 0, "pos", "neg")
    with pytest.warns(pearl.SeparationWarning):
        res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
                        family="binomial", seed=0, honest=False)
    assert res.ridge == 0 and res.weights["a"] == 1
    note = res.ridge_note
    assert "ridge=0.0001" in note and "for ['a'] because the classes separate" in note
    assert "refit with ridge=0" not in note
    with pytest.warns(PearlWarning, match=r"for \['a'\] because the classes separate"):
        res.conf_int()
    assert "refit with ridge=0" not in str(res.summary())


def test_unpenalised_fit_has_no_ridge_note_and_no_warning():
    blocks, ys = _data(seed=1, n=40)
    res = pearl.fit("y ~ block(a)", {"y": ys["gaussian"], "a": blocks["a"]}, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PearlWarning)
        res.conf_int()
    assert res.ridge_note is None


def test_bad_requests_raise_option_errors(fits):
    new = {key: value[:3] for key, value in _data(seed=4)[0].items()}
    with pytest.raises(OptionError, match="interval='bogus'"):
        fits["gaussian"].predict(new, interval="bogus")
    with pytest.raises(OptionError, match="gaussian"):
        fits["poisson"].predict(new, interval="confidence")
    with pytest.raises(OptionError, match="alpha"):
        fits["gaussian"].predict(new, interval="confidence", alpha=1.5)
    with pytest.raises(OptionError, match="deviance"):
        fits["poisson"].residuals(kind="deviance")
