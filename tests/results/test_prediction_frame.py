"""get_prediction(...).summary_frame(): statsmodels' columns and values on a one-candidate fit.

The one candidate's refit is statsmodels' model on the same columns, so the mean columns are
its ``get_prediction(...).summary_frame()``: 1e-8 relative (the coefficients agree to about
1e-10 on these designs; the delta method is smooth in them). The observation columns are the
CV+ interval of ``predict(interval="prediction")``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

import pearlstats as pearl
from pearlstats.exceptions import OptionError

N, M = 120, 5
MEAN = ["mean", "mean_se", "mean_ci_lower", "mean_ci_upper"]


def _data(family: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    x, a = rng.normal(size=n), rng.normal(size=(n, 2))
    eta = 0.2 + 0.4 * x + 0.3 * a[:, 1]
    y = {"gaussian": eta + rng.normal(size=n) * (1 + np.abs(x)),
         "poisson": rng.poisson(np.exp(eta)).astype(float),
         "binomial": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)}[family]
    return {"y": y, "x": x, "a": a}


def _fit(family, cov_type="nonrobust"):
    data = _data(family, N, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pearl.fit("y ~ x + block(a)", data, family=family, seed=0, honest=3,
                        cov_type=cov_type)
    new = _data(family, M, 1)
    X = np.column_stack([np.ones(N), data["x"], data["a"]])
    Xnew = np.column_stack([np.ones(M), new["x"], new["a"]])
    return res, new, X, data["y"], Xnew


@pytest.mark.parametrize("cov_type", ["nonrobust", "HC3"])
def test_gaussian_summary_frame_equals_statsmodels(cov_type):
    res, new, X, y, Xnew = _fit("gaussian", cov_type)
    ols = sm.OLS(y, X).fit()
    ols = ols if cov_type == "nonrobust" else ols.get_robustcov_results(cov_type)
    frame = res.get_prediction(new).summary_frame(alpha=0.1)
    expected = ols.get_prediction(Xnew).summary_frame(alpha=0.1)
    assert list(frame.columns) == list(expected.columns)  # statsmodels' six columns
    np.testing.assert_allclose(frame[MEAN].to_numpy(), expected[MEAN].to_numpy(), rtol=1e-8)
    cv_plus = res.predict(new, interval="prediction", alpha=0.1)
    np.testing.assert_allclose(frame[["obs_ci_lower", "obs_ci_upper"]].to_numpy(),
                               cv_plus[["lower", "upper"]].to_numpy(), rtol=1e-12)
    prediction = res.get_prediction(new)
    np.testing.assert_allclose(prediction.predicted_mean, ols.predict(Xnew), rtol=1e-8)
    np.testing.assert_allclose(prediction.se_mean, np.sqrt(
        np.sum((Xnew @ ols.cov_params()) * Xnew, axis=1)), rtol=1e-8)  # x' V x by hand
    np.testing.assert_allclose(prediction.conf_int(), ols.get_prediction(Xnew).conf_int(),
                               rtol=1e-8)


@pytest.mark.parametrize("family", ["poisson", "binomial"])
def test_glm_mean_columns_equal_statsmodels(family):
    res, new, X, y, Xnew = _fit(family)
    glm = sm.GLM(y, X, family={"poisson": sm.families.Poisson(),
                               "binomial": sm.families.Binomial()}[family]).fit(tol=1e-12)
    frame = res.get_prediction(new).summary_frame()
    expected = glm.get_prediction(Xnew).summary_frame()
    np.testing.assert_allclose(frame[MEAN].to_numpy(), expected[MEAN].to_numpy(), rtol=1e-8)
    if family == "binomial":  # a class has no interval: prediction sets instead
        assert "obs_ci_lower" not in frame
        with pytest.raises(OptionError, match="interval='set'"):
            res.get_prediction(new).conf_int(obs=True)
    else:
        assert list(frame.columns[-2:]) == ["obs_ci_lower", "obs_ci_upper"]


def test_binomial_interval_where_the_mean_rounds_to_one_equals_statsmodels():
    """Far out (eta up to about 80) the mean rounds to 1; the interval is still statsmodels'
    eta +- z se_eta mapped back (it was NaN: logit(1) and a slope of 0). Tolerance: the
    coefficients agree to about 1e-8 relative (both fits converge far below it), which moves
    eta by at most 1e-8 * 80 and so the tail terms expit(-eta) by under 1e-6 relative."""
    res, new, X, y, _ = _fit("binomial")
    far = {"x": np.zeros(4), "a": np.column_stack([np.zeros(4), [40.0, 80.0, 120.0, 160.0]])}
    Xfar = np.column_stack([np.ones(4), far["x"], far["a"]])
    glm = sm.GLM(y, X, family=sm.families.Binomial()).fit(tol=1e-12)
    frame = res.get_prediction(far).summary_frame(alpha=0.05)
    expected = glm.get_prediction(Xfar).summary_frame(alpha=0.05)
    assert (frame["mean"].to_numpy()[1:] == 1.0).all()  # the case: rounded to 1
    assert np.isfinite(frame[MEAN].to_numpy()).all()
    np.testing.assert_allclose(frame[MEAN].to_numpy(), expected[MEAN].to_numpy(), rtol=1e-5)


@pytest.mark.parametrize("family", ["poisson", "binomial"])
def test_a_glm_confidence_interval_request_names_get_prediction(family):
    """predict(interval="confidence") is gaussian only; for a GLM the refusal names
    get_prediction(...).summary_frame(), whose mean interval is statsmodels' (1e-8, as above)."""
    res, new, X, y, Xnew = _fit(family)
    with pytest.raises(OptionError, match=r"get_prediction\(rows\)\.summary_frame\(\)"):
        res.predict(new, interval="confidence")
    glm = sm.GLM(y, X, family={"poisson": sm.families.Poisson(),
                               "binomial": sm.families.Binomial()}[family]).fit(tol=1e-12)
    frame = res.get_prediction(new).summary_frame()
    expected = glm.get_prediction(Xnew).summary_frame()
    np.testing.assert_allclose(frame[["mean_ci_lower", "mean_ci_upper"]].to_numpy(),
                               expected[["mean_ci_lower", "mean_ci_upper"]].to_numpy(), rtol=1e-8)


