"""Pieces shared by the cross-validation engines: the ridge argument, column standardisation,
fold penalty weights, feasibility and memory guards.

The ridge penalty
-----------------
Every engine minimises, per fold, the mean training loss plus

    ridge / 2 * sum_j (sd_j * b_j) ** 2

over the non-intercept coefficients ``b_j`` of the original columns, where
``sd_j`` is column j's standard deviation (ddof 0) over the fold's *training
rows* (all rows for the refit on all rows). This is a ridge on the
coefficients of columns centred and scaled to unit SD; the intercept (the
first column constant and non-zero over all rows) is never penalised. With an
intercept the fit is therefore invariant to shifting any other column by a
constant and to rescaling it (the shift is absorbed by the intercept). Without
an intercept among a candidate's columns the model itself is not shift
invariant; the penalty still uses the SD, so the fit remains invariant to
rescaling columns. A column constant over a fold's training rows has no SD;
it is penalised with its all-rows scale (SD, else its absolute value, else 1
for an all-zero column). With an intercept its coefficient is 0 for any
positive weight, so the choice does not matter there.

Separation
----------
A logistic (binomial or multinomial) candidate whose classes are (quasi-)
separated has no maximum-likelihood estimate. With ``separation="ridge"`` (the
default of :func:`pearlstats.fit`) such a candidate is refitted with the
smallest ridge of :data:`SEPARATION_RIDGES` (1e-4, 1e-3, 1e-2, 0.1, 1), above
the ridge asked for, for which the fit on all rows and every fold fit reach a
finite optimum: the same ridge in every fold and in the all-rows refit, so the
out-of-fold predictions and the candidate's predictions come from one model.
Any ridge > 0 makes the penalised optimum exist; the ladder's larger values
serve fits that do not converge in the Newton solver's iterations.

Computations run on columns centred by their all-rows mean (when the columns
include the intercept) and divided by their all-rows SD: a reparametrisation
for conditioning only, which does not change the fitted functions. Scales are
computed after dividing each column by its largest absolute value, so that
neither squares of tiny values (a block times 1e-200) underflow nor squares
of huge ones overflow.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.threads import one_blas_thread
from ..exceptions import OptionError
from ..ledger import LedgerEntry

__all__ = [
    "separation_reason",
    "ScaledDesign",
    "EngineOutput",
    "fold_rows",
    "infeasible_entry",
    "too_wide_entry",
    "unfit_entry",
    "penalized_columns",
    "check_ridge",
    "ridge_penalty_weights",
    "fold_penalty_weights",
    "shrinkage_factors",
    "one_blas_thread",
    "RANK_TOLERANCE",
    "MAX_RIDGE",
    "MAX_SYSTEM_BYTES",
    "SEPARATION_RIDGES",
]

# Relative pivot below which a Cholesky factor is treated as rank deficient;
# such candidates are solved by minimum-norm least squares, as statsmodels' pinv.
RANK_TOLERANCE = 1e-10

# Largest accepted ridge. The engines never overflow for any finite ridge (they
# work with ridge / (1 + ridge) factors), but the penalty enters other code as
# ridge * n_train * weight (weights <= 2): with ridge <= 1e300 that product is
# finite for up to 8e7 training rows. Beyond it nothing changes anyway: a
# penalised coefficient is shrunk by a factor below 1e-300 and predictions
# equal the intercept-only fit to float precision.
MAX_RIDGE = 1e300

# Ridges tried, in order, for a candidate whose classes separate (see "Separation" above), or
# a Poisson one whose counts are 0 on one side of a direction: no finite optimum either.
SEPARATION_RIDGES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def separation_reason(family: str) -> str:
    """Why the separation ladder gave a *family* candidate a ridge, for messages."""
    if family == "poisson":
        return "the counts are 0 on one side of a direction of the columns"
    return "the classes separate"

# Largest dense p x p (or d x d Newton) system set, in bytes, an engine forms at once.
MAX_SYSTEM_BYTES = 2**29

# Training variance (relative to the all-rows variance) below which the
# downdated fold variance is recomputed from the training rows: the downdate
# loses digits when the training rows hold almost none of a column's variation.
_DOWNDATE_FLOOR = 1e-6


def check_ridge(value: Any) -> float:
    """Validate the ``ridge`` argument and return it as a float.

    Parameters
    ----------
    value : real number
        Python or NumPy int or float; bool is refused.

    Returns
    -------
    float

    Raises
    ------
    OptionError
        For a non-number, bool, NaN, infinity, a negative value, or a value
        above :data:`MAX_RIDGE` (1e300).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise OptionError(f"ridge={value!r}; use a non-negative number (0 for no penalty)")
    ridge = float(value)
    if not np.isfinite(ridge) or ridge < 0:
        raise OptionError(f"ridge={value!r}; use a non-negative number (0 for no penalty)")
    if ridge > MAX_RIDGE:
        raise OptionError(
            f"ridge={value!r} is above the largest accepted value {MAX_RIDGE:g}; beyond it every "
            "penalised coefficient is already 0 to float precision (the intercept-only fit)"
        )
    return ridge


