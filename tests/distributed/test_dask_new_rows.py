"""A dask fit meets new rows as an in-memory fit does: the same blocks (column lists) predict
pandas rows, and an interval it cannot give is refused by name, before any work.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pearlstats as pearl

FORMULA = "y ~ block(a) + block(b) + x"
BLOCKS = {"a": ["a0", "a1"], "b": ["b0", "b1"]}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 4)), columns=["a0", "a1", "b0", "b1"])
    frame["x"] = rng.normal(size=80)
    frame["y"] = frame["a0"] + 0.5 * frame["x"] + rng.normal(size=80)
    return frame


@pytest.fixture(scope="module")
def dask_fit(frame):
    return pearl.fit(FORMULA, dd.from_pandas(frame, npartitions=3), blocks=BLOCKS, seed=0,
                     honest=False)


def test_column_list_blocks_predict_pandas_rows(dask_fit, frame):
    new = frame.iloc[:7]
    arrays = {name: new[columns].to_numpy() for name, columns in BLOCKS.items()}
    # the same columns given by name and as arrays: the same design, the same numbers
    np.testing.assert_array_equal(dask_fit.predict(new, blocks=BLOCKS),
                                  dask_fit.predict(new, blocks=arrays))
    lazy = dask_fit.predict(dd.from_pandas(new, npartitions=2), blocks=BLOCKS).compute()
    np.testing.assert_allclose(dask_fit.predict(new, blocks=BLOCKS), lazy, rtol=1e-12)
    with pytest.raises(pearl.BlockError, match=r"block 'a' names columns \['a9'\]"):
        dask_fit.predict(new, blocks={"a": ["a0", "a9"], "b": ["b0", "b1"]})


@pytest.mark.parametrize("interval", ["prediction", "confidence"])
def test_dask_rows_refuse_intervals_by_name(dask_fit, frame, interval):
    rows = dd.from_pandas(frame.iloc[:7], npartitions=2)
    with pytest.raises(pearl.OptionError, match=rf"interval='{interval}' .*dask rows"):
        dask_fit.predict(rows, blocks=BLOCKS, interval=interval)


def test_unknown_interval_is_refused_on_both_backends(dask_fit, frame):
    memory = pearl.fit(FORMULA, frame, blocks={n: frame[c] for n, c in BLOCKS.items()}, seed=0,
                       honest=False)
    rows = dd.from_pandas(frame.iloc[:7], npartitions=2)
    for res, new in ((memory, frame.iloc[:7]), (dask_fit, rows), (dask_fit, frame.iloc[:7])):
        with pytest.raises(pearl.OptionError, match=r"interval='bogus' is not available"):
            res.predict(new, blocks=BLOCKS if res is dask_fit else
                        {n: new[c] for n, c in BLOCKS.items()}, interval="bogus")
