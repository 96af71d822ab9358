"""Splitters that test some rows only (``TimeSeriesSplit``, ``PredefinedSplit`` with -1):
out-of-fold predictions, weights, risks and the honest outer loop of the tested rows."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import quadprog
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.exceptions import OptionError, PearlWarning
from pearlstats.nested import nested_cross_validation

model_selection = pytest.importorskip("sklearn.model_selection")

F = "y ~ block(a) + block(b) + x"
N = 150


@pytest.fixture(scope="module")
def series():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 3))
    x = np.linspace(-1, 1, N)
    y = a[:, 0] - 0.5 * b[:, 2] + x + rng.normal(size=N)
    return pd.DataFrame({"y": y, "x": x, "c": (y > 0).astype(int)}), {"a": a, "b": b}


def _design(frame, blocks, names):
    return np.column_stack([np.ones(N), frame["x"]] + [blocks[name] for name in names])


@pytest.fixture(scope="module")
def gaussian_fit(series):
    frame, blocks = series
    return pearl.fit(F, frame, blocks=blocks, cv=model_selection.TimeSeriesSplit(4), seed=0,
                     honest=4)


def _direct_oof(frame, blocks, labels):
    """Each split's test rows predicted by OLS fitted on its training rows; NaN elsewhere."""
    oof = np.full((N, len(labels)), np.nan)
    y = frame["y"].to_numpy()
    for train, test in model_selection.TimeSeriesSplit(4).split(frame):
        for j, label in enumerate(labels):
            X = _design(frame, blocks, label.split("+"))
            oof[test, j] = sm.OLS(y[train], X[train]).fit().predict(X[test])
    return oof


