"""Per-fold moments from one pass over row chunks, against direct computations on the rows."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

import pearlstats.backends.chunks as chunks
from pearlstats.design.candidates import build_candidates
from pearlstats.design.folds import make_folds
from pearlstats.engines import ols
from pearlstats.engines.moments import design_from_moments, fold_moments, standardised_systems
from pearlstats.engines.ols import ols_cv_predict, ols_fit


def _data(n=90, seed=0, offset=0.0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 4)) * [1, 10, 1e-3, 2] + offset])
    y = X[:, 1] - X[:, 3] * 100 + rng.normal(size=n)
    return X, y


def _direct(W: np.ndarray, rows: np.ndarray):
    """Count, means and centred cross products of the rows of W, in extended precision."""
    part = W[rows].astype(np.longdouble)
    centred = part - part.mean(axis=0)
    return rows.sum(), np.asarray(part.mean(axis=0), float), np.asarray(centred.T @ centred, float)


def _in_units(m, g):
    unit = m.unit
    return m.mean[g] * unit + m.pilot, m.cross[g] * np.outer(unit, unit)


@pytest.mark.parametrize("chunk_rows", [7, 13, 64, 90])
@pytest.mark.parametrize("offset", [0.0, 1e8])
def test_fold_and_training_moments_equal_direct_ones_at_any_chunk_size(chunk_rows, offset):
    X, y = _data(offset=offset)
    W = np.column_stack([X, y])
    folds = make_folds(4, len(y), seed=1)
    m = fold_moments(X, y, folds, np.arange(4), chunk_rows=chunk_rows)
    train = m.complements()
    assert m.count[-1] == 0  # every row is in one of the folds
    for k in range(4):
        for moments, rows in ((m, folds == k), (train, folds != k)):
            n, mean, cross = _direct(W, rows)
            got_mean, got_cross = _in_units(moments, k)
            assert moments.count[k] == n
            assert np.all(np.abs(got_mean - mean) <= 1e-15 * np.abs(W).max(axis=0))
            scale = np.sqrt(np.outer(np.diagonal(cross), np.diagonal(cross)))
            assert np.all(np.abs(got_cross - cross) <= 1e-12 * scale + 1e-300)


def test_results_do_not_depend_on_the_chunk_size():
    X, y = _data(n=200, seed=3)
    folds = make_folds(5, 200, seed=2)
    reference = fold_moments(X, y, folds, np.arange(5), chunk_rows=200).complements()
    for size in (7, 31, 199):
        other = fold_moments(X, y, folds, np.arange(5), chunk_rows=size).complements()
        for g in range(5):
            for a, b in zip(_in_units(other, g), _in_units(reference, g)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


def test_a_fold_absent_from_chunks_and_an_empty_fold_label():
    X, y = _data(n=60, seed=4)
    W = np.column_stack([X, y])
    folds = np.repeat([0, 2, 3], 20)  # fold 1 has no rows; chunks of 7 rows hold one or two folds
    m = fold_moments(X, y, folds, np.arange(4), chunk_rows=7)
    assert m.count.tolist() == [20, 0, 20, 20, 0]
    assert np.all(m.low[1] == np.inf) and np.all(m.mean[1] == 0)
    train = m.complements()
    n, mean, cross = _direct(W, folds != 1)  # the complement of the empty fold: every row
    assert train.count[1] == n == 60
    np.testing.assert_allclose(_in_units(train, 1)[0], mean, rtol=1e-15)
    np.testing.assert_allclose(_in_units(train, 1)[1], cross, rtol=1e-12, atol=1e-9)


def test_a_subset_of_folds_puts_the_other_rows_in_the_last_group():
    X, y = _data(n=50, seed=5)
    folds = np.arange(50) % 5
    m = fold_moments(X, y, folds, np.array([1, 3]), chunk_rows=7)
    assert m.count.tolist() == [10, 10, 30]
    train = m.complements()
    W = np.column_stack([X, y])
    n, mean, cross = _direct(W, folds != 3)
    assert train.count[1] == n
    np.testing.assert_allclose(_in_units(train, 1)[1], cross, rtol=1e-12, atol=1e-9)


def test_power_of_two_units_make_tiny_columns_exact():
    X, y = _data(n=40, seed=6)
    folds = np.arange(40) % 4
    tiny = X.copy()
    tiny[:, 1:] *= 2.0**-700  # squares would underflow to 0 without the units
    base = fold_moments(X, y, folds, np.arange(4), chunk_rows=7)
    small = fold_moments(tiny, y, folds, np.arange(4), chunk_rows=7)
    np.testing.assert_array_equal(small.mean, base.mean)
    np.testing.assert_array_equal(small.cross, base.cross)
    np.testing.assert_array_equal(small.unit[1:5], base.unit[1:5] * 2.0**-700)


def test_constant_columns_have_exact_means_and_no_spread():
    X, y = _data(n=30, seed=7)
    X[:, 2] = 0.3
    m = fold_moments(X, y, np.arange(30) % 3, np.arange(3), chunk_rows=7)
    for moments in (m, m.total(), m.complements()):
        present = moments.count > 0
        assert np.all(moments.mean[present, 2] * moments.unit[2] + moments.pilot[2] == 0.3)
        assert np.all(moments.cross[:, 2, :] == 0) and np.all(moments.cross[:, :, 2] == 0)
    design = design_from_moments(m.total())
    assert design.intercept == 0 and design.scale[2] == 0.3


def test_standardised_systems_equal_the_gram_of_the_standardised_rows():
    X, y = _data(n=70, seed=8, offset=1e6)
    folds = np.arange(70) % 3
    m = fold_moments(X, y, folds, np.arange(3), chunk_rows=7)
    design = design_from_moments(m.total())
    np.testing.assert_allclose(design.center[1:], X[:, 1:].mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(design.scale[1:], X[:, 1:].std(axis=0), rtol=1e-12)
    gram, cross = standardised_systems(m.complements(), design)
    for k in range(3):
        Z = design.transform(X[folds != k])
        np.testing.assert_allclose(gram[k], Z.T @ Z, rtol=0, atol=1e-9 * 70)
        np.testing.assert_allclose(cross[k], Z.T @ y[folds != k], rtol=0,
                                   atol=1e-9 * np.abs(Z.T @ y[folds != k]).max())


@pytest.mark.parametrize("ridge", [0.0, 0.5])
def test_engine_with_chunks_of_seven_rows_equals_one_chunk_and_statsmodels(monkeypatch, ridge):
    rng = np.random.default_rng(9)
    n = 120
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 6)) * [1, 5, 0.1, 1, 2, 1] + 50])
    y = X[:, 1] - 0.2 * X[:, 4] + rng.normal(size=n)
    slices = {"a": slice(1, 3), "b": slice(3, 5), "c": slice(5, 7)}
    candidates = build_candidates("all", slices, [f"c{i}" for i in range(7)], 1)
    folds = make_folds(5, n, seed=4)
    whole = ols_cv_predict(X, y, candidates, folds, ridge)
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 7)
    small = ols_cv_predict(X, y, candidates, folds, ridge)
    np.testing.assert_allclose(small.predictions, whole.predictions, rtol=1e-12, atol=0)
    if ridge:
        return
    for j, candidate in enumerate(candidates):
        for k in range(5):
            train = folds != k
            fitted = sm.OLS(y[train], X[train][:, candidate.columns]).fit()
            np.testing.assert_allclose(small.predictions[~train, j],
                                       fitted.predict(X[~train][:, candidate.columns]),
                                       rtol=0, atol=1e-8)
    refit = sm.OLS(y, X[:, candidates[-1].columns]).fit().params
    np.testing.assert_allclose(ols_fit(X, y, candidates[-1].columns), refit, rtol=1e-9)


@pytest.mark.parametrize("ridge", [0.0, 0.5])
def test_fold_sets_downdated_from_all_rows_equal_the_one_pass_complements(monkeypatch, ridge):
    # Wide candidates hold a few folds' moments at a time, downdated from the all-rows ones.
    rng = np.random.default_rng(11)
    n = 150
    folds = make_folds(5, n, seed=5)
    dummy = (folds == 0) * rng.normal(size=n)  # constant (0) over fold 0's training rows
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 5)) + 30, dummy])
    y = X[:, 1] - X[:, 6] + rng.normal(size=n)
    slices = {"a": slice(1, 4), "b": slice(4, 7)}
    candidates = build_candidates("all", slices, [f"c{i}" for i in range(7)], 1)
    one_pass = ols_cv_predict(X, y, candidates, folds, ridge)
    monkeypatch.setattr(ols, "MAX_SYSTEM_BYTES", 4 * 3000)  # folds in sets of two
    assert [s.tolist() for s in ols._fold_sets(5, 7, 3)] == [[0, 1], [2, 3], [4]]
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 7)
    sets = ols_cv_predict(X, y, candidates, folds, ridge)
    np.testing.assert_allclose(sets.predictions, one_pass.predictions, rtol=1e-10, atol=1e-10)
    assert [e.kind for e in sets.entries] == [e.kind for e in one_pass.entries]


@pytest.mark.parametrize("offset", [0.0, 1e8])
def test_moments_of_partitions_added_up_equal_the_direct_ones(offset):
    """What the dask fit does: each partition's moments around one pilot (one of them without
    rows), added up with ``+`` (pairwise, as tree_sum adds them), give every fold's training
    moments as a direct computation on the rows does."""
    X, y = _data(offset=offset)
    W = np.column_stack([X, y])
    folds = np.arange(len(y)) % 4
    pilot = np.median(W[:10], axis=0)  # the first partition's pilot
    bounds = [0, 7, 7, 40, 41, len(y)]  # unequal partitions, one empty, one of a single row
    parts = [fold_moments(X[a:b], y[a:b], folds[a:b], np.arange(4), chunk_rows=5, rest=False,
                          pilot=pilot).take(np.arange(4)) for a, b in zip(bounds, bounds[1:])]
    assert parts[1].count.sum() == 0
    summed = (parts[0] + parts[1]) + ((parts[2] + parts[3]) + parts[4])
    training = summed.complements()
    for k in range(4):
        n, mean, cross = _direct(W, folds != k)
        got_mean, got_cross = _in_units(training, k)
        assert training.count[k] == n
        np.testing.assert_allclose(got_mean, mean, rtol=1e-13, atol=1e-12 * np.abs(mean).max())
        np.testing.assert_allclose(got_cross, cross, rtol=1e-10, atol=1e-10 * np.abs(cross).max())
