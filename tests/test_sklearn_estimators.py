"""PearlRegressor and PearlClassifier: scikit-learn's contract, with pearl.fit's numbers inside."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import pearlstats as pearl
from pearlstats.exceptions import BlockError, DataError, FoldError, OptionError
from pearlstats.sklearn import PearlClassifier, PearlRegressor, expected_failed_checks

# Both sides run the same float64 arithmetic on the same rows in the same order (the
# estimator calls pearl.fit), so agreement is to rounding; 1e-10 leaves room for BLAS
# reductions that may be ordered differently for a strided view and a copy.
SAME_ARITHMETIC = 1e-10


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


def _direct_pearl(X_train, y_train, X_test, n_components):
    """The pipeline by hand: scaler and kernel PCA fitted on the training rows, then pearl.fit."""
    scaler = StandardScaler().fit(X_train)
    Z_train, Z_test = scaler.transform(X_train), scaler.transform(X_test)
    kpca = pearl.KernelPCA(n_components, seed=0).fit(Z_train[:, 4:])
    res = pearl.fit(
        "y ~ block(demo) + block(kpca)",
        {"y": y_train, "demo": Z_train[:, :4], "kpca": kpca.transform(Z_train[:, 4:])},
        cv=5, seed=0, honest=False,
    )
    return np.asarray(res.predict({"demo": Z_test[:, :4], "kpca": kpca.transform(Z_test[:, 4:])}))


def test_grid_search_over_a_learner_parameter_refits_it_on_each_split(diabetes):
    X, y = diabetes
    pipeline = Pipeline([
        ("scale", StandardScaler()),
        ("pearl", PearlRegressor(
            {"demo": [0, 1, 2, 3], "kpca": (pearl.KernelPCA(2, seed=0), slice(4, 10))},
            random_state=0, honest=False,
        )),
    ])
    outer = KFold(3, shuffle=True, random_state=1)
    grid = GridSearchCV(pipeline, {"pearl__kpca__n_components": [1, 3]}, cv=outer).fit(X, y)
    # every split's score equals the procedure done by hand on that split's training rows
    # (the learner is fitted on the training rows only: no leakage from the test rows)
    for k, (train, test) in enumerate(outer.split(X, y)):
        for i, n_components in enumerate(grid.cv_results_["param_pearl__kpca__n_components"]):
            expected = r2_score(y[test], _direct_pearl(X[train], y[train], X[test], n_components))
            assert grid.cv_results_[f"split{k}_test_score"][i] == pytest.approx(
                expected, abs=SAME_ARITHMETIC
            )
    best = grid.best_params_["pearl__kpca__n_components"]
    np.testing.assert_allclose(
        grid.predict(X[:20]), _direct_pearl(X, y, X[:20], best), rtol=SAME_ARITHMETIC
    )


def test_cross_val_score_equals_pearl_fit_on_the_same_folds(diabetes):
    X, y = diabetes
    model = PearlRegressor({"a": slice(0, 5), "b": slice(5, 10)}, random_state=3, honest=False)
    folds = KFold(4, shuffle=True, random_state=0)
    scores = cross_val_score(model, X, y, cv=folds)
    for score, (train, test) in zip(scores, folds.split(X), strict=True):
        res = pearl.fit("y ~ block(a) + block(b)",
                        {"y": y[train], "a": X[train, :5], "b": X[train, 5:]},
                        cv=5, seed=3, honest=False)
        predicted = res.predict({"a": X[test, :5], "b": X[test, 5:]})
        assert score == pytest.approx(r2_score(y[test], predicted), abs=SAME_ARITHMETIC)


def test_classifier_probabilities_equal_pearl_fit_and_labels_are_kept():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    labels = np.where(y == 1, "benign", "malignant")
    model = PearlClassifier({"mean": slice(0, 10), "worst": slice(20, 30)}, random_state=0,
                            honest=False, ridge=1.0).fit(X, labels)
    assert list(model.classes_) == ["benign", "malignant"]
    # the direct fit codes the labels 0/1 in sorted order, as classes_ lists them
    res = pearl.fit("y ~ block(mean) + block(worst)",
                    {"y": (labels == "malignant").astype(float), "mean": X[:, :10],
                     "worst": X[:, 20:]}, family="binomial", cv=5, seed=0, honest=False,
                    ridge=1.0)
    p_malignant = np.asarray(res.predict({"mean": X[:, :10], "worst": X[:, 20:]}))
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], p_malignant, rtol=SAME_ARITHMETIC)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-15)
    expected = np.where(p_malignant > 0.5, "malignant", "benign")
    assert (model.predict(X) == expected).all()
    assert model.score(X, labels) == pytest.approx((expected == labels).mean())


def test_sample_weight_is_a_frequency_weight(diabetes):
    X, y = diabetes
    X, y = X[:120], y[:120]
    counts = np.random.default_rng(0).integers(1, 4, size=len(y))
    labels = np.arange(len(y)) % 5
    blocks = {"a": slice(0, 5), "b": slice(5, 10)}
    weighted = PearlRegressor(blocks, cv=labels, honest=False).fit(X, y, sample_weight=counts)
    repeated = PearlRegressor(blocks, cv=np.repeat(labels, counts), honest=False).fit(
        np.repeat(X, counts, axis=0), np.repeat(y, counts)
    )
    # the weight stage is a certified QP solve on fold moments that differ only in rounding
    # (sums of weighted vs repeated rows); its weights agree to the solver's 1e-9 tolerance
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-7)
    # a zero weight is the row's absence
    zero = counts.copy()
    zero[:10] = 0
    dropped = PearlRegressor(blocks, cv=labels[10:], honest=False).fit(
        X[10:], y[10:], sample_weight=counts[10:]
    )
    with_zeros = PearlRegressor(blocks, cv=labels, honest=False).fit(X, y, sample_weight=zero)
    np.testing.assert_allclose(with_zeros.predict(X), dropped.predict(X), rtol=SAME_ARITHMETIC)


def test_dataframe_column_names_select_blocks(diabetes):
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    named = PearlRegressor({"demo": ["age", "sex", "bmi", "bp"], "serum": ["s1", "s2", "s3"]},
                           random_state=0, honest=False).fit(X, y)
    positions = PearlRegressor({"demo": [0, 1, 2, 3], "serum": slice(4, 7)},
                               random_state=0, honest=False).fit(X.to_numpy(), y.to_numpy())
    assert list(named.feature_names_in_) == list(X.columns) and named.n_features_in_ == 10
    np.testing.assert_array_equal(named.predict(X), positions.predict(X.to_numpy()))
    with pytest.raises(BlockError, match="names column 'glucose'.*'s6'"):
        PearlRegressor({"a": ["glucose"]}).fit(X, y)


def test_learner_parameters_are_nested_parameters():
    model = PearlRegressor({"pca": pearl.PCA(2), "raw": [0, 1]})
    params = model.get_params()
    assert params["pca__n_components"] == 2 and "raw__n_components" not in params
    model.set_params(pca__n_components=3, random_state=4)
    assert model.blocks["pca"].n_components == 3 and model.random_state == 4
    model.set_params(pca=pearl.KernelPCA(1))
    assert isinstance(model.blocks["pca"], pearl.KernelPCA)
    with pytest.raises(OptionError, match="no parameter 'n_component'"):
        model.set_params(pca__n_component=1)


def test_fit_leaves_the_given_learners_unfitted_and_clone_is_unfitted(diabetes):
    X, y = diabetes
    learner = pearl.PCA(2)
    model = PearlRegressor({"pca": learner}, honest=False, random_state=0).fit(X, y)
    assert not hasattr(learner, "components_")
    assert hasattr(model.learners_["pca"], "components_")
    copy = clone(model)
    assert not hasattr(copy, "results_") and not hasattr(copy.blocks["pca"], "components_")


def test_bad_blocks_and_families_are_named():
    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30.0)
    with pytest.raises(BlockError, match="block name 'y'"):
        PearlRegressor({"y": [0]}).fit(X, y)
    with pytest.raises(BlockError, match="selects column 7; X has columns 0..2"):
        PearlRegressor({"a": [7]}).fit(X, y)
    with pytest.raises(OptionError, match="PearlRegressor\\(family='binomial'\\)"):
        PearlRegressor(family="binomial").fit(X, y)
    with pytest.raises(BlockError, match=r"\['x0_'\] are the names the covariates take"):
        PearlRegressor({"x0_": [1, 2]}, covariates=[0]).fit(X, y)
    with pytest.raises(BlockError, match=r"a tuple is \(learner, columns\)"):
        PearlRegressor({"a": (0, 1)}).fit(X, y)
    with pytest.raises(OptionError, match="max_candidates=0"):  # pearl.fit's check, not dropped
        PearlRegressor({"a": [0], "b": [1]}, max_candidates=0).fit(X, y)


def test_a_block_named_like_a_parameter_is_refused_and_does_not_shadow_it():
    from sklearn.decomposition import PCA

    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30.0)
    model = PearlRegressor({"loss": PCA(2), "raw": [0, 1]})
    assert model.get_params()["loss"] is None  # the parameter, not the learner
    model.set_params(random_state=3)
    assert model.random_state == 3 and isinstance(model.blocks["loss"], PCA)
    with pytest.raises(BlockError, match="block name 'loss' is a parameter of PearlRegressor"):
        model.fit(X, y)


def test_negative_sample_weights_are_refused_not_dropped(diabetes):
    X, y = diabetes
    weights = np.ones(len(y))
    weights[:5] = -1.0
    with pytest.raises(DataError, match="sample_weight has 5 negative values"):
        PearlRegressor(honest=False).fit(X, y, sample_weight=weights)


def test_pairs_with_a_gap_are_refused_and_pairs_without_one_are_fold_labels(diabetes):
    X, y = diabetes
    rows = np.arange(len(y))
    tests = np.array_split(rows, 5)
    gapped = [(rows[(rows < t[0] - 10) | (rows > t[-1] + 10)], t) for t in tests]
    blocks = {"a": slice(0, 5), "b": slice(5, 10)}
    with pytest.raises(OptionError, match="split 0 trains on other rows.*splitter object"):
        PearlRegressor(blocks, cv=gapped, honest=False).fit(X, y)
    plain = [(np.setdiff1d(rows, t), t) for t in tests]
    by_pairs = PearlRegressor(blocks, cv=plain, random_state=0, honest=False).fit(X, y)
    by_splitter = PearlRegressor(blocks, cv=KFold(5), random_state=0, honest=False).fit(X, y)
    np.testing.assert_array_equal(np.asarray(by_pairs.results_.folds),
                                  np.asarray(by_splitter.results_.folds))


def test_a_search_with_routed_groups_needs_no_request_for_fit(diabetes):
    # with metadata routing on, groups meant for the search's GroupKFold are not asked for by
    # fit (as for estimators without a groups parameter); set_fit_request(groups=True) asks
    import sklearn
    from sklearn.model_selection import GroupKFold

    X, y = diabetes
    groups = np.arange(len(y)) % 17
    model = PearlRegressor({"a": slice(0, 5), "b": slice(5, 10)}, random_state=0, honest=False)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(model, {"ridge": [0.0, 1.0]}, cv=GroupKFold(3))
        assert search.fit(X, y, groups=groups).best_params_["ridge"] in (0.0, 1.0)
        asked = clone(model).set_params(cv=GroupKFold(3)).set_fit_request(groups=True)
        scores = cross_val_score(asked, X, y, cv=GroupKFold(3), params={"groups": groups})
    assert np.all(np.isfinite(scores))


def test_poisson_regressor_tells_the_checks_its_targets_are_non_negative():
    assert PearlRegressor(family="poisson").__sklearn_tags__().target_tags.positive_only
    assert not PearlRegressor().__sklearn_tags__().target_tags.positive_only


@pytest.mark.slow
@pytest.mark.parametrize("estimator", [PearlRegressor(), PearlClassifier(),
                                       PearlRegressor(family="poisson"),
                                       PearlClassifier(family="multinomial"),
                                       PearlClassifier(family="binomial"),
                                       PearlRegressor(ridge=1.0)],
                         ids=["PearlRegressor", "PearlClassifier", "PearlRegressor-poisson",
                              "PearlClassifier-multinomial", "PearlClassifier-binomial",
                              "PearlRegressor-ridge"])
def test_check_estimator_passes_but_for_the_listed_checks(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checks' separable toy data warns by design
        results = check_estimator(estimator, on_fail=None,
                                  expected_failed_checks=expected_failed_checks(estimator))
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert failed == []
    listed = set(expected_failed_checks(estimator))
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == listed


def test_without_scikit_learn_the_module_says_what_to_install():
    script = (
        "import sys; sys.modules['sklearn'] = None\n"
        "try:\n    import pearlstats.sklearn\n"
        "except Exception as err:\n    print(type(err).__name__, err)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "MissingDependencyError" in run.stdout and "pip install scikit-learn" in run.stdout


def test_a_splitter_whose_test_sets_overlap_is_refused(diabetes):
    X, y = diabetes
    overlapping = [(np.arange(100, 442), np.arange(0, 100)), (np.arange(50, 442), np.arange(50))]
    with pytest.raises(OptionError, match="partition of the rows"):
        PearlRegressor(cv=overlapping).fit(X, y)
    frame = pd.DataFrame(X)
    assert PearlRegressor(cv=KFold(3), honest=False).fit(frame, y).results_.folds is not None


def test_the_from_scikit_learn_page_runs_as_written():
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "sklearn.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"),
                        flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict = {}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"docs/sklearn.md python block {number}", "exec"), namespace)
    assert namespace["grid"].best_params_["pearl__serum__n_components"] in (1, 2, 4)
    assert namespace["search"].best_params_["pca__n_components"] in (2, 4, 6)


def test_the_from_r_page_runs_as_written():
    """docs/from_r.md's Python block: the R calls it maps give these numbers."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "from_r.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"),
                        flags=re.MULTILINE | re.DOTALL)
    namespace: dict = {}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"docs/from_r.md python block {number}", "exec"), namespace)
    res = namespace["res"]
    # the AICc row the page prints is MuMIn's Weights(AICc) of the candidate table's aicc
    aicc = res.candidate_table["aicc"]
    expected = np.exp(-(aicc - aicc.min()) / 2) / np.exp(-(aicc - aicc.min()) / 2).sum()
    np.testing.assert_allclose(res.strategy_weights.loc["AICc", res.candidate_labels], expected,
                               rtol=1e-12)
    assert res.cov_type == "HC3"


