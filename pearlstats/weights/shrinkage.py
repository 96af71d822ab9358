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
is given, chosen from a grid by cross-validation over the out-of-fold
predictions themselves (the level-one data: for each fold, the weights are
re-solved without that fold's rows and every ``lam`` is scored on its rows),
or set by the size rule ``lam = min(1, c J / n)`` (:func:`size_shrinkage`).
Only the labeled rows are used.
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
    "SIZE_RULE_CONSTANT",
    "Shrinkage",
    "check_shrinkage_target",
    "choose_shrinkage",
    "shrink_toward",
    "size_shrinkage",
    "target_weights",
]

# Shrinkage amounts tried by cross-validation.
SHRINKAGE_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))

# c of the size rule lam = min(1, c J / n): near the middle of the range of c (1.75-3) with which
# shrinkage toward SA-FRL's weights won all 16 cells of the paper's simulation grid on three
# exploration root seeds (benchmarks/explore_size_rule.py; validated on the benchmark's own seed
# in benchmarks/RESULTS.md, "Small samples"). Chosen there, it wins there: on heteroscedastic and
# t3 designs with the true model in the pool it lost to Fusion in 3 of 4 cells (RESULTS.md,
# "Shrinkage off the paper's design").
SIZE_RULE_CONSTANT = 2.5

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


def size_shrinkage(n_candidates: int, n_rows: float,
                   constant: float = SIZE_RULE_CONSTANT) -> float:
    """The amount of ``weight_shrinkage="size"``: ``min(1, c J / n)``.

    Weights fitted to *n* rows of out-of-fold predictions of *J* candidates
    vary from sample to sample roughly like a regression with J coefficients
    on n rows, whose variance grows like J / n; the amount that balances that
    variance against the bias of a fixed target shrinks the same way. Unlike
    the cross-validated amount, it does not vary with the noise of the
    level-one data, which is what makes it reliable at small n when the
    target predicts well (the cross-validated amount is too small at
    n = 100 and too large at n = 800 on the paper's grid), and harmful when
    the target predicts poorly, which it cannot see (digits and movie
    reviews toward SA-FRL; the documentation's "Benchmark results" page,
    section "Small samples").

    Parameters
    ----------
    n_candidates : int
        J, the candidates whose weights are fitted (those that did not fail).
    n_rows : float
        n, the labeled observations the out-of-fold predictions are of (not the
        stacked rows of repeated fold draws); with frequency weights their sum
        (:func:`~pearlstats.observation_weights.effective_nobs`).
    constant : float, default :data:`SIZE_RULE_CONSTANT`

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> size_shrinkage(31, 100), size_shrinkage(31, 775), size_shrinkage(31, 50)
    (0.775, 0.1, 1.0)
    """
    if n_candidates < 1 or not n_rows > 0:
        raise ValueError(f"size_shrinkage needs J >= 1 and n >= 1, got {n_candidates}, {n_rows}")
    return min(1.0, constant * n_candidates / n_rows)


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

    For each group the weights are re-solved on the other groups' out-of-fold predictions
    and every amount is scored on the group's rows. A second-order leak remains, as in
    ordinary stacking: those other rows' out-of-fold predictions come from candidates
    trained with the scored group's rows. Removing it (weights of a fit on the other folds
    alone, an extra cross-validation of the pool per fold) gave smaller amounts but not a
    consistently lower test risk (-0.5 % to +1.3 % on three designs; ``benchmarks/RESULTS.md``,
    "Shrinkage off the paper's design"), so this cheaper version is kept. Nor does the
    amount stay near 0 when the target predicts poorly (mean 0.21-0.51 toward SA-FRL there).

    Parameters
    ----------
    P : ndarray (m, J) or (m, J, C)
        Out-of-fold predictions; with repeated K-fold, the draws stacked (m = R n).
    y : ndarray (m,)
    loss : Loss
        With observation weights, a
        :class:`~pearlstats.weights.row_weighted.RowWeightedLoss` over the *m* stacked rows:
        the groups' weights are solved with their rows' weights and the risks are weighted
        means of the per-row losses.
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
    # observation weights (a RowWeightedLoss over the m stacked rows): each group's weights are
    # solved with the fitted rows' own weights, and every amount is scored by the weighted
    # mean of all rows' losses, the loss the weight stage minimises
    weighted = hasattr(loss, "restricted")
    combined: list = [None] * len(grid)
    totals = np.zeros(len(grid))
    for g in np.unique(groups):
        scored = groups == g
        fitted = ~np.isin(rows, rows[scored])
        fit_loss = loss.restricted(np.flatnonzero(fitted)) if weighted else loss
        w_hat = solve_weights(P[fitted], y[fitted], fit_loss, active=active).weights
        for i, amount in enumerate(grid):
            w = shrink_toward(w_hat, target, amount)
            predicted = loss.combine(P[scored][:, active], w[active])
            if weighted:
                if combined[i] is None:
                    combined[i] = np.empty((len(y),) + predicted.shape[1:])
                combined[i][scored] = predicted
            else:
                totals[i] += loss.pointwise(y[scored], predicted).sum()
    if weighted:
        risks = np.array([loss.pointwise(y, predicted).mean() for predicted in combined])
    else:
        risks = totals / len(y)
    return Shrinkage(grid[int(np.argmin(risks))], grid, risks)
