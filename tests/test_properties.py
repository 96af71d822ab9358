"""Properties of PEARL fits on random data (hypothesis).

Each example draws a small problem (rows, 2-3 blocks of width 1-3, signal in
some of them, a seed) and checks a property against an independent
computation: the simplex and KKT conditions from the gradient computed here,
invariance under permuting candidates and under scaling the response, the
risk ordering, determinism, and the pickle round trip.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pearlstats as pearl

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Problem:
    y: np.ndarray
    blocks: dict
    seed: int
    new_blocks: dict

    @property
    def formula(self) -> str:
        return "y ~ " + " + ".join(f"block({name})" for name in self.blocks)

    def fit(self, y=None, **options):
        data = {"y": self.y if y is None else y}
        return pearl.fit(self.formula, data, blocks=self.blocks, seed=self.seed, **options)


@st.composite
def problems(draw, family: str = "gaussian"):
    n = draw(st.integers(40, 80))
    widths = draw(st.lists(st.integers(1, 3), min_size=2, max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    names = ["a", "b", "c"][: len(widths)]
    blocks = {name: rng.normal(size=(n + 5, width)) for name, width in zip(names, widths)}
    signal = sum(rng.normal() * block[:, 0] for block in blocks.values())
    if family == "gaussian":
        y = signal + rng.normal(scale=draw(st.sampled_from([0.3, 1.0, 3.0])), size=n + 5)
    else:
        y = (signal + rng.logistic(size=n + 5) > 0).astype(float)
    train = {name: block[:n] for name, block in blocks.items()}
    new = {name: block[n:] for name, block in blocks.items()}
    return Problem(y[:n], train, draw(st.integers(0, 10_000)), new)


def _squared_loss_gradient(res, y) -> np.ndarray:
    P = res.cv_predictions.to_numpy()
    return -2.0 * P.T @ (y - P @ res.weights.to_numpy()) / len(y)


def _cross_entropy_gradient(res, y) -> np.ndarray:
    P = res.cv_predictions.to_numpy()
    p = P @ res.weights.to_numpy()
    return -((y / p - (1 - y) / (1 - p))[:, None] * P).mean(axis=0)


def _assert_on_simplex(weights: np.ndarray):
    assert np.isfinite(weights).all()
    assert (weights >= 0).all() and not np.signbit(weights).any()
    assert abs(weights.sum() - 1.0) <= 1e-12


@SETTINGS
@given(problem=problems())
def test_gaussian_weights_are_on_the_simplex_and_satisfy_kkt(problem):
    res = problem.fit()
    w = res.weights.to_numpy()
    _assert_on_simplex(w)
    g = _squared_loss_gradient(res, problem.y)
    # KKT on the simplex: g_j >= lambda for all j, equality on the support, lambda = g'w.
    level = g @ w
    scale = max(res.weight_objective, 1e-12)
    assert g.min() >= level - 1e-7 * scale
    assert np.all(np.abs(g[w > 1e-6] - level) <= 1e-6 * scale)


@SETTINGS
@given(problem=problems(family="binomial"))
def test_binomial_weights_are_on_the_simplex_and_satisfy_kkt(problem):
    res = problem.fit(family="binomial", ridge=0.05)  # a ridge: random small samples may separate
    w = res.weights.to_numpy()
    _assert_on_simplex(w)
    g = _cross_entropy_gradient(res, problem.y)
    level = g @ w
    assert g.min() >= level - 1e-6
    assert np.all(np.abs(g[w > 1e-4] - level) <= 1e-5)


@SETTINGS
@given(problem=problems(), order_seed=st.integers(0, 2**16))
def test_permuting_the_candidates_permutes_the_weights(problem, order_seed):
    res = problem.fit()
    labels = res.candidate_labels
    shuffled = list(np.random.default_rng(order_seed).permutation(labels))
    permuted = problem.fit(candidates=shuffled)
    assert set(permuted.candidate_labels) == set(labels)
    assert permuted.weight_objective == pytest.approx(res.weight_objective, rel=1e-9)
    np.testing.assert_allclose(
        permuted.weights[labels].to_numpy(), res.weights.to_numpy(), atol=1e-6
    )


@SETTINGS
@given(problem=problems())
def test_scaling_y_scales_gaussian_predictions_and_keeps_the_weights(problem):
    res = problem.fit()
    scaled = problem.fit(y=7.0 * problem.y)
    np.testing.assert_allclose(scaled.weights.to_numpy(), res.weights.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(
        scaled.cv_predictions.to_numpy(),
        7.0 * res.cv_predictions.to_numpy(),
        rtol=1e-9,
        atol=1e-9 * np.abs(problem.y).max(),
    )
    new = {"y": np.zeros(5)}
    np.testing.assert_allclose(
        scaled.predict(new, blocks=problem.new_blocks),
        7.0 * res.predict(new, blocks=problem.new_blocks),
        rtol=1e-6,
        atol=1e-8,
    )
    assert scaled.weight_objective == pytest.approx(49.0 * res.weight_objective, rel=1e-8)


@SETTINGS
@given(problem=problems())
def test_pearl_cv_risk_is_at_most_every_candidates(problem):
    res = problem.fit()
    y = problem.y
    P = res.cv_predictions.to_numpy()
    risks = ((y[:, None] - P) ** 2).mean(axis=0)
    pearl_risk = np.mean((y - P @ res.weights.to_numpy()) ** 2)
    assert pearl_risk <= risks.min() * (1 + 1e-12)
    assert res.baselines.loc["PEARL", "cv_risk"] == pytest.approx(pearl_risk, rel=1e-12)


@SETTINGS
@given(problem=problems())
def test_same_seed_gives_identical_results(problem):
    first, second = problem.fit(), problem.fit()
    np.testing.assert_array_equal(first.folds, second.folds)
    np.testing.assert_array_equal(first.weights, second.weights)
    np.testing.assert_array_equal(first.cv_predictions, second.cv_predictions)
    new = {"y": np.zeros(5)}
    np.testing.assert_array_equal(first.predict(new, blocks=problem.new_blocks),
                                  second.predict(new, blocks=problem.new_blocks))


@settings(max_examples=5, deadline=None, derandomize=True)
@given(problem=problems(), family=st.sampled_from(["gaussian", "binomial"]))
def test_pickled_results_predict_identically(problem, family):
    y = problem.y if family == "gaussian" else (problem.y > np.median(problem.y)).astype(float)
    res = problem.fit(y=y, family=family, ridge=0.05 if family == "binomial" else 0.0)
    restored = pickle.loads(pickle.dumps(res))
    new = {"y": np.zeros(5)}
    np.testing.assert_array_equal(restored.predict(new, blocks=problem.new_blocks),
                                  res.predict(new, blocks=problem.new_blocks))
    np.testing.assert_array_equal(restored.weights, res.weights)


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(), weight_type=st.sampled_from(["frequency", "variance"]),
       integer_weights=st.booleans(), order_seed=st.integers(0, 2**16))
def test_permuting_labelled_rows_with_their_series_changes_nothing(
        problem, weight_type, integer_weights, order_seed):
    """Rows carry their labels: permuting a DataFrame's rows together with its pandas blocks,
    weights, offset and fold labels is the same data, so the same fit, predictions and scores
    (compared to rounding: the sums run in another order)."""
    rng = np.random.default_rng(order_seed)
    n = len(problem.y)
    labels = pd.Index([f"row{i}" for i in rng.permutation(n)])
    frame = pd.DataFrame({"y": problem.y}, index=labels)
    blocks = {name: pd.DataFrame(values, index=labels) for name, values in problem.blocks.items()}
    weights = pd.Series(rng.integers(1, 4, n) if integer_weights else rng.uniform(0.5, 2, n),
                        index=labels, dtype=float)
    offset = pd.Series(rng.normal(size=n), index=labels)
    folds = pd.Series(np.arange(n) % 5, index=labels)
    order = rng.permutation(n)

    def fit(rows):
        return pearl.fit(problem.formula, frame.iloc[rows],
                         blocks={name: block.iloc[rows] for name, block in blocks.items()},
                         weights=weights.iloc[rows], weight_type=weight_type,
                         offset=offset.iloc[rows], cv=folds.iloc[rows], seed=problem.seed,
                         honest=False)

    first, second = fit(np.arange(n)), fit(order)
    np.testing.assert_allclose(second.weights, first.weights, atol=1e-9)
    np.testing.assert_allclose(second.params, first.params, rtol=1e-9, atol=1e-12)
    m = len(next(iter(problem.new_blocks.values())))
    new_labels = pd.Index([f"new{i}" for i in range(m)])
    new = pd.DataFrame({"y": np.zeros(m)}, index=new_labels)
    new_blocks = {name: pd.DataFrame(v, index=new_labels)
                  for name, v in problem.new_blocks.items()}
    new_offset = pd.Series(rng.normal(size=m), index=new_labels)
    flipped = new_offset.iloc[::-1]
    np.testing.assert_allclose(second.predict(new, new_blocks, offset=flipped),
                               first.predict(new, new_blocks, offset=new_offset.to_numpy()),
                               rtol=1e-9)
    test_weights = pd.Series(rng.uniform(0.5, 2, m), index=new_labels)
    new = new.assign(y=rng.normal(size=m))
    pd.testing.assert_frame_equal(
        second.evaluate(new, new_blocks, weights=test_weights.iloc[::-1], offset=flipped),
        first.evaluate(new, new_blocks, weights=test_weights.to_numpy(),
                       offset=new_offset.to_numpy()),
        check_exact=False, rtol=1e-9)


@pytest.mark.parametrize("shrinkage", ["size", "cv"])
@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(), family=st.sampled_from(["gaussian", "binomial"]),
       count_seed=st.integers(0, 2**16))
def test_frequency_weight_k_is_the_row_repeated_k_times(problem, family, shrinkage, count_seed):
    # A row of frequency weight k is that row k times, each copy in its row's fold: the same
    # weights, CV risks, honest risks, CV+ intervals, shrinkage, bootstrap and evaluation.
    # Both fits solve the same (weighted) problems; the tolerances are the solvers' (weights
    # to 1e-8, Newton fits to 1e-10 relative), carried through ratios and quantiles.
    rng = np.random.default_rng(count_seed)
    y = problem.y if family == "gaussian" else (problem.y > np.median(problem.y)).astype(float)
    n = len(y)
    counts = rng.integers(1, 4, size=n)
    rows = np.repeat(np.arange(n), counts)
    folds = np.arange(n) % 5
    options = {"family": family, "seed": problem.seed, "honest": 3,
               "weight_shrinkage": shrinkage}
    res = pearl.fit(problem.formula, {"y": y}, blocks=problem.blocks, weights=counts,
                    weight_type="frequency", cv=folds, **options)
    dup = pearl.fit(problem.formula, {"y": y[rows]},
                    blocks={k: v[rows] for k, v in problem.blocks.items()}, cv=folds[rows],
                    **options)
    np.testing.assert_allclose(res.weights, dup.weights, atol=1e-7)
    np.testing.assert_allclose(res.cv_risk, dup.cv_risk, rtol=1e-8)
    assert list(res.failures["action"]) == list(dup.failures["action"])  # ladder, shrinkage
    columns = ["risk", "se", "ratio", "ratio_se"]
    np.testing.assert_allclose(res.honest[columns], dup.honest[columns], rtol=1e-6, atol=1e-9)
    if family == "gaussian":
        np.testing.assert_allclose(
            res.predict(problem.new_blocks, interval="prediction", alpha=0.2).to_numpy(),
            dup.predict(problem.new_blocks, interval="prediction", alpha=0.2).to_numpy(),
            rtol=1e-7, atol=1e-9)
    # evaluate: test weights k are the test row k times
    test_y = y[:5]
    test_blocks = {k: v[:5] for k, v in problem.blocks.items()}
    k = rng.integers(1, 4, size=5)
    again = np.repeat(np.arange(5), k)
    np.testing.assert_allclose(
        res.evaluate({"y": test_y}, blocks=test_blocks, weights=k).to_numpy(dtype=float),
        dup.evaluate({"y": test_y[again]},
                     blocks={b: v[again] for b, v in test_blocks.items()}).to_numpy(dtype=float),
        rtol=1e-7, atol=1e-10)
    # the bootstrap: with given fold labels whole folds are drawn, the weighted rows keeping
    # their weights and the duplicated rows their copies: the same resamples
    np.testing.assert_allclose(res.resample_weights("bootstrap", n_resamples=2, seed=5,
                                                    refit=True),
                               dup.resample_weights("bootstrap", n_resamples=2, seed=5,
                                                    refit=True), atol=1e-7)
