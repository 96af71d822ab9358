"""Least-squares candidates: out-of-fold predictions from fold Gram matrices.

The naive approach refits ``sm.OLS`` for every candidate in every fold. Here
one pass over row chunks gives every fold's moments (counts, means, centred
cross products of the columns and y; :mod:`pearlstats.engines.moments`), each
fold's training Gram matrix ``Z'Z`` and ``Z'y`` of the standardised columns
``Z`` follow from the other folds' moments, and each candidate solves a small
system on its index set for all K folds at once. Predictions for all candidates of a fold are then
a single matrix product. For leave-one-out without ridge the hat-matrix
diagonal gives the exact jackknife predictions from one fit per candidate.

Candidates with at least as many parameters as training rows (and no ridge)
are recorded as infeasible before anything is formed, and the Gram matrix
covers only the columns the feasible candidates use: a 20 000-column TF-IDF
block that no feasible candidate can use costs nothing. When even those
columns are too many for one dense Gram matrix (:data:`MAX_SYSTEM_BYTES`),
each candidate gets its own.

The results equal per-fold ``sm.OLS`` predictions to rounding; the tests check
this to 1e-8. The ridge penalty is described in :mod:`pearlstats.engines._common`.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..backends.chunks import row_chunks
from ..backends.columns import Scratch
from ..ledger import LedgerEntry
from ._common import (
    MAX_SYSTEM_BYTES,
    RANK_TOLERANCE,
    EngineOutput,
    ScaledDesign,
    check_ridge,
    one_blas_thread,
    too_wide_entry,
    unfit_entry,
)
from .moments import (
    FoldMoments,
    chunk_columns,
    design_from_moments,
    fold_and_row_moments,
    fold_groups,
    fold_moments,
    fold_ranges,
    fold_segments,
    standardised_systems,
    training_penalty_weights,
)

if TYPE_CHECKING:
    from ..design.candidates import Candidate

__all__ = ["ols_cv_predict", "ols_loo_predict", "ols_fit", "solve_candidate_systems",
           "candidate_design"]



# Columns centred within this many SDs of 0 are predicted without subtracting their centre.
_NEAR_CENTRE = 8.0

# Elements of the stacked normal-equation matrices solved in one call (16 MB of float64).
BATCH_ELEMENTS = 2_000_000


def _solve_normal(A: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """Solve a batch of SPD systems; None when any is numerically singular."""
    try:
        factor = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    pivots = np.diagonal(factor, axis1=-2, axis2=-1) ** 2
    if np.any(
        pivots < RANK_TOLERANCE * np.diagonal(A, axis1=-2, axis2=-1).max(axis=-1, keepdims=True)
    ):
        return None
    return np.linalg.solve(A, rhs[..., None])[..., 0]


def _solve_normal_batch(A: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``A[k, i] x = rhs[k, i]`` for SPD systems stacked as (K, m, s, s).

    Returns the solutions (K, m, s) and, per system group ``i``, whether any of
    its K systems is numerically singular (those solutions are not to be used).
    """
    K, m, s, _ = A.shape
    flat = A.reshape(K * m, s, s)
    try:
        factor = np.linalg.cholesky(flat)
        pivots = np.diagonal(factor, axis1=-2, axis2=-1) ** 2
        tiny = pivots < RANK_TOLERANCE * np.diagonal(flat, axis1=-2, axis2=-1).max(
            axis=-1, keepdims=True
        )
        singular = tiny.any(axis=-1).reshape(K, m).any(axis=0)
    except np.linalg.LinAlgError:  # some system is not positive definite: find which, one by one
        singular = np.array([_solve_normal(A[:, i], rhs[:, i]) is None for i in range(m)])
    solution = np.zeros((K, m, s))
    ok = ~singular
    if ok.any():
        solution[:, ok] = np.linalg.solve(A[:, ok], rhs[:, ok][..., None])[..., 0]
    return solution, singular


