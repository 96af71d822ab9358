"""The Newton engines read a candidate's standardised columns a block of rows at a time (issue 27).

Each helper is compared with the all-rows computation it replaces (the (n, |S|) standardised
copy ``(X[:, S] - center) / scale`` and numpy's batched product), bit for bit, and the
logistic and Poisson fits with statsmodels.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import statsmodels.api as sm

from pearlstats.backends.columns import ColumnStack
from pearlstats.design.candidates import Candidate
from pearlstats.engines import _common, glm
from pearlstats.engines._common import ScaledDesign
from pearlstats.engines.newton_cv import newton_cv_predict
from pearlstats.engines.standardised import (
    StandardisedColumns,
    standardised_columns,
    symmetric_from_upper,
)


def _design(n: int, seed: int = 0):
    """An intercept, a shifted and scaled block, a tiny block with a constant column."""
    rng = np.random.default_rng(seed)
    parts = [np.ones((n, 1)), rng.normal(loc=50.0, scale=1e3, size=(n, 4)),
             1e-200 * rng.normal(size=(n, 3)), rng.uniform(size=(n, 2))]
    parts[2][:, 1] = 3e-200
    parts[3] = np.asfortranarray(parts[3])
    return ColumnStack(parts), np.hstack(parts)


@pytest.mark.parametrize("columns", [np.arange(10), np.array([9, 0, 2, 3, 6, 5, 7]),
                                     np.array([6, 1]), np.array([4])])
@pytest.mark.parametrize("read_bytes", [8, 2**22])
def test_scaled_design_from_columns_equals_from_design_of_the_copy(columns, read_bytes,
                                                                   monkeypatch):
    # One column per read (8 bytes) or all at once: the same numbers as the (n, |S|) copy.
    monkeypatch.setattr(_common, "_COLUMN_READ_BYTES", read_bytes)
    for X in _design(3000):
        want, got = ScaledDesign.from_design(X[:, columns]), ScaledDesign.from_columns(X, columns)
        for name in ("center", "scale", "penalized"):
            assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), name
        assert (got.intercept, got.intercept_value) == (want.intercept, want.intercept_value)
    # and the moments themselves are right (squares of 1e-200 underflow: SDs of x / max|x|)
    stacked = _design(3000)[1][:, columns]
    big = np.abs(stacked).max(axis=0)
    sd = (stacked / big).std(axis=0) * big
    np.testing.assert_allclose(got.scale, np.where(sd > 0, sd, np.abs(stacked[0])), rtol=1e-12)


@pytest.mark.parametrize("rows", [slice(None), slice(5, 4100), slice(4090, 4096),
                                  np.array([17, 3, 3, 4999]), np.arange(5000) % 3 == 1, 7])
def test_standardised_columns_rows_equal_the_rows_of_the_standardised_copy(rows):
    X, stacked = _design(5000, seed=1)
    S = np.array([0, 1, 2, 6, 8, 3, 9])
    Z, design = standardised_columns(X, S)
    full = np.take(stacked, S, axis=1)  # the copy the engines used to hold
    full -= design.center
    full /= design.scale
    for source in (X, stacked):
        got = StandardisedColumns(source, S, design)[rows]
        want = full[rows]
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()
        assert got.flags.c_contiguous and got.shape == want.shape
    assert Z.shape == full.shape and len(Z) == 5000
    np.testing.assert_array_equal(X.parts[1], _design(5000, seed=1)[0].parts[1])  # not written
    with pytest.raises(TypeError, match="rows only"):
        Z[0, 1]


@pytest.mark.parametrize("p", [3, 51])
@pytest.mark.parametrize("K", [1, 10])
def test_hessian_sums_over_training_rows_equal_the_weighted_products(p, K):
    # Weights 0 (held-out rows) are skipped, not multiplied by 0: the same sums as einsum's
    # over all rows, to the rounding of sums of |w| * Z^2 (syrk sums in another order).
    rng = np.random.default_rng(p + K)
    n = glm._BLOCK_ROWS
    Z = rng.normal(size=(n, p))
    weights = rng.uniform(size=(K, n)) * (rng.uniform(size=(K, n)) > 0.2)
    hessians = glm._Hessians(Z, K, None, 0)
    hessians.add(Z, weights, slice(0, n))
    want = np.einsum("kn,ni,nj->kij", weights, Z, Z)
    np.testing.assert_allclose(hessians.problems(), want, rtol=0,
                               atol=1e-13 * np.einsum("kn,ni->ki", weights, Z**2).max())


def test_all_rows_hessian_split_by_fold_gives_each_folds_training_rows_hessian():
    rng = np.random.default_rng(3)
    n, p, K = 3000, 6, 4
    Z, v = rng.normal(size=(n, p)), rng.uniform(size=n)
    folds = rng.integers(0, K, size=n)
    folds[:10] = -1  # rows no fold holds out are in every fold's training rows
    held_out = [np.flatnonzero(folds == k) for k in range(K)]
    groups = glm._fold_groups(held_out, n)
    hessians = glm._Hessians(Z, 1, groups, K + 1)
    for start in range(0, n, 1000):  # three passes' worth of blocks
        rows = slice(start, start + 1000)
        hessians.add(Z[rows], v[None, rows], rows)
    np.testing.assert_allclose(hessians.problems()[0], (Z * v[:, None]).T @ Z, rtol=1e-12)
    parts = [symmetric_from_upper(upper) for upper in hessians.upper]
    for k, H in enumerate(glm.fold_hessians(parts, K)):
        train = folds != k
        np.testing.assert_allclose(H, (Z[train] * v[train, None]).T @ Z[train], rtol=1e-12)


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
def test_fold_fits_on_rows_read_in_place_equal_those_on_the_standardised_copy(kind):
    # Two blocks of rows and a partial one; the same numbers as with the (n, |S|) array.
    rng = np.random.default_rng(4)
    n = 2 * glm._BLOCK_ROWS + 700
    a, b = rng.normal(size=(n, 3)), rng.normal(loc=2.0, size=(n, 2))
    eta = 0.5 * a[:, 0] - 0.4 * b[:, 1] + 0.3
    y = (eta + rng.logistic(size=n) > 0.0) if kind == "binomial" else rng.poisson(np.exp(eta))
    y = y.astype(float)
    X = ColumnStack([np.ones((n, 1)), a, b])
    folds = np.arange(n) % 4
    candidates = [Candidate("a+b", ("a", "b"), np.arange(6)), Candidate("b", ("b",),
                                                                        np.array([0, 4, 5]))]
    engine = glm._engine(kind)
    assert engine.reads_rows
    out = newton_cv_predict(engine, X, y, candidates, folds, 0.0)
    copied = newton_cv_predict(dataclasses.replace(engine, reads_rows=False), X, y, candidates,
                               folds, 0.0)
    # Read in place, the products are formed from the raw columns and centred after (b is 2
    # SDs off 0: within FOLD_LIMIT), so the sums round differently; both fits stop within
    # about 1e-12 of the same optimum (decrement 1e-24), so the predictions agree to that.
    np.testing.assert_allclose(out.predictions, copied.predictions, rtol=1e-10)
    stacked = np.asarray(X)
    family = sm.families.Binomial() if kind == "binomial" else sm.families.Poisson()
    for k in range(4):
        train = folds != k
        fit = sm.GLM(y[train], stacked[train][:, :6], family=family).fit(tol=1e-12)
        np.testing.assert_allclose(out.predictions[~train, 0], fit.predict(stacked[~train][:, :6]),
                                   rtol=1e-8)
    params, _ = glm.glm_fit(kind, X, y, np.arange(6))
    full = sm.GLM(y, stacked[:, :6], family=family).fit(tol=1e-12)
    np.testing.assert_allclose(params, full.params, rtol=1e-7, atol=1e-9)


def test_column_moments_read_once_for_all_candidates_equal_each_candidates_own():
    # Candidates share columns: the moments kept from earlier candidates are the numbers each
    # candidate's own columns give (to the bit: each column is reduced on its own).
    rng = np.random.default_rng(5)
    parts = [np.ones((300, 1)), rng.normal(loc=3.0, size=(300, 4)), rng.normal(size=(300, 3))]
    X = ColumnStack(parts)
    known: dict = {}
    for S in (np.array([0, 1, 2, 5]), np.array([0, 2, 3, 6, 7]), np.array([1, 7])):
        shared = ScaledDesign.from_columns(X, S, known=known)
        own = ScaledDesign.from_design(np.asarray(X)[:, S])
        for name in ("center", "scale", "penalized"):
            np.testing.assert_array_equal(getattr(shared, name), getattr(own, name))
        assert (shared.intercept, shared.intercept_value) == (own.intercept, own.intercept_value)
    assert sorted(known) == [0, 1, 2, 3, 5, 6, 7]


def _folded_design(n: int, seed: int):
    """Blocks within FOLD_LIMIT SDs of 0 (products folded) and the (n, p) copy."""
    rng = np.random.default_rng(seed)
    parts = [np.ones((n, 1)), rng.normal(loc=2.0, scale=3.0, size=(n, 4)),
             np.asfortranarray(rng.uniform(size=(n, 3)))]
    return ColumnStack(parts), np.hstack(parts)


@pytest.mark.parametrize("rows", [slice(None), slice(5, 4100), slice(4090, 4096)])
def test_products_from_raw_columns_equal_those_of_the_standardised_rows(rows):
    # theta Z' and R Z from the raw columns, centred and scaled after: the numbers of the
    # standardised rows to rounding. The raw values are at most 1 + FOLD_LIMIT times the
    # standardised ones, so the sums' rounding is within a few units of 1e-16 of sum |terms|.
    X, _ = _folded_design(5000, seed=6)
    S = np.array([0, 2, 1, 6, 7, 4])
    Z, _ = standardised_columns(X, S)
    assert Z.folds
    rng = np.random.default_rng(7)
    theta, Z_rows = rng.normal(size=(3, S.size)), Z[rows]
    R = rng.normal(size=(3, len(Z_rows)))
    bound = 1e-14 * (np.abs(theta) @ np.abs(Z_rows).T).max()
    np.testing.assert_allclose(Z.times(theta, rows), theta @ Z_rows.T, rtol=0, atol=bound)
    bound = 1e-14 * (np.abs(R) @ np.abs(Z_rows)).max()
    np.testing.assert_allclose(Z.transpose_times(R, rows), R @ Z_rows, rtol=0, atol=bound)


def test_far_off_centre_columns_are_standardised_before_products():
    # Columns 5 SDs off 0 (beyond FOLD_LIMIT) are centred before products when the candidate
    # has an intercept; without one they are not centred at all, and products are folded.
    n = 300
    rng = np.random.default_rng(8)
    X = ColumnStack([np.ones((n, 1)), rng.normal(loc=5.0, size=(n, 2))])
    assert not standardised_columns(X, np.arange(3))[0].folds
    assert standardised_columns(X, np.array([1, 2]))[0].folds  # no intercept: not centred


@pytest.mark.parametrize("shared", [True, False])
def test_gram_of_the_standardised_columns(shared):
    # From the design's raw Gram formed once (sub-block, centred, scaled) or the candidate's own.
    X, stacked = _folded_design(9000, seed=9)
    known: dict | None = {} if shared else None
    for S in (np.array([0, 1, 2, 5]), np.array([0, 6, 3, 7])):
        Z, _ = standardised_columns(X, S, known)
        full = Z.array()
        np.testing.assert_allclose(Z.gram(), full.T @ full, rtol=0,
                                   atol=1e-13 * (full**2).sum(axis=0).max())
    if shared:
        assert known["gram"][0].shape == (8, 8)


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
def test_start_hessian_is_the_hessian_at_the_engines_start(kind):
    # The first Newton step of an all-rows fit uses v Z'Z / n, the Hessian where every row has
    # the same mean: equal to the loss's own Hessian there, to rounding.
    X, _ = _folded_design(5000, seed=10)
    y = np.random.default_rng(11).poisson(2.0, size=5000).astype(float)
    y = np.minimum(y, 1.0) if kind == "binomial" else y
    Z, design = standardised_columns(X, np.arange(8))
    theta0 = np.zeros((1, 8))
    if kind == "poisson":
        theta0[0, 0] = np.log(y.mean())
    weights = np.ones((1, 5000))
    loss = glm._make_loss(kind, Z, y, weights, weights.sum(axis=1))
    want = loss(theta0, 2)[2]
    got = glm._start_hessian(kind, Z, theta0, design.intercept)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * np.abs(want).max())


def _hessian_pass(Z, weights, groups, n_groups, dense, monkeypatch):
    """One pass's Hessians (problems, parts), by the batched product or one syrk per problem."""
    monkeypatch.setattr(glm, "DENSE_HESSIAN_FLOPS", 2**62 if dense else -1)
    K = 1 if groups is not None else len(weights)
    hessians = glm._Hessians(Z, K, groups, n_groups)
    assert hessians.dense == dense
    n = len(Z)
    for start in range(0, n, 100):
        rows = slice(start, min(n, start + 100))
        hessians.add(None if getattr(Z, "folds", False) else Z[rows], weights[:, rows], rows)
    return hessians.problems(), hessians.parts()


