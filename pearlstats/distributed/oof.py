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

from ..weights.losses import EPS
from .data import partition_design, partition_folds, partition_response
from .newton import mean_of
from .ols import tree_sum

__all__ = ["OofPasses", "oof_predictions"]


def oof_predictions(
    X: np.ndarray, folds: np.ndarray, labels: list, coefs: np.ndarray, kind: str
) -> np.ndarray:
    """Predictions (m, J) of each row by its fold's coefficients (K, p, J)."""
    P = np.empty((len(X), coefs.shape[2]))
    for position, k in enumerate(labels):
        r = folds == k
        P[r] = X[r] @ coefs[position]
    return P if kind == "gaussian" else mean_of(kind, P)


def _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env):
    X = partition_design(spec, frame, blocks)
    y = partition_response(spec, kind, frame, env)
    folds = partition_folds(frame, offset, len(y), fold_spec)
    return y, oof_predictions(X, folds, labels, coefs, kind)


def _residual_part(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env):
    y, P = _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env)
    E = y[:, None] - P
    E2 = E * E
    return {"EtE": E.T @ E, "n": len(y), "E4": np.sum(E2 * E2, axis=0)}


def _barrier_rows(loss_name, y, P):
    """``A`` (rows, J), ``c`` (rows,), linear part ``b`` (J,) and constant of the barrier form."""
    if loss_name == "cross_entropy":
        A = np.maximum(np.where(y[:, None] == 1, P, 1.0 - P), EPS)
        return A, np.ones(len(y)), np.zeros(P.shape[1]), 0.0
    counted = y > 0
    const = 2.0 * float(np.sum(xlogy(y, y) - y))
    return np.maximum(P[counted], EPS), 2.0 * y[counted], 2.0 * P.sum(axis=0), const


def _risk_part(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env, loss):
    y, P = _inputs(frame, blocks, offset, spec, kind, fold_spec, labels, coefs, env)
    pointwise = loss.row_losses(y[:, None], P)
    out = {"n": len(y), "risk": pointwise.sum(axis=0), "risk2": np.sum(pointwise**2, axis=0)}
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
    """

    rows: Any
    spec: Any
    kind: str
    fold_spec: Any
    labels: list
    coefs: np.ndarray
    env: Any = None

    def _sum(self, part, *extra) -> dict:
        return tree_sum(self.rows.tasks(
            part, self.spec, self.kind, self.fold_spec, self.labels, self.coefs, self.env, *extra
        ))

    def only(self, candidates: np.ndarray) -> OofPasses:
        """The same passes for a subset of the candidates."""
        return replace(self, coefs=self.coefs[:, :, candidates])

    def residuals(self) -> dict:
        """``E'E`` (J x J) of the residuals ``E = y 1' - P``, the row count and ``sum E^4``."""
        return self._sum(_residual_part)

    def risks(self, loss: Any) -> dict:
        """Each candidate's summed out-of-fold loss (and square), and the form's vertex values."""
        return self._sum(_risk_part, loss)

    def barrier(self, loss: Any, w: np.ndarray, n: int) -> tuple:
        """The weight objective at *w*, its gradient, Hessian (row means) and the loss of P w."""
        total = self._sum(_barrier_part, loss, w)
        return total["f"] / n, total["g"] / n, total["H"] / n, total["objective"] / n
