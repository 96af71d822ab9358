"""The honest risks of a fit on dask data: nested cross-validation computed on the partitions.

The rule is that of :func:`pearlstats.nested.nested_cross_validation` for folds given as
labels, which a dask fit's folds are (hashed row positions, or a fold column: either way a
fixed group of rows): the K folds are shuffled by ``SeedSequence([seed, 0])`` and dealt to
``min(outer, K)`` outer folds (:func:`~pearlstats.nested.deal_groups`), and inside outer
fold k the training rows keep their folds, renumbered, as inner folds. So
``pearlstats.fit(..., cv=<the same labels>, seed=seed, honest=outer).honest`` in memory is
the same table.

For each outer fold the whole procedure is re-run on its training rows by
:func:`~pearlstats.distributed.fit.fit_partitions` with a relabelling fold spec
(:func:`~pearlstats.distributed.data.relabel_folds`: the held-out folds map to -1 and every
pass leaves those rows out): the inner cross-validation, the PEARL weights, every baseline's
choice (:func:`~pearlstats.weights.baselines.strategy_weights`) and the candidates refitted on
the training rows. One more pass scores every held-out row with its outer fold's models and
returns, per partition, the row count, means and centred cross products of the held-out
losses of PEARL, each baseline and the intercept-only model (fitted on the outer training
rows); they are merged exactly on the client and give the table of
:func:`~pearlstats.nested.paired_ratio_table` (:func:`~pearlstats.nested.paired_ratio_moments`).
Each re-run also takes one pass over its training rows for its candidates' log-likelihoods (the
AICc and BIC strategies' weights). Nothing of size n leaves the workers; the cost is ``outer``
fits plus one pass each, plus the scoring pass.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..backends.threads import one_blas_thread
from ..exceptions import FoldError
from ..nested import _ledger_frame, deal_groups, paired_ratio_moments, with_gap_columns
from ..weights.baselines import STRATEGIES, TABLE_ROWS, combine, strategy_weights
from ..weights.certificate import gap_table
from ..weights.information import criteria, log_likelihood, n_parameters
from .data import fold_count, partition_inputs, relabel_folds
from .fit import fit_partitions
from .multinomial import class_codes, oof_probabilities
from .oof import oof_predictions
from .shrinkage import shrink_fit

__all__ = ["OuterFits", "held_out_rows", "honest_partitions", "honest_table", "new_row_predictions",
           "outer_fits", "outer_fold_of_folds"]


def outer_fold_of_folds(fold_spec: Any, outer: int | str, seed: int, n: int) -> np.ndarray:
    """The outer fold of each of the fit's folds (``"loo"``: one fold at a time).

    Parameters
    ----------
    fold_spec : tuple
        The dask fit's folds (``("hash", K, seed)`` or ``("column", name, levels)``).
    outer : int >= 2 or "loo"
    seed : int
        The outer folds' seed (``SeedSequence([seed, 0])``, as in memory).
    n : int
        Rows of the data (*outer* may not exceed them, as in memory).

    Raises
    ------
    FoldError
        *outer* is not an int from 2 to n, nor ``"loo"``.

    Examples
    --------
    >>> outer_fold_of_folds(("hash", 5, 0), 3, seed=0, n=100).tolist()
    [0, 1, 0, 2, 1]
    """
    K = fold_count(fold_spec)
    if isinstance(outer, str) and outer == "loo":
        return np.arange(K)
    if isinstance(outer, bool) or not isinstance(outer, (int, np.integer)) or not 2 <= outer <= n:
        raise FoldError(f"honest={outer!r} is not understood here; use an int from 2 to {n} "
                        "(outer folds: the fit's folds are dealt to them) or 'loo'")
    return deal_groups(K, int(outer), np.random.SeedSequence([seed, 0]))


def _check_training_folds(dealt: np.ndarray) -> None:
    """Refuse outer folds whose training rows hold fewer than 2 of the fit's folds.

    The procedure re-run there cross-validates on those folds, so it needs two; found here,
    before any pass, rather than as a fold error of the re-run's first pass.

    Raises
    ------
    FoldError
        Naming the outer folds, the folds they keep, and what would do.
    """
    K, n_outer = len(dealt), int(dealt.max()) + 1
    kept = K - np.bincount(dealt, minlength=n_outer)
    short = np.flatnonzero(kept < 2)
    if short.size == 0:
        return
    remedy = (f"fit with more folds (cv) or use honest={K} (one fold per outer fold)" if K > 2
              else "fit with 3 folds or more (cv)")
    raise FoldError(
        f"the fit's {K} folds dealt to {n_outer} outer folds leave the training rows of outer "
        f"fold(s) {short.tolist()} only {kept[short].min()} fold(s); the procedure re-run there "
        f"needs at least 2 for its cross-validation: {remedy}"
    )


def _outer_procedure(rows, spec, family, loss, fold_spec, dealt, k, everything, n_pool, ridge,
                     centre, shrinkage) -> tuple:
    """The procedure re-run without outer fold *k*: its training-row refits (p, J), every
    strategy's weights (strategies, J), the intercept-only model, the weight solve (before
    any shrinkage: its certificate), its ledger rows and passes, and the classes
    (multinomial; else None)."""
    train = np.flatnonzero(dealt != k)
    mapping = np.full(len(dealt), -1)
    mapping[train] = np.arange(train.size)  # the training rows' folds, renumbered in order
    inner = relabel_folds(fold_spec, mapping)
    fitted = fit_partitions(rows, spec, family, loss, inner, everything, n_pool, ridge, centre)
    solve = fitted.solution
    fitted = shrink_fit(rows, spec, family, loss, inner, fitted, everything[:n_pool], shrinkage)
    weights = strategy_weights(fitted.solution.weights, everything, n_pool, fitted.risk,
                               fitted.failed,
                               _training_criteria(rows, spec, family, inner, fitted, everything,
                                                  n_pool))
    return (fitted.coefs[-1], np.array([weights[name] for name in STRATEGIES]),
            fitted.mean_response, solve,
            # the re-run's refits (its training-row fits, which score the held-out rows) are
            # done with it: their notes belong to its ledger now, as honest_table says
            _ledger_frame(fitted.entries + fitted.refit_entries, f"inside outer fold {k}"),
            fitted.passes + 1, fitted.classes)


def _training_llf_part(frame, blocks, offset, spec, kind, fold_spec, env, coefs, classes):
    """One partition's training rows: their count and, per candidate, the sum of their
    log-densities under its training refit *coefs* (gaussian: of its squared residuals)."""
    X, y, _ = partition_inputs(frame, blocks, offset, spec, kind, fold_spec, env)
    if classes is not None:
        y = class_codes(y, classes)
    P = _candidate_outputs(X, np.zeros(len(y), dtype=int), coefs[None], kind, classes)
    if kind == "gaussian":
        return len(y), ((y[:, None] - P) ** 2).sum(axis=0)
    return len(y), np.array([log_likelihood(kind, y, P[:, j]) for j in range(P.shape[1])])


def _training_criteria(rows: Any, spec: Any, family: Any, fold_spec: Any, fitted: Any,
                       everything: list, n_pool: int) -> dict | None:
    """AICc and BIC of the pool's candidates refitted on an outer fold's training rows (the
    in-memory :func:`pearlstats.nested._training_criteria`), from one pass over them."""
    from dask import compute

    if not family.likelihood:
        return None
    parts = compute(*rows.tasks(_training_llf_part, spec, family.name, fold_spec, None,
                                fitted.coefs[-1], fitted.classes))
    n = sum(part[0] for part in parts)
    sums = np.sum([part[1] for part in parts], axis=0)
    llf = (-0.5 * n * (np.log(2 * np.pi * sums / n) + 1.0) if family.name == "gaussian"
           else sums)
    outside = np.asarray(fitted.failed, dtype=bool) | (np.arange(len(everything)) >= n_pool)
    n_classes = 2 if fitted.classes is None else len(fitted.classes)
    k = [n_parameters(family.name, c.n_params, n_classes) for c in everything]
    return criteria(np.where(outside, np.nan, llf), np.array(k), float(n))


def _score_part(frame, blocks, offset, spec, kind, fold_spec, env, dealt, refits, weights, null,
                loss, levels):
    """Row count, means and centred cross products of one partition's held-out losses
    (columns: the strategies, then the intercept-only model). *levels*: the multinomial
    classes (None for the other families)."""
    X, y, folds = partition_inputs(frame, blocks, offset, spec, kind, fold_spec, env)
    outer = dealt[folds]
    if levels is None:
        P = oof_predictions(X, outer, list(range(len(refits))), refits, kind)
    else:  # class codes and class probabilities (rows, J, C)
        y = class_codes(y, levels)
        P = oof_probabilities(X, outer, list(range(len(refits))), refits)
    losses = np.empty((len(y), len(TABLE_ROWS)))
    for k in np.unique(outer):
        r = outer == k
        for s in range(len(STRATEGIES)):
            losses[r, s] = loss.row_losses(y[r], combine(P[r], weights[k, s], loss))
        # the intercept-only model: a mean, or class frequencies, for every held-out row
        losses[r, -1] = loss.row_losses(y[r], np.tile(null[k], (int(r.sum()),) + (1,) * np.ndim(
            null[k])) if np.ndim(null[k]) else np.full(int(r.sum()), null[k]))
    mean = losses.mean(axis=0)
    centred = losses - mean
    return len(y), mean, centred.T @ centred


def _merge(parts: list) -> tuple[int, np.ndarray, np.ndarray]:
    """Chan et al.'s exact merge of per-partition (count, means, centred cross products)."""
    n = sum(part[0] for part in parts)
    mean = sum(part[0] * part[1] for part in parts) / n
    M2 = sum(part[2] + part[0] * np.outer(part[1] - mean, part[1] - mean) for part in parts)
    return n, mean, M2


