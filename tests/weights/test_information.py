"""Information-criterion model averaging (the AICc and BIC strategies), the covariates-only
baseline and the note when nothing beats the intercept-only model.

References: statsmodels' log-likelihoods of the same fits (OLS, WLS, Logit, GLM Poisson,
MNLogit) and MuMIn's weights written out by hand (Burnham & Anderson 2002, eq. 2.14).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.weights.information import akaike_weights, criteria, log_likelihood

# The log-likelihoods are sums of n row terms computed two ways: they agree to a few ulps per
# row, i.e. to ~1e-12 relative for n in the hundreds.
RTOL = 1e-10


def _design(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = sm.add_constant(rng.normal(size=(n, 3)))
    eta = X @ np.array([0.2, 0.8, -0.5, 0.0])
    return rng, X, eta


@pytest.mark.parametrize("weight_type", [None, "variance"])
def test_gaussian_log_likelihood_equals_statsmodels_ols_and_wls(weight_type):
    rng, X, eta = _design()
    y = eta + rng.normal(size=len(eta))
    w = rng.uniform(0.5, 2.0, size=len(y)) if weight_type else None
    fit = sm.WLS(y, X, weights=w).fit() if weight_type else sm.OLS(y, X).fit()
    value = log_likelihood("gaussian", y, fit.fittedvalues, w, weight_type)
    np.testing.assert_allclose(value, fit.llf, rtol=RTOL)


def test_an_exact_gaussian_fit_has_an_infinite_log_likelihood_without_a_warning():
    # the maximum-likelihood variance of an exact fit is 0: the density, and so the llf, is
    # +inf (the limit); numpy's "divide by zero encountered in log" is no news to the user
    y = np.array([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert log_likelihood("gaussian", y, y.copy()) == np.inf


def test_frequency_weights_give_the_log_likelihood_of_repeated_rows():
    rng, X, eta = _design()
    y = eta + rng.normal(size=len(eta))
    counts = rng.integers(1, 4, size=len(y))
    repeated = sm.OLS(np.repeat(y, counts), np.repeat(X, counts, axis=0)).fit()
    mean = X @ repeated.params
    value = log_likelihood("gaussian", y, mean, counts.astype(float), "frequency")
    np.testing.assert_allclose(value, repeated.llf, rtol=RTOL)


def test_binomial_poisson_and_multinomial_log_likelihoods_equal_statsmodels():
    rng, X, eta = _design()
    y = (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float)
    logit = sm.Logit(y, X).fit(disp=0)
    np.testing.assert_allclose(log_likelihood("binomial", y, logit.predict(X)), logit.llf,
                               rtol=RTOL)
    counts = rng.poisson(np.exp(0.5 * eta)).astype(float)
    w = rng.uniform(0.5, 2.0, size=len(y))
    poisson = sm.GLM(counts, X, family=sm.families.Poisson(), var_weights=w).fit()
    np.testing.assert_allclose(
        log_likelihood("poisson", counts, poisson.mu, w, "variance"), poisson.llf, rtol=RTOL)
    classes = np.digitize(eta + rng.normal(size=len(eta)), [-0.5, 0.5])
    mnlogit = sm.MNLogit(classes, X).fit(disp=0)
    np.testing.assert_allclose(log_likelihood("multinomial", classes, mnlogit.predict(X)),
                               mnlogit.llf, rtol=RTOL)


def test_criteria_and_weights_follow_their_formulas():
    llf, k, n = np.array([-100.0, -98.0, np.nan]), np.array([3, 5, 2]), 40.0
    values = criteria(llf, k, n)
    np.testing.assert_allclose(values["AICc"][:2], -2 * llf[:2] + 2 * k[:2]
                               + 2 * k[:2] * (k[:2] + 1) / (n - k[:2] - 1), rtol=1e-15)
    np.testing.assert_allclose(values["BIC"][:2], -2 * llf[:2] + k[:2] * np.log(n), rtol=1e-15)
    assert np.isnan(values["AICc"][2])
    delta = values["AICc"][:2] - values["AICc"][:2].min()
    expected = np.exp(-delta / 2) / np.exp(-delta / 2).sum()
    np.testing.assert_allclose(akaike_weights(values["AICc"])[:2], expected, rtol=1e-15)
    assert akaike_weights(values["AICc"])[2] == 0.0
    # AICc is undefined (infinite: weight 0) when the candidate has n - 1 parameters or more
    assert np.isinf(criteria(np.array([-1.0]), np.array([39]), 40.0)["AICc"]).all()


def _binomial_data(n=200, seed=1):
    rng = np.random.default_rng(seed)
    a, b, x = rng.normal(size=(n, 2)), rng.normal(size=(n, 3)), rng.normal(size=n)
    eta = 0.9 * a[:, 0] - 0.6 * b[:, 2] + 0.4 * x
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    return pd.DataFrame({"y": y, "x": x}), {"a": a, "b": b}


def test_aicc_and_bic_strategies_are_mumin_weights_of_the_statsmodels_refits():
    data, blocks = _binomial_data()
    res = pearl.fit("y ~ x + block(a) + block(b)", data, blocks=blocks, family="binomial",
                    seed=0, honest=False)
    n = len(data)
    refits = [res.candidates[label] for label in res.candidate_labels]
    llf = np.array([refit.llf for refit in refits])
    k = np.array([len(refit.params) for refit in refits])
    np.testing.assert_allclose(res.candidate_table["llf"], llf, rtol=1e-8)
    # statsmodels' aic and bic (a logistic model has no scale parameter to count)
    aic = np.array([refit.aic for refit in refits])
    bic = np.array([refit.bic_llf if hasattr(refit, "bic_llf") else refit.bic for refit in refits])
    np.testing.assert_allclose(res.candidate_table["aic"], aic, rtol=1e-8)
    np.testing.assert_allclose(res.candidate_table["bic"], bic, rtol=1e-8)
    for name, value in {"AICc": aic + 2 * k * (k + 1) / (n - k - 1), "BIC": bic}.items():
        delta = value - value.min()
        expected = np.exp(-delta / 2) / np.exp(-delta / 2).sum()
        weights = res.strategy_weights.loc[name, res.candidate_labels]
        # llf agrees to 1e-8 relative (the refits' convergence), i.e. ~1e-6 absolute in Delta
        np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-12)
        assert res.strategy_weights.loc[name].drop(res.candidate_labels).eq(0).all()


def test_covariates_only_baseline_is_the_fit_of_the_covariates_alone():
    data, blocks = _binomial_data()
    res = pearl.fit("y ~ x + block(a) + block(b)", data, blocks=blocks, family="binomial",
                    seed=0, honest=False, cv=np.arange(len(data)) % 4)
    folds = np.arange(len(data)) % 4
    X = sm.add_constant(data["x"].to_numpy())
    losses = np.empty(len(data))
    for k in range(4):
        train = folds != k
        fit = sm.Logit(data["y"].to_numpy()[train], X[train]).fit(disp=0, tol=1e-12)
        p, y = fit.predict(X[~train]), data["y"].to_numpy()[~train]
        losses[~train] = -(y * np.log(p) + (1 - y) * np.log1p(-p))
    assert res.baselines.loc["Covariates", "candidate"] == "covariates only"
    # Newton fits stopped at their tolerances (1e-8 relative on the out-of-fold means)
    np.testing.assert_allclose(res.baselines.loc["Covariates", "cv_risk"], losses.mean(),
                               rtol=1e-8)
    assert "covariates only" not in res.weights.index  # a baseline, never weighted by PEARL
    # without covariates it is the intercept-only model: the Null row's risk, by another engine
    without = pearl.fit("y ~ block(a) + block(b)", data, blocks=blocks, family="binomial",
                        seed=0, honest=False)
    np.testing.assert_allclose(without.baselines.loc["Covariates", "cv_risk"],
                               without.baselines.loc["Null", "cv_risk"], rtol=1e-10)
    bare = pearl.fit("y ~ 0 + block(a) + block(b)", data, blocks=blocks, family="binomial",
                     seed=0, honest=False)
    assert bare.baselines.loc["Covariates", "candidate"] == "no intercept or covariate"


def test_a_note_says_when_pearl_does_not_beat_the_intercept_only_model():
    sentences = pearl.datasets.load_polarity()  # the README's binomial example
    reps = pearl.Representations({"lsi": pearl.LSI(10, columns="text"),
                                  "w2v": pearl.Word2Vec(10, columns="text")},
                                 seed=0).fit(sentences)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit("label ~ block(lsi) + block(w2v)", sentences, blocks=reps,
                        family="binomial", seed=0)
        text = str(res.summary())
    honest = res.honest
    assert 1 - honest.loc["Null", "ratio"] <= honest.loc["Null", "ratio_se"]  # the premise
    assert "is not below the intercept-only model's" in " ".join(text.split())
    # and not when the blocks carry signal
    data, blocks = _binomial_data()
    strong = pearl.fit("y ~ x + block(a) + block(b)", data, blocks=blocks, family="binomial",
                       seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        assert "intercept-only model's" not in " ".join(str(strong.summary()).split())
