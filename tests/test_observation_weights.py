"""Observation weights, offsets and exposure (issue 26 item 2) against statsmodels' GLM."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.exceptions import DataError, ObservationWeightWarning, OptionError
from pearlstats.observation_weights import few_observations_note

SM_FAMILIES = {"gaussian": sm.families.Gaussian, "binomial": sm.families.Binomial,
               "poisson": sm.families.Poisson}


def _data(family: str, n: int = 90, seed: int = 0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 1))
    offset = rng.normal(scale=0.3, size=n)
    eta = 0.2 + 0.8 * a[:, 0] - 0.5 * b[:, 0] + offset
    if family == "gaussian":
        y = eta + rng.normal(size=n)
    elif family == "binomial":
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    else:
        y = rng.poisson(np.exp(eta)).astype(float)
    weights = rng.uniform(0.3, 3.0, size=n)  # non-integer
    return {"y": y, "a": a, "b": b}, weights, offset


def _exog(data, columns):
    return np.column_stack([np.ones(len(data[columns[0]]))] + [data[c] for c in columns])


def _sm_fit(family, y, X, weights, weight_type, offset):
    key = "freq_weights" if weight_type == "frequency" else "var_weights"
    model = sm.GLM(y, X, family=SM_FAMILIES[family](), offset=offset, **{key: weights})
    return model.fit(tol=1e-13)


def _fit(data, family, **kwargs):
    kwargs.setdefault("honest", False)
    kwargs.setdefault("seed", 3)
    return pearl.fit("y ~ block(a) + block(b)", data, family=family, **kwargs)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("weight_type", ["frequency", "variance"])
def test_candidates_on_all_rows_and_per_fold_equal_statsmodels(family, weight_type):
    data, weights, offset = _data(family)
    res = _fit(data, family, weights=weights, weight_type=weight_type, offset=offset)
    for label, blocks in {"a": ["a"], "b": ["b"], "a+b": ["a", "b"]}.items():
        X = _exog(data, blocks)
        direct = _sm_fit(family, data["y"], X, weights, weight_type, offset)
        np.testing.assert_allclose(res.candidate_params(label).to_numpy(), direct.params,
                                   rtol=1e-8, atol=1e-9)
        ours = res.candidates[label]
        np.testing.assert_allclose(ours.params, direct.params, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(ours.bse, direct.bse, rtol=1e-6)
        # out-of-fold: fold k's rows predicted by the fit on the other rows, with their offsets
        for k in range(res.n_folds):
            held = res.folds == k
            fold = _sm_fit(family, data["y"][~held], X[~held], weights[~held], weight_type,
                           offset[~held])
            expected = fold.predict(X[held], offset=offset[held])
            np.testing.assert_allclose(res.cv_predictions[label].to_numpy()[held], expected,
                                       rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_weighted_cv_risk_is_the_weighted_mean_and_predict_uses_new_offsets(family):
    data, weights, offset = _data(family, seed=1)
    res = _fit(data, family, weights=weights, weight_type="variance", offset=offset)
    P = res.cv_predictions.to_numpy()
    y = data["y"]
    if family == "gaussian":
        rows = (y[:, None] - P) ** 2
    elif family == "binomial":
        rows = -np.log(np.where(y[:, None] == 1, P, 1 - P))
    else:
        rows = 2 * (sm.families.Poisson().resid_dev(y[:, None], P) ** 2) / 2
    np.testing.assert_allclose(res.cv_risk.to_numpy(), weights @ rows / weights.sum(),
                               rtol=1e-10)
    # predictions for new rows with their own offsets: the weighted average of statsmodels' means
    rng = np.random.default_rng(9)
    new = {"a": rng.normal(size=(4, 2)), "b": rng.normal(size=(4, 1))}
    new_offset = rng.normal(size=4)
    expected = sum(
        w * _sm_fit(family, y, _exog(data, label.split("+")), weights, "variance",
                    offset).predict(_exog(new, label.split("+")), offset=new_offset)
        for label, w in res.weights.items() if w > 0)
    np.testing.assert_allclose(res.predict(new, offset=new_offset).to_numpy(), expected,
                               rtol=1e-8)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_frequency_weight_two_equals_a_duplicated_row_in_the_same_fold(family):
    data, _, _ = _data(family, n=80, seed=2)
    rng = np.random.default_rng(4)
    counts = rng.integers(1, 3, size=80)  # 1 or 2
    folds = np.arange(80) % 5
    res = _fit(data, family, weights=counts, weight_type="frequency", cv=folds)
    rows = np.repeat(np.arange(80), counts)
    copied = {name: values[rows] for name, values in data.items()}
    dup = _fit(copied, family, cv=folds[rows])
    np.testing.assert_allclose(res.weights.to_numpy(), dup.weights.to_numpy(), atol=1e-7)
    np.testing.assert_allclose(res.cv_risk.to_numpy(), dup.cv_risk.to_numpy(), rtol=1e-8)
    # frequency weights count rows: the SEs are those of the data with the copies
    np.testing.assert_allclose(res.cv_risk_se.to_numpy(), dup.cv_risk_se.to_numpy(), rtol=1e-7)
    np.testing.assert_allclose(res.baselines[["cv_risk", "se", "risk_ratio", "ratio_se"]],
                               dup.baselines[["cv_risk", "se", "risk_ratio", "ratio_se"]],
                               rtol=1e-6, atol=1e-9)
    mine, theirs = res.coef_table(terms="all"), dup.coef_table(terms="all")
    np.testing.assert_allclose(mine["coef"].to_numpy(), theirs["coef"].to_numpy(), rtol=1e-7,
                               atol=1e-9)
    # the averaged coefficients' inference counts the copies (GLM freq_weights' df and scale)
    np.testing.assert_allclose(mine["std err"].to_numpy(), theirs["std err"].to_numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(res.conf_int().to_numpy(), dup.conf_int().to_numpy(), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_scaling_all_weights_changes_nothing_and_unit_weights_equal_no_weights(family):
    data, weights, _ = _data(family, seed=5)
    res = _fit(data, family, weights=weights, weight_type="variance")
    scaled = _fit(data, family, weights=7.3 * weights, weight_type="variance")
    np.testing.assert_allclose(scaled.weights.to_numpy(), res.weights.to_numpy(), atol=1e-9)
    np.testing.assert_allclose(scaled.cv_risk.to_numpy(), res.cv_risk.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(scaled.params.to_numpy(), res.params.to_numpy(), rtol=1e-9)
    ones = _fit(data, family, weights=np.ones(len(weights)), weight_type="frequency")
    plain = _fit(data, family)  # the unweighted engines (fold Grams, batched Newton)
    np.testing.assert_allclose(ones.cv_predictions.to_numpy(), plain.cv_predictions.to_numpy(),
                               rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ones.weights.to_numpy(), plain.weights.to_numpy(), atol=1e-7)


@pytest.mark.parametrize("weight_type", ["frequency", "variance"])
def test_one_candidate_inference_equals_the_weighted_glm(weight_type):
    from scipy import stats

    data, weights, offset = _data("gaussian", seed=20)
    res = _fit(data, "gaussian", candidates=[("a", "b")], weights=weights,
               weight_type=weight_type, offset=offset)
    direct = _sm_fit("gaussian", data["y"], _exog(data, ["a", "b"]), weights, weight_type,
                     offset)
    table = res.candidate_params().loc["a+b"]
    np.testing.assert_allclose(table["coef"].to_numpy(), direct.params, rtol=1e-10)
    np.testing.assert_allclose(table["std err"].to_numpy(), direct.bse, rtol=1e-8)
    q = stats.t.ppf(0.975, direct.df_resid)  # sum(w) - p rows for frequency, n - p for variance
    expected = np.column_stack([direct.params - q * direct.bse, direct.params + q * direct.bse])
    np.testing.assert_allclose(table[["lower", "upper"]].to_numpy(), expected, rtol=1e-8)
    np.testing.assert_allclose(res.conf_int().to_numpy(), expected[:1], rtol=1e-8)


def test_repeated_draws_minimise_the_weighted_loss_stacked_over_draws():
    from scipy.optimize import minimize

    from pearlstats.stages import assign_folds

    data, weights, offset = _data("gaussian", n=70, seed=21)
    res = _fit(data, "gaussian", weights=weights, weight_type="variance", offset=offset,
               cv_repeats=3)
    y = data["y"]
    response = res.stages.response
    draws = [assign_folds(5, response, res.seed)] + [
        assign_folds(5, response, np.random.SeedSequence([res.seed, r])) for r in (1, 2)]
    np.testing.assert_array_equal(draws[0], res.folds)
    blocks = [label.split("+") for label in res.candidate_labels]
    stacked = []
    for folds in draws:  # out-of-fold predictions of each draw by statsmodels, fold by fold
        P = np.empty((len(y), len(blocks)))
        for j, names in enumerate(blocks):
            X = _exog(data, names)
            for k in range(5):
                held = folds == k
                fit = _sm_fit("gaussian", y[~held], X[~held], weights[~held], "variance",
                              offset[~held])
                P[held, j] = fit.predict(X[held], offset=offset[held])
        stacked.append(P)
    P, v, t = np.vstack(stacked), np.tile(weights, 3), np.tile(y, 3)

    def objective(w):
        return v @ (t - P @ w) ** 2 / v.sum()

    J = P.shape[1]
    direct = minimize(objective, np.full(J, 1 / J), method="SLSQP", bounds=[(0, 1)] * J,
                      constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
                      options={"ftol": 1e-15, "maxiter": 500})
    assert objective(res.weights.to_numpy()) <= direct.fun + 1e-12
    np.testing.assert_allclose(res.weights.to_numpy(), direct.x, atol=1e-5)
    np.testing.assert_allclose(res.weight_objective, direct.fun, rtol=1e-9)
    shrunk = _fit(data, "gaussian", weights=weights, weight_type="variance", offset=offset,
                  cv_repeats=3, weight_shrinkage=0.5)
    np.testing.assert_allclose(shrunk.weights.to_numpy(),
                               0.5 * res.weights.to_numpy() + 0.5 / J, atol=1e-12)


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_evaluate_with_test_weights_and_offsets_is_the_weighted_mean_score(family):
    data, weights, offset = _data(family, n=120, seed=22)
    train, test = np.arange(80), np.arange(80, 120)
    res = _fit({k: v[train] for k, v in data.items()}, family, weights=weights[train],
               weight_type="variance", offset=offset[train])
    blocks = {"a": data["a"][test], "b": data["b"][test]}
    frame = pd.DataFrame({"y": data["y"][test]})
    table = res.evaluate(frame, blocks=blocks, weights=weights[test], offset=offset[test])
    p = res.predict(blocks, offset=offset[test]).to_numpy()
    y, w = data["y"][test], weights[test]
    if family == "gaussian":
        np.testing.assert_allclose(table.loc["PEARL", "MSE"], np.average((y - p) ** 2, weights=w),
                                   rtol=1e-12)
        np.testing.assert_allclose(table.loc["PEARL", "MAE"], np.average(np.abs(y - p), weights=w),
                                   rtol=1e-12)
    else:
        observed = np.where(y == 1, p, 1 - p)
        np.testing.assert_allclose(table.loc["PEARL", "cross_entropy"],
                                   np.average(-np.log(observed), weights=w), rtol=1e-12)
        np.testing.assert_allclose(table.loc["PEARL", "accuracy"],
                                   np.average((p > 0.5) == (y == 1), weights=w), rtol=1e-12)
        np.testing.assert_allclose(table.loc["PEARL", "MSE"], np.average((y - p) ** 2, weights=w),
                                   rtol=1e-12)
    unweighted = res.evaluate(frame, blocks=blocks, offset=offset[test])
    column = "MSE"
    np.testing.assert_allclose(unweighted.loc["PEARL", column], np.mean((y - p) ** 2),
                               rtol=1e-12)
    with pytest.raises(DataError, match="must be > 0"):
        res.evaluate(frame, blocks=blocks, weights=-w, offset=offset[test])


def test_bootstrap_with_variance_weights_resamples_rows_with_their_weights():
    from pearlstats.results.bootstrap import bootstrap_resample

    data, weights, offset = _data("poisson", n=70, seed=23)
    res = _fit(data, "poisson", weights=weights, weight_type="variance", offset=offset)
    table = res.resample_weights("bootstrap", n_resamples=2, seed=4, refit=True)
    for b in range(2):  # each resample is a weighted fit on its rows, copies sharing a fold
        rows, folds = bootstrap_resample(70, 5, seed=4, b=b, state_folds=res.folds,
                                         y=res.stages.response.y)
        again = _fit({k: v[rows] for k, v in data.items()}, "poisson", weights=weights[rows],
                     weight_type="variance", offset=offset[rows], cv=folds)
        np.testing.assert_allclose(table[f"boot {b}"].to_numpy(), again.weights.to_numpy(),
                                   atol=1e-9)
    # unit variance weights: the unweighted fit's bootstrap, resample by resample
    ones = _fit(data, "poisson", weights=np.ones(70), weight_type="variance")
    plain = _fit(data, "poisson")
    for refit in (False, True):
        np.testing.assert_allclose(
            ones.resample_weights("bootstrap", n_resamples=3, seed=5, refit=refit).to_numpy(),
            plain.resample_weights("bootstrap", n_resamples=3, seed=5, refit=refit).to_numpy(),
            atol=1e-7)


def test_bootstrap_with_frequency_weights_resamples_the_expanded_data():
    from pearlstats.results.bootstrap import bootstrap_resample, weighted_resample

    data, _, offset = _data("poisson", n=50, seed=24)
    counts = np.random.default_rng(6).integers(1, 4, size=50)
    res = _fit(data, "poisson", weights=counts, weight_type="frequency", offset=offset)
    table = res.resample_weights("bootstrap", n_resamples=2, seed=4, refit=True)
    for b in range(2):  # sum(w) copies drawn, as counts of the rows: their frequency weights
        rows, drawn, folds = weighted_resample(counts, 5, seed=4, b=b)
        assert drawn.sum() == counts.sum() and np.all(drawn > 0)
        again = _fit({k: v[rows] for k, v in data.items()}, "poisson", offset=offset[rows],
                     weights=drawn, weight_type="frequency", cv=folds)
        np.testing.assert_allclose(table[f"boot {b}"].to_numpy(), again.weights.to_numpy(),
                                   atol=1e-9)
        # ... which is the unweighted fit on the drawn copies, each copy in its row's fold
        copies = np.repeat(rows, drawn.astype(int))
        unweighted = _fit({k: v[copies] for k, v in data.items()}, "poisson",
                          offset=offset[copies], cv=np.repeat(folds, drawn.astype(int)))
        np.testing.assert_allclose(table[f"boot {b}"].to_numpy(),
                                   unweighted.weights.to_numpy(), atol=1e-7)
    # given fold labels (groups): whole groups drawn, their rows keeping their weights
    groups = np.arange(50) % 10
    grouped = _fit(data, "poisson", weights=counts, weight_type="frequency", offset=offset,
                   cv=groups)
    boot = grouped.resample_weights("bootstrap", n_resamples=2, seed=4, refit=True)
    rows, folds = bootstrap_resample(50, groups, seed=4, b=1, state_folds=grouped.folds)
    again = _fit({k: v[rows] for k, v in data.items()}, "poisson", weights=counts[rows],
                 weight_type="frequency", offset=offset[rows], cv=folds)
    np.testing.assert_allclose(boot["boot 1"].to_numpy(), again.weights.to_numpy(), atol=1e-9)
    # weight_uncertainty summarises the same resamples (resample b whatever their number)
    spread = res.weight_uncertainty(n_resamples=3, seed=4)
    third = res.resample_weights("bootstrap", n_resamples=3, seed=4, refit=True)
    np.testing.assert_allclose(third.iloc[:, :2].to_numpy(), table.to_numpy(), atol=1e-12)
    np.testing.assert_allclose(spread["mean"].to_numpy(), third.mean(axis=1).to_numpy(),
                               atol=1e-12)


def test_frequency_weighted_bootstrap_draws_rows_as_the_expanded_datas_bootstrap_does():
    from pearlstats.results.bootstrap import resample_counts

    counts = np.random.default_rng(7).integers(1, 5, size=40)
    total, draws = counts.sum(), 4000
    per_row = resample_counts(counts, np.random.default_rng(0), draws)
    assert per_row.shape == (draws, 40) and np.all(per_row.sum(axis=1) == total)
    # the expanded data's bootstrap: sum(w) of its sum(w) rows uniformly, counted per original
    original = np.repeat(np.arange(40), counts)
    uniform = original[np.random.default_rng(1).integers(0, total, size=(draws, total))]
    per_row_expanded = np.array([np.bincount(r, minlength=40) for r in uniform])
    # both multinomial(sum w, w / sum w): mean w_i, variance w_i (1 - w_i / sum w)
    variance = counts * (1 - counts / total)
    for observed in (per_row, per_row_expanded):
        assert np.all(np.abs(observed.mean(axis=0) - counts) < 5 * np.sqrt(variance / draws))
        np.testing.assert_allclose(observed.var(axis=0), variance, rtol=0.15)
    # and a statistic of the resample, the weighted mean of a row value x (what a bootstrap
    # of a mean would report): the same mean and SD over resamples. Both equal the expanded
    # data's mean m and sqrt(s2 / N), s2 its variance (ddof 0); the Monte Carlo SE of the
    # mean is sd / sqrt(draws), of the SD about sd / sqrt(2 draws): 5 of them is ~9e-2 sd
    x = np.random.default_rng(2).normal(size=40)
    m = counts @ x / total
    sd = np.sqrt(counts @ (x - m) ** 2 / total / total)
    for observed in (per_row, per_row_expanded):
        means = observed @ x / total
        assert abs(means.mean() - m) < 5 * sd / np.sqrt(draws)
        assert abs(means.std() - sd) < 5 * sd / np.sqrt(2 * draws)


def test_weight_uncertainty_with_frequency_weights_costs_the_rows_not_the_weights_sum():
    # 100 rows standing for about 1e8: the expanded resample (1e8 row positions, 800 MB, and
    # fits on 1e8 rows) was a MemoryError; counts of the 100 rows cost what 100 rows cost
    from pearlstats.results.bootstrap import weighted_resample

    data, _, offset = _data("poisson", n=100, seed=26)
    counts = np.random.default_rng(9).integers(500_000, 1_500_000, size=100).astype(float)
    res = _fit(data, "poisson", weights=counts, weight_type="frequency", offset=offset)
    table = res.weight_uncertainty(n_resamples=3, seed=1)
    assert table.attrs["n_resamples"] == 3
    boot = res.resample_weights("bootstrap", n_resamples=2, seed=1, refit=True)
    rows, drawn, folds = weighted_resample(counts, 5, seed=1, b=0)
    assert drawn.sum() == round(counts.sum())
    again = _fit({k: v[rows] for k, v in data.items()}, "poisson", offset=offset[rows],
                 weights=drawn, weight_type="frequency", cv=folds)
    np.testing.assert_allclose(boot["boot 0"].to_numpy(), again.weights.to_numpy(), atol=1e-9)


def test_stored_prediction_bootstrap_with_frequency_weights_counts_each_copy_once():
    from scipy.optimize import minimize

    from pearlstats.results.bootstrap import resample_counts

    data, _, _ = _data("gaussian", n=60, seed=25)
    counts = np.random.default_rng(8).integers(1, 4, size=60)
    res = _fit(data, "gaussian", weights=counts, weight_type="frequency")
    table = res.resample_weights("bootstrap", n_resamples=3, seed=9)
    P, y = res.cv_predictions.to_numpy(), data["y"]
    for b, drawn in enumerate(resample_counts(counts, np.random.default_rng(9), 3)):
        rows = np.repeat(np.arange(60), drawn)  # the drawn copies, each counted once

        def mean_squared(w, rows=rows):
            return np.mean((y[rows] - P[rows] @ w) ** 2)
        direct = minimize(mean_squared, np.full(3, 1 / 3), method="SLSQP",
                          bounds=[(0, 1)] * 3, options={"ftol": 1e-14, "maxiter": 500},
                          constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}])
        np.testing.assert_allclose(table[f"boot {b}"].to_numpy(), direct.x, atol=1e-5)


def test_poisson_rate_model_with_exposure_recovers_the_rate_coefficients():
    rng = np.random.default_rng(11)
    n = 3000
    a, b = rng.normal(size=(n, 1)), rng.normal(size=(n, 1))
    exposure = rng.uniform(0.5, 20.0, size=n)
    y = rng.poisson(exposure * np.exp(-1.0 + 0.5 * a[:, 0]))
    res = _fit({"y": y, "a": a, "b": b}, "poisson", exposure=exposure)
    fitted = res.candidate_params("a").to_numpy()
    se = res.candidates["a"].bse
    assert np.all(np.abs(fitted - [-1.0, 0.5]) < 4 * se)
    assert res.weights[["a", "a+b"]].sum() > 0.99
    direct = sm.GLM(y, _exog({"a": a, "y": y}, ["a"]), family=sm.families.Poisson(),
                    exposure=exposure).fit(tol=1e-13)
    np.testing.assert_allclose(fitted, direct.params, rtol=1e-9)
    new = {"a": np.zeros((2, 1)), "b": np.zeros((2, 1))}
    mean = res.predict(new, exposure=[1.0, 10.0]).to_numpy()
    np.testing.assert_allclose(mean[1] / mean[0], 10.0, rtol=1e-12)  # a rate times exposure


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_honest_risk_and_cv_plus_with_frequency_weight_two_equal_duplicated_rows(family):
    data, _, offset = _data(family, n=60, seed=14)
    counts = np.random.default_rng(5).integers(1, 3, size=60)
    folds = np.arange(60) % 6  # given labels: whole folds dealt to the outer folds
    res = _fit(data, family, weights=counts, weight_type="frequency", offset=offset, cv=folds,
               honest=3)
    rows = np.repeat(np.arange(60), counts)
    copied = {name: values[rows] for name, values in data.items()}
    dup = _fit(copied, family, offset=offset[rows], cv=folds[rows], honest=3)
    np.testing.assert_array_equal(res.honest_risk().outer_folds[rows],
                                  dup.honest_risk().outer_folds)
    columns = ["risk", "se", "ratio", "ratio_se"]
    np.testing.assert_allclose(res.honest[columns], dup.honest[columns], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(res.last_honest_risk.risk, dup.last_honest_risk.risk,
                               rtol=1e-6, atol=1e-9)
    # CV+ counts a row of weight 2 twice in its quantiles; every outer fold's procedure
    # predicts the new rows with their offset
    new_data, _, new_offset = _data(family, n=8, seed=40)
    new = {"a": new_data["a"], "b": new_data["b"]}
    mine = res.predict(new, interval="prediction", alpha=0.2, offset=new_offset)
    theirs = dup.predict(new, interval="prediction", alpha=0.2, offset=new_offset)
    np.testing.assert_allclose(mine.to_numpy(), theirs.to_numpy(), rtol=1e-7, atol=1e-9)
    shifted = res.predict(new, interval="prediction", alpha=0.2, offset=new_offset + 1.0)
    assert not np.allclose(shifted["upper"], mine["upper"])


def test_honest_outer_fold_weights_are_those_of_a_weighted_fit_on_its_rows():
    data, weights, offset = _data("binomial", n=100, seed=15)
    res = _fit(data, "binomial", weights=weights, weight_type="variance", offset=offset,
               honest=3)
    nested = res.honest_risk(outer=3)
    for k in range(3):
        train = nested.outer_folds != k
        inner = _fit({name: values[train] for name, values in data.items()}, "binomial",
                     weights=weights[train], weight_type="variance", offset=offset[train],
                     cv=nested.inner_folds[k])
        np.testing.assert_allclose(nested.fold_weights.iloc[k].to_numpy(),
                                   inner.weights.to_numpy(), atol=1e-9)


def test_variance_weighted_se_is_the_linearised_se_of_the_weighted_mean():
    data, weights, _ = _data("gaussian", seed=12)
    res = _fit(data, "gaussian", weights=weights, weight_type="variance")
    rows = (data["y"][:, None] - res.cv_predictions.to_numpy()) ** 2
    risk = weights @ rows / weights.sum()
    n = len(weights)
    # the delta method for sum(w l) / sum(w), computed directly
    influence = weights[:, None] * (rows - risk) / weights.mean()
    expected = np.sqrt((influence**2).sum(axis=0) / (n * (n - 1)))
    np.testing.assert_allclose(res.cv_risk_se.to_numpy(), expected, rtol=1e-10)


def test_missing_drop_drops_the_rows_weights_and_offsets():
    data, weights, offset = _data("gaussian", seed=6)
    data["a"] = data["a"].copy()
    data["a"][[3, 10], 0] = np.nan
    res = _fit(data, "gaussian", weights=weights, weight_type="variance", offset=offset,
               missing="drop")
    keep = np.setdiff1d(np.arange(len(weights)), [3, 10])
    kept = {name: values[keep] for name, values in data.items()}
    direct = _sm_fit("gaussian", kept["y"], _exog(kept, ["a", "b"]), weights[keep], "variance",
                     offset[keep])
    np.testing.assert_allclose(res.candidate_params("a+b").to_numpy(), direct.params, rtol=1e-9)


@pytest.mark.parametrize("kwargs, words", [
    ({"weights": "w"}, "weight_type"),
    ({"weights": "w", "weight_type": "survey"}, "weight_type"),
    ({"weight_type": "frequency"}, "needs weights"),
    ({"exposure": "t", "family": "gaussian"}, "exposure"),
    ({"offset": "o", "family": "multinomial"}, "multinomial"),
    ({"weights": "w", "weight_type": "variance", "loss": "absolute"}, "absolute"),
])
def test_unsupported_options_are_refused_by_name(kwargs, words):
    data, weights, offset = _data("poisson", seed=7)
    data["y"] = data["y"] if kwargs.get("family") != "multinomial" else data["y"] % 3
    values = {"w": weights, "o": offset, "t": np.exp(offset)}
    kwargs = {key: values.get(value, value) if isinstance(value, str) and key != "weight_type"
              and key != "family" and key != "loss" else value for key, value in kwargs.items()}
    family = kwargs.pop("family", "poisson")
    kwargs.setdefault("honest", False)
    with pytest.raises(OptionError, match=words):
        pearl.fit("y ~ block(a) + block(b)", data, family=family, seed=0, **kwargs)


def test_downstream_and_offset_interactions_are_refused_by_name():
    data, weights, offset = _data("gaussian", seed=8)

    class Downstream:
        def bind(self, family):
            return family

    with pytest.raises(OptionError, match="downstream"):
        _fit(data, "gaussian", weights=weights, weight_type="variance", downstream=Downstream())
    data["t"] = np.exp(offset)
    with pytest.raises(pearl.FormulaError, match="offset\\(\\) inside an interaction"):
        pearl.fit("y ~ offset(np.log(t)):x + block(a)", data, honest=False)


def test_bad_weight_offset_and_exposure_values_are_data_errors():
    data, weights, offset = _data("poisson", seed=9)
    with pytest.raises(DataError, match="one number per row"):
        _fit(data, "poisson", weights=np.r_[weights, 1.0], weight_type="frequency")
    with pytest.raises(DataError, match="weights= must be > 0; it is 0 at row 4 "):
        _fit(data, "poisson", weights=np.where(np.arange(weights.size) == 4, 0.0, weights),
             weight_type="frequency")
    with pytest.raises(DataError, match="offset= has NaN or infinite values at row 2;"):
        _fit(data, "poisson", offset=np.where(np.arange(offset.size) == 2, np.nan, offset))
    with pytest.raises(DataError, match="exposure= must be > 0"):
        _fit(data, "poisson", exposure=-np.exp(offset))


def test_results_refuse_what_weights_do_not_support_yet():
    data, weights, offset = _data("gaussian", seed=10)
    res = _fit(data, "gaussian", weights=weights, weight_type="variance", offset=offset)
    new = {"a": data["a"][:3], "b": data["b"][:3]}
    with pytest.raises(OptionError, match="offset"):
        res.predict(new)
    with pytest.raises(OptionError, match="give offset"):
        res.evaluate(pd.DataFrame({"y": data["y"][:3]}), blocks=new)
    # by default only the losses weights support (squared; absolute is refused by name)
    assert list(res.loss_sensitivity().columns) == ["squared"]
    with pytest.raises(OptionError, match="absolute"):
        res.loss_sensitivity(["squared", "absolute"])
    fitted = sum(w * _sm_fit("gaussian", data["y"], _exog(data, label.split("+")), weights,
                             "variance", offset).fittedvalues
                 for label, w in res.weights.items() if w > 0)
    np.testing.assert_allclose(res.fittedvalues.to_numpy(), fitted, rtol=1e-9)
    np.testing.assert_allclose(res.resid.to_numpy(), data["y"] - fitted, rtol=1e-9, atol=1e-12)
    plain = _fit(data, "gaussian")
    with pytest.raises(OptionError, match="no offset"):
        plain.predict(new, offset=np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = str(res.summary())  # the fold-complement stability re-solves use their rows' weights
    assert "fold complements" in text
    assert "Row weights:  variance" in text and "Offset:  given" in text


def _offset_cell(res) -> str:
    """The summary header's "Offset:" cell."""
    line = next(line for line in str(res.summary()).splitlines() if "Offset:" in line)
    return line.split("Offset:")[1].strip()


