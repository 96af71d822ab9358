"""Splitter objects and groups: scikit-learn's cross-validation contract without scikit-learn.

``cv=`` may be any object with ``split(X, y, groups)`` (yielding pairs of training and
test row positions) and ``get_n_splits`` -- ``GroupKFold``, ``StratifiedGroupKFold``,
``TimeSeriesSplit``, ``PredefinedSplit``, ``LeaveOneGroupOut`` or one's own.
:func:`split_rows` runs it on the fit's rows and checks what it gives:
:class:`Splits`, the test split of each row (-1 where a row is never tested) and each
split's training rows. A *partition* (every row tested once, trained on the rest)
is exactly a set of fold labels. Other splitters (``TimeSeriesSplit``: early rows
are never tested, and each split trains on earlier rows only) give out-of-fold
predictions for the rows they test, and the weights and risks use those rows. A
splitter whose test sets overlap (a row tested
twice: ``ShuffleSplit``, repeated K-fold) is refused by name, as its out-of-fold
predictions would be ambiguous (``cv_repeats=`` is the package's repeated K-fold).

``groups=`` with ``cv=K`` deals whole groups into K folds (:func:`deal_groups`):
largest first, each into the fold with the fewest rows so far, so fold sizes differ
by at most the largest group's rows.

Examples
--------
>>> import numpy as np
>>> codes = np.repeat(np.arange(6), [5, 4, 3, 3, 2, 1])
>>> folds = deal_groups(codes, 3, seed=0)
>>> np.bincount(folds).tolist()
[6, 6, 6]
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import FoldError, format_positions

__all__ = ["Splits", "is_splitter", "splitter_name", "split_rows", "deal_groups", "group_codes",
           "resolve_splits", "check_groups", "OutsideRowsError", "removed_rows_advice",
           "seeded_splitter"]


def is_splitter(cv: Any) -> bool:
    """Whether *cv* follows scikit-learn's splitter contract (``split`` and ``get_n_splits``)."""
    return callable(getattr(cv, "split", None)) and callable(getattr(cv, "get_n_splits", None))


def splitter_name(cv: Any) -> str:
    """``cv=GroupKFold(...)`` for messages: the splitter's class, never its data."""
    return f"cv={type(cv).__name__}(...)"


@dataclass(frozen=True)
class Splits:
    """The checked splits of a splitter on the fit's rows.

    Attributes
    ----------
    folds : ndarray of int (n,)
        The split that tests each row, -1 for a row no split tests.
    train : tuple of ndarray of int
        Training rows of each split (sorted).
    splitter : object, optional
        The splitter that gave them (re-run on the outer training sets of ``res.honest``).
    groups : ndarray or None
        The groups it was given.
    """

    folds: np.ndarray
    train: tuple
    splitter: Any = None
    groups: np.ndarray | None = None

    @property
    def partition(self) -> bool:
        """Every row tested once, each split trained on all rows it does not test."""
        n = len(self.folds)
        return bool((self.folds >= 0).all()) and all(
            len(train) == n - int((self.folds == k).sum()) for k, train in enumerate(self.train)
        )

    @property
    def shortfall(self) -> str:
        """Why the splits are not a partition, in words: rows never tested, or (every row
        tested once) training sets short of all the rows a split does not test (a purge or
        an embargo)."""
        if (self.folds >= 0).all():
            return ("tests every row once but trains a split on fewer than all the rows it "
                    "does not test (a purge or an embargo)")
        return "tests some rows only"

    @property
    def tested(self) -> np.ndarray:
        """Positions of the rows some split tests."""
        return np.flatnonzero(self.folds >= 0)

    @property
    def time_ordered(self) -> bool:
        """Every split trains on rows that all precede the rows it tests (``TimeSeriesSplit``)."""
        return all(len(train) and train.max() < np.flatnonzero(self.folds == k).min()
                   for k, train in enumerate(self.train))

    @property
    def gap(self) -> int:
        """Rows left out between a split's last training row and its first test row: the fewest
        over the splits (``TimeSeriesSplit``'s ``gap``; 0 where a split trains up to its test
        rows). Read from the splits, so a splitter of one's own that leaves rows out there has
        one too. Only meaningful when :attr:`time_ordered`.

        Examples
        --------
        >>> folds = np.array([-1, -1, -1, -1, 0, 1])  # rows 4 and 5 tested, 2 rows before each
        >>> Splits(folds, (np.array([0, 1]), np.array([0, 1, 2]))).gap
        2
        """
        return min(int(np.flatnonzero(self.folds == k).min() - train.max() - 1)
                   for k, train in enumerate(self.train))


