"""``predict(missing=)``: incomplete new rows dropped, or NaN (statsmodels, R's ``na.exclude``).

The references are statsmodels' formula ``predict``, which returns NaN for a new row with a
missing covariate or exposure, and this fit's own ``predict`` of the complete rows alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.exceptions import MissingValueError, OptionError

# Both sides solve the same well-conditioned least-squares or Poisson problem (n = 120, three
# columns, condition number under 10); the engines converge to 1e-10 relative, so 1e-8 is loose.
RTOL = 1e-8


def _frame(family: str, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 120
    frame = pd.DataFrame({"x": rng.normal(size=n)}, index=[f"r{i}" for i in range(n)])
    block = rng.normal(size=(n, 2))
    eta = 0.3 * frame["x"].to_numpy() + block @ [0.4, -0.2]
    frame["y"] = rng.poisson(np.exp(eta)) if family == "poisson" else eta + rng.normal(size=n)
    return frame, block


def test_nan_rows_equal_statsmodels_formula_predict():
    frame, block = _frame("gaussian")
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, seed=0, honest=False)
    new = frame.iloc[:6].copy()
    new_block = block[:6].copy()
    new.loc["r1", "x"] = np.nan
    new_block[4, 1] = np.inf
    got = res.predict(new, blocks={"a": new_block}, missing="nan")

    with_columns = frame.assign(a0=block[:, 0], a1=block[:, 1])
    direct = sm.OLS.from_formula("y ~ x + a0 + a1", with_columns).fit()
    new_columns = new.assign(a0=new_block[:, 0], a1=np.where(np.isinf(new_block[:, 1]), np.nan,
                                                             new_block[:, 1]))
    expected = direct.predict(new_columns)
    assert list(got.index) == list(new.index)
    np.testing.assert_array_equal(got.isna().to_numpy(), [False, True, False, False, True, False])
    np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), rtol=RTOL)
    assert got.attrs["dropped_rows"] == (1, 4)


def test_poisson_missing_exposure_is_nan_as_statsmodels():
    frame, block = _frame("poisson")
    exposure = np.linspace(0.5, 2.0, len(frame))
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, family="poisson",
                    exposure=exposure, seed=0, honest=False)
    new_exposure = np.array([1.0, np.nan, 2.0, 0.7])
    got = res.predict(frame.iloc[:4], blocks={"a": block[:4]}, exposure=new_exposure,
                      missing="nan")
    direct = sm.GLM(frame["y"], sm.add_constant(np.column_stack([frame["x"], block])),
                    family=sm.families.Poisson(), exposure=exposure).fit()
    expected = direct.predict(sm.add_constant(np.column_stack([frame["x"][:4], block[:4]])),
                              exposure=new_exposure)
    np.testing.assert_allclose(got.to_numpy(), expected, rtol=RTOL)
    assert np.isnan(got.iloc[1])


def test_drop_equals_predicting_the_complete_rows_with_their_labels():
    frame, block = _frame("gaussian", seed=1)
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, seed=0, honest=False)
    new = frame.iloc[:5].copy()
    new.loc["r3", "x"] = np.nan
    got = res.predict(new, blocks={"a": block[:5]}, missing="drop", interval="confidence")
    keep = [0, 1, 2, 4]
    expected = res.predict(new.iloc[keep], blocks={"a": block[keep]}, interval="confidence")
    pd.testing.assert_frame_equal(got, expected)
    assert got.attrs["dropped_rows"] == (3,)


def test_rows_without_labels_keep_their_positions():
    frame, block = _frame("gaussian", seed=2)
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, seed=0, honest=False)
    new = {"x": np.array([0.1, np.nan, 0.3]), "a": block[:3]}
    dropped = res.predict(new, missing="drop")
    assert list(dropped.index) == [0, 2]
    padded = res.predict(new, missing="nan")
    assert list(padded.index) == [0, 1, 2]
    np.testing.assert_array_equal(padded.to_numpy()[[0, 2]], dropped.to_numpy())


def _binomial_fit(seed: int, n: int):
    """A binomial fit with CV+ sets available (honest=2), its rows and block."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": rng.normal(size=n)})
    block = rng.normal(size=(n, 2))
    frame["y"] = (frame["x"] + block[:, 0] + rng.normal(size=n) > 0).astype(int)
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, family="binomial", seed=0,
                    honest=2)
    return res, frame, block


def test_a_prediction_set_keeps_booleans_with_na_for_incomplete_rows():
    res, frame, block = _binomial_fit(3, 150)
    new = frame.iloc[:4].copy()
    new.loc[2, "x"] = np.nan
    got = res.predict(new, blocks={"a": block[:4]}, interval="set", missing="nan")
    complete = res.predict(new.iloc[[0, 1, 3]], blocks={"a": block[[0, 1, 3]]}, interval="set")
    assert all(str(dtype) == "boolean" for dtype in got.dtypes)
    assert got.iloc[2].isna().all()
    np.testing.assert_array_equal(got.iloc[[0, 1, 3]].to_numpy(dtype=bool),
                                  complete.to_numpy(dtype=bool))


def test_every_row_incomplete_and_an_unknown_choice_are_named():
    frame, block = _frame("gaussian")
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, seed=0, honest=False)
    new = frame.iloc[:2].assign(x=np.nan)
    with pytest.raises(MissingValueError, match="every one of the 2 new rows"):
        res.predict(new, blocks={"a": block[:2]}, missing="nan")
    with pytest.raises(OptionError, match="missing='omit'.*'drop'"):
        res.predict(new, blocks={"a": block[:2]}, missing="omit")
    with pytest.raises(MissingValueError, match="covariate 'x'"):
        res.predict(new, blocks={"a": block[:2]})


