"""A design matrix held as its column blocks side by side, read in place a slice at a time.

The fit's design is ``[covariates, block_1, ..., block_m]``. Copying the blocks into one
(n, p) array doubled the memory a fit needs beyond its data (at n = 10^6 with five
10-column blocks: 408 MB for the data, 408 MB more for the copy). :class:`ColumnStack`
keeps the blocks where they are and answers indexing by reading the rows and columns
asked for from each block: a chunk of rows (``X[rows]``, ``np.take(X, index, axis=0)``,
``X[np.ix_(index, columns)]``) or a candidate's columns (``X[:, columns]``) is a new
float64 array with exactly the values, and the memory layout, that the same indexing of
a stacked copy gives, so every computation on it is unchanged. Anything else
(arithmetic, methods such as ``X.T`` or ``X.max``, ``np.asarray(X)``) works on a stacked
copy made for the occasion: correct, but as costly as the copy; the engines read row
chunks instead (:mod:`pearlstats.backends.chunks`).

The blocks are held as read-only views: pearlstats never writes into them. They are the
caller's arrays, so changing one after the fit changes what the results compute lazily
(the refits on first access, ``res.honest``).

Examples
--------
>>> import numpy as np
>>> a, b = np.arange(6.0).reshape(3, 2), 10 + np.arange(3.0)[:, None]
>>> X = ColumnStack([a, b])
>>> X.shape
(3, 3)
>>> X[1].tolist(), X[:, [2, 0]].tolist()
([2.0, 3.0, 11.0], [[10.0, 0.0], [11.0, 2.0], [12.0, 4.0]])
>>> bool(np.array_equal(np.asarray(X), np.hstack([a, b])))
True
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ColumnStack", "Scratch"]


class Scratch:
    """Reused float64 work arrays, one per name, grown when a larger one is asked for.

    A pass over row chunks reads every chunk into the same memory: a fresh multi-MiB
    array per chunk costs page faults (and, for some sizes, an mmap and munmap each).
    One per pass and thread: each call returns memory the previous call with the
    same name returned.

    Examples
    --------
    >>> scratch = Scratch()
    >>> a = scratch("rows", (4, 3))
    >>> b = scratch("rows", (2, 3))
    >>> bool(np.shares_memory(a, b)), b.shape, b.flags.c_contiguous
    (True, (2, 3), True)
    """

    def __init__(self):
        self._flat: dict[str, np.ndarray] = {}

    def __call__(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        size = int(np.prod(shape))
        flat = self._flat.get(name)
        if flat is None or flat.size < size:
            flat = self._flat[name] = np.empty(size)
        return flat[:size].reshape(shape)


def _read_only(part) -> np.ndarray:
    view = np.asarray(part, dtype=float).view()
    view.flags.writeable = False
    return view


def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of consecutive integers in *positions*, as ``(start index, length)``."""
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [positions.size]])
    return [(int(a), int(b - a)) for a, b in zip(starts, stops)]


