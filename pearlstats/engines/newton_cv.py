"""The cross-validation driver shared by the Newton engines (binomial, Poisson, multinomial).

Each fold's training rows get weight 1 and its held-out rows weight 0, so the
K fold problems of one candidate share the same standardised design and are
solved together by :func:`~pearlstats.engines.newton.batched_newton`, started
from the all-rows optimum. The engines differ only in their likelihood, how
they start, predict and report; :class:`NewtonEngine` carries those.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ledger import LedgerEntry
from ._common import (
    EngineOutput, ScaledDesign, check_ridge, fold_penalty_weights, fold_rows, infeasible_entry, too_wide_entry,
)
from .newton import NewtonResult, fold_start, separated_in_every_fold

__all__ = ["NewtonEngine", "newton_cv_predict", "newton_fit"]


@dataclass(frozen=True)
class NewtonEngine:
    """What distinguishes one Newton engine.

    Attributes
    ----------
    per_column : int
        Coefficients per design column (1, or C - 1 for multinomial).
    solve : callable
        ``solve(Z, rows, weights, column_penalty, ridge, intercept, theta0) -> NewtonResult``
        for 0/1 row *weights* (K, n), penalty weights per column (K, s) and the
        intercept's position in Z (or None); *theta0* None means the engine's own start.
    predict : callable
        ``predict(Z_rows, theta) -> predictions`` of one fold (rows,) or (rows, C).
    notes : callable
        ``notes(label, result, fold_ids, stage) -> list of LedgerEntry``.
    """

    per_column: int
    solve: Callable
    predict: Callable
    notes: Callable


def _fold_weights(rows: list[np.ndarray], n: int) -> np.ndarray:
    weights = np.ones((len(rows), n))
    for k, r in enumerate(rows):
        weights[k, r] = 0.0
    return weights


def newton_cv_predict(engine: NewtonEngine, X: np.ndarray, y: np.ndarray, candidates, folds: np.ndarray,
                      ridge: float, tail: tuple = ()) -> EngineOutput:
    """Out-of-fold predictions of every candidate by *engine*; (n, J) + *tail*, NaN where excluded."""
    ridge = check_ridge(ridge)
    rows = fold_rows(folds)
    n = len(y)
    weights = _fold_weights(rows, n)
    n_train_min = int(weights.sum(axis=1).min())
    predictions = np.full((n, len(candidates)) + tail, np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    for j, candidate in enumerate(candidates):
        S = candidate.columns
        size = S.size * engine.per_column
        # Recorded before anything of the candidate is formed: a p > n block costs nothing.
        entry = infeasible_entry(candidate.label, size, n_train_min, ridge)
        entry = entry or too_wide_entry(candidate.label, size, len(rows) + 1)
        if entry is not None:
            failed[j] = True
            entries.append(entry)
            continue
        X_S = X[:, S]
        design = ScaledDesign.from_design(X_S)
        Z = np.ascontiguousarray(design.transform(X_S))
        everything = engine.solve(Z, y, np.ones((1, n)), design.penalized[None].astype(float), ridge,
                                  design.intercept, None)
        if everything.stopped[0]:
            result = separated_in_every_fold(everything, len(rows))
        else:
            penalty = fold_penalty_weights(design, X_S, rows) if ridge > 0 else np.zeros((len(rows), S.size))
            result = engine.solve(Z, y, weights, penalty, ridge, design.intercept, fold_start(everything, len(rows)))
        notes = engine.notes(candidate.label, result, list(range(len(rows))), "cv")
        entries.extend(notes)
        if any(note.excluded for note in notes):
            failed[j] = True
            continue
        for k, r in enumerate(rows):
            predictions[r, j] = engine.predict(Z[r], result.theta[k])
    return EngineOutput(predictions, failed, entries)


def newton_fit(engine: NewtonEngine, X: np.ndarray, y: np.ndarray, columns,
               ridge: float) -> tuple[ScaledDesign, NewtonResult]:
    """Fit one candidate on all rows; the coefficients are on the standardised columns of the design returned."""
    ridge = check_ridge(ridge)
    X_S = X[:, np.asarray(columns)]
    design = ScaledDesign.from_design(X_S)
    Z = np.ascontiguousarray(design.transform(X_S))
    penalty = design.penalized[None].astype(float)
    return design, engine.solve(Z, y, np.ones((1, len(y))), penalty, ridge, design.intercept, None)
