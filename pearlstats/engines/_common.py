"""Pieces shared by the cross-validation engines."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ledger import LedgerEntry

__all__ = ["ScaledDesign", "EngineOutput", "fold_rows", "infeasible_entry", "penalized_columns", "RANK_TOLERANCE"]

# Relative pivot below which a Cholesky factor is treated as rank deficient;
# such candidates are solved by minimum-norm least squares, as statsmodels' pinv.
RANK_TOLERANCE = 1e-10


@dataclass(frozen=True)
class ScaledDesign:
    """The design with columns scaled to unit root-mean-square.

    Scaling makes Gram matrices and Newton systems well conditioned and makes
    a ridge penalty act on comparable coefficients; predictions do not depend
    on it. The intercept (the first constant non-zero column) is never
    penalised; every other column is, including all-zero columns and further
    constant columns, so that with ``ridge > 0`` the penalised problem has a
    unique solution (an all-zero column gets coefficient 0) instead of a
    singular Hessian.

    Attributes
    ----------
    values : ndarray (n, p)
        Scaled design.
    scale : ndarray (p,)
        Divide a coefficient on the scaled design by this to get the original one.
    penalized : ndarray of bool (p,)
        Columns a ridge penalty applies to.
    """

    values: np.ndarray
    scale: np.ndarray
    penalized: np.ndarray

    @classmethod
    def from_design(cls, X: np.ndarray) -> "ScaledDesign":
        scale = np.sqrt(np.mean(X * X, axis=0))
        scale[scale == 0] = 1.0
        return cls(np.ascontiguousarray(X / scale), scale, penalized_columns(X))


def penalized_columns(X: np.ndarray) -> np.ndarray:
    """Columns a ridge penalty applies to: all but the intercept (the first constant non-zero column)."""
    penalized = np.ones(X.shape[1], dtype=bool)
    if len(X):
        constant = np.flatnonzero((X.max(axis=0) == X.min(axis=0)) & (X[0] != 0))
        if constant.size:
            penalized[constant[0]] = False
    return penalized


@dataclass
class EngineOutput:
    """Out-of-fold predictions of a list of candidates and what happened.

    Attributes
    ----------
    predictions : ndarray (n, J) or (n, J, C)
        NaN where a candidate failed.
    failed : ndarray of bool (J,)
    entries : list of LedgerEntry
    """

    predictions: np.ndarray
    failed: np.ndarray
    entries: list[LedgerEntry] = field(default_factory=list)


def fold_rows(folds: np.ndarray) -> list[np.ndarray]:
    """Row positions of each fold, in fold order."""
    return [np.flatnonzero(folds == k) for k in range(int(folds.max()) + 1)]


def infeasible_entry(label: str, n_params: int, n_train: int, ridge: float) -> LedgerEntry | None:
    """Ledger row for a candidate with at least as many parameters as training rows."""
    if ridge > 0 or n_params < n_train:
        return None
    return LedgerEntry(
        label,
        None,
        "cv",
        "infeasible",
        f"{n_params} parameters but only {n_train} training rows in the smallest fold",
        "given weight 0; use fewer columns, more folds, or ridge > 0",
        True,
    )


def check_ridge(ridge) -> float:
    """A ridge penalty: any non-negative finite real number (bool rejected)."""
    import numbers

    from ..exceptions import OptionError

    if isinstance(ridge, (bool, np.bool_)) or not isinstance(ridge, numbers.Real) or not (
        np.isfinite(ridge) and ridge >= 0
    ):
        raise OptionError(f"ridge={ridge!r}; use a non-negative number (0 for no penalty)")
    return float(ridge)
