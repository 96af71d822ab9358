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
from ._common import RANK_TOLERANCE, EngineOutput, ScaledDesign, fold_rows, infeasible_entry, penalized_columns

__all__ = ["ols_cv_predict", "ols_loo_predict", "ols_fit"]


# Elements of the stacked normal-equation matrices solved in one call (16 MB of float64).
BATCH_ELEMENTS = 2_000_000


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


def _solve_normal_batch(A: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``A[k, i] x = rhs[k, i]`` for SPD systems stacked as (K, m, s, s).

    Returns the solutions (K, m, s) and, per system group ``i``, whether any of
    its K systems is numerically singular (those solutions are not to be used).
    """
    K, m, s, _ = A.shape
    flat = A.reshape(K * m, s, s)
    try:
        factor = np.linalg.cholesky(flat)
        pivots = np.diagonal(factor, axis1=-2, axis2=-1) ** 2
        tiny = pivots < RANK_TOLERANCE * np.diagonal(flat, axis1=-2, axis2=-1).max(axis=-1, keepdims=True)
        singular = tiny.any(axis=-1).reshape(K, m).any(axis=0)
    except np.linalg.LinAlgError:  # some system is not positive definite: find which, one by one
        singular = np.array([_solve_normal(A[:, i], rhs[:, i]) is None for i in range(m)])
    solution = np.zeros((K, m, s))
    ok = ~singular
    if ok.any():
        solution[:, ok] = np.linalg.solve(A[:, ok], rhs[:, ok][..., None])[..., 0]
    return solution, singular


def _rank_note(label: str, fold) -> LedgerEntry:
    return LedgerEntry(
        label, fold, "cv", "rank deficient",
        "collinear columns in the training rows",
        "solved by minimum-norm least squares (as statsmodels' pinv)", False,
    )


def _column_scale(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Root-mean-square of each column (1 for all-zero ones) and which columns a ridge penalises."""
    scale = np.sqrt(np.einsum("ij,ij->j", X, X) / len(X))
    scale[scale == 0] = 1.0
    return scale, penalized_columns(X)


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
    scale, penalized = _column_scale(X)
    design = ScaledDesign(X, scale, penalized)
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
    same_size: dict[int, list[int]] = {}
    for j, candidate in enumerate(candidates):
        infeasible = infeasible_entry(candidate.label, candidate.columns.size, int(n_train.min()), ridge)
        if infeasible is not None:
            failed[j] = True
            entries.append(infeasible)
        else:
            same_size.setdefault(candidate.columns.size, []).append(j)
    # Candidates with the same number of columns are solved together, in one batched
    # Cholesky over (fold, candidate): a few large calls instead of J small ones.
    for size, members in same_size.items():
        step = max(1, BATCH_ELEMENTS // (len(rows) * size * size))
        for start in range(0, len(members), step):
            group = members[start:start + step]
            index = np.stack([candidates[j].columns for j in group])  # (m, size)
            A = fold_gram[:, index[:, :, None], index[:, None, :]]  # (K, m, size, size)
            if ridge > 0:
                diagonal = ridge * design.penalized[index] * n_train.reshape(-1, 1, 1).astype(float)
                A = A + diagonal[..., None] * np.eye(size)
            beta, singular = _solve_normal_batch(A, fold_cross[:, index])
            for i, j in enumerate(group):
                S = candidates[j].columns
                if singular[i]:
                    train = [np.setdiff1d(np.arange(n), r) for r in rows]
                    coefs[:, S, j] = np.stack(
                        [np.linalg.lstsq(X[t][:, S] / scale[S], y[t], rcond=None)[0] for t in train]
                    )
                    entries.append(_rank_note(candidates[j].label, None))
                else:
                    coefs[:, S, j] = beta[:, i]

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
            scale, penalized = _column_scale(X)
            self._value = (X.T @ X / np.outer(scale, scale), X.T @ y / scale, scale, penalized)
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
    gram, cross, scale, penalized = _GRAM.get(X, y)
    S = np.asarray(columns)
    A = gram[np.ix_(S, S)]
    if ridge > 0:
        A = A + np.diag(ridge * len(y) * penalized[S].astype(float))
    beta = _solve_normal(A[None], cross[S][None])
    if beta is None:
        beta = np.linalg.lstsq(X[:, S] / scale[S], y, rcond=None)[0]
    else:
        beta = beta[0]
    return beta / scale[S]
