"""``fit`` with splitter objects and ``groups=``: folds, out-of-fold predictions, honest risk."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.exceptions import FoldError, OptionError
from pearlstats.nested import nested_cross_validation
from pearlstats.results.bootstrap import bootstrap_resample, subsample

model_selection = pytest.importorskip("sklearn.model_selection")

F = "y ~ block(a) + block(b) + x"


@pytest.fixture(scope="module")
def grouped():
    rng = np.random.default_rng(11)
    n = 150
    g = rng.integers(0, 21, n)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 3))
    x = rng.normal(size=n)
    y = a[:, 0] - 0.5 * b[:, 1] + 0.3 * x + rng.normal(size=21)[g] + rng.normal(size=n)
    frame = pd.DataFrame({"y": y, "x": x, "g": g.astype(str)})
    return frame, {"a": a, "b": b}


def test_group_kfold_predictions_equal_per_fold_statsmodels_fits(grouped):
    frame, blocks = grouped
    res = pearl.fit(F, frame, blocks=blocks, cv=model_selection.GroupKFold(4), groups="g",
                    honest=False, seed=0)
    splits = list(model_selection.GroupKFold(4).split(frame, groups=frame["g"]))
    X = np.column_stack([np.ones(len(frame)), blocks["a"], frame["x"]])
    oof = np.empty(len(frame))
    for train, test in splits:
        oof[test] = sm.OLS(frame["y"].to_numpy()[train], X[train]).fit().predict(X[test])
    # well-conditioned 4-column least squares on >= 100 rows: agreement to rounding (~1e-13)
    np.testing.assert_allclose(res.cv_predictions["a"].to_numpy(), oof, rtol=0, atol=1e-9)


def test_leave_one_group_out_equals_a_column_of_group_labels(grouped):
    frame, blocks = grouped
    by_splitter = pearl.fit(F, frame, blocks=blocks, cv=model_selection.LeaveOneGroupOut(),
                            groups="g", honest=False, seed=0)
    by_column = pearl.fit(F, frame, blocks=blocks, cv="g", honest=False, seed=0)
    np.testing.assert_array_equal(by_splitter.folds, by_column.folds)
    np.testing.assert_allclose(by_splitter.weights, by_column.weights, rtol=0, atol=1e-12)


def test_groups_with_k_folds_deal_whole_groups_and_honest_keeps_them_whole(grouped):
    frame, blocks = grouped
    res = pearl.fit(F, frame, blocks=blocks, cv=5, groups=frame["g"], honest=3, seed=2)
    assert res.n_folds == 5
    outer = nested_cross_validation(res.stages, outer=3, seed=2).outer_folds
    for labels in (res.folds, outer):
        for g in frame["g"].unique():
            assert np.unique(labels[(frame["g"] == g).to_numpy()]).size == 1
    sizes = frame.groupby("g").size()
    counts = np.bincount(res.folds)
    assert counts.max() - counts.min() <= sizes.max()  # the dealing's bound (design/splitters)
    assert np.isfinite(res.honest.loc["PEARL", "risk"])


def test_groups_series_is_matched_by_index_label(grouped):
    frame, blocks = grouped
    shuffled = frame["g"].sample(frac=1.0, random_state=0)
    a = pearl.fit(F, frame, blocks=blocks, cv=4, groups=shuffled, honest=False, seed=1)
    b = pearl.fit(F, frame, blocks=blocks, cv=4, groups=frame["g"].to_numpy(), honest=False,
                  seed=1)
    np.testing.assert_array_equal(a.folds, b.folds)


@pytest.mark.parametrize("cv, groups, fragment", [
    ("loo", "g", "LeaveOneGroupOut"),
    ("g", "g", "fold labels"),
    (5, "nope", "names no column"),
])
def test_groups_with_a_cv_that_cannot_use_them_is_refused(grouped, cv, groups, fragment):
    frame, blocks = grouped
    with pytest.raises(FoldError, match=fragment):
        pearl.fit(F, frame, blocks=blocks, cv=cv, groups=groups, honest=False, seed=0)


def test_repeats_and_nested_se_with_groups_are_refused(grouped):
    frame, blocks = grouped
    with pytest.raises(OptionError, match="cv_repeats=2 is not available with groups"):
        pearl.fit(F, frame, blocks=blocks, cv=5, groups="g", cv_repeats=2, seed=0)
    # the refusal names what the user gave: a splitter object, or groups=
    with pytest.raises(OptionError, match="honest_se='nested' is not available.*a splitter "
                                          "object or groups="):
        pearl.fit(F, frame, blocks=blocks, cv=model_selection.GroupKFold(3), groups="g",
                  honest_se="nested", seed=0)
    with pytest.raises(OptionError, match="a splitter object or groups="):
        pearl.fit(F, frame, blocks=blocks, cv=5, groups="g", honest_se="nested", seed=0)


def test_cluster_bootstrap_draws_whole_groups_that_keep_their_folds(grouped):
    frame, blocks = grouped
    res = pearl.fit(F, frame, blocks=blocks, cv=4, groups="g", honest=False, seed=0)
    codes = res.stages.groups
    sizes = np.bincount(codes)
    for b in range(5):
        rows, folds = bootstrap_resample(len(codes), res.stages.cv_spec, seed=0, b=b,
                                         state_folds=res.folds, groups=codes)
        drawn = np.bincount(codes[rows], minlength=sizes.size)
        assert np.all(drawn % sizes == 0)  # every group drawn whole (0, 1, 2, ... times)
        assert (drawn // sizes).sum() == sizes.size  # G groups drawn with replacement
        # each row keeps its fold (renumbered 0.. over the folds drawn)
        np.testing.assert_array_equal(folds, np.unique(res.folds[rows], return_inverse=True)[1])
    assert res.weight_uncertainty(n_resamples=4, seed=1).shape[0] == len(res.weights)


def test_subsamples_draw_whole_groups(grouped):
    frame, blocks = grouped
    res = pearl.fit(F, frame, blocks=blocks, cv=4, groups="g", honest=False, seed=0)
    codes = res.stages.groups
    for b in range(5):
        rows, folds = subsample(len(codes), 60, res.stages.cv_spec, seed=0, b=b,
                                state_folds=res.folds, groups=codes)
        chosen = np.unique(codes[rows])
        np.testing.assert_array_equal(rows, np.flatnonzero(np.isin(codes, chosen)))
        assert chosen.size == round(21 * 60 / len(codes))  # G m / n of the G = 21 groups
        # each row keeps its fold (renumbered 0.. over the folds drawn)
        np.testing.assert_array_equal(folds, np.unique(res.folds[rows], return_inverse=True)[1])


def test_a_splitter_built_for_the_rows_before_missing_drop_says_so(grouped):
    frame, blocks = grouped
    n = len(frame)
    holes = frame.copy()
    holes.loc[[3, 77], "x"] = np.nan  # missing="drop" removes these 2 rows
    # PredefinedSplit of all 150 rows given; the first 30 never tested (-1)
    test_fold = np.r_[np.full(30, -1), np.arange(n - 30) % 4]
    with pytest.raises(FoldError) as caught:
        pearl.fit(F, holes, blocks=blocks, cv=model_selection.PredefinedSplit(test_fold),
                  missing="drop", honest=False, seed=0)
    message = str(caught.value)
    assert f"outside the {n - 2} rows 0..{n - 3}" in message
    assert (f"missing='drop' removed 2 of the {n} rows given (rows 3, 77), so the fit has "
            f"{n - 2}") in message
    assert "in cv= labels -1 is a fold like any other" in message
    # what it advises, followed literally, gives the splits meant: scikit-learn's split of
    # the rows kept, with the 29 kept rows coded -1 never tested
    advised = re.search(r"PredefinedSplit\(np\.delete\(test_fold, (\[[\d, ]+\])\)\)", message)
    kept_fold = np.delete(test_fold, eval(advised.group(1)))
    res = pearl.fit(F, holes, blocks=blocks, cv=model_selection.PredefinedSplit(kept_fold),
                    missing="drop", honest=False, seed=0)
    expected = np.full(n - 2, -1)
    splitter = model_selection.PredefinedSplit(np.delete(test_fold, [3, 77]))
    for k, (_, test) in enumerate(splitter.split(np.zeros((n - 2, 1)))):
        expected[test] = k
    np.testing.assert_array_equal(res.folds, expected)
    assert (res.folds == -1).sum() == 29 and res.folds.max() == 3
    # the labels of a partition (no -1) as cv= are the same folds
    labels = np.arange(n) % 4
    res = pearl.fit(F, holes, blocks=blocks, cv=labels, missing="drop", honest=False, seed=0)
    np.testing.assert_array_equal(res.folds, np.delete(labels, [3, 77]))


@pytest.mark.parametrize("splits", [
    lambda frame: list(model_selection.KFold(4).split(frame)),  # unequal test sizes (150 / 4)
    lambda frame: list(model_selection.KFold(2).split(frame)),  # equal sizes: a 3-d array
    lambda frame: tuple(model_selection.KFold(3).split(frame)),
    lambda frame: model_selection.KFold(3).split(frame),  # the generator itself
], ids=["ragged list", "equal list", "tuple", "generator"])
def test_pairs_are_refused_by_fit_with_what_to_give_instead(grouped, splits):
    frame, blocks = grouped
    with pytest.raises(FoldError, match=r"\(train, test\) pairs|of splits") as caught:
        pearl.fit(F, frame, blocks=blocks, cv=splits(frame), honest=False, seed=0)
    message = str(caught.value)
    assert "which pearl.fit does not take" in message
    assert "splitter object itself" in message and "one fold label per row" in message
    assert "PearlRegressor" in message  # where pairs are taken


class _Purged:
    """K contiguous test blocks, each trained on the rows more than `embargo` rows away."""

    def __init__(self, k=4, embargo=3):
        self.k, self.embargo = k, embargo

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.k

    def split(self, X, y=None, groups=None):
        m = len(X)
        edges = np.linspace(0, m, self.k + 1).astype(int)
        for low, high in zip(edges[:-1], edges[1:]):
            yield (np.r_[0:max(low - self.embargo, 0), min(high + self.embargo, m):m],
                   np.arange(low, high))


def test_a_purged_splitter_is_refused_for_honest_for_what_it_is(grouped):
    frame, blocks = grouped
    splitter = _Purged()
    # the premise, by a hand loop: every row tested exactly once, training sets purged
    tested = np.concatenate([test for _, test in splitter.split(frame)])
    np.testing.assert_array_equal(np.sort(tested), np.arange(len(frame)))
    assert all(len(train) < len(frame) - len(test) for train, test in splitter.split(frame))
    res = pearl.fit(F, frame, blocks=blocks, cv=splitter, honest=3, seed=0)
    assert ("cv=_Purged(...) tests every row once but trains a split on fewer than all the rows "
            "it does not test (a purge or an embargo)") in res.honest_failure
    assert "tests some rows only" not in res.honest_failure
    with pytest.raises(pearl.OptionError, match="_Purged, which tests every row once but "
                                                "trains a split on fewer"):
        res.weight_uncertainty(n_resamples=2)


@pytest.mark.parametrize("splitter, example", [(model_selection.KFold, "KFold(5)"),
                                               (model_selection.LeaveOneGroupOut,
                                                "LeaveOneGroupOut()")])
def test_a_splitter_class_asks_for_an_instance(grouped, splitter, example):
    frame, blocks = grouped
    with pytest.raises(FoldError, match=rf"cv={splitter.__name__} is the splitter class, not a "
                                        rf"splitter; pass an instance, e.g. {re.escape(example)}$"):
        pearl.fit(F, frame, blocks=blocks, cv=splitter, honest=False, seed=0)


@pytest.mark.parametrize("index, named", [(None, "row 7"), ("labels", "row labelled 'r7'")])
def test_a_missing_group_after_missing_drop_is_named_as_given(grouped, index, named):
    frame, blocks = grouped
    holes = frame.copy()
    holes.loc[2, "x"] = np.nan  # missing="drop" removes row 2: row 7 is the 7th row kept
    holes["g"] = holes["g"].astype(object)
    holes.loc[7, "g"] = None
    if index == "labels":
        holes.index = [f"r{i}" for i in range(len(holes))]
    for cv in (model_selection.GroupKFold(3), 3):
        with pytest.raises(FoldError, match=rf"groups are missing at {named}; give every row"):
            pearl.fit(F, holes, blocks=blocks, cv=cv, groups="g", missing="drop", honest=False,
                      seed=0)


def test_folds_of_whole_groups_lacking_a_class_get_advice_for_groups(grouped):
    frame, blocks = grouped
    codes = np.unique(frame["g"], return_inverse=True)[1]
    folds = pearl.fit(F, frame, blocks=blocks, cv=3, groups="g", honest=False, seed=0).folds
    # class 1 in two groups that the dealt folds put together: fold k trains without it
    together = [g for g in range(21) if folds[codes == g][0] == folds[codes == 0][0]][:2]
    binary = frame.assign(y=np.isin(codes, together).astype(int))
    with pytest.raises(FoldError) as caught:
        pearl.fit(F, binary, blocks=blocks, cv=3, groups="g", family="binomial", honest=False,
                  seed=0)
    message = str(caught.value)
    assert "an int cv, which stratifies" not in message
    assert "cv=StratifiedGroupKFold(K)" in message and "does not stratify" in message
    # class 1 in one group: no folds of whole groups hold it outside that group's fold
    single = frame.assign(y=(codes == 0).astype(int))
    for cv in (3, model_selection.GroupKFold(3), model_selection.LeaveOneGroupOut()):
        with pytest.raises(FoldError, match="class 1 is found in a single group, so the fold "
                                            "that tests that group trains without it"):
            pearl.fit(F, single, blocks=blocks, cv=cv, groups="g", family="binomial",
                      honest=False, seed=0)


def test_a_splitter_that_ignores_the_groups_gets_the_advice_for_rows():
    # KFold and PredefinedSplit split rows whatever groups= says: their folds are not whole
    # groups, so advice about dealing groups (StratifiedGroupKFold, merging a group's class)
    # would not fit; they get the advice a fit without groups= gets
    rng = np.random.default_rng(0)
    n = 60
    data = {"y": np.r_[np.zeros(40), np.ones(20)].astype(int), "a": rng.normal(size=(n, 2))}
    groups = np.arange(n) // 3
    for cv in (model_selection.KFold(3), model_selection.PredefinedSplit(np.arange(n) * 3 // n)):
        messages = []
        for given in (None, groups):
            with pytest.raises(FoldError) as caught:
                pearl.fit("y ~ block(a)", data, family="binomial", cv=cv, groups=given,
                          honest=False, seed=0)
            messages.append(str(caught.value))
        assert messages[0] == messages[1]
        assert "StratifiedGroupKFold" not in messages[1]


def _sklearn_folds(splitter, frame, groups=None):
    folds = np.full(len(frame), -1)
    for k, (_, test) in enumerate(splitter.split(np.zeros((len(frame), 1)), None, groups)):
        folds[test] = k
    return folds


@pytest.mark.parametrize("make, grouped_by", [
    (lambda state: model_selection.KFold(4, shuffle=True, random_state=state), None),
    (lambda state: model_selection.GroupKFold(4, shuffle=True, random_state=state), "g"),
], ids=["KFold", "GroupKFold"])
def test_a_shuffling_splitter_without_random_state_is_seeded_by_the_fit(grouped, make,
                                                                        grouped_by):
    frame, blocks = grouped
    splitter = make(None)
    fits = [pearl.fit(F, frame, blocks=blocks, cv=splitter, groups=grouped_by, honest=False,
                      seed=3) for _ in range(2)]
    groups = None if grouped_by is None else frame[grouped_by]
    # scikit-learn's own split with random_state=seed
    np.testing.assert_array_equal(fits[0].folds, _sklearn_folds(make(3), frame, groups))
    np.testing.assert_array_equal(fits[1].folds, fits[0].folds)
    np.testing.assert_array_equal(fits[1].weights, fits[0].weights)
    assert splitter.random_state is None  # the user's object is left as given
    other = pearl.fit(F, frame, blocks=blocks, cv=splitter, groups=grouped_by, honest=False,
                      seed=4)
    np.testing.assert_array_equal(other.folds, _sklearn_folds(make(4), frame, groups))


def test_a_random_state_instance_keeps_scikit_learns_semantics(grouped):
    frame, blocks = grouped
    splitter = model_selection.KFold(4, shuffle=True, random_state=np.random.RandomState(0))
    res = pearl.fit(F, frame, blocks=blocks, cv=splitter, honest=False, seed=3)
    reference = model_selection.KFold(4, shuffle=True, random_state=np.random.RandomState(0))
    np.testing.assert_array_equal(res.folds, _sklearn_folds(reference, frame))


@pytest.mark.parametrize("options", [dict(cv=model_selection.KFold(2)),
                                     dict(cv=2, groups="g")], ids=["KFold(2)", "cv=2 groups"])
def test_honest_of_two_given_folds_advises_more_folds_not_more_outer_folds(grouped, options):
    frame, blocks = grouped
    res = pearl.fit(F, frame, blocks=blocks, honest=5, seed=0, **options)
    with pytest.warns(pearl.PearlWarning):
        assert res.honest is None
    assert "honest=3 or more" not in res.honest_failure  # honest=5 was given, capped at 2
    assert ("the outer folds are whole folds of the fit's 2 (at most 2, whatever honest=), and "
            "each outer training set keeps the other 1 as its inner folds: fit with more folds "
            "(cv of 3 or more)") in res.honest_failure


def test_honest_of_a_time_ordered_predefined_split_says_it_cannot_be_re_run(grouped):
    frame, blocks = grouped
    holdout = model_selection.PredefinedSplit(np.r_[np.full(100, -1), np.zeros(50, int)])
    res = pearl.fit(F, frame, blocks=blocks, cv=holdout, honest=3, seed=0)
    with pytest.warns(pearl.PearlWarning):
        assert res.honest is None
    assert "fewer outer folds" not in res.honest_failure
    assert ("cv=PredefinedSplit(...) indexes the fit's rows, so it cannot be re-run on an outer "
            "training set's rows") in res.honest_failure


def test_the_note_of_a_purged_splitter_says_the_purge_not_untested_rows(grouped):
    frame, blocks = grouped
    res = pearl.fit(F, frame, blocks=blocks, cv=_Purged(), honest=False, seed=0)
    text = " ".join(str(res.summary()).split())
    assert ("Cross-validation by _Purged tests every row once but trains a split on fewer than "
            "all the rows it does not test (a purge or an embargo): the candidates are refitted "
            f"on all {len(frame)} rows.") in text
    assert "never tested" not in text


def test_honest_with_a_partition_splitter_keeps_its_folds_as_documented(grouped):
    frame, blocks = grouped
    res = pearl.fit(F, frame, blocks=blocks, cv=model_selection.GroupKFold(3), groups="g",
                    honest=5, seed=0)
    text = " ".join(str(res.summary()).split())
    assert res.honest_outer_folds == 3  # honest=5 dealt whole folds of 3
    # each outer training set keeps the other 2 of the fit's folds, as the note says
    nested = nested_cross_validation(res.stages, outer=5, seed=0)
    for k in range(nested.n_outer):
        rows = nested.training_rows(k)
        np.testing.assert_array_equal(
            nested.inner_folds[k], np.unique(res.folds[rows], return_inverse=True)[1])
    assert ("outer folds are whole folds of the fit's 3, at most 3, and its inner folds the "
            "other folds of the fit, as given: a partition splitter or groups dealt into folds "
            "is not re-run") in text
