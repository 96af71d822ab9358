"""``predict(which="linear")``: the link of the averaged mean (R's ``type = "link"``).

References: statsmodels' ``predict(which="linear")`` of the same model on a one-candidate fit
(the average is that candidate), and the family's link applied to ``predict()`` for several
weighted candidates. Our refits equal statsmodels' to about 1e-10 relative on these designs
(statsmodels' Newton is run to a gradient of 1e-12), so linear predictors of size O(1) agree to
1e-8.
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.special import logit

import pearlstats as pearl
from pearlstats.exceptions import OptionError

N = 150


def _rows(family: str, seed: int = 0, n: int = N):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    eta = 0.3 + 0.8 * a[:, 0] - 0.5 * b[:, 1]
    if family == "binomial":
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif family == "poisson":
        y = rng.poisson(np.exp(0.5 * eta)).astype(float)
    elif family == "gaussian":
        y = eta + rng.normal(size=n)
    else:
        y = rng.integers(0, 3, n) + (eta > 0.5)
    return {"y": y, "a": a, "b": b}


def _fit(formula: str, data: dict, family: str, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pearl.fit(formula, data, family=family, honest=False, seed=0, **options)


def _exog(a: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(a)), a])


@pytest.mark.parametrize("family", ["binomial", "poisson", "multinomial"])
def test_one_candidate_equals_statsmodels_linear_prediction(family):
    data, new = _rows(family), _rows(family, seed=1, n=7)
    res = _fit("y ~ block(a)", data, family)
    ours = res.predict({"a": new["a"]}, which="linear")
    X = _exog(data["a"])
    if family == "poisson":
        model = sm.GLM(data["y"], X, family=sm.families.Poisson()).fit(tol=1e-12)
    elif family == "binomial":
        model = sm.Logit(data["y"], X).fit(method="newton", tol=1e-12, disp=0)
    else:
        codes = np.searchsorted(np.unique(data["y"]), data["y"])
        model = sm.MNLogit(codes, X).fit(method="newton", tol=1e-12, maxiter=100, disp=0)
    theirs = model.predict(_exog(new["a"]), which="linear")
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-8, atol=1e-10)
    if family == "multinomial":  # the first class is the reference, as MNLogit's
        assert list(ours.columns) == list(res.classes)
        assert (ours.iloc[:, 0] == 0).all()


def test_poisson_linear_prediction_holds_the_new_rows_exposure():
    data, new = _rows("poisson"), _rows("poisson", seed=2, n=5)
    exposure = np.random.default_rng(3).uniform(1, 3, N)
    res = _fit("y ~ block(a)", data, "poisson", exposure=exposure)
    new_exposure = np.array([1.0, 2.0, 0.5, 4.0, 1.5])
    ours = res.predict({"a": new["a"]}, which="linear", exposure=new_exposure)
    model = sm.GLM(data["y"], _exog(data["a"]), family=sm.families.Poisson(),
                   exposure=exposure).fit(tol=1e-12)
    theirs = model.predict(_exog(new["a"]), exposure=new_exposure, which="linear")
    np.testing.assert_allclose(ours.to_numpy(), theirs, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson", "multinomial"])
def test_several_candidates_give_the_link_of_the_averaged_mean(family):
    data = _rows(family)
    new = _rows(family, seed=4, n=6)
    res = _fit("y ~ block(a) + block(b)", data, family)
    assert (res.weights > 0).sum() >= 2  # an average, not one candidate
    mean = res.predict({"a": new["a"], "b": new["b"]})
    linear = res.predict({"a": new["a"], "b": new["b"]}, which="linear")
    expected = {"gaussian": lambda m: m, "binomial": logit, "poisson": np.log,
                "multinomial": lambda p: np.log(p) - np.log(p[:, :1])}[family]
    # the transform's own rounding: a few ulps of log's and logit's values, O(1) here
    np.testing.assert_allclose(np.asarray(linear), expected(np.asarray(mean)), rtol=1e-13,
                               atol=1e-14)
    if family != "multinomial":
        assert linear.name == {"gaussian": "prediction", "binomial": f"logit({mean.name})",
                               "poisson": "log(prediction)"}[family]
        pd.testing.assert_index_equal(linear.index, mean.index)


def test_missing_rows_keep_their_place_and_dropped_rows():
    data = _rows("binomial")
    new = _rows("binomial", seed=5, n=4)
    new["a"][2, 0] = np.nan
    res = _fit("y ~ block(a) + block(b)", data, "binomial")
    padded = res.predict({"a": new["a"], "b": new["b"]}, which="linear", missing="nan")
    assert padded.isna().tolist() == [False, False, True, False]
    dropped = res.predict({"a": new["a"], "b": new["b"]}, which="linear", missing="drop")
    assert dropped.attrs["dropped_rows"] == (2,)
    np.testing.assert_array_equal(dropped.to_numpy(), padded.dropna().to_numpy())


def test_dask_rows_are_transformed_lazily():
    data = _rows("multinomial")
    res = _fit("y ~ block(a) + block(b)", data, "multinomial")
    lazy = res.predict({name: da.from_array(data[name], chunks=(50, -1)) for name in "ab"},
                       which="linear")
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(),
                               res.predict({"a": data["a"], "b": data["b"]},
                                           which="linear").to_numpy(), rtol=1e-12, atol=1e-13)


def test_bad_which_and_intervals_are_refused_by_name():
    data = _rows("binomial")
    res = _fit("y ~ block(a)", data, "binomial")
    new = {"a": np.zeros((2, 2))}
    with pytest.raises(OptionError, match="which='link'.*'mean'.*'linear'"):
        res.predict(new, which="link")
    with pytest.raises(OptionError, match="point predictions.*interval='set'"):
        res.predict(new, which="linear", interval="set")
