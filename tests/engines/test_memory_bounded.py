"""The engines' passes over rows hold a block of rows at a time, not copies of all rows (issue 27).

Numbers are checked against the direct, all-rows computation (the memory itself is measured
by ``benchmarks/bench_memory.py``, not asserted here).
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import xlogy

from pearlstats.backends import chunks
from pearlstats.backends.columns import ColumnStack
from pearlstats.design.candidates import Candidate
from pearlstats.engines import glm
from pearlstats.engines.glm import glm_cv_predict


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
def test_likelihood_summed_over_row_blocks_equals_the_all_rows_formulas(kind, monkeypatch):
    rng = np.random.default_rng(0)
    n = 2 * glm._BLOCK_ROWS + 123  # three blocks, the last one partial
    Z, theta = rng.normal(size=(n, 4)), rng.normal(scale=0.3, size=(3, 4))
    weights = (rng.uniform(size=(3, n)) > 0.3).astype(float)
    y = (rng.uniform(size=n) > 0.5).astype(float) if kind == "binomial" else rng.poisson(
        1.5, size=n).astype(float)
    n_train = weights.sum(axis=1)
    eta = theta @ Z.T
    mu = 1 / (1 + np.exp(-eta)) if kind == "binomial" else np.exp(eta)
    var = mu * (1 - mu) if kind == "binomial" else mu
    # Poisson: measured from the saturated model (minus y - y log y, the value at mu = y)
    rows = (np.log1p(np.exp(eta)) - y * eta if kind == "binomial"
            else mu - y * eta - (y - xlogy(y, y)))
    f, g, H = glm._make_loss(kind, Z, y, weights, n_train)(theta, 2)
    np.testing.assert_allclose(f, (weights * rows).sum(axis=1) / n_train, rtol=1e-12)
    np.testing.assert_allclose(g, (weights * (mu - y)) @ Z / n_train[:, None], rtol=1e-11,
                               atol=1e-14)
    np.testing.assert_allclose(H, np.einsum("kn,ni,nj->kij", weights * var, Z, Z)
                               / n_train[:, None, None], rtol=1e-12)
    # The blocks are the engine's own, whatever the backend's chunk size.
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 7)
    again = glm._make_loss(kind, Z, y, weights, n_train)(theta, 2)
    for value, same in zip((f, g, H), again):
        np.testing.assert_array_equal(same, value)


def test_logistic_folds_over_row_blocks_match_statsmodels_on_a_column_stack():
    # More rows than one Hessian block, the design read in place from its blocks.
    rng = np.random.default_rng(1)
    n = glm._BLOCK_ROWS + 1500
    a, b = rng.normal(size=(n, 2)), rng.normal(loc=3.0, size=(n, 1))
    y = (a[:, 0] - 0.5 * b[:, 0] + 1.5 + rng.logistic(size=n) > 0).astype(float)
    X = ColumnStack([np.ones((n, 1)), a, b])
    folds = np.arange(n) % 3
    candidate = Candidate("a+b", ("a", "b"), np.arange(4))
    out = glm_cv_predict("binomial", X, y, [candidate], folds)
    stacked = np.asarray(X)
    for k in range(3):
        fit = sm.Logit(y[folds != k], stacked[folds != k]).fit(disp=0, tol=1e-12, maxiter=100)
        np.testing.assert_allclose(out.predictions[folds == k, 0],
                                   fit.predict(stacked[folds == k]), rtol=0, atol=1e-8)
    # The numbers the stacked array gives: the column stack changes only the grouping of the
    # products' sums (one run of 4 columns against three runs), so rounding; both fits stop
    # within about 1e-12 of the same optimum (decrement 1e-24).
    np.testing.assert_allclose(
        glm_cv_predict("binomial", stacked, y, [candidate], folds).predictions, out.predictions,
        rtol=0, atol=1e-12)


@pytest.mark.parametrize("rows", [slice(3, 40), np.array([7, 0, 7, 55]), np.arange(60) % 4 == 1])
def test_column_stack_indexing_gives_the_stacked_arrays_values_and_layout(rows):
    rng = np.random.default_rng(2)
    parts = [rng.normal(size=(60, w)) for w in (1, 3, 2)]
    parts[1] = np.asfortranarray(parts[1])
    X, stacked = ColumnStack(parts), np.hstack(parts)
    for key in [rows, (rows, slice(1, 5)), (slice(None), np.array([4, 0, 2])),
                np.ix_(np.arange(60)[rows], [5, 1])]:
        want, got = stacked[key], X[key]
        np.testing.assert_array_equal(got, want)
        assert got.flags.f_contiguous == want.flags.f_contiguous
        # reductions round alike on the same layout
        assert got.sum(axis=0).tobytes() == want.sum(axis=0).tobytes()
    index = np.array([5, 2, 9])
    np.testing.assert_array_equal(np.take(X, index, axis=0), np.take(stacked, index, axis=0))
    with pytest.raises(ValueError, match="read-only"):
        X.parts[0][0, 0] = 1.0  # pearlstats never writes into the caller's blocks


def test_column_moments_of_a_column_major_candidate_read_eight_columns_at_a_time():
    from pearlstats.engines._common import _COLUMN_BLOCK, _column_moments

    rng = np.random.default_rng(3)
    X = np.asfortranarray(np.column_stack(
        [rng.normal(loc=rng.uniform(-1e3, 1e3), scale=10.0 ** rng.uniform(-3, 3), size=500)
         for _ in range(2 * _COLUMN_BLOCK + 3)] + [np.full(500, 2.0)]))
    mean, sd, big = _column_moments(X)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(sd, X.std(axis=0), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(big, np.abs(X).max(axis=0))
    assert sd[-1] == 0.0  # a constant column's SD is exactly 0
    # the same numbers as the C-ordered copy read at once, to rounding
    np.testing.assert_allclose(np.concatenate(_column_moments(np.ascontiguousarray(X))),
                               np.concatenate([mean, sd, big]), rtol=1e-13, atol=0)


def test_weighted_columns_over_row_blocks_equal_the_all_rows_average(monkeypatch):
    # The weights stage's combined prediction, summed a block of rows at a time (no copy of the
    # n x J x C probabilities), equals the direct average over the used candidates; a failed
    # candidate's NaN column (weight 0) stays out.
    from pearlstats.weights import losses

    monkeypatch.setattr(losses, "_COMBINE_ROWS", 7)  # several blocks, the last partial
    rng = np.random.default_rng(2)
    P = rng.dirichlet(np.ones(4), size=(30, 5))  # (n, J, C)
    P[:, 3] = np.nan
    w = np.array([0.5, 0.0, 0.2, 0.0, 0.3])
    expected = 0.5 * P[:, 0] + 0.2 * P[:, 2] + 0.3 * P[:, 4]
    np.testing.assert_allclose(losses.weighted_columns(P, w), expected, rtol=1e-15)
    np.testing.assert_allclose(losses.weighted_columns(P[:, :, 1], w), expected[:, 1],
                               rtol=1e-15)


def test_duplicate_summaries_over_row_blocks_equal_the_direct_products(monkeypatch):
    # The projections and means that order candidates for the duplicate check, from a strided
    # view of a wider array (the pool's columns), summed over blocks of rows.
    from pearlstats.weights import solvers

    monkeypatch.setattr(solvers, "_SUMMARY_ROWS", 6)
    rng = np.random.default_rng(3)
    wide = rng.dirichlet(np.ones(3), size=(20, 6))
    sub = wide[:, :4]  # not contiguous
    direction, classes = rng.standard_normal(20), rng.standard_normal(3)
    score, tolerance = solvers._column_summaries(sub, direction, classes)
    np.testing.assert_allclose(score, np.einsum("n,njc,c->j", direction, sub, classes),
                               rtol=1e-13)
    mean = sub.mean(axis=0)
    spread = np.maximum(sub.max(axis=0) - mean, mean - sub.min(axis=0)).max(axis=1)
    np.testing.assert_allclose(tolerance, solvers._DUPLICATE_RTOL * spread
                               + solvers._DUPLICATE_ULPS * np.spacing(np.abs(sub).max(axis=(0, 2))),
                               rtol=1e-12)


def test_multinomial_folds_from_raw_column_blocks_match_mnlogit(monkeypatch):
    # The Newton-CG passes read the raw columns of a column stack in place, a block of rows at
    # a time (blocks of 97 rows here, the last partial), with no standardised n x p copy; a
    # column far from 0 (mean 3) exercises the centring after the products.
    from pearlstats.engines import multinomial

    monkeypatch.setattr(multinomial, "ROWS_PER_BLOCK", 97)
    rng = np.random.default_rng(2)
    n = 900
    a, b = rng.normal(size=(n, 2)), rng.normal(loc=3.0, size=(n, 1))
    eta = np.column_stack([np.zeros(n), a[:, 0] - 0.5, 0.8 * (b[:, 0] - 3) - a[:, 1]])
    codes = (rng.uniform(size=(n, 1)) > np.cumsum(np.exp(eta) / np.exp(eta).sum(axis=1,
                                                   keepdims=True), axis=1)).sum(axis=1)
    X = ColumnStack([np.ones((n, 1)), a, b])
    folds = np.arange(n) % 3
    candidate = Candidate("a+b", ("a", "b"), np.arange(4))
    out = multinomial.multinomial_cv_predict(X, codes, 3, [candidate], folds)
    stacked = np.asarray(X)
    for k in range(3):
        train, test = folds != k, folds == k
        fit = sm.MNLogit(codes[train], stacked[train]).fit(disp=0, method="newton", tol=1e-12,
                                                          maxiter=100)
        # both converge to 1e-10 or better on a well-conditioned 8-parameter problem
        np.testing.assert_allclose(out.predictions[test, 0], fit.predict(stacked[test]),
                                   rtol=0, atol=1e-8)


def test_multinomial_grams_over_row_blocks_equal_the_weighted_products(monkeypatch):
    from pearlstats.engines import multinomial

    monkeypatch.setattr(multinomial, "ROWS_PER_BLOCK", 13)
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(50, 4))
    folds = (rng.uniform(size=(3, 50)) > 0.3).astype(float)  # 0/1: the held-out form
    varied = rng.uniform(0.5, 2.0, size=(2, 50))  # the general form
    for weights in (folds, varied):
        expected = np.einsum("kn,ni,nj->kij", weights, Z, Z) / weights.sum(axis=1)[:, None, None]
        np.testing.assert_allclose(multinomial._grams(Z, weights), expected, rtol=1e-12)
