"""Out-of-fold passes: each partition's out-of-fold predictions, reduced to J x J statistics.

A row in fold k is predicted with the coefficients fitted without fold k; the
predictions (n, J) exist only inside a task, one partition at a time, and
each pass reduces them to what the weights need: the residual Gram matrix
``E'E`` for the squared loss, or the cross-entropy / Poisson-deviance
objective with its gradient and Hessian at given weights.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.special import xlogy

from ..backends.partitions import tree_sum
from ..engines.likelihood import mean_of
from ..weights.baselines import combine
from ..weights.losses import EPS
from .data import partition_inputs

__all__ = ["OofPasses", "fold_scores", "oof_predictions"]


def oof_predictions(
    X: np.ndarray, folds: np.ndarray, labels: list, coefs: np.ndarray, kind: str
) -> np.ndarray:
    """Predictions (m, J) of each row by its fold's coefficients (K, p, J)."""
    P = np.empty((len(X), coefs.shape[2]))
    for position, k in enumerate(labels):
        r = folds == k
        P[r] = X[r] @ coefs[position]
    return P if kind == "gaussian" else mean_of(kind, P)


def _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, with_folds=False):
    X, y, folds = partition_inputs(frame, blocks, offset, spec, kind, fold_spec, env)
    P = oof_predictions(X, folds, labels, coefs, kind)
    return (y, P, folds) if with_folds else (y, P)


def _null_sums(row_losses, y: np.ndarray, folds: np.ndarray, null: np.ndarray | None) -> dict:
    """The intercept-only model's summed row losses and their squares (for its risk and SE)."""
    if null is None:
        return {}
    losses = row_losses(y, null[folds])
    return {"null": float(losses.sum()), "null2": float(losses @ losses)}


def _squared(y: np.ndarray, prediction: np.ndarray) -> np.ndarray:
    return (y - prediction) ** 2


def _residual_part(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, null):
    y, P, folds = _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, True)
    E = y[:, None] - P
    E2 = E * E
    out = {"EtE": E.T @ E, "n": len(y), "E4": np.sum(E2 * E2, axis=0)}
    return out | _null_sums(_squared, y, folds, null)


def _barrier_rows(loss_name, y, P):
    """``A`` (rows, J), ``c`` (rows,), linear part ``b`` (J,) and constant of the barrier form."""
    if loss_name == "cross_entropy":
        A = np.maximum(np.where(y[:, None] == 1, P, 1.0 - P), EPS)
        return A, np.ones(len(y)), np.zeros(P.shape[1]), 0.0
    counted = y > 0
    const = 2.0 * float(np.sum(xlogy(y, y) - y))
    return np.maximum(P[counted], EPS), 2.0 * y[counted], 2.0 * P.sum(axis=0), const


def _risk_part(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, loss, null):
    y, P, folds = _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, True)
    pointwise = loss.row_losses(y[:, None], P)
    out = {"n": len(y), "risk": pointwise.sum(axis=0), "risk2": np.sum(pointwise**2, axis=0)}
    out |= _null_sums(loss.row_losses, y, folds, null)
    if loss.solver == "convex":
        A, c, b, const = _barrier_rows(loss.name, y, P)
        out["vertex"] = -(c @ np.log(A)) + b + const
    return out


def _barrier_part(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, loss, w):
    y, P = _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env)
    A, c, b, const = _barrier_rows(loss.name, y, P)
    u = A @ w
    f = -(c @ np.log(u)) + b @ w + const
    g = b - A.T @ (c / u)
    H = (A * (c / u**2)[:, None]).T @ A
    return {"f": f, "g": g, "H": H, "objective": float(loss.row_losses(y, P @ w).sum())}


def fold_scores(y: np.ndarray, P: np.ndarray, folds: np.ndarray, loss: Any,
                W: np.ndarray) -> dict:
    """``scores[k, m]``: the summed loss over fold k's rows of the candidates' predictions
    *P* (rows, J) or (rows, J, C) averaged with the weights ``W[k, m]`` ((K, M, J))."""
    scores = np.zeros(W.shape[:2])
    for k in np.unique(folds):
        r = folds == k
        for m in range(W.shape[1]):
            scores[k, m] = loss.row_losses(y[r], combine(P[r], W[k, m], loss)).sum()
    return {"scores": scores}


def _fold_score_part(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, loss, W):
    y, P, folds = _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, True)
    return fold_scores(y, P, folds, loss, W)


@dataclass(frozen=True)
class OofPasses:
    """The out-of-fold passes of one fit: its rows, their design, folds and coefficients.

    Attributes
    ----------
    rows : DaskRows
    spec : DesignSpec
    kind : str
        The family's name.
    fold_spec : tuple
    labels : list
        Fold labels, in the order of ``coefs``.
    coefs : ndarray (K, p, J)
        Each fold's coefficients of every candidate.
    env : None
        The formula's namespace on the workers (None: the spec's own).
    null : ndarray (K,), optional
        The intercept-only model's mean in each fold (from the other folds' rows): the
        residual and risk passes also sum its losses (``null``, ``null2``).
    """

    rows: Any
    spec: Any
    kind: str
    fold_spec: Any
    labels: list
    coefs: np.ndarray
    env: Any = None
    null: np.ndarray | None = None

    def _sum(self, part, *extra) -> dict:
        return tree_sum(self.rows.tasks(
            part, self.spec, self.kind, self.fold_spec, self.labels, self.coefs, self.env, *extra
        ))

    def only(self, candidates: np.ndarray) -> OofPasses:
        """The same passes for a subset of the candidates."""
        return replace(self, coefs=self.coefs[:, :, candidates])

    def residuals(self) -> dict:
        """``E'E`` (J x J) of the residuals ``E = y 1' - P``, the row count, ``sum E^4`` and
        the intercept-only model's ``null`` and ``null2`` sums."""
        return self._sum(_residual_part, self.null)

    def risks(self, loss: Any) -> dict:
        """Each candidate's summed out-of-fold loss (and square), the form's vertex values, and
        the intercept-only model's ``null`` and ``null2`` sums."""
        return self._sum(_risk_part, loss, self.null)

    def fold_scores(self, loss: Any, W: np.ndarray) -> np.ndarray:
        """(K, M): each fold's summed loss of the predictions averaged with ``W[k, m]``
        ((K, M, J) weights per fold), one pass."""
        return self._sum(_fold_score_part, loss, W)["scores"]

    def barrier(self, loss: Any, w: np.ndarray, n: int) -> tuple:
        """The weight objective at *w*, its gradient, Hessian (row means) and the loss of P w."""
        total = self._sum(_barrier_part, loss, w)
        return total["f"] / n, total["g"] / n, total["H"] / n, total["objective"] / n
