"""A response with nothing to fit is refused on dask data as in memory: same class, same message.

The dask fit decides from the response's extremes that its moment pass already takes where
the rows live (no row is gathered); the in-memory fit's refusal is the reference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pearlstats as pearl  # noqa: E402
from pearlstats.exceptions import ResponseError  # noqa: E402

pytestmark = pytest.mark.usefixtures("synchronous_dask")

FORMULA = "y ~ x + block(a) + block(b)"
BLOCKS = {"a": ["a0", "a1"], "b": ["b0", "b1"]}
N = 300


def _frame(y: float) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(N, 5)), columns=["x", "a0", "a1", "b0", "b1"])
    return frame.assign(y=y)


def _refusal(data, family: str) -> str:
    with pytest.raises(ResponseError) as caught:
        pearl.fit(FORMULA, data, blocks=BLOCKS, family=family, cv=4, seed=1, honest=False)
    return str(caught.value)


@pytest.mark.parametrize("family, y, words", [
    ("gaussian", 3.0, "the gaussian response is constant (every value is 3 "),
    ("poisson", 0.0, "needs at least one positive count; the response is 0 in all 300 rows"),
    ("binomial", 0.0, "exactly 2 distinct values, got 1: [0.0]; use family='multinomial'"),
])
def test_a_response_with_nothing_to_fit_is_refused_as_in_memory(family, y, words):
    frame = _frame(y)
    in_memory = _refusal(frame, family)
    on_dask = _refusal(dd.from_pandas(frame, npartitions=3), family)
    assert on_dask == in_memory
    assert words in on_dask
