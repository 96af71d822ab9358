"""Logistic and Poisson candidates: batched Newton fits over all folds at once.

Each fold's training rows get weight 1 and its held-out rows weight 0, so the
K fold problems of one candidate share the same design and are solved together
by :func:`~pearlstats.engines.newton.batched_newton`. The maximum-likelihood
fits equal ``sm.Logit`` / ``sm.GLM(family=Poisson())`` where those converge.

Separation (logistic) is detected when, without a ridge penalty, a fold is
still taking large steps (``SEPARATION_STEP`` on standardised coefficients)
after ``SEPARATION_MIN_ITER`` Newton iterations while a training row's
linear predictor exceeds ``SEPARATION_ETA`` in absolute value. Newton converges
quadratically when the MLE exists, so a fit still diverging by then has no MLE;
it is halted and reported rather than left to produce huge coefficients. (A
converged fit may legitimately give some rows probabilities within 1e-15 of
0 or 1; that alone is not separation.)
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..ledger import LedgerEntry
from ._common import EngineOutput, ScaledDesign, fold_rows, infeasible_entry
from .newton import batched_newton, fold_start, separated_in_every_fold

__all__ = ["glm_cv_predict", "glm_fit", "SEPARATION_ETA", "SEPARATION_MIN_ITER", "SEPARATION_STEP"]

SEPARATION_ETA = 30.0
SEPARATION_MIN_ITER = 15
SEPARATION_STEP = 0.5  # a converging Newton fit takes steps far below this by then
_MAX_ETA = 700.0  # exp overflows past ~709


def _log1pexp(eta: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, eta)


def _mean_and_variance(kind: str, eta: np.ndarray):
    if kind == "binomial":
        mu = expit(eta)
        return mu, mu * (1.0 - mu)
    mu = np.exp(np.minimum(eta, _MAX_ETA))
    return mu, mu


def _row_loss(kind: str, eta: np.ndarray, y: np.ndarray) -> np.ndarray:
    if kind == "binomial":
        return _log1pexp(eta) - y * eta
    return np.exp(np.minimum(eta, _MAX_ETA)) - y * eta


def _make_objective(kind, Xs, y, weights, n_train, penalty):
    """Mean negative log-likelihood over training rows plus ridge, per fold."""

    def objective(theta, order):
        eta = theta @ Xs.T  # (K, n)
        f = np.sum(weights * _row_loss(kind, eta, y), axis=1) / n_train
        f = f + 0.5 * np.sum(penalty * theta**2, axis=1)
        if order == 0:
            return f
        mu, var = _mean_and_variance(kind, eta)
        g = (weights * (mu - y)) @ Xs / n_train[:, None] + penalty * theta
        if order == 1:
            return f, g
        H = np.matmul(Xs.T[None] * (weights * var)[:, None, :], Xs) / n_train[:, None, None]
        H[:, np.arange(theta.shape[1]), np.arange(theta.shape[1])] += penalty
        return f, g, H

    return objective


def _solve(kind, Xs, y, weights, penalty_vector, ridge, theta0=None):
    n_train = weights.sum(axis=1)
    penalty = ridge * penalty_vector[None, :] * np.ones((weights.shape[0], 1))
    objective = _make_objective(kind, Xs, y, weights, n_train, penalty)

    def separated(theta, step, iteration):
        if kind != "binomial" or ridge > 0 or iteration < SEPARATION_MIN_ITER:
            return np.zeros(theta.shape[0], dtype=bool)
        eta = theta @ Xs.T
        extreme = np.any((weights > 0) & (np.abs(eta) > SEPARATION_ETA), axis=1)
        return extreme & (np.abs(step).max(axis=1) > SEPARATION_STEP)

    if theta0 is not None:
        return batched_newton(objective, theta0, stop=separated)
    theta0 = np.zeros((weights.shape[0], Xs.shape[1]))
    if kind == "poisson":
        # Start from the intercept-only mean so the first exp() cannot overflow.
        constant = ~penalty_vector.astype(bool)
        if constant.any():
            first = np.flatnonzero(constant)[0]
            mean_y = (weights @ y) / n_train
            theta0[:, first] = np.log(np.maximum(mean_y, 1e-8)) / Xs[0, first]
    return batched_newton(objective, theta0, stop=separated)


def _notes(label, kind, result, fold_ids, ridge):
    entries = []
    for k in np.flatnonzero(result.stopped):
        entries.append(LedgerEntry(
            label, fold_ids[k], "cv", "separation",
            f"still diverging after {SEPARATION_MIN_ITER} Newton steps with a training row's linear predictor "
            f"beyond {SEPARATION_ETA:g} in absolute value: the classes are (quasi-)separated and the "
            "maximum-likelihood estimate does not exist",
            "given weight 0; refit with ridge > 0 to keep this candidate", True,
        ))
    for k in np.flatnonzero(~result.converged & ~result.stopped):
        entries.append(LedgerEntry(
            label, fold_ids[k], "cv", "not converged",
            f"Newton iterations did not converge in {result.iterations} steps",
            "given weight 0", True,
        ))
    for k in np.flatnonzero(result.singular & result.converged):
        entries.append(LedgerEntry(
            label, fold_ids[k], "cv", "rank deficient",
            "singular Hessian (collinear columns)", "Newton steps solved by minimum-norm least squares", False,
        ))
    return entries


def glm_cv_predict(kind: str, X, y, candidates, folds, ridge: float = 0.0) -> EngineOutput:
    """Out-of-fold predicted means of logistic (``kind="binomial"``) or Poisson candidates.

    Parameters
    ----------
    kind : {"binomial", "poisson"}
    X : ndarray (n, p)
    y : ndarray (n,)
        0/1 for binomial, counts for Poisson.
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float
        L2 penalty on scaled non-constant coefficients, added to the mean
        negative log-likelihood as ``ridge / 2 * ||b||^2``.

    Returns
    -------
    EngineOutput
        ``predictions`` (n, J): probabilities of class 1, or Poisson means.
    """
    design = ScaledDesign.from_design(X)
    rows = fold_rows(folds)
    weights = np.ones((len(rows), len(y)))
    for k, r in enumerate(rows):
        weights[k, r] = 0.0
    n_train_min = int(weights.sum(axis=1).min())
    predictions = np.full((len(y), len(candidates)), np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    for j, candidate in enumerate(candidates):
        S = candidate.columns
        infeasible = infeasible_entry(candidate.label, S.size, n_train_min, ridge)
        if infeasible is not None:
            failed[j] = True
            entries.append(infeasible)
            continue
        Xs = np.ascontiguousarray(design.values[:, S])
        penalized = design.penalized[S].astype(float)
        everything = _solve(kind, Xs, y, np.ones((1, len(y))), penalized, ridge)
        if everything.stopped[0]:
            result = separated_in_every_fold(everything, len(rows))
        else:
            result = _solve(kind, Xs, y, weights, penalized, ridge, theta0=fold_start(everything, len(rows)))
        notes = _notes(candidate.label, kind, result, list(range(len(rows))), ridge)
        entries.extend(notes)
        if any(note.excluded for note in notes):
            failed[j] = True
            continue
        for k, r in enumerate(rows):
            predictions[r, j] = _mean_and_variance(kind, Xs[r] @ result.theta[k])[0]
    return EngineOutput(predictions, failed, entries)


def glm_fit(kind: str, X, y, columns, ridge: float = 0.0, label: str = ""):
    """Fit one candidate on all rows.

    Returns
    -------
    params : ndarray
        Coefficients on the original column scale.
    entries : list of LedgerEntry
        Separation / convergence notes for the refit (stage ``"refit"``).
    """
    design = ScaledDesign.from_design(X[:, columns])
    result = _solve(kind, design.values, y, np.ones((1, len(y))), design.penalized.astype(float), ridge)
    entries = [
        LedgerEntry(e.candidate, None, "refit", e.kind, e.reason, e.action.replace("given weight 0", "reported"), False)
        for e in _notes(label, kind, result, [None], ridge)
    ]
    return result.theta[0] / design.scale, entries