def test_multinomial_get_prediction_is_refused_by_name():
    rng = np.random.default_rng(0)
    data = {"y": rng.choice(["a", "b", "c"], 90), "a": rng.normal(size=(90, 2))}
    res = pearl.fit("y ~ block(a)", data, family="multinomial", seed=0, honest=False)
    with pytest.raises(OptionError, match="multinomial"):
        res.get_prediction({"a": np.zeros((1, 2))})


@pytest.mark.parametrize("family", ["gaussian", "poisson", "binomial"])
@pytest.mark.parametrize("alpha", [-0.1, 0, 1, 1.5, True, "0.1"])
def test_every_family_refuses_an_alpha_outside_0_1_by_name(family, alpha):
    """A binomial or Poisson mean interval at alpha = 1.5 had lower > upper, at 0 the whole
    range, at -0.1 NaN (only gaussian fits checked alpha); now every family refuses it."""
    res, new, *_ = _fit(family)
    prediction = res.get_prediction(new)
    for call in (lambda: prediction.conf_int(alpha=alpha),
                 lambda: prediction.summary_frame(alpha=alpha)):
        with pytest.raises(OptionError, match="alpha="):
            call()
    if family != "binomial":
        with pytest.raises(OptionError, match="alpha="):
            prediction.conf_int(obs=True, alpha=alpha)


def test_a_poisson_interval_refusal_offers_only_what_it_gives():
    """interval='set' on a Poisson fit offered 'confidence', which it then refused."""
    res, new, *_ = _fit("poisson")
    with pytest.raises(OptionError) as refused:
        res.predict(new, interval="set")
    assert "'prediction'" in str(refused.value) and "'confidence'" not in str(refused.value)
    res.predict(new, interval="prediction")  # what the message offers works


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_get_prediction_results_pickle_and_give_the_same_frame(family):
    """get_prediction's results held closures and did not pickle (statsmodels' do)."""
    import pickle

    res, new, *_ = _fit(family)
    prediction = res.get_prediction(new)
    again = pickle.loads(pickle.dumps(prediction))
    assert again.summary_frame(alpha=0.1).equals(prediction.summary_frame(alpha=0.1))


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_a_tiny_alpha_gives_finite_bounds_from_the_exact_quantile(family):
    """At alpha = 1e-17, 1 - alpha / 2 rounds to 1: ppf gave inf / inf = NaN bounds (and
    statsmodels gives +-inf); the quantile isf(alpha / 2) is finite (about 8.6 for z)."""
    res, new, *_ = _fit(family)
    alpha = 1e-17
    frame = res.get_prediction(new).summary_frame(alpha=alpha)
    assert np.isfinite(frame[MEAN].to_numpy()).all()
    if family == "gaussian":  # one candidate: the mean +- t_{df, 1 - alpha/2} SE, as statsmodels
        quantile = stats.t.isf(alpha / 2, res.candidates["a"].df_resid)
        np.testing.assert_allclose(frame["mean_ci_upper"] - frame["mean"],
                                   quantile * frame["mean_se"], rtol=1e-12)
        bounds = res.conf_int(alpha=alpha)
        np.testing.assert_allclose(bounds["upper"] - res.params, quantile * res.bse,
                                   rtol=1e-12)


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_a_cv_plus_interval_takes_numpy_alphas_and_refuses_crossing_bounds(family):
    """np.float32(0.1) was refused as 'not between 0 and 1' on the observation path only; at
    alpha > 0.5 the CV+ bounds crossed (lower > upper) without a word."""
    res, new, *_ = _fit(family)
    prediction = res.get_prediction(new)
    np.testing.assert_allclose(prediction.conf_int(obs=True, alpha=np.float32(0.25)),
                               prediction.conf_int(obs=True, alpha=0.25))
    bounds = prediction.conf_int(obs=True, alpha=0.5)  # the median of both sides: ordered
    assert (bounds[:, 0] <= bounds[:, 1]).all()
    with pytest.raises(OptionError, match="alpha <= 0.5"):
        prediction.conf_int(obs=True, alpha=0.9)
    with pytest.raises(OptionError, match="alpha <= 0.5"):
        res.predict(new, interval="prediction", alpha=0.6)