class OutsideRowsError(FoldError):
    """A splitter gave positions beyond the rows it was run on: it was built for more rows
    (``PredefinedSplit(test_fold)`` of the rows given, where the fit removed some)."""


def removed_rows_advice(cv: Any, n: int, n_given: int, removed_by: str,
                        removed: Any = None) -> str:
    """What to say when *cv* indexes rows the fit removed: *n* of *n_given* rows are left
    after *removed_by* (e.g. ``"missing='drop'"``); *removed* are their positions among the
    rows given, where known (named, and used in the example).

    The advice reproduces the splits meant: the splitter built on the rows kept. Fold labels
    (``cv=test_fold``) would not, for a ``PredefinedSplit`` with rows never tested: in ``cv=``
    labels -1 is a fold like any other, so every row would be tested.

    Examples
    --------
    >>> print(removed_rows_advice(object(), 8, 10, "missing='drop'", [3, 7])[2:])
    missing='drop' removed 2 of the 10 rows given (rows 3, 7), so the fit has 8 and \
cv=object(...), which was built for all 10, indexes rows that are not there: build the \
splitter on the 8 rows kept (for a PredefinedSplit: PredefinedSplit(np.delete(test_fold, \
[3, 7]))), or remove the rows before building it. (Its folds as cv= labels are the same \
splits only when every row is tested: in cv= labels -1 is a fold like any other)
    """
    removed = None if removed is None else np.asarray(removed, dtype=np.intp)
    if removed is not None and removed.size == n_given - n:
        which = f" ({format_positions(removed)})"
        kept = (f"np.delete(test_fold, {removed.tolist()})" if removed.size <= 10
                else "test_fold of the rows kept")
    else:
        which, kept = "", "test_fold of the rows kept"
    return (f"; {removed_by} removed {n_given - n} of the {n_given} rows given{which}, so the fit "
            f"has {n} and {splitter_name(cv)}, which was built for all {n_given}, indexes rows "
            f"that are not there: build the splitter on the {n} rows kept (for a "
            f"PredefinedSplit: PredefinedSplit({kept})), or remove the rows before building it. "
            "(Its folds as cv= labels are the same splits only when every row is tested: in cv= "
            "labels -1 is a fold like any other)")


def _positions(part: Any, n: int, what: str, k: int, name: str) -> np.ndarray:
    rows = np.asarray(part)
    if rows.dtype == bool and rows.shape == (n,):
        rows = np.flatnonzero(rows)
    if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
        raise FoldError(f"{name} split {k} gave {what} rows that are not row positions "
                        f"(shape {rows.shape}, dtype {rows.dtype}); a splitter yields arrays of "
                        "int positions")
    if rows.size and rows.max() >= n:
        raise OutsideRowsError(f"{name} split {k} gave {what} position {int(rows.max())}, "
                               f"outside the {n} rows 0..{n - 1} it was run on")
    if rows.size and rows.min() < 0:
        raise FoldError(f"{name} split {k} gave {what} positions outside 0..{n - 1}")
    return np.unique(rows).astype(np.intp)


