"""A candidate that cannot be fitted is recorded, given weight 0, and the weights are re-solved
without it.

Each test makes some candidates fail in a known way (too many parameters,
separated classes, Newton stopped early), then checks the ledger row
(candidate, fold, kind, reason), the warning, the exact zero weight, and that
the remaining weights equal an independent solve (per-fold least squares /
statsmodels fits and scipy's SLSQP) over the surviving candidates only.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.special import xlogy
from sklearn.linear_model import LogisticRegression

import pearlstats as pearl
import pearlstats.engines.glm as glm_engine
from conftest import separated_binomial, simplex_minimum

N = 60


def _design(blocks: dict, label: str) -> np.ndarray:
    return np.hstack([np.ones((N, 1))] + [blocks[name] for name in label.split("+")])


def _ols_out_of_fold(y, X, folds) -> np.ndarray:
    out = np.empty(len(y))
    for k in np.unique(folds):
        train = folds != k
        beta = np.linalg.lstsq(X[train], y[train], rcond=None)[0]
        out[~train] = X[~train] @ beta
    return out


def _logit_out_of_fold(y, X, folds) -> np.ndarray:
    out = np.empty(len(y))
    for k in np.unique(folds):
        train = folds != k
        fitted = sm.Logit(y[train], X[train]).fit(disp=0, tol=1e-12, maxiter=200)
        out[~train] = fitted.predict(X[~train])
    return out


def _poisson_out_of_fold(y, X, folds) -> np.ndarray:
    out = np.empty(len(y))
    for k in np.unique(folds):
        train = folds != k
        fitted = sm.GLM(y[train], X[train], family=sm.families.Poisson()).fit(tol=1e-12)
        out[~train] = fitted.predict(X[~train])
    return out


def _fit_recording_warnings(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit(*args, **kwargs)
    failures = [
        str(w.message) for w in caught if issubclass(w.category, pearl.CandidateFailureWarning)
    ]
    return res, failures


def _assert_failed_and_excluded(res, failed_labels, kind, warned):
    ledger = res.failures
    excluded = ledger[ledger.excluded]
    assert set(excluded["candidate"]) == set(failed_labels)
    assert set(excluded["kind"]) == {kind}
    assert (excluded["stage"] == "cv").all() and excluded["reason"].str.len().gt(10).all()
    for label in failed_labels:
        assert res.weights[label] == 0.0 and not np.signbit(res.weights[label])
        assert res.cv_predictions[label].isna().to_numpy().all()
        assert sum(f"candidate {label!r} failed" in message for message in warned) == 1
    assert res.failed[list(failed_labels)].all() and not res.failed.drop(list(failed_labels)).any()
    text = str(res.summary())
    assert "Failure ledger" in text and kind in text
    for label in failed_labels:
        assert label in text


# ---- too many parameters ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def wide_blocks():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    y = a[:, 0] - 0.5 * b[:, 1] + rng.normal(scale=0.7, size=N)
    return y, {"a": a, "b": b, "wide": rng.normal(size=(N, 50))}


def test_infeasible_candidates_get_weight_zero_and_the_rest_are_resolved_independently(wide_blocks):
    y, blocks = wide_blocks
    res, warned = _fit_recording_warnings(
        "y ~ block(a) + block(b) + block(wide)", {"y": y}, blocks=blocks, seed=2
    )
    failed = [label for label in res.candidate_labels if "wide" in label]
    _assert_failed_and_excluded(res, failed, "infeasible", warned)
    assert res.failures["reason"].str.contains(r"\d+ parameters but only 48 training rows").all()

    survivors = ["a", "b", "a+b"]
    P = np.column_stack(
        [_ols_out_of_fold(y, _design(blocks, label), res.folds) for label in survivors]
    )
    np.testing.assert_allclose(res.cv_predictions[survivors].to_numpy(), P, atol=1e-9)
    w, best = simplex_minimum(lambda w: np.mean((y - P @ w) ** 2), len(survivors))
    np.testing.assert_allclose(res.weights[survivors].to_numpy(), w, atol=1e-5)
    assert res.weight_objective <= best * (1 + 1e-9)
    assert res.weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_a_candidate_infeasible_only_for_the_smallest_training_set_is_excluded(wide_blocks):
    y, blocks = wide_blocks
    labels = np.repeat([0, 1, 2], [30, 15, 15])  # training rows: 30, 45, 45
    narrow = {"a": blocks["a"], "mid": blocks["wide"][:, :35]}
    res, warned = _fit_recording_warnings(
        "y ~ block(a) + block(mid)", {"y": y}, blocks=narrow, cv=labels
    )
    _assert_failed_and_excluded(res, ["mid", "a+mid"], "infeasible", warned)
    assert res.weights["a"] == 1.0


# ---- separation ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def separated():
    return separated_binomial(N)


def test_separated_candidates_are_recorded_per_fold_and_excluded(separated):
    y, blocks = separated
    res, warned = _fit_recording_warnings("y ~ block(a) + block(s)", {"y": y}, blocks=blocks,
                                          family="binomial", seed=1, separation="drop")
    _assert_failed_and_excluded(res, ["s", "a+s"], "separation", warned)
    ledger = res.failures[res.failures.kind == "separation"]
    assert sorted(ledger.loc[ledger.candidate == "s", "fold"]) == list(range(res.n_folds))
    assert ledger["action"].str.contains("ridge > 0").all()
    assert res.weights["a"] == 1.0  # the only survivor
    P = _logit_out_of_fold(y, _design(blocks, "a"), res.folds)
    np.testing.assert_allclose(res.cv_predictions["a"].to_numpy(), P, atol=1e-6)


def test_ridge_keeps_separated_candidates_and_matches_penalised_logistic_regression(separated):
    y, blocks = separated
    ridge = 0.1
    res, warned = _fit_recording_warnings("y ~ block(a) + block(s)", {"y": y}, blocks=blocks,
                                          family="binomial", seed=1, ridge=ridge)
    assert warned == [] and not res.failed.any()
    assert "separation" not in set(res.failures["kind"])
    assert np.isfinite(res.cv_predictions.to_numpy()).all()
    # The penalty is ridge/2 * ||b||^2 on columns standardised by each fold's training rows (mean
    # and SD, ddof 0), added to the mean negative log-likelihood: scikit-learn's C = 1 / (ridge *
    # n_train).
    X = np.hstack([blocks["a"], blocks["s"]])
    expected = np.empty(N)
    for k in range(res.n_folds):
        train = res.folds != k
        mean, sd = X[train].mean(axis=0), X[train].std(axis=0)
        model = LogisticRegression(C=1.0 / (ridge * train.sum()), tol=1e-12, max_iter=10_000)
        model.fit((X[train] - mean) / sd, y[train])
        expected[~train] = model.predict_proba((X[~train] - mean) / sd)[:, 1]
    np.testing.assert_allclose(res.cv_predictions["a+s"].to_numpy(), expected, atol=1e-6)
    P = res.cv_predictions.to_numpy()
    ce = lambda w: -np.mean(xlogy(y, P @ w) + xlogy(1 - y, 1 - P @ w))
    _, best = simplex_minimum(ce, P.shape[1])
    assert ce(res.weights.to_numpy()) <= best + 1e-9


# ---- Newton stopped early ----------------------------------------------------------------------
def test_a_candidate_that_does_not_converge_is_excluded_and_the_rest_resolved(monkeypatch):
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 3))
    y = rng.poisson(np.exp(0.5 + 0.4 * a[:, 0] + 0.3 * b[:, 2])).astype(float)
    blocks = {"a": a, "b": b}
    original = glm_engine.batched_newton

    def one_step_for_block_b_alone(objective, theta0, **options):
        if theta0.shape[1] == 1 + b.shape[1]:  # intercept + b: only candidate "b"
            options["max_iter"] = 1
        return original(objective, theta0, **options)

    monkeypatch.setattr(glm_engine, "batched_newton", one_step_for_block_b_alone)
    # separation="drop": a Poisson fit without a finite optimum would otherwise climb the
    # ridge ladder (since 0.8.8, as a logistic one does), which this cap defeats on every rung
    res, warned = _fit_recording_warnings(
        "y ~ block(a) + block(b)", {"y": y}, blocks=blocks, family="poisson", seed=4,
        separation="drop",
    )
    _assert_failed_and_excluded(res, ["b"], "not converged", warned)
    assert sorted(res.failures.loc[res.failures.candidate == "b", "fold"]) == list(
        range(res.n_folds)
    )

    survivors = ["a", "a+b"]
    P = np.column_stack(
        [_poisson_out_of_fold(y, _design(blocks, label), res.folds) for label in survivors]
    )
    np.testing.assert_allclose(res.cv_predictions[survivors].to_numpy(), P, rtol=1e-6)
    deviance = lambda w: np.mean(2 * (xlogy(y, y) - xlogy(y, P @ w) - (y - P @ w)))
    w, best = simplex_minimum(deviance, 2)
    np.testing.assert_allclose(res.weights[survivors].to_numpy(), w, atol=1e-5)
    assert res.weight_objective <= best * (1 + 1e-9)


# ---- everything fails ----------------------------------------------------------------------------
def test_fit_raises_only_when_every_candidate_fails_and_carries_the_ledger(separated):
    y, blocks = separated
    wide = np.random.default_rng(0).normal(size=(N, 60))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.CandidateFailureWarning)
        with pytest.raises(pearl.AllCandidatesFailedError, match="all 3 candidates failed") as info:
            pearl.fit(
                "y ~ block(s) + block(wide)",
                {"y": y},
                blocks={"s": blocks["s"], "wide": wide},
                family="binomial",
                seed=0,
                separation="drop",
            )
    ledger = info.value.failures
    assert isinstance(ledger, pd.DataFrame) and ledger.excluded.all()
    assert set(ledger["candidate"]) == {"s", "wide", "s+wide"}
    assert set(ledger.loc[ledger.candidate == "s", "kind"]) == {"separation"}
    assert set(ledger.loc[ledger.candidate != "s", "kind"]) == {"infeasible"}


# ---- duplicate and nested-collinear candidates ---------------------------------------------------
@pytest.fixture(scope="module")
def same_span():
    """Block c spans the same columns as block a, so a, c, a+c (and a+b, c+b, a+c+b) predict alike.
    """
    rng = np.random.default_rng(11)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    y = a[:, 0] + b[:, 1] + rng.normal(size=N)
    blocks = {"a": a, "c": a @ np.array([[2.0, 1.0], [0.5, -1.0]]), "b": b}
    return y, blocks


def test_same_span_candidates_do_not_break_the_weight_solver(same_span):
    y, blocks = same_span
    res = pearl.fit("y ~ block(a) + block(c) + block(b)", {"y": y}, blocks=blocks, seed=0)
    w = res.weights.to_numpy()
    assert np.isfinite(w).all() and (w >= 0).all() and not np.signbit(w).any()
    assert abs(w.sum() - 1.0) <= 1e-12
    # Only three distinct predictions exist (a, b, a+b): the optimum over those three is the
    # optimum.
    P = np.column_stack(
        [_ols_out_of_fold(y, _design(blocks, label), res.folds) for label in ("a", "b", "a+b")]
    )
    _, best = simplex_minimum(lambda v: np.mean((y - P @ v) ** 2), 3)
    assert res.weight_objective == pytest.approx(best, rel=1e-8)
    totals = (
        res.weights[["a", "c", "a+c"]].sum(),
        res.weights["b"],
        res.weights[["a+b", "c+b", "a+c+b"]].sum(),
    )
    v, _ = simplex_minimum(lambda v: np.mean((y - P @ v) ** 2), 3)
    np.testing.assert_allclose(totals, v, atol=1e-5)
    # Whichever way the singular Gram matrix was handled is on record.
    merged = (res.failures.kind == "duplicate").any()
    assert merged or res.diagnostics["solver_ridge"] > 0


def test_same_span_candidates_are_merged_recorded_and_share_their_weight_equally(same_span):
    y, blocks = same_span
    res = pearl.fit("y ~ block(a) + block(c) + block(b)", {"y": y}, blocks=blocks, seed=0)
    duplicates = res.failures[
        (res.failures.stage == "weights") & (res.failures.kind == "duplicate")
    ]
    assert len(duplicates) == 2 and not duplicates.excluded.any()
    for group in (["a", "c", "a+c"], ["a+b", "c+b", "a+c+b"]):
        assert len(set(res.weights[group])) == 1


def test_a_wildly_overfitted_poisson_candidate_does_not_crash_the_weight_solver():
    rng = np.random.default_rng(0)
    n = 16  # the fusion candidate has 12 coefficients for 15 training rows: LOO means up to ~1e68
    blocks = {
        "a": rng.normal(size=(n, 3)),
        "b": rng.normal(size=(n, 4)),
        "c": rng.normal(size=(n, 4)),
    }
    y = rng.poisson(np.exp(0.5 * blocks["a"][:, 0])).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit(
            "y ~ block(a) + block(b) + block(c)",
            {"y": y},
            blocks=blocks,
            family="poisson",
            cv="loo",
        )
    w = res.weights.to_numpy()
    assert np.isfinite(w).all() and (w >= 0).all() and abs(w.sum() - 1.0) <= 1e-12
    P = res.cv_predictions.to_numpy()
    own = np.mean(
        2 * (xlogy(y[:, None], y[:, None]) - xlogy(y[:, None], P) - (y[:, None] - P)), axis=0
    )
    assert res.weight_objective <= np.nanmin(own) * (1 + 1e-9)
    # The Newton model once overflowed on the 1e257 candidate and stalled at deviance 1.635.
    # SLSQP on the moderate candidates is the reference: the wild one can only add ~nothing.
    moderate = np.flatnonzero(np.isfinite(own) & (P.max(axis=0) < 1e10))
    assert moderate.size == P.shape[1] - 1
    Q = P[:, moderate]

    def deviance(v):
        mu = np.maximum(Q @ v, 1e-300)
        return np.mean(2 * (xlogy(y, y) - xlogy(y, mu) - (y - mu)))

    _, best = simplex_minimum(deviance, moderate.size)
    assert res.weight_objective == pytest.approx(best, rel=1e-7)
    assert res.weight_objective <= best * (1 + 1e-9)


def test_separated_multinomial_candidates_are_recorded_per_fold_and_excluded():
    """Three classes with one block that separates them: every fold is recorded, the others survive.
    """
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1, 2], N // 3)
    a = rng.normal(size=(len(y), 2)) + 0.8 * y[:, None]
    s = np.column_stack([3.0 * y + rng.uniform(0.2, 0.8, size=len(y)), rng.normal(size=len(y))])
    res, warned = _fit_recording_warnings(
        "y ~ block(a) + block(s)",
        {"y": y},
        blocks={"a": a, "s": s},
        family="multinomial",
        seed=1,
        separation="drop",
    )
    _assert_failed_and_excluded(res, ["s", "a+s"], "separation", warned)
    ledger = res.failures[res.failures.kind == "separation"]
    assert sorted(ledger.loc[ledger.candidate == "s", "fold"]) == list(range(res.n_folds))
    assert res.weights["a"] == 1.0
    # the fold fits of the surviving candidate are per-fold MNLogit fits
    import statsmodels.api as sm

    X = np.column_stack([np.ones(len(y)), a])
    for k in range(res.n_folds):
        train = res.folds != k
        fitted = sm.MNLogit(y[train], X[train]).fit(disp=0)
        np.testing.assert_allclose(
            res.cv_predictions["a"].to_numpy()[~train], fitted.predict(X[~train]), atol=1e-6
        )
