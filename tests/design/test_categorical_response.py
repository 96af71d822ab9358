"""A categorical response (a pandas Categorical) whose categories include one without rows.

The classes are the categories that have rows, in the categories' order; the empty one is named
in a PearlWarning (R's ``nnet::multinom`` drops an empty group with a warning too), and the fit
equals the one on the same labels given as strings with the empty category left out.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from pearlstats.exceptions import PearlWarning


def _data(n: int = 150):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(n, 2))
    b = rng.normal(size=(n, 2))
    score = a[:, 0] + rng.logistic(size=n)
    labels = np.where(score < -0.5, "Dem", np.where(score > 0.5, "Rep", "Ind"))
    return labels, {"a": a, "b": b}


@pytest.mark.parametrize("family, keep", [("multinomial", ["Rep", "Dem", "Ind"]),
                                          ("binomial", ["Rep", "Dem"])])
def test_an_empty_category_is_named_and_the_fit_is_that_of_the_present_ones(family, keep):
    labels, blocks = _data()
    rows = np.isin(labels, keep)
    labels, blocks = labels[rows], {k: v[rows] for k, v in blocks.items()}
    categories = keep[:1] + ["Green"] + keep[1:]
    given = pd.DataFrame({"y": pd.Categorical(labels, categories=categories)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit("y ~ block(a) + block(b)", given, blocks=blocks, family=family,
                        honest=False, seed=0)
    # nothing from pandas (its deprecation of rebuilding a Categorical from one whose dtype
    # has other categories), and the empty category named once
    assert not [w for w in caught if w.category.__module__.startswith("pandas")]
    named = [w for w in caught
             if issubclass(w.category, PearlWarning) and "Green" in str(w.message)]
    assert len(named) == 1
    assert res.classes == keep  # the categories' order, not sorted
    plain = pd.DataFrame({"y": pd.Categorical(labels, categories=keep)})
    reference = pearl.fit("y ~ block(a) + block(b)", plain, blocks=blocks, family=family,
                          honest=False, seed=0)
    # the same problem on the same folds: the same numbers exactly
    np.testing.assert_array_equal(res.cv_predictions.to_numpy(),
                                  reference.cv_predictions.to_numpy())
    np.testing.assert_array_equal(res.weights.to_numpy(), reference.weights.to_numpy())


def test_a_categorical_response_without_empty_categories_warns_nothing():
    labels, blocks = _data()
    given = pd.DataFrame({"y": pd.Categorical(labels, categories=["Rep", "Dem", "Ind"])})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = pearl.fit("y ~ block(a) + block(b)", given, blocks=blocks, family="multinomial",
                        honest=False, seed=0)
    assert res.classes == ["Rep", "Dem", "Ind"]
