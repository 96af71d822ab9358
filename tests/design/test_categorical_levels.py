"""Categorical covariates at prediction (issue 26, item 7): a pandas Categorical whose categories
are a subset or a reordering of the training levels predicts as the same rows with the training
categories; a value outside the training levels is refused by name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl

LEVELS = ["lo", "mid", "hi"]


def _fit(term: str, categorical: bool):
    rng = np.random.default_rng(0)
    n = 90
    a = rng.normal(size=(n, 2))
    g = rng.choice(LEVELS, n)
    frame = pd.DataFrame({
        "y": a[:, 0] + (g == "hi") - 0.5 * (g == "mid") + rng.normal(size=n),
        "g": pd.Categorical(g, categories=LEVELS) if categorical else g,
    })
    res = pearl.fit(f"y ~ {term} + block(a)", frame, blocks={"a": a}, seed=0)
    return res, frame, a


@pytest.mark.parametrize("term", ["g", "C(g)", "C(g, Treatment('hi'))"])
@pytest.mark.parametrize("categorical", [True, False])
@pytest.mark.parametrize("categories",
                         [["hi", "lo"], ["hi", "mid", "lo"], ["mid", "lo", "hi", "unused"]])
def test_subset_and_reordered_categories_predict_as_the_training_categories(term, categorical,
                                                                            categories):
    res, frame, a = _fit(term, categorical)
    rows = frame.iloc[:8].copy()
    values = rows["g"].astype(str).to_numpy()
    keep = np.isin(values, categories)
    rows, values, blocks = rows[keep], values[keep], {"a": a[:8][keep]}
    assert len(rows) >= 4
    expected = res.predict(rows.assign(g=pd.Categorical(values, categories=LEVELS)), blocks=blocks)
    given = res.predict(rows.assign(g=pd.Categorical(values, categories=categories)),
                        blocks=blocks)
    np.testing.assert_array_equal(given.to_numpy(), expected.to_numpy())
    # and as the same rows given as plain strings
    np.testing.assert_array_equal(res.predict(rows.assign(g=values), blocks=blocks).to_numpy(),
                                  expected.to_numpy())


@pytest.mark.parametrize("categorical_new", [True, False])
def test_an_unknown_level_is_refused_by_name(categorical_new):
    res, frame, a = _fit("C(g)", True)
    values = ["lo", "zzz", "hi", "lo"]
    rows = frame.iloc[:4].assign(g=pd.Categorical(values) if categorical_new else values)
    with pytest.raises(pearl.DataError, match=r"covariate term 'C\(g\)' for the new rows: "
                       r"column 'g' has level\(s\) \['zzz'\] that the fit never saw; "
                       r"its known levels are \['lo', 'mid', 'hi'\]"):
        res.predict(rows, blocks={"a": a[:4]})


@pytest.mark.parametrize("term", ["g", "C(g)"])
def test_a_category_without_training_rows_is_refused_not_predicted_as_the_reference(term):
    """A pandas Categorical category no fitted row has ("none") gets a column of zeros and a
    NaN coefficient; a new row of it was predicted exactly as the reference level ("lo"),
    silently, where a string column's unseen level is refused."""
    rng = np.random.default_rng(0)
    n = 90
    a = rng.normal(size=(n, 2))
    g = rng.choice(LEVELS, n)
    frame = pd.DataFrame({"y": a[:, 0] + (g == "hi") + rng.normal(size=n),
                          "g": pd.Categorical(g, categories=LEVELS + ["none"])})
    with pytest.warns(pearl.UnidentifiedCoefficientWarning):
        res = pearl.fit(f"y ~ {term} + block(a)", frame, blocks={"a": a}, seed=0, honest=False)
    assert np.isnan(res.params[f"{'C(g)' if term == 'C(g)' else 'g'}[T.none]"])
    rows = pd.DataFrame({"g": pd.Categorical(["lo", "none"], categories=LEVELS + ["none"])})
    with pytest.raises(pearl.DataError, match=r"level\(s\) \['none'\] that the fit never saw "
                       r"\(categories of the fit's pandas Categorical without rows: \['none'\].*"
                       r"known levels are \['lo', 'mid', 'hi'\]"):
        res.predict(rows, blocks={"a": np.zeros((2, 2))})
    # the fit's own levels, in a Categorical with the empty category, still predict
    kept = res.predict(rows.iloc[:1], blocks={"a": np.zeros((1, 2))})
    np.testing.assert_array_equal(
        kept.to_numpy(), res.predict(pd.DataFrame({"g": ["lo"]}), blocks={"a": np.zeros((1, 2))}))


def test_a_boolean_covariate_given_as_strings_is_named_boolean_not_numeric():
    """New rows giving a True/False covariate as the strings 'True'/'False' were told it
    "was numeric at fit time"; the fit had coded it as b[T.True]."""
    rng = np.random.default_rng(5)
    n = 60
    frame = pd.DataFrame({"x": rng.normal(size=n), "b": rng.uniform(size=n) < 0.5})
    a = rng.normal(size=(n, 1))
    frame["y"] = frame.x + frame.b + a[:, 0] + rng.normal(size=n)
    res = pearl.fit("y ~ x + b + block(a)", frame, blocks={"a": a}, seed=0, honest=False)
    with pytest.raises(pearl.DataError, match=r"column 'b' was boolean \(True/False\) at fit "
                       r"time but holds \['True'\] in the new rows; give True/False"):
        res.predict(pd.DataFrame({"x": [0.0], "b": ["True"]}), blocks={"a": np.zeros((1, 1))})
    # as the message says, the comparison gives the prediction of b = True
    given = pd.DataFrame({"x": [0.0], "b": pd.Series(["True"]) == "True"})
    np.testing.assert_array_equal(
        res.predict(given, blocks={"a": np.zeros((1, 1))}).to_numpy(),
        res.predict(pd.DataFrame({"x": [0.0], "b": [True]}), blocks={"a": np.zeros((1, 1))}))
