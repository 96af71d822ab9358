"""Cross-validation folds: K-fold (stratified for classes), leave-one-out, or given labels.

:func:`check_cv` reads the ``cv`` argument of :func:`pearlstats.fit` once, for
data in memory and on dask alike, so both accept the same forms with the same
messages: K, ``"loo"``, the name of a column of fold labels, the labels, or a
splitter object (:mod:`pearlstats.design.splitters`).

Examples
--------
>>> import numpy as np
>>> folds = make_folds(5, n=20, seed=0)
>>> np.bincount(folds).tolist()
[4, 4, 4, 4, 4]
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..checks import align_by_label
from ..exceptions import FoldError, OptionError, ResponseError, format_positions
from .splitters import is_splitter, splitter_name

__all__ = [
    "FoldRule", "check_cv", "describe_cv", "fold_column_names", "fold_levels", "make_folds",
    "fold_labels_for_rows", "check_class_coverage", "group_class_advice",
]


CV_FORMS = ("an int K >= 2, 'loo', the name of a column of fold labels, "
            "an array of fold labels, or a splitter (an object with split and get_n_splits)")


@dataclass(frozen=True)
class FoldRule:
    """The checked ``cv`` argument: ``kind`` is ``"kfold"``, ``"loo"``, ``"column"``,
    ``"labels"`` or ``"splitter"``; ``value`` is K, None, the column's name, the labels or
    the splitter as given."""

    kind: str
    value: Any = None

    def for_rows(self, data: Any) -> int | str | Any:
        """The ``cv`` the in-memory stages take: K, ``"loo"`` or labels (a column's values)."""
        if self.kind == "loo":
            return "loo"
        if self.kind == "column":
            return np.asarray(data[self.value])
        return self.value


def describe_cv(cv: Any) -> str:
    """``cv=...`` for a message: the value itself, or the length of labels (never all of them)."""
    if is_splitter(cv):
        return splitter_name(cv)
    if isinstance(cv, (str, numbers.Number)) or cv is None or np.ndim(cv) == 0:
        text = repr(cv)
        return f"cv={text if len(text) <= 60 else text[:57] + '...'}"
    if is_dask_collection(cv):  # its length is a computation: named by its column, if any
        column = dask_column_name(cv)
        return f"cv=<dask {type(cv).__name__}{'' if column is None else f' {column!r}'}>"
    return f"cv=<{type(cv).__name__} of {np.size(cv)} fold labels>"


def is_dask_collection(value: Any) -> bool:
    """Whether *value* is a dask collection (without importing dask)."""
    return hasattr(value, "__dask_graph__")


def dask_column_name(value: Any) -> str | None:
    """The column name of a dask Series (a dask array's ``name`` is its graph key: None)."""
    name = getattr(value, "name", None)
    return name if hasattr(value, "index") and isinstance(name, str) else None


def fold_column_names(data: Any) -> list:
    """The names ``cv`` may give as a column of fold labels: a DataFrame's columns (pandas or
    dask), or a dict's keys that hold one value per row (not its 2-D blocks)."""
    if hasattr(data, "columns"):
        return list(data.columns)
    if isinstance(data, Mapping):
        return [name for name, values in data.items() if np.ndim(values) == 1]
    return []


def check_cv(cv: Any, columns: Collection) -> FoldRule:
    """Check the form of ``cv`` (for data in memory and on dask alike).

    Parameters
    ----------
    cv : int, str, array-like or splitter
        K >= 2 for K-fold, ``"loo"`` for leave-one-out (a reserved word, even
        if a column has that name), the name of a column of *columns* that
        holds one fold label per row, the labels themselves, or an object with
        ``split(X, y, groups)`` and ``get_n_splits`` (scikit-learn's splitters).
    columns : collection of str
        The data's columns (:func:`fold_column_names`).

    Returns
    -------
    FoldRule

    Raises
    ------
    FoldError
        Anything else, named briefly (labels by their number, not their values).

    Examples
    --------
    >>> check_cv(5, ["y", "fold"]), check_cv("fold", ["y", "fold"]).kind
    (FoldRule(kind='kfold', value=5), 'column')
    >>> check_cv("group", ["y", "fold"])
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.FoldError: cv='group' names no column of the data (columns: ['y', \
'fold']); use an int K >= 2, 'loo', the name of a column of fold labels, an array of fold labels, \
or a splitter (an object with split and get_n_splits)
    """
    if is_splitter(cv):
        if isinstance(cv, type):  # KFold rather than KFold(5): split would fail on self
            raise FoldError(f"cv={cv.__name__} is the splitter class, not a splitter; pass an "
                            f"instance, e.g. {_example_instance(cv)}")
        return FoldRule("splitter", cv)
    if isinstance(cv, str):
        if cv == "loo":
            return FoldRule("loo")
        if cv in columns:
            return FoldRule("column", cv)
        raise FoldError(
            f"cv={cv!r} names no column of the data (columns: {list(columns)[:20]}); use {CV_FORMS}"
        )
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, (bool, np.bool_)):
        if cv < 2:
            raise FoldError(f"cv={int(cv)}: cross-validation needs at least 2 folds")
        return FoldRule("kfold", int(cv))
    pairs = _split_pairs(cv)
    if pairs is not None:
        raise FoldError(
            f"cv= is {pairs}, which pearl.fit does not take (it cannot run them on the rows it "
            "keeps, nor give them groups); give the splitter object "
            "itself (e.g. KFold(5), GroupKFold(5); pearl.fit runs its split), or one fold label "
            "per row (the test split of each row). The scikit-learn estimators (PearlRegressor, "
            "PearlClassifier) take pairs whose test sets are a partition of the rows"
        )
    if isinstance(cv, (bool, np.bool_)) or np.ndim(cv) == 0:
        raise FoldError(f"{describe_cv(cv)} is not understood; use {CV_FORMS}")
    return FoldRule("labels", cv)


