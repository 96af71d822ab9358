"""ridge > 0 with observation weights and offsets (issue 26 item 2): the engines' penalty,
weighted; the separation ridge ladder with weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.optimize import minimize
from scipy.special import expit

import pearlstats as pearl
from conftest import simplex_minimum
from pearlstats.design.candidates import build_candidates
from pearlstats.design.folds import make_folds
from pearlstats.engines import weighted
from pearlstats.engines.glm import glm_cv_predict, glm_fit
from pearlstats.engines.ols import ols_cv_predict, ols_fit
from pearlstats.exceptions import SeparationError

N = 120
FAMILIES = ["gaussian", "binomial", "poisson"]
LINKS = {"gaussian": lambda eta: eta, "binomial": expit, "poisson": np.exp}


def weighted_cv_predict(family, X, y, w, offset, candidates, folds, ridge, separation="drop"):
    """The out-of-fold fits pearl.fit makes of weighted rows: weighted least squares for
    gaussian, the Newton engine with weights and offset for binomial and Poisson."""
    if family == "gaussian":
        return weighted.weighted_cv_predict(family, X, y, w, offset, candidates, folds, ridge,
                                            separation)
    return glm_cv_predict(family, X, y, candidates, folds, ridge, separation, row_weights=w,
                          offset=offset)


def weighted_fit(family, X, y, w, offset, columns, label, ridge):
    """The all-rows refit pearl.fit makes of weighted rows (see weighted_cv_predict)."""
    if family == "gaussian":
        return weighted.weighted_fit(family, X, y, w, offset, columns, label, ridge)
    return glm_fit(family, X, y, columns, ridge, label, row_weights=w, offset=offset)


def _problem(family: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(N, 2)) * [1.0, 5.0], rng.normal(size=(N, 3))
    X = np.column_stack([np.ones(N), a, b])
    candidates = build_candidates("all", {"a": slice(1, 3), "b": slice(3, 6)},
                                  [f"c{i}" for i in range(6)], 1)
    offset = rng.normal(scale=0.3, size=N)
    eta = 0.8 * a[:, 0] - 0.1 * a[:, 1] + 0.5 * b[:, 2]
    y = {"gaussian": eta + rng.normal(size=N),
         "binomial": (rng.random(N) < expit(eta + offset)).astype(float),
         "poisson": rng.poisson(np.exp(0.5 * eta + offset)).astype(float)}[family]
    weights = rng.uniform(0.3, 3.0, size=N)  # non-integer
    return X, candidates, y, weights, offset


def _row_loss(family, eta, y):
    if family == "gaussian":
        return 0.5 * (y - eta) ** 2
    if family == "binomial":
        return np.logaddexp(0.0, eta) - y * eta
    return np.exp(eta) - y * eta


def _scipy_fit(family, X, y, w, offset, ridge):
    """Minimise sum w l / sum w + ridge / 2 sum_j (sd_j b_j)^2 on the original columns, sd_j
    the weighted SD of column j (np.average), the first column (intercept) unpenalised."""
    mean = np.average(X, axis=0, weights=w)
    var = np.average((X - mean) ** 2, axis=0, weights=w)
    var[0] = 0.0
    # the same problem on columns scaled by their SD (for BFGS's conditioning only)
    sd = np.where(var > 0, np.sqrt(var), 1.0)
    Z = X / sd

    def objective(g):
        eta = Z @ g + offset
        return (w @ _row_loss(family, eta, y)) / w.sum() + 0.5 * ridge * np.sum((var > 0) * g**2)

    def gradient(g):
        mu = LINKS[family](Z @ g + offset)
        return Z.T @ (w * (mu - y)) / w.sum() + ridge * (var > 0) * g

    g = minimize(objective, np.zeros(X.shape[1]), jac=gradient, method="BFGS",
                 options={"gtol": 1e-12, "maxiter": 10_000}).x
    return g / sd


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("ridge", [1e-4, 0.3, 50.0])
def test_unit_weights_and_zero_offset_equal_the_unweighted_engines(family, ridge):
    X, candidates, y, _, _ = _problem(family, 1)
    folds = make_folds(4, N, seed=0)
    if family == "gaussian":
        expected = ols_cv_predict(X, y, candidates, folds, ridge).predictions
    else:
        expected = glm_cv_predict(family, X, y, candidates, folds, ridge).predictions
    out = weighted_cv_predict(family, X, y, np.ones(N), np.zeros(N), candidates, folds, ridge)
    # 1e-10: the unweighted batched Newton stops at a decrement of 1e-20 (gradients near
    # 1e-13 seen at ridge 50, poisson); the weighted fits reach gradients near 1e-16
    np.testing.assert_allclose(out.predictions, expected, rtol=1e-10, atol=1e-10)
    assert np.all(out.ridges == ridge)
    for candidate in candidates:
        columns = candidate.columns
        theirs = (ols_fit(X, y, columns, ridge) if family == "gaussian"
                  else glm_fit(family, X, y, columns, ridge)[0])
        mine, notes = weighted_fit(family, X, y, np.ones(N), np.zeros(N), columns, "", ridge)
        assert notes == []
        np.testing.assert_allclose(mine, theirs, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("family", FAMILIES)
def test_out_of_fold_predictions_are_the_penalised_weighted_fit_per_fold(family):
    X, candidates, y, w, offset = _problem(family, 2)
    folds = make_folds(3, N, seed=1)
    ridge = 0.5
    out = weighted_cv_predict(family, X, y, w, offset, candidates, folds, ridge).predictions
    for j in (1, len(candidates) - 1):  # a one-block candidate and the full one
        columns = candidates[j].columns
        for k in range(3):
            train = folds != k
            b = _scipy_fit(family, X[train][:, columns], y[train], w[train], offset[train], ridge)
            expected = LINKS[family](X[~train][:, columns] @ b + offset[~train])
            np.testing.assert_allclose(out[~train, j], expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("weight_type", ["frequency", "variance"])
def test_refit_on_all_rows_equals_statsmodels_fit_regularized(family, weight_type):
    X, candidates, y, w, offset = _problem(family, 3)
    ridge = 0.2
    columns = candidates[-1].columns
    params, _ = weighted_fit(family, X, y, w, offset, columns, "", ridge)
    X_S = X[:, columns]
    variance = np.average((X_S - np.average(X_S, axis=0, weights=w)) ** 2, axis=0, weights=w)
    variance[0] = 0.0
    if family == "gaussian":  # WLS's penalised objective is the weighted mean loss's
        model = sm.WLS(y - offset, X_S, weights=w)
        direct = model.fit_regularized(alpha=ridge * variance, L1_wt=0.0).params
    else:  # GLM divides the log-likelihood by the number of rows, not the weights' sum
        key = "freq_weights" if weight_type == "frequency" else "var_weights"
        model = sm.GLM(y, X_S, family={"binomial": sm.families.Binomial,
                                       "poisson": sm.families.Poisson}[family](),
                       offset=offset, **{key: w})
        direct = model.fit_regularized(alpha=ridge * variance * w.sum() / N, L1_wt=0.0,
                                       opt_method="newton-cg").params
    np.testing.assert_allclose(params, direct, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(params, _scipy_fit(family, X_S, y, w, offset, ridge), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("family", FAMILIES)
def test_frequency_weight_two_equals_the_duplicated_row_penalised(family):
    X, candidates, y, _, offset = _problem(family, 4)
    counts = np.random.default_rng(5).integers(1, 3, size=N).astype(float)
    folds = np.arange(N) % 4
    rows = np.repeat(np.arange(N), counts.astype(int))
    ridge = 0.7
    mine = weighted_cv_predict(family, X, y, counts, offset, candidates, folds, ridge)
    theirs = weighted_cv_predict(family, X[rows], y[rows], np.ones(rows.size), offset[rows],
                                 candidates, folds[rows], ridge)
    np.testing.assert_allclose(mine.predictions[rows], theirs.predictions, rtol=0, atol=1e-10)
    columns = candidates[-1].columns
    np.testing.assert_allclose(
        weighted_fit(family, X, y, counts, offset, columns, "", ridge)[0],
        weighted_fit(family, X[rows], y[rows], np.ones(rows.size), offset[rows], columns, "",
                     ridge)[0], rtol=1e-9, atol=1e-11)
    # scaling all weights by a constant changes nothing
    scaled = weighted_cv_predict(family, X, y, 7.5 * counts, offset, candidates, folds, ridge)
    np.testing.assert_allclose(scaled.predictions, mine.predictions, rtol=0, atol=1e-10)


def _frame(family, seed=6, n=80):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 1))
    offset = rng.normal(scale=0.3, size=n)
    eta = 0.2 + 0.8 * a[:, 0] - 0.5 * b[:, 0] + offset
    y = {"gaussian": eta + rng.normal(size=n),
         "binomial": (rng.uniform(size=n) < expit(eta)).astype(float),
         "poisson": rng.poisson(np.exp(eta)).astype(float)}[family]
    return {"y": y, "a": a, "b": b}, offset


def _weighted_and_duplicated(family, seed, n, count_seed, **kwargs):
    """A fit with frequency weights 1 or 2 and one of the data with those rows repeated, each
    copy in its row's fold."""
    data, offset = _frame(family, seed=seed, n=n)
    counts = np.random.default_rng(count_seed).integers(1, 3, size=n)
    folds = np.arange(n) % 5
    rows = np.repeat(np.arange(n), counts)
    copied = {name: values[rows] for name, values in data.items()}
    kwargs = {"family": family, "seed": 3, "honest": False, **kwargs}
    res = pearl.fit("y ~ block(a) + block(b)", data, weights=counts, weight_type="frequency",
                    offset=offset, cv=folds, **kwargs)
    dup = pearl.fit("y ~ block(a) + block(b)", copied, offset=offset[rows], cv=folds[rows],
                    **kwargs)
    return res, dup


