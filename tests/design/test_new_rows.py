"""Designs for new rows, pandas alignment and argument checks (issue 13, classes 1, 2, 5, 6).

Every number is checked against a direct statsmodels fit of the same single
candidate (a formula with one block has one candidate, whose weight is 1).
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.stages import worker_count

N = 60


def _rows(seed: int = 0, n: int = N) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    x = rng.normal(size=n)
    frame = pd.DataFrame(
        {"my x": x, "y": 1.0 + 2.0 * x + a[:, 0] - b[:, 1] + rng.normal(scale=0.3, size=n)}
    )
    return frame, a, b


def _ols_prediction(train_X, y, new_X) -> np.ndarray:
    return sm.OLS(y, sm.add_constant(train_X, has_constant="add")).fit().predict(
        sm.add_constant(new_X, has_constant="add"))


# ---- class 1: covariates at predict come from the new rows -----------------------------------
def test_quoted_covariate_is_read_from_the_new_rows():
    frame, a, _ = _rows()
    res = pearl.fit('y ~ Q("my x") + block(a)', frame.iloc[:40], blocks={"a": a[:40]}, seed=0)
    new = frame.iloc[40:].reset_index(drop=True)
    got = res.predict(new, blocks={"a": a[40:]})
    train_X = np.column_stack([frame["my x"][:40], a[:40]])
    new_X = np.column_stack([frame["my x"][40:], a[40:]])
    np.testing.assert_allclose(got, _ols_prediction(train_X, frame["y"][:40], new_X), atol=1e-10)
    assert np.ptp(got - res.predict(new.assign(**{"my x": 0.0}), blocks={"a": a[40:]})) > 0.1


def test_namespace_covariate_is_taken_from_the_new_rows_and_required_there():
    frame, a, _ = _rows()
    z = frame["my x"].to_numpy()[:40]
    train = frame.iloc[:40].drop(columns="my x")
    res = pearl.fit("y ~ z + block(a)", train, blocks={"a": a[:40]}, seed=0)
    new = pd.DataFrame({"z": frame["my x"].to_numpy()[40:]})
    expected = _ols_prediction(np.column_stack([z, a[:40]]), train["y"],
                               np.column_stack([new["z"], a[40:]]))
    np.testing.assert_allclose(res.predict(new, blocks={"a": a[40:]}), expected, atol=1e-10)
    with pytest.raises(pearl.DataError, match=r"lack the column\(s\) \['z'\]"):
        res.predict(pd.DataFrame({"w": np.zeros(20)}), blocks={"a": a[40:]})


def test_stateful_transform_uses_the_training_centre_for_new_rows():
    frame, a, _ = _rows()
    data = frame.rename(columns={"my x": "x"})
    res = pearl.fit("y ~ center(x) + block(a)", data.iloc[:40], blocks={"a": a[:40]}, seed=0)
    centre = data["x"][:40].mean()
    train_X = np.column_stack([data["x"][:40] - centre, a[:40]])
    new_X = np.column_stack([data["x"][40:] - centre, a[40:]])
    np.testing.assert_allclose(res.predict(data.iloc[40:], blocks={"a": a[40:]}),
                               _ols_prediction(train_X, data["y"][:40], new_X), atol=1e-10)


def test_quoted_covariate_result_pickles_and_predicts_identically():
    frame, a, _ = _rows()
    res = pearl.fit('y ~ Q("my x") + block(a)', frame.iloc[:40], blocks={"a": a[:40]}, seed=0)
    restored = pickle.loads(pickle.dumps(res))
    new = frame.iloc[40:]
    np.testing.assert_array_equal(restored.predict(new, blocks={"a": a[40:]}),
                                  res.predict(new, blocks={"a": a[40:]}))


def test_missing_drop_sees_nan_in_a_quoted_column():
    frame, a, b = _rows()
    holed = frame.copy()
    holed.loc[3, "my x"] = np.nan
    res = pearl.fit('y ~ Q("my x") + block(a) + block(b)', holed, blocks={"a": a, "b": b},
                    missing="drop", seed=0)
    keep = np.arange(N) != 3
    clean = pearl.fit('y ~ Q("my x") + block(a) + block(b)', frame[keep].reset_index(drop=True),
                      blocks={"a": a[keep], "b": b[keep]}, seed=0)
    assert res.dropped_rows.tolist() == [3]
    np.testing.assert_array_equal(res.weights, clean.weights)


def test_object_column_of_numbers_at_predict_is_read_as_numbers():
    frame, a, _ = _rows()
    data = frame.rename(columns={"my x": "x"})
    res = pearl.fit("y ~ x + block(a)", data.iloc[:40], blocks={"a": a[:40]}, seed=0)
    new = data.iloc[40:].reset_index(drop=True)
    np.testing.assert_array_equal(res.predict(new.astype({"x": object}), blocks={"a": a[40:]}),
                                  res.predict(new, blocks={"a": a[40:]}))
    with pytest.raises(pearl.DataError, match="column 'x' was numeric"):
        res.predict(new.assign(x="seven"), blocks={"a": a[40:]})


@pytest.mark.parametrize("kind", [bool, object])
def test_boolean_column_for_a_numeric_covariate_is_read_as_one_and_zero(kind):
    # patsy treats booleans as categories and failed in its own error message:
    # AttributeError: 'DataFrame' object has no attribute 'dtype'
    frame, a, _ = _rows()
    data = frame.rename(columns={"my x": "x"})
    res = pearl.fit("y ~ x + block(a)", data.iloc[:40], blocks={"a": a[:40]}, seed=0)
    flags = (data["x"].iloc[40:] > 0).reset_index(drop=True)
    prediction = res.predict(pd.DataFrame({"x": flags.astype(kind)}), blocks={"a": a[40:]})
    train = np.column_stack([data["x"].iloc[:40], a[:40]])
    direct = _ols_prediction(train, data["y"].iloc[:40], np.column_stack([flags, a[40:]]))
    np.testing.assert_allclose(prediction, direct, rtol=1e-10)


# ---- class 2: pandas labels say which row is which -------------------------------------------
def test_dataframe_block_is_aligned_to_the_data_by_index_label():
    frame, a, b = _rows()
    frame.index = [f"r{i}" for i in range(N)]
    order = np.random.default_rng(1).permutation(N)
    shuffled = pd.DataFrame(a, index=frame.index).iloc[order]
    res = pearl.fit("y ~ block(a) + block(b)", frame, blocks={"a": shuffled, "b": b}, seed=0)
    aligned = pearl.fit("y ~ block(a) + block(b)", frame, blocks={"a": a, "b": b}, seed=0)
    np.testing.assert_array_equal(res.weights, aligned.weights)
    np.testing.assert_array_equal(res.cv_predictions, aligned.cv_predictions)


def test_dataframe_block_with_other_labels_is_an_error_naming_them():
    frame, a, b = _rows()
    block = pd.DataFrame(a, index=range(100, 100 + N))
    with pytest.raises(pearl.BlockError, match=r"block 'a'.*data rows \[0, 1, 2, 3, 4\]"):
        pearl.fit("y ~ block(a) + block(b)", frame, blocks={"a": block, "b": b}, seed=0)


def test_dataframe_blocks_are_aligned_to_the_labels_of_a_dicts_series():
    # y given as a labelled Series in a dict: its labels, not the block's order, say which
    # response belongs to which block row (the block was paired with it by position).
    frame, a, _ = _rows()
    frame.index = [f"r{i}" for i in range(N)]
    block = pd.DataFrame(a, index=frame.index).iloc[::-1]
    as_frame = pearl.fit("y ~ block(a)", frame, blocks={"a": block}, seed=0)
    as_dict = pearl.fit("y ~ block(a)", {"y": frame["y"]}, blocks={"a": block}, seed=0)
    np.testing.assert_allclose(as_dict.cv_predictions, as_frame.cv_predictions, rtol=1e-12)
    assert list(as_dict.row_labels) == list(frame.index)
    new = {"my x": frame["my x"].iloc[:5]}
    prediction = as_frame.predict(new, blocks={"a": block.loc[frame.index[:5]].iloc[::-1]})
    assert list(prediction.index) == list(frame.index[:5])
    direct = _ols_prediction(a, frame["y"].to_numpy(), a[:5])
    np.testing.assert_allclose(prediction, direct, rtol=1e-10)


def test_one_column_block_given_as_a_series_is_aligned_by_label():
    # np.asarray(series) dropped the labels: a shuffled Series block was paired by position.
    frame, a, _ = _rows()
    frame.index = [f"r{i}" for i in range(N)]
    column = pd.Series(a[:, 0], index=frame.index, name="s")
    reversed_series = pearl.fit("y ~ block(a)", frame, blocks={"a": column.iloc[::-1]}, seed=0)
    in_order = pearl.fit("y ~ block(a)", frame, blocks={"a": a[:, :1]}, seed=0)
    np.testing.assert_allclose(reversed_series.cv_predictions, in_order.cv_predictions,
                               rtol=1e-12)
    assert list(reversed_series.candidate_params("a").index) == ["Intercept", "a[0]"]
    new = frame.iloc[:5]
    prediction = in_order.predict(new, blocks={"a": column.iloc[:5].iloc[::-1]})
    direct = _ols_prediction(a[:, :1], frame["y"].to_numpy(), a[:5, :1])
    np.testing.assert_allclose(prediction, direct, rtol=1e-10)


def test_dataframe_block_columns_are_matched_by_name_at_predict():
    frame, a, _ = _rows()
    block = pd.DataFrame(a, columns=["u", "v"])
    res = pearl.fit("y ~ block(a)", frame.iloc[:40], blocks={"a": block.iloc[:40]}, seed=0)
    new = frame.iloc[40:]
    same = res.predict(new, blocks={"a": block.iloc[40:]})
    swapped = res.predict(new, blocks={"a": block.iloc[40:][["v", "u"]]})
    np.testing.assert_array_equal(swapped, same)
    with pytest.raises(pearl.BlockError, match=r"missing: \['v'\], unexpected: \['w'\]"):
        res.predict(new, blocks={"a": block.iloc[40:].rename(columns={"v": "w"})})



def test_dataframe_blocks_of_a_dict_are_aligned_to_the_first_blocks_labels():
    # Without a DataFrame data there is no index to align to, but the blocks' own labels
    # still say which row is which: a second block in another row order must not be paired
    # with the first by position (it was, silently, at fit and at predict).
    frame, a, b = _rows()
    labels = pd.Index([f"r{i}" for i in range(N)])
    block_a, block_b = pd.DataFrame(a, index=labels), pd.DataFrame(b, index=labels)
    y = frame["y"].to_numpy()
    reversed_b = pearl.fit("y ~ block(a) + block(b)", {"y": y},
                           blocks={"a": block_a, "b": block_b.iloc[::-1]}, seed=0)
    in_order = pearl.fit("y ~ block(a) + block(b)", {"y": y}, blocks={"a": a, "b": b}, seed=0)
    np.testing.assert_array_equal(reversed_b.weights, in_order.weights)
    np.testing.assert_allclose(reversed_b.cv_predictions, in_order.cv_predictions, rtol=1e-12)

    res = pearl.fit("y ~ block(a)", {"y": y[:40]}, blocks={"a": block_a.iloc[:40]}, seed=0)
    direct = _ols_prediction(a[:40], y[:40], a[40:45])
    shuffled = block_a.iloc[40:45].iloc[[3, 0, 4, 1, 2]]
    prediction = res.predict({}, blocks={"a": shuffled})
    assert list(prediction.index) == ["r43", "r40", "r44", "r41", "r42"]
    np.testing.assert_allclose(prediction.loc[labels[40:45]], direct, rtol=1e-10)
    with pytest.raises(pearl.BlockError, match=r"block 'b'.*row labels differ"):
        pearl.fit("y ~ block(a) + block(b)", {"y": y},
                  blocks={"a": block_a, "b": pd.DataFrame(b)}, seed=0)


@pytest.mark.parametrize("columns", [["u", "u"], [0, "0"]])
def test_a_dataframe_block_with_repeated_column_names_is_an_error(columns):
    # Matched by name at predict, the repeated name picked one column twice: the fit's own
    # rows were predicted 2.9 away from the statsmodels fit without a word.
    frame, a, _ = _rows()
    block = pd.DataFrame(a, columns=columns)
    with pytest.raises(pearl.BlockError, match=r"block 'a' .* more than one column named \['"):
        pearl.fit("y ~ block(a)", frame, blocks={"a": block}, seed=0)
    res = pearl.fit("y ~ block(a)", frame, blocks={"a": pd.DataFrame(a, columns=["u", "v"])},
                    seed=0)
    with pytest.raises(pearl.BlockError, match=r"more than one column named \['v'\]"):
        res.predict(frame, blocks={"a": pd.DataFrame(np.hstack([a, a[:, 1:]]),
                                                     columns=["u", "v", "v"])})


# ---- class 5: bad input gets a pearlstats error, odd-but-legal input works --------------------
def test_a_block_named_after_a_python_keyword_works():
    frame, a, b = _rows()
    res = pearl.fit("y ~ block(class) + block(b)", frame, blocks={"class": a, "b": b}, seed=0)
    renamed = pearl.fit("y ~ block(a) + block(b)", frame, blocks={"a": a, "b": b}, seed=0)
    assert list(res.weights.index) == ["class", "b", "class+b"]
    np.testing.assert_array_equal(res.weights.to_numpy(), renamed.weights.to_numpy())


@pytest.mark.parametrize("call", ["fit", "predict"])
def test_a_dict_of_scalars_is_a_data_error(call):
    frame, a, _ = _rows()
    with pytest.raises(pearl.DataError, match=r"single values under \['y'\]"):
        if call == "fit":
            pearl.fit("y ~ block(a)", {"y": 1.0, "a": a}, seed=0)
        else:
            pearl.fit("y ~ block(a)", frame, blocks={"a": a}, seed=0).predict(
                {"y": 1.0, "a": a[:1]}
            )


def test_new_rows_whose_count_differs_from_their_blocks_are_an_error():
    frame, a, _ = _rows()
    res = pearl.fit("y ~ block(a)", frame, blocks={"a": a}, seed=0)
    with pytest.raises(pearl.BlockError, match="block 'a' has 5 rows but the data has 4"):
        res.predict(frame.iloc[:4], blocks={"a": a[:5]})


def test_zero_rows_to_evaluate_or_predict_are_an_error():
    frame, a, _ = _rows()
    res = pearl.fit("y ~ block(a)", frame, blocks={"a": a}, seed=0)
    with pytest.raises(pearl.DataError, match="no rows"):
        res.evaluate(frame.iloc[:0], blocks={"a": a[:0]})


@pytest.mark.parametrize("method", ["honest_risk", "resample_weights"])
def test_negative_seeds_of_the_diagnostics_are_option_errors(method):
    frame, a, b = _rows()
    res = pearl.fit("y ~ block(a) + block(b)", frame, blocks={"a": a, "b": b}, seed=0)
    with pytest.raises(pearl.OptionError, match=r"seed=-1; use an int in \[0, 2\*\*63\)"):
        if method == "honest_risk":
            res.honest_risk(seed=-1)
        else:
            res.resample_weights("bootstrap", seed=-1)


# ---- class 6: workers and threads ---------------------------------------------------------------
def test_workers_are_capped_at_the_tasks_and_the_cores():
    assert worker_count(1000, 3) == 3
    assert worker_count(None, 50) == 1
    assert 1 <= worker_count(-1, 1000) <= (__import__("os").cpu_count() or 1)


def test_results_stay_right_under_concurrent_refits_and_predictions():
    fits = []
    for seed in (0, 1):
        frame, a, b = _rows(seed)
        res = pearl.fit(
            "y ~ block(a) + block(b)", frame.iloc[:40], blocks={"a": a[:40], "b": b[:40]}, seed=0
        )
        fits.append((res, frame.iloc[40:], {"a": a[40:], "b": b[40:]}))
    expected = [
        res.reweight("squared").predict(new, blocks=blocks).to_numpy() for res, new, blocks in fits
    ]
    differing = []

    def work(offset: int) -> None:
        for i in range(1000):
            which = (i + offset) % 2
            res, new, blocks = fits[which]
            # reweight() builds a results object whose candidates are refitted on first use
            got = res.reweight("squared").predict(new, blocks=blocks).to_numpy()
            if not np.array_equal(got, expected[which]):
                differing.append((offset, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert differing == []


# ---- issue 19, items 1-2: results own their learners; the response never leaks -----------------
def _representation_rows(seed: int = 0, n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2],
                         "y": x[:, 0] - x[:, 1] ** 2 + rng.normal(scale=0.3, size=n)})


def test_refitting_the_callers_representations_does_not_change_a_fitted_result():
    rows = _representation_rows()
    reps = pearl.Representations({"pca": pearl.PCA(2), "kpca": pearl.KernelPCA(2, kernel="rbf")},
                                 columns=["x1", "x2", "x3"], seed=0).fit(rows)
    res = pearl.fit("y ~ block(pca) + block(kpca)", rows.iloc[:60], blocks=reps, seed=0)
    before = res.predict(rows.iloc[60:]).to_numpy()
    reps.fit(_representation_rows(seed=5) * 10.0)
    np.testing.assert_array_equal(res.predict(rows.iloc[60:]).to_numpy(), before)


def test_representations_that_read_the_response_are_rejected():
    rows = _representation_rows()
    reps = pearl.Representations({"pca": pearl.PCA(2), "raw": pearl.Raw()}, seed=0).fit(rows)
    with pytest.raises(pearl.DataError, match=r"read the column\(s\) \['y'\]"):
        pearl.fit("y ~ block(pca) + block(raw)", rows, blocks=reps, seed=0)


# ---- property: labels say which row is which -----------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None)
@given(permutation_seed=st.integers(0, 2**32 - 1))
def test_permuting_a_dataframe_blocks_rows_with_their_labels_changes_nothing(permutation_seed):
    frame, a, b = _rows()
    frame.index = pd.Index(np.arange(N) * 7 + 3)
    block = pd.DataFrame(a, index=frame.index, columns=["u", "v"])
    reference = pearl.fit(
        "y ~ block(a) + block(b)", frame, blocks={"a": block, "b": b}, seed=0, honest=False
    )
    order = np.random.default_rng(permutation_seed).permutation(N)
    permuted = pearl.fit(
        "y ~ block(a) + block(b)",
        frame,
        blocks={"a": block.iloc[order], "b": b},
        seed=0,
        honest=False,
    )
    np.testing.assert_array_equal(permuted.weights, reference.weights)
    np.testing.assert_array_equal(permuted.cv_predictions, reference.cv_predictions)


def _ols_out_of_fold(X, y, folds) -> np.ndarray:
    design = sm.add_constant(X, has_constant="add")
    out = np.empty(len(y))
    for fold in np.unique(folds):
        held = folds == fold
        out[held] = sm.OLS(y[~held], design[~held]).fit().predict(design[held])
    return out


def test_fold_labels_in_a_series_are_matched_to_the_data_by_index_label():
    # They were used by position: every row's fold came from another row's label, silently.
    frame, a, _ = _rows()
    frame.index = [f"r{i}" for i in range(N)]
    labels = pd.Series(np.arange(N) % 3, index=frame.index)
    shuffled = labels.sample(frac=1, random_state=1)
    res = pearl.fit("y ~ block(a)", frame, blocks={"a": a}, cv=shuffled, seed=0, honest=False)
    np.testing.assert_array_equal(res.folds, labels.to_numpy())
    np.testing.assert_allclose(res.cv_predictions["a"],
                               _ols_out_of_fold(a, frame["y"].to_numpy(), labels.to_numpy()),
                               rtol=0, atol=1e-10)
    with pytest.raises(pearl.FoldError, match=r"cv is a Series .*data rows \['r0', 'r1'"):
        pearl.fit("y ~ block(a)", frame, blocks={"a": a}, cv=labels.reset_index(drop=True),
                  seed=0)


def test_fold_labels_of_every_data_row_lose_the_rows_missing_drop_removes():
    # One label per data row was refused ("give exactly one label per row (59)").
    frame, a, _ = _rows()
    a = a.copy()
    a[5, 1] = np.nan
    labels = np.arange(N) % 3
    res = pearl.fit("y ~ block(a)", frame, blocks={"a": a}, cv=labels, missing="drop", seed=0,
                    honest=False)
    keep = np.arange(N) != 5
    np.testing.assert_array_equal(res.folds, labels[keep])
    np.testing.assert_allclose(res.cv_predictions["a"],
                               _ols_out_of_fold(a[keep], frame["y"].to_numpy()[keep],
                                                labels[keep]), rtol=0, atol=1e-10)


def test_a_series_block_is_aligned_to_the_data_by_index_label():
    # A Series block was used by position: shuffling it with its labels moved the coefficients
    # by 1.3, without a word.
    frame, a, _ = _rows()
    frame.index = [f"r{i}" for i in range(N)]
    column = pd.Series(a[:, 0], index=frame.index)
    shuffled = column.iloc[np.random.default_rng(1).permutation(N)]
    res = pearl.fit("y ~ block(a)", frame, blocks={"a": shuffled}, seed=0, honest=False)
    direct = sm.OLS(frame["y"].to_numpy(), sm.add_constant(a[:, :1])).fit()
    np.testing.assert_allclose(res.candidate_params("a"), direct.params, rtol=0, atol=1e-10)
    with pytest.raises(pearl.BlockError, match=r"block 'a' is a Series whose row labels differ"):
        pearl.fit("y ~ block(a)", frame, blocks={"a": column.reset_index(drop=True)}, seed=0)


def test_a_result_whose_response_uses_a_lambda_still_pickles():
    frame, a, _ = _rows()
    double = lambda values: 2 * values  # noqa: E731, F841 (the formula uses this lambda)
    res = pearl.fit("double(y) ~ block(a)", frame, blocks={"a": a}, seed=0, honest=False)
    restored = pickle.loads(pickle.dumps(res))
    np.testing.assert_array_equal(restored.predict(frame, blocks={"a": a}),
                                  res.predict(frame, blocks={"a": a}))