def split_rows(cv: Any, n: int, y: np.ndarray, groups: np.ndarray | None) -> Splits:
    """Run a splitter on *n* rows and check its splits.

    Parameters
    ----------
    cv : splitter
        An object with ``split(X, y, groups)``; it is given a placeholder X of n rows,
        the response *y* (class codes for classes) and the *groups* (or None).
    n : int
    y : ndarray (n,)
    groups : ndarray (n,) or None

    Returns
    -------
    Splits

    Raises
    ------
    FoldError
        The splitter failed (its own message is kept; e.g. a group splitter without
        ``groups=``), gave no split, an empty test set, a training row it also tests,
        or a row tested by two splits.
    """
    name = splitter_name(cv)
    try:
        pairs = list(cv.split(np.zeros((n, 1)), y, groups))
    except Exception as err:  # the splitter is the user's code: keep its message, name it
        # the hint only for a failure about groups (a group splitter given none)
        hint = ("; give groups= (a column name or one value per row)"
                if groups is None and "group" in str(err).lower() else "")
        raise FoldError(f"{name} could not split the {n} rows: {err}{hint}") from err
    if not pairs:
        raise FoldError(f"{name} gave no split; cross-validation needs at least one")
    folds = np.full(n, -1, dtype=np.intp)
    trains = []
    for k, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list, np.ndarray)) or len(pair) != 2:
            got = (f"a {len(pair)}-tuple" if isinstance(pair, (tuple, list, np.ndarray))
                   else f"{type(pair).__name__}")
            raise FoldError(f"{name} split {k} gave {got}; a splitter's split() yields one "
                            "(train, test) pair of index arrays per split (scikit-learn's "
                            "contract)")
        train = _positions(pair[0], n, "training", k, name)
        test = _positions(pair[1], n, "test", k, name)
        if not test.size or not train.size:
            raise FoldError(f"{name} split {k} has no {'test' if not test.size else 'training'} "
                            "rows")
        if np.intersect1d(train, test).size:
            raise FoldError(f"{name} split {k} trains on rows it tests")
        twice = test[folds[test] >= 0]
        if twice.size:
            raise FoldError(
                f"{name} tests {format_positions(twice)} in more than one split (split "
                f"{int(folds[twice[0]])} and {k}): its out-of-fold predictions would not be one "
                "per row. Use a splitter whose test sets are disjoint (for repeated K-fold use "
                "cv=K with cv_repeats=)"
            )
        folds[test] = k
        trains.append(train)
    return Splits(folds, tuple(trains))


def deal_groups(codes: np.ndarray, k: int, seed: Any = None) -> np.ndarray:
    """Deal whole groups into *k* folds balanced by rows: each row's fold.

    The groups are shuffled (by *seed*), then taken largest first (a stable sort, so
    the shuffle breaks ties between equal sizes), each into the fold with the fewest
    rows so far (the lowest-numbered of those). The largest fold then exceeds the
    smallest by at most the rows of the largest group: the last group dealt to the
    largest fold went to the smallest fold then.

    Parameters
    ----------
    codes : ndarray of int (n,)
        Group of each row, 0..G-1.
    k : int
        Folds, at most G.
    seed : int, SeedSequence or None

    Raises
    ------
    FoldError
        Fewer groups than folds.
    """
    sizes = np.bincount(codes)
    n_groups = sizes.size
    if n_groups < 2:
        raise FoldError(f"groups= has a single group, so whole groups cannot be dealt into cv={k} "
                        "folds: cross-validation needs at least 2 groups; give groups= two or "
                        "more labels, or fit without it")
    if n_groups < k:
        raise FoldError(f"cv={k} folds but groups= has only {n_groups} groups; whole groups are "
                        f"dealt into folds, so use cv <= {n_groups}")
    order = np.random.default_rng(seed).permutation(n_groups)
    order = order[np.argsort(-sizes[order], kind="stable")]
    load = np.zeros(k, dtype=np.int64)
    fold_of = np.empty(n_groups, dtype=np.intp)
    for group in order:
        target = int(np.argmin(load))
        fold_of[group] = target
        load[target] += sizes[group]
    return fold_of[codes]


def group_codes(groups: Any, error: type[Exception] = FoldError) -> np.ndarray:
    """Each row's group as a code 0..G-1 (sorted group labels); missing groups refused.

    *error* is what is raised (``DataError`` for cluster covariance groups).

    Examples
    --------
    >>> group_codes(np.array(["b", "a", "b"])).tolist()
    [1, 0, 1]
    """
    values = np.asarray(groups)
    if values.ndim != 1:
        raise error(f"groups has shape {values.shape}; give one group label per row")
    missing = np.flatnonzero(pd.isna(values))
    if missing.size:
        raise error(f"groups are missing at {format_positions(missing)}; give every row a "
                    "group")
    try:
        return np.unique(values, return_inverse=True)[1].ravel().astype(np.intp)
    except TypeError as err:
        raise error("groups mix labels that cannot be ordered; use labels of one type") from err


