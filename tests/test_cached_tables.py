"""Cached tables: each reader gets a table it may edit without touching the cache, and the
multinomial out-of-fold table does not copy the stored probabilities to be cached."""

from __future__ import annotations

import numpy as np
import pytest

import pearlstats as pearl
from pearlstats.results import readonly


@pytest.fixture(scope="module")
def multinomial_fit():
    rng = np.random.default_rng(0)
    n = 120
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    eta = np.column_stack([np.zeros(n), a[:, 0], -b[:, 1]])
    p = np.exp(eta) / np.exp(eta).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > p.cumsum(axis=1)).sum(axis=1).astype(float)
    return pearl.fit("y ~ block(a) + block(b)", {"y": y}, blocks={"a": a, "b": b},
                     family="multinomial", seed=0, progress=False)


def test_editing_a_read_table_leaves_the_cache_and_the_stored_predictions(multinomial_fit):
    res = multinomial_fit
    first = res.cv_predictions
    kept = first.to_numpy().copy()
    first.iloc[0, 0] = 123.0
    first.iloc[:, 1] = -1.0
    np.testing.assert_array_equal(res.cv_predictions.to_numpy(), kept)
    np.testing.assert_array_equal(res.cv_predictions.to_numpy().reshape(kept.shape),
                                  res._predictions[:, :len(res.candidate_labels)]
                                  .reshape(kept.shape))


@pytest.mark.skipif(not readonly._COPY_ON_WRITE, reason="pandas < 3 copies for every reader")
def test_the_multinomial_table_shares_the_stored_probabilities(multinomial_fit):
    # n x J x C numbers, the largest array of a fit: neither the cache nor a reader's table
    # copies it until written (pandas' copy on write).
    res = multinomial_fit
    assert np.shares_memory(res.cv_predictions.to_numpy(), res._predictions)

