"""``weight_shrinkage`` on dask data: the weight stage's shrinkage, its scores from passes.

In memory (:func:`pearlstats.weight_stage.solve_draw_weights`) the simplex weights
``w`` are shrunk toward a target ``u`` by ``(1 - lam) w + lam u``, and the amount
``lam`` is given, set by the size rule from the rows' count, or chosen by
cross-validation over the out-of-fold predictions: for each fold the weights are
re-solved on the other folds' rows and every amount of
:data:`~pearlstats.weights.shrinkage.SHRINKAGE_GRID` is scored on the fold's rows
(:func:`~pearlstats.weights.shrinkage.choose_shrinkage`). Here the same rule runs on
the stored fold fits of a dask fit: the re-solves are weight solves of relabelled fold
specs (the scored fold's rows left out of every pass), one pass scores every amount
on every fold (``fold_scores``), and one more gives the shrunk weights' objective.
The target, the size rule, the shrunk solution and its ledger row are the in-memory
stage's own functions.

The rows the weights are solved on are the folds *kept* (all of them for the fit; a
fold's complement for the stability re-solves), so the amount of a re-solve is
re-chosen on its own rows, as in memory.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..weight_stage import pool_target, shrinkage_note, shrunk_solution, size_rule
from ..weights.shrinkage import SHRINKAGE_GRID, shrink_toward
from ..weights.solvers import check_on_simplex
from .data import relabel_folds
from .fit import PartitionFit, solve_partition_weights, stored_oof

__all__ = ["shrink_fit", "shrink_partition_weights"]


def _kept_spec(fold_spec: Any, kept: np.ndarray) -> tuple:
    """The fold spec that leaves the rows of the folds not *kept* out of every pass."""
    return relabel_folds(fold_spec, np.where(kept, np.arange(len(kept)), -1))


def _chosen_amount(rows, spec, family, loss, fold_spec, fitted, n_pool, kept, u) -> tuple:
    """The amount with the lowest cross-validated loss over the kept folds' rows, and the
    passes it took."""
    K, grid = len(kept), np.asarray(SHRINKAGE_GRID)
    W = np.zeros((K, grid.size, n_pool))
    passes = 1
    for k in np.flatnonzero(kept):
        others = kept.copy()
        others[k] = False
        oof = stored_oof(rows, spec, family, _kept_spec(fold_spec, others), fitted)
        n = int(fitted.fold_rows[others].sum())
        w_hat, more = solve_partition_weights(oof, loss, n, fitted.failed, n_pool)
        passes += more
        W[k] = [shrink_toward(w_hat, u, amount) for amount in grid]
    oof = stored_oof(rows, spec, family, _kept_spec(fold_spec, kept), fitted)
    risks = oof.only(np.arange(n_pool)).fold_scores(loss, W).sum(axis=0)
    return float(grid[int(np.argmin(risks))]), passes


def shrink_partition_weights(rows: Any, spec: Any, family: Any, loss: Any, fold_spec: Any,
                             fitted: PartitionFit, pool: list, solution: Any,
                             shrinkage: tuple, kept: np.ndarray | None = None) -> tuple:
    """The weight *solution* of the kept folds' rows shrunk as ``weight_shrinkage`` says.

    Parameters
    ----------
    rows, spec, family, loss, fold_spec
        The dask fit's rows, design spec, family, weights' loss and folds.
    fitted : PartitionFit
        Its stored fold fits (out-of-fold predictions are recomputed from them).
    pool : list of Candidate
        The weighted candidates (the first columns of the fit).
    solution : WeightSolution
        The simplex solve on the kept folds' rows.
    shrinkage : tuple
        ``(amount, target)``: a number in [0, 1], ``"size"`` or ``"cv"``, and the target.
    kept : ndarray of bool (K,), optional
        The folds whose rows the weights were solved on (default all).

    Returns
    -------
    solution : WeightSolution
        Shrunk, with its objective and KKT gap.
    note : LedgerEntry
    passes : int
        Passes over the data it took.
    """
    K, n_pool = len(fitted.labels), len(pool)
    kept = np.ones(K, dtype=bool) if kept is None else np.asarray(kept, dtype=bool)
    amount, target = shrinkage
    active = ~fitted.failed[:n_pool]
    u = pool_target(target, pool, active)
    n = int(fitted.fold_rows[kept].sum())
    how, passes = "given", 1
    if amount == "cv":
        amount, more = _chosen_amount(rows, spec, family, loss, fold_spec, fitted, n_pool, kept,
                                      u)
        how, passes = "chosen by cross-validation over the out-of-fold predictions", 1 + more
    elif amount == "size":
        amount, how = size_rule(active, n)
    weights = check_on_simplex(shrink_toward(solution.weights, u, amount))
    oof = stored_oof(rows, spec, family, _kept_spec(fold_spec, kept), fitted)
    objective = float(oof.only(np.arange(n_pool)).fold_scores(
        loss, np.broadcast_to(weights, (K, 1, n_pool))).sum()) / n
    note = shrinkage_note(target, u, amount, how)
    return shrunk_solution(solution, weights, objective, float(amount)), note, passes


def shrink_fit(rows: Any, spec: Any, family: Any, loss: Any, fold_spec: Any,
               fitted: PartitionFit, pool: list, shrinkage: tuple | None) -> PartitionFit:
    """*fitted* with its weights shrunk (and the ledger row saying so); unchanged for None."""
    if shrinkage is None:
        return fitted
    solution, note, passes = shrink_partition_weights(rows, spec, family, loss, fold_spec,
                                                      fitted, pool, fitted.solution, shrinkage)
    return replace(fitted, solution=solution, entries=[*fitted.entries, note],
                   passes=fitted.passes + passes)