def test_tested_rows_predictions_equal_per_split_statsmodels_fits(gaussian_fit, series):
    frame, blocks = series
    labels = list(gaussian_fit.candidate_labels)
    oof = _direct_oof(frame, blocks, labels)
    tested = np.arange(N - 4 * (N // 5), N)
    # well-conditioned least squares on >= 30 rows, 4-8 columns: rounding-level agreement
    np.testing.assert_allclose(gaussian_fit.cv_predictions.to_numpy()[tested], oof[tested],
                               rtol=0, atol=1e-9)
    assert np.isnan(gaussian_fit.cv_predictions.to_numpy()[: tested[0]]).all()


def test_logistic_tested_rows_equal_statsmodels_logit_per_split(series):
    frame, blocks = series
    res = pearl.fit("c ~ block(a) + block(b) + x", frame, blocks=blocks, family="binomial",
                    cv=model_selection.TimeSeriesSplit(3), seed=0, honest=False)
    tested = np.arange(N - 3 * (N // 4), N)
    for train, test in model_selection.TimeSeriesSplit(3).split(frame):
        X = _design(frame, blocks, ["a"])
        fitted = sm.Logit(frame["c"].to_numpy()[train], X[train]).fit(disp=0, tol=1e-12)
        # Newton to convergence on both sides: probabilities agree to ~1e-8 (optimiser tolerance)
        np.testing.assert_allclose(res.cv_predictions["a"].to_numpy()[test],
                                   fitted.predict(X[test]), rtol=0, atol=1e-6)
    assert np.isnan(res.cv_predictions["a"].to_numpy()[: tested[0]]).all()


def test_weights_and_risks_are_those_of_the_tested_rows(gaussian_fit, series):
    frame, _ = series
    P = gaussian_fit.cv_predictions.to_numpy()
    tested = ~np.isnan(P[:, 0])
    y = frame["y"].to_numpy()[tested]
    Pt = P[tested]
    # min |y - P w|^2 over the simplex, by quadprog on the tested rows' Gram matrix
    J = Pt.shape[1]
    G = Pt.T @ Pt / tested.sum()
    a = Pt.T @ y / tested.sum()
    C = np.column_stack([np.ones(J), np.eye(J)])
    b = np.concatenate([[1.0], np.zeros(J)])
    w = quadprog.solve_qp(G, a, C, b, meq=1)[0]
    # a strictly convex QP on 3 distinct candidates: both solvers reach ~1e-10; 1e-6 allows
    # the condition number of G (~1e2) times their KKT tolerances
    np.testing.assert_allclose(gaussian_fit.weights.to_numpy(), np.clip(w, 0, None), atol=1e-6)
    np.testing.assert_allclose(gaussian_fit.cv_risk.to_numpy(),
                               ((Pt - y[:, None]) ** 2).mean(axis=0), rtol=1e-12)
    # the Null row: each split's training mean, scored on its test rows only
    null = np.concatenate([
        (frame["y"].to_numpy()[test] - frame["y"].to_numpy()[train].mean()) ** 2
        for train, test in model_selection.TimeSeriesSplit(4).split(frame)])
    assert gaussian_fit.baselines.loc["Null", "cv_risk"] == pytest.approx(null.mean(), rel=1e-12)


def test_summary_says_which_rows_were_tested(gaussian_fit):
    text = gaussian_fit.summary().as_text().replace("\n", " ")
    tested = 4 * (N // 5)
    assert f"TimeSeriesSplit tested {tested} of {N} rows ({N - tested} never tested)" in text
    assert "outer folds keep time order" in text


def test_honest_outer_and_inner_splits_keep_time_order(gaussian_fit):
    nested = nested_cross_validation(gaussian_fit.stages, outer=4)
    for k in range(nested.n_outer):
        test = np.flatnonzero(nested.outer_folds == k)
        train = nested.training_rows(k)
        assert train.max() < test.min()  # no outer test row earlier than a training row
        inner = nested.inner_folds[k]  # the splitter re-run on the training rows, in order
        for j in range(int(inner.max()) + 1):
            assert np.flatnonzero(inner == j).min() > np.flatnonzero(inner < 0).max()
    assert np.isfinite(gaussian_fit.honest.loc["PEARL", "risk"])


def test_intervals_are_refused_in_time_order(gaussian_fit, series):
    frame, blocks = series
    with pytest.raises(OptionError, match="exchangeable rows"):
        gaussian_fit.predict(frame.iloc[:3], blocks={k: v[:3] for k, v in blocks.items()},
                             interval="prediction")


def test_predefined_split_with_untested_rows(series):
    frame, blocks = series
    test_fold = np.where(np.arange(N) < 30, -1, np.arange(N) % 3)
    res = pearl.fit(F, frame, blocks=blocks, cv=model_selection.PredefinedSplit(test_fold),
                    seed=0, honest=3)
    assert np.isnan(res.cv_predictions.to_numpy()[:30]).all()
    assert np.isfinite(res.cv_predictions.to_numpy()[30:]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PearlWarning)
        assert res.honest is None
    assert "not time-ordered" in res.honest_failure
    # CV+ holds every row out once: refused by what it needs, not by the honest risk's rule
    new = frame.iloc[:3], {k: v[:3] for k, v in blocks.items()}
    with pytest.raises(OptionError, match=r"PredefinedSplit\(\.\.\.\): it tests some rows"):
        res.get_prediction(new[0], blocks=new[1]).summary_frame()
    frame_means = res.get_prediction(new[0], blocks=new[1]).conf_int()
    assert np.isfinite(np.asarray(frame_means)).all()


def test_resampling_rows_is_refused_in_time_order(gaussian_fit):
    with pytest.raises(OptionError, match="TimeSeriesSplit, which tests some rows only"):
        gaussian_fit.weight_uncertainty(n_resamples=3)


def test_weighted_risks_are_weighted_means_over_the_tested_rows(series):
    frame, blocks = series
    w = np.random.default_rng(8).integers(1, 4, N).astype(float)
    res = pearl.fit(F, frame, blocks=blocks, cv=model_selection.TimeSeriesSplit(3), seed=0,
                    weights=w, weight_type="frequency", honest=False)
    P = res.cv_predictions.to_numpy()
    tested = ~np.isnan(P[:, 0])
    y = frame["y"].to_numpy()
    for train, test in model_selection.TimeSeriesSplit(3).split(frame):
        X = _design(frame, blocks, ["a"])
        fitted = sm.WLS(y[train], X[train], weights=w[train]).fit()
        # weighted least squares on >= 37 rows: rounding-level agreement
        np.testing.assert_allclose(P[test, 0], fitted.predict(X[test]), rtol=0, atol=1e-9)
    expected = np.average((P[tested] - y[tested, None]) ** 2, axis=0, weights=w[tested])
    np.testing.assert_allclose(res.cv_risk.to_numpy(), expected, rtol=1e-12)
