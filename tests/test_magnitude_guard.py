"""One scale guard for the response (net of its offset) and the covariates, on both backends.

Inside :data:`pearlstats.checks.MAGNITUDE_RANGE` every result moves with the units (SEs and
intervals scale, ratios and weights do not); outside it the fit is refused by name, never
answered with 0 SEs, NaN ratios or a bare LinAlgError.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from pearlstats.checks import MAGNITUDE_RANGE
from pearlstats.exceptions import DataError, ResponseError

FORMULA = "y ~ block(a) + block(b) + x"


def _rows(seed: int = 0, n: int = 60) -> dict:
    rng = np.random.default_rng(seed)
    a, b, x = rng.normal(size=(n, 3)), rng.normal(size=(n, 2)), rng.normal(size=n)
    return {"y": a[:, 0] + x + rng.normal(size=n), "a": a, "b": b, "x": x}


@pytest.mark.parametrize("factor", [1e-77, 1e73])
def test_results_move_with_the_units_of_the_response_inside_the_range(factor):
    data = _rows()
    base = pearl.fit(FORMULA, data, seed=0)
    moved = pearl.fit(FORMULA, {**data, "y": factor * data["y"]}, seed=0)
    # scaling y by a power-of-ten factor rounds each value once (eps); the least squares and
    # the sums of squares are scale-equivariant, so 1e-10 relative covers the rounding
    np.testing.assert_allclose(moved.weights, base.weights, atol=1e-10)
    np.testing.assert_allclose(moved.bse / factor, base.bse, rtol=1e-10)
    assert (moved.bse > 0).all()
    np.testing.assert_allclose(moved.conf_int() / factor, base.conf_int(), rtol=1e-10)
    np.testing.assert_allclose(moved.honest["ratio"], base.honest["ratio"], rtol=1e-10)


@pytest.mark.parametrize("factor", [1e-200, 1e-155, 1e140])
def test_a_response_beyond_its_fourth_powers_is_refused_by_name(factor):
    # on main: SEs exactly 0 (1e-200, 1e-155), or inf risk SEs (1e140)
    data = _rows()
    with pytest.raises(DataError, match=r"gaussian response has magnitude .*outside \[1e-78"):
        pearl.fit(FORMULA, {**data, "y": factor * data["y"]}, seed=0)


def test_a_huge_constant_offset_is_refused_not_answered_with_infinite_risks():
    data = _rows()
    # y - 1e300 rounds to -1e300 for every row: y's information is gone
    with pytest.raises(ResponseError, match="net of the offset"):
        pearl.fit(FORMULA, data, offset=np.full(60, 1e300), seed=0)
    rng = np.random.default_rng(1)
    with pytest.raises(DataError, match="net of the offset has magnitude"):
        pearl.fit(FORMULA, data, offset=1e200 * rng.normal(size=60), seed=0)


def test_a_covariate_whose_squares_overflow_is_refused_naming_it():
    data = _rows()
    with pytest.raises(DataError, match=r"covariate column 'x' has magnitude .*1e\+150"):
        pearl.fit(FORMULA, {**data, "x": 1e160 * data["x"]}, seed=0)
    low, high = MAGNITUDE_RANGE
    # at the top of the range the refit's inference is finite and scales as 1 / factor
    base = pearl.fit(FORMULA, data, seed=0, honest=False)
    factor = high / (2 * np.abs(data["x"]).max())
    moved = pearl.fit(FORMULA, {**data, "x": factor * data["x"]}, seed=0, honest=False)
    # statsmodels' own OLS on all rows (the single-block candidates share the x column)
    assert np.isfinite(moved.bse).all() and (moved.bse > 0).all()
    np.testing.assert_allclose(moved.bse["x"] * factor, base.bse["x"], rtol=1e-8)


def test_both_backends_refuse_the_same_out_of_range_inputs():
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    data = _rows()
    for y, x, what in [(1e-155 * data["y"], data["x"], "gaussian response"),
                       (data["y"], 1e160 * data["x"], "covariate column 'x'")]:
        frame = dd.from_pandas(pd.DataFrame({"y": y, "x": x}), npartitions=3)
        lengths = tuple(frame.map_partitions(len).compute().tolist())
        blocks = {k: da.from_array(data[k], chunks=(lengths, data[k].shape[1])) for k in "ab"}
        with pytest.raises(DataError, match=f"{what} has magnitude"):
            pearl.fit(FORMULA, frame, blocks=blocks, seed=0, honest=False)
        with pytest.raises(DataError, match=f"{what} has magnitude"):
            pearl.fit(FORMULA, {"y": y, "x": x, "a": data["a"], "b": data["b"]}, seed=0)


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_a_link_scale_offset_past_its_digits_is_refused(family):
    # on main: a bare LinAlgError (poisson) or cross-entropy 16 for every candidate (binomial)
    data = _rows()
    rng = np.random.default_rng(2)
    data["y"] = (rng.poisson(2, size=60) if family == "poisson"
                 else rng.uniform(size=60) < 0.5).astype(float)
    with pytest.raises(DataError, match=r"offset has magnitude 1e\+300 on the link scale"):
        pearl.fit(FORMULA, data, family=family, offset=np.full(60, 1e300), seed=0)
    # a large but resolvable constant offset is absorbed by the intercept: same weights
    # (Newton's stopping tolerance, not the offset, sets the agreement)
    plain = pearl.fit(FORMULA, data, family=family, seed=0, honest=False)
    shifted = pearl.fit(FORMULA, data, family=family, offset=np.full(60, 30.0), seed=0,
                        honest=False)
    np.testing.assert_allclose(shifted.weights, plain.weights, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int64", "Int64", "uint64"])
def test_integers_beyond_2_53_that_float64_merges_are_refused_by_name(dtype):
    """2**60 + k (k < 1000) becomes 5 distinct float64 values (multiples of 256): the slope
    was 9 % off with no word. Large integers float64 holds exactly pass."""
    data = _rows(n=60)
    k = np.arange(60) * 7
    base = 2**63 - 2**12 if dtype == "uint64" else 2**60
    merged = pd.array([base + int(v) for v in k], dtype=dtype)
    assert np.unique(np.asarray(merged, dtype=float)).size < 60  # what float64 makes of it
    with pytest.raises(DataError, match=r"covariate 'x' holds integers beyond 2\*\*53 that "
                       r"float64 cannot tell apart: its 60 distinct values become \d+ .*"
                       r"subtract a reference value first"):
        pearl.fit(FORMULA, {**data, "x": merged}, seed=0, honest=False)
    exact = pd.array([2**60 + 2**10 * int(v) for v in k], dtype=dtype)  # float64 holds these
    res = pearl.fit(FORMULA, {**data, "x": exact}, seed=0, honest=False)
    assert np.isfinite(res.params["x"])
