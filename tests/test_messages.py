"""Messages and warnings a user meets (issue 26, item 6): each names what is wrong, in the
user's terms (their argument, their rows, their columns), and what would be right."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pearlstats as pearl

FORMULA = "y ~ block(a) + block(b)"


def _data(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    return {"y": a[:, 0] - b[:, 1] + rng.normal(size=n), "a": a, "b": b}


def test_honest_true_is_the_default_number_of_outer_folds():
    data = _data(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        as_true = pearl.fit(FORMULA, data, seed=1, honest=True)
        as_five = pearl.fit(FORMULA, data, seed=1, honest=5)
        assert as_true.stages.honest == 5
        np.testing.assert_array_equal(as_true.honest.to_numpy(), as_five.honest.to_numpy())
    assert pearl.fit(FORMULA, data, seed=1, honest=np.False_).honest is None


def test_more_outer_folds_than_rows_names_honest_not_cv():
    res = pearl.fit(FORMULA, _data(150), seed=1, honest=200)
    with pytest.warns(pearl.PearlWarning,
                      match="honest=200 outer folds but only 150 rows; use honest <= 150$"):
        assert res.honest is None
    assert "cv=" not in res.honest_failure