def test_the_summary_names_where_the_offset_came_from():
    # "Offset: yes" read the same for offset=, exposure= and the formula's offset(), though
    # exposure= means log(exposure) was added and a reader checks which scale the rates are on
    data, weights, offset = _data("poisson", seed=21)
    t = np.exp(offset)
    assert _offset_cell(_fit(data, "poisson", offset=offset)) == "given"
    by_exposure = _fit(data, "poisson", exposure=t)
    assert _offset_cell(by_exposure) == "log(exposure)"
    assert _offset_cell(_fit(data, "poisson", offset=offset / 2, exposure=np.sqrt(t))) == (
        "given + log(exposure)")
    frame = pd.DataFrame({"y": data["y"], "t": t})
    in_formula = pearl.fit("y ~ offset(np.log(t)) + block(a) + block(b)", frame,
                           blocks={"a": data["a"], "b": data["b"]}, family="poisson",
                           honest=False, seed=3)
    assert _offset_cell(in_formula) == "in the formula"
    assert _offset_cell(_fit(data, "poisson", weights=weights, weight_type="frequency")) == "none"
    import pickle

    assert _offset_cell(pickle.loads(pickle.dumps(by_exposure))) == "log(exposure)"
    # every copy of the response keeps it (subsets for folds, frequency counts of a resample)
    response = by_exposure.stages.response
    assert response.subset(np.arange(5)).offset_source == "log(exposure)"
    counted = response.with_observation_weights(np.ones(len(response.y)), response.offset,
                                                "frequency")
    assert counted.offset_source == "log(exposure)"
    assert response.with_observation_weights(None, None, None).offset_source is None


