"""The Null row of the strategies table: the intercept-only model (issue 29, item 3).

Its CV risk is recomputed here from statsmodels' intercept-only GLM fitted on each fold's
training rows (with the fit's offsets/exposure and observation weights), its honest risk
from each outer fold's training rows by hand, and the summary must show it with its note.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import xlogy

import pearlstats as pearl
from pearlstats.engines.intercept import intercept_only_predictions

SM_FAMILIES = {"gaussian": sm.families.Gaussian, "binomial": sm.families.Binomial,
               "poisson": sm.families.Poisson}


def _data(family: str, n: int = 120, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 1))
    eta = 0.3 + 0.7 * a[:, 0] - 0.4 * b[:, 0]
    if family == "gaussian":
        y = 5.0 + eta + rng.normal(size=n)
    elif family == "binomial":
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif family == "poisson":
        y = rng.poisson(np.exp(eta)).astype(float)
    else:
        scores = np.column_stack([np.zeros(n), eta, -eta + a[:, 1]])
        probabilities = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        y = np.array(["x", "y", "z"])[(rng.uniform(size=(n, 1)) > probabilities.cumsum(1))
                                      .sum(1)]
    return {"y": y, "a": a, "b": b}


def _loss(family: str, y: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Each row's loss under the family's default surrogate loss, written out."""
    if family == "gaussian":
        return (y - mean) ** 2
    if family == "binomial":
        return -np.log(np.where(y == 1, mean, 1 - mean))
    if family == "multinomial":
        return -np.log(mean[np.arange(len(y)), y])
    return 2 * (xlogy(y, y) - xlogy(y, mean) - (y - mean))


def _statsmodels_null(family, y, folds, offset=None, weights=None):
    """Each fold predicted by ``GLM(y, 1, offset=, freq_weights=)`` fitted on the other rows."""
    out = np.empty(len(y))
    for k in np.unique(folds):
        held = folds == k
        model = sm.GLM(y[~held], np.ones((int((~held).sum()), 1)),
                       family=SM_FAMILIES[family](),
                       offset=None if offset is None else offset[~held],
                       freq_weights=None if weights is None else weights[~held])
        out[held] = model.fit(tol=1e-14).predict(
            np.ones((int(held.sum()), 1)), offset=None if offset is None else offset[held])
    return out


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_null_cv_risk_equals_statsmodels_intercept_only_glm_per_fold(family):
    data = _data(family)
    res = pearl.fit("y ~ block(a) + block(b)", data, family=family, seed=1, honest=False)
    mean = _statsmodels_null(family, data["y"], res.folds)
    losses = _loss(family, data["y"], mean)
    row = res.baselines.loc["Null"]
    assert row["cv_risk"] == pytest.approx(losses.mean(), rel=1e-9)
    assert row["se"] == pytest.approx(losses.std(ddof=1) / np.sqrt(len(losses)), rel=1e-9)
    assert row["risk_ratio"] == pytest.approx(res.baselines.loc["PEARL", "cv_risk"]
                                              / losses.mean(), rel=1e-9)
    assert row["candidate"] == "intercept only"
    # a reference, not a candidate: no strategy weights it, and the weights are unchanged
    assert "Null" not in res.strategy_weights.index and "Null" not in res.weights.index


def test_null_cv_risk_multinomial_is_the_training_class_frequencies():
    data = _data("multinomial")
    res = pearl.fit("y ~ block(a) + block(b)", data, family="multinomial", seed=1,
                    honest=False)
    codes = np.searchsorted(res.classes, data["y"])
    frequencies = np.empty((len(codes), 3))
    for k in range(res.n_folds):
        held = res.folds == k
        frequencies[held] = np.bincount(codes[~held], minlength=3) / (~held).sum()
    expected = _loss("multinomial", codes, frequencies).mean()
    assert res.baselines.loc["Null", "cv_risk"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("family", "weight_type"), [("poisson", "frequency"),
                                                     ("binomial", "variance"),
                                                     ("gaussian", "frequency")])
def test_null_takes_the_offsets_exposure_and_weights(family, weight_type):
    data = _data(family, seed=4)
    rng = np.random.default_rng(5)
    offset = rng.normal(scale=0.5, size=len(data["y"]))
    weights = rng.uniform(0.5, 2.5, size=len(data["y"]))
    options = {"exposure": np.exp(offset)} if family == "poisson" else {"offset": offset}
    res = pearl.fit("y ~ block(a) + block(b)", data, family=family, seed=2, honest=False,
                    weights=weights, weight_type=weight_type, **options)
    # freq_weights and var_weights give the same intercept (only its SE differs)
    mean = _statsmodels_null(family, data["y"], res.folds, offset, weights)
    losses = _loss(family, data["y"], mean)
    expected = weights @ losses / weights.sum()
    assert res.baselines.loc["Null", "cv_risk"] == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("family", ["binomial", "multinomial", "poisson"])
