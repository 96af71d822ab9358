"""A fit on a dask DataFrame labels its row outputs with the DataFrame's own index.

``fittedvalues``, ``resid`` and ``cv_predictions`` are dask objects whose index is the data's
(as ``predict(ddf)`` keeps it, and as an in-memory fit labels them), so
``ddf.assign(fitted=res.fittedvalues)`` puts each value in its own row; a dict of dask
arrays, which has no labels, keeps positions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")

import pearlstats as pearl  # noqa: E402
from pearlstats.distributed import hash_folds  # noqa: E402

N = 240
FORMULA = "y ~ x + block(a) + block(b)"


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _frame(index: pd.Index, family: str) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    signal = a[:, 0] - 0.5 * b[:, 1]
    x = rng.normal(size=N)
    y = (signal + rng.logistic(size=N) > 0).astype(float) if family == "binomial" else (
        signal + x + rng.normal(size=N))
    columns = {"y": y, "x": x, "a0": a[:, 0], "a1": a[:, 1], "b0": b[:, 0], "b1": b[:, 1]}
    return pd.DataFrame(columns, index=index)


BLOCKS = {"a": ["a0", "a1"], "b": ["b0", "b1"]}


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
@pytest.mark.parametrize("index", [pd.RangeIndex(1000, 1000 + N),
                                   pd.Index([f"r{i:04d}" for i in range(N)])],
                         ids=["shifted", "strings"])
def test_row_outputs_carry_the_dataframes_index(family, index):
    frame = _frame(index, family)
    ddf = dd.from_pandas(frame, npartitions=3, sort=False)
    on_dask = pearl.fit(FORMULA, ddf, blocks=BLOCKS, family=family, cv=4, seed=3, honest=False)
    # the same rows in the same order, with the dask fit's hashed folds
    in_memory = pearl.fit(FORMULA, frame, blocks=BLOCKS, family=family,
                          cv=hash_folds(np.arange(N), 4, 3), seed=3, honest=False)
    for name in ("fittedvalues", "resid", "cv_predictions"):
        lazy, reference = getattr(on_dask, name), getattr(in_memory, name)
        got = lazy.compute()
        # the labels themselves (dask may hold strings as pyarrow strings)
        assert got.index.tolist() == reference.index.tolist()
        # the two backends' fits agree to their Newton tolerance (1e-12 in the coefficients)
        np.testing.assert_allclose(np.asarray(got, dtype=float),
                                   np.asarray(reference, dtype=float), rtol=1e-8, atol=1e-10)
    joined = ddf.assign(fitted=on_dask.fittedvalues).compute()
    assert not joined["fitted"].isna().any()
    np.testing.assert_allclose(joined["fitted"].loc[index[::-1]],
                               in_memory.fittedvalues.loc[index[::-1]], rtol=1e-8, atol=1e-10)


def test_a_dict_of_dask_arrays_keeps_positions():
    frame = _frame(pd.RangeIndex(N), "gaussian")
    data = {"y": da.from_array(frame["y"].to_numpy(), chunks=80),
            "x": da.from_array(frame["x"].to_numpy(), chunks=80),
            "a": da.from_array(frame[BLOCKS["a"]].to_numpy(), chunks=(80, 2)),
            "b": da.from_array(frame[BLOCKS["b"]].to_numpy(), chunks=(80, 2))}
    res = pearl.fit(FORMULA, data, cv=4, seed=3, honest=False)
    pd.testing.assert_index_equal(res.fittedvalues.compute().index, pd.RangeIndex(N),
                                  exact=False)


def test_a_block_of_the_datas_columns_is_named_by_them_as_in_memory():
    """Block a given as columns a0, a1: its coefficients are a[a0], a[a1] on both backends
    (the dask fit named them by position, a[0], a[1])."""
    frame = _frame(pd.RangeIndex(N), "gaussian")
    on_dask = pearl.fit(FORMULA, dd.from_pandas(frame, npartitions=3), blocks=BLOCKS, cv=4,
                        seed=3, honest=False)
    in_memory = pearl.fit(FORMULA, frame, blocks=BLOCKS, cv=hash_folds(np.arange(N), 4, 3),
                          seed=3, honest=False)
    assert on_dask.design_spec.column_names == in_memory.design_spec.column_names
    assert "a[a0]" in on_dask.design_spec.column_names
    pd.testing.assert_series_equal(on_dask.candidate_params("a+b"),
                                   in_memory.candidate_params("a+b"), rtol=1e-8)
