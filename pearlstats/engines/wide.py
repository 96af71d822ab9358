"""Routing of wide designs: screen or dual-fit wide candidates, densify only narrow ones.

A design is *wide* when it is sparse (a wide sparse block, see
:mod:`pearlstats.design.sparse`) or has too many columns for one dense Gram
matrix. Its candidates are split by shape, before any product is formed:

- a candidate with at least as many columns as the smallest fold's training
  rows (or too many for its dense systems) is *wide*. Without a ridge it is
  recorded as infeasible from its shape alone; with ``ridge > 0`` it is fitted
  in the row space (:mod:`pearlstats.engines.dual`), except MLP candidates
  (``downstream=``), which are recorded as infeasible;
- the other candidates go to the family's dense engine on a dense copy of the
  columns they use (all rows x at most a few hundred columns).

Logistic (binomial, multinomial) wide candidates under ``separation="ridge"``
with no ridge start on the first rung of the separation ladder, as the dense
engine does (p >= n classes are separable); the ledger says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..design.sparse import Values
from ..exceptions import CandidateError, OptionError
from ..ledger import LedgerEntry
from ._common import (
    SEPARATION_RIDGES,
    EngineOutput,
    fold_rows,
    infeasible_entry,
    too_wide_entry,
)
from .dual import DualColumns, dual_fit

if TYPE_CHECKING:
    from ..families import EncodedResponse, Family

__all__ = [
    "is_wide_design", "wide_cv_predict", "wide_fit_params", "candidate_exog", "design_intercept",
    "dense_candidate_columns", "column_rank", "candidate_rows",
]


def is_wide_design(X: Values) -> bool:
    """Whether *X* is sparse or too wide for one dense Gram matrix (then candidates are routed)."""
    return sp.issparse(X) or too_wide_entry("", X.shape[1], 1) is not None


def _is_wide(n_params: int, n_train: int) -> bool:
    return n_params >= n_train or too_wide_entry("", n_params, 2) is not None


def _dense_columns(X, columns: np.ndarray) -> np.ndarray:
    """All rows of *columns* as a dense array (a narrow candidate's copy)."""
    part = X[:, columns]
    return part.toarray() if sp.issparse(part) else np.ascontiguousarray(part, dtype=float)


def design_intercept(X: Values) -> int | None:
    """The design's intercept: the first column constant and non-zero over all rows."""
    if X.shape[0] == 0:
        return None
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        high, low = X.max(axis=0).toarray().ravel(), X.min(axis=0).toarray().ravel()
        first = X[0].toarray().ravel()
    else:
        high, low, first = X.max(axis=0), X.min(axis=0), X[0]
    constant = np.flatnonzero((high == low) & (first != 0))
    return int(constant[0]) if constant.size else None


def wide_cv_predict(family: Family, X: Values, response: EncodedResponse, candidates: Sequence,
                    folds: np.ndarray, ridge: float,
                    engine: Callable[[np.ndarray, list], EngineOutput]) -> EngineOutput:
    """Out-of-fold predictions of every candidate of a wide design.

    *engine(X_dense, candidates)* runs the family's dense engine; the narrow
    candidates reach it with their columns renumbered in a dense copy.
    """
    rows = fold_rows(folds)
    n = X.shape[0]
    n_train = n - max(r.size for r in rows)
    wide = np.array([_is_wide(c.columns.size, n_train) for c in candidates], dtype=bool)
    narrow = [c for c, w in zip(candidates, wide) if not w]
    tail = (response.n_classes,) if family.name == "multinomial" else ()
    predictions = np.full((n, len(candidates)) + tail, np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    ridges = np.full(len(candidates), float(ridge)) if family.name != "gaussian" else None
    entries: list[LedgerEntry] = []
    if narrow:
        used = np.unique(np.concatenate([c.columns for c in narrow]))
        local = [dataclasses.replace(c, columns=np.searchsorted(used, c.columns)) for c in narrow]
        out = engine(_dense_columns(X, used), local)
        predictions[:, ~wide] = out.predictions
        failed[~wide] = out.failed
        entries.extend(out.entries)
        if ridges is not None and out.ridges is not None:
            ridges[~wide] = out.ridges
    n_classes = response.n_classes if family.name == "multinomial" else 2
    for j in np.flatnonzero(wide):
        value, notes = _wide_ridge(family, candidates[j], ridge, n_train, len(rows), n_classes)
        entries.extend(notes)
        if value is None:
            failed[j] = True
            continue
        if ridges is not None:
            ridges[j] = value
        cols = DualColumns.of(X, candidates[j].columns)
        for r in rows:
            train = np.ones(n, dtype=bool)
            train[r] = False
            b, converged = dual_fit(family.name, cols, response.y, train, value, n_classes)
            if not converged:
                failed[j] = True
                entries.append(_not_converged(candidates[j].label, "cv"))
                break
            predictions[r, j] = family.predict(b, cols.X[r])
    return EngineOutput(predictions, failed, entries, ridges)


def _is_mlp(family) -> bool:
    return getattr(family, "mlp", None) is not None


def _ladder(family) -> bool:
    """Whether a wide candidate without a ridge starts on the separation ladder (logistic)."""
    return family.name in ("binomial", "multinomial") and family.separation == "ridge"


def _wide_ridge(family, candidate, ridge: float, n_train: int, n_folds: int,
                n_classes: int) -> tuple[float | None, list[LedgerEntry]]:
    """The ridge a wide candidate is fitted with in the row space, or None (screened), and notes."""
    label, size = candidate.label, candidate.columns.size
    if _is_mlp(family):
        return None, [LedgerEntry(
            label, None, "cv", "infeasible",
            f"{size} inputs of a wide sparse block but only {n_train} training rows in the "
            "smallest fold: MLP candidates are not fitted on wide sparse blocks",
            "given weight 0; reduce the block (e.g. pearl.LSI) to fit MLPs on it", True)]
    value = family.candidate_ridge(label, ridge)
    notes: list[LedgerEntry] = []
    if value <= 0 and _ladder(family):
        value = SEPARATION_RIDGES[0]
        notes.append(LedgerEntry(
            label, None, "cv", "separation",
            f"{size} coefficients but only {n_train} training rows in the smallest fold: the "
            "classes are separable and the maximum-likelihood estimate does not exist",
            f"refitted with ridge={value:g} in every fold and on all rows (the smallest of "
            f"{list(SEPARATION_RIDGES)}; fitted in the row space, the n x n dual)", False))
    systems = n_folds * (n_classes - 1) ** 2  # the Newton matrices are m (n + 1) square
    entry = infeasible_entry(label, size, n_train, value) or too_wide_entry(label, n_train, systems)
    return (None, notes + [entry]) if entry is not None else (value, notes)


def _not_converged(label: str, stage: str) -> LedgerEntry:
    return LedgerEntry(
        label, None, stage, "convergence",
        f"the row-space Newton fit did not converge in {100} iterations",
        "given weight 0; use a larger ridge", stage == "cv")


def wide_fit_params(family: Family, X: Values, response: EncodedResponse, columns: np.ndarray,
                    ridge: float, label: str,
                    refit: Callable[[np.ndarray, np.ndarray], tuple]) -> tuple[Any, list]:
    """Coefficients on all rows of one candidate of a wide design, and ledger notes.

    A narrow candidate is refitted by *refit(X_dense, local_columns)* on a dense
    copy of its columns; a wide one in the row space, with the ridge the
    cross-validation used.
    """
    columns = np.asarray(columns)
    n = X.shape[0]
    if not _is_wide(columns.size, n):
        return refit(_dense_columns(X, columns), np.arange(columns.size))
    value = family.candidate_ridge(label, ridge)
    if value <= 0 and _ladder(family):
        value = SEPARATION_RIDGES[0]
    if value <= 0 or _is_mlp(family):
        how = "as an MLP;" if _is_mlp(family) else "without a ridge; fit with ridge > 0 or"
        raise CandidateError(
            f"candidate {label!r} has {columns.size} columns of a wide sparse design and only {n} "
            f"rows: it cannot be refitted {how} reduce the block (e.g. pearl.LSI)"
        )
    n_classes = response.n_classes if family.name == "multinomial" else 2
    b, converged = dual_fit(family.name, DualColumns.of(X, columns),
                            response.y, np.ones(n, dtype=bool), value, n_classes)
    return b, [] if converged else [_not_converged(label, "refit")]


def candidate_exog(X: Values, columns: np.ndarray, label: str) -> np.ndarray:
    """A candidate's columns for statsmodels (dense); refused for a wide sparse candidate."""
    if sp.issparse(X) and _is_wide(len(columns), X.shape[0]):
        raise OptionError(
            f"candidate {label!r} has {len(columns)} columns of a sparse block and {X.shape[0]} "
            "rows: statsmodels would need a dense copy and a p x p system. Its coefficients are "
            f"in results.candidate_params({label!r})"
        )
    return _dense_columns(X, np.asarray(columns))


def dense_candidate_columns(X: Values, columns: np.ndarray, label: str,
                            what: str) -> np.ndarray:
    """A candidate's columns as a dense array for a p x p computation *what*, if that fits.

    Raises
    ------
    OptionError
        When the candidate's p x p matrices would not fit in memory (a wide sparse block).
    """
    columns = np.asarray(columns)
    if sp.issparse(X) and too_wide_entry("", columns.size, 3) is not None:
        raise OptionError(
            f"{what} of candidate {label!r} needs {columns.size} x {columns.size} matrices, more "
            "than the memory limit; reduce the block (e.g. pearl.LSI) to get it"
        )
    return _dense_columns(X, columns)


def column_rank(X: Values) -> int:
    """Numerical rank of the columns *X* (dense, or sparse through the n x n row kernel)."""
    if not sp.issparse(X) or X.shape[1] <= X.shape[0]:
        return int(np.linalg.matrix_rank(_dense_columns(X, np.arange(X.shape[1]))))
    # rank X = rank X X'; singular values are the square roots of its eigenvalues.
    singular = np.sqrt(np.maximum(np.linalg.eigvalsh((X @ X.T).toarray()), 0.0))
    return int(np.sum(singular > singular.max(initial=0.0) * max(X.shape) * np.finfo(float).eps))


def candidate_rows(family: Family, X: Values, columns: np.ndarray) -> Values:
    """A candidate's columns of design rows *X* for ``family.predict``: sparse stays sparse for
    the linear families; an MLP (whose candidates are narrow) gets them dense."""
    part = X[:, columns]
    return part.toarray() if sp.issparse(part) and _is_mlp(family) else part
