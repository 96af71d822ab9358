"""Multinomial dask fits whose re-runs leave a partition with no row, against the in-memory fit.

A re-run (the honest risk's outer folds, the weights re-solved on fold complements) leaves
one fold's rows out as fold -1; when a partition holds only that fold's rows, its
out-of-fold pass has no row. Two layouts reach that case: data partitioned by its fold
column with ``cv="fold"``, and a first partition of one row. The reference is the
in-memory fit at the same fold labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pearlstats as pearl  # noqa: E402
from pearlstats.distributed import hash_folds  # noqa: E402

# The honest risks are compared, not judged: its note on PEARL against MS is no concern here.
pytestmark = [pytest.mark.usefixtures("synchronous_dask"),
              pytest.mark.filterwarnings("ignore:PEARL.s honest risk")]

FORMULA = "y ~ x + block(a) + block(b)"
BLOCKS = {"a": ["a0", "a1", "a2"], "b": ["b0", "b1"]}
N = 480
K = 4
NUMBERS = ["risk", "se", "ratio", "ratio_se"]
# The same rows and folds on both paths: they differ only in the order in which the
# partitions' sums are added and in where each Newton and weight solve stops (1e-10
# relative); the fits of tests/distributed/test_multinomial_dask.py agree to 1e-8.
TOL = 1e-8


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(N, 3)), rng.normal(size=(N, 2))
    x = rng.normal(size=N) + 5.0
    signal = a[:, 0] - b[:, 1] + 0.3 * (x - 5)
    y = np.digitize(signal + rng.logistic(size=N), [-1.0, 0.5])
    frame = pd.DataFrame({"y": y, "x": x, "fold": np.arange(N) % K})
    for name, values in (("a", a), ("b", b)):
        for j in range(values.shape[1]):
            frame[f"{name}{j}"] = values[:, j]
    return frame.sort_values("fold", kind="stable").reset_index(drop=True)


def _close(on_dask, in_memory):
    np.testing.assert_allclose(np.asarray(on_dask, dtype=float),
                               np.asarray(in_memory, dtype=float), rtol=0, atol=TOL)


def _fit(data, cv, honest):
    return pearl.fit(FORMULA, data, blocks=BLOCKS, family="multinomial", cv=cv, seed=0,
                     honest=honest)


def test_partitions_by_fold_give_the_in_memory_results():
    frame = _frame()
    ddf = dd.from_pandas(frame, npartitions=K)  # partition k holds exactly fold k's rows
    assert ddf.map_partitions(lambda p: p["fold"].nunique()).compute().tolist() == [1] * K
    on_dask, in_memory = _fit(ddf, "fold", K), _fit(frame, "fold", K)
    _close(on_dask.weights, in_memory.weights)
    _close(on_dask.honest[NUMBERS], in_memory.honest[NUMBERS])
    pd.testing.assert_frame_equal(on_dask.weight_stability, in_memory.weight_stability,
                                  rtol=0, atol=TOL)
    _close(on_dask.resample_weights(), in_memory.resample_weights())
    assert "stability" in on_dask.summary().panels
    new = frame.iloc[:7]
    sets = [res.predict(new, blocks=BLOCKS, interval="set", alpha=0.3)
            for res in (on_dask, in_memory)]
    pd.testing.assert_frame_equal(*sets)


def test_first_partition_of_one_row_gives_the_in_memory_honest_risks():
    frame = _frame(1).drop(columns="fold")
    ddf = dd.concat([dd.from_pandas(frame.iloc[:1], npartitions=1),
                     dd.from_pandas(frame.iloc[1:], npartitions=1)])
    on_dask = _fit(ddf, K, 3)
    in_memory = _fit(frame, hash_folds(np.arange(N), K, 0), 3)
    _close(on_dask.weights, in_memory.weights)
    _close(on_dask.honest[NUMBERS], in_memory.honest[NUMBERS])
