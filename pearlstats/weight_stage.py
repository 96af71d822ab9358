"""The weight stage over one or more fold draws, optionally shrunk toward a target.

``fit(cv_repeats=R, weight_shrinkage=..., shrinkage_target=...)`` solves its weights from
R fold draws' out-of-fold predictions stacked row-wise, then shrinks them; the nested
(honest) risk and the refitting bootstrap re-run the procedure with the same options, so
their numbers describe the procedure the fit used. All three call these functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .engines._common import EngineOutput
from .exceptions import OptionError
from .families import EncodedResponse
from .ledger import LedgerEntry
from .stages import cross_validate, solve_stage_weights
from .weights.row_weighted import RowWeightedLoss
from .weights.shrinkage import (
    SHRINKAGE_TARGETS,
    SIZE_RULE_CONSTANT,
    choose_shrinkage,
    shrink_toward,
    size_shrinkage,
    target_weights,
)
from .weights.solvers import WeightSolution, check_on_simplex

if TYPE_CHECKING:
    from .design.candidates import Candidate
    from .families import Family
    from .stages import FitState
    from .weights.losses import Loss

__all__ = [
    "cross_validate_draws",
    "pool_target",
    "shrinkage_note",
    "shrunk_solution",
    "size_rule",
    "solve_draw_weights",
    "solve_stored_weights",
    "fit_name",
    "with_candidate_ridges",
]


def with_candidate_ridges(family: Family, candidates: Sequence[Candidate], output: EngineOutput,
                          ridge: float) -> Family:
    """The family remembering the ridges the CV chose above *ridge* (separated candidates).

    The refits of those candidates on the same rows (all rows, statsmodels) then use them;
    re-runs on other rows choose their own (:func:`cross_validate_draws`).
    """
    if output.ridges is None or not np.any(output.ridges > ridge):
        return family
    chosen = {c.label: float(r) for c, r in zip(candidates, output.ridges) if r > ridge}
    return family.configured(candidate_ridges=chosen)


def cross_validate_draws(
    family: Family,
    X: np.ndarray,
    response: EncodedResponse,
    candidates: Sequence[Candidate],
    draws: Sequence[np.ndarray],
    *,
    loo: bool,
    ridge: float,
    n_jobs: int | None = None,
) -> tuple[list[EngineOutput], Family]:
    """Out-of-fold predictions of every fold draw, each candidate with one ridge in all of them.

    The separation ridges are chosen on these rows: *family*'s ``candidate_ridges`` (those a
    fit chose on all its rows) are set aside, so a re-run of the procedure on some of the rows
    (an outer training set, a bootstrap resample) chooses the ridges ``pearlstats.fit`` on
    those rows would, and a ridge only the other rows needed does not leak into it. Each
    draw starts from the ridges the earlier ones chose; the draws that ran with a smaller
    ridge than the last draw's are re-run with it.

    Returns
    -------
    outputs : list of EngineOutput
        One per draw.
    family : Family
        *family* remembering the ridges chosen for separated candidates.
    """
    outputs = []
    family = family.configured(candidate_ridges={})
    for folds in draws:
        outputs.append(cross_validate(family, X, response, candidates, folds, loo=loo, ridge=ridge,
                                      n_jobs=n_jobs))
        family = with_candidate_ridges(family, candidates, outputs[-1], ridge)
    final = outputs[-1].ridges
    for r, out in enumerate(outputs[:-1]):
        if final is not None and np.any(out.ridges < final):
            outputs[r] = cross_validate(family, X, response, candidates, draws[r], loo=loo,
                                        ridge=ridge, n_jobs=n_jobs)
    return outputs, family


def _combined_outputs(outputs: Sequence[EngineOutput]) -> tuple[EngineOutput, EngineOutput]:
    """Draw 0's output (failures of any draw marked) and every draw stacked row-wise."""
    failed = np.logical_or.reduce([out.failed for out in outputs])
    entries = list(dict.fromkeys(entry for out in outputs for entry in out.entries))
    ridges = outputs[-1].ridges
    if len(outputs) == 1:
        # One draw: mark its failures in place (their values mean nothing) rather than copy
        # the n x J matrix twice.
        first = stacked = outputs[0].predictions
        if failed.any():
            if not first.flags.writeable:  # a fit's frozen output, re-solved: not its own
                first = stacked = first.copy()
            first[:, failed] = np.nan
        return (EngineOutput(first, failed, entries, ridges),
                EngineOutput(stacked, failed, entries, ridges))
    first = outputs[0].predictions.copy()
    first[:, failed] = np.nan
    stacked = np.concatenate([out.predictions for out in outputs], axis=0)
    return (EngineOutput(first, failed, entries, ridges),
            EngineOutput(stacked, failed, entries, ridges))


