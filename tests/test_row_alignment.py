"""Every argument with one value per data row meets the rows by one rule, at fit, predict
and evaluate: a pandas object by index label, an array by position (statsmodels' rule);
``missing="drop"`` drops the rows whose weight or offset has no value, as statsmodels does;
new rows are checked as the fit's rows are (row counts, durations, dates).

The references are independent of the alignment code: the same call with the values put in
the data's row order by hand (a NumPy array, matched by position), or the fit of the rows
removed by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl

N = 60


def _poisson_frame(seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    t = rng.uniform(1, 3, N)
    x = rng.normal(size=N)
    y = rng.poisson(t * np.exp(0.4 * a[:, 0] + 0.2 * x))
    labels = [f"r{i}" for i in range(N)]
    frame = pd.DataFrame({"y": y, "x": x}, index=labels)
    blocks = {"a": pd.DataFrame(a, index=labels), "b": pd.DataFrame(b, index=labels)}
    return frame, blocks, pd.Series(np.log(t), index=labels)


@pytest.fixture(scope="module")
def offset_fit():
    frame, blocks, offset = _poisson_frame()
    res = pearl.fit("y ~ block(a) + block(b) + x", frame.iloc[:40],
                    blocks={k: v.iloc[:40] for k, v in blocks.items()}, family="poisson",
                    offset=offset.iloc[:40], seed=0, honest=False)
    return res, frame.iloc[40:], {k: v.iloc[40:] for k, v in blocks.items()}, offset.iloc[40:]


def test_predict_matches_a_permuted_offset_series_by_label(offset_fit):
    res, new, blocks, offset = offset_fit
    by_position = res.predict(new, blocks, offset=offset.to_numpy())
    permuted = offset.iloc[np.random.default_rng(1).permutation(len(offset))]
    # identical arithmetic on the same numbers once aligned: equal to the last bit
    np.testing.assert_array_equal(res.predict(new, blocks, offset=permuted), by_position)


def test_predict_evaluate_and_get_prediction_read_named_columns_as_fit_does(offset_fit):
    # the new rows' own columns, named: read in their row order, as the arrays are
    res, new, blocks, offset = offset_fit
    w = np.random.default_rng(4).uniform(0.5, 2, len(new))
    named = new.assign(o=offset.to_numpy(), t=np.exp(offset.to_numpy()), w=w)
    np.testing.assert_array_equal(res.predict(named, blocks, offset="o"),
                                  res.predict(new, blocks, offset=offset.to_numpy()))
    np.testing.assert_allclose(res.get_prediction(named, blocks, exposure="t").predicted_mean,
                               res.predict(new, blocks, offset=offset.to_numpy()), rtol=1e-12)
    pd.testing.assert_frame_equal(res.evaluate(named, blocks, offset="o", weights="w"),
                                  res.evaluate(new, blocks, offset=offset.to_numpy(), weights=w))


def test_evaluate_matches_permuted_weights_and_offset_by_label(offset_fit):
    res, new, blocks, offset = offset_fit
    w = pd.Series(np.random.default_rng(2).uniform(0.5, 2, len(new)), index=new.index)
    reference = res.evaluate(new, blocks, offset=offset.to_numpy(), weights=w.to_numpy())
    order = np.random.default_rng(3).permutation(len(new))
    table = res.evaluate(new, blocks, offset=offset.iloc[order], weights=w.iloc[order])
    pd.testing.assert_frame_equal(table, reference, check_exact=False,
                                  rtol=1e-12)  # the same sums: equal but for rounding


@pytest.mark.parametrize("where", ["fit", "predict", "evaluate"])
def test_repeated_or_missing_labels_are_named_at_every_stage(offset_fit, where):
    res, new, blocks, offset = offset_fit
    doubled = pd.Series(offset.to_numpy(), index=[new.index[0]] * len(new))
    with pytest.raises(pearl.DataError, match=r"offset= is a Series .*repeats labels \['r40'\]"):
        if where == "predict":
            res.predict(new, blocks, offset=doubled)
        elif where == "evaluate":
            res.evaluate(new, blocks, offset=doubled)
        else:
            pearl.fit("y ~ block(a) + block(b) + x", new, blocks=blocks, family="poisson",
                      offset=doubled, seed=0, honest=False)
    shifted = offset.rename(lambda label: label + "x")
    with pytest.raises(pearl.DataError, match=r"data rows \['r40', 'r41'.*are not data rows"):
        res.predict(new, blocks, offset=shifted)


def test_fold_labels_and_blocks_follow_the_same_rule():
    frame, blocks, _ = _poisson_frame()
    folds = pd.Series(np.arange(N) % 4, index=frame.index)
    with pytest.raises(pearl.FoldError, match=r"cv is a Series .*repeats labels"):
        pearl.fit("y ~ block(a) + block(b)", frame, blocks=blocks, family="poisson",
                  cv=folds.set_axis([frame.index[0]] * N), honest=False)
    with pytest.raises(pearl.BlockError, match=r"block 'a' is a DataFrame .*repeats labels"):
        pearl.fit("y ~ block(a) + block(b)", frame,
                  blocks={"a": blocks["a"].set_axis([frame.index[0]] * N), "b": blocks["b"]},
                  family="poisson", honest=False)


# ---- missing="drop" with weights, offsets and exposure -----------------------------------

def _drop_reference(frame, blocks, rows, weight_type=None, **options):
    keep = np.setdiff1d(np.arange(N), rows)
    return pearl.fit("y ~ block(a) + block(b) + x", frame.iloc[keep],
                     blocks={k: v.iloc[keep] for k, v in blocks.items()}, family="poisson",
                     seed=0, honest=False, cv=np.arange(N)[keep] % 5, weight_type=weight_type,
                     **{k: v.iloc[keep] for k, v in options.items()})


@pytest.mark.parametrize("argument", ["formula", "offset", "exposure", "weights"])
def test_drop_removes_rows_whose_offset_exposure_or_weight_is_missing(argument):
    frame, blocks, log_t = _poisson_frame()
    frame = frame.assign(t=np.exp(log_t))
    frame.loc["r3", ["x", "t"]] = np.nan  # the covariate and the offset of one row
    frame.loc["r7", "t"] = np.nan          # the offset alone
    t, w = frame["t"], pd.Series(np.ones(N), index=frame.index)
    given = {"formula": {}, "offset": {"offset": np.log(t)}, "exposure": {"exposure": t},
             "weights": {"weights": w.where(t.notna()), "exposure": t.fillna(1.0)}}[argument]
    formula = "y ~ block(a) + block(b) + x" + (" + offset(np.log(t))" if argument == "formula"
                                               else "")
    extra = {"weight_type": "frequency"} if argument == "weights" else {}
    res = pearl.fit(formula, frame, blocks=blocks, family="poisson", seed=0, honest=False,
                    missing="drop", cv=np.arange(N) % 5, **given, **extra)
    np.testing.assert_array_equal(res.dropped_rows, [3, 7])
    reference_options = ({"offset": np.log(t)} if argument in ("formula", "offset")
                         else {"exposure": t} if argument == "exposure"
                         else {"exposure": t, "weights": w})
    reference = _drop_reference(frame, blocks, [3, 7], **reference_options, **extra)
    # the same rows, folds and arithmetic: agreement to the solver's rounding
    np.testing.assert_allclose(res.weights, reference.weights, atol=1e-10)
    np.testing.assert_allclose(res.params, reference.params, rtol=1e-10)


def test_a_missing_offset_without_drop_says_how_to_drop():
    frame, blocks, log_t = _poisson_frame()
    offset = log_t.copy()
    offset.iloc[5] = np.nan
    with pytest.raises(pearl.DataError,
                       match=r"offset= has NaN .*row labelled 'r5'.*missing='drop'"):
        pearl.fit("y ~ block(a) + block(b)", frame, blocks=blocks, family="poisson",
                  offset=offset, honest=False)


# ---- evaluate(missing=) ------------------------------------------------------------------

def test_evaluate_drops_incomplete_rows_and_records_them(offset_fit):
    res, new, blocks, offset = offset_fit
    new = new.copy()
    new.iloc[2, 0] = np.nan   # response
    new.iloc[5, 1] = np.nan   # covariate
    offset = offset.copy()
    offset.iloc[9] = np.nan   # offset
    with pytest.raises(pearl.DataError, match="missing='drop'"):
        res.evaluate(new, blocks, offset=offset)
    table = res.evaluate(new, blocks, offset=offset, missing="drop")
    np.testing.assert_array_equal(table.attrs["dropped_rows"], [2, 5, 9])
    keep = np.setdiff1d(np.arange(len(new)), [2, 5, 9])
    reference = res.evaluate(new.iloc[keep], {k: v.iloc[keep] for k, v in blocks.items()},
                             offset=offset.iloc[keep])
    pd.testing.assert_frame_equal(table, reference)
    with pytest.raises(pearl.OptionError, match="missing='bogus'"):
        res.evaluate(new, blocks, missing="bogus")


# ---- new rows checked as the fit's ------------------------------------------------------

def test_a_block_of_another_length_names_both_counts_at_predict():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    res = pearl.fit("y ~ block(a) + block(b)", {"y": a[:, 0] + rng.normal(size=40)},
                    blocks={"a": a, "b": b}, seed=0, honest=False)
    with pytest.raises(pearl.BlockError, match=r"block 'a' has 5 rows but the data has 3"):
        res.predict(pd.DataFrame(index=range(3)), blocks={"a": a[:5], "b": b[:3]})


def test_durations_are_seconds_and_dates_are_refused_by_name():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 2)), rng.normal(size=(50, 2))
    seconds = rng.uniform(0, 100, 50)
    y = a[:, 0] + 0.05 * seconds + rng.normal(size=50)
    frame = pd.DataFrame({"y": y, "d": pd.to_timedelta(seconds, unit="s")})
    seconds = frame["d"].to_numpy().astype(np.int64) / 1e9  # the nanoseconds numpy kept
    with pytest.warns(pearl.PearlWarning, match=r"\['d'\] are durations .*seconds"):
        res = pearl.fit("y ~ block(a) + block(b) + d", frame, blocks={"a": a, "b": b}, seed=0,
                        honest=False, cv=np.arange(50) % 5)
    reference = pearl.fit("y ~ block(a) + block(b) + d", frame.assign(d=seconds),
                          blocks={"a": a, "b": b}, seed=0, honest=False, cv=np.arange(50) % 5)
    # the same float column: the same fit to the last bit
    np.testing.assert_array_equal(res.params, reference.params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        np.testing.assert_array_equal(res.predict(frame.iloc[:3], {"a": a[:3], "b": b[:3]}),
                                      reference.predict(frame.assign(d=seconds).iloc[:3],
                                                        {"a": a[:3], "b": b[:3]}))
    dated = frame.assign(d=pd.Timestamp("2020-01-01") + frame["d"])
    with pytest.raises(pearl.DataError, match=r"column 'd' holds dates/times"):
        pearl.fit("y ~ block(a) + block(b) + d", dated, blocks={"a": a, "b": b}, honest=False)
    with pytest.raises(pearl.DataError, match=r"column 'd' holds dates/times"):
        res.predict(dated.iloc[:3], {"a": a[:3], "b": b[:3]})


def test_evaluate_tables_concatenate_as_pandas_tables_do():
    """pandas compares attrs when frames are concatenated: evaluate()'s must allow it."""
    import pandas as pd

    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
    data = {"y": a[:, 0] + rng.normal(size=60), "a": a, "b": b}
    res = pearl.fit("y ~ block(a) + block(b)", data, seed=0, honest=False)
    tables = [res.evaluate({k: v[:30] for k, v in data.items()}),
              res.evaluate({k: v[30:] for k, v in data.items()})]
    both = pd.concat(tables, keys=["first", "second"])
    assert both.shape == (2 * len(tables[0]), tables[0].shape[1])


