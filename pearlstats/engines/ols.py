"""Least-squares candidates: out-of-fold predictions from fold Gram matrices.

The naive approach refits ``sm.OLS`` for every candidate in every fold. Here
the full Gram matrix ``X'X`` and ``X'y`` are formed once, each fold's training
Gram matrix is the full one minus the fold's own rows (a downdate), and each
candidate solves a small system on its index set for all K folds at once.
Predictions for all candidates of a fold are then a single matrix product.
For leave-one-out the hat-matrix diagonal gives the exact jackknife
predictions from one fit per candidate.

The results equal per-fold ``sm.OLS`` predictions to rounding; the tests check
this to 1e-8.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..ledger import LedgerEntry
from ._common import RANK_TOLERANCE, EngineOutput, ScaledDesign, fold_rows, infeasible_entry

__all__ = ["ols_cv_predict", "ols_loo_predict", "ols_fit"]


def _penalty(design: ScaledDesign, columns: np.ndarray, ridge: float, n_train) -> np.ndarray:
    """Ridge added to the normal equations: n_train * ridge on penalised columns."""
    diag = ridge * design.penalized[columns].astype(float)
    return np.asarray(n_train, dtype=float).reshape(-1, 1) * diag


def _solve_normal(A: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """Solve a batch of SPD systems; None when any is numerically singular."""
    try:
        factor = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    pivots = np.diagonal(factor, axis1=-2, axis2=-1) ** 2
    if np.any(pivots < RANK_TOLERANCE * np.diagonal(A, axis1=-2, axis2=-1).max(axis=-1, keepdims=True)):
        return None
    return np.linalg.solve(A, rhs[..., None])[..., 0]


def _rank_note(label: str, fold) -> LedgerEntry:
    return LedgerEntry(
        label, fold, "cv", "rank deficient",
        "collinear columns in the training rows",
        "solved by minimum-norm least squares (as statsmodels' pinv)", False,
    )


def _column_scale(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Root-mean-square of each column (1 for all-zero ones) and which columns vary."""
    scale = np.sqrt(np.einsum("ij,ij->j", X, X) / len(X))
    scale[scale == 0] = 1.0
    return scale, X.max(axis=0) > X.min(axis=0)


def ols_cv_predict(X: np.ndarray, y: np.ndarray, candidates, folds: np.ndarray, ridge: float = 0.0) -> EngineOutput:
    """K-fold out-of-fold predictions of least-squares candidates.

    Parameters
    ----------
    X : ndarray (n, p)
        Full design (covariates then blocks).
    y : ndarray (n,)
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float, default 0
        L2 penalty on scaled, non-constant coefficients: minimises
        ``||y - Xb||^2 / (2 n_train) + ridge / 2 * ||b||^2``.

    Returns
    -------
    EngineOutput
        ``predictions`` has shape (n, J).

    Notes
    -----
    The design is never copied in full: the Gram matrices are scaled instead
    of the columns (``D^-1 X'X D^-1`` for column scales D), and each fold's
    predictions are ``X_k (D^-1 B_k)``. Memory beyond X is one fold's rows and
    the n x J prediction matrix.
    """
    scale, varies = _column_scale(X)
    design = ScaledDesign(X, scale, varies)
    rows = fold_rows(folds)
    n, p = X.shape
    n_train = np.array([n - r.size for r in rows])
    gram = X.T @ X
    cross = X.T @ y
    fold_gram = np.empty((len(rows), p, p))
    fold_cross = np.empty((len(rows), p))
    for k, r in enumerate(rows):
        held = X[r]
        fold_gram[k] = (gram - held.T @ held) / np.outer(scale, scale)
        fold_cross[k] = (cross - held.T @ y[r]) / scale

    J = len(candidates)
    coefs = np.zeros((len(rows), p, J))
    failed = np.zeros(J, dtype=bool)
    entries: list[LedgerEntry] = []
    for j, candidate in enumerate(candidates):
        S = candidate.columns
        infeasible = infeasible_entry(candidate.label, S.size, int(n_train.min()), ridge)
        if infeasible is not None:
            failed[j] = True
            entries.append(infeasible)
            continue
        A = fold_gram[:, S[:, None], S]
        if ridge > 0:
            A = A + np.einsum("ki,ij->kij", _penalty(design, S, ridge, n_train), np.eye(S.size))
        beta = _solve_normal(A, fold_cross[:, S])
        if beta is None:
            train = [np.setdiff1d(np.arange(n), r) for r in rows]
            beta = np.stack([np.linalg.lstsq(X[t][:, S] / scale[S], y[t], rcond=None)[0] for t in train])
            entries.append(_rank_note(candidate.label, None))
        coefs[:, S, j] = beta

    predictions = np.empty((n, J))
    for k, r in enumerate(rows):
        predictions[r] = X[r] @ (coefs[k] / scale[:, None])
    predictions[:, failed] = np.nan
    return EngineOutput(predictions, failed, entries)