def solve_draw_weights(
    outputs: Sequence[EngineOutput],
    y: np.ndarray,
    pool: Sequence[Candidate],
    draws: Sequence[np.ndarray],
    loss: Loss,
    shrinkage: tuple | None,
    *,
    warn_failures: bool = True,
    context: str | None = None,
    record: list | None = None,
    cv_fallback: float | None = None,
) -> tuple[EngineOutput, WeightSolution, list[LedgerEntry]]:
    """The weight stage over the fold draws (stacked rows), optionally shrunk to a target.

    Parameters
    ----------
    outputs : sequence of EngineOutput
        One per fold draw (:func:`cross_validate_draws`).
    y : ndarray
        The encoded response of the rows (once; it is tiled over the draws).
    pool : sequence of Candidate
        The candidates the weights are over (the first columns of the outputs).
    draws : sequence of ndarray
        The fold codes of each draw (the groups of the shrinkage amount's CV). With one
        draw, rows coded -1 (no split tests them) are left out of the weights.
    loss : Loss
    shrinkage : tuple or None
        ``(amount, target)``, see :class:`~pearlstats.stages.WeightOptions`.
    warn_failures, context
        As for :func:`~pearlstats.stages.solve_stage_weights`.
    record : list, optional
        Receives the simplex solve's own WeightSolution (before any shrinkage), whose
        ``kkt_gap`` certifies it (:mod:`pearlstats.weights.certificate`).
    cv_fallback : float, optional
        The amount ``"cv"`` takes where the rows have a single test split (a re-solve
        passes the fit's amount); without it that is refused (OptionError).

    Returns
    -------
    output : EngineOutput
        Draw 0's predictions with the failures of every draw marked.
    solution : WeightSolution
    entries : list of LedgerEntry
    """
    output, stacked = _combined_outputs(outputs)
    if len(draws) == 1 and len(draws[0]) and np.min(draws[0]) < 0:
        # Splits that test some rows only (fold -1: never tested): the weights use the others.
        rows = np.flatnonzero(draws[0] >= 0)
        stacked = EngineOutput(stacked.predictions[rows], stacked.failed, stacked.entries,
                               stacked.ridges)
        y, draws = y[rows], [draws[0][rows]]
        loss = loss.restricted(rows) if hasattr(loss, "restricted") else loss
    labels = [candidate.label for candidate in pool]
    y_stacked = y if len(draws) == 1 else np.tile(y, len(draws))  # no copy for one draw
    # the size rule's n: the observations the rows count as (with frequency weights their
    # sum); the stacked copies of repeated fold draws are the same rows
    nobs = loss.effective_rows(len(y))
    if hasattr(loss, "restricted"):  # observation weights: a row's copies keep its weight
        loss = loss.restricted(np.tile(np.arange(len(y)), len(draws)))
    solution, entries = solve_stage_weights(stacked, len(labels), y_stacked, loss, labels,
                                            warn_failures=warn_failures,
                                            context=context)
    if record is not None:
        record.append(solution)
    if shrinkage is not None:
        K = int(draws[0].max()) + 1
        groups = np.concatenate([folds + r * K for r, folds in enumerate(draws)])
        rows = np.tile(np.arange(len(y)), len(draws))
        solution, note = _shrink(solution, stacked, pool, y_stacked, loss, shrinkage, groups, rows,
                                 nobs, cv_fallback)
        entries.append(note)
    return output, solution, entries


def fit_name(state: FitState) -> str:
    """How warnings name a fit: ``"the binomial fit of 'high ~ block(pca)'"``."""
    return f"the {state.family.name} fit of {state.design.spec.formula.formula!r}"


def solve_stored_weights(state: FitState, rows: np.ndarray, name: str | None = None,
                         record: list | None = None,
                         counts: np.ndarray | None = None) -> np.ndarray:
    """The fit's weight stage re-run on the stored out-of-fold predictions of some rows.

    The weights of the pool on the rows *rows* (a fold's complement, a bootstrap
    resample), shrunk as the fit's were: the same target, and the amount given,
    re-chosen by cross-validation over the rows' own folds, or set by the size
    rule from their number. The stored predictions are those of draw 0, so with
    ``cv_repeats`` the re-solve uses that draw alone.

    Parameters
    ----------
    state : FitState
    rows : ndarray of int
        Row positions; repeats allowed (a bootstrap resample's copies share
        their fold, so the shrinkage's cross-validation never scores a row on
        weights fitted with its copy).
    name : str, optional
        The re-solve's name (``"fold 2"``), for a convergence warning.
    record : list, optional
        Receives the solve's WeightSolution (see :func:`solve_draw_weights`).
    counts : ndarray, optional
        Frequency weights of *rows* in place of the fit's (a resample of frequency-weighted
        rows: how often each row was drawn).

    Returns
    -------
    ndarray (J,)
        Weights of the pool's candidates.
    """
    pool = state.candidates.pool
    output = state.output
    sample = EngineOutput(output.predictions[rows], output.failed, [], output.ridges)
    loss = state.loss
    if counts is not None:  # a row drawn k times counts k times
        loss = RowWeightedLoss(loss.family, getattr(loss, "base", loss), counts, "frequency")
    elif hasattr(loss, "restricted"):  # observation weights: those of the rows re-solved
        loss = loss.restricted(rows)
    _, solution, _ = solve_draw_weights([sample], state.response.y[rows], pool,
                                        [state.folds[rows]], loss,
                                        state.weight_options.shrinkage, warn_failures=False,
                                        context=f"in re-solve {name!r} of {fit_name(state)}",
                                        record=record, cv_fallback=fit_shrinkage_amount(state))
    return solution.weights[:len(pool)]