def test_the_duration_warning_comes_once_per_fit_for_the_columns_the_formula_reads():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(50, 2)), rng.normal(size=(50, 2))
    seconds = rng.uniform(0, 100, 50)
    frame = pd.DataFrame({"y": a[:, 0] + 0.05 * seconds + rng.normal(size=50),
                          "d": pd.to_timedelta(seconds, unit="s"),
                          "unused": pd.to_timedelta(seconds, unit="h"),
                          "w": rng.uniform(0.5, 2.0, 50)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # weights= a column name: the data's columns are read once more for it
        pearl.fit("y ~ block(a) + block(b) + d", frame, blocks={"a": a, "b": b}, seed=0,
                  honest=False, weights="w", weight_type="variance")
    durations = [str(w.message) for w in caught if "durations" in str(w.message)]
    assert len(durations) == 1 and "['d']" in durations[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pearl.fit("y ~ block(a) + block(b)", frame, blocks={"a": a, "b": b}, seed=0,
                  honest=False)
    assert not [w for w in caught if "durations" in str(w.message)]


@pytest.mark.parametrize("labels", ["shuffled integers", "strings"])
def test_columns_named_for_weights_offset_exposure_and_blocks_are_read_in_the_datas_rows(labels):
    # A column named by a string is the data's own column, in the data's row order, whatever
    # its index: the reference passes the same values as NumPy arrays (matched by position).
    frame, blocks, offset = _poisson_frame(1)
    rng = np.random.default_rng(7)
    frame = frame.assign(t=np.exp(offset.to_numpy()), w=rng.integers(1, 4, N).astype(float),
                         a0=blocks["a"][0].to_numpy(), a1=blocks["a"][1].to_numpy())
    order = rng.permutation(N)
    frame = frame.iloc[order]
    frame.index = order if labels == "shuffled integers" else [f"s{i}" for i in order]
    common = dict(family="poisson", seed=0, honest=False, weight_type="frequency")
    by_name = pearl.fit("y ~ x + block(a)", frame, blocks={"a": ["a0", "a1"]}, weights="w",
                        exposure="t", **common)
    by_position = pearl.fit("y ~ x + block(a)", frame,
                            blocks={"a": frame[["a0", "a1"]].to_numpy()},
                            weights=frame["w"].to_numpy(), exposure=frame["t"].to_numpy(),
                            **common)
    # the same rows, values and folds: the same arithmetic, so equal to rounding
    np.testing.assert_allclose(by_name.params, by_position.params, rtol=1e-12)
    np.testing.assert_allclose(by_name.weights, by_position.weights, rtol=1e-12, atol=1e-14)


def test_a_dict_of_series_meets_its_rows_by_label_in_the_first_series_order():
    # pandas aligns a dict of Series on the sorted union of their labels ('r0', 'r1', 'r10',
    # ...), so an array block beside them met other rows (x's coefficient 1.839, not 1.980);
    # the Series now meet by label in the first Series' order, and arrays by that position
    frame, blocks, _ = _poisson_frame(seed=5)
    a = blocks["a"].to_numpy()
    y = frame["y"].astype(float)
    by_hand = pearl.fit("y ~ x + block(a)", {"y": y.to_numpy(), "x": frame["x"].to_numpy()},
                        blocks={"a": a}, honest=False, seed=2)
    shuffled = frame["x"].sample(frac=1.0, random_state=0)
    res = pearl.fit("y ~ x + block(a)", {"y": y, "x": shuffled}, blocks={"a": a},
                    honest=False, seed=2)
    # the same rows in the same order: the same arithmetic
    np.testing.assert_array_equal(res.params.to_numpy(), by_hand.params.to_numpy())
    np.testing.assert_array_equal(res.cv_predictions.to_numpy(),
                                  by_hand.cv_predictions.to_numpy())
    with pytest.raises(pearl.exceptions.DataError, match="column 'x'.*'r0'"):
        pearl.fit("y ~ x + block(a)", {"y": y.iloc[1:], "x": frame["x"].iloc[:-1]},
                  blocks={"a": a[1:]}, honest=False)
    # Representations read a dict of Series by the same rule (they paired them by position)
    reps = pearl.Representations({"p": pearl.PCA(1)}).fit(frame[["y", "x"]].astype(float))
    expected = reps.transform(frame[["y", "x"]].astype(float))["p"]
    got = reps.transform({"y": y, "x": shuffled})["p"]
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(pearl.exceptions.DataError, match="column 'x'"):
        reps.transform({"y": y.iloc[1:], "x": frame["x"].iloc[:-1]})
