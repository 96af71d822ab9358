"""Rare classes and the nested cross-validation of ``res.honest`` (issue 26, item 4).

A class with m rows keeps m - ceil(m / K) of them in every one of K stratified outer training
sets, and the procedure re-run there needs 2 of them for its inner folds. Where that holds the
honest risks are those of ``pearl.fit`` re-run on each outer training set; where it cannot,
``res.honest`` is unavailable with that reason and the summary shows the in-sample CV risks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pearlstats as pearl

FORMULA = "y ~ block(a) + block(b)"


def _rare(n: int, rare_rows: list, family: str, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    if family == "binomial":
        y = np.zeros(n)
        y[rare_rows] = 1.0
    else:  # two common classes by the sign of a[:, 0], and a rare third one
        y = np.where(a[:, 0] + rng.normal(size=n) > 0, "up", "down").astype(object)
        y[rare_rows] = "rare"
    return {"y": y, "a": a, "b": b}


def _rows(data: dict, rows: np.ndarray) -> dict:
    return {key: value[rows] for key, value in data.items()}


def _cross_entropy(y, probabilities, classes) -> np.ndarray:
    """-log of the probability given to the observed class, computed here from the predictions."""
    if probabilities.ndim == 1:
        return -np.log(np.where(y == 1.0, probabilities, 1.0 - probabilities))
    columns = np.searchsorted(np.asarray(classes), np.asarray(y))
    return -np.log(probabilities[np.arange(len(y)), columns])


@pytest.mark.parametrize("family", ["binomial", "multinomial"])
def test_three_rare_rows_are_spread_over_the_outer_folds_and_scored_honestly(family):
    data = _rare(200, [3, 50, 170], family)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit(FORMULA, data, family=family, seed=0)
        table = res.honest
        nested = res.honest_risk()
    rare = data["y"] == (1.0 if family == "binomial" else "rare")
    # each of the three rare rows in its own outer fold: every training set keeps two of them
    assert len(set(nested.outer_folds[rare].tolist())) == 3
    losses = np.empty(200)
    for k in range(nested.n_outer):
        train = np.flatnonzero(nested.outer_folds != k)
        test = np.flatnonzero(nested.outer_folds == k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pearl.PearlWarning)
            inner = pearl.fit(FORMULA, _rows(data, train), family=family,
                              cv=nested.inner_folds[k], seed=0, honest=False)
        predicted = inner.predict(_rows(data, test)).to_numpy()
        losses[test] = _cross_entropy(data["y"][test], predicted, inner.classes)
    assert table.loc["PEARL", "risk"] == pytest.approx(losses.mean(), rel=1e-7)
    assert table.loc["PEARL", "se"] == pytest.approx(losses.std(ddof=1) / np.sqrt(200), rel=1e-6)


@pytest.mark.parametrize("family", ["binomial", "multinomial"])
def test_two_rare_rows_make_honest_unavailable_with_the_true_reason(family):
    data = _rare(200, [3, 50], family)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.SeparationWarning)
        res = pearl.fit(FORMULA, data, family=family, seed=0)
    name = "1.0" if family == "binomial" else "'rare'"
    with pytest.warns(pearl.PearlWarning, match=f"too rare for 5 outer folds: {name} "
                                                r"\(2 rows; outer fold\(s\) \[\d, \d\] keep 1"):
        assert res.honest is None
    assert "a class needs at least 3 rows" in res.honest_failure
    assert "occur in only one row" not in res.honest_failure
    text = str(res.summary())
    assert "Strategies (in-sample CV risk, optimistic)" in text
    assert "Honest risk could not be computed: class(es) too rare" in text.replace("\n", " ")
    # the fallback rows are the in-sample CV risks
    assert f"{res.baselines.loc['SA-cand', 'cv_risk']:.4f}" in text


def test_fewer_outer_folds_need_more_rows_of_a_class():
    # K = 2: a class needs m - ceil(m / 2) >= 2, so 4 rows; 3 leave one training set with 1
    data = _rare(200, [3, 50, 170], "binomial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.SeparationWarning)
        res = pearl.fit(FORMULA, data, family="binomial", seed=0, honest=2)
    with pytest.warns(pearl.PearlWarning, match="a class needs at least 4 rows"):
        assert res.honest is None
    data = _rare(200, [3, 50, 170, 199], "binomial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit(FORMULA, data, family="binomial", seed=0, honest=2)
        assert np.isfinite(res.honest["risk"]).all()
