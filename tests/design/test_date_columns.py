"""Covariates that are dates, periods or intervals are refused by name with a conversion that
works; time-zone aware dates, periods and intervals raised numpy's TypeError from inside patsy
("Cannot interpret 'datetime64[us, UTC]' as a data type")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl

N = 40


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "y": rng.normal(size=N),
        "naive": pd.date_range("2020-01-01", periods=N, freq="D"),
        "aware": pd.date_range("2020-01-01", periods=N, freq="D", tz="UTC"),
        "month": pd.period_range("2020-01", periods=N, freq="M"),
        "bin": pd.arrays.IntervalArray.from_breaks(np.arange(N + 1.0)),
    })


BLOCKS = {"a": np.random.default_rng(1).normal(size=(N, 2))}


@pytest.mark.parametrize("column, what, convert", [
    ("naive", "dates/times", lambda c: (c - c.min()).dt.days),
    ("aware", "dates/times", lambda c: (c - c.min()).dt.days),
    ("month", "periods", lambda c: (c - c.min()).apply(lambda d: d.n)),
    ("bin", "intervals", lambda c: pd.Series(c.array.mid, index=c.index)),
])
@pytest.mark.parametrize("term", ["{}", "C({})"])
def test_a_date_period_or_interval_covariate_is_refused_with_a_conversion_that_works(
        column, what, convert, term):
    data = _data()
    with pytest.raises(pearl.DataError, match=rf"column '{column}' holds {what} \(dtype "):
        pearl.fit(f"y ~ {term.format(column)} + block(a)", data, blocks=BLOCKS, seed=0,
                  honest=False)
    converted = data.assign(**{column: convert(data[column])})
    res = pearl.fit(f"y ~ {column} + block(a)", converted, blocks=BLOCKS, seed=0, honest=False)
    assert np.isfinite(res.params[column])
    # a fit on the numbers refuses the same kind of column in the rows to predict
    with pytest.raises(pearl.DataError, match=rf"column '{column}' holds {what}"):
        res.predict(data.iloc[:3], blocks={"a": BLOCKS["a"][:3]})
