"""Candidates fitted with observation weights and an offset: weighted least squares and IRLS.

Used when :func:`pearlstats.fit` is given ``weights=``, ``offset=`` or ``exposure=``. Each
candidate is fitted in each fold (and on all rows for the refit) by maximising the
weighted log-likelihood ``sum_i w_i l_i(y_i, x_i'b + o_i)``, which is what statsmodels'
``GLM(..., freq_weights=w)`` and ``GLM(..., var_weights=w)`` both maximise (the two differ
only in their inference: degrees of freedom and scale), with the offset ``o`` added to the
linear predictor:

- gaussian: weighted least squares of ``y - o`` on the candidate's columns, from one
  weighted training Gram per fold shared by all candidates (Cholesky on its unit-diagonal
  scaling), or by ``lstsq`` (minimum-norm coefficients for collinear columns, as
  statsmodels' pinv) when that Gram is ill-conditioned;
- binomial (logit) and poisson (log): iteratively reweighted least squares from
  statsmodels' starting means, until the weighted deviance changes by less than
  ``1e-13 (|deviance| + 0.1)``.

With ``ridge > 0`` each fit minimises the weighted mean loss plus the engines' ridge, with
weighted column SDs (:mod:`pearlstats.engines.weighted_ridge`); with ``separation="ridge"`` a
logistic candidate without a finite optimum (on all rows or in a fold) is refitted everywhere
with the smallest ridge of the separation ladder that has one. Without a ridge, a logistic
fit whose training rows reach a linear predictor beyond 30 in absolute value is reported as
separated (weight 0 with ``separation="drop"``), as is a fit that does not converge in 100
iterations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import xlogy

from ..exceptions import SeparationError
from ..ledger import LedgerEntry
from ._common import SEPARATION_RIDGES, EngineOutput, fold_rows, infeasible_entry
from .newton_cv import _ladder_entry, _wide_reason, ridge_ladder
from .weighted_ridge import (
    MAX_ITER,
    all_rows_scale,
    gram_solve,
    inverse_link,
    penalised_weighted_fit,
)

if TYPE_CHECKING:
    from ..design.candidates import Candidate

__all__ = ["weighted_cv_predict", "weighted_fit", "inverse_link", "MAX_ITER", "SEPARATION_ETA"]

SEPARATION_ETA = 30.0
_TOL = 1e-13


def _wls(X: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    root = np.sqrt(w)
    return np.linalg.lstsq(X * root[:, None], z * root, rcond=None)[0]


def _training_moments(X: np.ndarray, z: np.ndarray, w: np.ndarray,
                      rows: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per fold, the training rows' weighted Gram ``X'WX`` and ``X'Wz`` over every column.

    Formed once per fold from the training rows themselves (no downdating, which loses
    digits), then shared by every gaussian candidate: its system is a sub-block.
    """
    moments = []
    for held in rows:
        train = np.ones(len(z), dtype=bool)
        train[held] = False
        weighted = X[train] * w[train, None]
        moments.append((weighted.T @ X[train], weighted.T @ z[train]))
    return moments


def _deviance(kind: str, y: np.ndarray, mu: np.ndarray, w: np.ndarray) -> float:
    if kind == "binomial":
        rows = xlogy(y, mu) + xlogy(1 - y, 1 - mu)
        return float(-2 * w @ rows)
    return float(2 * w @ (xlogy(y, y) - xlogy(y, mu) - (y - mu)))


def _irls(kind: str, X, y, w, offset) -> tuple[np.ndarray, str | None]:
    """Weighted MLE of one fit and, if it has none, why (``None`` when it converged)."""
    if kind == "gaussian":
        return _wls(X, y - offset, w), None
    # statsmodels' starting means (Binomial and Poisson ``starting_mu``)
    mu = (y + 0.5) / 2 if kind == "binomial" else (y + y.mean()) / 2
    eta = np.log(mu / (1 - mu)) if kind == "binomial" else np.log(mu)
    previous = np.inf
    beta = np.zeros(X.shape[1])
    for _ in range(MAX_ITER):
        var = mu * (1 - mu) if kind == "binomial" else mu
        var = np.maximum(var, 1e-300)
        beta = _wls(X, eta - offset + (y - mu) / var, w * var)
        eta = X @ beta + offset
        mu = inverse_link(kind, eta)
        if kind == "binomial" and np.abs(eta).max() > SEPARATION_ETA:
            return beta, "separation"
        deviance = _deviance(kind, y, mu, w)
        if abs(deviance - previous) <= _TOL * (abs(deviance) + 0.1):
            return beta, None
        previous = deviance
    return beta, "not converged"