def _split_labels(splits, n):
    """Each row's test split, -1 for a row no split tests, from (train, test) pairs."""
    labels = np.full(n, -1)
    for k, (_, test) in enumerate(splits):
        labels[test] = k
    return labels


def test_group_splitter_gets_the_groups_given_to_fit(diabetes):
    from sklearn.model_selection import GroupKFold

    X, y = diabetes
    groups = np.arange(len(y)) % 17
    model = PearlRegressor({"a": slice(0, 5), "b": slice(5, 10)}, cv=GroupKFold(3), random_state=0,
                           honest=False).fit(X, y, groups=groups)
    expected = _split_labels(GroupKFold(3).split(X, y, groups), len(y))
    np.testing.assert_array_equal(np.asarray(model.results_.folds), expected)
    # scikit-learn's routing of fit parameters: cross_val_score(params={"groups": ...})
    scores = cross_val_score(model, X, y, cv=KFold(2), params={"groups": groups})
    assert np.all(np.isfinite(scores))
    with pytest.raises(DataError, match="one group label per row of X"):
        model.fit(X, y, groups=groups[:-1])


def test_time_series_splitter_is_run_by_pearl_fit(diabetes):
    from sklearn.model_selection import TimeSeriesSplit

    X, y = diabetes
    model = PearlRegressor({"a": slice(0, 5), "b": slice(5, 10)}, cv=TimeSeriesSplit(3),
                           random_state=0, honest=False).fit(X, y)
    expected = _split_labels(TimeSeriesSplit(3).split(X), len(y))
    np.testing.assert_array_equal(np.asarray(model.results_.folds), expected)
    assert np.all(np.isfinite(model.predict(X)))


