"""Simplex weights shrunk toward equal weights, the amount chosen by cross-validation.

With few rows and many candidates the weights fitted to noisy out-of-fold
predictions vary a lot from sample to sample. Shrinking them toward equal
weights over the candidates (the SA-cand baseline),

    w(lam) = (1 - lam) * w_hat + lam * u,    u = equal weights over the active candidates,

trades that variance for a little bias, as the stacking literature does with
regularised level-one learners. ``lam`` is chosen from a grid by
cross-validation over the out-of-fold predictions themselves (the level-one
data): for each fold, the weights are re-solved without that fold's rows and
every ``lam`` is scored on its rows. Only the labeled rows are used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .solvers import solve_weights

if TYPE_CHECKING:
    from .losses import Loss

__all__ = ["SHRINKAGE_GRID", "Shrinkage", "choose_shrinkage", "shrink_toward_equal"]

# Shrinkage amounts tried by cross-validation.
SHRINKAGE_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))


@dataclass(frozen=True)
class Shrinkage:
    """The shrinkage chosen by :func:`choose_shrinkage`.

    Attributes
    ----------
    amount : float
        ``lam`` in ``(1 - lam) * w_hat + lam * u``.
    grid : tuple of float
    cv_risk : ndarray
        Cross-validated mean loss of each grid value.
    """

    amount: float
    grid: tuple
    cv_risk: np.ndarray


def shrink_toward_equal(weights: np.ndarray, active: np.ndarray, amount: float) -> np.ndarray:
    """``(1 - amount) * weights + amount * u``, u equal over the *active* candidates.

    Examples
    --------
    >>> shrink_toward_equal(np.array([1.0, 0.0, 0.0]), np.array([True, True, False]), 0.5)
    array([0.75, 0.25, 0.  ])
    """
    equal = active / active.sum()
    return (1.0 - amount) * np.asarray(weights, dtype=float) + amount * equal


def choose_shrinkage(
    P: np.ndarray,
    y: np.ndarray,
    loss: Loss,
    groups: np.ndarray,
    rows: np.ndarray,
    active: np.ndarray,
    grid: Sequence[float] = SHRINKAGE_GRID,
) -> Shrinkage:
    """The shrinkage amount with the lowest cross-validated loss over the level-one data.

    Parameters
    ----------
    P : ndarray (m, J) or (m, J, C)
        Out-of-fold predictions; with repeated K-fold, the draws stacked (m = R n).
    y : ndarray (m,)
    loss : Loss
    groups : ndarray of int (m,)
        Validation group of each stacked row (draw r, fold k: one group each).
    rows : ndarray of int (m,)
        Which labeled row each stacked row is: a group's weights are solved
        without every stacked copy of the group's rows, so no row is both
        fitted and scored.
    active : ndarray of bool (J,)
    grid : sequence of float in [0, 1]

    Returns
    -------
    Shrinkage
    """
    grid = tuple(float(value) for value in grid)
    totals = np.zeros(len(grid))
    for g in np.unique(groups):
        scored = groups == g
        fitted = ~np.isin(rows, rows[scored])
        w_hat = solve_weights(P[fitted], y[fitted], loss, active=active).weights
        for i, amount in enumerate(grid):
            w = shrink_toward_equal(w_hat, active, amount)
            totals[i] += loss.pointwise(
                y[scored], loss.combine(P[scored][:, active], w[active])
            ).sum()
    risks = totals / len(y)
    return Shrinkage(grid[int(np.argmin(risks))], grid, risks)