def honest_partitions(rows: Any, spec: Any, family: Any, loss: Any, fold_spec: Any,
                      everything: list, n_pool: int, ridge: float, centre: np.ndarray,
                      outer: int | str = 5, seed: int = 0,
                      shrinkage: tuple | None = None) -> pd.DataFrame:
    """Honest risk of PEARL and every baseline by nested cross-validation on the partitions.

    Parameters
    ----------
    rows : DaskRows
    spec : DesignSpec
    family, loss : Family, Loss
        The fit's (the family configured with its separation policy).
    fold_spec : tuple
        The fit's folds.
    everything : list of Candidate
        The pool's candidates, then the baseline-only ones.
    n_pool : int
    ridge : float
    centre : ndarray (p + 1,) or (p,)
        The pilot centre of the design's columns and the response, as for the fit
        (:func:`~pearlstats.distributed.ols.moment_pass`).
    outer : int or "loo", default 5
        Outer folds: the fit's folds are dealt to ``min(outer, K)`` of them.
    seed : int, default 0
        The fit's seed.
    shrinkage : tuple, optional
        The fit's ``(weight_shrinkage, shrinkage_target)``: each re-run shrinks its weights
        as the fit did (:mod:`pearlstats.distributed.shrinkage`).

    Returns
    -------
    DataFrame
        Rows PEARL, MS, SA-FRL, SA-cand, Fusion, Best, AICc, BIC, Covariates and Null;
        columns ``risk``, ``se``
        (SD / sqrt(n) of the held-out row losses), ``ratio`` (PEARL's risk / the row's),
        ``ratio_se`` (paired delta method), ``kkt_gap`` and ``certified``: the in-memory
        ``res.honest`` (``honest_se="naive"``) of the fit with ``cv=`` the same fold labels.
        ``attrs``: ``"excess_over_ms"``, PEARL's risk minus MS's and its paired SE (the
        in-memory warning when the first exceeds the second); ``"failures"``, the ledger
        rows of the re-runs (``where``: ``"inside outer fold k"``, their refits included);
        ``"passes"``, the passes over the data it took.

    Raises
    ------
    FoldError, AllCandidatesFailedError
        As the in-memory nested cross-validation (then ``res.honest`` is None, with the reason).
    """
    fits = outer_fits(rows, spec, family, loss, fold_spec, everything, n_pool, ridge, centre,
                      outer, seed, shrinkage)
    return honest_table(fits, rows, spec, family, loss, fold_spec)


