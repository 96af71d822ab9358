"""The fast CV engines against per-fold statsmodels fits (the naive loop)."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from pearlstats.design.candidates import build_candidates
from pearlstats.design.folds import make_folds
from pearlstats.engines.glm import glm_cv_predict, glm_fit
from pearlstats.engines.multinomial import multinomial_cv_predict, multinomial_fit
from pearlstats.engines.ols import ols_cv_predict, ols_fit, ols_loo_predict


def _problem(n, seed, scales=(1.0, 10.0, 0.01, 3.0)):
    """Intercept + blocks of 2 columns on very different scales (tests the scaling)."""
    rng = np.random.default_rng(seed)
    blocks = [rng.normal(size=(n, 2)) * s for s in scales]
    X = np.column_stack([np.ones(n)] + blocks)
    slices = {f"b{i}": slice(1 + 2 * i, 3 + 2 * i) for i in range(len(blocks))}
    candidates = build_candidates("all", slices, [f"c{i}" for i in range(X.shape[1])], 1)
    return rng, X, candidates



def test_ols_matches_per_fold_statsmodels():
    rng, X, candidates = _problem(150, 1)
    y = X @ rng.normal(size=X.shape[1]) + rng.normal(size=150)
    folds = make_folds(5, 150, seed=3)
    out = ols_cv_predict(X, y, candidates, folds)
    for j, candidate in enumerate(candidates):
        for k in range(5):
            train = folds != k
            fitted = sm.OLS(y[train], X[train][:, candidate.columns]).fit()
            np.testing.assert_allclose(
                out.predictions[~train, j],
                fitted.predict(X[~train][:, candidate.columns]),
                rtol=0,
                atol=1e-8,
            )
    assert not out.failed.any()


def test_ols_loo_matches_refits_without_each_row():
    rng, X, candidates = _problem(40, 2)
    y = X @ rng.normal(size=X.shape[1]) + rng.normal(size=40)
    out = ols_loo_predict(X, y, candidates)
    for j in (0, 5, len(candidates) - 1):
        columns = candidates[j].columns
        for i in range(40):
            keep = np.arange(40) != i
            fitted = sm.OLS(y[keep], X[keep][:, columns]).fit()
            assert out.predictions[i, j] == pytest.approx(
                fitted.predict(X[i : i + 1, columns])[0], abs=1e-9
            )


def test_ols_rank_deficient_candidate_matches_pinv_and_is_noted():
    rng, X, candidates = _problem(60, 3)
    X = np.column_stack([X, X[:, 1] + X[:, 3]])  # a block column that is a sum of two others
    slices = {"a": slice(1, 5), "b": slice(5, 10)}
    candidates = build_candidates("all", slices, [f"c{i}" for i in range(X.shape[1])], 1)
    y = rng.normal(size=60)
    folds = make_folds(3, 60, seed=0)
    out = ols_cv_predict(X, y, candidates, folds)
    full = candidates[-1]
    for k in range(3):
        train = folds != k
        fitted = sm.OLS(y[train], X[train][:, full.columns]).fit()  # statsmodels uses pinv
        np.testing.assert_allclose(
            out.predictions[~train, -1], fitted.predict(X[~train][:, full.columns]), atol=1e-8
        )
    assert any(entry.kind == "rank deficient" and not entry.excluded for entry in out.entries)


@pytest.mark.parametrize("where", ["one held-out row", "one held-out fold"])
def test_ols_column_zero_in_the_training_rows_matches_pinv(where):
    """A level (or word) seen only in the held-out rows: its column is 0 over the training rows.

    Centred on the all-rows mean it was a non-zero constant aliased with the intercept, and
    the minimum-norm split moved those rows' out-of-fold predictions (0.16 for a row whose
    statsmodels prediction is 1.26).
    """
    rng, X, candidates = _problem(60, 4)
    folds = make_folds(3, 60, seed=0)
    rare = (np.arange(60) == np.flatnonzero(folds == 1)[0]) if where == "one held-out row" \
        else (folds == 1)
    X = np.column_stack([X[:, :1], rare.astype(float), X[:, 1:]])
    slices = {"a": slice(2, 6), "b": slice(6, 10)}
    candidates = build_candidates("all", slices, [f"c{i}" for i in range(X.shape[1])], 2)
    y = X[:, 2] - X[:, 7] + rng.normal(size=60)
    out = ols_cv_predict(X, y, candidates, folds)
    for j, candidate in enumerate(candidates):
        train = folds != 1
        fitted = sm.OLS(y[train], X[train][:, candidate.columns]).fit()  # pinv: coefficient 0
        np.testing.assert_allclose(out.predictions[~train, j],
                                   fitted.predict(X[~train][:, candidate.columns]),
                                   rtol=0, atol=1e-8)
    # fold 1's training rows alone are collinear: the ledger names that fold (it named none,
    # and the summary then said every fold)
    assert {entry.fold for entry in out.entries if entry.kind == "rank deficient"} == {1}


def test_ols_leave_one_out_of_the_only_row_of_a_level_matches_pinv():
    """Leverage 1: without its row, a level's (or word's) column is 0. The candidate was
    dropped ("leave-one-out undefined"); statsmodels' pinv fit gives the column coefficient 0."""
    rng, X, _ = _problem(40, 6)
    alone = np.zeros(40)
    alone[7] = 1.0
    X = np.column_stack([X[:, :1], alone, X[:, 1:5]])
    candidates = build_candidates("all", {"a": slice(2, 4), "b": slice(4, 6)},
                                  [f"c{i}" for i in range(6)], 2)
    y = X[:, 2] - X[:, 5] + rng.normal(size=40)
    out = ols_loo_predict(X, y, candidates)
    assert not out.failed.any()
    for j, candidate in enumerate(candidates):
        for i in (7, 8):
            train = np.arange(40) != i
            fitted = sm.OLS(y[train], X[train][:, candidate.columns]).fit()
            assert out.predictions[i, j] == pytest.approx(
                fitted.predict(X[i:i + 1, candidate.columns])[0], abs=1e-8)
    assert any(entry.kind == "rank deficient" and not entry.excluded for entry in out.entries)