def _exposure_fit_and_rows_with_r1_incomplete(m: int):
    """A Poisson fit with exposure, and its first *m* rows as new data with r1 incomplete."""
    frame, block = _frame("poisson")
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, family="poisson",
                    exposure=np.ones(len(frame)), seed=0, honest=False)
    new = frame.iloc[:m].copy()
    new.loc["r1", "x"] = np.nan
    return frame, block, res, new


def test_an_array_as_long_as_the_complete_rows_is_refused_not_shifted():
    # 6 new rows, one incomplete: 5 exposures would be read against the 5 kept rows, each a
    # row off after the dropped one; they must be one per new row, as for complete data
    frame, block, res, new = _exposure_fit_and_rows_with_r1_incomplete(6)
    for missing in ("nan", "drop"):
        with pytest.raises(pearl.DataError, match=r"exposure= must be one number per row of "
                                                  r"the data \(6 rows\)"):
            res.predict(new, blocks={"a": block[:6]}, exposure=np.arange(1.0, 6.0),
                        missing=missing)
    with pytest.raises(pearl.DataError, match="the new data has no rows"):
        res.predict(new.iloc[:0], blocks={"a": block[:0]}, exposure=np.ones(0), missing="nan")


def test_a_bad_exposure_is_named_by_its_row_in_the_new_data_not_among_the_kept():
    # row r1 is incomplete, r3's exposure is negative: r3 is the third of the rows kept, and
    # naming it "row 2" would point at r2
    frame, block, res, new = _exposure_fit_and_rows_with_r1_incomplete(5)
    exposure = np.array([1.0, 1.0, 1.0, -2.0, 1.0])
    for missing in ("nan", "drop"):
        with pytest.raises(pearl.DataError, match="it is -2 at row labelled 'r3'"):
            res.predict(new, blocks={"a": block[:5]}, exposure=exposure, missing=missing)
    with pytest.raises(pearl.DataError, match="it is -2 at row labelled 'r3'"):
        res.evaluate(new, blocks={"a": block[:5]}, exposure=exposure, missing="drop")
    positions = {"x": new["x"].to_numpy(), "a": block[:5]}  # no labels: positions in the data
    with pytest.raises(pearl.DataError, match="it is -2 at row 3"):
        res.predict(positions, exposure=exposure, missing="nan")


def test_complete_rows_give_exactly_what_the_default_gives():
    res, frame, block = _binomial_fit(4, 120)
    for interval in (None, "set"):
        default = res.predict(frame.iloc[:5], blocks={"a": block[:5]}, interval=interval)
        padded = res.predict(frame.iloc[:5], blocks={"a": block[:5]}, interval=interval,
                             missing="nan")
        assert padded.equals(default)


def _log_fit(family: str):
    rng = np.random.default_rng(7)
    n = 150
    z, block = rng.uniform(1, 10, n), rng.normal(size=(n, 2))
    y = np.log(z) + block[:, 0] + rng.normal(size=n)
    y = (y > np.median(y)).astype(float) if family == "binomial" else y
    return pearl.fit("y ~ np.log(z) + block(a)", {"y": y, "z": z, "a": block}, family=family,
                     seed=0, honest=False)


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_a_covariate_expression_without_a_finite_value_is_named_not_predicted(family):
    # np.log(0) is -inf: the default predicted -inf (a probability of 0) and evaluate scored
    # it, while fit and missing="nan" take the row as having no value
    res = _log_fit(family)
    for z in (0.0, -1.0):  # -inf and NaN from finite columns
        new = {"z": np.array([2.0, z]), "a": np.zeros((2, 2))}
        with pytest.raises(MissingValueError, match=r"\['np.log\(z\)'\].*row 1"):
            res.predict(new)
        with pytest.raises(MissingValueError, match=r"\['np.log\(z\)'\].*row 1"):
            res.evaluate({**new, "y": np.array([1.0, 0.0])})
        padded = res.predict(new, missing="nan")
        assert np.isnan(padded.iloc[1])
        assert padded.iloc[0] == res.predict({"z": np.array([2.0]), "a": np.zeros((1, 2))}).iloc[0]


def test_an_unknown_response_does_not_make_a_new_row_incomplete():
    # rows to predict often have no response yet: predict reads none, so a NaN there dropped
    # the row (missing="drop") or gave it NaN (missing="nan") though it has every covariate
    frame, block = _frame("gaussian")
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, seed=0, honest=False)
    new = frame.iloc[:4].copy()
    new["y"] = [np.nan, 1.0, np.nan, 0.0]
    expected = res.predict(new.drop(columns="y"), blocks={"a": block[:4]})
    for missing in ("nan", "drop"):
        got = res.predict(new, blocks={"a": block[:4]}, missing=missing)
        pd.testing.assert_series_equal(got, expected, check_exact=True)
        assert got.attrs["dropped_rows"] == ()
    # evaluate scores the response: there a row without one is still dropped
    scored = res.evaluate(new, blocks={"a": block[:4]}, missing="drop")
    assert scored.attrs["dropped_rows"] == (0, 2)


def test_an_exposure_given_to_a_fit_without_one_is_named_as_such():
    # with missing=, a non-positive exposure was refused as "must be > 0" before the fit's own
    # refusal of any exposure
    frame, block = _frame("poisson")
    res = pearl.fit("y ~ x + block(a)", frame, blocks={"a": block}, family="poisson", seed=0,
                    honest=False)
    with pytest.raises(OptionError, match="this fit has no offset or exposure"):
        res.predict(frame.iloc[:3], blocks={"a": block[:3]}, exposure=[1.0, -1.0, 2.0],
                    missing="nan")