def ols_loo_predict(X: np.ndarray, y: np.ndarray, candidates, ridge: float = 0.0) -> EngineOutput:
    """Exact leave-one-out predictions from the hat-matrix diagonal.

    For a linear smoother ``yhat = H y`` the prediction for row i from a fit
    without row i is ``y_i - e_i / (1 - h_ii)`` (jackknife model averaging).
    """
    design = ScaledDesign.from_design(X)
    Xs = design.values
    n = Xs.shape[0]
    J = len(candidates)
    predictions = np.full((n, J), np.nan)
    failed = np.zeros(J, dtype=bool)
    entries: list[LedgerEntry] = []
    gram = Xs.T @ Xs
    for j, candidate in enumerate(candidates):
        S = candidate.columns
        infeasible = infeasible_entry(candidate.label, S.size, n - 1, ridge)
        if infeasible is not None:
            failed[j] = True
            entries.append(infeasible)
            continue
        XS = Xs[:, S]
        A = gram[np.ix_(S, S)] + np.diag(_penalty(design, S, ridge, n - 1)[0] if ridge > 0 else np.zeros(S.size))
        try:
            factor = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            factor = None
        if factor is None or np.min(np.diag(factor) ** 2) < RANK_TOLERANCE * np.max(np.diag(A)):
            # Rank deficient: the hat matrix is the projection on the column space.
            basis, singular, _ = np.linalg.svd(XS, full_matrices=False)
            basis = basis[:, singular > singular.max() * max(XS.shape) * np.finfo(float).eps]
            fitted = basis @ (basis.T @ y)
            leverage = np.sum(basis**2, axis=1)
            entries.append(_rank_note(candidate.label, None))
        else:
            half = np.linalg.solve(factor, XS.T).T  # rows of X_S L^{-T}
            leverage = np.sum(half**2, axis=1)
            fitted = XS @ np.linalg.solve(A, XS.T @ y)
        if np.any(leverage > 1 - 1e-10):
            failed[j] = True
            entries.append(LedgerEntry(
                candidate.label, None, "cv", "failed",
                f"leverage 1 at rows {np.flatnonzero(leverage > 1 - 1e-10)[:5].tolist()}: leave-one-out undefined",
                "given weight 0", True,
            ))
            continue
        predictions[:, j] = y - (y - fitted) / (1 - leverage)
    return EngineOutput(predictions, failed, entries)


class _GramCache:
    """The full Gram matrix of the last design seen, for refits of many candidates.

    Refitting J candidates on all rows needs ``X_S'X_S`` for each column set S;
    slicing one ``X'X`` avoids J copies of ``X[:, S]`` (which for a million
    rows would dominate memory).
    """

    def __init__(self):
        self._key = None
        self._value = None

    def get(self, X: np.ndarray, y: np.ndarray):
        key = (weakref.ref(X) if _weakrefable(X) else None, id(X), id(y), X.shape)
        if self._key is None or self._key[1:] != key[1:] or (self._key[0] is not None and self._key[0]() is not X):
            scale, varies = _column_scale(X)
            self._value = (X.T @ X / np.outer(scale, scale), X.T @ y / scale, scale, varies)
            self._key = key
        return self._value


def _weakrefable(obj) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


_GRAM = _GramCache()


def ols_fit(X: np.ndarray, y: np.ndarray, columns: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """Coefficients of one candidate on all rows, on the original column scale."""
    gram, cross, scale, varies = _GRAM.get(X, y)
    S = np.asarray(columns)
    A = gram[np.ix_(S, S)]
    if ridge > 0:
        A = A + np.diag(ridge * len(y) * varies[S].astype(float))
    beta = _solve_normal(A[None], cross[S][None])
    if beta is None:
        beta = np.linalg.lstsq(X[:, S] / scale[S], y, rcond=None)[0]
    else:
        beta = beta[0]
    return beta / scale[S]