def test_ols_infeasible_candidate_is_recorded_not_fitted():
    rng, X, candidates = _problem(12, 4)
    y = rng.normal(size=12)
    folds = make_folds(2, 12, seed=0)  # 6 training rows; the 4-block candidate has 9 parameters
    out = ols_cv_predict(X, y, candidates, folds)
    wide = [j for j, c in enumerate(candidates) if c.n_params >= 6]
    assert (
        out.failed[wide].all()
        and not out.failed[[j for j in range(len(candidates)) if j not in wide]].any()
    )
    assert np.isnan(out.predictions[:, wide]).all()
    assert {e.candidate for e in out.entries if e.kind == "infeasible"} == {
        candidates[j].label for j in wide
    }


def test_ols_ridge_matches_closed_form_on_standardised_columns():
    rng, X, candidates = _problem(80, 5)
    y = X @ rng.normal(size=X.shape[1]) + rng.normal(size=80)
    columns = candidates[-1].columns
    ridge = 0.3
    beta = ols_fit(X, y, columns, ridge)
    # Ridge on centred, SD-scaled columns (all rows for this refit); the intercept is not penalised.
    Z = X[:, columns[1:]]
    mean, sd = Z.mean(axis=0), Z.std(axis=0)
    Zs = np.column_stack([np.ones(len(y)), (Z - mean) / sd])
    penalty = np.diag(np.r_[0.0, np.ones(len(columns) - 1)]) * ridge * len(y)
    gamma = np.linalg.solve(Zs.T @ Zs + penalty, Zs.T @ y)
    slopes = gamma[1:] / sd
    expected = np.r_[gamma[0] - mean @ slopes, slopes]
    np.testing.assert_allclose(beta, expected, rtol=1e-10)


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
def test_glm_matches_per_fold_statsmodels(kind):
    rng, X, candidates = _problem(300, 6)
    eta = X @ (rng.normal(size=X.shape[1]) * np.r_[0.5, 0.4, 0.4, 0.03, 0.03, 40, 40, 0.1, 0.1])
    if kind == "binomial":
        y = (rng.random(300) < 1 / (1 + np.exp(-eta))).astype(float)
        model = lambda yy, XX: sm.Logit(yy, XX).fit(disp=0, tol=1e-12, maxiter=200)
    else:
        y = rng.poisson(np.exp(0.5 * eta / eta.std())).astype(float)
        model = lambda yy, XX: sm.GLM(yy, XX, family=sm.families.Poisson()).fit(tol=1e-12)
    folds = make_folds(4, 300, seed=2)
    out = glm_cv_predict(kind, X, y, candidates, folds)
    for j, candidate in enumerate(candidates):
        for k in range(4):
            train = folds != k
            fitted = model(y[train], X[train][:, candidate.columns])
            np.testing.assert_allclose(
                out.predictions[~train, j],
                fitted.predict(X[~train][:, candidate.columns]),
                atol=1e-6,
            )
    params, notes = glm_fit(kind, X, y, candidates[-1].columns)
    np.testing.assert_allclose(
        params, model(y, X[:, candidates[-1].columns]).params, rtol=1e-6, atol=1e-8
    )
    assert notes == []


def test_logistic_separation_is_detected_and_ridge_fixes_it():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(80, 1))
    X = np.column_stack([np.ones(80), x, rng.normal(size=(80, 1))])
    y = (x[:, 0] > 0).astype(float)  # perfectly separated by the first block
    candidates = build_candidates("all", {"a": slice(1, 2), "b": slice(2, 3)}, ["1", "a", "b"], 1)
    folds = make_folds(4, 80, seed=0, strata=y.astype(int))
    out = glm_cv_predict("binomial", X, y, candidates, folds)
    separated = {e.candidate for e in out.entries if e.kind == "separation"}
    assert separated == {"a", "a+b"}
    assert out.failed.tolist() == [True, False, True]
    ridged = glm_cv_predict("binomial", X, y, candidates, folds, ridge=0.1)
    assert not ridged.failed.any() and np.isfinite(ridged.predictions).all()