@dataclass(frozen=True)
class OuterFits:
    """The procedure re-run without each outer fold (what the honest risk and CV+ share).

    Attributes
    ----------
    dealt : ndarray of int (K,)
        The outer fold of each of the fit's folds.
    refits : ndarray (K_outer, p, J) or (K_outer, p, J, C - 1)
        Every candidate refitted on each outer fold's training rows.
    weights : ndarray (K_outer, strategies, J)
        Each strategy's weights (:data:`~pearlstats.weights.baselines.STRATEGIES`) per fold.
    null : ndarray (K_outer,) or (K_outer, C)
        The intercept-only model of each outer training set.
    solutions, ledgers : list
        Each re-run's PEARL weight solve and ledger rows.
    passes : int
    classes : ndarray or None
        Multinomial: the classes.
    """

    dealt: np.ndarray
    refits: np.ndarray
    weights: np.ndarray
    null: np.ndarray
    solutions: list
    ledgers: list
    passes: int
    classes: np.ndarray | None


def outer_fits(rows: Any, spec: Any, family: Any, loss: Any, fold_spec: Any, everything: list,
               n_pool: int, ridge: float, centre: np.ndarray, outer: int | str,
               seed: int, shrinkage: tuple | None = None) -> OuterFits:
    """Re-run the procedure without each outer fold (arguments as :func:`honest_partitions`)."""
    dealt = outer_fold_of_folds(fold_spec, outer, seed, rows.n)
    _check_training_folds(dealt)
    n_outer = int(dealt.max()) + 1
    # The outer folds' re-runs are independent: run from client threads, their passes overlap on
    # the workers (a pass costs a round trip however small its partitions); each fold's numbers
    # do not depend on the others', and .result() in fold order raises the first fold's error.
    # One BLAS thread around them all: the threads' own one-thread contexts (tasks run in them
    # under the synchronous scheduler) then save and restore 1, never each other's limits.
    with one_blas_thread(), ThreadPoolExecutor(max_workers=n_outer) as pool:
        futures = [pool.submit(_outer_procedure, rows, spec, family, loss, fold_spec, dealt, k,
                               everything, n_pool, ridge, centre, shrinkage)
                   for k in range(n_outer)]
        fits = [future.result() for future in futures]
    refits, weights, null, solutions, ledgers, passes, classes = (list(c) for c in zip(*fits))
    return OuterFits(dealt, np.stack(refits), np.stack(weights), np.array(null), solutions,
                     ledgers, int(sum(passes)), classes[0])