def test_offset_in_the_formula_equals_offset_given_and_is_rebuilt_for_new_rows():
    import pickle

    data, weights, offset = _data("poisson", seed=13)
    frame = pd.DataFrame({"y": data["y"], "t": np.exp(offset)})
    blocks = {"a": data["a"], "b": data["b"]}
    res = pearl.fit("y ~ offset(np.log(t)) + block(a) + block(b)", frame, blocks=blocks,
                    family="poisson", weights=weights, weight_type="frequency", honest=False,
                    seed=3)
    given = _fit(data, "poisson", weights=weights, weight_type="frequency", exposure=frame["t"])
    np.testing.assert_allclose(res.cv_predictions.to_numpy(), given.cv_predictions.to_numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(res.params.to_numpy(), given.params.to_numpy(), rtol=1e-12)
    new = pd.DataFrame({"t": [1.0, 4.0]})
    new_blocks = {"a": np.zeros((2, 2)), "b": np.zeros((2, 1))}
    expected = given.predict(new_blocks, exposure=new["t"].to_numpy()).to_numpy()
    np.testing.assert_allclose(res.predict(new, blocks=new_blocks).to_numpy(), expected,
                               rtol=1e-12)
    again = pickle.loads(pickle.dumps(res))  # the offset's namespace (np) travels by name
    np.testing.assert_allclose(again.predict(new, blocks=new_blocks).to_numpy(), expected,
                               rtol=1e-12)
    with pytest.raises(OptionError, match="rebuilt from the new rows"):
        res.predict(new, blocks=new_blocks, exposure=[1.0, 1.0])
    with pytest.raises(OptionError, match="not both"):
        pearl.fit("y ~ offset(np.log(t)) + block(a)", frame, blocks=blocks, family="poisson",
                  offset=offset, honest=False)
    with pytest.warns(RuntimeWarning), pytest.raises(DataError, match="log\\(t\\)\\) is NaN"):
        pearl.fit("y ~ offset(np.log(t)) + block(a)", frame.assign(t=-frame["t"]),
                  blocks=blocks, family="poisson", honest=False)


def test_sparse_wide_blocks_and_dask_data_are_refused_with_weights():
    from scipy import sparse

    data, weights, _ = _data("gaussian", n=40, seed=16)
    wide = sparse.random(40, 1200, density=0.01, format="csr", random_state=0)
    with pytest.raises(OptionError, match="sparse or wide"):
        pearl.fit("y ~ block(a) + block(w)", {"y": data["y"]},
                  blocks={"a": data["a"], "w": wide}, weights=weights, weight_type="variance",
                  honest=False, seed=0)
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame({"y": data["y"], "a0": data["a"][:, 0], "b0": data["b"][:, 0]})
    lazy = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(OptionError, match="dask"):
        pearl.fit("y ~ block(a) + block(b)", lazy, blocks={"a": lazy[["a0"]], "b": lazy[["b0"]]},
                  weights=weights, weight_type="variance", honest=False, seed=0)
    fitted = _fit(data, "gaussian", offset=np.zeros(40))
    with pytest.raises(OptionError, match="dask rows with an offset"):
        fitted.predict({"a": lazy[["a0", "b0"]].to_dask_array(lengths=True),
                        "b": lazy[["b0"]].to_dask_array(lengths=True)})


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.SingularMatrixWarning")
def test_collinear_gaussian_candidate_falls_back_to_minimum_norm_least_squares():
    # a block with a repeated column: its Gram is singular, so the fold solve is lstsq's
    data, weights, offset = _data("gaussian", seed=24)
    data["a"] = np.column_stack([data["a"], data["a"][:, 0]])
    res = _fit(data, "gaussian", weights=weights, weight_type="variance", offset=offset)
    X = _exog(data, ["a"])
    for k in range(res.n_folds):
        held = res.folds == k
        fold = _sm_fit("gaussian", data["y"][~held], X[~held], weights[~held], "variance",
                       offset[~held])
        np.testing.assert_allclose(res.cv_predictions["a"].to_numpy()[held],
                                   fold.predict(X[held], offset=offset[held]), rtol=1e-8)


def test_weights_are_invariant_to_the_units_and_origin_of_a_gaussian_response():
    data, weights, offset = _data("gaussian", seed=25)
    res = _fit(data, "gaussian", weights=weights, weight_type="frequency", offset=offset)
    moved = _fit({**data, "y": 1000.0 * data["y"] + 5.0}, "gaussian", weights=weights,
                 weight_type="frequency", offset=1000.0 * offset)
    np.testing.assert_allclose(moved.weights.to_numpy(), res.weights.to_numpy(), atol=1e-8)
    np.testing.assert_allclose(moved.cv_risk.to_numpy(), 1e6 * res.cv_risk.to_numpy(),
                               rtol=1e-8)


@pytest.mark.parametrize("weight_type", ["frequency", "variance"])
def test_confidence_interval_with_weights_and_offset_is_the_weighted_glms(weight_type):
    from scipy import stats

    data, weights, offset = _data("gaussian", n=80, seed=26)
    if weight_type == "frequency":
        weights = np.random.default_rng(9).integers(1, 4, size=80).astype(float)
    one = pearl.fit("y ~ block(a)", data, weights=weights, weight_type=weight_type,
                    offset=offset, honest=False, seed=3)
    new_data, _, new_offset = _data("gaussian", n=5, seed=43)
    band = one.predict({"a": new_data["a"]}, interval="confidence", alpha=0.1, offset=new_offset)
    glm = _sm_fit("gaussian", data["y"], _exog(data, ["a"]), weights, weight_type, offset)
    frame = glm.get_prediction(_exog(new_data, ["a"]), offset=new_offset).summary_frame()
    np.testing.assert_allclose(band["mean"], frame["mean"], rtol=1e-9)
    np.testing.assert_allclose(band["mean_se"], frame["mean_se"], rtol=1e-7)
    half = stats.t.ppf(0.95, glm.df_resid) * frame["mean_se"].to_numpy()
    np.testing.assert_allclose(band["upper"], frame["mean"] + half, rtol=1e-7)
    np.testing.assert_allclose(band["lower"], frame["mean"] - half, rtol=1e-7)
    # the averaged model: its mean is predict()'s, and the offset shifts the band, not its SE
    res = _fit(data, "gaussian", weights=weights, weight_type=weight_type, offset=offset)
    new = {"a": new_data["a"], "b": new_data["b"]}
    band = res.predict(new, interval="confidence", offset=new_offset)
    np.testing.assert_allclose(band["mean"], res.predict(new, offset=new_offset), rtol=1e-10)
    moved = res.predict(new, interval="confidence", offset=new_offset + 2.0)
    np.testing.assert_allclose(moved[["mean", "lower", "upper"]] - 2.0,
                               band[["mean", "lower", "upper"]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(moved["mean_se"], band["mean_se"], rtol=1e-12)


@pytest.mark.parametrize("scale", [0.04, 1 / 80])  # sum 3.2 and 1 (normalised)
def test_frequency_weights_counting_too_few_observations_warn_at_fit_and_give_nan_ses(scale):
    from pearlstats.exceptions import ObservationWeightWarning

    data, _, _ = _data("gaussian", n=80, seed=27)
    weights = np.full(80, scale)
    with pytest.warns(ObservationWeightWarning, match="weight_type='variance'") as caught:
        res = _fit(data, "gaussian", weights=weights, weight_type="frequency")
    assert caught[0].filename == __file__  # at the user's line
    # statsmodels: residual df sum(w) - p <= 0 for the candidate a+b (4 coefficients), so its
    # scale and standard errors are NaN; the coefficients are the weighted least squares ones
    X = _exog(data, ["a", "b"])
    direct = sm.GLM(data["y"], X, freq_weights=weights).fit()
    assert direct.df_resid <= 0 and np.all(np.isnan(direct.bse))
    np.testing.assert_allclose(res.candidate_params("a+b").to_numpy(), direct.params,
                               rtol=1e-8, atol=1e-10)
    assert np.all(np.isnan(res.candidates["a+b"].bse))
    # the averaged SEs and intervals are NaN, not an error, and the summary says why
    assert res.bse.isna().all() and res.conf_int().isna().all().all()
    assert "weight_type='variance'" in res.summary().as_text().replace("\n", " ")
    # the same weights as variance weights: no warning, finite SEs (relative weights)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ObservationWeightWarning)
        relative = _fit(data, "gaussian", weights=weights, weight_type="variance")
    assert np.isfinite(relative.bse).all()


def test_weights_and_offset_may_name_columns_of_the_data():
    # weights="count" names a column, as cv="fold" does; the same fit as the column's values
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"y": rng.poisson(3.0, size=60).astype(float),
                          "count": rng.integers(1, 4, size=60).astype(float),
                          "t": rng.uniform(0.5, 2.0, size=60)})
    blocks = {"a": rng.normal(size=(60, 2)), "b": rng.normal(size=(60, 2))}
    named = pearl.fit("y ~ block(a) + block(b)", frame, blocks=blocks, family="poisson",
                      weights="count", weight_type="frequency", exposure="t", seed=0,
                      honest=False)
    given = pearl.fit("y ~ block(a) + block(b)", frame, blocks=blocks, family="poisson",
                      weights=frame["count"].to_numpy(), weight_type="frequency",
                      exposure=frame["t"].to_numpy(), seed=0, honest=False)
    np.testing.assert_array_equal(named.weights, given.weights)
    with pytest.raises(pearl.DataError, match=r"weights='cuont' names no column.*'count'"):
        pearl.fit("y ~ block(a) + block(b)", frame, blocks=blocks, family="poisson",
                  weights="cuont", weight_type="frequency", seed=0, honest=False)


def test_few_observations_note_counts_the_largest_candidates_coefficients():
    """The note compares the weights' total with the coefficients of the largest candidate
    (``candidates="single"``: block a with the intercept, 3), not every design column (4)."""
    data, _, _ = _data("gaussian", n=90, seed=5)
    largest = 1 + data["a"].shape[1]  # intercept + block a's columns; block b has 1
    assert largest == 3
    for total, expect_note in ((2.0, True), (3.5, False)):
        weights = np.full(90, total / 90)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = _fit(data, "gaussian", weights=weights, weight_type="frequency",
                       candidates="single")
        notes = [str(w.message) for w in caught if w.category is ObservationWeightWarning]
        assert int(res.n_params.max()) == largest
        if expect_note:
            assert len(notes) == 1 and f"not more than the {largest} coefficients" in notes[0]
            assert f"count as {total:.4g} observations" in notes[0]
            with warnings.catch_warnings():
                # the NaN standard errors the note announces: numpy's invalid-value warning
                warnings.simplefilter("ignore", RuntimeWarning)
                text = res.summary().as_text().replace("\n", " ")
            assert f"the {largest} coefficients" in text
        else:
            assert not notes
    note = few_observations_note(np.full(4, 0.25), "frequency", 1)
    assert "count as 1 observation, not more than the 1 coefficient of" in note


def test_weighted_logistic_with_a_large_but_finite_linear_predictor_is_not_called_separated():
    # One row far out along a (a = 60, y = 1) gives the maximum-likelihood fit a linear
    # predictor near 60 there, though the classes overlap everywhere else: the estimate
    # exists. Weighted fits used to call any linear predictor beyond 30 separation and drop
    # the candidate; they now take the unweighted engine's rule (still diverging after 15
    # Newton steps) and equal statsmodels' weighted GLM.
    rng = np.random.default_rng(4)
    n = 150
    a, b = rng.normal(size=(n, 1)), rng.normal(size=(n, 1))
    a[0, 0] = 60.0
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-a[:, 0]))).astype(float)
    y[0] = 1.0
    data = {"y": y, "a": a, "b": b}
    weights = rng.uniform(0.5, 2.0, size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pearl.CandidateFailureWarning)
        res = _fit(data, "binomial", weights=weights, weight_type="variance")
    X = _exog(data, ["a"])
    direct = _sm_fit("binomial", y, X, weights, "variance", None)
    assert abs(float(X[0] @ direct.params)) > 30  # the case the old rule refused
    # 1e-6: statsmodels' IRLS stops at a deviance change of 1e-13 (tol above), which leaves
    # coefficients within about sqrt(1e-13) = 3e-7 relative of the optimum the engine reaches.
    np.testing.assert_allclose(res.candidate_params("a").to_numpy(), direct.params, rtol=1e-6)


