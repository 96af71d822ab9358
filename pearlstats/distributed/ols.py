"""Partition-wise fold moments, and the least-squares candidates solved from them.

One pass over the partitions returns, per fold label, the moments of the
held-out rows' ``[X, y]``: the in-memory engine's
:class:`~pearlstats.engines.moments.FoldMoments` (counts, means and centred
cross products around a common pilot, in per-column power-of-two units),
computed on each partition by :func:`~pearlstats.engines.moments.fold_moments`
a chunk of rows at a time and added up pairwise on the workers by the same
exact update (Chan, Golub & LeVeque) that adds chunks in memory. Every fold's
training moments are the exact complements (prefix and suffix sums over the
other folds, never the total minus the fold); the standardisation, the
standardised systems, the ridge weights and the batched solve are the
in-memory engine's (:mod:`pearlstats.engines.ols`), so a candidate's
coefficients are computed by one code whatever holds the rows. A singular
system gets the minimum-norm solution through the pseudo-inverse of its Gram
matrix (the in-memory engine computes the same solution by ``lstsq`` on the rows).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.partitions import tree_sum
from ..engines._common import ScaledDesign, infeasible_entry, too_wide_entry
from ..engines.moments import (
    FoldMoments,
    design_from_moments,
    fold_moments,
    standardised_systems,
    training_penalty_weights,
)
from ..engines.ols import candidate_design, solve_candidate_systems
from ..ledger import LedgerEntry
from .data import fold_count, partition_inputs

__all__ = [
    "Moments",
    "feasible_candidates",
    "moment_pass",
    "solve_least_squares",
]


@dataclass(frozen=True)
class Moments:
    """The fit's rows' moments of ``[X, y]``, one group per fold label 0..K-1.

    Attributes
    ----------
    folds : FoldMoments
        Group k: the rows of fold k.
    class_sums : ndarray (K, C, p + 1) or None
        Multinomial fits: sums of ``x - pilot`` over each fold's rows of each class (the
        class's codes 0..C-1 among the fit's levels), then the rows' count; a multinomial
        fit starts with every class equally likely, where its gradient is a function of
        these (:func:`pearlstats.distributed.newton._moment_start`).
    """

    folds: FoldMoments
    class_sums: np.ndarray | None = None

    @property
    def labels(self) -> list[int]:
        return list(range(len(self.folds.count)))

    @property
    def p(self) -> int:
        """Columns of the design."""
        return len(self.folds.pilot) - 1

    @property
    def n(self) -> int:
        return int(self.folds.count.sum())

    @functools.cached_property
    def total(self) -> FoldMoments:
        """All rows (one group)."""
        return self.folds.total()

    @functools.cached_property
    def training(self) -> FoldMoments:
        """Group k: every row but fold k's (exact complements)."""
        return self.folds.complements()

    @property
    def n_train(self) -> np.ndarray:
        """Training rows of each fold, then all rows (K + 1,)."""
        return np.append(self.training.count, self.total.count)

    def response_means(self) -> np.ndarray:
        """Mean response of each fold's training rows, then of all rows (K + 1,)."""
        means = np.concatenate([self.training.mean[:, -1], self.total.mean[:, -1]])
        return self.folds.pilot[-1] + means * self.folds.unit[-1]

    def single_response(self) -> np.ndarray:
        """(K,): whether each fold's training rows hold a single response value."""
        return self.training.low[:, -1] == self.training.high[:, -1]

    def design(self, centre: bool) -> ScaledDesign:
        """The in-memory engine's standardisation of the design's columns."""
        return design_from_moments(self.total, centre)

    def systems(self, design: ScaledDesign) -> tuple[np.ndarray, np.ndarray]:
        """``Z'Z`` (K + 1, p, p) and ``Z'y`` (K + 1, p) of each fold's training rows, then
        of all rows."""
        (gram, cross), (all_gram, all_cross) = (standardised_systems(self.training, design),
                                                standardised_systems(self.total, design))
        return np.concatenate([gram, all_gram]), np.concatenate([cross, all_cross])

    def penalties(self, design: ScaledDesign) -> np.ndarray:
        """Ridge weights on the standardised coefficients (K + 1, p): each column's variance
        over each fold's training rows, then over all rows."""
        return np.concatenate([training_penalty_weights(self.training, design),
                               training_penalty_weights(self.total, design)])


def _moment_part(frame, blocks, offset, spec, family, fold_spec, pilot, env, levels=None):
    X, y, folds = partition_inputs(frame, blocks, offset, spec, family, fold_spec, env)
    K = fold_count(fold_spec)
    moments = fold_moments(X, y.astype(float), folds, np.arange(K), rest=False,
                           pilot=pilot).take(np.arange(K))
    if levels is None:
        return moments
    C, p = len(levels), X.shape[1]
    group = folds * C + np.minimum(np.searchsorted(levels, y), C - 1)  # (fold, class code)
    sums = np.empty((K * C, p + 1))
    for j in range(p):
        sums[:, j] = np.bincount(group, weights=X[:, j] - pilot[j], minlength=K * C)
    sums[:, p] = np.bincount(group, minlength=K * C)
    return {"folds": moments, "class_sums": sums.reshape(K, C, p + 1)}


