"""Row chunks of the in-memory backend: every row once, in order; sums over chunks."""

from __future__ import annotations

import numpy as np
import pytest

from pearlstats.backends.chunks import map_chunks, row_chunks, sum_chunks
from pearlstats.exceptions import OptionError


def test_row_chunks_cover_the_rows_once_and_refuse_a_bad_size():
    assert [(s.start, s.stop) for s in row_chunks(15, 7)] == [(0, 7), (7, 14), (14, 15)]
    assert sum_chunks(lambda rows: rows.stop - rows.start, 15, 4) == 15
    with pytest.raises(OptionError, match="chunk_rows=0"):
        row_chunks(5, 0)
    with pytest.raises(OptionError, match="no rows"):
        sum_chunks(lambda rows: 0, 0)


@pytest.mark.parametrize("size", [1, 7, 10, 11, 1000])
def test_sums_over_chunks_equal_the_sum_over_all_rows(size):
    X = np.random.default_rng(0).normal(size=(10, 3))
    np.testing.assert_allclose(sum_chunks(lambda rows: X[rows].T @ X[rows], 10, size), X.T @ X,
                               rtol=1e-14)
    rows = np.concatenate([np.arange(10)[part] for part in map_chunks(lambda r: r, 10, size)])
    np.testing.assert_array_equal(rows, np.arange(10))