@pytest.mark.parametrize("cov_type", ["HC2", "HC3"])
def test_leverage_corrected_ses_with_too_few_counted_observations_are_nan_without_numpy_warnings(
        cov_type):
    # Frequency weights of 0.04 on 80 rows count 3.2 observations, fewer than the 4
    # coefficients of a+b: every row's leverage h = w x'(X'WX)^-1 x exceeds 1 there, so HC2's
    # sqrt(1 - h) and HC3's 1 - h have no meaning. The SEs are NaN, as the classical ones
    # (statsmodels' df_resid <= 0), with the package's warning, not numpy's.
    data, _, _ = _data("gaussian", n=80, seed=27)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.warns(ObservationWeightWarning, match="count as 3.2 observations"):
            res = _fit(data, "gaussian", weights=np.full(80, 0.04), weight_type="frequency",
                       cov_type=cov_type)
        text = res.summary().as_text()
    assert np.all(np.isnan(res.candidates["a+b"].bse))
    assert res.bse.isna().all()
    assert "weight_type='variance'" in text.replace("\n", " ")


@pytest.mark.parametrize(("cov_type", "total"), [("HC1", 3.0), ("cluster", 3.0),
                                                 ("nonrobust", 1.5)])
def test_small_sample_factors_without_residual_degrees_of_freedom_are_nan_not_numpy_warnings(
        cov_type, total):
    # 64 rows of frequency weight total/64 (exact in binary: the sum is exactly `total`)
    # count `total` observations. Candidate a has 3 coefficients, b 2, a+b 4. At 3.0, a's
    # df_resid is exactly 0: HC1's n / df_resid and the cluster factor's (n - 1) / (n - k)
    # divided by zero (numpy's warning, infinite SEs). At 1.5 every df_resid is negative: the
    # gaussian sigma_jk = sum w e_j e_k / sqrt(df_j df_k) took the square root of a product
    # of two negatives, a finite covariance where the candidates' own SEs are NaN. The
    # residual variance has no estimate without residual degrees of freedom (statsmodels'
    # scale is NaN or infinite there), so the averaged covariance is NaN, with the package's
    # warning at the fit.
    n = 64
    data, _, _ = _data("gaussian", n=n, seed=27)
    options = {"cov_kwds": {"groups": np.arange(n) % 8}} if cov_type == "cluster" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.warns(ObservationWeightWarning, match=f"count as {total:g} observations"):
            res = _fit(data, "gaussian", weights=np.full(n, total / n),
                       weight_type="frequency", cov_type=cov_type, **options)
        text = res.summary().as_text()
        cov = res.cov_params()
        bse = res.bse
    # a (df_resid 0 or negative) and a+b (negative) carry weight: the average has no estimate
    assert res.weights["a"] > 0 and res.weights["a+b"] > 0
    assert cov.isna().all().all()
    assert bse.isna().all()
    assert "weight_type='variance'" in text.replace("\n", " ")