def test_a_splitter_built_for_the_rows_before_zero_weights_says_so(diabetes):
    from sklearn.model_selection import PredefinedSplit

    X, y = diabetes
    n = len(y)
    weights = np.ones(n)
    weights[[0, 10, 20]] = 0.0  # rows of sample_weight 0 are removed before pearl.fit
    splitter = PredefinedSplit(np.arange(n) % 3)
    blocks = {"a": slice(0, 5), "b": slice(5, 10)}
    with pytest.raises(FoldError, match=rf"sample_weight 0 removed 3 of the {n} rows given "
                                        rf"\(rows 0, 10, 20\), so the fit has {n - 3}.*"
                                        r"PredefinedSplit\(np\.delete\(test_fold, "
                                        r"\[0, 10, 20\]\)\)"):
        PearlRegressor(blocks, cv=splitter, honest=False).fit(X, y, sample_weight=weights)


def test_pairs_beyond_the_rows_fitted_name_the_position_and_the_rows(diabetes):
    X, y = diabetes
    blocks = {"a": slice(0, 5), "b": slice(5, 10)}
    pairs = list(KFold(4).split(X))  # made for all 442 rows, fitted on the first 200
    largest = int(pairs[0][0].max())  # split 0's training rows reach the last row
    with pytest.raises(FoldError, match=rf"split 0 has training position {largest}, but X has "
                                        r"200 rows \(positions 0..199\).*splitter object"):
        PearlRegressor(blocks, cv=pairs, honest=False).fit(X[:200], y[:200])
    negative = [(train, test - len(y)) for train, test in pairs]  # numpy would count from the end
    with pytest.raises(FoldError, match=rf"split 0 has test position {-len(y)}; row positions"):
        PearlRegressor(blocks, cv=negative, honest=False).fit(X, y)


