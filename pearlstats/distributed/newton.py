"""Distributed Newton for binomial and Poisson candidates: one pass per Newton evaluation.

Every candidate's K fold problems and its all-rows refit are stacked into one
batch of ``J (K + 1)`` problems, padded to the widest candidate (padded
coordinates have gradient 0 and an identity Hessian, so they never move), and
handed to the in-memory engine's :func:`~pearlstats.engines.newton.penalised_newton`.
Its objective is a distributed pass: each partition returns, per problem, the
sum over its training rows of the negative log-likelihood, its gradient and
(when asked) its Hessian on the candidate's standardised columns, and the
largest training ``|eta|`` (for the separation check); one reduction per
evaluation. The likelihood, standardisation, ridge weights, start and
separation rule are the in-memory engine's (:mod:`pearlstats.engines.glm`),
so the optima agree to the Newton tolerance.

Unlike the in-memory engine, which fits the all-rows problem first and starts
the folds there, all problems start together (from 0, or the training mean for
a Poisson intercept): fewer passes over the data for the same optima. A
separated fold is detected from its own rows (in memory, a separated all-rows
fit marks every fold separated without fitting them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from ..engines._common import infeasible_entry, too_wide_entry
from ..engines.glm import SEPARATION_ETA, SEPARATION_MIN_ITER, SEPARATION_STEP, _notes
from ..engines.newton import NewtonResult, penalised_newton
from ..ledger import LedgerEntry
from .data import partition_design, partition_folds, partition_response
from .ols import scaled_design, to_original, training_penalty, tree_sum

__all__ = ["mean_of", "newton_coefficients"]

_MAX_ETA = 700.0


def mean_of(kind: str, eta: np.ndarray) -> np.ndarray:
    """The family's mean for linear predictors *eta* (as the in-memory engine predicts)."""
    return expit(eta) if kind == "binomial" else np.exp(np.minimum(eta, _MAX_ETA))


def _newton_part(frame, blocks, offset, spec, kind, fold_spec, env, labels, plan, theta, order):
    X = partition_design(spec, frame, blocks)
    y = partition_response(spec, kind, frame, env)
    folds = partition_folds(frame, offset, len(y), fold_spec)
    K1 = len(labels) + 1
    w = np.ones((len(y), K1))
    w[:, :-1] = folds[:, None] != np.asarray(labels)[None, :]
    Z = {centre: (X - center) / scale for centre, (center, scale) in plan["designs"].items()}
    Q, d = theta.shape
    f, emax = np.zeros(Q), np.zeros(Q)
    g = np.zeros((Q, d)) if order >= 1 else None
    H = np.zeros((Q, d, d)) if order >= 2 else None
    for jj, (S, centre) in enumerate(plan["candidates"]):
        ZS = np.ascontiguousarray(Z[centre][:, S])
        s, rows = S.size, slice(jj * K1, (jj + 1) * K1)
        eta = ZS @ theta[rows, :s].T  # (m, K + 1)
        if kind == "binomial":
            loss = np.logaddexp(0.0, eta) - y[:, None] * eta
            mu = expit(eta)
            var = mu * (1.0 - mu)
        else:
            mu = np.exp(np.minimum(eta, _MAX_ETA))
            loss, var = mu - y[:, None] * eta, mu
        f[rows] = np.sum(w * loss, axis=0)
        emax[rows] = np.max(np.where(w > 0, np.abs(eta), 0.0), axis=0)
        if order >= 1:
            g[rows, :s] = (ZS.T @ (w * (mu - y[:, None]))).T
        if order >= 2:
            for k in range(K1):
                H[jj * K1 + k, :s, :s] = (ZS * (w[:, k] * var[:, k])[:, None]).T @ ZS
    return {"f": f, "g": g, "H": H, "emax": (-emax, emax)}


class _Objective:
    """The batched loss for penalised_newton; remembers the last pass for the separation check."""

    def __init__(self, rows, args, n_train, sizes, d):
        self.rows, self.args, self.n_train, self.d = rows, args, n_train, d
        self.padding = np.zeros((len(n_train), d), dtype=bool)
        for q, s in enumerate(sizes):
            self.padding[q, s:] = True
        self.last = (None, None)
        self.passes = 0

    def run(self, theta, order):
        spec, kind, fold_spec, env, labels, plan = self.args
        self.passes += 1
        total = tree_sum(
            self.rows.tasks(_newton_part, spec, kind, fold_spec, env, labels, plan, theta, order)
        )
        self.last = (theta.copy(), total["emax"][1])
        return total

    def __call__(self, theta, order):
        total = self.run(theta, order)
        f = total["f"] / self.n_train
        if order == 0:
            return f
        g = total["g"] / self.n_train[:, None]
        if order == 1:
            return f, g
        H = total["H"] / self.n_train[:, None, None]
        q, i = np.nonzero(self.padding)
        H[q, i, i] = 1.0
        return f, g, H

    def eta_max(self, theta):
        if self.last[0] is None or not np.array_equal(self.last[0], theta):
            self.run(theta, 0)
        return self.last[1]