def _entry(label: str, fold: int | None, problem: str, stage: str) -> LedgerEntry:
    if problem == "separation":
        reason = (f"a training row's linear predictor passed {SEPARATION_ETA:g} in absolute "
                  "value: the classes are (quasi-)separated and the weighted maximum-likelihood "
                  "estimate does not exist")
    else:
        reason = f"the weighted fit did not converge in {MAX_ITER} iterations"
    excluded = stage == "cv"
    action = ("given weight 0 (separation='ridge' refits a separated logistic candidate with "
              "a ridge)" if excluded else "reported")
    return LedgerEntry(label, fold, stage, problem, reason, action, excluded)


def _trouble(problem: tuple, ridge: float) -> str:
    """Where a candidate's weighted fit at *ridge* has no finite optimum, in words."""
    fold, what = problem
    where = "on all rows" if fold is None else f"in fold(s) [{fold}]"
    what = ("the classes are (quasi-)separated" if what == "separation"
            else "the fit did not converge")
    if ridge > 0:
        return f"with ridge={ridge:g} {what} {where}: the penalised fit did not reach its optimum"
    return f"without a ridge {what} {where}: the maximum-likelihood estimate does not exist"


def _fit_one(kind, X_S, y, w, offset, train, ridge, all_scale, gram=None):
    """Coefficients of one fit on the *train* rows and its problem (None when it converged)."""
    if ridge > 0:
        beta, converged = penalised_weighted_fit(kind, X_S, y, w, offset, train, ridge,
                                                 all_scale)
        return beta, None if converged else "not converged"
    beta = None if gram is None else gram_solve(*gram)
    if beta is not None:
        return beta, None
    return _irls(kind, X_S[train], y[train], w[train], offset[train])


def _raise_separation(label: str, problem: tuple | None, ridge: float) -> None:
    if problem is not None and problem[1] == "separation":
        raise SeparationError(
            f"candidate {label!r}: {_trouble(problem, ridge)}. Use separation='ridge' (refit it "
            f"with the smallest ridge of {list(SEPARATION_RIDGES)} that has a finite optimum) "
            "or separation='drop' (give it weight 0)")


