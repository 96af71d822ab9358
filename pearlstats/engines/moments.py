"""Per-fold moments of the design and response from one pass over row chunks.

The least-squares engine needs, for every fold, the count, column means and
centred cross products of ``W = [X, y]`` over the fold's *training* rows, and
the all-rows means and SDs that standardise the columns. All of them follow
from the same per-fold statistics, accumulated a chunk of rows at a time
(:func:`pearlstats.backends.chunks.sum_chunks`):

* every value is first shifted by a pilot centre (the column medians of the
  first rows, known before the pass), so the means that are stored and
  differenced below are small: a column around 1e8 keeps its digits (an
  uncentred Gram of it keeps about half of them);
* each chunk's rows are grouped by fold; each group is centred on its own
  means before its cross products are formed;
* groups combine by the pairwise update of Chan, Golub and LeVeque (1979):
  counts add, means move by the count-weighted difference, and cross products
  add plus ``n_a n_b / n * d d'`` with ``d`` the difference of the means;
* a fold's training statistics are the combination of the *other* folds'
  (sums of prefixes and suffixes over the folds, never the total minus the
  fold: a downdate loses digits when the fold holds most of a column's
  variation);
* each chunk is divided by per-column powers of two (exact), so tiny columns
  (1e-200) do not underflow when squared; chunks with different units are
  combined after an exact rescaling.

Column minima and maxima ride along (constant columns, the intercept), so one
pass gives everything :class:`~pearlstats.engines._common.ScaledDesign` and
the fold systems need.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X, y = rng.normal(size=(50, 2)) + 1e3, rng.normal(size=50)
>>> folds = np.arange(50) % 3
>>> m = fold_moments(X, y, folds, np.arange(3), chunk_rows=7)
>>> train = m.complements()
>>> rows = X[folds != 0] - X[folds != 0].mean(axis=0)
>>> bool(np.allclose(train.cross[0, :2, :2] * np.outer(train.unit[:2], train.unit[:2]),
...                  rows.T @ rows, rtol=1e-10))
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backends.chunks import sum_chunks
from ..backends.columns import ColumnStack, Scratch
from ._common import ScaledDesign

__all__ = ["FoldMoments", "fold_moments", "design_from_moments", "standardised_systems",
           "training_penalty_weights", "fold_segments", "fold_groups", "chunk_columns",
           "pilot_centre", "fold_ranges", "fold_and_row_moments"]

# Rows whose column medians are the pilot centre.
_PILOT_ROWS = 1024

# Exponent range of the per-column units 2**e: their inverses stay finite and normal.
_EXPONENT_LIMIT = 1020


@dataclass(frozen=True)
class FoldMoments:
    """Moments of the columns of ``W`` for F groups of rows (folds), in per-column units.

    Attributes
    ----------
    count : ndarray (F,)
        Rows in each group.
    pilot : ndarray (q,)
        The shift: the moments are those of ``V = (W - pilot) / unit``.
    unit : ndarray (q,)
        Powers of two.
    mean : ndarray (F, q)
        Column means of ``V`` (0 for an empty group).
    cross : ndarray (F, q, q)
        Cross products of ``V`` centred on the group's means.
    low, high : ndarray (F, q)
        Column minima and maxima of ``W`` itself (+inf and -inf when empty).
    """

    count: np.ndarray
    pilot: np.ndarray
    unit: np.ndarray
    mean: np.ndarray
    cross: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of_sorted_rows(cls, X: np.ndarray, y: np.ndarray, counts: np.ndarray,
                       pilot: np.ndarray) -> "FoldMoments":
        """Moments of ``W = [X, y]`` in consecutive groups of rows (group g has ``counts[g]``).

        *X* and *y* are modified (shifted, scaled and centred in place).
        """
        F, p = len(counts), X.shape[1]
        starts = np.concatenate([[0], np.cumsum(counts)])
        present = np.flatnonzero(counts)
        low, high = np.full((F, p + 1), np.inf), np.full((F, p + 1), -np.inf)
        for g in present:
            rows = slice(starts[g], starts[g + 1])
            low[g, :p], high[g, :p] = X[rows].min(axis=0), X[rows].max(axis=0)
            low[g, p], high[g, p] = y[rows].min(), y[rows].max()
        X -= pilot[:p]
        y -= pilot[p]
        with np.errstate(invalid="ignore"):  # inf - inf of empty groups; not used
            shifted_low, shifted_high = low - pilot, high - pilot
        unit = _power_of_two_above(np.maximum(np.abs(shifted_low[present]),
                                              np.abs(shifted_high[present])).max(
            axis=0, initial=0.0))  # a chunk without rows of the groups read: units 1
        X *= 1.0 / unit[:p]  # exact: powers of two
        y *= 1.0 / unit[p]
        mean = np.zeros((F, p + 1))
        cross = np.zeros((F, p + 1, p + 1))
        for g in present:
            rows = slice(starts[g], starts[g + 1])
            mean[g] = _centre(X[rows], y[rows], low[g] == high[g], shifted_low[g] / unit)
            cross[g, :p, :p] = X[rows].T @ X[rows]
            cross[g, :p, p] = cross[g, p, :p] = X[rows].T @ y[rows]
            cross[g, p, p] = y[rows] @ y[rows]
        return cls(counts.astype(float), pilot, unit, mean, cross, low, high)

    @classmethod
    def empty(cls, groups: int, pilot: np.ndarray) -> "FoldMoments":
        """*groups* groups without rows (what a pass over no rows adds up to)."""
        q = len(pilot)
        return cls(np.zeros(groups), pilot, np.ones(q), np.zeros((groups, q)),
                   np.zeros((groups, q, q)), np.full((groups, q), np.inf),
                   np.full((groups, q), -np.inf))

    def rescaled(self, unit: np.ndarray) -> "FoldMoments":
        """The same moments in larger units *unit* (powers of two, so the change is exact)."""
        if np.array_equal(unit, self.unit):
            return self
        ratio = self.unit / unit
        return FoldMoments(self.count, self.pilot, unit, self.mean * ratio,
                           self.cross * np.outer(ratio, ratio), self.low, self.high)

    def __add__(self, other: "FoldMoments") -> "FoldMoments":
        """Group by group, the moments of both sets of rows together (the same pilot)."""
        unit = np.maximum(self.unit, other.unit)
        a, b = self.rescaled(unit), other.rescaled(unit)
        count = a.count + b.count
        share = np.divide(b.count, count, out=np.zeros_like(count), where=count > 0)
        delta = b.mean - a.mean
        mean = a.mean + share[:, None] * delta
        cross = a.cross + b.cross + (a.count * share)[:, None, None] * (
            delta[:, :, None] * delta[:, None, :])
        low, high = np.minimum(a.low, b.low), np.maximum(a.high, b.high)
        return _pinned(FoldMoments(count, self.pilot, unit, mean, cross, low, high))

    def __iadd__(self, other: "FoldMoments") -> "FoldMoments":
        """:meth:`__add__` into this object's arrays (no group-sized temporaries)."""
        unit = np.maximum(self.unit, other.unit)
        ratio = self.unit / unit
        if np.any(ratio != 1):
            self.mean[...] *= ratio
            self.cross[...] *= np.outer(ratio, ratio)
            self.unit[...] = unit
        other = other.rescaled(unit)
        for g in np.flatnonzero(other.count):
            n_a, n_b = self.count[g], other.count[g]
            delta = other.mean[g] - self.mean[g]
            self.cross[g] += other.cross[g]
            self.cross[g] += np.outer(delta, delta * (n_a * n_b / (n_a + n_b)))
            self.mean[g] += delta * (n_b / (n_a + n_b))
            self.count[g] = n_a + n_b
        np.minimum(self.low, other.low, out=self.low)
        np.maximum(self.high, other.high, out=self.high)
        constant = self.low == self.high
        with np.errstate(invalid="ignore"):  # inf - inf of empty groups, not constant
            np.copyto(self.mean, (self.low - self.pilot) / self.unit, where=constant)
        self.cross[constant] = 0.0  # rows of the constant columns, then their columns
        np.moveaxis(self.cross, 1, 2)[constant] = 0.0
        return self

    def total(self) -> "FoldMoments":
        """The moments of all groups' rows together (one group)."""
        n = self.count.sum()
        mean = self.count @ self.mean / n
        offset = self.mean - mean
        cross = self.cross.sum(axis=0) + np.einsum("f,fi,fj->ij", self.count, offset, offset)
        return _pinned(FoldMoments(np.array([n]), self.pilot, self.unit, mean[None], cross[None],
                                   self.low.min(axis=0)[None], self.high.max(axis=0)[None]))

    def complements(self) -> "FoldMoments":
        """For each group, the moments of the rows of all *other* groups.

        Sums over the other groups are prefix plus suffix sums (no subtraction of a
        group from the total), and means are combined around the all-rows mean.
        """
        n = self.count.sum()
        count = n - self.count
        centre = self.count @ self.mean / n
        offset = self.mean - centre
        weighted = self.count[:, None] * offset
        shift = np.divide(_others(weighted), count[:, None], out=np.zeros_like(weighted),
                          where=count[:, None] > 0)
        spread = _others(self.cross) + _others(
            np.einsum("f,fi,fj->fij", self.count, offset, offset))
        cross = spread - count[:, None, None] * (shift[:, :, None] * shift[:, None, :])
        low = _others(self.low, np.minimum, np.inf)
        high = _others(self.high, np.maximum, -np.inf)
        return _pinned(FoldMoments(count, self.pilot, self.unit, centre + shift, cross, low,
                                   high))

    def removed_from(self, total: "FoldMoments", low: np.ndarray,
                     high: np.ndarray) -> "FoldMoments":
        """For each group, the moments of *total*'s rows without the group's rows.

        A downdate (``C_rest = C - C_g - n_rest n_g / n * d d'``): it loses digits
        only where a group holds almost all of a column's variation. For when
        the groups' moments cannot all be held at once (:meth:`complements` is
        exact). *low* and *high* (F, q) are the ranges of the remaining rows,
        which a downdate cannot give (:func:`fold_ranges`).
        """
        unit = np.maximum(self.unit, total.unit)
        a, b = total.rescaled(unit), self.rescaled(unit)
        count = a.count - b.count
        share = np.divide(b.count, count, out=np.zeros_like(count), where=count > 0)
        mean = a.mean + share[:, None] * (a.mean - b.mean)
        delta = mean - b.mean
        cross = a.cross - b.cross - (count * b.count / a.count)[:, None, None] * (
            delta[:, :, None] * delta[:, None, :])
        return _pinned(FoldMoments(count, self.pilot, unit, mean, cross, low, high))

    def take(self, groups: np.ndarray) -> "FoldMoments":
        """Some of the groups."""
        return FoldMoments(self.count[groups], self.pilot, self.unit, self.mean[groups],
                           self.cross[groups], self.low[groups], self.high[groups])

    @property
    def constant(self) -> np.ndarray:
        """(F, q): columns constant over the group's rows (also an empty group's)."""
        return self.low >= self.high