def test_multinomial_matches_per_fold_mnlogit():
    rng, X, candidates = _problem(400, 8, scales=(1.0, 10.0, 0.01))
    W = rng.normal(size=(X.shape[1], 3)) * np.r_[0.3, 0.6, 0.6, 0.05, 0.05, 40, 40][:, None]
    logits = X @ W
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    codes = np.array([rng.choice(3, p=p) for p in prob])
    folds = make_folds(4, 400, seed=1, strata=codes)
    out = multinomial_cv_predict(X, codes, 3, candidates, folds)
    for j, candidate in enumerate(candidates):
        for k in range(4):
            train = folds != k
            fitted = sm.MNLogit(codes[train], X[train][:, candidate.columns]).fit(
                disp=0, tol=1e-12, maxiter=200
            )
            np.testing.assert_allclose(
                out.predictions[~train, j],
                fitted.predict(X[~train][:, candidate.columns]),
                atol=1e-6,
            )
    params, _ = multinomial_fit(X, codes, 3, candidates[-1].columns)
    reference = sm.MNLogit(codes, X[:, candidates[-1].columns]).fit(disp=0, tol=1e-12, maxiter=200)
    np.testing.assert_allclose(params, reference.params, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "multinomial"])
def test_ridge_penalises_all_zero_columns_to_zero_instead_of_a_singular_newton_system(family):
    """Pixels that are 0 in every image: with ridge > 0 the fit equals the fit without those
    columns."""
    import pearlstats as pearl

    rng = np.random.default_rng(5)
    n = 150
    y = np.repeat(np.arange(3), 50) if family == "multinomial" else np.repeat([0, 1], 75)
    a = rng.normal(size=(n, 6)) + 0.7 * y[:, None]
    if family == "gaussian":
        y = a @ np.arange(6.0) + rng.normal(size=n)
    padded = np.hstack([a[:, :3], np.zeros((n, 2)), a[:, 3:]])
    with_zeros = pearl.fit("y ~ block(a)", {"y": y, "a": padded}, family=family, ridge=0.05, seed=2)
    without = pearl.fit("y ~ block(a)", {"y": y, "a": a}, family=family, ridge=0.05, seed=2)
    assert with_zeros.failures.empty  # no "rank deficient" fallback
    params = with_zeros.candidate_params("a").to_numpy()
    np.testing.assert_array_equal(
        params[[4, 5]], 0.0
    )  # intercept, 3 columns, then the two zero columns
    np.testing.assert_allclose(
        np.delete(params, [4, 5], axis=0),
        without.candidate_params("a").to_numpy(),
        rtol=1e-7,
        atol=1e-9,
    )
    np.testing.assert_allclose(
        with_zeros.cv_predictions.to_numpy(),
        without.cv_predictions.to_numpy(),
        rtol=1e-7,
        atol=1e-10,
    )


@pytest.mark.parametrize("kind", ["binomial", "poisson", "multinomial"])
def test_newton_folds_do_not_keep_a_coefficient_fitted_on_the_held_out_rows(kind):
    """A word seen only in three rows of the held-out fold: no training row informs its
    coefficient. The fold fits started from the all-rows optimum and kept its value there, so
    those rows' out-of-fold predictions reproduced their own labels (probability 1.0 for y = 1,
    0.0 for y = 0). They must be the training rows' fit, which gives the word coefficient 0:
    the statsmodels fit without that column."""
    rng = np.random.default_rng(4)
    n = 90
    a = rng.normal(size=(n, 3))
    folds = make_folds(3, n, seed=0)
    held = np.flatnonzero(folds == 1)[:3]
    word = np.zeros(n)
    word[held] = [1.0, 2.0, 1.5]
    X = np.column_stack([np.ones(n), a, word])
    candidates = build_candidates("all", {"a": slice(1, 4), "w": slice(4, 5)},
                                  [f"c{i}" for i in range(5)], 1)
    train = folds != 1
    if kind == "multinomial":
        y = np.digitize(a[:, 0] + rng.normal(size=n), [-0.5, 0.5])
        y[held] = [0, 1, 2]
        out = multinomial_cv_predict(X, y, 3, candidates, folds)
        reference = sm.MNLogit(y[train], X[train][:, :4]).fit(disp=0).predict(X[held][:, :4])
    else:
        family = sm.families.Binomial() if kind == "binomial" else sm.families.Poisson()
        y = (rng.random(n) < 1 / (1 + np.exp(-a[:, 0]))).astype(float)
        y[held] = [1.0, 0.0, 1.0]
        if kind == "poisson":
            y = rng.poisson(np.exp(0.3 * a[:, 0])).astype(float)
            y[held] = 6.0
        out = glm_cv_predict(kind, X, y, candidates, folds)
        reference = sm.GLM(y[train], X[train][:, :4], family=family).fit().predict(X[held][:, :4])
    both = [c.label for c in candidates].index("a+w")
    assert not out.failed[both]
    np.testing.assert_allclose(out.predictions[held, both], reference, rtol=0, atol=1e-7)
