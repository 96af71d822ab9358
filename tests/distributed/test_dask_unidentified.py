"""Rank-deficient candidates on dask data: the same unidentified terms as the in-memory fit.

Which coefficients a candidate's design identifies is decided on the all-rows ``X'X`` the
moment pass computed (eigenvalues of the unit-norm columns' Gram, the squares of the
in-memory SVD's singular values), so no row-sized array is gathered. The reference is the
in-memory fit at the same fold labels: the same UnidentifiedCoefficientWarning at fit
time, the same NaN in ``params``, ``bse`` and ``summary()``, the same numbers elsewhere.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pearlstats as pearl  # noqa: E402
from pearlstats.distributed import hash_folds  # noqa: E402
from pearlstats.exceptions import UnidentifiedCoefficientWarning  # noqa: E402

# A numpy function dask does not implement computes its dask arguments into memory: the
# decision must not gather the n-row design.
pytestmark = [pytest.mark.usefixtures("synchronous_dask"),
              pytest.mark.filterwarnings("error:The `numpy.*is not implemented by Dask")]

FORMULA = "y ~ x + block(a) + block(b)"
N = 400
K = 4
SEED = 3
# The same rows and folds on both paths; they differ in the order the partitions' sums are
# added and in the solver (the minimum-norm solution by the Gram's pseudo-inverse on dask,
# by lstsq on the rows in memory; Newton stopping at 1e-10 relative), as the 1e-8 of
# tests/distributed/test_backends_agree.py.
TOL = 1e-8


def _frame(family: str) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(N, 3)), rng.normal(size=(N, 2))
    x = rng.normal(size=N) + 5.0
    signal = a[:, 0] - b[:, 1] + 0.3 * (x - 5)
    y = (10 + signal + rng.normal(size=N) if family == "gaussian"
         else (signal + rng.logistic(size=N) > 0).astype(float))
    frame = pd.DataFrame({"y": y, "x": x})
    for name, values in (("a", a), ("b", b)):
        for j in range(values.shape[1]):
            frame[f"{name}{j}"] = values[:, j]
    return frame


def _fits(family: str, frame: pd.DataFrame, blocks: dict) -> tuple:
    """The dask and in-memory fits, each with the UnidentifiedCoefficientWarning it gave."""
    out = []
    for data, cv in ((dd.from_pandas(frame, npartitions=3), K),
                     (frame, hash_folds(np.arange(N), K, SEED))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = pearl.fit(FORMULA, data, blocks=blocks, family=family, cv=cv, seed=SEED,
                            honest=False)
        said = [str(w.message) for w in caught
                if issubclass(w.category, UnidentifiedCoefficientWarning)]
        out.append((res, said))
    return out


def _same(on_dask, in_memory):
    on_dask, in_memory = np.asarray(on_dask, dtype=float), np.asarray(in_memory, dtype=float)
    np.testing.assert_array_equal(np.isnan(on_dask), np.isnan(in_memory))
    np.testing.assert_allclose(on_dask, in_memory, rtol=0, atol=TOL, equal_nan=True)


def test_a_column_shared_by_two_blocks_is_unidentified_as_in_memory():
    frame = _frame("gaussian")
    frame["b0"] = frame["a0"]  # the same feature in two blocks
    blocks = {"a": ["a0", "a1", "a2"], "b": ["b0", "b1"]}
    (on_dask, said_dask), (in_memory, said_memory) = _fits("gaussian", frame, blocks)
    # both designs name a block of the data's columns by them (a[a0])
    assert len(said_dask) == len(said_memory) == 1
    assert "candidate 'a+b': no covariate with ['a[a0]', 'b[b0]']." in said_dask[0]
    assert said_dask == said_memory
    _same(on_dask.weights, in_memory.weights)
    _same(on_dask.params, in_memory.params)
    _same(on_dask.bse, in_memory.bse)
    _same(on_dask.conf_int(), in_memory.conf_int())
    for label in in_memory.weights.index:
        _same(on_dask.candidate_params(label), in_memory.candidate_params(label))
    assert "coefficients" in on_dask.summary().panels


def test_a_block_holding_the_covariate_leaves_it_unidentified_as_in_memory():
    blocks = {"a": ["a0", "a1", "x"], "b": ["b0", "b1"]}
    (on_dask, said_dask), (in_memory, said_memory) = _fits("binomial", _frame("binomial"),
                                                           blocks)
    assert len(said_dask) == len(said_memory) == 1
    assert ("candidate 'a': covariate(s) ['x'] with ['a[x]']; "
            "candidate 'a+b': covariate(s) ['x'] with ['a[x]']." in said_memory[0])
    assert said_dask == said_memory
    assert np.isnan(in_memory.params["x"])
    _same(on_dask.params, in_memory.params)
    _same(on_dask.bse, in_memory.bse)
