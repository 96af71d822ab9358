"""Multinomial logistic candidates: batched Newton fits over all folds at once.

The parametrisation is statsmodels' ``MNLogit``: class 0 is the reference, and
each other class c has a coefficient vector; the parameter matrix has shape
(p, C - 1). Fits agree with ``sm.MNLogit`` where it converges.

Small-valued inputs such as kernel-PCA scores make unscaled Newton steps
overflow; the design is standardised first (:mod:`pearlstats.engines._common`),
and the folds are solved by the driver in :mod:`pearlstats.engines.newton_cv`. Separation is
flagged as for logistic candidates: without a ridge penalty, a fold still
taking large steps after ``SEPARATION_MIN_ITER`` Newton iterations with a training row's
log-odds against its own class beyond ``SEPARATION_ETA``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import blas

from ..ledger import LedgerEntry
from ._common import EngineOutput, one_blas_thread
from .newton import NewtonResult, batched_newton, penalised_newton
from .newton_cg import Preconditioner, newton_cg
from .newton_cv import (
    SEPARATION_ETA,
    NewtonEngine,
    newton_cv_predict,
    newton_fit,
    newton_notes,
    separation_check,
)
from .recession import has_recession_direction
from .standardised import StandardisedColumns, symmetric_from_upper

if TYPE_CHECKING:
    from ..design.candidates import Candidate

__all__ = ["multinomial_cv_predict", "multinomial_fit", "class_probabilities", "log_softmax"]

# Precision of the Hessian products of penalised fits (the (C-1)p-square product per fold that
# dominates a fit). Single precision halves their cost; the gradient stays in double precision,
# so the optimum is unchanged, and the ridge bounds the Hessian's condition number, so steps from
# a Hessian with relative errors of 1e-7 still contract fast. Unpenalised fits keep double
# precision: near separation their Hessians are singular to rounding, and single precision
# changed which fits the separation check flags.
PENALISED_HESSIAN_DTYPE = np.float32

# Hessian reuse (see batched_newton): forming one costs 20-30 gradients on wide designs, so
# chord steps pay even when each shrinks the decrement only 3-fold, for as many steps in a row
# as keep doing so. On Fashion-MNIST with four 10-column blocks this formed 28% fewer Hessians
# than the generic setting (0.01, one chord step per Hessian) and took 1.8 s instead of 2.4 s.
REUSE_CONTRACTION = 0.3
MAX_CHORD = 100

# Precision of the Hessian-vector products of the Newton-CG fits (penalised, and the unpenalised
# fast path). They only steer the steps (the gradient, which decides the optimum and convergence,
# stays double).
HESSP_DTYPE = np.float32

# Penalised fits up to this ridge are solved by preconditioned Newton-CG (_solve_penalised); larger
# ridges by penalised_newton, whose rescaled parametrisation stays conditioned for any ridge.
NEWTON_CG_MAX_RIDGE = 1e3

# Unpenalised fits are tried by Newton-CG (_solve_unpenalised) with at most this many Newton
# steps of at most UNPENALISED_CG_MAX conjugate-gradient iterations; a fit not converged by then
# (separation, near-singular Hessians) is left to the exact Newton path and its checks.
UNPENALISED_CG_STEPS = 30
UNPENALISED_CG_MAX = 60

# The fast path leaves a fit whose training rows reach log-odds beyond this against their own
# class to the exact path. Separated classes drive those log-odds to infinity, and Newton-CG
# can declare convergence on the flat tail (a separating block's fits stopped at 25.7); with
# SEPARATION_ETA (30) as the bound they were taken as optima. Fits with a finite optimum this
# far out are rare, and lose only the speed-up.
FAST_PATH_ETA = 20.0

# Rows per block of the Newton-CG objective's passes (_penalised_objective): the per-class
# temporaries of K = 5 problems and ten classes are then 12 MB, where over all rows at n = 1e6
# they took gigabytes, and touching their fresh pages put a quarter of the fit's time in the
# kernel. At n = 2e5 (ten classes, 31 candidates) the fit took 83 CPU-s (7 in the kernel)
# instead of 111 (22).
ROWS_PER_BLOCK = 32768

# The fold fits' shared preconditioner is the all-rows Hessian at the all-rows optimum, formed
# from every ceil(n / PRECONDITIONER_ROWS)-th row: an (C-1)p-square product over all rows cost
# 69 ms per candidate at n = 2e4 (ten classes, 31 columns) and grows with n, while a sample of
# 4 096 rows made conjugate gradients take 378 instead of 272 iterations over the 31 candidates
# (1.4 CPU-s less in all). It only steers the steps; the optimum is unchanged.
PRECONDITIONER_ROWS = 4096


def _softmax_parts(theta: np.ndarray, XsT: np.ndarray, n_classes: int):
    """Class-major pieces of the softmax for K parameter vectors.

    Returns ``shifted`` (K, C, n), the linear predictors minus each row's
    largest (the reference class's is 0), ``scaled`` = exp(shifted) and
    ``log_total`` (K, n), so that log p = shifted - log_total and
    p = scaled / exp(log_total). The exponential, the costliest step of an
    objective evaluation, is taken once. With the classes on the middle axis
    the reductions over the C classes are elementwise operations on length-n
    rows; over a short last axis they were far slower.
    """
    K, d = theta.shape
    m = n_classes - 1
    shifted = np.empty((K, n_classes, XsT.shape[1]))
    shifted[:, 0] = 0.0
    # one (K m, p) x (p, n) product: faster than K batched ones, also from a transposed view
    shifted[:, 1:] = (theta.reshape(K * m, d // m) @ XsT).reshape(K, m, -1)
    return _softmax_of_shifted(shifted)


def _softmax_of_shifted(shifted: np.ndarray):
    """:func:`_softmax_parts` from the linear predictors (K, C, n) of every class (class 0's
    row 0), which it shifts in place."""
    shifted -= shifted.max(axis=1, keepdims=True)
    scaled = np.exp(shifted)
    return shifted, scaled, np.log(scaled.sum(axis=1))


def log_softmax(eta: np.ndarray) -> np.ndarray:
    """Log class probabilities (..., C, n) of linear predictors (..., C - 1, n), class 0 at 0.

    Class-major, as :func:`_softmax_parts` lays them out; the dask passes' Newton sums and
    out-of-fold probabilities use it too.

    Examples
    --------
    >>> import numpy as np
    >>> np.exp(log_softmax(np.array([[0.0], [np.log(3.0)]]))).ravel().round(6).tolist()
    [0.2, 0.2, 0.6]
    """
    shifted = np.empty(eta.shape[:-2] + (eta.shape[-2] + 1, eta.shape[-1]))
    shifted[..., 0, :] = 0.0
    shifted[..., 1:, :] = eta
    shifted -= shifted.max(axis=-2, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-2, keepdims=True))


def _log_probabilities(theta: np.ndarray, XsT: np.ndarray, n_classes: int) -> np.ndarray:
    """Log class probabilities (K, C, n), class-major."""
    K, d = theta.shape
    m = n_classes - 1
    return log_softmax(np.matmul(theta.reshape(K, m, d // m), XsT))


def class_probabilities(params: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Class probabilities (n, C) from MNLogit-shaped params (p, C - 1)."""
    eta = X @ params
    # numpy operations only (scipy's softmax gathers a lazy dask X into memory)
    eta = np.concatenate([np.zeros_like(eta[:, :1]), eta], axis=1)
    scaled = np.exp(eta - eta.max(axis=1, keepdims=True))
    return scaled / scaled.sum(axis=1, keepdims=True)


def _make_loss(Xs, onehot, weights, n_train, n_classes, hessian_dtype=np.float64):
    """Mean negative log-likelihood for K problems; *weights* are 0/1 row indicators.

    The Hessian products are formed in *hessian_dtype*, everything else in double precision.
    """
    n, s = Xs.shape
    m = n_classes - 1
    XsT = np.ascontiguousarray(Xs.T)
    XsT32 = XsT.astype(hessian_dtype)
    labels = np.ascontiguousarray(onehot.T)  # (C, n)
    train_rows = [np.flatnonzero(w > 0) for w in weights]

    def objective(theta, order):
        shifted, scaled, log_total = _softmax_parts(theta, XsT, n_classes)
        # -log p(own class) = log_total - shifted[own class]
        own = np.einsum("cn,kcn->kn", labels, shifted)
        f = np.einsum("kn,kn->k", weights, log_total - own) / n_train
        if order == 0:
            return f
        prob = scaled[:, 1:] * np.exp(-log_total)[:, None, :]  # (K, m, n)
        resid = weights[:, None, :] * (prob - labels[None, 1:])
        g = np.matmul(resid, Xs).reshape(len(theta), -1) / n_train[:, None]
        if order == 1:
            return f, g
        # H = blockdiag_a(X' diag(p_a) X) - Q Q' with Q = [p_1 x, ..., p_m x] (ms, n_k):
        # one symmetric product per fold instead of m(m+1)/2 small ones.
        H = np.empty((len(theta), m * s, m * s))
        for k in range(len(theta)):
            rows = train_rows[k]
            X_k, p_k = XsT32[:, rows], prob[k][:, rows].astype(hessian_dtype)  # (s, n_k), (m, n_k)
            Q = (p_k[:, None, :] * X_k[None]).reshape(m * s, len(rows))
            H[k] = -(Q @ Q.T)
            diagonal_blocks = np.matmul(Q.reshape(m, s, len(rows)), X_k.T)  # (m, s, s)
            for a in range(m):
                H[k, a * s:(a + 1) * s, a * s:(a + 1) * s] += diagonal_blocks[a]
        H /= n_train[:, None, None]
        return f, g, H

    return objective


def _solve(Xs, codes, n_classes, weights, penalty, ridge, theta0=None, hessian0=None):
    # theta is class-major: one block of the columns' weights per non-reference class.
    penalty = np.tile(penalty, (1, n_classes - 1)) * np.ones((weights.shape[0], 1))
    if 0 < ridge <= NEWTON_CG_MAX_RIDGE:
        return _solve_penalised(Xs, codes, n_classes, weights, penalty, ridge, theta0, hessian0)
    if ridge == 0:
        fast = _solve_unpenalised(Xs, codes, n_classes, weights, theta0)
        if fast is not None:
            return _separated_by_a_level(fast, Xs, codes, n_classes, weights)
        if weights.shape[0] == 1:
            # An all-rows fit the fast path left: the separation rule counts Newton steps from
            # the usual start (zero), not from a nested candidate's optimum.
            theta0 = None
    if theta0 is None:
        theta0 = np.zeros((weights.shape[0], (n_classes - 1) * Xs.shape[1]))
    Xs = _dense(Xs)
    onehot = np.eye(n_classes)[codes]
    n_train = weights.sum(axis=1)
    dtype = PENALISED_HESSIAN_DTYPE if ridge > 0 else np.float64
    loss = _make_loss(Xs, onehot, weights, n_train, n_classes, dtype)

    def extreme_rows(theta):
        logp = _log_probabilities(theta, np.ascontiguousarray(Xs.T), n_classes)
        own = np.einsum("kcn,nc->kn", logp, onehot)
        return np.any((weights > 0) & (own > -np.exp(-SEPARATION_ETA)), axis=1)

    newton = partial(batched_newton, reuse_contraction=REUSE_CONTRACTION, max_chord=MAX_CHORD)
    stop = separation_check(extreme_rows, ridge)
    result = penalised_newton(loss, theta0, ridge, penalty, stop=stop, newton=newton,
                              hessian0=hessian0)
    if ridge == 0 and result.singular.any():
        # A class of a few rows that separates makes the Hessian singular to rounding along the
        # separating direction: the pseudo-inverse steps leave that direction out, stall, and
        # the check above never sees the growing steps of a separation. A singular problem
        # with a training row at probability 1 - e^-30 of its own class is separated, not
        # collinear (a probe: a 2-row class split off by one column, recorded "rank deficient"
        # and kept with weight 1, coefficients of -303 and 124). A singular Hessian of full-rank
        # columns without such a row, and without a class that a hyperplane splits off (below),
        # stays "rank deficient".
        separated = result.singular & ~result.stopped & extreme_rows(result.theta)
        # A class of one (or a few) training rows on the outer boundary of the others is
        # separated too, with no row at the threshold where Newton stopped (the held-out row
        # of that class got a probability of 1e-166, which statsmodels' iterations move by
        # ten orders of magnitude): each class against the rest, by the linear program.
        for k in np.flatnonzero(result.singular & ~result.stopped & ~separated):
            separated[k] = _a_class_separates(Xs, codes, n_classes, weights[k] > 0)
        if separated.any():
            result = dataclasses.replace(result, stopped=result.stopped | separated,
                                         converged=result.converged & ~separated)
    if ridge == 0:
        result = _separated_by_a_level(result, Xs, codes, n_classes, weights)
    return result


def _a_class_separates(Xs, codes: np.ndarray, n_classes: int, training: np.ndarray) -> bool:
    """Whether a hyperplane puts some class's training rows on one side of all others'
    (:func:`~pearlstats.engines.recession.has_recession_direction` of that class against the
    rest): along it the multinomial likelihood rises for ever, the class's coefficients moving
    alone. The classes with the fewest training rows are asked first."""
    rows = _dense(Xs)[training]
    present = codes[training]
    counts = np.bincount(present, minlength=n_classes)
    for c in np.argsort(counts, kind="stable"):
        if counts[c] and has_recession_direction(rows, (present == c).astype(float),
                                                 "binomial"):
            return True
    return False


def _separated_by_a_level(result: NewtonResult, Xs, codes: np.ndarray, n_classes: int,
                          weights: np.ndarray) -> NewtonResult:
    """Mark as separated the problems in which a level of a two-valued column (a categorical
    covariate's indicator) has training rows but none of some class the others have.

    Along that class's coefficient of the indicator (with an intercept, of one minus it for the
    other value) the rows of the level lose that class's probability and gain everything else's:
    the likelihood rises for ever and no estimate exists. Newton stopped at a finite point
    instead (-23 for a level of 6 rows never of class 2, where statsmodels' MNLogit does not
    converge), because the gradient along it vanishes like the probability: the fit was kept,
    with no warning. Columns are read only where their first rows hold at most two values.
    """
    counts = _level_class_counts(Xs, codes, n_classes, weights)
    if counts is None:
        return result
    # (K, columns, 2 sides, C): a side with rows lacking a class its problem's rows have
    present = counts.sum(axis=2, keepdims=True) > 0
    lacking = (counts.sum(axis=3, keepdims=True) > 0) & present & (counts == 0)
    separated = lacking.any(axis=(1, 2, 3)) & ~result.stopped
    if not separated.any():
        return result
    return dataclasses.replace(result, stopped=result.stopped | separated,
                               converged=result.converged & ~separated)


def _level_class_counts(Xs, codes: np.ndarray, n_classes: int,
                        weights: np.ndarray) -> np.ndarray | None:
    """Training rows of each class on each side of every two-valued column, per problem:
    (K, columns, 2, C); None where there is none, or no intercept (a column constant over the
    rows) to make both sides levels of one indicator.

    Only columns whose first rows hold at most two values are read, a block of rows at a
    time (a one-hot block of a million rows is never copied whole).
    """
    n = Xs.shape[0]
    head = Xs[:min(n, 256)]
    narrow = np.array([j for j in range(Xs.shape[1]) if np.unique(head[:, j]).size <= 2],
                      dtype=int)
    if narrow.size == 0:
        return None
    low, high = np.full(narrow.size, np.inf), np.full(narrow.size, -np.inf)
    for rows in _row_blocks(n):
        values = Xs[rows][:, narrow]
        low, high = np.minimum(low, values.min(axis=0)), np.maximum(high, values.max(axis=0))
    if not np.any(low == high):
        return None
    varying = low < high
    low, high, narrow = low[varying], high[varying], narrow[varying]
    two_valued = np.ones(narrow.size, dtype=bool)
    counts = np.zeros((len(weights), narrow.size, 2, n_classes))
    for rows in _row_blocks(n):
        values = Xs[rows][:, narrow]
        two_valued &= np.all((values == low) | (values == high), axis=0)
        cell = ((np.arange(narrow.size) * 2 + (values == high)) * n_classes
                + codes[rows, None])  # (rows, columns): column, side and class of each value
        for k, row_weights in enumerate(weights):
            training = row_weights[rows] > 0
            counts[k] += np.bincount(cell[training].ravel(),
                                     minlength=counts[k].size).reshape(counts[k].shape)
    counts = counts[:, two_valued]
    return counts if counts.shape[1] else None


def _row_blocks(n: int) -> list[slice]:
    """Consecutive blocks of at most ``ROWS_PER_BLOCK`` rows covering ``range(n)``."""
    return [slice(start, min(start + ROWS_PER_BLOCK, n)) for start in range(0, n, ROWS_PER_BLOCK)]


def _dense(Xs) -> np.ndarray:
    """The standardised columns as one (n, s) array.

    The engine is given :class:`~pearlstats.engines.standardised.StandardisedColumns`, which
    form a block of rows when read: the Newton-CG passes read them so, with no n x s copy.
    The exact Newton path and the penalised Hessians multiply whole transposed copies, so
    they take the array (the copy every fit made before).
    """
    return Xs[:] if isinstance(Xs, StandardisedColumns) else Xs


def _in_single_precision(Xs, dtype) -> np.ndarray:
    """``Xs`` in *dtype* (an (n, s) array), formed a block of rows at a time."""
    out = np.empty(Xs.shape, dtype)
    for rows in _row_blocks(len(Xs)):
        out[rows] = Xs[rows]
    return out


def _penalised_objective(Xs, codes, weights, n_classes, ridge, penalty):
    """Penalised mean negative log-likelihood of K problems, its gradient and exact ``H v``.

    A Hessian-vector product costs two products with the design, like the gradient, where
    forming the Hessian costs (C-1)p times more. Every pass reads the rows a block at a time
    (:data:`ROWS_PER_BLOCK`), as transposed views of the C-ordered design: no transposed copy
    of it, and per-class temporaries of one block, not of all n rows. Only the probabilities
    the Hessian-vector products need are kept for all rows, in single precision, with the
    design in single precision that those products read (forming its blocks in each product
    instead cost 40 % more time). The classes are read from their codes (*codes*, (n,) ints),
    not from an (n, C) indicator matrix.

    *Xs* is the candidate's standardised columns: an array, or
    :class:`~pearlstats.engines.standardised.StandardisedColumns` whose linear predictors and
    gradients are products with the raw columns read in place (``times``,
    ``transpose_times``), so no standardised n x s copy is made (at n = 2e5, ten classes,
    the fit's peak beyond its data and out-of-fold probabilities fell from 3.5 to 2.8-3.1
    times the data, in the same time).
    """
    K, s, m = weights.shape[0], Xs.shape[1], n_classes - 1
    n_train = weights.sum(axis=1)
    diagonal = ridge * penalty
    dtype = HESSP_DTYPE
    Xs_h = _in_single_precision(Xs, dtype)
    folded = getattr(Xs, "folds", False)  # StandardisedColumns whose products read X in place
    row_share = weights / n_train[:, None]
    share_h = row_share.astype(dtype)
    blocks = _row_blocks(len(codes))

    def objective(theta, order):
        f = 0.5 * np.einsum("kd,kd->k", diagonal, theta**2)
        g = diagonal * theta
        prob_h = np.empty((K, m, len(codes)), dtype) if order else None
        for rows in blocks:
            share = row_share[:, rows]
            if folded:  # products with the raw columns, read in place (no standardised block)
                shifted = np.empty((K, n_classes, share.shape[1]))
                shifted[:, 0] = 0.0
                shifted[:, 1:] = Xs.times(theta.reshape(K * m, s), rows).reshape(K, m, -1)
                shifted, scaled, log_total = _softmax_of_shifted(shifted)
            else:
                X_rows = Xs[rows]
                shifted, scaled, log_total = _softmax_parts(theta, X_rows.T, n_classes)
            # -log p(own class) = log_total - shifted[own class], a gather
            own = shifted[:, codes[rows], np.arange(share.shape[1])]
            f += np.einsum("kn,kn->k", share, log_total - own)
            if order == 0:
                continue
            prob = scaled[:, 1:]
            prob *= np.exp(-log_total)[:, None, :]  # (K, m, rows)
            prob_h[:, :, rows] = prob
            # minus the indicator of each row's own class (class 0 has no column here)
            local = np.flatnonzero(codes[rows] > 0)
            prob[:, codes[rows][local] - 1, local] -= 1.0
            prob *= share[:, None, :]
            g += (Xs.transpose_times(prob.reshape(K * m, -1), rows) if folded
                  else prob.reshape(K * m, -1) @ X_rows).reshape(K, -1)
        if order == 0:
            return f

        def hessp(V):
            # Per row, the Hessian in the linear predictors is diag(p) - p p' (classes 1..C-1).
            V_h = V.reshape(K * m, s).astype(dtype)
            total = np.zeros((K * m, s), dtype)
            for rows in blocks:
                X_rows, P = Xs_h[rows], prob_h[:, :, rows]
                A = (V_h @ X_rows.T).reshape(K, m, -1)
                A -= np.einsum("kmn,kmn->kn", P, A)[:, None, :]
                A *= P
                A *= share_h[:, None, rows]
                total += A.reshape(K * m, -1) @ X_rows
            return total.reshape(K, -1).astype(float) + diagonal * V

        return f, g, hessp

    return objective


def _start_curvature(Xs, weights, n_classes, diagonal):
    """The exact penalised Hessians at theta = 0: ``(I - 11'/C)/C (x) X'WX/n_k + ridge * w``.

    All classes have probability 1/C there; this is Boehning's bound (I - 11'/C)/2 (x) X'WX/n_k
    up to a factor C/2.
    """
    m = n_classes - 1
    classes = (np.eye(m) - 1.0 / n_classes) / n_classes
    H = np.stack([np.kron(classes, one) for one in _grams(Xs, weights)])
    H[:, np.arange(H.shape[1]), np.arange(H.shape[1])] += diagonal
    return H


def _solve_penalised(Xs, codes, n_classes, weights, penalty, ridge, theta0, hessian0):
    """Penalised fits by preconditioned Newton-CG (:func:`~pearlstats.engines.newton_cg.newton_cg`).

    Preconditioners: from zero the exact Hessian there (a Kronecker product); from a given start
    (the fold fits, started at the all-rows optimum) *hessian0*'s first Hessian, or the exact
    Hessian of all rows at the first start, shared by the K problems; later, when conjugate
    gradients slow down, the exact Hessians of the current point.

    No optimum is remembered between calls: a refit on all rows that started where an earlier
    call in the same process had stopped would differ from a fresh fit in the last digits
    (about 1e-11), so the same seed would not give the same numbers in every process.
    """
    if theta0 is None:
        theta0 = np.zeros((weights.shape[0], (n_classes - 1) * Xs.shape[1]))
    # The preconditioners (single-precision Cholesky inverses of (C-1)p-square matrices) are
    # formed here too: with two BLAS threads they took twice as long as with one (pitfall 8).
    with one_blas_thread():
        return _newton_cg_fit(Xs, codes, n_classes, weights, penalty, ridge, theta0, hessian0)


def _newton_cg_fit(Xs, codes, n_classes, weights, penalty, ridge, theta0, hessian0):
    Xs = _dense(Xs)  # the Hessians of the preconditioners multiply whole transposed copies
    onehot = np.eye(n_classes)[codes]
    diagonal = ridge * penalty
    objective = _penalised_objective(Xs, codes, weights, n_classes, ridge, penalty)
    hessians = _make_loss(Xs, onehot, weights, weights.sum(axis=1), n_classes,
                          PENALISED_HESSIAN_DTYPE)

    def curvature(theta):
        H = hessians(theta, 2)[2]
        H[:, np.arange(H.shape[1]), np.arange(H.shape[1])] += diagonal
        return Preconditioner(H)

    if not theta0.any():
        precondition = Preconditioner(_start_curvature(Xs, weights, n_classes, diagonal))
    else:
        if hessian0 is None:
            everything = np.ones((1, len(codes)))
            hessian0 = _make_loss(Xs, onehot, everything, everything.sum(axis=1), n_classes,
                                  PENALISED_HESSIAN_DTYPE)(theta0[:1], 2)[2]
        shared = hessian0[0].copy()
        shared[np.arange(len(shared)), np.arange(len(shared))] += diagonal.mean(axis=0)
        precondition = Preconditioner(shared)
    return newton_cg(objective, theta0, precondition, curvature)


def _grams(Xs, weights: np.ndarray) -> np.ndarray:
    """The problems' weighted Grams ``X'WX / n_k`` (K, s, s), one pass over blocks of rows.

    For 0/1 fold weights: one ``syrk`` of each block for all problems, less each problem's
    held-out rows of it (a fifth of the rows at K = 5), instead of K weighted products.
    """
    K, s = len(weights), Xs.shape[1]
    binary = bool(np.isin(weights, (0.0, 1.0)).all())
    # syrk of transposed views (Fortran-ordered) with trans=0 fills the upper triangles: scipy
    # copies a C-ordered array to Fortran order first, and trans=1 on the block would
    total = np.zeros((s, s), order="F")
    sums = np.zeros((K, s, s), order="F") if not binary else None
    held = [np.zeros((s, s), order="F") for _ in range(K)] if binary else None
    for rows in _row_blocks(len(Xs)):
        block = Xs[rows]
        if not binary:
            for k, w in enumerate(weights[:, rows]):
                sums[k] += (block.T * w) @ block
            continue
        total = blas.dsyrk(1.0, block.T, trans=0, lower=0, beta=1.0, c=total, overwrite_c=1)
        for k, w in enumerate(weights[:, rows]):
            out = w == 0.0
            if out.any():
                held[k] = blas.dsyrk(1.0, block[out].T, trans=0, lower=0, beta=1.0, c=held[k],
                                     overwrite_c=1)
    totals = weights.sum(axis=1)
    if not binary:
        return sums / totals[:, None, None]
    return np.stack([symmetric_from_upper(total - h) for h in held]) / totals[:, None, None]


def _definite(G: np.ndarray) -> bool:
    """Whether every Gram is numerically positive definite (Cholesky pivots above 1e-10 x max).

    Collinear columns make the unpenalised optimum a set rather than a point; the exact path
    then chooses it (its minimum-norm rule for singular Hessians).
    """
    try:
        factors = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:
        return False
    pivots = np.diagonal(factors, axis1=1, axis2=2) ** 2
    largest = np.diagonal(G, axis1=1, axis2=2).max(axis=1)
    return bool(np.all(pivots.min(axis=1) > 1e-10 * largest))


def _class_curvature(Xs, theta, weights, n_classes) -> np.ndarray:
    """``mean_i (diag p_i - p_i p_i')`` over each problem's rows at *theta* (K, C-1, C-1)."""
    share = weights / weights.sum(axis=1, keepdims=True)
    K, m = theta.shape[0], n_classes - 1
    curvature = np.zeros((K, m, m))
    for rows in _row_blocks(len(Xs)):
        _, scaled, log_total = _softmax_parts(theta, Xs[rows].T, n_classes)
        prob = scaled[:, 1:] * np.exp(-log_total)[:, None, :]  # (K, m, rows)
        weighted = prob * share[:, None, rows]
        curvature -= np.matmul(weighted, prob.transpose(0, 2, 1))
        curvature[:, np.arange(m), np.arange(m)] += weighted.sum(axis=2)
    return curvature


def _all_rows_hessian(XsT: np.ndarray, theta: np.ndarray, n_classes: int) -> np.ndarray:
    """The mean Hessian over the rows of *XsT* at *theta* (single precision, one ``syrk``).

    Per row the Hessian in the linear predictors is ``diag(p) - pp'``; with ``Q`` the rows
    ``p_a x`` (class-major, (C-1)s x n) it is ``blockdiag_a(X' diag(p_a) X) - QQ'``.
    """
    s, n = XsT.shape
    m = n_classes - 1
    _, scaled, log_total = _softmax_parts(theta[None], XsT, n_classes)
    prob = (scaled[0, 1:] * np.exp(-log_total[0])).astype(np.float32)  # (m, n)
    X32 = XsT.astype(np.float32)
    Q = (prob[:, None, :] * X32[None]).reshape(m * s, n)
    H = blas.ssyrk(-1.0 / n, Q, lower=1)
    blocks = np.matmul(Q.reshape(m, s, n), X32.T) / n
    for a in range(m):
        H[a * s:(a + 1) * s, a * s:(a + 1) * s] += blocks[a]
    return symmetric_from_upper(H.T)  # syrk filled the lower triangle


def _solve_unpenalised(Xs, codes, n_classes, weights, theta0):
    """Unpenalised fits by preconditioned Newton-CG, or None where the exact Newton path decides.

    Forming an exact Hessian costs ((C-1)p)^2 n, a Newton-CG step a few products with the
    design (at n = 2e4, ten classes and 31 candidates the fit took 9.7 CPU-s instead of 66).
    Preconditioners: from zero the exact Hessian there, ``(I - 11'/C)/C (x) X'WX/n_k``; for the
    fold fits (started at the all-rows optimum) the Hessian of all rows there (from a sample of
    ``PRECONDITIONER_ROWS`` rows), shared by the K folds; for an all-rows fit from a nested
    candidate's optimum, and whenever conjugate gradients slow down, ``A (x) X'WX/n_k`` with
    ``A`` the mean of ``diag p - pp'`` over the training rows at the current point.

    Only fits whose optimum is a unique point in the interior are solved here: every Gram
    numerically definite, every class among every problem's training rows, every problem
    converged within ``UNPENALISED_CG_STEPS`` Newton steps to finite coefficients, and no
    training row's probability of its own class numerically 1 there. Anything else (collinear
    columns, separation, slow convergence) returns None and the exact Newton path, with its
    singular-Hessian and separation checks, fits the problems from the usual start: the fast
    path never decides a separation, and takes no fit the exact path would refuse.
    """
    counts = np.stack([np.bincount(codes, one, minlength=n_classes) for one in weights])
    if np.any(counts <= 0):  # a class no training row has
        return None
    with one_blas_thread():
        G = _grams(Xs, weights)
        if not _definite(G):
            return None
        K, m = weights.shape[0], n_classes - 1
        zero = np.zeros((K, m * Xs.shape[1]))
        objective = _penalised_objective(Xs, codes, weights, n_classes, 0.0, zero)

        def curvature(theta):
            A = _class_curvature(Xs, theta, weights, n_classes)
            return Preconditioner(np.stack([np.kron(a, g) for a, g in zip(A, G)]))

        if theta0 is None or not theta0.any():
            theta0 = zero
            A = (np.eye(m) - 1.0 / n_classes) / n_classes
            precondition = Preconditioner(np.stack([np.kron(A, g) for g in G]))
        elif K > 1:
            every = -(-len(Xs) // PRECONDITIONER_ROWS)
            precondition = Preconditioner(_all_rows_hessian(Xs[::every].T, theta0[0], n_classes))
        else:
            precondition = curvature(theta0)
        result = newton_cg(objective, theta0, precondition, curvature,
                           max_iter=UNPENALISED_CG_STEPS, max_cg=UNPENALISED_CG_MAX)
        if not (result.converged.all() and np.isfinite(result.theta).all()):
            return None
        for rows in _row_blocks(len(codes)):
            logp = _log_probabilities(result.theta, Xs[rows].T, n_classes)
            own = logp[:, codes[rows], np.arange(logp.shape[2])]  # each row's own class
            if np.any((weights[:, rows] > 0) & (own > -np.exp(-FAST_PATH_ETA))):
                return None
    return result


def _params(theta_row: np.ndarray, n_classes: int, scale: np.ndarray) -> np.ndarray:
    """MNLogit-shaped params (p, C - 1) on the original column scale."""
    return theta_row.reshape(n_classes - 1, -1).T / scale[:, None]


def _notes(label: str, result, fold_ids, stage: str) -> list:
    return newton_notes(label, result, fold_ids, stage,
                        "a training row's probability of its own class numerically 1")


def _engine(codes: np.ndarray, n_classes: int) -> NewtonEngine:
    def solve(Z, y, weights, penalty, ridge, intercept, theta0, hessian0=None):
        return _solve(Z, codes, n_classes, weights, penalty, ridge, theta0, hessian0)

    def predict(Z_rows, theta):
        return class_probabilities(_params(theta, n_classes, np.ones(Z_rows.shape[1])), Z_rows)

    return NewtonEngine(n_classes - 1, solve, predict, _notes, separates=True, warm_hessian=True,
                        nested_start=True, reads_rows=True)


def multinomial_cv_predict(
    X: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
    ridge: float = 0.0,
    separation: str = "drop",
    ridges: Mapping[str, float] | None = None,
) -> EngineOutput:
    """Out-of-fold class probabilities of multinomial logistic candidates.

    Parameters
    ----------
    X : ndarray (n, p)
    codes : ndarray of int (n,)
        Class codes 0..C-1.
    n_classes : int
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float
        Adds ``ridge / 2 * sum_j (sd_j b_jc)^2`` over the non-intercept
        coefficients of every class to the mean negative log-likelihood,
        ``sd_j`` the SD of column j over the fold's training rows.
    separation : {"drop", "ridge", "raise"}
        What to do with a candidate whose classes separate (see
        :func:`~pearlstats.engines.newton_cv.newton_cv_predict`).
    ridges : mapping, optional
        Label -> ridge a candidate starts from (at least *ridge*).

    Returns
    -------
    EngineOutput
        ``predictions`` has shape (n, J, C); ``ridges`` the ridge each candidate was fitted with.
    """
    engine = _engine(codes, n_classes)
    return newton_cv_predict(engine, X, codes, candidates, folds, ridge, (n_classes,),
                             separation=separation, ridges=ridges)


def multinomial_fit(
    X: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    columns: np.ndarray,
    ridge: float = 0.0,
    label: str = "",
    separation: str = "drop",
) -> tuple[np.ndarray, list[LedgerEntry]]:
    """Fit one multinomial candidate on all rows.

    *separation* is as for :func:`~pearlstats.engines.glm.glm_fit`.

    Returns
    -------
    params : ndarray (p, C - 1)
        On the original column scale, laid out like ``MNLogit.params``.
    entries : list of LedgerEntry
    """
    engine = _engine(codes, n_classes)
    design, result, ladder = newton_fit(engine, X, codes, columns, ridge, separation, label)
    gamma = _params(result.theta[0], n_classes, np.ones(design.scale.size))
    return design.original(gamma), ladder + _notes(label, result, [None], "refit")