def _feasible(candidates, n_train: np.ndarray, ridge: float, K: int, intercept):
    """Candidates that can be fitted (and their column plans), and ledger rows for the others."""
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    feasible, plan_candidates = [], []
    for j, candidate in enumerate(candidates):
        S = np.asarray(candidate.columns)
        entry = infeasible_entry(candidate.label, S.size, int(n_train[:-1].min()), ridge)
        entry = entry or too_wide_entry(candidate.label, S.size, K + 2)
        if entry is not None:
            failed[j] = True
            entries.append(entry)
            continue
        feasible.append(j)
        plan_candidates.append((S, bool(intercept is not None and intercept in S)))
    return feasible, plan_candidates, failed, entries


def newton_coefficients(
    rows: Any,
    spec: Any,
    kind: str,
    fold_spec: Any,
    moments: Any,
    candidates: Any,
    ridge: float,
    env: Any,
) -> tuple:
    """Coefficients of every binomial / Poisson candidate in every fold and on all rows.

    Returns
    -------
    coefs : ndarray (K + 1, p, J)
        Original-scale coefficients; slot K is the refit on all rows.
    failed : ndarray of bool (J,)
    entries : list of LedgerEntry
    passes : int
        Distributed passes the Newton iterations took.
    """
    labels = moments.labels
    K, J, p = len(labels), len(candidates), len(moments.pilot)
    n_train = np.array(
        [moments.n - moments.folds[k]["n"] for k in labels] + [moments.n], dtype=float
    )
    designs = {centre: scaled_design(moments, centre) for centre in (True, False)}
    intercept = designs[True].intercept
    feasible, plan_candidates, failed, entries = _feasible(candidates, n_train, ridge, K, intercept)
    coefs = np.zeros((K + 1, p, J))
    if not feasible:
        return coefs, failed, entries, 0
    d = max(S.size for S, _ in plan_candidates)
    Q = len(feasible) * (K + 1)
    theta0, penalty = np.zeros((Q, d)), np.zeros((Q, d))
    sizes = np.repeat([S.size for S, _ in plan_candidates], K + 1)
    mean_y = np.array([moments.training("sy", k) for k in labels] + [moments.total("sy")]) / n_train
    for jj, (S, centre) in enumerate(plan_candidates):
        design = designs[centre]
        for k, label in enumerate([*labels, None]):
            q = jj * (K + 1) + k
            penalty[q, : S.size] = training_penalty(moments, design, label)[S]
            if kind == "poisson" and centre:
                where = int(np.flatnonzero(S == intercept)[0])
                theta0[q, where] = np.log(max(mean_y[k], 1e-8)) / (
                    design.intercept_value / design.scale[intercept]
                )
    plan = {
        "designs": {c: (designs[c].center, designs[c].scale) for c in designs},
        "candidates": plan_candidates,
    }
    objective = _Objective(
        rows, (spec, kind, fold_spec, env, labels, plan), np.tile(n_train, len(feasible)), sizes, d
    )

    def separated(theta, step, iteration):
        if kind != "binomial" or ridge > 0 or iteration < SEPARATION_MIN_ITER:
            return np.zeros(theta.shape[0], dtype=bool)
        return (objective.eta_max(theta) > SEPARATION_ETA) & (
            np.abs(step).max(axis=1) > SEPARATION_STEP
        )

    result = penalised_newton(objective, theta0, ridge, penalty, stop=separated)
    for jj, j in enumerate(feasible):
        block = slice(jj * (K + 1), (jj + 1) * (K + 1))
        sub = NewtonResult(
            result.theta[block],
            result.converged[block],
            result.stopped[block],
            result.singular[block],
            result.iterations,
        )
        folds_only = NewtonResult(
            sub.theta[:K], sub.converged[:K], sub.stopped[:K], sub.singular[:K], sub.iterations
        )
        notes = _notes(candidates[j].label, folds_only, list(range(K)), "cv")
        notes += _notes(
            candidates[j].label,
            NewtonResult(
                sub.theta[K:], sub.converged[K:], sub.stopped[K:], sub.singular[K:], sub.iterations
            ),
            [None],
            "refit",
        )
        entries.extend(notes)
        if any(note.excluded for note in notes):
            failed[j] = True
            continue
        S, centre = plan_candidates[jj]
        for k in range(K + 1):
            coefs[k, :, j] = to_original(designs[centre], S, sub.theta[k, : S.size], p)
    return coefs, failed, entries, objective.passes
