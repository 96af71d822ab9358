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

These fits carry no ridge (the fused Gram and batched Newton engines do not take row weights
yet; :func:`pearlstats.fit` refuses ``ridge > 0`` with weights by name). A logistic fit whose
training rows reach a linear predictor beyond 30 in absolute value is reported as separated
and its candidate gets weight 0, as is a fit that does not converge in 100 iterations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit, xlogy

from ..ledger import LedgerEntry
from ._common import EngineOutput, fold_rows, infeasible_entry

if TYPE_CHECKING:
    from ..design.candidates import Candidate

__all__ = ["weighted_cv_predict", "weighted_fit", "inverse_link", "MAX_ITER", "SEPARATION_ETA"]

MAX_ITER = 100
# Smallest squared Cholesky pivot of a unit-diagonal Gram solved by the normal equations
# (its condition number is then below about 1e8, so they keep ~8 of least squares' digits
# beyond float64's 1e-16); worse-conditioned systems go to lstsq.
_PIVOT_FLOOR = 1e-8
SEPARATION_ETA = 30.0
_TOL = 1e-13
_MAX_ETA = 700.0  # exp overflows past ~709


def inverse_link(kind: str, eta: np.ndarray) -> np.ndarray:
    """The mean of a linear predictor: identity, logistic or exp (clipped before overflow)."""
    if kind == "gaussian":
        return eta
    if kind == "binomial":
        return expit(eta)
    return np.exp(np.minimum(eta, _MAX_ETA))


def _wls(X: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    root = np.sqrt(w)
    return np.linalg.lstsq(X * root[:, None], z * root, rcond=None)[0]


def _gram_solve(gram: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """``gram^-1 rhs`` by Cholesky on the unit-diagonal scaling, or None when ill-conditioned.

    The scaled Gram's Cholesky pivots bound its conditioning; below ``_PIVOT_FLOOR`` the
    normal equations would lose the digits least squares keeps, and the caller uses lstsq.
    """
    with np.errstate(all="ignore"):  # overflowed moments (columns near 1e154) go to lstsq
        scale = np.sqrt(np.diag(gram))
        if not np.all(np.isfinite(scale) & (scale > 0)) or not np.isfinite(rhs).all():
            return None
        try:
            factor = np.linalg.cholesky(gram / np.outer(scale, scale))
        except np.linalg.LinAlgError:
            return None
        if not np.isfinite(factor).all() or np.diag(factor).min() ** 2 < _PIVOT_FLOOR:
            return None
        solved = np.linalg.solve(factor.T, np.linalg.solve(factor, rhs / scale)) / scale
    return solved if np.isfinite(solved).all() else None


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
        reason = f"weighted IRLS did not converge in {MAX_ITER} iterations"
    excluded = stage == "cv"
    action = ("given weight 0 (ridge refits are not yet supported with weights/offsets)"
              if excluded else "reported")
    return LedgerEntry(label, fold, stage, problem, reason, action, excluded)


def weighted_cv_predict(
    kind: str,
    X: np.ndarray,
    y: np.ndarray,
    row_weights: np.ndarray,
    offset: np.ndarray,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
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

    Returns
    -------
    EngineOutput
        ``predictions`` (n, J), NaN where a candidate failed.
    """
    rows = fold_rows(folds)
    n = len(y)
    predictions = np.full((n, len(candidates)), np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    n_train_min = n - max(r.size for r in rows)
    moments = _training_moments(X, y - offset, row_weights, rows) if kind == "gaussian" else None
    for j, candidate in enumerate(candidates):
        entry = infeasible_entry(candidate.label, candidate.columns.size, n_train_min, 0.0)
        if entry is not None:
            failed[j] = True
            entries.append(entry)
            continue
        X_S = X[:, candidate.columns]
        for k, held in enumerate(rows):
            train = np.ones(n, dtype=bool)
            train[held] = False
            beta = None
            if moments is not None:  # gaussian: the candidate's block of the fold's Gram
                gram, cross = moments[k]
                columns = candidate.columns
                beta = _gram_solve(gram[np.ix_(columns, columns)], cross[columns])
            problem = None
            if beta is None:
                beta, problem = _irls(kind, X_S[train], y[train], row_weights[train],
                                      offset[train])
            if problem is not None:
                failed[j] = True
                entries.append(_entry(candidate.label, k, problem, "cv"))
                break
            predictions[held, j] = inverse_link(kind, X_S[held] @ beta + offset[held])
        if failed[j]:
            predictions[:, j] = np.nan
    return EngineOutput(predictions, failed, entries, None)


def weighted_fit(kind: str, X: np.ndarray, y: np.ndarray, row_weights: np.ndarray,
                 offset: np.ndarray, columns: np.ndarray,
                 label: str = "") -> tuple[np.ndarray, list[LedgerEntry]]:
    """Coefficients of one candidate on all rows, and a ledger note if the fit has no MLE."""
    beta, problem = _irls(kind, X[:, np.asarray(columns)], y, row_weights, offset)
    return beta, ([] if problem is None else [_entry(label, None, problem, "refit")])