def _example_instance(splitter_class: type) -> str:
    """``KFold(5)`` for a class taking ``n_splits``, ``LeaveOneGroupOut()`` otherwise."""
    try:
        parameters = inspect.signature(splitter_class).parameters
    except (TypeError, ValueError):  # a class whose signature Python cannot read
        parameters = {}
    return f"{splitter_class.__name__}({'5' if 'n_splits' in parameters else ''})"


def _split_pairs(cv: Any) -> str | None:
    """``"a list of 5 (train, test) pairs"`` where *cv* is what scikit-learn's ``cv=`` also
    takes but fold labels are not: an iterator (``KFold(5).split(X)``) or a list of (train,
    test) pairs of arrays (a label is one value, so a pair of arrays is never one); else None."""
    if isinstance(cv, Iterator):
        return f"a {type(cv).__name__} of splits"
    if isinstance(cv, (list, tuple)) and cv and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2
        and all(np.ndim(part) == 1 for part in pair) for pair in cv
    ):
        return f"a {type(cv).__name__} of {len(cv)} (train, test) pairs"
    return None


def _kfold(n: int, k: int, rng: np.random.Generator, strata: np.ndarray | None) -> np.ndarray:
    folds = np.empty(n, dtype=np.intp)
    if strata is None:
        order = rng.permutation(n)
        folds[order] = np.arange(n) % k
        return folds
    # Deal each class's shuffled rows round-robin, continuing where the previous
    # class stopped, so fold sizes stay within one of each other.
    start = 0
    for level in np.unique(strata):
        rows = rng.permutation(np.flatnonzero(strata == level))
        folds[rows] = (start + np.arange(rows.size)) % k
        start = (start + rows.size) % k
    return folds