def test_overlapping_boolean_test_masks_are_refused(diabetes):
    X, y = diabetes
    first, second = np.zeros(len(y), bool), np.zeros(len(y), bool)
    first[:300], second[200:] = True, True
    with pytest.raises(OptionError, match="partition of the rows"):
        PearlRegressor(cv=[(~first, first), (~second, second)]).fit(X, y)


def test_random_state_seeds_the_folds_as_pearl_fit_seed_and_seed_is_its_deprecated_name(diabetes):
    X, y = diabetes
    blocks = {"a": slice(0, 5), "b": slice(5, 10)}
    direct = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": X[:, :5], "b": X[:, 5:]},
                       cv=5, seed=11, honest=False)
    by_int = PearlRegressor(blocks, random_state=11, honest=False).fit(X, y)
    assert by_int.results_.seed == 11
    np.testing.assert_array_equal(by_int.results_.weights, direct.weights)
    # scikit-learn's other forms: one seed drawn from a RandomState or a Generator, the same
    # draw for the same state (two fits from equal states agree)
    for state in (np.random.RandomState, np.random.default_rng):
        first = PearlRegressor(blocks, random_state=state(5), honest=False).fit(X, y)
        again = PearlRegressor(blocks, random_state=state(5), honest=False).fit(X, y)
        assert first.results_.seed == again.results_.seed
        np.testing.assert_array_equal(first.results_.weights, again.results_.weights)
    with pytest.warns(FutureWarning, match="renamed random_state"):
        old = PearlRegressor(blocks, seed=11, honest=False).fit(X, y)
    np.testing.assert_array_equal(old.results_.weights, direct.weights)
    with pytest.raises(OptionError, match="random_state= only"):
        PearlRegressor(blocks, seed=11, random_state=11, honest=False).fit(X, y)
    assert clone(PearlRegressor(blocks, random_state=11)).get_params()["random_state"] == 11
    # docs/deprecation.md: the old name goes in 0.10.0; this fails once the version gets there
    # with the argument still in place
    version = tuple(int(part) for part in pearl.__version__.split(".")[:2])
    assert version < (0, 10), "remove PearlRegressor/PearlClassifier(seed=) in 0.10.0"


