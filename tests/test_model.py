"""End-to-end ``pearl.fit`` against independent computations (statsmodels, scipy, quadprog)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.optimize import minimize

import pearlstats as pearl
from conftest import PAPER_FORMULA, simplex_minimum

NAMES = ["pca", "kpca_rbf", "kpca_poly", "kpca_sigmoid", "kpca_cosine"]


def _candidate_design(frame, blocks, label):
    parts = [np.ones((len(frame), 1))] + [blocks[name] for name in label.split("+")]
    return np.hstack(parts)


@pytest.fixture(scope="module")
def gaussian_fit(paper_data):
    return pearl.fit(PAPER_FORMULA, paper_data["frame"], blocks=paper_data["blocks"], seed=11)


def test_paper_setup_has_31_candidates_labelled_in_formula_order(gaussian_fit):
    assert len(gaussian_fit.weights) == 31
    assert gaussian_fit.candidate_labels[:5] == NAMES
    assert "pca+kpca_rbf+kpca_poly+kpca_sigmoid+kpca_cosine" in gaussian_fit.candidate_labels


def test_out_of_fold_predictions_equal_per_fold_statsmodels_ols(gaussian_fit, paper_data):
    frame, blocks, folds = paper_data["frame"], paper_data["blocks"], gaussian_fit.folds
    y = frame["y"].to_numpy()
    for label in gaussian_fit.candidate_labels:
        X = _candidate_design(frame, blocks, label)
        for k in range(gaussian_fit.n_folds):
            train = folds != k
            expected = sm.OLS(y[train], X[train]).fit().predict(X[~train])
            np.testing.assert_allclose(
                gaussian_fit.cv_predictions[label].to_numpy()[~train], expected, rtol=0, atol=1e-8
            )


def test_weights_reach_the_quadprog_optimum_and_beat_every_candidate(gaussian_fit, paper_data):
    P = gaussian_fit.cv_predictions.to_numpy()
    y = paper_data["frame"]["y"].to_numpy()
    J = P.shape[1]
    # Independent solve: SLSQP from the centre and from every vertex.
    objective = lambda w: np.mean((y - P @ w) ** 2)
    _, best = simplex_minimum(objective, J)
    ours = objective(gaussian_fit.weights.to_numpy())
    assert ours <= best * (1 + 1e-7)
    assert ours == pytest.approx(gaussian_fit.weight_objective, rel=1e-12)
    assert ours <= gaussian_fit.cv_risk.min() + 1e-12
    w = gaussian_fit.weights.to_numpy()
    assert (w >= 0).all() and abs(w.sum() - 1) < 1e-12 and not np.signbit(w).any()


def test_predict_is_the_weighted_sum_of_refitted_statsmodels_candidates(gaussian_fit, paper_data):
    test, test_blocks = paper_data["test"], paper_data["test_blocks"]
    expected = np.zeros(len(test))
    for label, weight in gaussian_fit.weights[gaussian_fit.weights > 0].items():
        refit = gaussian_fit.candidates[label]
        assert isinstance(refit, sm.regression.linear_model.RegressionResultsWrapper)
        direct = sm.OLS(
            paper_data["frame"]["y"].to_numpy(),
            _candidate_design(paper_data["frame"], paper_data["blocks"], label),
        ).fit()
        np.testing.assert_allclose(refit.params.to_numpy(), direct.params, rtol=1e-9, atol=1e-10)
        expected += weight * direct.predict(_candidate_design(test, test_blocks, label))
    np.testing.assert_allclose(
        gaussian_fit.predict(test, blocks=test_blocks).to_numpy(), expected, rtol=1e-9, atol=1e-10
    )


def test_baselines_follow_their_definitions(gaussian_fit, paper_data):
    y = paper_data["frame"]["y"].to_numpy()
    P = gaussian_fit.cv_predictions
    risk = lambda p: np.mean((y - p) ** 2)
    table = gaussian_fit.baselines
    assert table.loc["MS", "cv_risk"] == pytest.approx(gaussian_fit.cv_risk.min())
    assert table.loc["SA-FRL", "cv_risk"] == pytest.approx(risk(P[NAMES].mean(axis=1)))
    assert table.loc["SA-cand", "cv_risk"] == pytest.approx(risk(P.mean(axis=1)))
    assert table.loc["Fusion", "cv_risk"] == pytest.approx(risk(P["+".join(NAMES)]))
    assert table.loc["Best", "cv_risk"] == pytest.approx(min(risk(P[name]) for name in NAMES))
    assert table.loc["PEARL", "cv_risk"] == pytest.approx(
        risk(P.to_numpy() @ gaussian_fit.weights.to_numpy())
    )
    # the two references outside the pool (Covariates, Null) are not points of PEARL's simplex
    assert (table["risk_ratio"].drop(["Covariates", "Null"]) <= 1 + 1e-12).all()
    assert table.loc["MS", "risk_ratio"] == pytest.approx(
        table.loc["PEARL", "cv_risk"] / table.loc["MS", "cv_risk"]
    )


def test_same_seed_same_everything_and_other_seed_other_folds(paper_data):
    fit = lambda seed: pearl.fit(
        PAPER_FORMULA, paper_data["frame"], blocks=paper_data["blocks"], seed=seed
    )
    a, b, c = fit(5), fit(5), fit(6)
    np.testing.assert_array_equal(a.folds, b.folds)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.predict(paper_data["test"], blocks=paper_data["test_blocks"]),
                                  b.predict(paper_data["test"], blocks=paper_data["test_blocks"]))
    assert not np.array_equal(a.folds, c.folds)


def test_given_fold_labels_and_loo(paper_data):
    frame, blocks = (
        paper_data["frame"].iloc[:60],
        {k: v[:60] for k, v in paper_data["blocks"].items()},
    )
    labels = np.repeat(["u", "v", "w"], 20)
    res = pearl.fit("y ~ block(pca) + block(kpca_rbf)", frame, blocks=blocks, cv=labels)
    np.testing.assert_array_equal(res.folds, np.repeat([0, 1, 2], 20))
    loo = pearl.fit("y ~ block(pca) + block(kpca_rbf)", frame, blocks=blocks, cv="loo")
    y = frame["y"].to_numpy()
    X = _candidate_design(frame, blocks, "pca+kpca_rbf")
    for i in (0, 33):
        keep = np.arange(60) != i
        expected = sm.OLS(y[keep], X[keep]).fit().predict(X[i : i + 1])[0]
        assert loo.cv_predictions["pca+kpca_rbf"].iloc[i] == pytest.approx(expected, abs=1e-9)


def test_dict_data_with_embedded_blocks_and_covariates(paper_data):
    data = {
        "y": paper_data["frame"]["y"].to_numpy(),
        "x1": paper_data["frame"]["x1"].to_numpy(),
        **paper_data["blocks"],
    }
    res = pearl.fit("y ~ x1 + block(kpca_rbf) + block(pca)", data, seed=0)
    assert res.candidate_labels == ["kpca_rbf", "pca", "kpca_rbf+pca"]
    assert list(res.candidate_params("kpca_rbf+pca").index) == [
        "Intercept",
        "x1",
        "kpca_rbf[0]",
        "kpca_rbf[1]",
        "pca[0]",
        "pca[1]",
    ]


def test_pickle_round_trip_predicts_identically(gaussian_fit, paper_data):
    restored = pickle.loads(pickle.dumps(gaussian_fit))
    np.testing.assert_array_equal(
        restored.predict(paper_data["test"], blocks=paper_data["test_blocks"]),
        gaussian_fit.predict(paper_data["test"], blocks=paper_data["test_blocks"]),
    )


def _classes(paper_data, n_classes):
    y = paper_data["frame"]["y"].to_numpy()
    cuts = np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1])
    labels = (
        np.array(["low", "mid", "high"])[:n_classes] if n_classes == 3 else np.array(["no", "yes"])
    )
    return labels[np.searchsorted(cuts, y)]


def test_binomial_against_per_fold_logit_and_averaged_probabilities(paper_data):
    frame = paper_data["frame"].assign(label=_classes(paper_data, 2))
    res = pearl.fit(
        "label ~ block(pca) + block(kpca_rbf) + block(kpca_poly)",
        frame,
        blocks=paper_data["blocks"],
        family="binomial",
        seed=3,
    )
    y = (frame["label"] == "yes").to_numpy(float)
    assert res.classes == ["no", "yes"]
    for label in res.candidate_labels:
        X = _candidate_design(frame, paper_data["blocks"], label)
        for k in range(res.n_folds):
            train = res.folds != k
            fitted = sm.Logit(y[train], X[train]).fit(disp=0, tol=1e-12, maxiter=200)
            np.testing.assert_allclose(
                res.cv_predictions[label].to_numpy()[~train], fitted.predict(X[~train]), atol=1e-6
            )
    P = res.cv_predictions.to_numpy()
    ce = lambda w: -np.mean(np.log(np.where(y == 1, P @ w, 1 - P @ w)))
    assert ce(res.weights.to_numpy()) <= ce(np.eye(P.shape[1])[np.argmin(res.cv_risk)]) + 1e-12
    J = P.shape[1]
    r = minimize(
        ce,
        np.full(J, 1 / J),
        method="SLSQP",
        bounds=[(0, 1)] * J,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert ce(res.weights.to_numpy()) <= r.fun * (1 + 1e-7)
    expected = sum(
        w
        * res.candidates[label].predict(
            _candidate_design(paper_data["test"], paper_data["test_blocks"], label)
        )
        for label, w in res.weights[res.weights > 0].items()
    )
    np.testing.assert_allclose(
        res.predict(paper_data["test"], blocks=paper_data["test_blocks"]), expected, atol=1e-8
    )


def test_multinomial_against_per_fold_mnlogit(paper_data):
    frame = paper_data["frame"].assign(level=_classes(paper_data, 3))
    res = pearl.fit("level ~ block(pca) + block(kpca_poly)", frame, blocks=paper_data["blocks"],
                    family="multinomial", seed=4)
    assert res.classes == ["high", "low", "mid"]
    codes = pd.Categorical(frame["level"], categories=res.classes).codes
    for label in res.candidate_labels:
        X = _candidate_design(frame, paper_data["blocks"], label)
        for k in range(res.n_folds):
            train = res.folds != k
            fitted = sm.MNLogit(codes[train], X[train]).fit(disp=0, tol=1e-12, maxiter=200)
            np.testing.assert_allclose(
                res.cv_predictions[label].to_numpy()[~train], fitted.predict(X[~train]), atol=1e-6
            )
    assert res.baselines.loc["PEARL", "cv_risk"] <= res.cv_risk.min() + 1e-12
    proba = res.predict(paper_data["test"], blocks=paper_data["test_blocks"])
    assert list(proba.columns) == res.classes
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_poisson_against_statsmodels_glm(paper_data):
    rng = np.random.default_rng(0)
    frame = paper_data["frame"].assign(
        count=rng.poisson(np.exp(0.3 * paper_data["frame"]["y"].clip(-3, 3)))
    )
    res = pearl.fit(
        "count ~ block(pca) + block(kpca_rbf)",
        frame,
        blocks=paper_data["blocks"],
        family="poisson",
        seed=1,
    )
    X = _candidate_design(frame, paper_data["blocks"], "pca+kpca_rbf")
    direct = sm.GLM(frame["count"].to_numpy(float), X, family=sm.families.Poisson()).fit(tol=1e-12)
    np.testing.assert_allclose(
        res.candidates["pca+kpca_rbf"].params.to_numpy(), direct.params, rtol=1e-7, atol=1e-9
    )
    assert res.loss == "poisson_deviance"


def test_failed_candidate_is_recorded_given_zero_weight_and_reported(paper_data):
    frame = paper_data["frame"].iloc[:40]
    blocks = {
        "small": paper_data["blocks"]["pca"][:40],
        "wide": np.random.default_rng(0).normal(size=(40, 35)),
    }
    with pytest.warns(pearl.CandidateFailureWarning, match="'wide'"):
        res = pearl.fit("y ~ block(small) + block(wide)", frame, blocks=blocks, cv=5, seed=0)
    assert res.weights["wide"] == 0 and res.weights["small+wide"] == 0 and res.weights["small"] == 1
    assert set(res.failures.loc[res.failures.excluded, "candidate"]) == {"wide", "small+wide"}
    assert "excluded candidates" in str(res.summary())


def test_all_candidates_failing_raises_with_the_ledger():
    rng = np.random.default_rng(0)
    data = {"y": rng.normal(size=20), "a": rng.normal(size=(20, 30))}
    with pytest.raises(pearl.AllCandidatesFailedError, match="all 1 candidates failed") as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pearl.fit("y ~ block(a)", data, seed=0)
    assert len(info.value.failures) == 1


def test_summary_renders_as_text_latex_and_html(gaussian_fit):
    summary = gaussian_fit.summary()
    text = str(summary)
    for fragment in (
        "PEARL model averaging",
        "Strategies",
        "SA-FRL",
        "SA-cand",
        "Fusion",
        "Best",
        "MS",
    ):
        assert fragment in text
    assert "\\begin{tabular*}" in summary.as_latex()
    assert "<table" in gaussian_fit._repr_html_()


def test_predict_candidates_are_the_refitted_statsmodels_predictions(gaussian_fit, paper_data):
    table = gaussian_fit.predict_candidates(
        paper_data["test"], blocks=paper_data["test_blocks"], labels=["pca", "kpca_rbf+kpca_cosine"]
    )
    for label in table.columns:
        X = _candidate_design(paper_data["test"], paper_data["test_blocks"], label)
        direct = sm.OLS(
            paper_data["frame"]["y"].to_numpy(),
            _candidate_design(paper_data["frame"], paper_data["blocks"], label),
        ).fit()
        np.testing.assert_allclose(
            table[label].to_numpy(), direct.predict(X), rtol=1e-9, atol=1e-10
        )