def _solve_penalised(A: np.ndarray, rhs: np.ndarray, weights: np.ndarray, ridge: float):
    """Solve ``(A + ridge * diag(weights)) x = rhs`` for stacked systems (K, m, s, s).

    The systems are solved after symmetric diagonal scaling to unit diagonal,
    ``d = sqrt(diag(A) + ridge * weights)`` formed as a hypotenuse: nothing
    overflows for any finite ridge, and a huge penalty on some coefficients
    does not make the unpenalised intercept look like a rounding-level pivot
    (which sent ``ridge=1e10`` to the unpenalised least-squares fallback).
    Returns the solutions (K, m, s) and which system groups are singular.
    """
    diagonal = np.maximum(np.diagonal(A, axis1=-2, axis2=-1), 0.0)
    root_penalty = np.sqrt(ridge) * np.sqrt(weights)
    d = np.hypot(np.sqrt(diagonal), root_penalty)
    d = np.where(d > 0, d, 1.0)
    scaled = A / (d[..., :, None] * d[..., None, :])
    index = np.arange(A.shape[-1])
    scaled[..., index, index] = (np.sqrt(diagonal) / d) ** 2 + (root_penalty / d) ** 2
    solution, singular = _solve_normal_batch(scaled, rhs / d)
    return solution / d, singular


def _min_norm_coefficients(design: ScaledDesign, X_train: np.ndarray,
                           y_train: np.ndarray) -> np.ndarray:
    """Minimum-norm least squares of a rank-deficient candidate, in *design*'s coordinates.

    With an intercept the columns are centred on the *training* rows' means, not on
    *design*'s all-rows means: a column constant over the training rows (the dummy of a
    level, or a word, seen only in the held-out fold) is then a zero column with
    coefficient 0, as statsmodels' pinv gives a column of zeros. Centred on the all-rows
    means it is a non-zero constant aliased with the intercept, and the minimum-norm split
    between the two moved the held-out rows' predictions by an arbitrary amount.
    """
    if design.intercept is None:
        return np.linalg.lstsq(design.transform(X_train), y_train, rcond=None)[0]
    train_centre = np.where(design.penalized, X_train.mean(axis=0), 0.0)
    local = dataclasses.replace(design, center=train_centre)
    gamma = np.linalg.lstsq(local.transform(X_train), y_train, rcond=None)[0]
    # Z_local = Z + (centre - train_centre) / scale: a constant the intercept absorbs.
    shift = ((design.center - train_centre) / design.scale) @ gamma
    gamma[design.intercept] += shift * design.scale[design.intercept] / design.intercept_value
    return gamma


def _ridge_coefficients(Z: np.ndarray, y: np.ndarray, penalty: np.ndarray,
                        ridge: float) -> np.ndarray:
    """``argmin ||y - Z g||^2 + ridge * sum_j penalty_j g_j^2`` by least squares on the
    augmented rows ``[Z; sqrt(ridge * penalty) I]``.

    For a ridge system the Cholesky factor cannot certify (a tiny ridge on nearly collinear
    columns: condition ~ 1 / ridge): the penalised optimum is unique, and QR on the rows
    keeps the digits the normal equations lose. Minimum-norm least squares without the
    penalty (the rank-deficient fallback) would solve another problem.
    """
    root = np.sqrt(ridge * penalty)
    system = np.vstack([Z, np.diag(root)])
    target = np.concatenate([y, np.zeros(Z.shape[1])])
    return np.linalg.lstsq(system, target, rcond=None)[0]


def _rank_note(label: str, fold) -> LedgerEntry:
    return LedgerEntry(
        label, fold, "cv", "rank deficient",
        "collinear columns in the training rows",
        "minimum-norm least squares on the training rows' standardised columns (scale-free; "
        "along the collinear directions not statsmodels' pinv of the raw columns)", False,
    )


def candidate_design(total: FoldMoments, local: list[np.ndarray]) -> ScaledDesign:
    """Standardisation of the group's columns, centred only if every candidate has the intercept."""
    design = design_from_moments(total)
    if design.intercept is not None and not all(design.intercept in S for S in local):
        design = design_from_moments(total, centre=False)
    return design


def _column_groups(
    candidates, feasible: list[int], width: int
) -> list[tuple[list[int], np.ndarray]]:
    """Candidates sharing one Gram matrix, with its columns.

    All design columns when they fit (the same Gram matrix, hence the same
    rounding, however the candidates are split among parallel workers); else
    the columns the feasible candidates use; else each candidate alone.
    """
    if not feasible:
        return []
    if too_wide_entry("", width, 2) is None:
        return [(feasible, np.arange(width))]
    used = np.unique(np.concatenate([candidates[j].columns for j in feasible]))
    if too_wide_entry("", used.size, 2) is None:
        return [(feasible, used)]
    return [([j], np.unique(candidates[j].columns)) for j in feasible]