@pytest.mark.parametrize("folded", [True, False])
@pytest.mark.parametrize("grouped", [True, False])
def test_small_data_hessians_in_one_product_equal_the_syrk_sums_and_numpy(folded, grouped,
                                                                          monkeypatch):
    # Small data sums every problem's (group's) Hessian in one batched product, with zeros for
    # the rows it does not weigh (held out, or of another group): the same sums as one syrk
    # per problem over its own rows and as numpy's, to rounding.
    rng = np.random.default_rng(11)
    n, K = 250, 5
    X = np.hstack([np.ones((n, 1)), rng.normal(loc=1.0, scale=2.0, size=(n, 5))])
    S = np.array([0, 1, 3, 4, 5])
    Zs, design = standardised_columns(X, S)
    assert Zs.folds
    Z = Zs if folded else Zs.array()
    full = Zs.array()
    folds = rng.integers(0, K, size=n)
    v = rng.uniform(0.05, 0.25, size=n)
    if grouped:
        folds[:7] = K  # rows no fold holds out
        groups, weights = folds, v[None]
        masks = (folds == np.arange(K + 1)[:, None]) * v
        want_parts = np.einsum("gn,ni,nj->gij", masks, full, full)
        want = want_parts.sum(axis=0)[None]
    else:
        groups, weights = None, v * (folds != np.arange(K)[:, None])
        want = want_parts = np.einsum("kn,ni,nj->kij", weights, full, full)
    dense = _hessian_pass(Z, weights, groups, K + 1, True, monkeypatch)
    loop = _hessian_pass(Z, weights, groups, K + 1, False, monkeypatch)
    scale = np.abs(want).max()
    for got, reference in zip(dense, (want, want_parts)):
        np.testing.assert_allclose(got, reference, rtol=0, atol=1e-13 * scale)
        assert np.array_equal(got, np.swapaxes(got, 1, 2))  # exactly symmetric
    for got, other in zip(dense, loop):
        np.testing.assert_allclose(got, other, rtol=0, atol=1e-13 * scale)


