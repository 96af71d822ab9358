"""Any fit/predict estimator as the candidates' downstream model, checked against a loop by hand."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
from sklearn.linear_model import LinearRegression

import pearlstats as pearl
from pearlstats.exceptions import OptionError

# The same estimator (fixed random_state) fitted on the same float64 rows gives the same
# trees, so pearl's predictions and the loop's agree to rounding in the weighted sum.
SAME_ARITHMETIC = 1e-10


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return {"y": y[:200], "demo": X[:200, :4], "serum": X[:200, 4:7]}


def _forest():
    return RandomForestRegressor(n_estimators=10, max_depth=3, random_state=0)


def _design(data, names):
    """A candidate's design as pearl builds it: the intercept, then its blocks' columns."""
    return np.column_stack([np.ones(len(data["y"]))] + [data[name] for name in names])


def test_random_forest_candidates_equal_a_loop_by_hand(diabetes):
    res = pearl.fit("y ~ block(demo) + block(serum)", diabetes, seed=0, cv=4,
                    downstream=_forest(), progress=False)
    folds = np.asarray(res.folds)
    for label, names in {"demo": ["demo"], "serum": ["serum"],
                         "demo+serum": ["demo", "serum"]}.items():
        X = _design(diabetes, names)
        expected = np.empty(len(folds))
        for k in range(4):
            test = folds == k
            expected[test] = _forest().fit(X[~test], diabetes["y"][~test]).predict(X[test])
        np.testing.assert_allclose(res.cv_predictions[label], expected, rtol=SAME_ARITHMETIC)
    # the PEARL prediction: the weighted average of the forests refitted on all rows
    refits = {label: _forest().fit(_design(diabetes, label.split("+")), diabetes["y"])
              for label in res.weights.index}
    new = {"demo": diabetes["demo"][:5], "serum": diabetes["serum"][:5]}
    by_hand = sum(weight * refits[label].predict(_design({**new, "y": np.zeros(5)},
                                                         label.split("+")))
                  for label, weight in res.weights.items())
    np.testing.assert_allclose(res.predict(new), by_hand, rtol=SAME_ARITHMETIC)


def test_honest_risks_and_intervals_work_and_coefficients_say_they_do_not_apply(diabetes):
    res = pearl.fit("y ~ block(demo) + block(serum)", diabetes, seed=0, cv=4, honest=3,
                    downstream=_forest(), progress=False)
    honest = res.honest
    # a forest has no likelihood with a parameter count: no AICc or BIC strategy
    assert honest.loc[["AICc", "BIC"], "risk"].isna().all()
    assert res.baselines.loc["AICc", "candidate"] == "no likelihood"
    assert np.isfinite(honest["risk"].drop(["AICc", "BIC"])).all()
    assert honest.loc["PEARL", "certified"]
    # bmi and the serum measures carry signal: the procedure beats the intercept-only model
    assert honest.loc["PEARL", "risk"] < honest.loc["Null", "risk"]
    interval = res.predict({"demo": diabetes["demo"][:3], "serum": diabetes["serum"][:3]},
                           interval="prediction")
    assert (interval["lower"] < interval["mean"]).all()
    assert (interval["mean"] < interval["upper"]).all()
    with pytest.raises(OptionError, match="not a linear model"):
        res.candidate_params("demo")
    assert type(res.candidates["demo"].estimator).__name__ == "RandomForestRegressor"


class FailsWithoutTheLargestResponse:
    """A regression that raises when a training fold lacks the largest response, for one width."""

    def __init__(self, y_max: float, width: int):
        self.y_max, self.width = y_max, width

    def fit(self, X, y):
        if X.shape[1] == self.width and self.y_max not in y:
            raise RuntimeError("this fold lacks the largest response")
        self.model_ = LinearRegression().fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_a_spline_gam_as_the_candidates_model(diabetes):
    """A GAM (additive penalised cubic splines of each column: scikit-learn's SplineTransformer
    and a ridge) as the downstream model on real data; pygam 0.12.0 requires scipy < 1.17, so
    it is not in the test extra. Out-of-fold predictions equal the same pipeline fitted by hand
    on each fold's training rows."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import SplineTransformer

    def gam():
        return make_pipeline(SplineTransformer(n_knots=5, degree=3), Ridge(alpha=1e-3))

    res = pearl.fit("y ~ block(demo) + block(serum)", diabetes, seed=0, cv=4, honest=3,
                    downstream=gam(), progress=False)
    folds = np.asarray(res.folds)
    X = _design(diabetes, ["demo", "serum"])
    expected = np.empty(len(folds))
    for k in range(4):
        test = folds == k
        expected[test] = gam().fit(X[~test], diabetes["y"][~test]).predict(X[test])
    np.testing.assert_allclose(res.cv_predictions["demo+serum"], expected, rtol=SAME_ARITHMETIC)
    assert np.isfinite(res.honest.loc["PEARL", "risk"])


def test_a_learner_that_raises_on_one_fold_is_recorded_and_given_weight_zero(diabetes):
    # width 4 = the intercept and serum's 3 columns: only candidate 'serum' fails, in the fold
    # that tests the row with the largest response
    learner = FailsWithoutTheLargestResponse(diabetes["y"].max(), 4)
    with pytest.warns(pearl.CandidateFailureWarning, match="'serum' failed"):
        res = pearl.fit("y ~ block(demo) + block(serum)", diabetes, seed=0, cv=4,
                        downstream=learner, progress=False)
    failures = res.failures
    assert failures["candidate"].tolist() == ["serum"]
    row = failures.iloc[0]
    fold_of_max = int(np.asarray(res.folds)[np.argmax(diabetes["y"])])
    assert row["fold"] == fold_of_max and row["stage"] == "cv" and row["excluded"]
    assert "RuntimeError: this fold lacks the largest response" in row["reason"]
    assert res.weights["serum"] == 0
    # the others are least squares: equal to pearl's own OLS candidates on the same folds
    ols = pearl.fit("y ~ block(demo) + block(serum)", diabetes, seed=0, cv=4, progress=False)
    np.testing.assert_allclose(res.cv_predictions["demo"], ols.cv_predictions["demo"],
                               rtol=1e-8)  # lstsq vs fold moments: conditioning ~1e3


def test_classifiers_give_probabilities_and_a_regressor_is_refused_for_classes(diabetes):
    data = {**diabetes, "y": (diabetes["y"] > 140).astype(float)}
    booster = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0)
    res = pearl.fit("y ~ block(demo) + block(serum)", data, seed=0, cv=4, family="binomial",
                    downstream=booster, honest=False, progress=False)
    p = res.cv_predictions["demo"].to_numpy()
    assert ((p > 0) & (p < 1)).all()
    X = _design(data, ["demo"])
    folds = np.asarray(res.folds)
    test = folds == 0
    by_hand = booster.fit(X[~test], data["y"][~test].astype(int)).predict_proba(X[test])[:, 1]
    np.testing.assert_allclose(p[test], np.clip(by_hand, 1e-12, 1 - 1e-12), rtol=SAME_ARITHMETIC)
    with pytest.raises(OptionError, match="no predict_proba"):
        pearl.fit("y ~ block(demo)", data, family="binomial", downstream=_forest())
    with pytest.raises(OptionError, match="neither bind\\(family\\) nor fit and predict"):
        pearl.fit("y ~ block(demo)", diabetes, downstream=object())