def test_set_params_sets_blocks_before_the_parameters_of_their_learners(diabetes):
    from sklearn.decomposition import PCA

    X, y = diabetes
    est = PearlRegressor({"p": (PCA(2), slice(4, 10)), "a": [0, 1, 2, 3]}, random_state=0,
                         honest=False)
    # a grid point that gives blocks and a parameter of their learner together: the parameter
    # is the new learner's (it was set on the replaced one and lost, both points scoring alike)
    folds = KFold(3, shuffle=True, random_state=0)
    grid = GridSearchCV(est, {"blocks": [{"p": (PCA(1), slice(4, 10)), "a": [0, 1, 2, 3]}],
                              "p__n_components": [3, 5]}, cv=folds).fit(X, y)
    for score, n in zip(grid.cv_results_["mean_test_score"], [3, 5], strict=True):
        built = PearlRegressor({"p": (PCA(n), slice(4, 10)), "a": [0, 1, 2, 3]}, random_state=0,
                               honest=False)
        # the same fits on the same rows: equal to rounding
        assert score == pytest.approx(cross_val_score(built, X, y, cv=folds).mean(),
                                      abs=SAME_ARITHMETIC)
    # set_params(**get_params()) on an estimator without those blocks, as for a Pipeline
    params = est.get_params(deep=True)
    assert PearlRegressor().set_params(**params).get_params(deep=True) == params


def test_a_binomial_classifier_says_it_is_binary_only():
    from sklearn.datasets import load_iris
    from sklearn.utils import get_tags

    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    assert not get_tags(PearlClassifier(family="binomial")).classifier_tags.multi_class
    assert get_tags(PearlClassifier()).classifier_tags.multi_class
    # scikit-learn's wording for a binary-only classifier, with the user's labels (not codes)
    with pytest.raises(ValueError, match="Only binary classification is supported.*"
                                         "'setosa', 'versicolor', 'virginica'.*family='auto'"):
        PearlClassifier(family="binomial").fit(X, names)
    # two of the classes (a ridge as petals nearly separate them): pearl.fit's fit, to rounding
    two = y > 0
    model = PearlClassifier({"sepal": [0, 1], "petal": [2, 3]}, family="binomial",
                            ridge=0.1, random_state=0, honest=False).fit(X[two], names[two])
    res = pearl.fit("y ~ block(sepal) + block(petal)",
                    {"y": (y[two] == 2).astype(float), "sepal": X[two, :2], "petal": X[two, 2:]},
                    family="binomial", seed=0, honest=False, ridge=0.1)
    np.testing.assert_allclose(model.predict_proba(X[two])[:, 1],
                               res.predict({"sepal": X[two, :2], "petal": X[two, 2:]}),
                               rtol=SAME_ARITHMETIC)


def test_weights_that_leave_one_class_or_one_row_say_so():
    X, y = load_breast_cancer(return_X_y=True)
    labels = np.where(y == 1, "benign", "malignant")
    # the zero weights leave only benign rows: said in the labels, not as a 1-valued response
    with pytest.raises(ValueError, match="only class 'benign' has rows of positive sample_weight"):
        PearlClassifier(honest=False, ridge=1.0).fit(X, labels, sample_weight=(y == 1) * 1.0)
    with pytest.raises(ValueError, match="only class .benign. has rows"):  # labels as objects
        PearlClassifier(honest=False, ridge=1.0).fit(X, labels.astype(object),
                                                     sample_weight=(y == 1) * 1.0)
    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(DataError, match="sample_weight is positive on 1 row"):
        PearlRegressor(honest=False).fit(X, y, sample_weight=np.r_[1.0, np.zeros(len(y) - 1)])