def moment_pass(
    rows: Any, spec: Any, family: str, fold_spec: Any, pilot: np.ndarray, env: Any,
    levels: np.ndarray | None = None,
) -> Moments:
    """One pass: the per-fold moments of the design and response.

    *pilot* is the centre of the design's columns and then the response (a centre of
    the columns alone takes 0 for the response); every partition's moments are taken
    around it, so they add up exactly. With the multinomial's sorted class *levels* (from
    the class pass, which has checked every value is among them) the pass also sums the
    design by fold and class (:attr:`Moments.class_sums`).
    """
    pilot = np.asarray(pilot, dtype=float)
    if len(pilot) == len(spec.column_names):
        pilot = np.append(pilot, 0.0)
    total = tree_sum(rows.tasks(_moment_part, spec, family, fold_spec, pilot, env, levels))
    if levels is None:
        return Moments(total)
    return Moments(total["folds"], total["class_sums"])


def _rank_note(label: str) -> LedgerEntry:
    return LedgerEntry(
        label,
        None,
        "cv",
        "rank deficient",
        "collinear columns in the training rows",
        "solved by minimum-norm least squares (pseudo-inverse of the Gram matrix)",
        False,
    )


def to_original(design: ScaledDesign, columns: np.ndarray, gamma: np.ndarray, p: int) -> np.ndarray:
    """Coefficients on all p original columns (0 outside *columns*) from standardised ones
    (*gamma* (s,), or (s, m): one column per class)."""
    b = np.zeros((p,) + gamma.shape[1:])
    b[columns] = design.subset(columns).original(gamma)
    return b


def feasible_candidates(
    candidates: Any, n_train_min: int, ridge: float, unknowns: int, intercept: int | None,
    per_column: int = 1,
) -> tuple:
    """Candidates that can be fitted, and ledger rows for the others.

    Parameters
    ----------
    candidates : sequence of Candidate
    n_train_min : int
        The fewest training rows of any fold.
    ridge : float
    unknowns : int
        Problems solved per candidate (the size check of the systems).
    intercept : int or None
        Position of the intercept column (its candidates are centred).
    per_column : int
        Coefficients per column (C - 1 for multinomial).

    Returns
    -------
    feasible : list of int
        Positions of the candidates that can be fitted.
    plans : list of (ndarray, bool)
        Their columns, and whether they are centred (they hold the intercept).
    failed : ndarray of bool (J,)
    entries : list of LedgerEntry
    """
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    feasible, plans = [], []
    for j, candidate in enumerate(candidates):
        S = np.asarray(candidate.columns)
        size = S.size * per_column
        entry = infeasible_entry(candidate.label, size, n_train_min, ridge)
        entry = entry or too_wide_entry(candidate.label, size, unknowns)
        if entry is not None:
            failed[j] = True
            entries.append(entry)
            continue
        feasible.append(j)
        plans.append((S, bool(intercept is not None and intercept in S)))
    return feasible, plans, failed, entries


def solve_least_squares(m: Moments, candidates: Any, ridge: float) -> tuple:
    """Coefficients of every candidate in every fold and on all rows.

    The in-memory engine's solve (:func:`~pearlstats.engines.ols.solve_candidate_systems`)
    on the fold moments' standardised systems.

    Returns
    -------
    coefs : ndarray (K + 1, p, J)
        Original-scale coefficients; slot K is the refit on all rows.
    failed : ndarray of bool (J,)
    entries : list of LedgerEntry
    """
    K, J, p = len(m.labels), len(candidates), m.p
    coefs = np.zeros((K + 1, p, J))
    feasible, plans, failed, entries = feasible_candidates(
        candidates, int(m.n_train[:-1].min()), ridge, 2, None)
    if not feasible:
        return coefs, failed, entries
    local = [S for S, _ in plans]
    design = candidate_design(m.total, local)
    gram, cross = m.systems(design)
    penalty = (m.n_train[:, None] * m.penalties(design) if ridge > 0
               else np.zeros((K + 1, p)))
    beta, singular = solve_candidate_systems(gram, cross, penalty, local, ridge)
    for i, (j, S) in enumerate(zip(feasible, local)):
        if singular[i]:
            for k in range(K + 1):
                A = gram[k][np.ix_(S, S)] + ridge * np.diag(penalty[k, S])
                beta[k, S, i] = np.linalg.pinv(A, hermitian=True) @ cross[k, S]
            entries.append(_rank_note(candidates[j].label))
        for k in range(K + 1):
            coefs[k, :, j] = to_original(design, S, beta[k, S, i], p)
    return coefs, failed, entries
