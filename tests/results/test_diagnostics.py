"""Consistency diagnostics, re-weighting and honest risk against independent computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import quadprog
import statsmodels.api as sm
from scipy.optimize import linprog
from scipy.stats import entropy

import pearlstats as pearl
from pearlstats.results.diagnostics import effective_candidates, weight_entropy

NAMES = ["pca", "kpca_rbf", "kpca_poly"]
FORMULA = "y ~ block(pca) + block(kpca_rbf) + block(kpca_poly)"


@pytest.fixture(scope="module")
def small(paper_data):
    blocks = {name: paper_data["blocks"][name] for name in NAMES}
    return pearl.fit(FORMULA, paper_data["frame"], blocks=blocks, seed=7)


@pytest.fixture(scope="module")
def y(paper_data):
    return paper_data["frame"]["y"].to_numpy()


def _simplex_qp(P, y):
    J = P.shape[1]
    constraints = np.column_stack([np.ones(J), np.eye(J)])
    w = quadprog.solve_qp(
        2 * P.T @ P / len(y), 2 * P.T @ y / len(y), constraints, np.r_[1.0, np.zeros(J)], meq=1
    )[0]
    return np.clip(w, 0, None)


def _design(paper_data, label, rows=slice(None), frame_key="frame", blocks_key="blocks"):
    frame = paper_data[frame_key].iloc[rows]
    parts = [np.ones((len(frame), 1))] + [
        paper_data[blocks_key][name][rows] for name in label.split("+")
    ]
    return np.hstack(parts)


def test_block_importance_and_membership(small):
    for name in NAMES:
        containing = [label for label in small.candidate_labels if name in label.split("+")]
        assert small.block_importance[name] == pytest.approx(
            small.weights[containing].sum(), abs=1e-15
        )
        assert small.block_membership[name].sum() == len(containing) == 4
    assert list(small.block_importance.index) == NAMES


def test_concentration_diagnostics(small):
    w = small.weights.to_numpy()
    d = small.diagnostics
    assert d["effective_candidates"] == pytest.approx(1 / np.sum(w**2))
    assert d["weight_entropy"] == pytest.approx(entropy(w))
    assert d["max_weight"] == w.max() and d["n_nonzero"] == np.count_nonzero(w)
    assert effective_candidates(np.full(4, 0.25)) == pytest.approx(4.0)
    assert weight_entropy(np.full(4, 0.25)) == pytest.approx(np.log(4))
    assert weight_entropy(np.array([1.0, 0.0])) == 0.0


def test_fold_stability_equals_quadprog_on_each_fold_complement(small, y):
    P = small.cv_predictions.to_numpy()
    expected = np.column_stack(
        [_simplex_qp(P[small.folds != k], y[small.folds != k]) for k in range(small.n_folds)]
    )
    np.testing.assert_allclose(small.weight_stability.to_numpy(), expected, atol=1e-8)
    table = small.diagnostics["stability"]
    np.testing.assert_allclose(table["mean"], expected.mean(axis=1), atol=1e-8)
    np.testing.assert_allclose(table["spread"], expected.std(axis=1, ddof=1), atol=1e-8)


def test_bootstrap_stability_uses_the_documented_rows_and_seed(small, y):
    boot = small.resample_weights("bootstrap", n_resamples=4, seed=3)
    rows = np.random.default_rng(3).integers(0, len(y), size=(4, len(y)))
    P = small.cv_predictions.to_numpy()
    expected = np.column_stack([_simplex_qp(P[r], y[r]) for r in rows])
    np.testing.assert_allclose(boot.to_numpy(), expected, atol=1e-8)
    assert list(boot.columns) == [f"boot {b}" for b in range(4)]
    default_seed = small.resample_weights("bootstrap", n_resamples=4)
    pd.testing.assert_frame_equal(
        default_seed, small.resample_weights("bootstrap", n_resamples=4, seed=small.seed)
    )
    with pytest.raises(pearl.OptionError, match="method='jackknife'"):
        small.resample_weights("jackknife")


def test_tau_hat_accepts_labels_and_block_tuples_and_names_unknown_ones(small):
    expected = small.weights["pca+kpca_rbf"] + small.weights["kpca_poly"]
    assert small.tau_hat(["pca+kpca_rbf", ("kpca_poly",)]) == pytest.approx(expected)
    assert small.tau_hat([("kpca_rbf", "pca"), "kpca_poly"]) == pytest.approx(expected)
    assert small.tau_hat("pca+kpca_rbf+kpca_poly") == pytest.approx(small.weights.iloc[-1])
    with pytest.raises(pearl.CandidateError, match="kpca_cosine"):
        small.tau_hat(["kpca_cosine"])


def test_tau_hat_tends_to_one_when_a_correct_candidate_exists():
    rng = np.random.default_rng(1)
    n = 2000
    a, b, noise = rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    y = a @ [1.0, -1.0] + b @ [0.5, 0.5] + rng.normal(size=n)
    res = pearl.fit(
        "y ~ block(a) + block(b) + block(c)", {"y": y, "a": a, "b": b, "c": noise}, seed=0
    )
    assert res.tau_hat(["a+b", "a+b+c"]) > 0.95


def test_reweight_solves_the_absolute_loss_lp(small, y):
    absolute = small.reweight("absolute")
    P = small.cv_predictions.to_numpy()
    n, J = P.shape
    # min mean t  s.t.  t >= y - Pw, t >= Pw - y, w on the simplex
    c = np.r_[np.zeros(J), np.full(n, 1 / n)]
    A = np.block([[-P, -np.eye(n)], [P, -np.eye(n)]])
    lp = linprog(
        c,
        A_ub=A,
        b_ub=np.r_[-y, y],
        A_eq=np.r_[np.ones(J), np.zeros(n)][None],
        b_eq=[1],
        bounds=(0, None),
    )
    w = absolute.weights.to_numpy()
    assert np.mean(np.abs(y - P @ w)) == pytest.approx(lp.fun, rel=1e-7)
    assert absolute.loss == "absolute" and small.loss == "squared"
    assert absolute.cv_risk["pca"] == pytest.approx(np.mean(np.abs(y - P[:, 0])))
    np.testing.assert_array_equal(absolute.cv_predictions, small.cv_predictions)
    sensitivity = small.loss_sensitivity()
    assert list(sensitivity.columns) == ["squared", "absolute"]
    np.testing.assert_allclose(sensitivity["absolute"], absolute.weights[sensitivity.index])
    with pytest.raises(pearl.OptionError):
        small.reweight("no_such_loss")


def test_reweight_keeps_the_fits_shrinkage_and_says_when_draws_are_lost(paper_data, y):
    # A plain simplex re-solve dropped weight_shrinkage, so reweight(res.loss) was not res.weights
    # and loss_sensitivity() set the fit's shrunk weights beside unshrunk ones.
    blocks = {name: paper_data["blocks"][name] for name in NAMES}
    shrunk = pearl.fit(FORMULA, paper_data["frame"], blocks=blocks, seed=7, honest=False,
                       weight_shrinkage=0.5)
    np.testing.assert_allclose(shrunk.reweight("squared").weights, shrunk.weights, atol=1e-12)
    P = shrunk.cv_predictions.to_numpy()
    n, J = P.shape
    c = np.r_[np.zeros(J), np.full(n, 1 / n)]
    lp = linprog(c, A_ub=np.block([[-P, -np.eye(n)], [P, -np.eye(n)]]), b_ub=np.r_[-y, y],
                 A_eq=np.r_[np.ones(J), np.zeros(n)][None], b_eq=[1], bounds=(0, None))
    # halfway from an LP optimum to equal weights, as the fit's own stage shrinks
    unshrunk = (shrunk.reweight("absolute").weights.to_numpy() - 0.5 / J) / 0.5
    assert unshrunk.min() > -1e-9 and unshrunk.sum() == pytest.approx(1.0)
    assert np.mean(np.abs(y - P @ unshrunk)) == pytest.approx(lp.fun, rel=1e-7)
    repeated = pearl.fit(FORMULA, paper_data["frame"], blocks=blocks, seed=7, honest=False,
                         cv_repeats=2)
    with pytest.warns(pearl.PearlWarning, match="averaged 2 fold draws.*first draw"):
        repeated.reweight("squared")


def test_honest_risk_equals_pearl_refitted_inside_each_outer_fold(small, paper_data, y):
    honest = small.honest_risk(outer=4, seed=5)
    frame = paper_data["frame"]
    blocks = {name: paper_data["blocks"][name] for name in NAMES}
    pearl_pred = np.empty(len(y))
    for k in range(4):
        train, test = honest.outer_folds != k, honest.outer_folds == k
        inner = pearl.fit(FORMULA, frame[train], blocks={n: b[train] for n, b in blocks.items()},
                          cv=honest.inner_folds[k], seed=0)
        np.testing.assert_allclose(
            honest.fold_weights.loc[k].to_numpy(), inner.weights.to_numpy(), atol=1e-8
        )
        pearl_pred[test] = inner.predict(
            frame[test], blocks={n: b[test] for n, b in blocks.items()}
        ).to_numpy()
        for label in small.candidate_labels:
            X = _design(paper_data, label)
            ols = sm.OLS(y[train], X[train]).fit().predict(X[test])
            assert honest.row_losses[label].to_numpy()[test] == pytest.approx(
                (y[test] - ols) ** 2, abs=1e-8
            )
    losses = (y - pearl_pred) ** 2
    assert honest.risk.loc["PEARL", "risk"] == pytest.approx(losses.mean(), rel=1e-9)
    assert honest.risk.loc["PEARL", "se"] == pytest.approx(
        losses.std(ddof=1) / np.sqrt(len(y)), rel=1e-9
    )
    assert np.bincount(honest.outer_folds).min() >= len(y) // 4
    assert small.last_honest_risk is honest
    with pytest.raises(pearl.OptionError, match="seed='x'"):
        small.honest_risk(seed="x")
    with pytest.raises(pearl.FoldError, match="cv=1"):
        small.honest_risk(outer=1)


def test_honest_risk_is_reproducible_and_stratified_for_classes(paper_data):
    median = paper_data["frame"]["y"].median()
    frame = paper_data["frame"].assign(
        label=np.where(paper_data["frame"]["y"] > median, "hi", "lo")
    )
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:2]}
    res = pearl.fit(
        "label ~ block(pca) + block(kpca_rbf)", frame, blocks=blocks, family="binomial", seed=1
    )
    first, second = res.honest_risk(outer=3), res.honest_risk(outer=3)
    pd.testing.assert_frame_equal(first.row_losses, second.row_losses)
    lo = (frame["label"] == "lo").to_numpy()
    for k in range(3):
        assert abs(lo[first.outer_folds == k].sum() - lo.sum() / 3) <= 1
    y = lo.astype(float)  # classes are sorted: "hi", "lo"; the model predicts P("lo")
    for label in res.candidate_labels:
        X = _design(paper_data, label)
        for k in range(3):
            train, test = first.outer_folds != k, first.outer_folds == k
            p = sm.Logit(y[train], X[train]).fit(disp=0, tol=1e-12, maxiter=200).predict(X[test])
            expected = -np.log(np.where(y[test] == 1, p, 1 - p))
            np.testing.assert_allclose(
                first.row_losses[label].to_numpy()[test], expected, atol=1e-6
            )


@pytest.mark.parametrize("splitter", ["predefined", "shuffle"])
def test_a_single_test_split_is_resampled_by_bootstrap_of_its_tested_rows(splitter):
    model_selection = pytest.importorskip("sklearn.model_selection")
    rng = np.random.default_rng(4)
    n = 60
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    y = a[:, 0] + 0.5 * b[:, 1] + rng.normal(size=n)
    cv = (model_selection.PredefinedSplit(np.r_[np.full(40, -1), np.zeros(20, int)])
          if splitter == "predefined" else model_selection.ShuffleSplit(1, test_size=0.25))
    res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, cv=cv, honest=False,
                    seed=2)
    stability = res.weight_stability  # a holdout: no fold complement has tested rows
    rows = np.random.default_rng(2).integers(0, n, size=(50, n))
    P = res.cv_predictions.to_numpy()
    expected = []
    for drawn in rows:
        tested = drawn[res.folds[drawn] >= 0]  # the never-tested rows have no prediction
        expected.append(_simplex_qp(P[tested], y[tested]))
    np.testing.assert_allclose(stability.to_numpy(), np.column_stack(expected), atol=1e-8)
    assert res.diagnostics["stability_resamples"] == (
        "50 bootstrap resamples (seed 2; a single test split has no fold complement with "
        "tested rows)")
    text = " ".join(str(res.summary()).split())
    assert "a single test split has no fold complement" in text
    with pytest.raises(pearl.OptionError, match="single test split .* use method='bootstrap'"):
        res.resample_weights("folds")


def test_cv_shrinkage_needs_two_test_splits_and_resolves_of_one_take_the_fits_amount():
    model_selection = pytest.importorskip("sklearn.model_selection")
    rng = np.random.default_rng(6)
    n = 60
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    y = a[:, 0] + 0.5 * b[:, 1] + rng.normal(size=n)
    data = {"y": y, "a": a, "b": b}
    holdout = model_selection.PredefinedSplit(np.r_[np.full(40, -1), np.zeros(20, int)])
    with pytest.raises(pearl.OptionError, match=r"weight_shrinkage='cv' .* needs at least 2, "
                                                r"and cv=PredefinedSplit\(\.\.\.\) has a single"):
        pearl.fit("y ~ block(a) + block(b)", data, cv=holdout, weight_shrinkage="cv",
                  honest=False, seed=0)
    res = pearl.fit("y ~ block(a) + block(b)", data, cv=model_selection.TimeSeriesSplit(2),
                    weight_shrinkage="cv", honest=False, seed=0)
    amount = res.stages.solution.shrinkage  # the ledger's text rounds it to 6 digits
    action = res.failures.query("kind == 'shrinkage'")["action"].iloc[0]
    assert float(action.split()[2]) == pytest.approx(amount, rel=1e-5)
    # each fold complement holds the other split's tested rows only: the simplex weights
    # there, shrunk by the fit's amount toward equal weights
    P = res.cv_predictions.to_numpy()
    expected = [(1 - amount) * _simplex_qp(P[res.folds == other], y[res.folds == other])
                + amount / 3 for other in (1, 0)]
    np.testing.assert_allclose(res.weight_stability.to_numpy(), np.column_stack(expected),
                               atol=1e-8)