def _html_parameters(estimator) -> dict[str, bool]:
    """The parameter table of scikit-learn's HTML repr: name -> shown as set by the user."""
    html = estimator._repr_html_()
    # one <tr> per parameter; the name cell may hold a link to the documentation
    rows = re.findall(r'<tr class="([^"]*)">((?:(?!</tr>).)*?)<td class="param">(.*?)</td>',
                      html, flags=re.S)
    return {re.sub(r"<[^>]+>", "", name).strip(): "user-set" in cls for cls, _, name in rows}


def test_html_repr_lists_the_constructor_arguments_a_user_set():
    learner = pearl.KernelPCA(2, seed=0)
    model = PearlRegressor({"a": [0, 1], "kpca": (learner, [2, 3])}, random_state=0)
    table = _html_parameters(model)
    # the constructor's arguments, each once (the learner is inside blocks), but the
    # deprecated seed that was not given
    assert set(table) == set(PearlRegressor._get_param_names()) - {"seed"}
    assert {name for name, user_set in table.items() if user_set} == {"blocks", "random_state"}
    # get_params still has the learner's parameters (GridSearchCV, clone) and seed (clone)
    params = model.get_params()
    assert params["kpca"] is learner and params["kpca__n_components"] == 2
    assert params["seed"] == "deprecated"
    # a seed given is shown, as set by the user
    table = _html_parameters(PearlClassifier(seed=3))
    assert table["seed"] is True and not any(table[name] for name in table if name != "seed")


def test_an_int_random_state_seeds_the_learner_blocks_as_representations_seed_does():
    from sklearn.decomposition import KernelPCA as SklearnKernelPCA
    from sklearn.utils.estimator_checks import check_fit_idempotent

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=120)
    # Nystrom landmarks are drawn at random: unseeded, two fits differed by up to 0.05
    nystrom = pearl.KernelPCA(3, method="nystrom", n_landmarks=30)
    model = PearlRegressor({"a": [0], "k": (nystrom, [1, 2, 3, 4])}, random_state=0,
                           honest=False)
    first, again = clone(model).fit(X, y), clone(model).fit(X, y)
    np.testing.assert_array_equal(first.predict(X), again.predict(X))
    # the seed is the one Representations(seed=0) gives a learner of that name
    reps = pearl.Representations({"k": nystrom}, seed=0).fit(pd.DataFrame(X[:, 1:]))
    assert first.learners_["k"].seed == reps["k"].seed is not None
    assert nystrom.seed is None  # the given learner is left as it was
    # a scikit-learn learner's random_state likewise (randomized eigensolver)
    sk = PearlRegressor({"k": SklearnKernelPCA(2, eigen_solver="randomized")}, random_state=0,
                        honest=False)
    np.testing.assert_array_equal(clone(sk).fit(X, y).predict(X), clone(sk).fit(X, y).predict(X))
    # scikit-learn's check (on its own X, so the learner reads every column)
    check_fit_idempotent("PearlRegressor", PearlRegressor({"k": nystrom}, random_state=0))
    # random_state=None draws a seed, recorded in results_.seed, that repeats the whole fit
    drawn = clone(model).set_params(random_state=None).fit(X, y)
    repeat = clone(model).set_params(random_state=drawn.results_.seed).fit(X, y)
    np.testing.assert_array_equal(drawn.predict(X), repeat.predict(X))
    # scikit-learn's tag means "not deterministic given a fixed random_state": never so here
    assert not model.__sklearn_tags__().non_deterministic
    assert not clone(model).set_params(random_state=None).__sklearn_tags__().non_deterministic


def test_a_bad_random_state_is_named_as_random_state():
    X, y = np.random.default_rng(0).normal(size=(30, 2)), np.arange(30.0)
    with pytest.raises(OptionError, match=r"random_state=-1; use an int in \[0, 2\*\*63\)"):
        PearlRegressor(random_state=-1).fit(X, y)


@pytest.mark.parametrize("estimator", [
    PearlRegressor({"a": slice(0, 1)}, random_state=0),  # narrow: passes
    PearlRegressor({"a": slice(0, 23)}),  # 24 coefficients: refused on 24 weighted rows only
    PearlRegressor({"a": slice(0, 15), "b": slice(15, 30)}),  # a+b refused in both fits
    PearlRegressor({"a": slice(0, 24), "b": [29]}),  # a refused in the weighted fit only
    PearlRegressor({"a": slice(0, 15), "b": slice(15, 30)}, candidates=[["a", "b"]]),
    PearlRegressor({"p": pearl.PCA(2)}, ridge=0.1),  # learner blocks are fitted unweighted
    PearlRegressor({"p": pearl.PCA(2)}, family="poisson"),
    PearlClassifier({"p": pearl.PCA(2)}, family="binomial"),
], ids=["one-column", "23-columns", "15+15", "24+1", "a+b-only", "learner-ridge",
        "learner-poisson", "learner-binomial"])
