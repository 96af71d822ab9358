"""Gaussian candidates fitted with observation weights and an offset: weighted least squares.

Used when :func:`pearlstats.fit` is given ``weights=`` or ``offset=`` with
``family="gaussian"`` (binomial and Poisson candidates take their weights and offset inside
the Newton engine of :mod:`pearlstats.engines.glm`). Each candidate is fitted in each fold
(and on all rows for the refit) by weighted least squares of ``y - o`` on its columns, which
is what statsmodels' ``WLS(y - o, X, weights=w)`` and ``GLM(..., freq_weights=w)`` or
``var_weights=w`` solve (the two weight types differ only in their inference: degrees of
freedom and scale): from one weighted training Gram per fold shared by all candidates
(Cholesky on its unit-diagonal scaling), or by ``lstsq`` (minimum-norm coefficients for
collinear columns, as statsmodels' pinv) when that Gram is ill-conditioned.

With ``ridge > 0`` each fit minimises the weighted mean loss plus the engines' ridge, with
weighted column SDs (:mod:`pearlstats.engines.weighted_ridge`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import OptionError
from ..ledger import LedgerEntry
from ._common import EngineOutput, fold_rows, infeasible_entry
from .weighted_ridge import all_rows_scale, gram_solve, penalised_weighted_fit

if TYPE_CHECKING:
    from ..design.candidates import Candidate

__all__ = ["weighted_cv_predict", "weighted_fit"]


def _wls(X: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    root = np.sqrt(w)
    return np.linalg.lstsq(X * root[:, None], z * root, rcond=None)[0]


def _training_moments(X: np.ndarray, z: np.ndarray, w: np.ndarray,
                      rows: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per fold, the training rows' weighted Gram ``X'WX`` and ``X'Wz`` over every column.

    Formed once per fold from the training rows themselves (no downdating, which loses
    digits), then shared by every candidate: its system is a sub-block.
    """
    moments = []
    for held in rows:
        train = np.ones(len(z), dtype=bool)
        train[held] = False
        weighted = X[train] * w[train, None]
        moments.append((weighted.T @ X[train], weighted.T @ z[train]))
    return moments


def _fit_one(X_S, y, w, offset, train, ridge, all_scale, gram=None) -> np.ndarray:
    """Coefficients of one weighted least-squares fit on the *train* rows."""
    if ridge > 0:
        return penalised_weighted_fit(X_S, y, w, offset, train, ridge, all_scale)
    beta = None if gram is None else gram_solve(*gram)
    if beta is not None:
        return beta
    return _wls(X_S[train], y[train] - offset[train], w[train])


def _check_gaussian(kind: str) -> None:
    if kind != "gaussian":
        raise OptionError(f"the weighted least-squares engine fits gaussian candidates, not "
                          f"{kind!r}: binomial and poisson take weights= and offset= in "
                          "pearlstats.engines.glm")


def weighted_cv_predict(
    kind: str,
    X: np.ndarray,
    y: np.ndarray,
    row_weights: np.ndarray,
    offset: np.ndarray,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
    ridge: float = 0.0,
    separation: str = "drop",
    ridges: Mapping[str, float] | None = None,
) -> EngineOutput:
    """Out-of-fold means of every gaussian candidate, each fold fitted with its rows' weights.

    Parameters
    ----------
    kind : {"gaussian"}
    X : ndarray (n, p)
    y : ndarray (n,)
    row_weights : ndarray (n,)
        Positive observation weights.
    offset : ndarray (n,)
        Added to every linear predictor (zeros for none).
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float
        The penalty of :mod:`pearlstats.engines.weighted_ridge` (0: least squares).
    separation : str
        Ignored (least squares has no separation); kept so every family's engine is called
        alike.
    ridges : mapping, optional
        Label -> ridge a candidate starts from (at least *ridge*).

    Returns
    -------
    EngineOutput
        ``predictions`` (n, J), NaN where a candidate failed; ``ridges`` the ridge each
        candidate was fitted with.
    """
    _check_gaussian(kind)
    rows = fold_rows(folds)
    n = len(y)
    predictions = np.full((n, len(candidates)), np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    used = np.full(len(candidates), float(ridge))
    entries: list[LedgerEntry] = []
    # distinct rows, whatever their weights: copies add no rank, so a candidate with as many
    # coefficients as distinct training rows is infeasible with frequency weights too
    # (observation_weights.effective_nobs counts observations for the rest)
    n_train_min = n - max(r.size for r in rows)
    moments = None
    if ridge == 0 and not ridges:
        moments = _training_moments(X, y - offset, row_weights, rows)
    for j, candidate in enumerate(candidates):
        value = used[j] = max(float(ridge), float((ridges or {}).get(candidate.label, 0.0)))
        columns = candidate.columns
        entry = infeasible_entry(candidate.label, columns.size, n_train_min, value)
        if entry is not None:
            failed[j] = True
            entries.append(entry)
            continue
        X_S = X[:, columns]
        all_scale = all_rows_scale(X_S, row_weights) if value > 0 else None
        for k, held in enumerate(rows):
            train = np.ones(n, dtype=bool)
            train[held] = False
            gram = None
            if moments is not None and value == 0:
                gram, cross = moments[k]
                gram = (gram[np.ix_(columns, columns)], cross[columns])
            beta = _fit_one(X_S, y, row_weights, offset, train, value, all_scale, gram)
            predictions[held, j] = X_S[held] @ beta + offset[held]
    return EngineOutput(predictions, failed, entries, used)


def weighted_fit(kind: str, X: np.ndarray, y: np.ndarray, row_weights: np.ndarray,
                 offset: np.ndarray, columns: np.ndarray, label: str = "",
                 ridge: float = 0.0,
                 separation: str = "drop") -> tuple[np.ndarray, list[LedgerEntry]]:
    """Coefficients of one gaussian candidate on all rows, and ledger notes (none).

    *label* and *separation* are taken so every family's refit is called alike.
    """
    _check_gaussian(kind)
    X_S = X[:, np.asarray(columns)]
    everything = np.ones(len(y), dtype=bool)
    scale = all_rows_scale(X_S, row_weights) if ridge > 0 else None
    return _fit_one(X_S, y, row_weights, offset, everything, ridge, scale), []
