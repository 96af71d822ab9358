"""A candidate's standardised columns, read from the design a block of rows at a time.

The Newton engines fit on ``Z = (X[:, S] - center) / scale`` (:class:`ScaledDesign`). Held
as one array, Z is an (n, |S|) copy of the candidate's columns: at n = 10^6 and a
51-column candidate 389 MiB, as much again as the data. :class:`StandardisedColumns`
holds only *X* (read in place, e.g. a :class:`~pearlstats.backends.columns.ColumnStack`),
the columns and their standardisation, and answers ``Z[rows]`` by reading those rows of
those columns and standardising them then. Each element is computed by the same two
operations as in the all-rows array, and the rows come out C-ordered as a row slice of
that array is laid out, so every computation on them gives the same numbers.

Examples
--------
>>> import numpy as np
>>> X = np.array([[1.0, 2.0, 10.0], [1.0, 4.0, 20.0], [1.0, 6.0, 60.0]])
>>> S = np.array([0, 2])
>>> Z = StandardisedColumns(X, S, ScaledDesign.from_columns(X, S))
>>> Z.shape, Z[1:].round(4).tolist()
((3, 2), [[1.0, -0.4629], [1.0, 1.3887]])
>>> bool(np.array_equal(Z[np.array([2, 0])], Z.array()[[2, 0]]))
True
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..backends.columns import ColumnStack
from ._common import ScaledDesign
from .moments import chunk_columns

__all__ = ["FOLD_LIMIT", "StandardisedColumns", "standardised_columns", "symmetric_from_upper"]

# Largest |centre| / SD of a column for which products are formed from the raw columns and
# centred after (:meth:`StandardisedColumns.times`): the cancellation then costs at most
# log10(1 + 4), under one digit, of the 16; further out the standardised rows are formed.
FOLD_LIMIT = 4.0

# SDs of the columns whose raw products are formed: squares of the raw values (the Hessians'
# X'WX) neither underflow nor overflow, even summed over 10^9 rows. Columns rescaled beyond it
# (a block times 1e-162) are standardised first, as their Newton fits always were.
SCALE_RANGE = (1e-100, 1e100)

# Most design columns whose raw Gram is formed once for all candidates (:meth:`gram`: a
# 256 x 256 matrix is 512 KiB); wider designs form each candidate's own.
SHARED_GRAM_COLUMNS = 256

# Key of that Gram in the *known* dict of column moments (whose other keys are column numbers).
_GRAM = "gram"

# Rows per block of the Gram's pass.
_GRAM_ROWS = 8192


@lru_cache(maxsize=64)
def _strictly_lower(p: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column positions of the strictly lower triangle of a p x p matrix."""
    return np.tril_indices(p, -1)