def _candidate_folds(kind, X_S, y, w, offset, rows, ridge, grams, everything: bool):
    """One candidate's fold fits at *ridge* (and first its all-rows fit if *everything*).

    Returns the fold coefficients and the first problem as ``(fold or None, what)``.
    """
    n = len(y)
    all_scale = all_rows_scale(X_S, w) if ridge > 0 else None
    if everything:
        _, problem = _fit_one(kind, X_S, y, w, offset, np.ones(n, dtype=bool), ridge, all_scale)
        if problem is not None:
            return [], (None, problem)
    betas = []
    for k, held in enumerate(rows):
        train = np.ones(n, dtype=bool)
        train[held] = False
        beta, problem = _fit_one(kind, X_S, y, w, offset, train, ridge, all_scale,
                                 None if grams is None else grams[k])
        if problem is not None:
            return betas, (k, problem)
        betas.append(beta)
    return betas, None


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
    """Out-of-fold means of every candidate, each fold fitted with its training rows' weights.

    Parameters
    ----------
    kind : {"gaussian", "binomial", "poisson"}
    X : ndarray (n, p)
    y : ndarray (n,)
    row_weights : ndarray (n,)
        Positive observation weights.
    offset : ndarray (n,)
        Added to every linear predictor (zeros for none).
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float
        The penalty of :mod:`pearlstats.engines.weighted_ridge` (0: maximum likelihood).
    separation : {"drop", "ridge", "raise"}
        For logistic candidates whose fit (on all rows or in a fold) has no finite optimum,
        as in :func:`~pearlstats.engines.newton_cv.newton_cv_predict`: weight 0, the
        smallest ridge of the ladder for which all of them have one, or SeparationError.
    ridges : mapping, optional
        Label -> ridge a candidate starts from (at least *ridge*).

    Returns
    -------
    EngineOutput
        ``predictions`` (n, J), NaN where a candidate failed; ``ridges`` the ridge each
        candidate was fitted with.
    """
    rows = fold_rows(folds)
    n = len(y)
    predictions = np.full((n, len(candidates)), np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    used = np.full(len(candidates), float(ridge))
    entries: list[LedgerEntry] = []
    # distinct rows, whatever their weights: copies add no rank, so a candidate with as many
    # coefficients as distinct training rows is infeasible (or separable) with frequency
    # weights too (observation_weights.effective_nobs counts observations for the rest)
    n_train_min = n - max(r.size for r in rows)
    ladder_applies = separation == "ridge" and kind == "binomial"
    moments = None
    if kind == "gaussian" and ridge == 0 and not ridges:
        moments = _training_moments(X, y - offset, row_weights, rows)
    for j, candidate in enumerate(candidates):
        start = requested = max(float(ridge), float((ridges or {}).get(candidate.label, 0.0)))
        size = candidate.columns.size
        # with at least as many coefficients as training rows a logistic fit separates
        wide = ladder_applies and start <= 0 and size >= n_train_min
        if wide:
            start = SEPARATION_RIDGES[0]
        entry = infeasible_entry(candidate.label, size, n_train_min, start)
        if entry is not None:
            failed[j] = True
            entries.append(entry)
            continue
        X_S = X[:, candidate.columns]
        ladder = ridge_ladder(start) if ladder_applies else [start]
        for value in ladder:
            grams = None
            if moments is not None and value == 0:
                grams = [(gram[np.ix_(candidate.columns, candidate.columns)],
                          cross[candidate.columns]) for gram, cross in moments]
            betas, problem = _candidate_folds(kind, X_S, y, row_weights, offset, rows, value,
                                              grams, ladder_applies)
            if separation == "raise" and kind == "binomial":
                _raise_separation(candidate.label, problem, value)
            if value == start:
                first = problem
            if problem is None:
                break
        if wide or value != start:
            reason = (_wide_reason(size, n_train_min) if wide else _trouble(first, start))
            tried = [requested] + ladder if wide else ladder
            entries.append(_ladder_entry(candidate.label, "cv", reason, tried,
                                         value if problem is None else None))
            used[j] = value
        if problem is not None:
            failed[j] = True
            if not (wide or value != start):
                entries.append(_entry(candidate.label, problem[0], problem[1], "cv"))
            continue
        for held, beta in zip(rows, betas):
            predictions[held, j] = inverse_link(kind, X_S[held] @ beta + offset[held])
    return EngineOutput(predictions, failed, entries, used)


def weighted_fit(kind: str, X: np.ndarray, y: np.ndarray, row_weights: np.ndarray,
                 offset: np.ndarray, columns: np.ndarray, label: str = "",
                 ridge: float = 0.0,
                 separation: str = "drop") -> tuple[np.ndarray, list[LedgerEntry]]:
    """Coefficients of one candidate on all rows, and ledger notes (no MLE, a ladder ridge).

    With ``separation="ridge"`` a logistic fit without a finite optimum is redone with the
    next ridges of :func:`~pearlstats.engines.newton_cv.ridge_ladder`; ``"raise"`` raises.
    """
    X_S = X[:, np.asarray(columns)]
    everything = np.ones(len(y), dtype=bool)
    ladder = ridge_ladder(ridge) if separation == "ridge" and kind == "binomial" else [ridge]
    for value in ladder:
        scale = all_rows_scale(X_S, row_weights) if value > 0 else None
        beta, problem = _fit_one(kind, X_S, y, row_weights, offset, everything, value, scale)
        if separation == "raise" and kind == "binomial":
            _raise_separation(label, None if problem is None else (None, problem), value)
        if value == ridge:
            first = problem
        if problem is None:
            break
    entries = []
    if value != ridge:
        entries.append(_ladder_entry(label, "refit", _trouble((None, first), ridge), ladder,
                                     value if problem is None else None))
    if problem is not None:
        entries.append(_entry(label, None, problem, "refit"))
    return beta, entries