@pytest.mark.parametrize("family", FAMILIES)
def test_fit_with_ridge_and_frequency_weight_two_equals_duplicated_rows(family):
    res, dup = _weighted_and_duplicated(family, 6, 80, 7, ridge=0.4)
    np.testing.assert_allclose(res.weights.to_numpy(), dup.weights.to_numpy(), atol=1e-7)
    np.testing.assert_allclose(res.cv_risk.to_numpy(), dup.cv_risk.to_numpy(), rtol=1e-8)
    with pytest.warns(pearl.PearlWarning, match="ridge"):
        mine = res.coef_table(terms="all")
    with pytest.warns(pearl.PearlWarning, match="ridge"):
        theirs = dup.coef_table(terms="all")
    np.testing.assert_allclose(mine["coef"].to_numpy(), theirs["coef"].to_numpy(), rtol=1e-7,
                               atol=1e-9)
    # the ridge sandwich counts the copies (weighted information, sum(w) rows)
    np.testing.assert_allclose(mine["std err"].to_numpy(), theirs["std err"].to_numpy(),
                               rtol=1e-6)
    fitted = res.candidates["a+b"]
    np.testing.assert_allclose(np.asarray(fitted.params),
                               res.candidate_params("a+b").to_numpy(), rtol=1e-6, atol=1e-8)
    assert fitted.penalty_ridge == 0.4