def test_the_sample_weight_check_is_listed_exactly_where_it_fails(estimator):
    from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

    listed = "check_sample_weight_equivalence_on_dense_data" in expected_failed_checks(estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the check's toy data warns by design
        try:
            check_sample_weight_equivalence_on_dense_data(type(estimator).__name__, estimator)
        except Exception:  # noqa: BLE001 - a failing check raises what it raises
            failed = True
        else:
            failed = False
    assert failed == listed


@pytest.mark.parametrize("selector", [[], [False, False, False], slice(3, None)],
                         ids=["empty-list", "false-mask", "empty-slice"])
def test_a_learner_block_that_selects_no_column_is_refused(selector):
    X = np.random.default_rng(0).normal(size=(50, 3))
    y = X[:, 0] + np.random.default_rng(1).normal(size=50)
    with pytest.raises(BlockError, match="block 'k' selects no column of X"):
        PearlRegressor({"a": [0], "k": (pearl.KernelPCA(1), selector)}, random_state=0).fit(X, y)
    with pytest.raises(BlockError, match="block 'k' selects no column of X"):
        PearlRegressor({"a": [0], "k": selector}, random_state=0).fit(X, y)


def test_a_block_name_with_a_double_underscore_is_refused():
    # its learner's parameters would be unreachable: set_params(a__b__gamma=) reads block 'a'
    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30.0)
    with pytest.raises(BlockError, match=r"block name 'a__b' contains '__'.*e\.g\. 'a_b'"):
        PearlRegressor({"a__b": pearl.PCA(1), "c": [0]}).fit(X, y)


def test_a_learner_block_is_replaced_kept_as_columns_or_dropped_by_set_params(diabetes):
    X, y = diabetes
    est = PearlRegressor({"a": [0, 1, 2, 3], "k": (pearl.KernelPCA(2, seed=0), slice(4, 10))},
                         random_state=0, honest=False)
    # 'passthrough' keeps the block's columns without the learner: as the columns block
    through = clone(est).set_params(k="passthrough")
    assert through.blocks == {"a": [0, 1, 2, 3], "k": ("passthrough", slice(4, 10))}
    columns = PearlRegressor({"a": [0, 1, 2, 3], "k": slice(4, 10)}, random_state=0,
                             honest=False)
    np.testing.assert_array_equal(through.fit(X, y).predict(X), columns.fit(X, y).predict(X))
    # 'drop' removes the block: as the estimator without it
    dropped = clone(est).set_params(k="drop")
    assert dropped.blocks == {"a": [0, 1, 2, 3], "k": ("drop", slice(4, 10))}
    assert dropped.get_params()["k"] == "drop"  # as a Pipeline shows a dropped step
    alone = PearlRegressor({"a": [0, 1, 2, 3]}, random_state=0, honest=False)
    np.testing.assert_array_equal(dropped.fit(X, y).predict(X), alone.fit(X, y).predict(X))
    # the block keeps its name: a learner can be put back, as a Pipeline step can
    back = dropped.set_params(k=pearl.KernelPCA(2, seed=0))
    np.testing.assert_array_equal(back.fit(X, y).predict(X), clone(est).fit(X, y).predict(X))
    with pytest.raises(BlockError, match="every block is 'drop'"):
        PearlRegressor({"k": pearl.PCA(2)}).set_params(k="drop").fit(X, y)
    # a bare learner reads every column; 'passthrough' keeps every column
    bare = PearlRegressor({"k": pearl.PCA(2)}).set_params(k="passthrough")
    assert bare.blocks == {"k": ("passthrough", slice(None))}
    # the same values in a search
    search = GridSearchCV(est, {"k": [pearl.PCA(1), "passthrough", "drop"]}, cv=3).fit(X, y)
    assert len(search.cv_results_["mean_test_score"]) == 3
    for value in (None, 3, "pasthrough"):
        with pytest.raises(OptionError, match=r"block 'k' takes a learner.*'passthrough'.*"
                                              r"'drop'"):
            clone(est).set_params(k=value)


def test_a_text_column_of_x_is_named_with_what_to_do_instead(diabetes):
    X, y = diabetes
    frame = pd.DataFrame(X[:, :3], columns=["age", "sex", "bmi"]).assign(note="x")
    # numpy's "could not convert string to float" said neither the column nor what to do
    with pytest.raises(DataError, match=r"column\(s\) \['note'\] are not.*could not convert"
                                        r".*Representations"):
        PearlRegressor({"a": ["age", "bmi"]}).fit(frame, y)
    docs = np.array([["good film"], ["bad film"], ["good plot"], ["a bad plot"]] * 10)
    with pytest.raises(DataError, match=r"column\(s\) \[0\] are not.*LSI"):
        PearlRegressor({"t": pearl.LSI(2, seed=0)}).fit(docs, np.arange(40.0))
    fitted = PearlRegressor({"a": [0, 1]}, random_state=0, honest=False).fit(X[:, :2], y)
    with pytest.raises(DataError, match=r"column\(s\) \[1\] are not"):
        fitted.predict(np.array([[0.1, "high"]], dtype=object))


