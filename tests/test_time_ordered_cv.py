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


def _sklearn_outer(n_units, outer, gap=0):
    """scikit-learn's TimeSeriesSplit(outer, gap=gap) on n_units: the outer rule expected."""
    return list(model_selection.TimeSeriesSplit(outer, gap=gap).split(np.zeros((n_units, 1))))


@pytest.mark.parametrize("splitter", [model_selection.TimeSeriesSplit(3, gap=4),
                                      model_selection.TimeSeriesSplit(3, gap=4,
                                                                      max_train_size=40)],
                         ids=["gap", "gap+max_train_size"])
def test_honest_outer_splits_keep_the_splitters_gap(series, splitter):
    frame, blocks = series
    res = pearl.fit(F, frame, blocks=blocks, cv=splitter, seed=0, honest=3)
    nested = nested_cross_validation(res.stages, outer=3)
    # The outer rule is TimeSeriesSplit's with the fit's gap (rows within 4 before an outer
    # test block are not trained on); max_train_size is not applied to the outer training sets
    # (the procedure refits on all its rows), only inside them.
    expected = _sklearn_outer(N, 3, gap=4)
    assert nested.n_outer == len(expected)
    x_a = _design(frame, blocks, ["a"])
    column = list(res.candidate_labels).index("a")
    y = frame["y"].to_numpy()
    for k, (train, test) in enumerate(expected):
        np.testing.assert_array_equal(np.flatnonzero(nested.outer_folds == k), test)
        np.testing.assert_array_equal(nested.training_rows(k), train)
        # candidate "a" held out by OLS on exactly those training rows: well-conditioned least
        # squares on >= 35 rows and 4 columns, rounding-level agreement
        fitted = sm.OLS(y[train], x_a[train]).fit()
        np.testing.assert_allclose(nested.outside.predictions[test, column],
                                   fitted.predict(x_a[test]),
                                   rtol=0, atol=1e-9)
    assert np.isfinite(res.honest.loc["PEARL", "risk"])


DATES, PER_DATE = 25, 7


@pytest.fixture(scope="module")
def dated():
    """25 dates of 7 rows each, in time order; TimeSeriesSplit(3) cuts every 43 rows."""
    rng = np.random.default_rng(11)
    n = DATES * PER_DATE
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    frame = pd.DataFrame({"y": a[:, 0] + rng.normal(size=n),
                          "date": np.repeat(np.arange(DATES), PER_DATE)})
    return frame, {"a": a, "b": b}


# scikit-learn's TimeSeriesSplit warns that it ignores groups: its own splits cut between rows
IGNORED_GROUPS = "ignore:The groups parameter is ignored:UserWarning"


@pytest.mark.filterwarnings(IGNORED_GROUPS)
def test_honest_outer_splits_keep_groups_whole(dated):
    frame, blocks = dated
    res = pearl.fit("y ~ block(a) + block(b)", frame, blocks=blocks,
                    cv=model_selection.TimeSeriesSplit(3), groups="date", seed=0, honest=3)
    nested = nested_cross_validation(res.stages, outer=3)
    dates = frame["date"].to_numpy()
    # expected: TimeSeriesSplit's rule on the 25 dates, each date's rows taken whole
    expected = _sklearn_outer(DATES, 3)
    assert nested.n_outer == len(expected)
    for k, (train_dates, test_dates) in enumerate(expected):
        np.testing.assert_array_equal(np.flatnonzero(nested.outer_folds == k),
                                      np.flatnonzero(np.isin(dates, test_dates)))
        np.testing.assert_array_equal(nested.training_rows(k),
                                      np.flatnonzero(np.isin(dates, train_dates)))
    assert np.isfinite(res.honest.loc["PEARL", "risk"])


@pytest.mark.filterwarnings(IGNORED_GROUPS)
def test_honest_refuses_groups_whose_rows_are_not_consecutive(dated):
    frame, blocks = dated
    interleaved = frame.assign(date=np.tile(np.arange(DATES), PER_DATE))
    res = pearl.fit("y ~ block(a) + block(b)", interleaved, blocks=blocks,
                    cv=model_selection.TimeSeriesSplit(3), groups="date", seed=0, honest=3)
    assert res.honest_failure is not None
    assert "group 0 has rows 0, 25, 50" in res.honest_failure
    assert "consecutive" in res.honest_failure and "sort the rows by time" in res.honest_failure


def test_an_outer_fold_failure_says_where_and_advises_for_time_order():
    rng = np.random.default_rng(0)
    n = 90
    frame = pd.DataFrame({"y": rng.normal(size=n), "x": rng.normal(size=n)})
    blocks = {"a": rng.normal(size=(n, 2)), "b": rng.normal(size=(n, 3))}
    res = pearl.fit("y ~ x + block(a) + block(b)", frame, blocks=blocks,
                    cv=model_selection.TimeSeriesSplit(3, gap=5), seed=0, honest=3)
    train, test = _sklearn_outer(n, 3, gap=5)[0]  # outer fold 0: 19 rows, then a gap of 5
    failure = res.honest_failure
    assert failure is not None
    assert (f"in outer fold 0 of 3, re-running the procedure on its {len(train)} training rows "
            f"0..{train[-1]} (the rows before its held-out rows {test[0]}..{test[-1]}, less the "
            "splitter's gap of 5)") in failure
    assert "all 3 candidates failed" in failure  # the inner failure, kept
    assert ("use fewer outer folds (honest=2), a smaller gap, a splitter with fewer splits, "
            "or honest=False") in failure
