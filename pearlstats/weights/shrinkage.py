"""Simplex weights shrunk toward a fixed target, the amount chosen by cross-validation.

With few rows and many candidates the weights fitted to noisy out-of-fold
predictions vary a lot from sample to sample. Shrinking them toward fixed
weights ``u`` that do not depend on the response,

    w(lam) = (1 - lam) * w_hat + lam * u,

trades that variance for a little bias, as the stacking literature does with
regularised level-one learners (LeBlanc and Tibshirani 1996; Breiman 1996).
The target ``u`` is equal weights over the active candidates (``"candidates"``,
the SA-cand baseline), equal weights over the active single-block candidates
(``"single-block"``, the SA-FRL baseline) or weights the user names. ``lam``
is chosen from a grid by cross-validation over the out-of-fold predictions
themselves (the level-one data): for each fold, the weights are re-solved
without that fold's rows and every ``lam`` is scored on its rows. Only the
labeled rows are used.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import OptionError
from .solvers import solve_weights

if TYPE_CHECKING:
    from .losses import Loss

__all__ = [
    "SHRINKAGE_GRID",
    "SHRINKAGE_TARGETS",
    "Shrinkage",
    "check_shrinkage_target",
    "choose_shrinkage",
    "shrink_toward",
    "target_weights",
]

# Shrinkage amounts tried by cross-validation.
SHRINKAGE_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))

# Named targets: what the weights are shrunk toward.
SHRINKAGE_TARGETS = {
    "candidates": "equal weights over the candidates that did not fail (SA-cand)",
    "single-block": "equal weights over the single-block candidates that did not fail (SA-FRL)",
}


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


def check_shrinkage_target(target: str | Mapping[str, float]) -> str | dict[str, float]:
    """A valid ``shrinkage_target``: a name of :data:`SHRINKAGE_TARGETS` or label -> weight.

    Raises
    ------
    OptionError
        Another name, a mapping with a non-numeric, negative or non-finite weight,
        or weights that do not sum to a positive number.
    """
    if isinstance(target, str) and target in SHRINKAGE_TARGETS:
        return target
    if isinstance(target, Mapping) and target:
        bad = {label: value for label, value in target.items()
               if not isinstance(value, numbers.Real) or isinstance(value, bool)
               or not np.isfinite(value) or value < 0}
        if not bad and sum(target.values()) > 0:
            return {str(label): float(value) for label, value in target.items()}
        raise OptionError(
            f"shrinkage_target has weights {bad or dict(target)} that are not finite numbers >= 0 "
            "with a positive sum"
        )
    raise OptionError(
        f"shrinkage_target={target!r}; use one of {sorted(SHRINKAGE_TARGETS)} or a mapping of "
        "candidate labels to weights >= 0, e.g. {'a': 0.5, 'b': 0.5}"
    )


def target_weights(
    target: str | dict[str, float], labels: Sequence[str], single: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """The target ``u`` over the candidates *labels*, on the *active* ones, summing to 1.

    Parameters
    ----------
    target : str or dict
        As returned by :func:`check_shrinkage_target`.
    labels : sequence of str
        The pool's candidate labels.
    single : ndarray of bool
        Which candidates are single blocks.
    active : ndarray of bool
        Which candidates did not fail; a named weight on a failed candidate is dropped.

    Raises
    ------
    OptionError
        A label that is not a candidate, or no target weight on an active candidate.

    Examples
    --------
    >>> target_weights("single-block", ["a", "b", "a+b"], np.array([True, True, False]),
    ...                np.array([True, True, True]))
    array([0.5, 0.5, 0. ])
    """
    if isinstance(target, dict):
        unknown = sorted(set(target) - set(labels))
        if unknown:
            raise OptionError(f"shrinkage_target names {unknown}, which are not candidates; "
                              f"the candidates are {list(labels)}")
        u = np.array([target.get(label, 0.0) for label in labels])
    else:
        u = (single if target == "single-block" else np.ones(len(labels), dtype=bool)).astype(float)
    u = np.where(active, u, 0.0)
    if not u.sum() > 0:
        raise OptionError(f"shrinkage_target={target!r} puts no weight on a candidate that did "
                          "not fail; name other candidates or use 'candidates'")
    return u / u.sum()


def shrink_toward(weights: np.ndarray, target: np.ndarray, amount: float) -> np.ndarray:
    """``(1 - amount) * weights + amount * target``.

    Examples
    --------
    >>> shrink_toward(np.array([1.0, 0.0, 0.0]), np.array([0.5, 0.5, 0.0]), 0.5)
    array([0.75, 0.25, 0.  ])
    """
    return (1.0 - amount) * np.asarray(weights, dtype=float) + amount * np.asarray(target)


def choose_shrinkage(
    P: np.ndarray,
    y: np.ndarray,
    loss: Loss,
    groups: np.ndarray,
    rows: np.ndarray,
    active: np.ndarray,
    grid: Sequence[float] = SHRINKAGE_GRID,
    target: np.ndarray | None = None,
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
    target : ndarray (J,), optional
        What the weights are shrunk toward (zero off *active*, summing to 1);
        default equal weights over the *active* candidates.

    Returns
    -------
    Shrinkage
    """
    grid = tuple(float(value) for value in grid)
    target = active / active.sum() if target is None else target
    totals = np.zeros(len(grid))
    for g in np.unique(groups):
        scored = groups == g
        fitted = ~np.isin(rows, rows[scored])
        w_hat = solve_weights(P[fitted], y[fitted], loss, active=active).weights
        for i, amount in enumerate(grid):
            w = shrink_toward(w_hat, target, amount)
            totals[i] += loss.pointwise(
                y[scored], loss.combine(P[scored][:, active], w[active])
            ).sum()
    risks = totals / len(y)
    return Shrinkage(grid[int(np.argmin(risks))], grid, risks)