def make_folds(
    cv: int | str | np.ndarray | Sequence,
    n: int,
    seed: int | np.random.SeedSequence | None = None,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """Assign each row to a fold.

    Parameters
    ----------
    cv : int, "loo" or array-like of length n
        Number of folds K (2 <= K <= n), ``"loo"`` for leave-one-out, or one
        fold label per row (any hashable values; mapped to 0..K-1 in sorted order).
    n : int
        Number of rows.
    seed : int, numpy SeedSequence or Generator, optional
        Seeds the shuffle of K-fold assignment.
    strata : ndarray, optional
        Class codes; when given, K-fold assignment is stratified.

    Returns
    -------
    ndarray of int, shape (n,)
        Fold label of each row, 0..K-1.

    Raises
    ------
    FoldError
        K outside [2, n], labels of the wrong length, or a single fold.
    OptionError
        A seed numpy cannot use (e.g. negative).
    """
    if isinstance(cv, str):
        if cv != "loo":
            raise FoldError(
                f"cv={cv!r} is not understood; use an int K >= 2, 'loo', or an array of fold labels"
            )
        return np.arange(n, dtype=np.intp)
    if isinstance(cv, (bool, np.bool_)):
        raise FoldError(
            f"cv={cv!r} is not understood; use an int K >= 2, 'loo', or an array of fold labels"
        )
    if isinstance(cv, (int, np.integer)):
        k = int(cv)
        if k < 2:
            raise FoldError(f"cv={k}: cross-validation needs at least 2 folds")
        if k > n:
            raise FoldError(f"cv={k} folds but only {n} rows; use K <= {n} or cv='loo'")
        try:
            rng = np.random.default_rng(seed)
        except (TypeError, ValueError) as err:
            raise OptionError(
                f"seed={seed!r} cannot seed the folds ({err}); use a non-negative int"
            ) from err
        return _kfold(n, k, rng, strata)
    labels = np.asarray(cv)
    if labels.ndim == 0:  # a float, None, ...: not a K and not labels
        raise FoldError(
            f"cv={cv!r} is not understood; use an int K >= 2, 'loo', or an array of fold labels"
        )
    if labels.ndim != 1 or labels.shape[0] != n:
        raise FoldError(
            f"cv has {labels.size} fold labels in shape "
            f"{labels.shape}; give exactly one label per row ({n})"
        )
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise FoldError("cv fold labels contain NaN or inf")
    missing = np.flatnonzero(pd.isna(labels))
    if missing.size:
        raise FoldError(
            f"cv fold labels are missing at {format_positions(missing)}; give every row a fold"
        )
    return _sorted_levels(labels)[1]


def _sorted_levels(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct fold labels in sorted order (fold k is the k-th) and each row's fold."""
    try:
        levels, codes = np.unique(labels, return_inverse=True)
    except TypeError as err:  # labels that do not sort, e.g. ints mixed with strings
        kinds = sorted({type(label).__name__ for label in labels})
        raise FoldError(
            f"cv fold labels mix types {kinds} that cannot be ordered; use labels of one type"
        ) from err
    if levels.size < 2:
        raise FoldError(
            f"cv fold labels have a single value {levels.tolist()[0]!r}; "
            "cross-validation needs at least 2 folds"
        )
    return levels, codes.astype(np.intp)


def fold_levels(distinct: Any, column: str) -> np.ndarray:
    """The sorted fold labels of a fold column read in parts (dask), from its distinct values.

    Fold k is the k-th label in sorted order, as :func:`make_folds` numbers
    the labels of rows in memory, so both paths give the same folds; the same
    labels are refused with the same messages (a missing label is named by
    the column, as its rows are not counted).

    Examples
    --------
    >>> fold_levels(np.array(["b", "a", "c"], dtype=object), "fold").tolist()
    ['a', 'b', 'c']
    """
    distinct = np.asarray(distinct)
    if pd.isna(distinct).any() or (distinct.dtype.kind == "f" and np.isinf(distinct).any()):
        raise FoldError(
            f"the fold column {column!r} has missing (or infinite) labels; give every row a fold"
        )
    return _sorted_levels(distinct)[0]


def fold_labels_for_rows(
    cv: int | str | np.ndarray | Sequence,
    index: pd.Index | None,
    kept: np.ndarray,
    n_given: int,
    name: str = "cv",
) -> int | str | np.ndarray | Sequence:
    """Given fold labels, one per row of the data, reduced to the rows the fit keeps.

    ``cv`` labels describe the user's rows, so they follow the two rules the
    blocks follow: a pandas Series is matched to a DataFrame *data* by index
    label (as statsmodels aligns pandas objects), and the rows
    ``missing="drop"`` removes are removed from the labels too. Labels
    already given for the kept rows only are accepted as they are.

    Parameters
    ----------
    cv : int, str or array-like
        The ``cv`` argument; anything but fold labels is returned unchanged.
    index : pandas Index or None
        Row labels of a DataFrame *data* (None for a dict).
    kept : ndarray of int
        Positions of the data rows the fit keeps.
    n_given : int
        Rows of the data before ``missing="drop"``.
    name : str, default "cv"
        The argument's name in messages (``"groups"`` for the groups of rows).

    Returns
    -------
    The fold labels of the kept rows (an ndarray), or *cv* unchanged.

    Raises
    ------
    FoldError
        A Series whose index labels are not the data's.
    """
    if isinstance(cv, (str, numbers.Integral)) or is_splitter(cv) or np.ndim(cv) != 1:
        return cv  # K, "loo" or malformed labels: make_folds says what is wrong
    cv = align_by_label(name, cv, index, FoldError)
    labels = np.asarray(cv)
    if len(kept) < n_given and labels.shape[0] == n_given:
        return labels[kept]
    return labels


STRATIFY_ADVICE = "choose folds so that every class is outside each fold (e.g. an int cv, " \
                  "which stratifies)"


def group_class_advice(codes: np.ndarray, groups: np.ndarray, missing: Sequence,
                       classes: Sequence) -> str:
    """The advice for folds of whole groups (``groups=``) whose training rows lack a class:
    an int cv with groups deals whole groups and does not stratify, so
    ``StratifiedGroupKFold``; a class found in a single group leaves that group's fold
    without it whatever the folds.

    *codes* are the rows' class codes, *groups* their group codes, *missing* the classes
    (labels) some training set lacks."""
    for label in missing:
        code = list(classes).index(label)
        holding = np.unique(groups[codes == code])
        if holding.size == 1:
            return (f"class {label!r} is found in a single group, so the fold that tests that "
                    "group trains without it, whatever the folds of whole groups: merge or drop "
                    "the class, or use folds that do not keep that group whole")
    return ("folds of whole groups (groups=; an int cv with groups= deals whole groups and does "
            "not stratify) must leave every class outside each fold: use "
            "cv=StratifiedGroupKFold(K) (scikit-learn), which balances the classes as far as "
            "whole groups allow, or fewer folds")


def _groups_whole(groups: np.ndarray, folds: np.ndarray) -> bool:
    """Whether every group's rows lie in one fold (a splitter given ``groups=`` may ignore
    them, as ``KFold`` does: its folds then get the advice for rows, not for groups)."""
    pairs = np.unique(np.column_stack([groups, folds]), axis=0)
    return bool(len(np.unique(pairs[:, 0])) == len(pairs))


def check_class_coverage(codes: np.ndarray, folds: np.ndarray, classes: Sequence,
                         advice: str = STRATIFY_ADVICE, groups: np.ndarray | None = None
                         ) -> None:
    """Require every class in every training set (all rows outside a fold).

    A candidate trained without some class cannot predict it, so its
    out-of-fold probabilities would be meaningless. *advice* ends the FoldError (the
    folds of dask data are hashed, not stratified: their caller says so); with the
    rows' *groups* (codes), where the folds keep them whole, :func:`group_class_advice`
    instead.

    Raises
    ------
    ResponseError
        A class has a single row overall.
    FoldError
        Some fold's complement lacks a class (only possible with given labels).
    """
    counts = np.bincount(codes, minlength=len(classes))
    lonely = [classes[c] for c in np.flatnonzero(counts < 2)]
    if lonely:
        raise ResponseError(
            f"class(es) {lonely} occur in only one row; each class needs at least 2 rows so that "
            "every cross-validation training set contains it (merge or drop rare classes)"
        )
    for fold in np.unique(folds):
        present = np.unique(codes[folds != fold])
        if present.size < len(classes):
            missing = [classes[c] for c in sorted(set(range(len(classes))) - set(present.tolist()))]
            if groups is not None and _groups_whole(groups, folds):
                advice = group_class_advice(codes, groups, missing, classes)
            raise FoldError(
                f"the training rows for fold {fold} contain no row of class(es) {missing}; "
                f"{advice}"
            )
