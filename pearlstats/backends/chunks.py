"""Rows in memory, a chunk at a time: map a function over row chunks and add up the results.

A pass over the rows is :func:`sum_chunks` (statistics whose sum is what the
caller needs: Gram matrices, moments, counts; any value with ``+``) or
:func:`map_chunks` (row-wise outputs written by the function, or anything to
be combined otherwise). The function receives a ``slice`` of row positions and
reads the rows itself, so arrays are read in place (a slice of a C-ordered
array is a view) and only one chunk's temporaries exist at a time: the
working memory of a pass is bounded by the chunk size, not by n.

Examples
--------
>>> import numpy as np
>>> X = np.arange(12.0).reshape(6, 2)
>>> sum_chunks(lambda rows: X[rows].sum(axis=0), len(X), chunk_rows=4).tolist()
[30.0, 36.0]
>>> [(s.start, s.stop) for s in row_chunks(6, chunk_rows=4)]
[(0, 4), (4, 6)]
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from typing import TypeVar

from ..exceptions import OptionError

__all__ = ["CHUNK_ROWS", "CHUNK_BYTES", "row_chunks", "map_chunks", "sum_chunks"]

T = TypeVar("T")

# Rows per chunk at most: 8 192 rows of 51 float64 columns are 3.3 MiB, so a chunk read
# into a reused buffer, reordered by fold into another and then reduced stays in cache
# (at n = 10^6 the gaussian fit's passes took 1.3x as long with 65 536 rows per chunk),
# and still large enough that numpy's per-call overhead is small.
CHUNK_ROWS = 8_192

# Bytes of float64 a chunk's rows hold at most (so wide rows come in fewer per chunk).
CHUNK_BYTES = 2**25


def row_chunks(n: int, chunk_rows: int | None = None, width: int = 1) -> list[slice]:
    """Consecutive row slices covering ``range(n)``, each of at most *chunk_rows* rows.

    *chunk_rows* defaults to :data:`CHUNK_ROWS`, or fewer rows when rows of *width*
    float64 values would exceed :data:`CHUNK_BYTES` (both read when called, so a test
    can set them).

    Raises
    ------
    OptionError
        For a chunk size below 1.
    """
    if chunk_rows is None:
        chunk_rows = max(1, min(CHUNK_ROWS, CHUNK_BYTES // (8 * max(width, 1))))
    if chunk_rows < 1:
        raise OptionError(f"chunk_rows={chunk_rows!r}; use a positive number of rows")
    return [slice(start, min(start + chunk_rows, n)) for start in range(0, n, chunk_rows)]


def map_chunks(func: Callable[[slice], T], n: int, chunk_rows: int | None = None,
               width: int = 1) -> Iterator[T]:
    """``func(rows)`` for each chunk of ``range(n)`` (see :func:`row_chunks`), lazily, in order."""
    return (func(rows) for rows in row_chunks(n, chunk_rows, width))


def sum_chunks(func: Callable[[slice], T], n: int, chunk_rows: int | None = None,
               width: int = 1) -> T:
    """The sum of ``func(rows)`` over the chunks of ``range(n)``, in row order.

    The first chunk's value accumulates the others with ``+=`` (in place for numpy
    arrays and for types with ``__iadd__``; *func* must return a new object each call).

    Raises
    ------
    OptionError
        With no rows (n = 0): there is nothing to add up.
    """
    if n < 1:
        raise OptionError("no rows to pass over (n = 0)")
    return functools.reduce(operator.iadd, map_chunks(func, n, chunk_rows, width))
