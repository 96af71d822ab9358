"""``evaluate`` against statsmodels refits scored with scikit-learn; ``compare_table`` against
numpy."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from sklearn.metrics import accuracy_score, log_loss, mean_absolute_error, mean_squared_error

import pearlstats as pearl
from pearlstats.results.evaluation import compare_table

NAMES = ["pca", "kpca_rbf", "kpca_poly"]
FORMULA = "y ~ block(pca) + block(kpca_rbf) + block(kpca_poly)"


def _design(frame, blocks, label):
    return np.hstack([np.ones((len(frame), 1))] + [blocks[name] for name in label.split("+")])


def _blocks(paper_data, key):
    return {name: paper_data[key][name] for name in NAMES}


def _strategy_predictions(res, predictions):
    """Each strategy's test prediction from its definition and the candidates' test predictions."""
    labels = res.candidate_labels
    return {
        "PEARL": sum(res.weights[label] * predictions[label] for label in labels),
        "Fusion": predictions["+".join(NAMES)],
        "SA-FRL": sum(predictions[name] for name in NAMES) / len(NAMES),
        "SA-cand": sum(predictions[label] for label in labels) / len(labels),
        "MS": predictions[res.cv_risk.idxmin()],
        "Best": predictions[res.cv_risk[list(NAMES)].idxmin()],
    }


def test_gaussian_evaluation_matches_ols_refits_scored_by_sklearn(paper_data):
    train_blocks, test_blocks = _blocks(paper_data, "blocks"), _blocks(paper_data, "test_blocks")
    frame, test = paper_data["frame"], paper_data["test"]
    res = pearl.fit(FORMULA, frame, blocks=train_blocks, seed=3)
    table = res.evaluate(test, blocks=test_blocks)
    y, y_test = frame["y"].to_numpy(), test["y"].to_numpy()
    fits = {label: sm.OLS(y, _design(frame, train_blocks, label)).fit()
            for label in res.candidate_labels}
    predictions = {label: fit.predict(_design(test, test_blocks, label))
                   for label, fit in fits.items()}
    expected = _strategy_predictions(res, predictions)
    # MuMIn's weights from statsmodels' llf; k counts the coefficients and the variance (R)
    llf = np.array([fit.llf for fit in fits.values()])
    k = np.array([len(fit.params) + 1 for fit in fits.values()])
    n = len(y)
    for name, value in {"AICc": -2 * llf + 2 * k + 2 * k * (k + 1) / (n - k - 1),
                        "BIC": -2 * llf + k * np.log(n)}.items():
        w = np.exp(-(value - value.min()) / 2)
        expected[name] = sum(wj / w.sum() * predictions[label] for wj, label in zip(w, fits))
    expected["Covariates"] = np.full(len(y_test), y.mean())  # the formula has only an intercept
    expected["Null"] = expected["Covariates"]  # the summary's reference: the same model here
    best = min(NAMES, key=lambda name: mean_squared_error(y_test, predictions[name]))
    expected["Oracle block"] = predictions[best]
    assert list(table.index) == [
        "PEARL",
        "MS",
        "SA-FRL",
        "SA-cand",
        "Fusion",
        "Best",
        "AICc",
        "BIC",
        "Covariates",
        "Null",
        "Oracle block",
    ]
    assert list(table.columns) == ["MSE", "MAE"]
    for method, prediction in expected.items():
        assert table.loc[method, "MSE"] == pytest.approx(
            mean_squared_error(y_test, prediction), rel=1e-9
        )
        assert table.loc[method, "MAE"] == pytest.approx(
            mean_absolute_error(y_test, prediction), rel=1e-9
        )
    assert table.attrs["best_candidate"] == best


def test_multinomial_evaluation_matches_mnlogit_refits(paper_data):
    y_all = np.r_[paper_data["frame"]["y"], paper_data["test"]["y"]]
    cuts = np.quantile(y_all, [1 / 3, 2 / 3])
    labels = np.array(["low", "mid", "high"])
    frame = paper_data["frame"].assign(
        level=labels[np.searchsorted(cuts, paper_data["frame"]["y"])]
    )
    test = paper_data["test"].assign(level=labels[np.searchsorted(cuts, paper_data["test"]["y"])])
    train_blocks, test_blocks = _blocks(paper_data, "blocks"), _blocks(paper_data, "test_blocks")
    res = pearl.fit(
        "level ~ block(pca) + block(kpca_rbf) + block(kpca_poly)",
        frame,
        blocks=train_blocks,
        family="multinomial",
        seed=2,
    )
    table = res.evaluate(test, blocks=test_blocks)
    classes = sorted(labels)  # the fit orders classes as sorted labels
    codes = pd.Categorical(frame["level"], categories=classes).codes
    test_codes = pd.Categorical(test["level"], categories=classes).codes
    predictions = {
        label: sm.MNLogit(codes, _design(frame, train_blocks, label))
        .fit(disp=0, tol=1e-12, maxiter=300)
        .predict(_design(test, test_blocks, label))
        for label in res.candidate_labels
    }
    expected = _strategy_predictions(res, predictions)
    best = min(NAMES, key=lambda name: log_loss(test_codes, predictions[name], labels=[0, 1, 2]))
    expected["Best"] = predictions[best]
    # Null: the training rows' class frequencies (MNLogit's intercept-only fit)
    expected["Null"] = np.tile(np.bincount(codes, minlength=3) / len(codes), (len(test_codes), 1))
    one_hot = np.eye(3)[test_codes]
    assert list(table.columns) == ["accuracy", "cross_entropy", "MSE"]
    for method, proba in expected.items():
        assert table.loc[method, "accuracy"] == pytest.approx(
            accuracy_score(test_codes, proba.argmax(axis=1))
        )
        assert table.loc[method, "cross_entropy"] == pytest.approx(
            log_loss(test_codes, proba, labels=[0, 1, 2]), rel=1e-5
        )
        assert table.loc[method, "MSE"] == pytest.approx(np.mean((one_hot - proba) ** 2), rel=1e-5)
    assert table.attrs["best_candidate"] == best


def test_binomial_evaluation_uses_both_class_probabilities(paper_data):
    frame = paper_data["frame"].assign(hit=paper_data["frame"]["y"] > 0)
    test = paper_data["test"].assign(hit=paper_data["test"]["y"] > 0)
    blocks = {"pca": paper_data["blocks"]["pca"]}
    res = pearl.fit("hit ~ block(pca)", frame, blocks=blocks, family="binomial", seed=0)
    table = res.evaluate(test, blocks={"pca": paper_data["test_blocks"]["pca"]})
    y = frame["hit"].to_numpy(float)
    p = sm.Logit(y, _design(frame, blocks, "pca")).fit(disp=0, tol=1e-12).predict(
        _design(test, {"pca": paper_data["test_blocks"]["pca"]}, "pca"))
    y_test = test["hit"].to_numpy(float)
    assert table.loc["PEARL", "accuracy"] == pytest.approx(accuracy_score(y_test, p > 0.5))
    assert table.loc["PEARL", "cross_entropy"] == pytest.approx(log_loss(y_test, p), rel=1e-6)
    # mean over rows and both classes of (one-hot - probability)^2 equals the one-class Brier score
    assert table.loc["PEARL", "MSE"] == pytest.approx(np.mean((y_test - p) ** 2), rel=1e-6)


@pytest.mark.parametrize("as_given", [lambda hit: hit.astype(int), lambda hit: hit.astype(float)])
def test_binomial_test_labels_equal_to_the_classes_are_those_classes(paper_data, as_given):
    # A fit on True/False scored on 1/0 (equal values, another type) passed the class check,
    # then every row was coded -1 and evaluate failed with "multinomial y must be integer
    # class codes 0..1 ... hold [-1.0, ...]", naming neither the response nor the classes.
    frame = paper_data["frame"].assign(hit=paper_data["frame"]["y"] > 0)
    test = paper_data["test"].assign(hit=paper_data["test"]["y"] > 0)
    blocks = {"pca": paper_data["blocks"]["pca"]}
    test_blocks = {"pca": paper_data["test_blocks"]["pca"]}
    res = pearl.fit("hit ~ block(pca)", frame, blocks=blocks, family="binomial", seed=0)
    table = res.evaluate(test.assign(hit=as_given(test["hit"])), blocks=test_blocks)
    p = res.predict(test, blocks=test_blocks).to_numpy()
    y_test = test["hit"].to_numpy(float)
    assert table.loc["PEARL", "accuracy"] == pytest.approx(accuracy_score(y_test, p > 0.5))
    assert table.loc["PEARL", "cross_entropy"] == pytest.approx(log_loss(y_test, p), rel=1e-9)
    with pytest.raises(pearl.ResponseError, match=r"response values \[2\] were not classes"):
        res.evaluate(test.assign(hit=test["hit"].astype(int) * 2), blocks=test_blocks)


def test_evaluate_without_the_response_names_it(paper_data):
    res = pearl.fit(
        "y ~ block(pca)", paper_data["frame"], blocks={"pca": paper_data["blocks"]["pca"]}, seed=0
    )
    with pytest.raises(pearl.DataError, match="'y'"):
        res.evaluate(
            paper_data["test"].drop(columns="y"), blocks={"pca": paper_data["test_blocks"]["pca"]}
        )


# ---- compare_table -------------------------------------------------------------------------------
METHODS = ["PEARL", "Best", "Fusion", "SA-FRL", "SA-cand", "MS"]


def _evaluations(seed, n_reps, shift):
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(n_reps):
        mse = rng.uniform(1, 2, size=6) + shift
        accuracy = rng.uniform(0.5, 0.9, size=6)
        runs.append(pd.DataFrame({"accuracy": accuracy, "MSE": mse}, index=METHODS))
    return runs


SCALE = 3.0


def test_evaluate_computes_a_response_expression_with_the_callers_names():
    # np (or a constant) used only on the left was not kept: evaluate() refused np.log(y), and
    # I(y / SCALE) met patsy's function scale() instead of a user's constant named scale.
    rng = np.random.default_rng(3)
    a = rng.normal(size=(80, 2))
    frame = pd.DataFrame({"y": np.exp(a[:, 0] + rng.normal(scale=0.3, size=80))})
    train, test = frame.iloc[:60], frame.iloc[60:]
    for formula, response in [("np.log(y) ~ block(a)", np.log), ("I(y / SCALE) ~ block(a)",
                                                                   lambda y: y / SCALE)]:
        res = pearl.fit(formula, train, blocks={"a": a[:60]}, seed=0, honest=False)
        direct = sm.OLS(response(train["y"].to_numpy()), sm.add_constant(a[:60])).fit()
        predicted = direct.predict(sm.add_constant(a[60:]))
        scores = res.evaluate(test, blocks={"a": a[60:]})
        assert scores.loc["PEARL", "MSE"] == pytest.approx(
            mean_squared_error(response(test["y"].to_numpy()), predicted), rel=1e-10)


def test_evaluate_reads_booleans_as_the_0_1_classes_of_the_fit_and_back():
    # True == 1 passed the class check, then pd.Categorical coded booleans against int classes as
    # -1: "multinomial y must be integer class codes 0..1 ... hold [-1.0, ...]".
    rng = np.random.default_rng(5)
    a = rng.normal(size=(120, 2))
    label = (a[:, 0] + rng.normal(size=120) > 0)
    for fitted, tested in [(label.astype(int), label), (label, label.astype(int))]:
        res = pearl.fit("y ~ block(a)", {"y": fitted[:80], "a": a[:80]}, family="binomial",
                        seed=0, honest=False)
        direct = sm.Logit(label[:80].astype(float), sm.add_constant(a[:80])).fit(disp=0)
        probability = direct.predict(sm.add_constant(a[80:]))
        scores = res.evaluate({"y": tested[80:], "a": a[80:]})
        assert scores.loc["PEARL", "cross_entropy"] == pytest.approx(
            log_loss(label[80:], probability), rel=1e-6)


def test_compare_table_means_sds_and_marks(tmp_path):
    groups = {100: _evaluations(0, 5, 0.0), 200: _evaluations(1, 4, -0.5)}
    table = compare_table(groups)
    assert list(table.mean.columns) == ["PEARL", "MS", "SA-FRL", "SA-cand", "Fusion", "Best"]
    for n, runs in groups.items():
        stack = np.stack([run.to_numpy() for run in runs])
        for j, metric in enumerate(["accuracy", "MSE"]):
            for i, method in enumerate(METHODS):
                assert table.mean.loc[(metric, n), method] == pytest.approx(stack[:, i, j].mean())
                assert table.sd.loc[(metric, n), method] == pytest.approx(
                    np.std(stack[:, i, j], ddof=1)
                )
            shown = table.mean.loc[(metric, n)].round(3)
            ordered = shown.sort_values(ascending=metric != "accuracy")
            marks = table.marks.loc[(metric, n)]
            assert marks[ordered.index[0]] == 1 and marks[ordered.index[1]] == 2
            assert (marks == 1).sum() == 1 and (marks == 2).sum() == 1
    assert table.n_repetitions.to_dict() == {100: 5, 200: 4}


def test_compare_table_latex_bold_best_underline_second_and_ties():
    runs = [pd.DataFrame({"MSE": [1.0, 2.0, 2.0, 3.0]}, index=["PEARL", "Best", "MS", "SA_x"])]
    latex = compare_table({50: runs}).as_latex()
    assert r"\mathbf{1}.\mathbf{000}" in latex
    assert latex.count(r"\underline{2}.\underline{000}") == 2  # tied second place
    assert r"SA\_x" in latex and not re.search(r"(?<!\\)_", latex)
    stack = [name for kind, name in re.findall(r"\\(begin|end)\{(\w+)\}", latex)]
    assert stack == ["table", "tabular", "tabular", "table"]
    assert latex.index(r"\toprule") < latex.index(r"\midrule") < latex.index(r"\bottomrule")


def test_compare_table_html_parses_and_text_marks():
    table = compare_table(_evaluations(3, 3, 0.0))

    class Checker(HTMLParser):
        stack: list = []

        def handle_starttag(self, tag, attrs):
            self.stack.append(tag)

        def handle_endtag(self, tag):
            assert self.stack.pop() == tag

    checker = Checker()
    checker.feed(table._repr_html_())
    assert checker.stack == []
    assert table.as_html().count("<b>") >= 2 and table.as_html().count("<u>") >= 2
    assert "*" in table.as_text() and "n" not in table.as_text().splitlines()[0].split()


def test_compare_table_rejects_mismatched_evaluations():
    runs = _evaluations(0, 2, 0.0)
    runs[1] = runs[1].drop(index="MS")
    with pytest.raises(pearl.DataError, match="evaluation 1"):
        compare_table(runs)
    with pytest.raises(pearl.DataError):
        compare_table({})


def test_a_poisson_fit_is_scored_by_its_deviance_too():
    # the family's loss, as the honest table's: mean 2 (y log(y / mu) - (y - mu)) on test rows,
    # written out here with scipy's xlogy (0 log 0 = 0); the oracle block is the best by it
    from scipy.special import xlogy

    rng = np.random.default_rng(8)
    n = 700
    a, b, c = rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=(n, 1))
    y = rng.poisson(np.exp(0.2 + 0.5 * a[:, 0] + 0.3 * b[:, 1])).astype(float)
    data = {"y": y, "a": a, "b": b, "c": c}
    train = {k: v[:500] for k, v in data.items()}
    test = {k: v[500:] for k, v in data.items()}
    res = pearl.fit("y ~ block(a) + block(b) + block(c)", train, family="poisson", seed=0,
                    honest=False)
    table = res.evaluate(test)
    assert list(table.columns) == ["MSE", "MAE", "poisson_deviance"]
    mean = res.predict({k: v for k, v in test.items() if k != "y"}).to_numpy()
    truth = test["y"]
    deviance = np.mean(2 * (xlogy(truth, truth) - xlogy(truth, mean) - (truth - mean)))
    assert table.loc["PEARL", "poisson_deviance"] == pytest.approx(deviance, rel=1e-12)
    singles = {}
    for label in ("a", "b", "c"):
        mu = res.candidate_predictions_for(res.design_matrix(test), [label], None)[label]
        singles[label] = np.mean(2 * (xlogy(truth, truth) - xlogy(truth, mu) - (truth - mu)))
    assert table.attrs["best_candidate"] == min(singles, key=singles.get)
    assert table.loc["Oracle block", "poisson_deviance"] == pytest.approx(
        min(singles.values()), rel=1e-12)


def test_the_null_row_is_the_intercept_only_glm_with_weights_and_the_test_offset():
    # the summary's Null reference on test rows: statsmodels' GLM(y, 1) fitted on the training
    # rows with their variance weights and offset, predicted with the test rows' offset; the
    # formula has a covariate, so Null is not the Covariates strategy (which uses x)
    rng = np.random.default_rng(4)
    n = 400
    a, x = rng.normal(size=(n, 2)), rng.normal(size=n)
    t = rng.uniform(0.5, 3.0, size=n)
    y = rng.poisson(t * np.exp(0.3 + 0.4 * a[:, 0] + 0.2 * x)).astype(float)
    w = rng.uniform(0.5, 2.0, size=n)
    data = pd.DataFrame({"y": y, "x": x, "t": t, "w": w})
    train, test = data.iloc[:300], data.iloc[300:]
    res = pearl.fit("y ~ x + block(a) + offset(np.log(t))", train, blocks={"a": a[:300]},
                    family="poisson", weights="w", weight_type="variance", seed=0, honest=False)
    table = res.evaluate(test, blocks={"a": a[300:]})
    null = sm.GLM(train["y"], np.ones((300, 1)), family=sm.families.Poisson(),
                  offset=np.log(train["t"]), var_weights=train["w"]).fit(tol=1e-12)
    mean = np.exp(null.params.iloc[0] + np.log(test["t"].to_numpy()))
    truth = test["y"].to_numpy()
    assert table.loc["Null", "MSE"] == pytest.approx(np.mean((truth - mean) ** 2), rel=1e-9)
    assert table.loc["Null", "MAE"] == pytest.approx(np.mean(np.abs(truth - mean)), rel=1e-9)
    assert table.loc["Null", "MSE"] != pytest.approx(table.loc["Covariates", "MSE"], rel=1e-3)
    assert list(table.index[-2:]) == ["Null", "Oracle block"]


def test_without_covariates_the_covariates_row_is_the_null_row():
    # digits with two classes of 43 rows each, the most frequent: the intercept-only refit
    # (Newton, 1e-12) and Null's closed form broke that tie differently, so their accuracies
    # differed (0.0900 and 0.0967) though the documented rows are the same model
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    columns = [f"p{i}" for i in range(64)]
    frame = pd.DataFrame(X, columns=columns).assign(y=y)
    reps = pearl.Representations({"pca": pearl.PCA(5)}, columns=columns, seed=0)
    reps.fit(frame.iloc[:800])
    train, test = frame.iloc[800:1200], frame.iloc[1200:1500]
    assert sorted(np.bincount(train["y"]))[-2:] == [43, 43]
    res = pearl.fit("y ~ block(pca)", train, blocks=reps, family="multinomial", seed=0,
                    honest=False)
    table = res.evaluate(test)
    pd.testing.assert_series_equal(table.loc["Covariates"], table.loc["Null"],
                                   check_names=False, check_exact=True)
    # the Null row is the training frequencies of the classes, scored by scikit-learn
    frequencies = np.bincount(train["y"], minlength=10) / len(train)
    probabilities = np.tile(frequencies, (len(test), 1))
    assert table.loc["Null", "accuracy"] == accuracy_score(test["y"], np.argmax(probabilities,
                                                                                axis=1))
    assert table.loc["Null", "cross_entropy"] == pytest.approx(
        log_loss(test["y"], probabilities, labels=range(10)), rel=1e-12)


def test_a_multinomial_evaluation_takes_test_row_weights():
    # weights of the test rows' scores, not of a fit: refused before with the fit's
    # "not yet supported with family='multinomial'"; now the weighted metrics of sklearn
    rng = np.random.default_rng(6)
    n = 300
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    y = np.array(["lo", "mid", "hi"])[(a[:, 0] + rng.normal(size=n) > 0).astype(int)
                                       + (b[:, 1] > 0.5)]
    data = {"y": y, "a": a, "b": b}
    res = pearl.fit("y ~ block(a) + block(b)", {k: v[:200] for k, v in data.items()},
                    family="multinomial", seed=0, honest=False)
    test = {k: v[200:] for k, v in data.items()}
    w = rng.uniform(0.2, 3.0, size=100)
    table = res.evaluate(test, weights=w)
    proba = res.predict({"a": test["a"], "b": test["b"]})
    codes = pd.Categorical(test["y"], categories=list(proba.columns)).codes
    assert table.loc["PEARL", "accuracy"] == pytest.approx(
        accuracy_score(codes, proba.to_numpy().argmax(axis=1), sample_weight=w), rel=1e-12)
    assert table.loc["PEARL", "cross_entropy"] == pytest.approx(
        log_loss(codes, proba.to_numpy(), sample_weight=w, labels=[0, 1, 2]), rel=1e-9)
