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

from typing import Any

import numpy as np

from ..backends.columns import ColumnStack
from ._common import ScaledDesign
from .moments import chunk_columns

__all__ = ["StandardisedColumns", "standardised_columns"]


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

    def __init__(self, X: Any, columns: np.ndarray, design: ScaledDesign):
        self._X, self._columns, self._design = X, np.asarray(columns), design
        self.shape = (X.shape[0], self._columns.size)
        self._runs = _column_runs(X, self._columns)

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


def standardised_columns(X: Any, columns: np.ndarray,
                         known: dict | None = None) -> tuple[StandardisedColumns, ScaledDesign]:
    """A candidate's standardised columns read in place, and their standardisation.

    *known*: column moments already read (see :meth:`ScaledDesign.from_columns`).
    """
    columns = np.flatnonzero(columns) if columns.dtype == bool else columns
    design = ScaledDesign.from_columns(X, columns, known=known)
    return StandardisedColumns(X, columns, design), design