def seeded_splitter(cv: Any, seed: Any) -> Any:
    """*cv*, or a copy of it seeded by the fit's *seed* where it draws its splits at random
    from ``random_state=None`` (``KFold(shuffle=True)``, ``GroupKFold(shuffle=True)``,
    ``ShuffleSplit``): the copy has ``random_state=seed``, so the same seed gives the same
    splits. The user's object is never changed; a ``random_state`` given (an int, or a
    ``RandomState`` that moves on with each use, scikit-learn's semantics) is kept.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> given = SimpleNamespace(shuffle=True, random_state=None)
    >>> seeded_splitter(given, 3).random_state, given.random_state
    (3, None)
    """
    if seed is None or getattr(cv, "random_state", 0) is not None or not getattr(cv, "shuffle",
                                                                                    True):
        return cv
    if isinstance(seed, numbers.Integral) and 0 <= seed < 2**32:
        state = int(seed)
    else:  # a SeedSequence (or an int numpy's RandomState does not take): one draw from it
        sequence = seed if isinstance(seed, np.random.SeedSequence) else \
            np.random.SeedSequence(seed)
        state = int(sequence.generate_state(1)[0])
    seeded = copy.copy(cv)
    if callable(getattr(seeded, "set_params", None)):
        seeded.set_params(random_state=state)
    else:
        seeded.random_state = state
    return seeded


def resolve_splits(cv: Any, groups: Any, y: np.ndarray, seed: Any, n_given: int | None = None,
                   removed_by: str = "missing='drop'", removed: Any = None) -> Any:
    """The fit's ``cv`` with its ``groups`` applied, on the rows it keeps.

    A splitter becomes fold labels when its splits are a partition, else its
    :class:`Splits` (with the splitter and groups); ``cv=K`` with groups becomes the
    groups dealt into K folds (:func:`deal_groups`, seeded by *seed*); anything else is
    returned as given. A splitter that shuffles with ``random_state=None`` is run as a copy
    with ``random_state=seed`` (:func:`seeded_splitter`).
    *y* is what a splitter is given (class codes for classes). *n_given* is the rows of
    the data before *removed_by* removed some: a splitter that indexes rows beyond those kept
    is then told it was built for the rows given (:func:`removed_rows_advice`; *removed* are
    the positions of the rows removed, where known).
    """
    if groups is not None and np.size(groups) != len(y):
        raise FoldError(f"groups has {np.size(groups)} labels; give exactly one per row "
                        f"({len(y)})")
    if is_splitter(cv):
        cv = seeded_splitter(cv, seed)
        values = None if groups is None else np.asarray(groups)
        if values is not None:
            group_codes(values)  # missing or unorderable labels refused by name
        try:
            splits = split_rows(cv, len(y), y, values)
        except OutsideRowsError as err:
            if n_given is None or n_given <= len(y):
                raise
            advice = removed_rows_advice(cv, len(y), n_given, removed_by, removed)
            raise OutsideRowsError(f"{err}{advice}") from None
        if splits.partition:
            return splits.folds
        return Splits(splits.folds, splits.train, cv, values)
    if groups is None:
        return cv
    codes = group_codes(groups)
    return deal_groups(codes, int(cv), seed)


def check_groups(groups: Any, kind: str, columns: list, data: Any) -> Any:
    """The ``groups`` argument of a fit: a column's values, the labels given, or None.

    Parameters
    ----------
    groups : str, array-like or None
        A column name of *data* (one group label per row) or the labels themselves.
    kind : str
        The :class:`~pearlstats.design.folds.FoldRule` kind of ``cv``: groups go with
        ``"kfold"`` (dealt into K folds) and ``"splitter"`` (given to its ``split``).
    columns : list
        The data's columns that hold one value per row.
    data : DataFrame or dict

    Raises
    ------
    FoldError
        An unknown column, labels that are not one per row, or groups with a ``cv``
        that does not use them.
    """
    if groups is None:
        return None
    if kind not in ("kfold", "splitter"):
        raise FoldError(
            "groups= goes with cv=K (whole groups dealt into K folds) or a splitter object; "
            "with cv='loo' use cv=LeaveOneGroupOut() (scikit-learn) for one fold per group, and "
            "fold labels (a column name or an array as cv=) already say which rows go together"
        )
    if isinstance(groups, str):
        if groups not in columns:
            raise FoldError(f"groups={groups!r} names no column of the data (columns: "
                            f"{list(columns)[:20]}); give a column name or one label per row")
        return data[groups]
    if np.ndim(groups) != 1:
        raise FoldError(f"groups= has shape {np.shape(groups)}; give a column name or one group "
                        "label per row")
    return groups