def test_binomial_proportions_are_refused_with_advice_that_reproduces_glm_with_trials():
    rng = np.random.default_rng(11)
    n = 90
    x, a = rng.normal(size=n), rng.normal(size=(n, 2))
    trials = rng.integers(1, 8, n)
    successes = rng.binomial(trials, 1 / (1 + np.exp(-(0.3 + 0.6 * x + 0.4 * a[:, 0]))))
    with pytest.raises(pearl.ResponseError, match="look like proportions.*weight_type='freq"):
        pearl.fit("y ~ x + block(a)", {"y": successes / trials, "x": x, "a": a},
                  family="binomial", seed=0, honest=False)
    # the advice: a y = 1 row weighted by the successes, a y = 0 row by the failures
    both = np.concatenate
    rows = {"y": both([np.ones(n), np.zeros(n)]), "x": both([x, x]), "a": both([a, a]),
            "row": both([np.arange(n), np.arange(n)])}
    counts = both([successes, trials - successes]).astype(float)
    keep = counts > 0  # a zero frequency weight is a row that is not there
    res = pearl.fit("y ~ x + block(a)", {k: v[keep] for k, v in rows.items()},
                    family="binomial", weights=counts[keep], weight_type="frequency",
                    groups=rows["row"][keep], seed=0, honest=False)
    glm = sm.GLM(successes / trials, sm.add_constant(np.column_stack([x, a])),
                 family=sm.families.Binomial(), var_weights=trials).fit(tol=1e-12)
    # one candidate, the same likelihood: both optimisers stop at 1e-10 relative gradient
    np.testing.assert_allclose(res.params, glm.params[:2], rtol=1e-7)
    np.testing.assert_allclose(res.bse, glm.bse[:2], rtol=1e-6)