def honest_table(fits: OuterFits, rows: Any, spec: Any, family: Any, loss: Any,
                 fold_spec: Any) -> pd.DataFrame:
    """The honest table of :func:`honest_partitions` from the re-runs: one scoring pass."""
    from dask import compute

    parts = compute(*rows.tasks(_score_part, spec, family.name, fold_spec, None, fits.dealt,
                                fits.refits, fits.weights, fits.null, loss, fits.classes))
    n, mean, M2 = _merge(list(parts))
    names = list(TABLE_ROWS)
    table = paired_ratio_moments(names, n, mean, M2, loss_name=loss.name)
    table = with_gap_columns(table, gap_table(fits.solutions, [
        f"outer fold {k}" for k in range(len(fits.solutions))]))
    a, b = names.index("PEARL"), names.index("MS")
    spread = M2[a, a] - 2.0 * M2[a, b] + M2[b, b]
    table.attrs["excess_over_ms"] = (float(mean[a] - mean[b]),
                                     float(np.sqrt(max(spread, 0.0) / (n - 1) / n)))
    table.attrs["failures"] = pd.concat(fits.ledgers, ignore_index=True)
    table.attrs["passes"] = fits.passes + 1
    return table


def _candidate_outputs(X: np.ndarray, outer: np.ndarray, refits: np.ndarray, kind: str,
                       classes: np.ndarray | None) -> np.ndarray:
    """Each row's candidate predictions (rows, J[, C]) by its outer fold's refits."""
    labels = list(range(len(refits)))
    if classes is None:
        return oof_predictions(X, outer, labels, refits, kind)
    return oof_probabilities(X, outer, labels, refits)


def _held_out_part(frame, blocks, offset, spec, kind, fold_spec, env, dealt, refits, pearl,
                   loss, classes):
    """One partition's response, outer folds and PEARL's held-out predictions."""
    X, y, folds = partition_inputs(frame, blocks, offset, spec, kind, fold_spec, env)
    if classes is not None:
        y = class_codes(y, classes)
    outer = dealt[folds]
    P = _candidate_outputs(X, outer, refits, kind, classes)
    held_out = np.empty((len(y),) + P.shape[2:])
    for k in np.unique(outer):
        r = outer == k
        held_out[r] = combine(P[r], pearl[k], loss)
    return y, outer, held_out


def held_out_rows(fits: OuterFits, rows: Any, spec: Any, family: Any, loss: Any,
                  fold_spec: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The response, outer fold and PEARL's held-out prediction of every row, in row order.

    One pass; the three n-row arrays are gathered on the client (CV+ ranks them all).
    """
    from dask import compute

    pearl = fits.weights[:, list(STRATEGIES).index("PEARL")]
    parts = compute(*rows.tasks(_held_out_part, spec, family.name, fold_spec, None, fits.dealt,
                                fits.refits, pearl, loss, fits.classes))
    return tuple(np.concatenate(column) for column in zip(*parts))


def new_row_predictions(fits: OuterFits, X_new: np.ndarray, kind: str, loss: Any) -> np.ndarray:
    """Each outer fold's PEARL prediction of new design rows: (K_outer, m[, C])."""
    pearl = fits.weights[:, list(STRATEGIES).index("PEARL")]
    columns = []
    for k in range(len(fits.refits)):
        P = _candidate_outputs(X_new, np.full(len(X_new), k), fits.refits, kind, fits.classes)
        columns.append(combine(P, pearl[k], loss))
    return np.stack(columns)