def test_an_int_random_state_seeds_the_steps_of_a_pipeline_learner():
    """A Pipeline learner block's unseeded steps get a seed derived from random_state (as
    Representations(seed=) gives them): two fits gave different predictions before."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.pipeline import make_pipeline
    from sklearn.random_projection import GaussianRandomProjection

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 6))
    y = X[:, 0] - X[:, 3] ** 2 + 0.3 * rng.normal(size=120)
    learner = make_pipeline(GaussianRandomProjection(4), TruncatedSVD(2, n_iter=1))
    model = PearlRegressor({"a": [0], "p": (learner, [1, 2, 3, 4, 5])}, random_state=0,
                           honest=False)
    first, again = clone(model).fit(X, y), clone(model).fit(X, y)
    np.testing.assert_array_equal(first.predict(X), again.predict(X))
    other = clone(model).set_params(random_state=1).fit(X, y)
    assert not np.allclose(first.predict(X), other.predict(X))
    # the seeds are the ones Representations(seed=0) gives the steps of a learner named p
    reps = pearl.Representations({"p": learner}, seed=0).fit(pd.DataFrame(X[:, 1:]))
    seeds = [step.random_state for _, step in first.learners_["p"].steps]
    assert seeds == [step.random_state for _, step in reps["p"].steps]
    assert all(isinstance(seed, int) for seed in seeds) and seeds[0] != seeds[1]
    assert learner[0].random_state is None and learner[1].random_state is None


def test_a_series_or_list_of_documents_as_x_gets_the_text_message():
    """X as a Series or a list of documents got numpy's bare "could not convert string to
    float"; a DataFrame with a text column got the DataError pointing to Representations."""
    docs = pd.Series(["good film", "bad film", "good plot", "a bad plot"] * 10, name="text")
    labels = np.array(["pos", "neg", "pos", "neg"] * 10)
    expected = r"X is a 1-D (Series|list) of text \(could not convert.*Representations.*LSI"
    for X in (docs, list(docs)):
        with pytest.raises(DataError, match=expected):
            PearlClassifier({"t": pearl.LSI(2, seed=0)}).fit(X, labels)
        with pytest.raises(DataError, match=expected):
            PearlRegressor().fit(X, np.arange(40.0))
    fitted = PearlRegressor(random_state=0, honest=False).fit(np.arange(40.0)[:, None],
                                                              np.arange(40.0))
    with pytest.raises(DataError, match=r"1-D Series of text"):
        fitted.predict(docs)
    # 1-D numbers keep scikit-learn's own error (its estimator checks expect it)
    with pytest.raises(ValueError, match="Expected 2D array") as raised:
        PearlRegressor().fit(np.arange(40.0), np.arange(40.0))
    assert not isinstance(raised.value, DataError)


@pytest.mark.parametrize("shuffled", [False, True])
def test_results_rows_carry_the_labels_of_x_also_without_the_zero_weight_rows(shuffled):
    """results_.resid (fittedvalues, cv_predictions) were indexed 0..n_kept-1: after a
    train_test_split (a shuffled index) or with rows of sample_weight 0 left out, aligning them
    with X by label gave rows their neighbours' values, silently."""
    rng = np.random.default_rng(0)
    n = 40
    X = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a0", "a1"],
                     index=rng.permutation(100)[:n] if shuffled else None)
    y = X["a0"] + rng.normal(size=n)
    weights = np.ones(n)
    weights[[3, 17]] = 0.0
    model = PearlRegressor({"a": ["a0", "a1"]}, random_state=0, honest=False, cv=3)
    model.fit(X, y, sample_weight=weights)
    results = model.results_
    kept = X.index[weights > 0]
    pd.testing.assert_index_equal(results.resid.index, kept)
    for values in (results.fittedvalues, results.cv_predictions):
        assert list(values.index) == list(kept)
    # the residual of each row of X, by label, is y less the model's prediction of that row
    np.testing.assert_allclose(results.resid, (y - model.predict(X))[kept], rtol=0, atol=1e-12)


def test_a_used_up_generator_of_splits_is_named():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 4)), rng.normal(size=60)
    model = PearlRegressor({"a": [0, 1], "b": [2, 3]}, random_state=0, honest=False,
                           cv=KFold(3).split(X))
    model.fit(X, y)
    with pytest.raises(OptionError, match=r"an iterator of \(train, test\) pairs is read once, "
                       r"and an earlier fit has used this one up; give a list of the pairs"):
        model.fit(X, y)
    listed = PearlRegressor({"a": [0, 1], "b": [2, 3]}, random_state=0, honest=False,
                            cv=list(KFold(3).split(X)))
    np.testing.assert_array_equal(listed.fit(X, y).predict(X), listed.fit(X, y).predict(X))