def penalized_columns(X: np.ndarray) -> np.ndarray:
    """Columns a ridge penalty applies to: all but the intercept (first constant nonzero column)."""
    penalized = np.ones(X.shape[1], dtype=bool)
    intercept = _intercept(X)
    if intercept is not None:
        penalized[intercept] = False
    return penalized


def _intercept(X: np.ndarray) -> int | None:
    if not len(X):
        return None
    return _first_intercept(X.max(axis=0) == X.min(axis=0), X[0])


def _first_intercept(constant: np.ndarray, first_row: np.ndarray) -> int | None:
    """The first column constant over the rows (*constant*) and non-zero in the first row."""
    found = np.flatnonzero(constant & (first_row != 0))
    return int(found[0]) if found.size else None


# Columns of a column-major design whose moments are computed together (_column_moments).
_COLUMN_BLOCK = 8

# Bytes of columns :meth:`ScaledDesign.from_columns` reads at a time (at least one column).
_COLUMN_READ_BYTES = 2**22


def _columns_per_read(n: int) -> int:
    """Columns of n rows read together: at most :data:`_COLUMN_BLOCK`, about 4 MiB, at least 1."""
    return max(1, min(_COLUMN_BLOCK, _COLUMN_READ_BYTES // (8 * max(n, 1))))


def _column_moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, SD (ddof 0; exactly 0 for constant columns) and largest absolute value per column.

    Each column is divided by its largest absolute value first, so nothing is squared
    outside [0, 1]: no underflow for tiny columns, no overflow for huge ones. A
    column-major *X* (a candidate's columns ``X[:, S]``) is read :data:`_COLUMN_BLOCK`
    columns at a time, so the temporaries are (n, 8), not (n, p): every reduction runs
    down one contiguous column either way, so the numbers are the same.
    """
    if X.ndim == 2 and X.shape[1] > _COLUMN_BLOCK and X.flags.f_contiguous:
        parts = [_column_moments(X[:, j:j + _COLUMN_BLOCK])
                 for j in range(0, X.shape[1], _COLUMN_BLOCK)]
        return tuple(np.concatenate(values) for values in zip(*parts))
    big = np.abs(X).max(axis=0) if len(X) else np.zeros(X.shape[1])
    unit = np.where(big > 0, big, 1.0)
    Z = X / unit
    mean = Z.mean(axis=0)
    sd = np.sqrt(np.mean((Z - mean) ** 2, axis=0))
    sd[X.max(axis=0) == X.min(axis=0)] = 0.0
    return mean * unit, sd * unit, big


@dataclass(frozen=True)
class ScaledDesign:
    """How a design's columns are standardised: ``Z = (X - center) / scale``.

    Attributes
    ----------
    center : ndarray (p,)
        All-rows means of the penalised columns when an intercept is among the
        columns (0 otherwise, and 0 for the intercept itself).
    scale : ndarray (p,)
        All-rows SD; for a constant column its absolute value; 1 for an all-zero
        column. The ridge on the original coefficients is
        ``ridge / 2 * sum(penalized * scale**2 * b**2)`` (see :attr:`penalty_weights`).
    penalized : ndarray of bool (p,)
        Columns a ridge penalty applies to (all but the intercept).
    intercept : int or None
        Position of the intercept column.
    intercept_value : float
        Its (constant) value.
    """

    center: np.ndarray
    scale: np.ndarray
    penalized: np.ndarray
    intercept: int | None = None
    intercept_value: float = 1.0

    @classmethod
    def from_design(cls, X: np.ndarray, centre: bool = True) -> "ScaledDesign":
        """Standardisation of *X* from all its rows; ``centre=False`` keeps columns uncentred."""
        first_row = X[0] if len(X) else np.zeros(X.shape[1])
        return cls._from_moments(*_column_moments(X), _intercept(X), first_row, centre)

    @classmethod
    def from_columns(cls, X: Any, columns: np.ndarray, centre: bool = True,
                     known: dict | None = None) -> "ScaledDesign":
        """``from_design(X[:, columns])`` without that (n, |columns|) copy of the columns.

        The columns are read :func:`_columns_per_read` at a time (``X[:, group]``, laid out
        as ``X[:, columns]`` is: column-major), and each is reduced down its own contiguous
        rows as :func:`_column_moments` reduces it there, so the numbers are the same. At
        n = 10^6 the copy of a 51-column candidate was 389 MiB; this reads 8 MiB at a time.

        *known* maps a column of *X* to its moments ``(mean, sd, largest |x|, constant)``:
        those are not read again, and the ones read are added (candidates share columns:
        each is read once per design, not once per candidate). The numbers are the same,
        since each column's moments are its own.
        """
        columns = np.asarray(columns)
        known = {} if known is None else known
        missing = np.array([c for c in columns.tolist() if c not in known], dtype=int)
        step = _columns_per_read(X.shape[0])
        for start in range(0, missing.size, step):
            group = X[:, missing[start:start + step]]
            moments = zip(*_column_moments(group), group.max(axis=0) == group.min(axis=0))
            known.update(zip(missing[start:start + step].tolist(), moments))
        values = [known[c] for c in columns.tolist()]
        mean, sd, big = (np.array([v[i] for v in values], dtype=float) for i in range(3))
        constant = np.array([v[3] for v in values], dtype=bool)
        first_row = X[0][columns]
        return cls._from_moments(mean, sd, big, _first_intercept(constant, first_row), first_row,
                                 centre)

    @classmethod
    def _from_moments(cls, mean, sd, big, intercept, first_row, centre) -> "ScaledDesign":
        scale = np.where(sd > 0, sd, np.where(big > 0, big, 1.0))
        penalized = np.ones(mean.size, dtype=bool)
        center = np.zeros(mean.size)
        value = 1.0
        if intercept is not None:
            penalized[intercept] = False
            value = float(first_row[intercept])
            if centre:
                center = np.where(penalized, mean, 0.0)
        return cls(center, scale, penalized, intercept, value)

    @property
    def penalty_weights(self) -> np.ndarray:
        """Per-coefficient ridge weights on the original (unscaled) coefficients."""
        return self.penalized * self.scale**2

    def subset(self, columns: np.ndarray) -> "ScaledDesign":
        """Standardisation of some of the columns (centred only if the intercept is among them)."""
        columns = np.asarray(columns)
        where = np.flatnonzero(columns == self.intercept) if self.intercept is not None else []
        intercept = int(where[0]) if len(where) else None
        center = self.center[columns] if intercept is not None else np.zeros(columns.size)
        return ScaledDesign(
            center, self.scale[columns], self.penalized[columns], intercept, self.intercept_value
        )

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The standardised columns ``(X - center) / scale`` (a new array)."""
        return (X - self.center) / self.scale

    def original(self, gamma: np.ndarray) -> np.ndarray:
        """Coefficients on the original columns from those on the standardised ones.

        *gamma* is (p,) or (p, m) (one column per class); the centring is folded
        into the intercept.
        """
        b = gamma / (self.scale if gamma.ndim == 1 else self.scale[:, None])
        if self.intercept is not None and np.any(self.center):
            shift = self.center @ b
            b = b.copy()
            b[self.intercept] -= shift / self.intercept_value
        return b


def ridge_penalty_weights(X: np.ndarray) -> np.ndarray:
    """Ridge weights on statsmodels' unscaled coefficients of the columns *X* (all rows).

    ``ridge * ridge_penalty_weights(X)`` is the ``alpha`` of statsmodels'
    ``fit_regularized(L1_wt=0)`` that reproduces the engines' penalty: the
    column's variance, 0 for the intercept. (The squares may underflow or
    overflow for columns scaled by 1e-160 or 1e160; the engines do not square.)
    """
    return ScaledDesign.from_design(X, centre=False).penalty_weights


def fold_penalty_weights(design: ScaledDesign, X: np.ndarray, rows: list[np.ndarray]) -> np.ndarray:
    """Ridge weights on the standardised coefficients, per fold: (K, p).

    For fold k and penalised column j the weight is the training-row variance
    of the standardised column, ``(sd_kj / scale_j) ** 2``: the penalty
    ``ridge / 2 * w_kj * gamma_j**2`` equals ``ridge / 2 * (sd_kj * b_j)**2``
    on the original coefficient. Columns constant over a fold's training rows
    get weight 1 (their all-rows scale); the intercept gets 0.

    Fold variances are downdated from the all-rows moments with the held-out
    rows only, and recomputed from the training rows where that loses digits.
    """
    n, p = X.shape
    mean, sd, _ = _column_moments(X)
    Z_mean = (mean - design.center) / design.scale
    Z_var = (sd / design.scale) ** 2  # 1, or 0 for columns constant over all rows
    constant = Z_var == 0
    weights = np.ones((len(rows), p))
    for k, r in enumerate(rows):
        held = design.transform(X[r])
        n_held, n_train = r.size, n - r.size
        held_mean = held.mean(axis=0)
        train_mean = (n * Z_mean - n_held * held_mean) / n_train
        ss = n * Z_var - np.sum((held - held_mean) ** 2, axis=0)
        ss -= n_train * n_held / n * (train_mean - held_mean) ** 2
        variance = np.maximum(ss, 0.0) / n_train
        unsure = np.flatnonzero(design.penalized & ~constant & (variance < _DOWNDATE_FLOOR * Z_var))
        if unsure.size:
            train = np.ones(n, dtype=bool)
            train[r] = False
            sd_train = _column_moments(X[np.ix_(train, unsure)])[1]
            variance[unsure] = np.where(sd_train > 0, (sd_train / design.scale[unsure]) ** 2, 1.0)
        weights[k] = np.where(design.penalized, np.where(constant, 1.0, variance), 0.0)
    return weights


def shrinkage_factors(ridge: float, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r = 1 / sqrt(1 + ridge * w)`` and ``ridge * w * r**2``, without forming ``ridge * w``.

    Engines solve for ``u = gamma / r``: the penalty ``ridge / 2 * w * gamma**2``
    becomes ``(ridge * w * r**2) / 2 * u**2`` with a weight in [0, 1), and the
    systems stay well conditioned (and finite) for any finite ridge, while more
    ridge always means more shrinkage.
    """
    t = np.sqrt(ridge) * np.sqrt(weights)
    r = 1.0 / np.hypot(1.0, t)
    return r, (t * r) ** 2


@dataclass
class EngineOutput:
    """Out-of-fold predictions of a list of candidates and what happened.

    Attributes
    ----------
    predictions : ndarray (n, J) or (n, J, C)
        NaN where a candidate failed.
    failed : ndarray of bool (J,)
    entries : list of LedgerEntry
    ridges : ndarray (J,) or None
        The ridge each candidate was fitted with in every fold: the engine's
        ``ridge`` unless a separated candidate was moved up
        :data:`SEPARATION_RIDGES`; None for engines without a ridge ladder.
    """

    predictions: np.ndarray
    failed: np.ndarray
    entries: list[LedgerEntry] = field(default_factory=list)
    ridges: np.ndarray | None = None


def fold_rows(folds: np.ndarray) -> list[np.ndarray]:
    """Row positions of each fold, in fold order."""
    return [np.flatnonzero(folds == k) for k in range(int(folds.max()) + 1)]


def infeasible_entry(label: str, n_params: int, n_train: int, ridge: float) -> LedgerEntry | None:
    """Ledger row for a candidate with at least as many parameters as training rows."""
    if ridge > 0 or n_params < n_train:
        return None
    return _infeasible(
        label,
        f"{n_params} parameters but only {n_train} training rows in the smallest fold",
        "given weight 0; use fewer columns, more folds, or ridge > 0",
    )


def _infeasible(label: str, reason: str, action: str) -> LedgerEntry:
    """An "infeasible" cross-validation ledger row that excludes the candidate."""
    return LedgerEntry(label, None, "cv", "infeasible", reason, action, True)


def unfit_entry(label: str, n_params: int, n_train: int, ridge: float,
                n_systems: int) -> LedgerEntry | None:
    """The ledger row of :func:`infeasible_entry`, else of :func:`too_wide_entry`, else None."""
    return (infeasible_entry(label, n_params, n_train, ridge)
            or too_wide_entry(label, n_params, n_systems))


def too_wide_entry(label: str, size: int, n_systems: int) -> LedgerEntry | None:
    """Ledger row for a candidate whose dense systems would not fit in :data:`MAX_SYSTEM_BYTES`."""
    needed = 8 * n_systems * size * size
    if needed <= MAX_SYSTEM_BYTES:
        return None
    return _infeasible(
        label,
        f"{size} coefficients: its {n_systems} dense {size} x {size} systems need "
        f"{needed / 2**30:.1f} GiB, more than the {MAX_SYSTEM_BYTES / 2**30:.1f} GiB limit",
        "given weight 0; reduce the block (e.g. fewer TF-IDF features or a PCA of it)",
    )
