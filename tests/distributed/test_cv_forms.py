"""``cv`` means the same on rows in memory and on dask rows, with the same messages (issue 27).

Before: dask took ``cv="fold"`` (a column) and the in-memory fit refused it; dask read
``cv="loo"`` as a column name; a ``cv`` array was dumped whole (1 425 characters) into the
dask path's error. :func:`pearlstats.design.folds.check_cv` now reads ``cv`` for both, and
:func:`pearlstats.in_memory_only.refuse_in_memory_only` refuses, with the reason, what
only the in-memory fit does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pearlstats as pearl
from pearlstats.exceptions import FoldError, OptionError

FORMULA = "y ~ x + block(a) + block(b)"
N = 240


def _data(n: int = N, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 3))
    x = rng.normal(size=n)
    y = a[:, 0] - b[:, 1] + 0.5 * x + rng.normal(size=n)
    return {"y": y, "x": x, "fold": np.arange(n) % 4, "a": a, "b": b}


def _in_memory(data: dict) -> tuple[pd.DataFrame, dict]:
    frame = pd.DataFrame({k: data[k] for k in ("y", "x", "fold")})
    return frame, {k: data[k] for k in "ab"}


def _on_dask(data: dict) -> tuple:
    """Three partitions of unequal size (100, 80, 60 rows)."""
    frame, blocks = _in_memory(data)
    lazy = dd.from_pandas(frame, npartitions=1).repartition(divisions=[0, 100, 180, N - 1])
    lengths = (100, 80, 60)
    return lazy, {k: da.from_array(v, chunks=(lengths, v.shape[1])) for k, v in blocks.items()}


def _message(data, blocks, **options) -> tuple[type, str]:
    with pytest.raises((FoldError, OptionError)) as caught:
        pearl.fit(FORMULA, data, blocks=blocks, seed=0, honest=False, **options)
    return caught.type, str(caught.value)


def test_a_fold_column_gives_the_fit_of_its_labels_in_memory():
    data = _data()
    frame, blocks = _in_memory(data)
    by_name = pearl.fit(FORMULA, frame, blocks=blocks, cv="fold", seed=0, honest=False)
    by_labels = pearl.fit(FORMULA, frame, blocks=blocks, cv=data["fold"], seed=0, honest=False)
    np.testing.assert_array_equal(by_name.folds, data["fold"])
    np.testing.assert_allclose(by_name.weights, by_labels.weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(by_name.cv_risk, by_labels.cv_risk, rtol=1e-12)
    # a dict's 1-D entries are columns too
    in_dict = pearl.fit(FORMULA, data, cv="fold", seed=0, honest=False)
    np.testing.assert_allclose(in_dict.weights, by_labels.weights, rtol=0, atol=1e-12)


def test_a_fold_column_gives_the_same_fit_on_dask_and_in_memory():
    data = _data()
    frame, blocks = _in_memory(data)
    res_m = pearl.fit(FORMULA, frame, blocks=blocks, cv="fold", seed=0, honest=False)
    lazy, lazy_blocks = _on_dask(data)
    res_d = pearl.fit(FORMULA, lazy, blocks=lazy_blocks, cv="fold", seed=0)
    np.testing.assert_allclose(res_d.weights, res_m.weights, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-8)


@pytest.mark.parametrize("cv", [1, 0, True, 2.5, None, "group", "Fold"],
                         ids=lambda cv: repr(cv))
def test_a_bad_cv_gets_the_same_error_on_both_paths(cv):
    data = _data()
    frame, blocks = _in_memory(data)
    in_memory = _message(frame, blocks, cv=cv)
    on_dask = _message(*_on_dask(data), cv=cv)
    assert in_memory == on_dask
    assert in_memory[0] is FoldError
    assert f"cv={cv!r}" in in_memory[1]


def test_loo_is_leave_one_out_in_memory_and_refused_with_its_reason_on_dask():
    data = _data(n=40)
    frame, blocks = _in_memory(data)
    frame = frame.assign(loo=np.arange(40) % 2)  # a column named "loo" does not make it one
    res = pearl.fit(FORMULA, frame, blocks=blocks, cv="loo", seed=0, honest=False)
    assert res.n_folds == 40
    lazy = dd.from_pandas(frame, npartitions=2)
    lazy_blocks = {k: da.from_array(v, chunks=(20, -1)) for k, v in blocks.items()}
    kind, message = _message(lazy, lazy_blocks, cv="loo")
    assert kind is OptionError
    assert "not available for dask data yet: cv='loo' (leave-one-out needs" in message


def test_fold_labels_on_dask_are_refused_briefly_naming_the_column_alternative():
    data = _data()
    labels = np.arange(N) % 4
    kind, message = _message(*_on_dask(data), cv=labels)
    assert kind is OptionError
    assert "cv=<ndarray of 240 fold labels>" in message and "cv='fold'" in message
    assert len(message) < 400  # was 1 425 characters with the array printed whole


def test_every_refused_option_is_named_in_one_message():
    data = _data()
    lazy, blocks = _on_dask(data)
    kind, message = _message(lazy, blocks, cv="loo", missing="drop", cv_repeats=1,
                             loss="absolute")
    assert kind is OptionError
    for named in ("cv='loo'", "missing='drop'", "loss='absolute'"):
        assert named in message, named


def test_repeated_folds_refuse_given_labels_without_printing_them():
    data = _data()
    frame, blocks = _in_memory(data)
    kind, message = _message(frame, blocks, cv=np.arange(N) % 4, cv_repeats=2)
    assert kind is OptionError
    assert "got cv=<ndarray of 240 fold labels>" in message


@pytest.mark.parametrize("labels", [
    np.array(["d", "b", "a", "c"], dtype=object),  # strings, not in sorted order
    np.array([4, 2, 1, 3]),  # integers that are not 0..K-1 (dask took only 0..K-1)
], ids=["strings", "one-based"])
def test_any_labels_in_a_fold_column_give_the_in_memory_fit_on_dask(labels):
    data = _data()
    data["fold"] = labels[np.arange(N) % 4]
    frame, blocks = _in_memory(data)
    res_m = pearl.fit(FORMULA, frame, blocks=blocks, cv="fold", seed=0, honest=False)
    reference = pearl.fit(FORMULA, frame, blocks=blocks, cv=np.arange(N) % 4, seed=0,
                          honest=False)
    lazy, lazy_blocks = _on_dask(data)
    res_d = pearl.fit(FORMULA, lazy, blocks=lazy_blocks, cv="fold", seed=0)
    # fold k is the k-th label in sorted order on both paths
    order = np.argsort(labels)
    np.testing.assert_array_equal(res_m.folds, np.argsort(order)[np.arange(N) % 4])
    np.testing.assert_allclose(res_m.cv_risk, reference.cv_risk, rtol=1e-12)
    np.testing.assert_allclose(res_d.weights, res_m.weights, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-8)


def test_a_fold_column_with_one_label_gets_the_same_error_on_both_paths():
    data = _data()
    data["fold"] = np.full(N, 7)
    frame, blocks = _in_memory(data)
    in_memory = _message(frame, blocks, cv="fold")
    assert in_memory == _message(*_on_dask(data), cv="fold")
    assert in_memory == (FoldError, "cv fold labels have a single value 7; cross-validation "
                                    "needs at least 2 folds")


def test_splitter_objects_and_groups_are_refused_on_dask_by_name():
    sklearn = pytest.importorskip("sklearn.model_selection")
    frame, blocks = _on_dask(_data())
    with pytest.raises(OptionError, match=r"cv=GroupKFold\(\.\.\.\) \(a splitter object"):
        pearl.fit(FORMULA, frame, blocks=blocks, cv=sklearn.GroupKFold(3), groups="fold", seed=0)
    with pytest.raises(OptionError, match=r"groups= \(dealing groups"):
        pearl.fit(FORMULA, frame, blocks=blocks, cv=4, groups="fold", seed=0)