class ColumnStack:
    """An (n, p) float64 matrix whose columns are the columns of *parts*, in order.

    Parameters
    ----------
    parts : sequence of 2-D arrays
        Equal numbers of rows; read in place (float64 arrays are not copied).
    """

    ndim = 2
    dtype = np.dtype(float)

    def __init__(self, parts: Sequence[np.ndarray]):
        self._parts = tuple(_read_only(part) for part in parts)
        rows = {part.shape[0] for part in self._parts}
        if len(rows) != 1 or any(part.ndim != 2 for part in self._parts):
            raise ValueError("ColumnStack needs 2-D parts with one number of rows")
        widths = [part.shape[1] for part in self._parts]
        self._bounds = np.concatenate([[0], np.cumsum(widths)]).astype(np.intp)
        self.shape = (rows.pop(), int(self._bounds[-1]))

    @property
    def parts(self) -> tuple[np.ndarray, ...]:
        """The blocks, as read-only views."""
        return self._parts

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return 8 * self.size

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<ColumnStack {self.shape[0]} x {self.shape[1]} of {len(self._parts)} blocks>"

    # ---- reading ----------------------------------------------------------------------
    def __getitem__(self, key):
        rows, columns = key if isinstance(key, tuple) else (key, slice(None))
        if isinstance(key, tuple) and len(key) != 2 or rows is Ellipsis or columns is Ellipsis:
            return self.__array__()[key]
        if isinstance(rows, np.ndarray) and rows.ndim == 2 and isinstance(columns, np.ndarray):
            if rows.shape[1:] == (1,) and columns.ndim == 2 and columns.shape[0] == 1:
                return self._read(rows[:, 0], columns[0])  # np.ix_(rows, columns)
            return self.__array__()[key]
        rows = self._row_key(rows)
        if not isinstance(rows, slice) and not np.isscalar(rows) and not isinstance(
                columns, slice) and np.ndim(columns) > 0:
            # Two index arrays pick single elements (numpy's pointwise rule); rare: a copy.
            return self.__array__()[key]
        return self._read(rows, columns)

    def take(self, indices: Any, axis: int | None = None, out: np.ndarray | None = None,
             mode: str = "raise") -> np.ndarray:
        """``np.take`` along rows or columns without a stacked copy (C-ordered, as numpy's)."""
        if axis in (0, 1) and out is None and mode == "raise":
            index = np.asarray(indices)
            if axis == 0:
                return self._read(index, slice(None))
            return self._read(slice(None), index, order="C")
        return self.__array__().take(indices, axis=axis, out=out, mode=mode)

    def chunk(self, rows: slice, order: np.ndarray | None = None,
              columns: np.ndarray | None = None, scratch: Scratch | None = None) -> np.ndarray:
        """Rows ``rows.start + order`` (all of *rows* by default) of *columns*, C-ordered.

        The same array as ``np.take(stacked[rows][:, columns], order, axis=0)`` of a stacked
        copy, but read as each block's contiguous slice first and reordered within the
        chunk after: gathering rows at scattered positions from several blocks costs a
        cache miss and a small copy per row and block (about 24 ms per 65 536 rows of five
        10-column blocks, against 5 ms for one gather from a single array). With *scratch*
        both steps write into its reused arrays (the result is then overwritten by the
        next call with the same *scratch*).

        Examples
        --------
        >>> X = ColumnStack([np.arange(8.0).reshape(4, 2), np.arange(4.0)[:, None]])
        >>> X.chunk(slice(1, 4), np.array([2, 0]), np.array([2, 0])).tolist()
        [[3.0, 6.0], [1.0, 2.0]]
        """
        scratch = Scratch() if scratch is None else scratch
        count = len(range(self.shape[0])[rows])
        width = self.shape[1] if columns is None else len(columns)
        block = self._read(rows, slice(None) if columns is None else columns,
                           out=scratch("block", (count, width)))
        if order is None:
            return block
        # mode="clip" writes straight into *out* ("raise" buffers it); *order* is in range.
        return np.take(block, order, axis=0, out=scratch("rows", (len(order), width)),
                       mode="clip")

    def __array__(self, dtype=None, copy=None):
        whole = self._read(slice(None), slice(None))
        return whole if dtype is None else whole.astype(dtype, copy=False)

    def __getattr__(self, name):
        # Everything else an ndarray offers, on a stacked copy (never for private names,
        # so pickling and copying see the object's own state).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.__array__(), name)

    @staticmethod
    def _row_key(rows):
        if isinstance(rows, (list, tuple)):
            rows = np.asarray(rows)
        if isinstance(rows, np.ndarray) and rows.dtype == bool:
            return np.flatnonzero(rows)
        return rows

    def _read(self, rows, columns, order: str | None = None,
              out: np.ndarray | None = None) -> np.ndarray:
        """The rows *rows* (an int, slice or index array) of the columns *columns*, a new array.

        Laid out as numpy lays out ``stacked[rows, columns]``, unless *order* is given;
        written into *out* (C-ordered, of the result's shape) if given.
        """
        scalar_column = isinstance(columns, (int, np.integer))
        index = np.atleast_1d(np.arange(self.shape[1])[columns])
        if isinstance(rows, (int, np.integer)):
            operator.index(rows)
            count = None
        else:
            count = len(range(self.shape[0])[rows]) if isinstance(rows, slice) else len(rows)
        # Laid out as numpy lays out the same indexing of one array (column-major for
        # X[:, columns] with an index array), so reductions over it round alike.
        if order is None:
            fancy = isinstance(columns, (list, np.ndarray))
            order = "F" if isinstance(rows, slice) and fancy else "C"
        if out is None:
            out = np.empty((index.size,) if count is None else (count, index.size), order=order)
        owner = np.searchsorted(self._bounds, index, side="right") - 1
        for m in np.unique(owner):
            positions = np.flatnonzero(owner == m)
            local = index[positions] - self._bounds[m]
            part = self._parts[m]
            for first, length in _runs(positions):
                at, start = positions[first], local[first]
                if length > 1 and local[first + length - 1] - start != length - 1:
                    columns_m = local[first:first + length]
                else:
                    columns_m = slice(start, start + length)
                if isinstance(columns_m, slice) or isinstance(rows, slice) or count is None:
                    out[..., at:at + length] = part[rows, columns_m]
                else:
                    out[:, at:at + length] = part[np.ix_(rows, columns_m)]
        if scalar_column:
            return out[..., 0] if count is not None else out[0]
        return out

    # ---- arithmetic: on a stacked copy ------------------------------------------------
    def __matmul__(self, other):
        return self.__array__() @ other

    def __rmatmul__(self, other):
        return other @ self.__array__()

    def __mul__(self, other):
        return self.__array__() * other

    __rmul__ = __mul__

    def __sub__(self, other):
        return self.__array__() - other

    def __add__(self, other):
        return self.__array__() + other

    __radd__ = __add__

    def __rsub__(self, other):
        return other - self.__array__()

    def __truediv__(self, other):
        return self.__array__() / other

    def __rtruediv__(self, other):
        return other / self.__array__()

    def __pow__(self, other):
        return self.__array__() ** other

    def __abs__(self):
        return abs(self.__array__())

    def __neg__(self):
        return -self.__array__()

    def __eq__(self, other):
        return self.__array__() == other

    __hash__ = None