def _separated(n=60, seed=8):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 1)), rng.normal(size=(n, 1))
    y = (a[:, 0] > 0).astype(float)  # block a separates the classes
    return {"y": y, "a": a, "b": b}


def test_separated_weighted_logistic_candidate_climbs_the_ridge_ladder():
    data = _separated()
    weights = np.ones(60)
    kwargs = {"family": "binomial", "seed": 1, "honest": False}
    with pytest.warns(pearl.PearlWarning, match="separate"):
        plain = pearl.fit("y ~ block(a) + block(b)", data, **kwargs)
    with pytest.warns(pearl.PearlWarning, match="separate"):
        weighted = pearl.fit("y ~ block(a) + block(b)", data, weights=weights,
                             weight_type="frequency", **kwargs)
    chosen = dict(weighted.stages.family.candidate_ridges)
    assert chosen == dict(plain.stages.family.candidate_ridges)
    assert chosen["a"] == 1e-4
    # unit weights: the same ladder ridge, the same out-of-fold predictions and weights
    np.testing.assert_allclose(weighted.weights.to_numpy(), plain.weights.to_numpy(), atol=1e-7)
    np.testing.assert_allclose(weighted.candidate_params("a").to_numpy(),
                               plain.candidate_params("a").to_numpy(), rtol=1e-7)
    with pytest.raises(SeparationError, match="'a'"):
        pearl.fit("y ~ block(a) + block(b)", data, weights=weights, weight_type="frequency",
                  separation="raise", **kwargs)
    with pytest.warns(pearl.CandidateFailureWarning, match="failed in cross-validation"):
        dropped = pearl.fit("y ~ block(a) + block(b)", data, weights=weights,
                            weight_type="frequency", separation="drop", **kwargs)
    assert dropped.weights["a"] == 0.0


def test_ladder_fits_are_the_penalised_weighted_fits_at_the_chosen_ridge():
    data = _separated(seed=9)
    w = np.random.default_rng(10).uniform(0.5, 2.0, size=60)
    X = np.column_stack([np.ones(60), data["a"], data["b"]])
    candidates = build_candidates("all", {"a": slice(1, 2), "b": slice(2, 3)},
                                  ["1", "a", "b"], 1)
    folds = np.arange(60) % 3
    out = weighted_cv_predict("binomial", X, data["y"], w, np.zeros(60), candidates, folds,
                              0.0, "ridge")
    j = [c.label for c in candidates].index("a")
    assert out.ridges[j] == 1e-4 and not out.failed[j]
    columns = candidates[j].columns
    for k in range(3):
        train = folds != k
        b = _scipy_fit("binomial", X[train][:, columns], data["y"][train], w[train],
                       np.zeros(train.sum()), 1e-4)
        np.testing.assert_allclose(out.predictions[~train, j], expit(X[~train][:, columns] @ b),
                                   atol=1e-5)


