"""Row chunks read block by block (ColumnStack.chunk): the values and layout of a stacked copy."""

from __future__ import annotations

import numpy as np
import pytest

from pearlstats.backends.columns import ColumnStack, Scratch
from pearlstats.engines.moments import chunk_columns


def _blocks(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [np.ones((50, 1)), rng.normal(size=(50, 4)), rng.normal(size=(50, 3)),
            np.asfortranarray(rng.normal(size=(50, 2)))]


@pytest.mark.parametrize("columns", [None, np.array([0, 3, 4, 9]), np.array([8, 1, 2])])
def test_chunk_equals_a_gather_from_the_stacked_copy(columns):
    blocks = _blocks()
    X, stacked = ColumnStack(blocks), np.hstack(blocks)
    scratch = Scratch()
    rng = np.random.default_rng(1)
    for start, stop in [(0, 50), (7, 30), (45, 50)]:
        rows = slice(start, stop)
        order = rng.permutation(stop - start)[: max(1, (stop - start) // 2)]
        want = stacked[rows][order] if columns is None else stacked[rows][np.ix_(order, columns)]
        for got in (X.chunk(rows, order, columns), X.chunk(rows, order, columns, scratch),
                    chunk_columns(X, rows, order, columns, scratch)):
            np.testing.assert_array_equal(got, want)
            assert got.flags.c_contiguous
        whole = stacked[rows] if columns is None else stacked[rows][:, columns]
        np.testing.assert_array_equal(X.chunk(rows, None, columns, scratch), whole)


def test_chunk_columns_of_an_array_with_scratch_is_a_gather():
    stacked = np.hstack(_blocks(2))
    order = np.array([4, 0, 2])
    got = chunk_columns(stacked, slice(10, 20), order, None, Scratch())
    np.testing.assert_array_equal(got, stacked[10 + order])


def test_scratch_reuses_its_memory_and_grows():
    scratch = Scratch()
    small = scratch("a", (3, 2))
    assert np.shares_memory(small, scratch("a", (2, 3)))
    assert not np.shares_memory(small, scratch("b", (3, 2)))
    big = scratch("a", (10, 4))
    assert big.shape == (10, 4) and big.flags.c_contiguous
    assert not np.shares_memory(small, big)


@pytest.mark.parametrize("stack", [True, False])
def test_one_read_gives_the_fold_moments_and_the_all_rows_pass_bit_for_bit(stack, monkeypatch):
    from pearlstats.backends import chunks
    from pearlstats.engines.moments import fold_and_row_moments, fold_moments

    monkeypatch.setattr(chunks, "CHUNK_ROWS", 7)  # many chunks, the last one short
    blocks = _blocks(3)
    blocks[1] = blocks[1] * 1e3 + 5e4  # far from 0: the pilot shift matters
    X = ColumnStack(blocks) if stack else np.hstack(blocks)
    y = np.random.default_rng(4).normal(size=50) + 7.0
    folds = np.random.default_rng(5).integers(0, 4, size=50)
    before = np.array(X).copy()
    by_fold, rows = fold_and_row_moments(X, y, folds, np.arange(4))
    want_folds = fold_moments(X, y, folds, np.arange(4))
    want_rows = fold_moments(X, y, None, np.arange(0))
    for got, want in ((by_fold, want_folds), (rows.total(), want_rows.total())):
        for field in ("count", "pilot", "unit", "mean", "cross", "low", "high"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    np.testing.assert_array_equal(np.array(X), before)  # the data are not written into