def test_honest_null_risk_is_the_outer_training_rows_intercept_model(family):
    data = _data(family, n=150, seed=3)
    res = pearl.fit("y ~ block(a) + block(b)", data, family=family, seed=3, honest=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        table = res.honest
    outer = res.honest_risk(outer=4).outer_folds  # the same outer folds (same seed)
    y = np.searchsorted(res.classes, data["y"]) if family == "multinomial" else data["y"]
    if family == "multinomial":
        mean = np.empty((len(y), 3))
        for k in range(4):
            held = outer == k
            mean[held] = np.bincount(y[~held], minlength=3) / (~held).sum()
    else:
        mean = _statsmodels_null(family, y, outer)
    losses = _loss(family, y, mean)
    assert list(table.index)[-1] == "Null"
    assert table.loc["Null", "risk"] == pytest.approx(losses.mean(), rel=1e-9)
    assert table.loc["Null", "se"] == pytest.approx(losses.std(ddof=1) / np.sqrt(len(y)),
                                                    rel=1e-9)
    pearl_losses = res.last_honest_risk.row_losses["PEARL"].to_numpy()
    assert table.loc["Null", "ratio"] == pytest.approx(pearl_losses.mean() / losses.mean(),
                                                       rel=1e-9)


def test_summary_shows_the_null_row_and_says_what_it_is():
    data = _data("binomial", n=150)
    res = pearl.fit("y ~ block(a) + block(b)", data, family="binomial", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        summary = res.summary()
        text, html, latex = summary.as_text(), summary.as_html(), summary.as_latex()
    risk = f"{res.honest.loc['Null', 'risk']:.4f}"
    null_lines = [line for line in text.splitlines() if line.startswith("Null ")]
    assert len(null_lines) == 1 and risk in null_lines[0] and "intercept only" in null_lines[0]
    assert "intercept-only model: the risk of ignoring every input" in " ".join(text.split())
    for other in (html, latex):
        assert "Null" in other and risk in other and "intercept only" in other
        assert "the risk of ignoring every input" in " ".join(other.split())


def test_intercept_only_predictions_binomial_offset_solves_the_score_equation():
    rng = np.random.default_rng(0)
    y = (rng.uniform(size=50) < 0.3).astype(float)
    offset, weights = rng.normal(size=50), rng.uniform(0.2, 3, size=50)
    folds = np.zeros(50, dtype=int)
    folds[25:] = 1
    ours = intercept_only_predictions("binomial", y, folds, weights, offset)
    np.testing.assert_allclose(ours, _statsmodels_null("binomial", y, folds, offset, weights),
                               rtol=1e-10)


def _balanced_binomial_fit():
    """A fit whose outer training sets have as many 1s as 0s (75 of each, 3 stratified outer
    folds): its intercept-only model predicts 1/2, each held-out row's log loss is log 2."""
    rng = np.random.default_rng(4)
    n = 150
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 1))
    y = rng.permutation(np.tile([0.0, 1.0], n // 2))
    return pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, family="binomial",
                     seed=0, honest=3)


def test_the_null_se_is_an_exact_zero_when_its_losses_are_equal_by_construction():
    # the issue: "SE (naive) 7.870e-18" where 0 is meant (README's balanced binomial example)
    res = _balanced_binomial_fit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        table = res.honest
    losses = res.last_honest_risk.row_losses["Null"].to_numpy()
    # log 2 on every row, up to the rounding of a log: a few units in its last place
    assert np.abs(losses - np.log(2)).max() <= 4 * np.spacing(np.log(2))
    # yet their SD is not 0: the mean of 150 copies of log 2 is rounded (as the README's
    # example's 200 rows gave 7.870e-18)
    assert 0 < losses.std(ddof=1) <= 4 * np.spacing(np.log(2))
    assert table.loc["Null", "se"] == 0.0  # exact: not the SD of rounding errors
    assert res.baselines.loc["Null", "se"] == 0.0  # the in-sample CV's too (5 folds, 30 rows)
    assert table.loc["Null", "risk"] == pytest.approx(np.log(2), rel=1e-15)
    # the other rows' SEs are SD / sqrt(n) of their losses, untouched
    pearl_losses = res.last_honest_risk.row_losses["PEARL"].to_numpy()
    assert table.loc["PEARL", "se"] == pytest.approx(
        pearl_losses.std(ddof=1) / np.sqrt(len(pearl_losses)), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        summary = res.summary()
        text, html, latex = summary.as_text(), summary.as_html(), summary.as_latex()
    null = next(line for line in text.splitlines() if line.startswith("Null "))
    assert null.split()[1:3] == ["0.6931", "0.0000"], null
    latex_null = next(line for line in latex.splitlines() if line.startswith("Null &"))
    assert [cell.strip() for cell in latex_null.split("&")[1:3]] == ["0.6931", "0.0000"]
    html_null = html[html.index(">Null<"):].split("</tr>")[0]
    assert "e-1" not in html_null and "0.0000" in html_null


def test_a_small_spread_beyond_rounding_keeps_its_se():
    from pearlstats.observation_weights import mean_se

    # losses log 2 apart by 1e-12 relative: far beyond rounding (2.2e-16), a real spread
    losses = np.log(2) * (1 + 1e-12 * np.tile([-1.0, 1.0], 50))
    assert mean_se(losses, None, None) == pytest.approx(
        losses.std(ddof=1) / np.sqrt(100), rel=1e-6)
    assert mean_se(losses, None, None) > 0