def _screen(candidates, n_train: int, ridge: float):
    """Positions of the candidates that can be fitted, a failed mask, the others' ledger rows."""
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    feasible = []
    for j, candidate in enumerate(candidates):
        entry = unfit_entry(candidate.label, candidate.columns.size, n_train, ridge, 2)
        if entry is None:
            feasible.append(j)
        else:
            failed[j] = True
            entries.append(entry)
    return feasible, failed, entries


def ols_cv_predict(
    X: np.ndarray,
    y: np.ndarray,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
    ridge: float = 0.0,
) -> EngineOutput:
    """K-fold out-of-fold predictions of least-squares candidates.

    Parameters
    ----------
    X : ndarray (n, p)
        Full design (covariates then blocks).
    y : ndarray (n,)
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float, default 0
        Minimises ``||y - Xb||^2 / (2 n_train) + ridge / 2 * sum_j (sd_j b_j)^2``
        over the non-intercept coefficients, with ``sd_j`` the column's SD over
        the fold's training rows (see :mod:`pearlstats.engines._common`).

    Returns
    -------
    EngineOutput
        ``predictions`` has shape (n, J).

    Notes
    -----
    Two passes over row chunks (:mod:`pearlstats.engines.moments`): one gives
    every fold's moments, hence the all-rows standardisation, each fold's
    training Gram matrix and its ridge weights; the other predicts each fold's
    rows. The design is read in place; neither pass forms an n-row copy of it.
    Folds whose systems would not fit in memory at once take a pair of passes
    per group of folds.
    """
    ridge = check_ridge(ridge)
    n = len(y)
    n_train = n - np.bincount(folds, minlength=int(folds.max()) + 1)
    J = len(candidates)
    # Recorded before any Gram matrix exists, so infeasible wide blocks are never formed.
    feasible, failed, entries = _screen(candidates, int(n_train.min()), ridge)
    # Every row is in a fold, so each feasible column is written in full; no n x J fill.
    predictions = np.empty((n, J))
    predictions[:, failed] = np.nan
    with one_blas_thread():
        for group, used in _column_groups(candidates, feasible, X.shape[1]):
            _predict_group(X, y, [candidates[j] for j in group], used, folds, ridge, predictions,
                           group, entries)
    return EngineOutput(predictions, failed, entries)