# weight_shrinkage="cv" with observation weights


def _weighted_cv_amount(plain, y, v, target):
    """The amount on 0, 0.1, ..., 1 with the lowest weighted CV loss: scipy's weights of the
    weighted mean squared error without each fold, each amount scored by the weighted mean of
    all rows' squared errors."""
    P, folds = plain.cv_predictions.to_numpy(), plain.folds
    grid = np.linspace(0, 1, 11)
    predicted = np.zeros((len(grid), len(y)))
    for k in range(plain.n_folds):
        held = folds == k
        P_fit, y_fit, v_fit = P[~held], y[~held], v[~held]

        def loss(w, P_fit=P_fit, y_fit=y_fit, v_fit=v_fit):
            return np.average((y_fit - P_fit @ w) ** 2, weights=v_fit)

        w_hat, _ = simplex_minimum(loss, P.shape[1])
        for i, lam in enumerate(grid):
            predicted[i, held] = P[held] @ ((1 - lam) * w_hat + lam * target)
    risks = [np.average((y - p) ** 2, weights=v) for p in predicted]
    return grid[np.argmin(risks)], np.array(risks)


def test_cv_shrinkage_with_variance_weights_minimises_the_weighted_held_out_loss():
    rng = np.random.default_rng(17)  # weighted amount 0.4 here, unweighted 0.7
    n = 50
    a, b, c = rng.normal(size=(n, 2)), rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
    y = 0.3 * a[:, 0] - 0.2 * b[:, 1] + 0.3 * c[:, 0] + 2 * rng.normal(size=n)
    data = {"y": y, "a": a, "b": b, "c": c}
    v = rng.uniform(0.2, 5.0, size=n)
    kwargs = {"weights": v, "weight_type": "variance", "seed": 3, "honest": False}
    formula = "y ~ block(a) + block(b) + block(c)"
    res = pearl.fit(formula, data, weight_shrinkage="cv", **kwargs)
    plain = pearl.fit(formula, data, **kwargs)
    J = len(plain.weights)
    amount, _ = _weighted_cv_amount(plain, data["y"], v, np.full(J, 1 / J))
    assert 0 < amount < 1
    note = res.failures[res.failures.kind == "shrinkage"]
    assert note.action.iloc[0].startswith(f"shrinkage amount {amount:g} (chosen by cross-")
    np.testing.assert_allclose(res.weights, (1 - amount) * plain.weights + amount / J,
                               atol=1e-6)


def test_cv_shrinkage_risks_are_the_weighted_means_over_the_groups():
    from pearlstats.weights.losses import get_loss
    from pearlstats.weights.row_weighted import RowWeightedLoss
    from pearlstats.weights.shrinkage import choose_shrinkage

    rng = np.random.default_rng(12)
    n, J = 90, 4
    y = rng.normal(size=n)
    P = y[:, None] + rng.normal(scale=[0.5, 1.0, 1.5, 2.0], size=(n, J))
    v = rng.uniform(0.2, 5.0, size=n)
    folds = np.arange(n) % 5
    loss = RowWeightedLoss("gaussian", get_loss("squared", "gaussian"), v)
    chosen = choose_shrinkage(P, y, loss, folds, np.arange(n), np.ones(J, dtype=bool))

    class _Plain:  # what _weighted_cv_amount reads from a fit
        cv_predictions, n_folds = pd.DataFrame(P), 5

    _Plain.folds = folds
    amount, risks = _weighted_cv_amount(_Plain, y, v, np.full(J, 1 / J))
    np.testing.assert_allclose(chosen.cv_risk, risks, rtol=1e-6)
    assert chosen.amount == amount


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_cv_shrinkage_with_frequency_weight_two_equals_duplicated_rows(family):
    res, dup = _weighted_and_duplicated(family, 13, 90, 14, weight_shrinkage="cv")
    mine = res.failures[res.failures.kind == "shrinkage"].action.iloc[0]
    theirs = dup.failures[dup.failures.kind == "shrinkage"].action.iloc[0]
    assert mine == theirs
    np.testing.assert_allclose(res.weights.to_numpy(), dup.weights.to_numpy(), atol=1e-7)