def _centre(X: np.ndarray, y: np.ndarray, constant: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Subtract the column means from X and y in place and return them (means of [X, y]).

    A constant column's mean is set to its value exactly, so its residuals are exactly 0.
    """
    centre = np.append(X.mean(axis=0), y.mean())
    centre[constant] = value[constant]
    X -= centre[:-1]
    y -= centre[-1]
    return centre


def _power_of_two_above(big: np.ndarray) -> np.ndarray:
    """``2**e`` with ``big < 2**e`` (1 for 0), the exponent kept where its inverse is finite."""
    exponent = np.frexp(big)[1]
    return np.ldexp(1.0, np.clip(exponent, -_EXPONENT_LIMIT, _EXPONENT_LIMIT))


def _pinned(m: FoldMoments) -> FoldMoments:
    """Columns constant over a group: mean exactly their (shifted) value, cross products 0."""
    constant = (m.low == m.high)
    if not constant.any():
        return m
    with np.errstate(invalid="ignore"):  # inf - inf of empty groups, not constant
        value = (m.low - m.pilot) / m.unit
    mean = np.where(constant, value, m.mean)
    keep = ~constant
    cross = m.cross * (keep[:, :, None] & keep[:, None, :])
    return FoldMoments(m.count, m.pilot, m.unit, mean, cross, m.low, m.high)


def _others(values: np.ndarray, combine: np.ufunc = np.add, empty: float = 0.0) -> np.ndarray:
    """For each index f along axis 0, *combine* over all entries but f (prefix with suffix)."""
    pad = np.full((1,) + values.shape[1:], empty)
    before = np.concatenate([pad, combine.accumulate(values, axis=0)[:-1]])
    after = np.concatenate([combine.accumulate(values[::-1], axis=0)[::-1][1:], pad])
    return combine(before, after)


def fold_segments(labels: np.ndarray, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions that sort *labels* (stable) and the count of each label 0..n_labels-1."""
    # 16-bit labels are sorted by numpy's radix sort: about 3x faster than int64's merge sort
    keys = labels.astype(np.int16) if n_labels <= np.iinfo(np.int16).max else labels
    return np.argsort(keys, kind="stable"), np.bincount(labels, minlength=n_labels)


def fold_moments(
    X: np.ndarray,
    y: np.ndarray,
    folds: np.ndarray | None,
    fold_set: np.ndarray,
    columns: np.ndarray | None = None,
    chunk_rows: int | None = None,
    rest: bool = True,
    pilot: np.ndarray | None = None,
) -> FoldMoments:
    """Moments of ``[X[:, columns], y]`` per fold of *fold_set*, and of all other rows.

    One pass over row chunks (of :data:`pearlstats.backends.chunks.CHUNK_ROWS`
    rows unless *chunk_rows* is given). Group g < len(fold_set) holds the rows of
    fold ``fold_set[g]``; the last group every other row (empty when *fold_set*
    holds every fold, or with ``rest=False``: those rows are then not read). With
    ``folds=None`` every row is in the last group. *X* is read in place, a chunk
    of rows at a time. The moments are taken around *pilot* ((q,), default
    :func:`pilot_centre` of these rows); moments of other rows around the same
    pilot add up with ``+`` (the dask fit sums its partitions' so). No rows give
    :meth:`FoldMoments.empty`.
    """
    lookup = _fold_lookup(folds, fold_set)
    if pilot is None:
        pilot = pilot_centre(X, y, columns)
    if not len(y):
        return FoldMoments.empty(len(fold_set) + 1, pilot)
    scratch = Scratch()  # every chunk is read into the same memory (of_sorted_rows keeps none)

    def part(rows: slice) -> FoldMoments:
        labels = (np.full(rows.stop - rows.start, len(fold_set)) if folds is None
                  else lookup[folds[rows]])
        order, counts = fold_segments(labels, len(fold_set) + 1)
        if not rest:
            order, counts = order[:len(order) - counts[-1]], np.append(counts[:-1], 0)
        return FoldMoments.of_sorted_rows(chunk_columns(X, rows, order, columns, scratch),
                                          y[rows.start + order].astype(float, copy=False),
                                          counts, pilot)

    width = X.shape[1] if columns is None else len(columns)
    return sum_chunks(part, len(y), chunk_rows, width + 1)


@dataclass(frozen=True)
class _FoldsAndRows:
    """Per-fold moments and all-rows moments of the same chunks; sums add both."""

    folds: FoldMoments
    rows: FoldMoments

    def __iadd__(self, other: "_FoldsAndRows") -> "_FoldsAndRows":
        self.folds.__iadd__(other.folds)
        self.rows.__iadd__(other.rows)
        return self


def fold_and_row_moments(X: np.ndarray, y: np.ndarray, folds: np.ndarray,
                         fold_set: np.ndarray) -> tuple[FoldMoments, FoldMoments]:
    """``fold_moments(X, y, folds, fold_set)`` and ``fold_moments(X, y, None, [])``, one read.

    The second, every row in one group, is what its own pass gives bit for bit (the
    same chunks, the rows of each in row order, the same arithmetic), so it does not
    depend on the folds; each chunk's rows are read once for both.
    """
    lookup = _fold_lookup(folds, fold_set)
    pilot = pilot_centre(X, y, None)
    scratch = Scratch()

    def part(rows: slice) -> _FoldsAndRows:
        order, counts = fold_segments(lookup[folds[rows]], len(fold_set) + 1)
        block = chunk_columns(X, rows, None, None, scratch)  # a copy in row order
        by_fold = np.take(block, order, axis=0, out=scratch("rows", block.shape), mode="clip")
        return _FoldsAndRows(
            FoldMoments.of_sorted_rows(by_fold, y[rows.start + order].astype(float), counts,
                                       pilot),
            FoldMoments.of_sorted_rows(block, np.array(y[rows], dtype=float),
                                       np.array([len(block)]), pilot))

    both = sum_chunks(part, len(y), None, X.shape[1] + 1)
    return both.folds, both.rows


def pilot_centre(X: np.ndarray, y: np.ndarray, columns: np.ndarray | None,
                 rows: int = _PILOT_ROWS) -> np.ndarray:
    """Column medians of ``[X[:, columns], y]`` over the first *rows* rows.

    Known before a pass (the first partition's first rows) and near every column's mean
    (a median: a few outlying rows do not move it).
    """
    head = X[:rows] if columns is None else X[:rows, columns]
    return np.append(np.median(head, axis=0), np.median(y[:rows])).astype(float)


@dataclass(frozen=True)
class _Ranges:
    """Column minima and maxima per group; sums combine them."""

    low: np.ndarray
    high: np.ndarray

    def __add__(self, other: "_Ranges") -> "_Ranges":
        return _Ranges(np.minimum(self.low, other.low), np.maximum(self.high, other.high))


def fold_ranges(X: np.ndarray, y: np.ndarray, folds: np.ndarray,
                columns: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Column minima and maxima of ``[X[:, columns], y]`` over each fold's *training* rows.

    One pass over row chunks; (K, q) each (+inf and -inf where no training row).
    """
    K = int(folds.max()) + 1

    def part(rows: slice) -> _Ranges:
        order, counts = fold_segments(folds[rows], K)
        W = np.column_stack([chunk_columns(X, rows, order, columns), y[rows.start + order]])
        starts = np.concatenate([[0], np.cumsum(counts)])
        low, high = np.full((K, W.shape[1]), np.inf), np.full((K, W.shape[1]), -np.inf)
        for g in np.flatnonzero(counts):
            rows_g = W[starts[g]:starts[g + 1]]
            low[g], high[g] = rows_g.min(axis=0), rows_g.max(axis=0)
        return _Ranges(low, high)

    ranges = sum_chunks(part, len(folds), None, 2 * (X.shape[1] if columns is None
                                                     else len(columns)) + 2)
    return _others(ranges.low, np.minimum, np.inf), _others(ranges.high, np.maximum, -np.inf)


def _fold_lookup(folds: np.ndarray | None, fold_set: np.ndarray) -> np.ndarray:
    """Group of each fold label: its position in *fold_set*, else ``len(fold_set)``."""
    fold_set = np.asarray(fold_set, dtype=int)
    size = max(0 if folds is None or not len(folds) else int(folds.max()) + 1,
               int(fold_set.max(initial=-1)) + 1)
    lookup = np.full(size, len(fold_set))
    lookup[fold_set] = np.arange(len(fold_set))
    return lookup


def fold_groups(folds: np.ndarray, fold_set: np.ndarray) -> np.ndarray:
    """Group of each row (see :func:`fold_moments`)."""
    return _fold_lookup(folds, fold_set)[folds]


def chunk_columns(X: np.ndarray, rows: slice, order: np.ndarray | None,
                  columns: np.ndarray | None, scratch: Scratch | None = None) -> np.ndarray:
    """A C-ordered array of the design's *columns* for the chunk's rows in *order*.

    ``order=None``: all of *rows* in row order. A new array, or with *scratch* possibly
    memory of *scratch* (overwritten by the next chunk read with it); never *X*'s memory.
    """
    if isinstance(X, ColumnStack):
        return X.chunk(rows, order, columns, scratch)
    if order is None:
        return np.array(X[rows] if columns is None else X[rows][:, columns], dtype=float,
                        order="C")
    index = rows.start + order
    if columns is None and scratch is not None and X.dtype == float:
        return np.take(X, index, axis=0, out=scratch("rows", (len(index), X.shape[1])),
                       mode="clip")  # "clip" writes into *out* directly; *index* is in range
    chunk = np.take(X, index, axis=0) if columns is None else X[np.ix_(index, columns)]
    return chunk.astype(float, copy=False)


def design_from_moments(total: FoldMoments, centre: bool = True) -> ScaledDesign:
    """The standardisation of :meth:`ScaledDesign.from_design`, from all-rows moments of [X, y]."""
    p = total.unit.size - 1
    unit, low, high = total.unit[:p], total.low[0, :p], total.high[0, :p]
    constant = low == high
    mean = total.pilot[:p] + total.mean[0, :p] * unit
    sd = np.where(constant, 0.0, np.sqrt(np.diagonal(total.cross[0])[:p] / total.count[0]) * unit)
    big = np.maximum(np.abs(low), np.abs(high))
    scale = np.where(sd > 0, sd, np.where(big > 0, big, 1.0))
    first = np.flatnonzero(constant & (low != 0))
    penalized = np.ones(p, dtype=bool)
    center = np.zeros(p)
    if not first.size:
        return ScaledDesign(center, scale, penalized, None, 1.0)
    intercept = int(first[0])
    penalized[intercept] = False
    if centre:
        center = np.where(penalized, mean, 0.0)
    return ScaledDesign(center, scale, penalized, intercept, float(low[intercept]))


def standardised_systems(m: FoldMoments, design: ScaledDesign) -> tuple[np.ndarray, np.ndarray]:
    """``Z'Z`` (F, p, p) and ``Z'y`` (F, p) of each group's rows, ``Z = (X - center) / scale``.

    From the centred moments: ``(X - c)'(X - c) = C + n (m - c)(m - c)'``, with
    ``m - c = (m - pilot) - (c - pilot)``: both differences are small and the second
    is exact when c and the pilot are close, so a large common offset cancels first.
    """
    p = m.unit.size - 1
    a = m.unit[:p] / design.scale
    shift = m.mean[:, :p] - (design.center - m.pilot[:p]) / m.unit[:p]  # (m - c) in units
    y_mean = m.mean[:, p:] + m.pilot[p] / m.unit[p]
    n = m.count[:, None]
    inner = m.cross[:, :p, :p] + n[:, :, None] * (shift[:, :, None] * shift[:, None, :])
    gram = inner * (a[:, None] * a[None, :])
    cross = (m.cross[:, :p, p] + n * shift * y_mean) * (a * m.unit[p])
    return gram, cross


def training_penalty_weights(m: FoldMoments, design: ScaledDesign) -> np.ndarray:
    """Ridge weights on the standardised coefficients, per group: (F, p).

    The group's variance of each standardised column; 1 for a column constant over
    the group's rows (its all-rows scale) or over all rows; 0 for the intercept.
    """
    p = m.unit.size - 1
    variance = np.diagonal(m.cross, axis1=1, axis2=2)[:, :p] / np.maximum(m.count, 1)[:, None]
    variance = variance * (m.unit[:p] / design.scale) ** 2
    # constant over all rows is constant over the group's: both are penalised at their scale
    return np.where(design.penalized, np.where(m.constant[:, :p], 1.0, variance), 0.0)