def _fold_sets(K: int, p: int, m: int) -> list[np.ndarray]:
    """Folds whose moments and systems are held at once (all K unless p is large).

    All K folds' moments with their exact complements take about eight (K, q, q)
    arrays; otherwise groups of folds are downdated from the all-rows moments, about
    two (K, q, q) arrays per fold plus the systems of the m candidates.
    """
    q, budget = p + 1, MAX_SYSTEM_BYTES // 4
    if K * 8 * q * (8 * q + m) <= budget:
        return [np.arange(K)]
    step = max(1, budget // (8 * q * (2 * q + m)))
    return [np.arange(first, min(first + step, K)) for first in range(0, K, step)]


def _training_moments(X, y, folds, fold_sets, columns):
    """The all-rows moments and a function giving fold set i's training moments.

    One pass when every fold fits at once (exact complements); otherwise a pass for
    the all-rows moments, one for the training rows' ranges, and one per fold set
    (reading its folds' rows only), each fold downdated from the all-rows moments.
    """
    if len(fold_sets) == 1 and columns is None:
        # The all-rows moments of the refits' Gram matrix come from the same read of the rows.
        moments, rows = fold_and_row_moments(X, y, folds, fold_sets[0])
        _GRAM.store(X, y, rows.total())
        complements = moments.complements().take(np.arange(len(fold_sets[0])))
        return moments.total(), lambda i: complements
    if len(fold_sets) == 1:
        moments = fold_moments(X, y, folds, fold_sets[0], columns)
        complements = moments.complements().take(np.arange(len(fold_sets[0])))
        return moments.total(), lambda i: complements
    total = fold_moments(X, y, None, np.arange(0), columns).total()
    low, high = fold_ranges(X, y, folds, columns)

    def training(i: int) -> FoldMoments:
        held = fold_moments(X, y, folds, fold_sets[i], columns, rest=False)
        return held.take(np.arange(len(fold_sets[i]))).removed_from(
            total, low[fold_sets[i]], high[fold_sets[i]])

    return total, training


def _predict_group(X, y, members, used, folds, ridge, predictions, group, entries) -> None:
    """Out-of-fold predictions of candidates sharing one Gram matrix over *used*.

    Written into *predictions*.
    """
    columns = None if used.size == X.shape[1] else used
    local = [np.searchsorted(used, c.columns) for c in members]
    labels = [c.label for c in members]
    fold_sets = _fold_sets(int(folds.max()) + 1, used.size, len(members))
    total, training = _training_moments(X, y, folds, fold_sets, columns)
    design = candidate_design(total, local)
    for i, fold_set in enumerate(fold_sets):
        train = training(i)
        gram, cross = standardised_systems(train, design)
        penalty = (train.count[:, None] * training_penalty_weights(train, design) if ridge > 0
                   else np.zeros((len(fold_set), used.size)))
        coefs = _solve_folds(design, X, y, (folds, fold_set, used), local, gram, cross, penalty,
                             ridge, labels, entries)
        _predict_folds(X, folds, fold_set, columns, design, coefs, predictions, np.asarray(group))


def _predict_folds(X, folds, fold_set, columns, design, coefs, predictions, group) -> None:
    """Write ``Z @ coefs[g]`` for the rows of fold ``fold_set[g]``, a chunk of rows at a time."""
    # (X - center) @ (coefs / scale): the division moves to the small coefficient matrices.
    # Columns whose centre is within a few SDs of 0 need no subtraction either: X @ b - c'b
    # then loses at most a few bits (the rounding of X @ b is relative to |c| + sd, the
    # predictions vary by sd); farther centres are subtracted row by row.
    scaled = coefs / design.scale[:, None]
    near = np.abs(design.center) <= _NEAR_CENTRE * design.scale
    offset = np.einsum("p,gpm->gm", np.where(near, design.center, 0.0), scaled)
    far = np.where(near, 0.0, design.center)
    every = np.array_equal(group, np.arange(predictions.shape[1]))
    # Every chunk's arrays reuse the same memory: a fresh array per chunk of a few MiB
    # costs its page faults again (glibc returns such blocks to the system when freed).
    scratch = Scratch()
    for rows in row_chunks(len(folds), None, design.scale.size + len(group)):
        order, counts = fold_segments(fold_groups(folds[rows], fold_set), len(fold_set) + 1)
        inside = len(order) - counts[-1]  # rows of the fold set come first in *order*
        X_rows = chunk_columns(X, rows, order[:inside], columns, scratch)
        if np.any(far):
            X_rows -= far
        out = scratch("out", (inside, len(group)))
        starts = np.concatenate([[0], np.cumsum(counts)])
        for g in np.flatnonzero(counts[:-1]):
            segment = slice(starts[g], starts[g + 1])
            np.matmul(X_rows[segment], scaled[g], out=out[segment])
            out[segment] -= offset[g]
        if every and inside == len(order):
            # Back to row order within the chunk, then one contiguous copy: scattering
            # straight into the n x J matrix took 4x as long (random first writes to its pages).
            rows_out = scratch("row order", out.shape)
            rows_out[order] = out
            predictions[rows] = rows_out
        else:
            predictions[np.ix_(rows.start + order[:inside], group)] = out


def solve_candidate_systems(gram: np.ndarray, cross: np.ndarray, penalty: np.ndarray,
                            local: Sequence[np.ndarray],
                            ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """Standardised coefficients of m candidates from F groups' systems.

    Parameters
    ----------
    gram : ndarray (F, p, p)
        ``Z'Z`` of each group's rows (:func:`~pearlstats.engines.moments.standardised_systems`).
    cross : ndarray (F, p)
        ``Z'y``.
    penalty : ndarray (F, p)
        Each group's ridge weights times its row count (zeros without ridge).
    local : sequence of ndarray
        Each candidate's columns (positions in ``range(p)``).
    ridge : float

    Returns
    -------
    coefs : ndarray (F, p, m)
        Zero outside a candidate's columns, and for a candidate whose systems are singular.
    singular : ndarray of bool (m,)
        Candidates with a numerically singular system in some group: the caller solves
        those by minimum-norm least squares (from the rows, or the Gram matrix).
    """
    coefs = np.zeros((gram.shape[0], gram.shape[1], len(local)))
    singular = np.zeros(len(local), dtype=bool)
    same_size: dict[int, list[int]] = {}
    for i, S in enumerate(local):
        same_size.setdefault(S.size, []).append(i)
    # Candidates with the same number of columns are solved together, in one batched
    # Cholesky over (fold, candidate): a few large calls instead of J small ones.
    for size, members in same_size.items():
        step = max(1, BATCH_ELEMENTS // (gram.shape[0] * size * size))
        for start in range(0, len(members), step):
            batch = members[start:start + step]
            index = np.stack([local[i] for i in batch])  # (m, size)
            A = gram[:, index[:, :, None], index[:, None, :]]  # (F, m, size, size)
            beta, bad = _solve_penalised(A, cross[:, index], penalty[:, index], ridge)
            for b, i in enumerate(batch):
                singular[i] = bad[b]
                if not bad[b]:
                    coefs[:, local[i], i] = beta[:, b]
    return coefs, singular


def _solve_folds(design, X, y, where, local, fold_gram, fold_cross, penalty, ridge, labels,
                 entries):
    """Standardised coefficients (F, p, m) of the m candidates in the folds of *where*.

    *where* is ``(folds, fold_set, used)``: the fold labels, the folds solved, the columns.
    """
    folds, fold_set, used = where
    coefs, singular = solve_candidate_systems(fold_gram, fold_cross, penalty, local, ridge)
    for i in np.flatnonzero(singular):
        S = local[i]
        for g, k in enumerate(fold_set):
            train = folds != k
            X_train = X[np.ix_(train, used[S])]
            if ridge > 0:  # a unique penalised optimum the Cholesky could not certify
                coefs[g, S, i] = _ridge_coefficients(design.subset(S).transform(X_train),
                                                     y[train], penalty[g, S], ridge)
            else:
                coefs[g, S, i] = _min_norm_coefficients(design.subset(S), X_train, y[train])
        if ridge > 0:
            continue
        # the folds whose own training rows are collinear, named (the batch's flag is any fold)
        for g, k in enumerate(fold_set):
            one = fold_gram[g][np.ix_(S, S)][None, None]
            if _solve_penalised(one, fold_cross[g][S][None, None], penalty[g, S][None, None],
                                0.0)[1][0] and not any(
                    e.candidate == labels[i] and e.kind == "rank deficient" and e.fold == k
                    for e in entries):
                entries.append(_rank_note(labels[i], int(k)))
    return coefs


def ols_loo_predict(
    X: np.ndarray, y: np.ndarray, candidates: Sequence[Candidate], ridge: float = 0.0
) -> EngineOutput:
    """Exact leave-one-out predictions.

    Without ridge, for the linear smoother ``yhat = H y`` the prediction for
    row i from a fit without row i is ``y_i - e_i / (1 - h_ii)`` (jackknife
    model averaging). With ridge the penalty depends on each fit's training
    rows (their SDs), so no single hat matrix applies; the n fits are then
    those of :func:`ols_cv_predict` with one row per fold.
    """
    ridge = check_ridge(ridge)
    if ridge > 0:
        return ols_cv_predict(X, y, candidates, np.arange(len(y)), ridge)
    n = X.shape[0]
    J = len(candidates)
    predictions = np.full((n, J), np.nan)
    feasible, failed, entries = _screen(candidates, n - 1, ridge)
    if not feasible:
        return EngineOutput(predictions, failed, entries)
    used = np.unique(np.concatenate([candidates[j].columns for j in feasible]))
    design = ScaledDesign.from_design(
        X[:, used], centre=False
    )  # conditioning only: no penalty here
    Xs = design.transform(X[:, used])
    gram = Xs.T @ Xs
    with one_blas_thread():
        for j in feasible:
            S = np.searchsorted(used, candidates[j].columns)
            predictions[:, j], rank_deficient = _loo_one(Xs[:, S], gram[np.ix_(S, S)], y)
            if rank_deficient:
                entries.append(_rank_note(candidates[j].label, None))
    return EngineOutput(predictions, failed, entries)


def _loo_one(XS: np.ndarray, A: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, bool]:
    """Leave-one-out predictions of one unpenalised candidate and whether it was rank deficient
    (also when a row has leverage 1, i.e. its fit without it is)."""
    try:
        factor = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        factor = None
    rank_deficient = factor is None or np.min(np.diag(factor) ** 2) < RANK_TOLERANCE * np.max(
        np.diag(A)
    )
    if rank_deficient:
        # The hat matrix is the projection on the column space.
        basis, singular, _ = np.linalg.svd(XS, full_matrices=False)
        basis = basis[:, singular > singular.max() * max(XS.shape) * np.finfo(float).eps]
        fitted = basis @ (basis.T @ y)
        leverage = np.sum(basis**2, axis=1)
    else:
        half = np.linalg.solve(factor, XS.T).T  # rows of X_S L^{-T}
        leverage = np.sum(half**2, axis=1)
        fitted = XS @ np.linalg.solve(A, XS.T @ y)
    alone = leverage > 1 - 1e-10
    with np.errstate(divide="ignore", invalid="ignore"):
        predictions = y - (y - fitted) / (1 - leverage)
    if alone.any():
        # Only row i informs some direction (a level or a word no other row has): the hat
        # formula divides by 0 there. Refit without the row, as statsmodels' pinv would, which
        # gives that direction coefficient 0; the candidate was dropped before.
        design = ScaledDesign.from_design(XS)
        for i in np.flatnonzero(alone):
            train = np.arange(len(y)) != i
            gamma = _min_norm_coefficients(design, XS[train], y[train])
            predictions[i] = (design.transform(XS[i:i + 1]) @ gamma)[0]
        rank_deficient = True
    return predictions, rank_deficient


class _GramCache:
    """The standardised Gram matrix of the last design seen, for refits of many candidates.

    Refitting J candidates on all rows needs ``Z_S'Z_S`` for each column set S;
    slicing one ``Z'Z`` avoids J copies of ``X[:, S]`` (which for a million
    rows would dominate memory). The value always comes from one pass over all
    rows in row order (its own, or the cross-validation pass's, which computes
    the same moments bit for bit from the same read: :func:`fold_and_row_moments`):
    the cross-validation engine's all-rows moments are added up from its folds'
    (an order set by the fold draw), so reusing those made a refit's last digits
    depend on the folds and, with threads, on which task had filled the cache last.
    The key and the value are stored together as one tuple, replaced by a single
    (atomic) assignment and read once, so threads refitting different designs
    never pair one's key with another's matrix; at worst two threads compute the
    same value.
    """

    def __init__(self):
        self._entry: tuple | None = None

    def get(self, X: np.ndarray, y: np.ndarray):
        key = (id(X), id(y), X.shape, y.shape)
        entry = self._entry
        if entry is not None and entry[0] == key and entry[1]() is X and entry[2]() is y:
            return entry[3]
        return self.store(X, y, fold_moments(X, y, None, np.arange(0)).total())

    def store(self, X: np.ndarray, y: np.ndarray, total: FoldMoments):
        """Remember ``(Z'Z, Z'y, design)`` of all rows of (X, y) from their moments; return it."""
        design = design_from_moments(total)
        gram, cross = standardised_systems(total, design)
        value = (gram[0], cross[0], design)
        if _weakrefable(X) and _weakrefable(y):
            # Weak references make a reused id() of a freed array a cache miss.
            key = (id(X), id(y), X.shape, y.shape)
            self._entry = (key, weakref.ref(X), weakref.ref(y), value)
        return value


def _weakrefable(obj) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


_GRAM = _GramCache()


def ols_fit(X: np.ndarray, y: np.ndarray, columns: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """Coefficients of one candidate on all rows, on the original column scale.

    Minimises ``||y - X_S b||^2 / (2 n) + ridge / 2 * sum_j (sd_j b_j)^2`` over
    the non-intercept coefficients, ``sd_j`` the all-rows SD of column j.
    """
    ridge = check_ridge(ridge)
    S = np.asarray(columns)
    gram, cross, design = _GRAM.get(X, y)
    if design.intercept is not None and design.intercept not in S and np.any(design.center):
        # The cached Gram matrix is centred, which only an intercept can absorb.
        total = fold_moments(X, y, None, np.arange(0), S).total()
        design = design_from_moments(total)
        gram, cross = (value[0] for value in standardised_systems(total, design))
        S_local = np.arange(S.size)
    else:
        design = design.subset(S)
        S_local = S
    A = gram[np.ix_(S_local, S_local)]
    weights = len(y) * design.penalized.astype(float)  # all rows: every standardised SD is 1
    beta, singular = _solve_penalised(
        A[None, None], cross[S_local][None, None], weights[None, None], ridge
    )
    if singular[0] and ridge > 0:  # the penalised optimum, by QR on the augmented rows
        gamma = _ridge_coefficients(design.transform(X[:, S]), y, weights, ridge)
    elif singular[0]:
        gamma = np.linalg.lstsq(design.transform(X[:, S]), y, rcond=None)[0]
    else:
        gamma = beta[0, 0]
    return design.original(gamma)