@pytest.mark.parametrize("family", FAMILIES)
def test_size_shrinkage_with_frequency_weights_counts_their_sum_as_the_duplicated_rows(family):
    res, dup = _weighted_and_duplicated(family, 13, 80, 14, weight_shrinkage="size")
    counts = np.random.default_rng(14).integers(1, 3, size=80)  # the helper's counts
    # the size rule min(1, 2.5 J / n) with n the observations: the sum of the frequency
    # weights, the duplicated data's rows (80 rows would give 3 * 2.5 / 80 = 0.094)
    amount = min(1.0, 2.5 * 3 / counts.sum())
    for fit in (res, dup):
        note = fit.failures[fit.failures.kind == "shrinkage"].action.iloc[0]
        assert note.startswith(f"shrinkage amount {amount:g} ")
        assert f"n = {counts.sum()} rows" in note
    # the same amount and weights as the duplicated rows (both solve the same weighted QP
    # to the solver's 1e-8 tolerance)
    np.testing.assert_allclose(res.weights.to_numpy(), dup.weights.to_numpy(), atol=1e-7)


# reweight / loss_sensitivity and Pearson residuals with observation weights


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("weight_type", ["frequency", "variance"])
def test_pearson_residuals_of_one_candidate_equal_statsmodels_glm(family, weight_type):
    data, offset = _frame(family, seed=15)
    w = np.random.default_rng(16).uniform(0.3, 3.0, size=80)
    res = pearl.fit("y ~ block(a) + block(b)", data, family=family, weights=w,
                    weight_type=weight_type, offset=offset, candidates=["a+b"], seed=1,
                    honest=False)
    assert res.weights["a+b"] == 1.0
    X = np.column_stack([np.ones(80), data["a"], data["b"]])
    key = "freq_weights" if weight_type == "frequency" else "var_weights"
    direct = sm.GLM(data["y"], X, family={"gaussian": sm.families.Gaussian,
                                          "binomial": sm.families.Binomial,
                                          "poisson": sm.families.Poisson}[family](),
                    offset=offset, **{key: w}).fit(tol=1e-13)
    np.testing.assert_allclose(res.resid_pearson.to_numpy(), direct.resid_pearson, rtol=1e-7,
                               atol=1e-9)


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_reweight_with_frequency_weight_two_equals_duplicated_rows(family):
    res, dup = _weighted_and_duplicated(family, 17, 90, 18)
    np.testing.assert_allclose(res.reweight(res.loss).weights, res.weights, atol=1e-12)
    mine, theirs = res.loss_sensitivity(), dup.loss_sensitivity()
    left_out = [name for name in theirs.columns if name not in mine.columns]
    assert left_out == (["hinge"] if family == "binomial" else ["absolute"])
    theirs = theirs[mine.columns]
    theirs = theirs[(theirs > 0).any(axis=1)]  # as the table keeps rows with a weight > 0
    assert list(mine.index) == list(theirs.index)
    np.testing.assert_allclose(mine.to_numpy(), theirs.to_numpy(), atol=1e-7)


def test_reweight_with_variance_weights_minimises_the_weighted_new_loss():
    data, offset = _frame("binomial", seed=19, n=90)
    v = np.random.default_rng(20).uniform(0.2, 5.0, size=90)
    res = pearl.fit("y ~ block(a) + block(b)", data, family="binomial", weights=v,
                    weight_type="variance", offset=offset, seed=3, honest=False)
    squared = res.reweight("squared")
    P, y = res.cv_predictions.to_numpy(), data["y"]

    def objective(w):
        return np.average((y - P @ w) ** 2, weights=v)

    expected, best = simplex_minimum(objective, P.shape[1])
    np.testing.assert_allclose(squared.weights.to_numpy(), expected, atol=2e-4)
    assert objective(squared.weights.to_numpy()) <= best * (1 + 1e-9)


@pytest.mark.parametrize("family", FAMILIES)
def test_honest_risk_with_ridge_and_frequency_weight_two_equals_duplicated_rows(family):
    res, dup = _weighted_and_duplicated(family, 21, 60, 22, ridge=0.3, honest=3)
    columns = ["risk", "se", "ratio", "ratio_se"]
    np.testing.assert_allclose(res.honest[columns], dup.honest[columns], rtol=1e-6, atol=1e-9)
    if family != "binomial":  # CV+ intervals: every outer fold's procedure with the ridge
        new_data, new_offset = _frame(family, seed=23, n=6)
        new = {"a": new_data["a"], "b": new_data["b"]}
        mine = res.predict(new, interval="prediction", alpha=0.2, offset=new_offset)
        theirs = dup.predict(new, interval="prediction", alpha=0.2, offset=new_offset)
        np.testing.assert_allclose(mine.to_numpy(), theirs.to_numpy(), rtol=1e-7, atol=1e-9)
