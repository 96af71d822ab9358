"""Multinomial logistic candidates: batched Newton fits over all folds at once.

The parametrisation is statsmodels' ``MNLogit``: class 0 is the reference, and
each other class c has a coefficient vector; the parameter matrix has shape
(p, C - 1). Fits agree with ``sm.MNLogit`` where it converges.

Small-valued inputs such as kernel-PCA scores make unscaled Newton steps
overflow; the design is scaled to unit root-mean-square first. Separation is
flagged as for logistic candidates: without a ridge penalty, a fold still
taking large steps after ``SEPARATION_MIN_ITER`` Newton iterations with a training row's
log-odds against its own class beyond ``SEPARATION_ETA``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from ..ledger import LedgerEntry
from ._common import EngineOutput, ScaledDesign, fold_rows, infeasible_entry
from .glm import SEPARATION_ETA, SEPARATION_MIN_ITER, SEPARATION_STEP
from .newton import batched_newton, fold_start, separated_in_every_fold

__all__ = ["multinomial_cv_predict", "multinomial_fit", "class_probabilities"]


def _softmax_parts(theta: np.ndarray, XsT: np.ndarray, n_classes: int):
    """Class-major pieces of the softmax for K parameter vectors.

    Returns ``shifted`` (K, C, n), the linear predictors minus each row's
    largest (the reference class's is 0), ``scaled`` = exp(shifted) and
    ``log_total`` (K, n), so that log p = shifted - log_total and
    p = scaled / exp(log_total). The exponential, the costliest step of an
    objective evaluation, is taken once. With the classes on the middle axis
    the reductions over the C classes are elementwise operations on length-n
    rows; over a short last axis they were far slower.
    """
    K, d = theta.shape
    m = n_classes - 1
    shifted = np.empty((K, n_classes, XsT.shape[1]))
    shifted[:, 0] = 0.0
    np.matmul(theta.reshape(K, m, d // m), XsT, out=shifted[:, 1:])
    shifted -= shifted.max(axis=1, keepdims=True)
    scaled = np.exp(shifted)
    return shifted, scaled, np.log(scaled.sum(axis=1))


def _log_probabilities(theta: np.ndarray, XsT: np.ndarray, n_classes: int) -> np.ndarray:
    """Log class probabilities (K, C, n), class-major."""
    shifted, _, log_total = _softmax_parts(theta, XsT, n_classes)
    return shifted - log_total[:, None, :]


def class_probabilities(params: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Class probabilities (n, C) from MNLogit-shaped params (p, C - 1)."""
    eta = X @ params
    return softmax(np.column_stack([np.zeros(len(X)), eta]), axis=1)


def _make_objective(Xs, onehot, weights, n_train, penalty, n_classes):
    """Mean negative log-likelihood plus ridge for K problems; *weights* are 0/1 row indicators."""
    n, s = Xs.shape
    m = n_classes - 1
    XsT = np.ascontiguousarray(Xs.T)
    labels = np.ascontiguousarray(onehot.T)  # (C, n)
    diagonal = np.arange(m * s)
    train_rows = [np.flatnonzero(w > 0) for w in weights]

    def objective(theta, order):
        shifted, scaled, log_total = _softmax_parts(theta, XsT, n_classes)
        # -log p(own class) = log_total - shifted[own class]
        own = np.einsum("cn,kcn->kn", labels, shifted)
        f = np.einsum("kn,kn->k", weights, log_total - own) / n_train
        f = f + 0.5 * np.sum(penalty * theta**2, axis=1)
        if order == 0:
            return f
        prob = scaled[:, 1:] * np.exp(-log_total)[:, None, :]  # (K, m, n)
        resid = weights[:, None, :] * (prob - labels[None, 1:])
        g = np.matmul(resid, Xs).reshape(len(theta), -1) / n_train[:, None] + penalty * theta
        if order == 1:
            return f, g
        # H = blockdiag_a(X' diag(p_a) X) - Q Q' with Q = [p_1 x, ..., p_m x] (ms, n_k):
        # one symmetric product per fold instead of m(m+1)/2 small ones.
        H = np.empty((len(theta), m * s, m * s))
        for k in range(len(theta)):
            rows = train_rows[k]
            X_k, p_k = XsT[:, rows], prob[k][:, rows]  # (s, n_k), (m, n_k)
            Q = (p_k[:, None, :] * X_k[None]).reshape(m * s, len(rows))
            H[k] = -(Q @ Q.T)
            diagonal_blocks = np.matmul(Q.reshape(m, s, len(rows)), X_k.T)  # (m, s, s)
            for a in range(m):
                H[k, a * s:(a + 1) * s, a * s:(a + 1) * s] += diagonal_blocks[a]
        H /= n_train[:, None, None]
        H[:, diagonal, diagonal] += penalty
        return f, g, H

    return objective


def _solve(Xs, codes, n_classes, weights, penalized, ridge, theta0=None):
    onehot = np.eye(n_classes)[codes]
    n_train = weights.sum(axis=1)
    penalty = ridge * np.tile(penalized, n_classes - 1)[None, :] * np.ones((weights.shape[0], 1))
    objective = _make_objective(Xs, onehot, weights, n_train, penalty, n_classes)

    def separated(theta, step, iteration):
        if ridge > 0 or iteration < SEPARATION_MIN_ITER:
            return np.zeros(theta.shape[0], dtype=bool)
        logp = _log_probabilities(theta, np.ascontiguousarray(Xs.T), n_classes)
        own = np.einsum("kcn,nc->kn", logp, onehot)
        extreme = np.any((weights > 0) & (own > -np.exp(-SEPARATION_ETA)), axis=1)
        return extreme & (np.abs(step).max(axis=1) > SEPARATION_STEP)

    if theta0 is None:
        theta0 = np.zeros((weights.shape[0], (n_classes - 1) * Xs.shape[1]))
    return batched_newton(objective, theta0, stop=separated)


def _params(theta_row: np.ndarray, n_classes: int, scale: np.ndarray) -> np.ndarray:
    """MNLogit-shaped params (p, C - 1) on the original column scale."""
    return theta_row.reshape(n_classes - 1, -1).T / scale[:, None]


def _notes(label, result, fold_ids, stage):
    entries = []
    excluded = stage == "cv"
    for k in np.flatnonzero(result.stopped):
        entries.append(LedgerEntry(
            label, fold_ids[k], stage, "separation",
            f"still diverging after {SEPARATION_MIN_ITER} Newton steps with a training row's probability of "
            "its own class numerically 1: the classes are (quasi-)separated and the maximum-likelihood "
            "estimate does not exist",
            ("given weight 0" if excluded else "reported") + "; use ridge > 0 to keep this candidate", excluded,
        ))
    for k in np.flatnonzero(~result.converged & ~result.stopped):
        entries.append(LedgerEntry(
            label, fold_ids[k], stage, "not converged",
            f"Newton iterations did not converge in {result.iterations} steps",
            "given weight 0" if excluded else "reported", excluded,
        ))
    for k in np.flatnonzero(result.singular & result.converged):
        entries.append(LedgerEntry(
            label, fold_ids[k], stage, "rank deficient", "singular Hessian (collinear columns)",
            "Newton steps solved by minimum-norm least squares", False,
        ))
    return entries


def multinomial_cv_predict(X, codes, n_classes: int, candidates, folds, ridge: float = 0.0) -> EngineOutput:
    """Out-of-fold class probabilities of multinomial logistic candidates.

    Parameters
    ----------
    X : ndarray (n, p)
    codes : ndarray of int (n,)
        Class codes 0..C-1.
    n_classes : int
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float
        L2 penalty on scaled non-constant coefficients.

    Returns
    -------
    EngineOutput
        ``predictions`` has shape (n, J, C).
    """
    design = ScaledDesign.from_design(X)
    rows = fold_rows(folds)
    weights = np.ones((len(rows), len(codes)))
    for k, r in enumerate(rows):
        weights[k, r] = 0.0
    n_train_min = int(weights.sum(axis=1).min())
    predictions = np.full((len(codes), len(candidates), n_classes), np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    for j, candidate in enumerate(candidates):
        S = candidate.columns
        infeasible = infeasible_entry(candidate.label, S.size * (n_classes - 1), n_train_min, ridge)
        if infeasible is not None:
            failed[j] = True
            entries.append(infeasible)
            continue
        Xs = np.ascontiguousarray(design.values[:, S])
        penalized = design.penalized[S].astype(float)
        everything = _solve(Xs, codes, n_classes, np.ones((1, len(codes))), penalized, ridge)
        if everything.stopped[0]:
            result = separated_in_every_fold(everything, len(rows))
        else:
            start = fold_start(everything, len(rows))
            result = _solve(Xs, codes, n_classes, weights, penalized, ridge, theta0=start)
        notes = _notes(candidate.label, result, list(range(len(rows))), "cv")
        entries.extend(notes)
        if any(note.excluded for note in notes):
            failed[j] = True
            continue
        ones = np.ones(S.size)
        for k, r in enumerate(rows):
            predictions[r, j] = class_probabilities(_params(result.theta[k], n_classes, ones), Xs[r])
    return EngineOutput(predictions, failed, entries)


def multinomial_fit(X, codes, n_classes: int, columns, ridge: float = 0.0, label: str = ""):
    """Fit one multinomial candidate on all rows.

    Returns
    -------
    params : ndarray (p, C - 1)
        On the original column scale, laid out like ``MNLogit.params``.
    entries : list of LedgerEntry
    """
    design = ScaledDesign.from_design(X[:, columns])
    result = _solve(design.values, codes, n_classes, np.ones((1, len(codes))), design.penalized.astype(float), ridge)
    return _params(result.theta[0], n_classes, design.scale), _notes(label, result, [None], "refit")