def test_group_sorted_hessian_sums_equal_the_masked_ones_bit_for_bit(monkeypatch):
    # Large data: each group's rows are a slice of the block sorted by group, the same rows in
    # the same order as a mask per group takes, so the same numbers.
    monkeypatch.setattr(glm, "DENSE_HESSIAN_FLOPS", -1)
    rng = np.random.default_rng(12)
    n, G = 900, 6
    X = np.hstack([np.ones((n, 1)), rng.normal(loc=1.0, size=(n, 4))])
    Z, _ = standardised_columns(X, np.arange(5))
    groups, v = rng.integers(0, G, size=n), rng.uniform(size=(1, n))
    sorted_by_group = glm._Hessians(Z, 1, groups, G)
    sorted_by_group.add(None, v, slice(0, n))
    by_mask = glm._Hessians(Z, 1, groups, G)
    A = Z.raw_columns(slice(0, n), np.sqrt(v[0]))
    for g in range(G):
        take = np.flatnonzero(groups == g)
        by_mask._add(g, np.take(A, take, axis=1), np.sqrt(v[0, take]))
    assert sorted_by_group.parts().tobytes() == by_mask.parts().tobytes()
    one_by_one = [Z.standardised_gram(upper, sums, total) for upper, sums, total
                  in zip(by_mask.upper, by_mask.sums, by_mask.totals)]
    assert by_mask.parts().tobytes() == np.stack(one_by_one).tobytes()
    assert sorted_by_group.problems()[0].tobytes() == sum(one_by_one).tobytes()
    held_out = [sum(part for f, part in enumerate(one_by_one) if f != k) for k in range(G - 1)]
    assert glm.fold_hessians(one_by_one, G - 1).tobytes() == np.stack(held_out).tobytes()


def test_symmetric_from_upper_of_a_stack_is_each_matrix_s():
    upper = np.random.default_rng(13).normal(size=(4, 5, 5))
    assert symmetric_from_upper(upper).tobytes() == np.stack(
        [symmetric_from_upper(u) for u in upper]).tobytes()