def symmetric_from_upper(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle (diagonal included) is *upper*'s.

    The values are those of ``np.triu(upper) + np.triu(upper, 1).T`` (each is copied, none
    computed), at a fraction of its cost for the small matrices of a candidate's Hessian:
    ``np.triu`` builds its mask anew on every call, which cost a fifth of a small logistic
    fit with its nested-CV SE (the Hessians of 1 000 Newton fits). A stack (..., p, p) gives
    each matrix's, in one call.

    Examples
    --------
    >>> symmetric_from_upper(np.array([[1.0, 2.0], [9.0, 3.0]])).tolist()
    [[1.0, 2.0], [2.0, 3.0]]
    """
    out = np.array(upper, order="C")
    rows, columns = _strictly_lower(upper.shape[-1])
    out[..., rows, columns] = upper[..., columns, rows]
    return out


class StandardisedColumns:
    """``(X[:, columns] - design.center) / design.scale``, formed a block of rows at a time.

    Parameters
    ----------
    X : ndarray or ColumnStack (n, p)
        Read in place, never written.
    columns : ndarray of int
        The candidate's columns of *X*.
    design : ScaledDesign
        Their standardisation (e.g. :meth:`ScaledDesign.from_columns`).

    Indexing with a row slice, an array of row positions, a boolean mask over the rows
    or one row position gives a new C-ordered float64 array of those rows.
    """

    ndim = 2

    def __init__(self, X: Any, columns: np.ndarray, design: ScaledDesign,
                 known: dict | None = None):
        self._X, self._columns, self._design = X, np.asarray(columns), design
        self._known = known
        self.shape = (X.shape[0], self._columns.size)
        self._runs = _column_runs(X, self._columns)
        # Products may read the raw columns and centre after (:meth:`times`) when every run is
        # a float64 array and no column's centre is far from it in SDs (see FOLD_LIMIT).
        self.folds = self._runs is not None and all(
            isinstance(part, np.ndarray) and part.dtype == float for part, _, _ in self._runs
        ) and bool(np.all(np.abs(design.center) <= FOLD_LIMIT * design.scale)) and bool(
            np.all((design.scale >= SCALE_RANGE[0]) & (design.scale <= SCALE_RANGE[1])))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<StandardisedColumns {self.shape[0]} x {self.shape[1]}>"

    def __getitem__(self, rows) -> np.ndarray:
        if isinstance(rows, tuple):
            raise TypeError("index StandardisedColumns by rows only (Z[rows], then [:, j])")
        if isinstance(rows, slice) and self._runs is not None:
            return self._row_slice(rows)
        if isinstance(rows, slice):
            block = chunk_columns(self._X, rows, None, self._columns)
        elif isinstance(rows, (int, np.integer)):
            block = np.asarray(self._X[int(rows)], dtype=float)[self._columns]
        else:
            rows = np.asarray(rows)
            if rows.dtype == bool:
                rows = np.flatnonzero(rows)
            block = np.ascontiguousarray(self._X[np.ix_(rows, self._columns)], dtype=float)
        block -= self._design.center
        block /= self._design.scale
        return block

    def _row_slice(self, rows: slice) -> np.ndarray:
        """Rows *rows*: each run of columns minus its centre straight into the result.

        The subtraction reads the design in place (a view of a run of a block's columns),
        so the rows are not copied before they are standardised; the values are those of
        copying, subtracting and dividing.
        """
        center, scale = self._design.center, self._design.scale
        block = np.empty((len(range(self.shape[0])[rows]), self.shape[1]))
        for part, local, at in self._runs:
            np.subtract(part[rows, local], center[at], out=block[:, at])
        block /= scale
        return block

    def times(self, theta: np.ndarray, rows: slice) -> np.ndarray:
        """``theta @ Z[rows].T`` (K, rows) from the raw columns, read in place.

        ``Z b = X (b / scale) - center . (b / scale)``: each run of columns is multiplied as
        a view of its block (no copy of the rows, no standardised copy). Only where
        :attr:`folds` (the centring after the product then loses at most about
        ``log10(1 + FOLD_LIMIT)`` digits to cancellation).
        """
        design = self._design
        coef = theta / design.scale
        shift = coef @ design.center
        eta = np.empty((len(theta), len(range(self.shape[0])[rows])))
        eta[:] = -shift[:, None]
        for part, local, at in self._runs:
            if at.stop - at.start == 1 and at.start == design.intercept:
                # The intercept is constant: its product is its coefficient times its value.
                eta += (coef[:, at.start] * design.intercept_value)[:, None]
            else:
                eta += coef[:, at] @ part[rows, local].T
        return eta

    def transpose_times(self, R: np.ndarray, rows: slice) -> np.ndarray:
        """``R @ Z[rows]`` (K, p) for R (K, rows), from the raw columns read in place."""
        out = np.empty((len(R), self.shape[1]))
        for part, local, at in self._runs:
            out[:, at] = R @ part[rows, local]
        out -= R.sum(axis=1)[:, None] * self._design.center
        out /= self._design.scale
        return out

    def raw_columns(self, rows: slice, root: np.ndarray) -> np.ndarray:
        """``(root[:, None] * X[rows, columns]).T`` (p, rows), C-ordered, from the raw columns.

        Laid out by column, each run is multiplied along its rows (long inner loops; the
        row-major layout's inner loops were a run's few columns, at three times the cost).
        With *root* (K, rows), the K products (K, p, rows).
        """
        block = np.empty(root.shape[:-1] + (self.shape[1], root.shape[-1]))
        for part, local, at in self._runs:
            np.multiply(part[rows, local].T, root[..., None, :], out=block[..., at, :])
        return block

    def standardised_gram(self, upper: np.ndarray, sums: np.ndarray,
                          total: float | np.ndarray) -> np.ndarray:
        """``Z' W Z`` from the raw ``X' W X`` (upper triangle), ``X' w`` and ``sum(w)``.

        ``(X - 1c')' W (X - 1c') = X'WX - c s' - s c' + (sum w) c c'``, then divided by
        ``scale scale'``. Stacks of them, *upper* (G, p, p), *sums* (G, p) and *total* (G,)
        (the Hessian sums of a pass's G groups), give the G matrices (G, p, p) in one call:
        each element is computed by the same operations as alone, so the values are the same
        (in a small fit with its nested SE this runs for thousands of Hessians, where one
        call per group cost as much as the rest of the Hessian).
        """
        center, scale = self._design.center, self._design.scale
        gram = symmetric_from_upper(upper)
        # Broadcast products: the values of np.outer, without its per-call overhead.
        cross = center[:, None] * sums[..., None, :]
        gram -= cross + np.swapaxes(cross, -1, -2)
        gram += np.asarray(total)[..., None, None] * (center[:, None] * center[None, :])
        gram /= scale[:, None] * scale[None, :]
        return gram

    def gram(self) -> np.ndarray | None:
        """``Z'Z`` (p, p) without a pass over the rows where one was made for all candidates.

        With *known* (shared by the candidates of one design) and at most
        :data:`SHARED_GRAM_COLUMNS` design columns, the raw Gram of all the design's columns
        is formed once (one ``syrk`` pass) and each candidate's is its sub-block, centred and
        scaled; otherwise one pass over the candidate's own columns. None where products are
        not folded (:attr:`folds`).
        """
        if not self.folds:
            return None
        n, cols = self.shape[0], self._columns
        shared = self._known is not None and self._X.shape[1] <= SHARED_GRAM_COLUMNS
        if shared and _GRAM not in self._known:
            self._known[_GRAM] = _raw_gram(self._X, np.arange(self._X.shape[1]))
        if shared and self._known[_GRAM] is not None:
            upper, sums = self._known[_GRAM]
            return self.standardised_gram(upper[np.ix_(cols, cols)], sums[cols], n)
        upper, sums = _raw_gram(self._X, cols)
        return self.standardised_gram(upper, sums, n)

    def array(self) -> np.ndarray:
        """All rows as one array (the (n, |S|) copy this class exists to avoid; for tests)."""
        return self[:]


def _column_runs(X: Any, columns: np.ndarray) -> list[tuple] | None:
    """``(part, local columns, positions)`` per run of *columns* consecutive in one block.

    The blocks of a :class:`~pearlstats.backends.columns.ColumnStack`, or a 2-D array as
    its only block; None for anything else (read by :func:`chunk_columns` instead).
    """
    if isinstance(X, ColumnStack):
        parts = X.parts
    elif isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == float:
        parts = (X,)
    else:
        return None
    bounds = np.cumsum([0] + [part.shape[1] for part in parts])
    owner = np.searchsorted(bounds, columns, side="right") - 1
    runs, start = [], 0
    for end in range(1, columns.size + 1):
        if (end < columns.size and owner[end] == owner[start]
                and columns[end] == columns[end - 1] + 1):
            continue
        first = int(columns[start] - bounds[owner[start]])
        runs.append((parts[owner[start]], slice(first, first + end - start), slice(start, end)))
        start = end
    return runs


def _raw_gram(X: Any, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(X'X, X'1)`` of *columns* (symmetric, by ``syrk`` a block of rows at a time), or None
    when a column is not in a float64 array block."""
    from scipy.linalg import blas

    runs = _column_runs(X, columns)
    if runs is None or not all(isinstance(part, np.ndarray) and part.dtype == float
                               for part, _, _ in runs):
        return None
    upper = np.zeros((columns.size, columns.size), order="F")
    sums = np.zeros(columns.size)
    for start in range(0, X.shape[0], _GRAM_ROWS):
        rows = slice(start, min(X.shape[0], start + _GRAM_ROWS))
        block = np.empty((rows.stop - rows.start, columns.size))
        for part, local, at in runs:
            block[:, at] = part[rows, local]
        upper = blas.dsyrk(1.0, block.T, beta=1.0, c=upper, trans=0, lower=0, overwrite_c=1)
        sums += block.sum(axis=0)
    return symmetric_from_upper(upper), sums


def standardised_columns(X: Any, columns: np.ndarray,
                         known: dict | None = None) -> tuple[StandardisedColumns, ScaledDesign]:
    """A candidate's standardised columns read in place, and their standardisation.

    *known*: column moments already read (see :meth:`ScaledDesign.from_columns`).
    """
    columns = np.flatnonzero(columns) if columns.dtype == bool else columns
    design = ScaledDesign.from_columns(X, columns, known=known)
    return StandardisedColumns(X, columns, design, known), design
