"""Splitter objects and groups dealt into folds, checked against scikit-learn's own splits."""

from __future__ import annotations

import numpy as np
import pytest

from pearlstats.design.splitters import deal_groups, group_codes, resolve_splits, split_rows
from pearlstats.exceptions import FoldError

model_selection = pytest.importorskip("sklearn.model_selection")

N = 90
RNG = np.random.default_rng(5)
GROUPS = RNG.integers(0, 17, N)
CLASSES = RNG.integers(0, 2, N).astype(float)


def _partition_splitters():
    test_fold = np.arange(N) % 4
    return [
        model_selection.GroupKFold(n_splits=4),
        model_selection.StratifiedGroupKFold(n_splits=3, shuffle=True, random_state=2),
        model_selection.PredefinedSplit(test_fold),
        model_selection.LeaveOneGroupOut(),
        model_selection.KFold(5, shuffle=True, random_state=1),
    ]


@pytest.mark.parametrize("splitter", _partition_splitters(), ids=lambda s: type(s).__name__)
def test_partition_splitters_give_scikit_learns_folds(splitter):
    folds = resolve_splits(splitter, GROUPS, CLASSES, seed=0)
    expected = list(splitter.split(np.zeros((N, 1)), CLASSES, GROUPS))
    assert int(folds.max()) + 1 == len(expected)
    for k, (_, test) in enumerate(expected):
        np.testing.assert_array_equal(np.flatnonzero(folds == k), np.sort(test))
    # no group is split between folds (PredefinedSplit and KFold ignore groups)
    if type(splitter).__name__ not in ("PredefinedSplit", "KFold"):
        assert all(np.unique(folds[GROUPS == g]).size == 1 for g in np.unique(GROUPS))


def test_leave_one_group_out_is_one_fold_per_group():
    folds = resolve_splits(model_selection.LeaveOneGroupOut(), GROUPS, CLASSES, seed=0)
    # group labels sorted, as a column of fold labels numbers its folds
    np.testing.assert_array_equal(folds, group_codes(GROUPS))


def test_time_series_split_keeps_time_order_and_its_test_rows():
    splits = split_rows(model_selection.TimeSeriesSplit(4, gap=2), N, CLASSES, None)
    expected = list(model_selection.TimeSeriesSplit(4, gap=2).split(np.zeros((N, 1))))
    for k, (train, test) in enumerate(expected):
        np.testing.assert_array_equal(splits.train[k], train)
        np.testing.assert_array_equal(np.flatnonzero(splits.folds == k), test)
        assert splits.train[k].max() < test.min()
    assert splits.time_ordered and not splits.partition
    np.testing.assert_array_equal(splits.tested, np.concatenate([t for _, t in expected]))


def test_splitter_that_is_not_a_partition_keeps_its_splits():
    splitter = model_selection.TimeSeriesSplit(3)
    splits = resolve_splits(splitter, None, CLASSES, seed=0)
    assert splits.splitter is splitter and splits.groups is None
    assert (splits.folds[: N - 3 * (N // 4)] == -1).all()


def test_overlapping_test_sets_are_refused_by_name():
    with pytest.raises(FoldError, match=r"ShuffleSplit.*more than one split"):
        resolve_splits(model_selection.ShuffleSplit(4, test_size=0.3, random_state=0), None,
                       CLASSES, seed=0)


def test_group_splitter_without_groups_names_the_argument():
    with pytest.raises(FoldError, match=r"GroupKFold.*could not split.*give groups="):
        resolve_splits(model_selection.GroupKFold(3), None, CLASSES, seed=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dealt_groups_stay_whole_and_balanced(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, 24)
    codes = rng.permutation(np.repeat(np.arange(24), sizes))
    folds = deal_groups(codes, 5, seed=seed)
    assert all(np.unique(folds[codes == g]).size == 1 for g in range(24))
    counts = np.bincount(folds, minlength=5)
    # Bound: the last group dealt to the largest fold went to the then smallest fold, so the
    # largest fold exceeds the smallest by at most one group's rows (the largest group's).
    assert counts.max() - counts.min() <= sizes.max()
    # deterministic with the seed
    np.testing.assert_array_equal(folds, deal_groups(codes, 5, seed=seed))


def test_dealt_groups_equal_sizes_make_equal_folds():
    codes = np.repeat(np.arange(20), 3)
    assert np.bincount(deal_groups(codes, 4, seed=0)).tolist() == [15, 15, 15, 15]


def test_fewer_groups_than_folds_is_refused():
    with pytest.raises(FoldError, match="only 3 groups"):
        deal_groups(np.repeat(np.arange(3), 4), 5)
    with pytest.raises(FoldError, match="a single group.*at least 2 groups"):
        deal_groups(np.zeros(12, dtype=np.intp), 5)


def test_missing_group_is_refused_by_position():
    groups = np.array(["a", None, "b", "a"], dtype=object)
    with pytest.raises(FoldError, match="missing at row 1"):
        resolve_splits(2, groups, np.zeros(4), seed=0)


def test_a_splitter_failure_unrelated_to_groups_gets_no_groups_hint():
    # every class has fewer rows than the 5 splits: StratifiedKFold's own error, about classes
    y = np.repeat([0.0, 1.0], 3)
    with pytest.raises(FoldError, match="StratifiedKFold.*could not split") as raised:
        split_rows(model_selection.StratifiedKFold(5), len(y), y, None)
    assert "groups" not in str(raised.value)


class _Yields:
    """A splitter of one's own that yields what it is given."""

    def __init__(self, items):
        self.items = items

    def get_n_splits(self, X=None, y=None, groups=None):
        return len(self.items)

    def split(self, X, y=None, groups=None):
        return iter(self.items)


@pytest.mark.parametrize("items, got", [
    ([(np.arange(20, 40),), (np.arange(20),)], "a 1-tuple"),
    ([(np.arange(20), np.arange(20, 40), None), (np.arange(20, 40), np.arange(20), None)],
     "a 3-tuple"),
    ([None, None], "NoneType"),
], ids=["1-tuples", "3-tuples", "None"])
def test_a_splitter_that_does_not_yield_pairs_is_refused_by_the_contract(items, got):
    with pytest.raises(FoldError, match=rf"cv=_Yields\(\.\.\.\) split 0 gave {got}; a splitter's "
                                        r"split\(\) yields one \(train, test\) pair of index"):
        split_rows(_Yields(items), 40, np.zeros(40), None)