def fit_shrinkage_amount(state: FitState) -> float | None:
    """The shrinkage amount the fit's weights were shrunk by, or None."""
    return state.solution.shrinkage


def _shrink(solution, stacked, pool, y, loss, shrinkage, groups, rows, nobs: float,
            fallback: float | None = None):
    """Weights shrunk toward the target over the candidates that did not fail; a ledger note.
    An amount ``"cv"`` over a single validation group takes *fallback* (a re-solve: the fit's
    amount), else is refused."""
    amount, target = shrinkage
    P = stacked.predictions[:, :len(pool)]
    active = ~stacked.failed[:len(pool)]
    u = pool_target(target, pool, active)
    how = "given"
    if amount == "cv" and np.unique(groups).size < 2:
        # one validation group (a single test split): no amount can be cross-validated
        if fallback is None:
            raise OptionError(
                "weight_shrinkage='cv' chooses the amount by cross-validation over the test "
                "splits' out-of-fold predictions, which needs at least 2 test splits, and these "
                "rows have 1 (a single test split: a holdout); give weight_shrinkage='size' or "
                "an amount in [0, 1], or a splitter with 2 or more test splits")
        amount, how = fallback, ("the fit's amount: these rows have a single test split, over "
                                 "which no amount can be cross-validated")
    elif amount == "cv":
        chosen = choose_shrinkage(P, y, loss, groups, rows, active, target=u)
        amount, how = chosen.amount, "chosen by cross-validation over the out-of-fold predictions"
    elif amount == "size":
        amount, how = size_rule(active, nobs)
    weights = check_on_simplex(shrink_toward(solution.weights, u, amount))
    objective = float(loss.pointwise(y, loss.combine(P[:, active], weights[active])).mean())
    return (shrunk_solution(solution, weights, objective, float(amount)),
            shrinkage_note(target, u, amount, how))


def pool_target(target: str | Mapping[str, float], pool: Sequence[Candidate],
                active: np.ndarray) -> np.ndarray:
    """The shrinkage target's weights over the pool (zero where a candidate failed)."""
    single = np.array([len(c.blocks) == 1 and c.label == c.blocks[0] for c in pool])
    return target_weights(target, [c.label for c in pool], single, active)


def size_rule(active: np.ndarray, n: float) -> tuple[float, str]:
    """The ``"size"`` amount for the candidates that did not fail and *n* labeled observations
    (:func:`~pearlstats.observation_weights.effective_nobs`: with frequency weights their sum),
    and how the ledger says it was set."""
    J = int(active.sum())
    return (size_shrinkage(J, n),
            f"min(1, {SIZE_RULE_CONSTANT:g} J / n) with J = {J} candidates, n = {n:g} rows")


def shrunk_solution(solution: WeightSolution, weights: np.ndarray,
                    objective: float, amount: float | None = None) -> WeightSolution:
    """*solution* with its weights shrunk by *amount*: their *objective*, and the KKT gap that
    bounds how far it is above the simplex optimum (the solve's own gap plus the objective's
    increase)."""
    gap = objective - solution.objective + solution.kkt_gap
    return dataclasses.replace(solution, weights=weights, objective=objective, kkt_gap=gap,
                               solver=f"{solution.solver}, shrunk", shrinkage=amount)


def shrinkage_note(target: str | Mapping[str, float], u: np.ndarray, amount: float,
                   how: str) -> LedgerEntry:
    """The failure ledger's row saying the weights were shrunk, toward what and how much."""
    return LedgerEntry(
        "(all)", None, "weights", "shrinkage",
        f"weights shrunk toward {_target_text(target, u)}",
        f"shrinkage amount {amount:g} ({how})", False,
    )


def _target_text(target, u: np.ndarray) -> str:
    """The ledger's words for the shrinkage target."""
    if isinstance(target, str):
        return f"{SHRINKAGE_TARGETS[target]}: {int((u > 0).sum())} candidates"
    return f"the given weights on {int((u > 0).sum())} candidates that did not fail"
