"""A bad row is named so the user can find it: by the data's index label, not by a position
that means nothing once the data has its own labels or ``missing="drop"`` has dropped rows."""

import re

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from pearlstats.exceptions import format_labels, format_positions

N = 40


def _data(index=None):
    rng = np.random.default_rng(7)
    index = pd.Index([f"P{i:03d}" for i in range(N)]) if index is None else index
    frame = pd.DataFrame({"y": rng.poisson(2.0, N).astype(float), "x": rng.uniform(1, 2, N)},
                         index=index)
    block = pd.DataFrame(rng.normal(size=(N, 3)), index=index)
    return frame, block


def _message(call) -> str:
    with pytest.raises(pearl.PearlError) as info:
        call()
    return str(info.value)


def _fit(frame, block, **kwargs):
    return lambda: pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, cv=3, **kwargs)


@pytest.mark.parametrize("column, value, family", [
    ("y", np.nan, "gaussian"),   # the response's missing-value check
    ("x", np.inf, "gaussian"),   # a covariate's
    ("y", -1.0, "poisson"),      # the family's range check
])
def test_a_bad_value_is_named_by_its_label(column, value, family):
    frame, block = _data()
    frame.loc["P013", column] = value
    message = _message(_fit(frame, block, family=family))
    assert "row labelled 'P013'" in message
    assert not re.search(r"\brows? 13\b", message)


def test_after_missing_drop_the_label_is_the_row_given_not_its_new_position():
    # P002 is dropped (missing x), so the negative count P013 is the 13th row left: a
    # position would send the user to the wrong row.
    frame, block = _data()
    frame.loc["P002", "x"] = np.nan
    frame.loc["P013", "y"] = -1.0
    message = _message(_fit(frame, block, family="poisson", missing="drop"))
    assert "row labelled 'P013'" in message
    # Data without labels: the row's position among the rows given (13), not 12.
    columns = {name: frame[name].to_numpy() for name in frame}
    message = _message(lambda: pearl.fit("y ~ x + block(a)", columns,
                                         blocks={"a": block.to_numpy()}, cv=3,
                                         family="poisson", missing="drop"))
    assert "row labelled 13" in message
    assert "12" not in message


def test_blocks_terms_offsets_and_weights_name_labels():
    frame, block = _data()
    bad_block = block.copy()
    bad_block.loc["P005", 1] = np.nan
    assert "row labelled 'P005'" in _message(_fit(frame, bad_block))
    logged = frame.copy()
    logged.loc[["P003", "P021"], "x"] = -1.0
    # np.log(x) of a negative x: patsy's own message named no row.
    message = _message(lambda: pearl.fit("y ~ np.log(x) + block(a)", logged,
                                         blocks={"a": block}, cv=3))
    assert "rows labelled 'P003', 'P021'" in message
    message = _message(lambda: pearl.fit("y ~ x + offset(np.log(x)) + block(a)", logged,
                                         blocks={"a": block}, cv=3, family="poisson"))
    assert "rows labelled 'P003', 'P021'" in message
    weights = pd.Series(1.0, index=frame.index)
    weights["P030"] = 0.0
    message = _message(_fit(frame, block, weights=weights, weight_type="frequency"))
    assert "row labelled 'P030'" in message


def test_the_default_index_keeps_plain_positions():
    frame, block = _data(pd.RangeIndex(N))
    frame.loc[13, "y"] = np.nan
    message = _message(_fit(frame, block))
    assert "at row 13;" in message
    assert "labelled" not in message


def test_formatting():
    labels = pd.Index(["a", "b", "c", "d"])
    assert format_positions([0, 3], labels=labels) == "rows labelled 'a', 'd'"
    assert format_positions([2, 3], limit=1, labels=labels) == "rows labelled 'c' and 1 more"
    assert format_positions([1], labels=pd.RangeIndex(4)) == "row 1"
    # numpy integers print as numbers, not np.int64(5)
    assert format_labels(np.array([5, 9])) == "rows labelled 5, 9"
    assert format_labels(pd.to_datetime(["2020-01-02"])) == \
        "row labelled Timestamp('2020-01-02 00:00:00')"


@pytest.mark.parametrize("family, value", [("poisson", -1.0), ("binomial", 2.0)])
def test_a_dask_response_names_the_rows_label(synchronous_dask, family, value):
    # A partition's positions mean nothing to the user; the dask index's labels do.
    dd = pytest.importorskip("dask.dataframe")
    frame, block = _data()
    frame["y"] = (frame["y"] > 2).astype(float) if family == "binomial" else frame["y"]
    frame[["a0", "a1", "a2"]] = block.to_numpy()
    frame.loc["P027", "y"] = value
    ddf = dd.from_pandas(frame, npartitions=3)
    message = _message(lambda: pearl.fit("y ~ x + block(a)", ddf, family=family,
                                         blocks={"a": ["a0", "a1", "a2"]}))
    assert f"it is {value:g} at row labelled 'P027'" in message


def test_new_rows_name_a_bad_value_by_its_label():
    # predict/get_prediction rebuild the design of the new rows: a bad value there is named
    # as at fit (it was named by its position among the new rows)
    frame, block = _data()
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, cv=3, honest=False)
    new, new_block = frame.iloc[[5, 9, 20]].copy(), block.iloc[[5, 9, 20]].copy()
    new.loc["P009", "x"] = np.nan
    assert "row labelled 'P009'" in _message(lambda: res.predict(new, blocks={"a": new_block}))
    new_block.loc["P020", 1] = np.inf
    message = _message(lambda: res.get_prediction(frame.iloc[[5, 9, 20]],
                                                  blocks={"a": new_block}))
    assert "row labelled 'P020'" in message


def test_evaluate_names_a_missing_test_response_by_its_label():
    # the test rows' frame lost its index on the way: "at row 2" for the row labelled "r42"
    rng = np.random.default_rng(0)
    labels = [f"r{i}" for i in range(60)]
    frame = pd.DataFrame({"y": rng.normal(size=60)}, index=labels)
    a = pd.DataFrame(rng.normal(size=(60, 2)), index=labels)
    res = pearl.fit("y ~ block(a)", frame.iloc[:40], blocks={"a": a.iloc[:40]}, seed=0,
                    honest=False)
    test = frame.iloc[40:].copy()
    test.iloc[2, 0] = np.nan
    with pytest.raises(pearl.DataError, match="row labelled 'r42'"):
        res.evaluate(test, blocks={"a": a.iloc[40:]})
