"""Partition-wise moments and Gram matrices, and the least-squares candidates solved from them.

One pass over the partitions returns, per fold label, the held-out rows'
count, column sums, Gram matrix ``X'X``, ``X'y`` and ``y'y`` of the design
shifted by a pilot centre (the first partition's column means, so the sums do
not lose digits to large column means), plus column minima, maxima and
largest absolute values. Every fold's training statistics are the totals
minus its own; the standardisation of the in-memory engine
(:class:`~pearlstats.engines._common.ScaledDesign`: centred by the all-rows
means when the candidate has the intercept, scaled by the all-rows SDs) and
its fold penalty weights follow from them, and each candidate's K systems are
solved on the client by the in-memory engine's own penalised solver
(:func:`pearlstats.engines.ols._solve_penalised`). A singular system gets
the minimum-norm solution through the pseudo-inverse of the Gram matrix
(the in-memory engine computes the same solution by ``lstsq`` on the rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.partitions import tree_sum
from ..engines._common import ScaledDesign, infeasible_entry, too_wide_entry
from ..engines.ols import _solve_penalised
from ..ledger import LedgerEntry
from .data import partition_inputs

__all__ = [
    "Moments",
    "feasible_candidates",
    "moment_pass",
    "scaled_design",
    "solve_least_squares",
]


@dataclass(frozen=True)
class Moments:
    """All-rows and per-fold sums of the (pilot-centred) design, and the column ranges.

    Attributes
    ----------
    pilot : ndarray (p,)
        The centre ``c0`` the sums are taken around.
    folds : dict of int -> dict
        Per fold label: ``n``, ``s`` (sums of X - c0), ``G`` (Gram of X - c0),
        ``r`` ((X - c0)'y), ``sy``, ``syy``.
    low, high, big : ndarray (p,)
        Column minima, maxima and largest absolute values over all rows.
    """

    pilot: np.ndarray
    folds: dict
    low: np.ndarray
    high: np.ndarray
    big: np.ndarray

    @property
    def labels(self) -> list[int]:
        return sorted(self.folds)

    def total(self, key: str) -> np.ndarray:
        return sum(self.folds[k][key] for k in self.labels)

    def training(self, key: str, k: int) -> np.ndarray:
        return self.total(key) - self.folds[k][key]

    @property
    def n(self) -> int:
        return int(self.total("n"))


def _moment_part(frame, blocks, offset, spec, family, fold_spec, pilot, env):
    X, y, folds = partition_inputs(frame, blocks, offset, spec, family, fold_spec, env)
    Xc = X - pilot
    big = np.abs(X).max(axis=0, initial=0.0)  # initial: a partition whose rows are all left out
    # (min, max) pairs combine by minimum and maximum: the largest |value| rides as (-big, big)
    out = {"range": (X.min(axis=0, initial=np.inf), X.max(axis=0, initial=-np.inf)),
           "big": (-big, big), "folds": {}}
    for k in np.unique(folds):
        r = folds == k
        part = Xc[r]
        out["folds"][int(k)] = {
            "n": int(r.sum()),
            "s": part.sum(axis=0),
            "G": part.T @ part,
            "r": part.T @ y[r],
            "sy": float(y[r].sum()),
            "syy": float(y[r] @ y[r]),
        }
    return out


def moment_pass(
    rows: Any, spec: Any, family: str, fold_spec: Any, pilot: np.ndarray, env: Any
) -> Moments:
    """One pass: the per-fold moments of the design and response."""
    total = tree_sum(rows.tasks(_moment_part, spec, family, fold_spec, pilot, env))
    return Moments(pilot, total["folds"], total["range"][0], total["range"][1], total["big"][1])


def scaled_design(m: Moments, centre: bool) -> ScaledDesign:
    """The in-memory engine's standardisation of the design, from the moments."""
    n = m.n
    shift = m.total("s") / n
    mean = m.pilot + shift
    var = np.maximum(np.diagonal(m.total("G")) / n - shift**2, 0.0)
    constant = m.high == m.low
    sd = np.where(constant, 0.0, np.sqrt(var))
    scale = np.where(sd > 0, sd, np.where(m.big > 0, m.big, 1.0))
    candidates = np.flatnonzero(constant & (m.high != 0))
    intercept = int(candidates[0]) if candidates.size else None
    penalized = np.ones(len(scale), dtype=bool)
    center = np.zeros(len(scale))
    value = 1.0
    if intercept is not None:
        penalized[intercept] = False
        value = float(m.high[intercept])
        if centre:
            center = np.where(penalized, mean, 0.0)
    return ScaledDesign(center, scale, penalized, intercept, value)


def standardised_gram(m: Moments, design: ScaledDesign, k: int | None) -> np.ndarray:
    """``Z'Z``, ``Z'y`` and the row count of fold k's training rows (all rows for None)."""

    def get(key):
        return m.total(key) if k is None else m.training(key, k)

    n, s, G, r, sy = get("n"), get("s"), get("G"), get("r"), get("sy")
    delta = design.center - m.pilot  # (X - center) = (X - c0) - delta
    gram = G - np.outer(s, delta) - np.outer(delta, s) + n * np.outer(delta, delta)
    cross = r - delta * sy
    return gram / np.outer(design.scale, design.scale), cross / design.scale, float(n)


def training_penalty(m: Moments, design: ScaledDesign, k: int | None) -> np.ndarray:
    """Ridge weights on standardised coefficients: each column's training-row variance."""
    if k is None:
        return design.penalized.astype(float)
    n = m.training("n", k)
    mean = m.training("s", k) / n
    var = np.maximum(np.diagonal(m.training("G", k)) / n - mean**2, 0.0) / design.scale**2
    constant = m.high == m.low
    return np.where(design.penalized, np.where(constant, 1.0, var), 0.0)


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

    Returns
    -------
    coefs : ndarray (K + 1, p, J)
        Original-scale coefficients; slot K is the refit on all rows.
    failed : ndarray of bool (J,)
    entries : list of LedgerEntry
    """
    labels = m.labels
    K, J, p = len(labels), len(candidates), len(m.pilot)
    n_train_min = int(min(m.n - m.folds[k]["n"] for k in labels))
    coefs = np.zeros((K + 1, p, J))
    designs = {centre: scaled_design(m, centre) for centre in (True, False)}
    feasible, plans, failed, entries = feasible_candidates(
        candidates, n_train_min, ridge, 2, designs[True].intercept
    )
    systems = {
        centre: [standardised_gram(m, designs[centre], k) for k in [*labels, None]]
        for centre in (True, False)
    }
    penalties = {
        centre: [training_penalty(m, designs[centre], k) for k in [*labels, None]]
        for centre in (True, False)
    }
    for j, (S, centre) in zip(feasible, plans):
        candidate = candidates[j]
        design = designs[centre]
        A = np.stack([g[np.ix_(S, S)] for g, _, _ in systems[centre]])[:, None]
        rhs = np.stack([c[S] for _, c, _ in systems[centre]])[:, None]
        weights = np.stack([n * w[S] for (_, _, n), w in zip(systems[centre], penalties[centre])])[
            :, None
        ]
        beta, singular = _solve_penalised(A, rhs, weights, ridge)
        beta = beta[:, 0]
        if singular[0]:
            beta = np.stack(
                [np.linalg.pinv(A[k, 0], hermitian=True) @ rhs[k, 0] for k in range(K + 1)]
            )
            entries.append(_rank_note(candidate.label))
        for k in range(K + 1):
            coefs[k, :, j] = to_original(design, S, beta[k], p)
    return coefs, failed, entries
