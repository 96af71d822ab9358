"""Logistic and Poisson candidates: batched Newton fits over all folds at once.

The folds of one candidate are solved together by the driver in
:mod:`pearlstats.engines.newton_cv`; this module gives it the likelihoods. The maximum-likelihood
fits equal ``sm.Logit`` / ``sm.GLM(family=Poisson())`` where those converge.

Where the work goes (issue 35): the all-rows fit is plain Newton, each Hessian a ``syrk`` over
the rows, kept split by fold; from the last one each fold fit gets its exact training-row
Hessian at the all-rows fit (the sum over the other folds) and takes chord steps with it from
the all-rows optimum, converging by about the distance between the two optima per step with
no Hessian of its own (one is formed, over its training rows only, if the steps stop
contracting). A fold fit then costs a few passes of linear predictors and gradients.

Separation (logistic) is detected when, without a ridge penalty, a fold is
still taking large steps (``SEPARATION_STEP`` on standardised coefficients)
after ``SEPARATION_MIN_ITER`` Newton iterations while a training row's
linear predictor exceeds ``SEPARATION_ETA`` in absolute value. Newton converges
quadratically when the MLE exists, so a fit still diverging by then has no MLE;
it is halted and reported rather than left to produce huge coefficients, once a linear
program (:mod:`~pearlstats.engines.recession`) has found the direction along which its
likelihood rises for ever: a fit converging slowly from far away is not halted. (A
converged fit may legitimately give some rows probabilities within 1e-15 of
0 or 1; that alone is not separation.)

A Poisson MLE fails to exist the same way when the counts are 0 on one side of a
direction of the candidate's columns (all rows with a count on the hyperplane, the zeros
below it): the fit diverges with those rows' means going to 0, and the held-out rows
on the other side get means of 1e100 and more. It is detected alike, by a training
row's linear predictor below ``-SEPARATION_ETA`` (a mean of 1e-13, R's "fitted rates
numerically 0"), and takes the same ``separation`` policy. A fold whose training rows
have no positive count at all is refused (:func:`glm_cv_predict`): no ridge on the
block columns gives its intercept an optimum.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import blas

from ..backends.chunks import map_chunks
from ..exceptions import FoldError
from ..ledger import LedgerEntry
from ._common import EngineOutput
from .likelihood import mean_of, row_terms, variance_of
from .newton import NewtonResult, NewtonSystems, batched_newton, penalised_newton
from .newton_cv import (
    SEPARATED_CLASSES,
    SEPARATION_ETA,
    SEPARATION_MIN_ITER,
    SEPARATION_STEP,
    NewtonEngine,
    Observed,
    newton_cv_predict,
    newton_fit,
    newton_notes,
    separation_check,
)
from .recession import has_recession_direction
from .standardised import symmetric_from_upper

if TYPE_CHECKING:
    from ..design.candidates import Candidate

__all__ = ["glm_cv_predict", "glm_fit", "notes_for", "separation_cause", "SEPARATION_ETA",
           "SEPARATION_MIN_ITER", "SEPARATION_STEP"]

# Most chord steps in a row with one Hessian (:func:`batched_newton`): a fold fit started at
# the all-rows optimum with its exact training-row Hessian there contracts by about the
# distance between the optima per step, so a few chord steps replace its Newton steps.
MAX_CHORD = 8

# Newton decrement (relative to max(1, |f|)) the fits stop below, after taking the step it
# predicts: the coefficients end within about 1e-12 of the optimum (in the metric of the
# Hessian), against about 1e-10 for the 1e-20 the engines stop at without that step.
TOLERANCE = 1e-24

# Largest K * n * p^2 (multiplications; n at most _BLOCK_ROWS rows) for which a pass's Hessian
# sums are formed in one batched product over all rows (:meth:`_Hessians._add_dense`): below
# it one syrk per problem costs more in calls than the products by 0 of the rows a problem
# does not weigh (measured: 40 us less at 150 rows, 11 groups, 8 columns; even at 3e5; 2x
# slower from 1e6).
DENSE_HESSIAN_FLOPS = 2**18

# Rows per block of the likelihood's sums (:func:`_make_loss`): 16 MB of (K, p, rows)
# Hessian product at K = 10, p = 51.
_BLOCK_ROWS = 4096

def _mean_and_variance(kind: str, eta: np.ndarray):
    mu = mean_of(kind, eta)
    return mu, variance_of(kind, mu)


def _row_loss(kind: str, eta: np.ndarray, y: np.ndarray) -> np.ndarray:
    return row_terms(kind, eta.copy(), y)[0]


def _gram_into(upper: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``upper + A'A`` on the upper triangle (BLAS ``syrk``: half the flops of ``A.T @ A``).

    *upper* is (p, p) Fortran-ordered, updated in place (its lower triangle is never
    written); *A* (rows, p) C-ordered, read in place as the (p, rows) Fortran array ``A.T``.
    """
    if len(A) == 0:
        return upper
    return blas.dsyrk(1.0, A.T, beta=1.0, c=upper, trans=0, lower=0, overwrite_c=1)


class _Hessians:
    """The Hessian sums of a pass: one per problem over its training rows only.

    Each problem's Hessian ``Z' diag(w_k v_k) Z`` is summed over the rows it weighs (rows of
    weight 0, the held-out fold, are skipped rather than multiplied by 0) as ``A'A`` with
    ``A = sqrt(w_k v_k) Z`` on those rows, by ``syrk``. With *groups* (one label per row,
    for the all-rows problem), the sum is also kept per group: the all-rows fit's Hessian
    split by fold, from which each fold's training-row Hessian at the same point is the sum
    over the other folds (:func:`fold_hessians`).

    Where *Z* folds its standardisation into products (``Z.folds``), A is formed from the raw
    columns (one pass over them, no standardised copy) and each sum is centred and scaled
    when read (:meth:`~pearlstats.engines.standardised.StandardisedColumns.standardised_gram`,
    from the weighted column sums ``X' w`` and ``sum(w)`` kept alongside).

    Small data (one block of rows, and at most :data:`DENSE_HESSIAN_FLOPS` multiplications in
    its products for all problems at once, e.g. 150 rows, 11 groups, 8 columns) is summed
    differently: all problems' (groups') sums in one batched product of the standardised rows
    (:meth:`_add_dense`), with zeros for the rows a problem does not weigh. There a Hessian
    is a few dozen microseconds of products and the per-problem calls (a mask, an index
    array, a ``syrk``, a centring each) cost more than the products, in the thousands of
    small Newton fits of a nested SE.

    *layouts* (a dict kept by the caller across passes, the groups and rows being fixed for a
    fit) holds what a block's grouping needs: its rows sorted by group
    (:func:`_group_layout`), or (small data) its 0/1 group masks and standardised rows.
    """

    def __init__(self, Z, n_problems: int, groups: np.ndarray | None, n_groups: int,
                 layouts: dict | None = None):
        self.Z, self.groups = Z, groups
        self.folded = bool(getattr(Z, "folds", False))
        p = Z.shape[1]
        count = n_groups if groups is not None else n_problems
        self.count = count
        # Small data only: rows within one block (whose standardised copy is kept for the fit,
        # at most _BLOCK_ROWS x p; never one of all rows of a large design).
        self.dense = len(Z) <= _BLOCK_ROWS and count * len(Z) * p * p <= DENSE_HESSIAN_FLOPS
        self.upper = (np.zeros((count, p, p)) if self.dense
                      else [np.zeros((p, p), order="F") for _ in range(count)])
        self.sums = np.zeros((count, p))
        self.totals = np.zeros(count)
        self.layouts = {} if layouts is None else layouts
        self._parts: np.ndarray | None = None

    def _add(self, g: int, A: np.ndarray, root: np.ndarray) -> None:
        """Add ``A'A`` (A rows x p) to group g's sum; folded: A is given transposed (p, rows)."""
        if A.size == 0:
            return
        if not self.folded:
            self.upper[g] = _gram_into(self.upper[g], A)
            return
        self.upper[g] = blas.dsyrk(1.0, A.T, beta=1.0, c=self.upper[g], trans=1, lower=0,
                                   overwrite_c=1)
        self.sums[g] += A @ root
        self.totals[g] += root @ root

    def add(self, Z_rows, row_weights: np.ndarray, rows: slice) -> None:
        """Add the rows *rows* (``Z_rows``, None if folded; ``row_weights`` (K, rows) = w * v)."""
        root = np.sqrt(row_weights)
        if self.dense:
            self._add_dense(Z_rows, root, rows)
            return
        if self.groups is not None:
            self._add_by_group(self._weighted(rows, root[0], Z_rows), root[0], rows)
            return
        for k in range(self.count):
            A = self._weighted(rows, root[k], Z_rows)
            if (root[k] > 0).all():
                self._add(k, A, root[k])
            else:
                take = np.flatnonzero(root[k] > 0)
                self._add(k, self._take(A, take), root[k, take])

    def _add_by_group(self, A: np.ndarray, root: np.ndarray, rows: slice) -> None:
        """Add each group's rows of *A* (the block's rows times *root*) to its sum.

        Where every row weighs (the usual case: a row's variance is 0 only at its mean's
        limit), group g's rows are the g-th slice of the block sorted by group, in their row
        order: the same rows, in the same order, as the mask ``labels == g`` takes, so the
        sums are the same numbers, without a mask and an index array per group.
        """
        if not (root > 0).all():
            labels = self.groups[rows]
            for g in range(self.count):
                take = np.flatnonzero((labels == g) & (root > 0))
                self._add(g, self._take(A, take), root[take])
            return
        key = ("sorted", rows.start, rows.stop)
        if key not in self.layouts:
            self.layouts[key] = _group_layout(self.groups[rows], self.count)
        order, bounds = self.layouts[key]
        A, root = self._take(A, order), root[order]
        for g in range(self.count):
            part = slice(bounds[g], bounds[g + 1])
            # a C-ordered copy, laid out as the mask's rows were
            group = np.ascontiguousarray(A[:, part]) if self.folded else A[part]
            self._add(g, group, root[part])

    def _add_dense(self, Z_rows, root: np.ndarray, rows: slice) -> None:
        """Add a small block's rows to every problem's (group's) sum in one batched product.

        Each problem's (group's) roots are those of its rows and 0 elsewhere, so
        ``A_k = sqrt(w_k v_k) Z`` holds zero columns for the rows it does not weigh and
        ``A_k A_k'`` is its sum: one ``matmul`` of the (K, p, rows) stack for all K, instead
        of a ``syrk`` per problem over its own rows. The zeros add nothing: the sums are
        those of the same products, in another order (equal to rounding). The K-fold products
        by 0 are what bounds this to small blocks. A is formed from the standardised rows
        (``Z[rows]``, kept in *layouts* for the fit's later passes) also where *Z* folds its
        standardisation into products: the sums need no centring after.
        """
        if self.groups is not None:
            key = ("masks", rows.start, rows.stop)
            if key not in self.layouts:
                labels = self.groups[rows]
                self.layouts[key] = (labels == np.arange(self.count)[:, None]).astype(float)
            root = self.layouts[key] * root[0]
        if Z_rows is None:
            # The standardised rows, formed once per fit (they are small): the products are
            # then the standardised sums themselves, with no centring and scaling per pass.
            key = ("rows", rows.start, rows.stop)
            if key not in self.layouts:
                self.layouts[key] = self.Z[rows]
            Z_rows = self.layouts[key]
        A = Z_rows.T * root[:, None, :]  # (K, p, rows)
        self.upper += np.matmul(A, np.swapaxes(A, 1, 2))

    def _weighted(self, rows: slice, root: np.ndarray, Z_rows) -> np.ndarray:
        """The rows times *root*: (rows, p), or (p, rows) from the raw columns if folded."""
        return self.Z.raw_columns(rows, root) if self.folded else Z_rows * root[:, None]

    def _take(self, A: np.ndarray, take: np.ndarray) -> np.ndarray:
        return np.take(A, take, axis=1) if self.folded else A[take]

    def parts(self) -> np.ndarray:
        """Each group's (problem's) Hessian sum (G, p, p).

        Formed once, for all groups in one call (their centring and scaling, when folded, is
        elementwise: the values of one call per group).
        """
        if self._parts is None and self.dense:  # sums of the standardised rows
            self._parts = symmetric_from_upper(self.upper)
        elif self._parts is None:
            upper = np.stack(self.upper)
            self._parts = (self.Z.standardised_gram(upper, self.sums, self.totals)
                           if self.folded else symmetric_from_upper(upper))
        return self._parts

    def problems(self) -> np.ndarray:
        """The problems' Hessian sums (K, p, p) (all groups together for the all-rows one)."""
        parts = self.parts()
        if self.groups is None:
            return parts
        # numpy adds along the first axis one group after another: the values of sum(parts)
        return parts.sum(axis=0)[None]


def _group_layout(labels: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The positions of a block's rows sorted by group, stably (each group's rows in their
    order), and where each group starts and ends in them: ``(order, bounds)`` with group g's
    rows ``order[bounds[g]:bounds[g + 1]]``."""
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_groups + 1))
    return order, bounds


def _make_loss(kind, Z, y, weights, n_train, groups=None, n_groups=0, split=None, offset=None,
               known=None):
    """Mean negative log-likelihood over each fold's training rows (no penalty; Poisson: from
    the saturated model's, see :func:`~pearlstats.engines.likelihood.row_terms`).

    The value, gradient and Hessian are summed over blocks of :data:`_BLOCK_ROWS` rows, so
    the working memory is a few (K, rows) arrays and one (rows, p) product per block, not
    their all-rows versions (the Hessian's was 4 GB at K = 10, p = 51, n = 10^6). The
    block size is fixed, not the backend's chunk size: a Newton fit stops anywhere within
    its tolerance (about 1e-10 in the coefficients), so sums in another order can end it a
    step earlier or later; with fixed blocks the fits do not depend on how the rows are
    chunked. With n within one block the sums are those over all rows at once.

    Where *Z* folds its standardisation into products (``Z.folds``: a
    :class:`~pearlstats.engines.standardised.StandardisedColumns` over float64 blocks), the
    linear predictors and gradients are products with the raw columns read in place: a pass
    no longer copies and standardises the candidate's rows (a third of a fit's time before).

    With *groups* (row labels 0..n_groups-1, one problem), each Hessian formed is also
    kept split by group in ``split["parts"]`` (sums, not means): see :class:`_Hessians`; and
    the value and gradient of each gradient-only evaluation after a Hessian are summed by
    group, in ``split["values"]`` as ``(theta, (n_groups,) sums, (n_groups, p) sums)`` (the
    problem's own are their totals) if it is the last evaluation. *known*: ``(theta, f, g)``,
    the values at theta of the first evaluation (order 1 at that very theta), which is then
    served without a pass.
    *offset* (n,), if given, is added to every linear predictor; *weights* are then the
    fold weights times the observation weights.
    """
    folded = bool(getattr(Z, "folds", False))
    # Poisson values from the saturated model (row_terms): a tolerance relative to them is not
    # inflated by the large counts' constant y - y log y
    log_y = np.log(np.where(y > 0, y, 1.0)) if kind == "poisson" else None
    first = [known]
    # Hessians formed so far: the sums by group are kept only for gradients after the first,
    # near the optimum, where the fit's last evaluation is (they cost a (groups, rows) product
    # per block instead of a (1, rows) one, a fifth of an all-rows pass).
    formed = [0]
    layouts: dict = {}  # each block's rows sorted by group, for the Hessians (_Hessians)

    def block(theta, order, rows: slice, hessians, grouped: bool) -> list:
        w, y_rows = weights[:, rows], y[rows]
        Z_rows = None if folded else Z[rows]
        eta = Z.times(theta, rows) if folded else theta @ Z_rows.T  # (K, rows)
        if offset is not None:
            eta += offset[rows]
        # the dask passes' row terms (one exp)
        loss, mu = row_terms(kind, eta, y_rows, None if log_y is None else log_y[rows])
        residual = w * (mu - y_rows) if order >= 1 else None
        if grouped:
            sums = _group_sums(Z, Z_rows, rows, groups[rows], n_groups, w[0] * loss[0],
                               residual[0])
        else:
            sums = [(w * loss).sum(axis=1)]
            if order >= 1:
                sums.append(Z.transpose_times(residual, rows) if folded else residual @ Z_rows)
        if order == 2:
            hessians.add(Z_rows, w * variance_of(kind, mu), rows)
        return sums

    def loss(theta, order):
        if first[0] is not None and order == 1 and np.array_equal(theta, first[0][0]):
            values, first[0] = first[0][1:], None
            return values
        first[0] = None
        sums = None
        hessians = (_Hessians(Z, len(theta), groups, n_groups, layouts) if order == 2
                     else None)
        grouped = groups is not None and order == 1 and formed[0] > 0
        formed[0] += order == 2
        if len(y) <= _BLOCK_ROWS:  # one block (small data: no chunking machinery per pass)
            sums = block(theta, order, slice(0, len(y)), hessians, grouped)
        for values in (() if sums is not None else
                       map_chunks(lambda rows: block(theta, order, rows, hessians, grouped),
                                  len(y), _BLOCK_ROWS)):
            sums = values if sums is None else [a + b for a, b in zip(sums, values)]
        if grouped:
            split["values"] = (theta[0].copy(), sums[0], sums[1])
            sums = [sums[0].sum()[None], sums[1].sum(axis=0)[None]]
        elif order >= 1 and split is not None:
            split.pop("values", None)  # this later point's values are not summed by group
        f = sums[0] / n_train
        if order == 0:
            return f
        g = sums[1] / n_train[:, None]
        if order == 1:
            return f, g
        if split is not None:
            split["parts"] = hessians.parts()
        return f, g, hessians.problems() / n_train[:, None, None]

    return loss


def _group_sums(Z, Z_rows, rows: slice, labels: np.ndarray, n_groups: int, loss: np.ndarray,
                residual: np.ndarray) -> list:
    """The loss (n_groups,) and gradient (n_groups, p) sums of one problem's rows by group.

    The residuals are laid out one row per group (zero elsewhere), so the gradients of all
    groups are one product with the rows, as a problem's own gradient is.
    """
    by_group = np.zeros((n_groups, len(labels)))
    by_group[labels, np.arange(len(labels))] = residual
    gradient = Z.transpose_times(by_group, rows) if Z_rows is None else by_group @ Z_rows
    return [np.bincount(labels, loss, minlength=n_groups), gradient]


def fold_values(values: tuple, totals: np.ndarray, held_out: int) -> tuple:
    """Each fold's training-row loss and gradient (means) from the all-rows sums by group.

    *values* is ``(theta, loss sums, gradient sums)`` by group (``split["values"]`` of
    :func:`_make_loss`), *totals* the groups' weight sums; fold k's training rows are all
    groups but its own. Returns ``(theta, f (held_out,), g (held_out, p))``.
    """
    theta, f, g = values
    n_train = totals.sum() - totals[:held_out]
    return (theta, (f.sum() - f[:held_out]) / n_train,
            (g.sum(axis=0) - g[:held_out]) / n_train[:, None])


def fold_hessians(parts: list, held_out: int) -> np.ndarray:
    """Each fold's training-row Hessian sum from the all-rows one split by fold.

    *parts* are the sums over each fold's rows, then (if any) over the rows held out by no
    fold; fold k's training rows are all but its own, so its sum is that of the others.
    Returns (held_out, p, p).
    """
    parts = np.asarray(parts)
    others = np.array([[g for g in range(len(parts)) if g != k] for k in range(held_out)],
                      dtype=int).reshape(held_out, len(parts) - 1)
    # numpy adds along the summed axis one part after another: the values of a sum() of them
    return parts[others].sum(axis=1)


def _extreme_rows(Z, weights, offset=None, kind: str = "binomial") -> Callable:
    """``extreme_rows(theta)`` of :func:`separation_check`, a block of rows at a time:
    a training row's linear predictor beyond ``SEPARATION_ETA`` in absolute value
    (logistic), below ``-SEPARATION_ETA`` (Poisson: a mean going to 0; a large mean is a
    large count, not divergence).

    The (K, n) linear predictors and masks are never formed at once (152 MiB at K = 10,
    n = 10^6 for the predictors and their absolute values).
    """
    def extreme_rows(theta):
        def block(rows: slice) -> np.ndarray:
            eta = Z.times(theta, rows) if getattr(Z, "folds", False) else theta @ Z[rows].T
            if offset is not None:
                eta += offset[rows]
            far = np.abs(eta) > SEPARATION_ETA if kind == "binomial" else eta < -SEPARATION_ETA
            return np.any((weights[:, rows] > 0) & far, axis=1)

        return np.logical_or.reduce(list(map_chunks(block, len(Z), _BLOCK_ROWS)))

    return extreme_rows


def _confirmed(flag: Callable, Z, y: np.ndarray, weights: np.ndarray, kind: str) -> Callable:
    """The ``stop`` callback *flag* (:func:`separation_check`), confirmed by a linear program.

    A problem flagged as still diverging is stopped only if its training rows have a
    direction along which the likelihood rises for ever
    (:func:`~pearlstats.engines.recession.has_recession_direction`); one whose rows have none
    converges slowly from far away (a Poisson row with a legitimate mean of 4e-18 beside one
    of 7e10) and goes on. Each problem's rows are asked once.
    """
    decided: dict = {}

    def stop(theta, step, iteration):
        flagged = np.array(flag(theta, step, iteration), dtype=bool)
        if not flagged.any():  # the usual answer, at every step of a fit that converges
            return flagged
        for k in np.flatnonzero(flagged):
            if k not in decided:
                training = weights[k] > 0
                rows = np.concatenate(list(map_chunks(lambda r: Z[r][training[r]], len(Z),
                                                      _BLOCK_ROWS)))
                decided[k] = has_recession_direction(rows, y[training], kind)
            flagged[k] = decided[k]
        return flagged

    return stop


def _quasi_separated(result: NewtonResult, Z, y: np.ndarray, weights: np.ndarray, offset,
                     kind: str) -> NewtonResult:
    """Mark as separated the problems that converged with a singular Hessian because rows'
    variances vanished at their limit: a quasi-complete separation, not collinear columns.

    A level of a categorical covariate whose rows are all 0 (or all 1) has no finite
    coefficient; Newton moves it about one unit per step (a small step on the standardised
    scale of a rare indicator, so :func:`separation_check` does not see it diverge) until
    those rows' variances are below the Cholesky limit, then "converges" with a singular
    Hessian wherever the steps stopped: an estimate of -35 with an SE of 1e7, and risks
    that depend on where that was. Such a problem has rows beyond ``SEPARATION_ETA``, every
    one of them with the response its limit gives (0 below, 1 above; Poisson: 0), and a
    design whose own Gram over its training rows is regular. Collinear columns make that
    Gram singular too (they stay rank deficient); a row beyond the threshold with the
    other response (an offset of 40 on rows of both outcomes) means the optimum exists.
    """
    suspect = result.singular & result.converged & ~result.stopped
    if suspect.any():
        suspect &= _extreme_rows(Z, weights, offset, kind)(result.theta)
    for k in np.flatnonzero(suspect):
        suspect[k] = (_beyond_at_their_limit(Z, result.theta[k], y, weights[k], offset, kind)
                      and not NewtonSystems.from_hessians(
                          _training_gram(Z, weights[k])[None]).singular[0])
    if not suspect.any():
        return result
    return replace(result, converged=result.converged & ~suspect,
                   stopped=result.stopped | suspect)


def _beyond_at_their_limit(Z, theta: np.ndarray, y: np.ndarray, weights: np.ndarray, offset,
                           kind: str) -> bool:
    """Whether every training row beyond ``SEPARATION_ETA`` has the response of its limit."""
    def block(rows: slice) -> bool:
        eta = Z[rows] @ theta + (0.0 if offset is None else offset[rows])
        far = (np.abs(eta) > SEPARATION_ETA if kind == "binomial"
               else eta < -SEPARATION_ETA) & (weights[rows] > 0)
        limit = (eta > 0).astype(float) if kind == "binomial" else 0.0
        return bool(np.all(y[rows][far] == np.broadcast_to(limit, eta.shape)[far]))

    return all(map_chunks(block, len(Z), _BLOCK_ROWS))


def _training_gram(Z, weights: np.ndarray) -> np.ndarray:
    """``Z' diag(weights) Z`` summed a block of rows at a time."""
    def block(rows: slice) -> np.ndarray:
        part = Z[rows]
        return part.T @ (weights[rows, None] * part)

    return sum(map_chunks(block, len(Z), _BLOCK_ROWS))


def _fold_groups(folds: list, n: int) -> np.ndarray:
    """Each row's fold (held out by it), ``len(folds)`` for rows no fold holds out."""
    groups = np.full(n, len(folds))
    for k, rows in enumerate(folds):
        groups[rows] = k
    return groups


def _start_hessian(kind, Z, theta0, intercept) -> np.ndarray | None:
    """The all-rows Hessian at the engine's own start, from ``Z'Z`` (no pass over the rows).

    Every row has the same mean there (1/2 at logistic 0; the capped mean of y, or 1, for
    Poisson), so the Hessian is ``v Z'Z / n`` with v the variance at that mean: the first
    Newton step costs a gradient, not a Hessian. None where ``Z.gram()`` is not available.
    """
    gram = Z.gram() if hasattr(Z, "gram") else None
    if gram is None:
        return None
    if kind == "binomial":
        v = 0.25
    else:
        eta = theta0[0, intercept] * Z[0][intercept] if intercept is not None else 0.0
        v = float(mean_of(kind, np.array(eta)))
    return (v * gram / len(Z))[None]


def _solve(kind, Z, y, weights, penalty, ridge, intercept, theta0, hessian0=None, folds=None,
           offset=None, known=None, from_response=False):
    """The Newton fits of the K problems *weights* (offset *offset* on every linear predictor).

    With *folds* (the held-out rows of each fold; the all-rows fit), ``hessian`` of the result
    is each fold's training-row Hessian at the all-rows fit's last Hessian point: the fold
    fits, started at the all-rows optimum, take chord steps with it (its error is of the
    order of the distance between the fold and all-rows optima) instead of forming Hessians.
    Its ``fold_values`` are each fold's loss and gradient at the all-rows fit's last
    evaluated point, which the fold fits start from with *known* (their first pass saved).
    *from_response*: this is a restart (see :func:`_stalled_by_start`); none again.
    """
    n_train = weights.sum(axis=1)
    separated = _confirmed(separation_check(_extreme_rows(Z, weights, offset, kind), ridge),
                           Z, y, weights, kind)

    own_start = theta0 is None
    if theta0 is None:
        theta0 = np.zeros((weights.shape[0], Z.shape[1]))
        if kind == "poisson" and intercept is not None:
            # Start from the intercept-only mean so the first exp() cannot overflow (with an
            # offset o: the rate sum(w y) / sum(w exp(o))).
            exposure = n_train if offset is None else weights @ np.exp(offset)
            mean_y = (weights @ y) / exposure
            theta0[:, intercept] = np.log(np.maximum(mean_y, 1e-8)) / Z[0][intercept]
    penalty = penalty * np.ones((weights.shape[0], 1))
    split: dict = {}
    groups = None if folds is None else _fold_groups(folds, len(y))
    loss = _make_loss(kind, Z, y, weights, n_train, groups, len(folds or ()) + 1, split, offset,
                      known)
    # Chord steps pay in the fold fits started with their exact Hessian at the all-rows fit;
    # elsewhere a Hessian (one syrk) costs about a pass over the rows, and Newton steps win.
    chords = MAX_CHORD if hessian0 is not None else 1
    exact = hessian0 is None and own_start and offset is None and (weights == 1).all()
    if exact:
        hessian0 = _start_hessian(kind, Z, theta0, intercept)
        exact = hessian0 is not None
    start = {} if hessian0 is None else {"hessian0": hessian0}
    # batched_newton is looked up here, at call time, so tests can replace it in this module.
    newton = partial(batched_newton, max_chord=chords, final_step=True, tol=TOLERANCE,
                     exact_start=exact, secant=hessian0 is not None and not exact)
    result = penalised_newton(loss, theta0, ridge, penalty, stop=separated, newton=newton,
                              **start)
    if ridge <= 0:
        result = _quasi_separated(result, Z, y, weights, offset, kind)
        stalled = np.zeros(len(weights), dtype=bool) if from_response else _stalled_by_start(
            result, Z, weights)
        if stalled.any():
            restart = _solve(kind, Z, y, weights, penalty, ridge, intercept,
                             _response_start(kind, Z, y, weights, offset), folds=folds,
                             offset=offset, from_response=True)
            taken = stalled & restart.converged & ~restart.singular
            if folds is not None and taken.all():  # one problem, with its own fold sums
                return restart
            result = _with_restarted(result, restart, taken)
    if folds is None or "parts" not in split:
        return result
    n_folds = len(folds)
    sums = fold_hessians(split["parts"], n_folds)
    # the folds' training weights (row counts without observation weights)
    totals = np.bincount(groups, weights[0], minlength=n_folds + 1)
    n_fold_train = totals.sum() - totals[:n_folds]
    values = fold_values(split["values"], totals, n_folds) if "values" in split else None
    return replace(result, hessian=sums / n_fold_train[:, None, None], fold_values=values)


def _stalled_by_start(result: NewtonResult, Z, weights: np.ndarray) -> np.ndarray:
    """The problems whose Hessian was singular only because of where their fit started.

    Rows whose offset puts their mean within 1e-16 of its limit at the start (a logit offset of
    36 on a level with both outcomes, a log offset of -36 on one with counts) have variances
    at rounding level there, so the Hessian is singular along that level's column although
    the design is not: the minimum-norm Newton steps never move that coefficient and the fit
    "converged" with a gradient along it, an estimate 36 units from the maximum-likelihood
    one, recorded as rank deficient. Such a problem had a singular Hessian, was not stopped
    as separated, and its design's own Gram over its training rows is regular (collinear
    columns stay rank deficient). It is fitted again from :func:`_response_start`, where
    every row's variance is of order one, and the restart kept where it converged with a
    regular Hessian.
    """
    stalled = result.singular & ~result.stopped
    for k in np.flatnonzero(stalled):
        stalled[k] = not NewtonSystems.from_hessians(
            _training_gram(Z, weights[k])[None]).singular[0]
    return stalled


def _with_restarted(result: NewtonResult, restart: NewtonResult,
                    taken: np.ndarray) -> NewtonResult:
    """*result* with the problems *taken* (K,) from *restart*."""
    if not taken.any():
        return result
    hessian = (None if result.hessian is None or restart.hessian is None
               else np.where(taken[:, None, None], restart.hessian, result.hessian))
    return replace(result, theta=np.where(taken[:, None], restart.theta, result.theta),
                   converged=np.where(taken, restart.converged, result.converged),
                   stopped=np.where(taken, restart.stopped, result.stopped),
                   singular=np.where(taken, restart.singular, result.singular),
                   hessian=hessian)


def _response_start(kind, Z, y: np.ndarray, weights: np.ndarray, offset) -> np.ndarray:
    """Each problem's first iteratively reweighted least-squares step from R's ``mustart``.

    R's ``glm`` starts from means given by the response, ``(y + 1/2) / 2`` (binomial) and
    ``y + 0.1`` (Poisson), not from coefficients: the working response
    ``eta - offset + (y - mu) / mu'`` is regressed on the columns with weights ``w mu'``
    (``mu' = mu (1 - mu)`` and ``mu``), whatever the offset. Returns (K, p).
    """
    mu = (y + 0.5) / 2 if kind == "binomial" else y + 0.1
    slope = variance_of(kind, mu)  # the canonical links' d mu / d eta
    eta = np.log(mu / (1 - mu)) if kind == "binomial" else np.log(mu)
    working = eta + (y - mu) / slope - (0.0 if offset is None else offset)
    start = np.zeros((len(weights), Z.shape[1]))
    for k, row_weights in enumerate(weights):
        def block(rows: slice, w=row_weights * slope) -> tuple:
            part = Z[rows]
            weighted = w[rows, None] * part
            return part.T @ weighted, weighted.T @ working[rows]

        sums = list(map_chunks(block, len(Z), _BLOCK_ROWS))
        gram, right = sum(g for g, _ in sums), sum(r for _, r in sums)
        start[k] = np.linalg.lstsq(gram, right, rcond=None)[0]
    return start


ZERO_COUNTS_SEPARATE = ("the counts are 0 on one side of a direction of the candidate's "
                        "columns (their means go to 0)")


def _notes(label: str, result, fold_ids, stage: str) -> list:
    sign = f"a training row's linear predictor beyond {SEPARATION_ETA:g} in absolute value"
    return newton_notes(label, result, fold_ids, stage, sign)


def _poisson_notes(label: str, result, fold_ids, stage: str) -> list:
    sign = f"a training row's linear predictor below -{SEPARATION_ETA:g} (a mean of 1e-13)"
    return newton_notes(label, result, fold_ids, stage, sign, ZERO_COUNTS_SEPARATE)


def notes_for(kind: str) -> Callable:
    """The ledger notes of a *kind* ("binomial" or "poisson") Newton fit."""
    return _poisson_notes if kind == "poisson" else _notes


def separation_cause(kind: str) -> str:
    """Why a *kind* fit has no finite optimum when it separates, in words."""
    return ZERO_COUNTS_SEPARATE if kind == "poisson" else SEPARATED_CLASSES


def _engine(kind: str) -> NewtonEngine:
    def solve(Z, y, weights, penalty, ridge, intercept, theta0, hessian0=None, folds=None,
              offset=None, known=None):
        return _solve(kind, Z, y, weights, penalty, ridge, intercept, theta0, hessian0, folds,
                      offset, known)

    def predict(Z_rows, theta):
        return _mean_and_variance(kind, Z_rows @ theta)[0]

    return NewtonEngine(1, solve, predict, notes_for(kind), separates=True,
                        cause=separation_cause(kind),
                        reads_rows=True, warm_hessian=True, fold_hessians=True,
                        mean=partial(mean_of, kind))


def glm_cv_predict(
    kind: str,
    X: np.ndarray,
    y: np.ndarray,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
    ridge: float = 0.0,
    separation: str = "drop",
    ridges: Mapping[str, float] | None = None,
    row_weights: np.ndarray | None = None,
    offset: np.ndarray | None = None,
) -> EngineOutput:
    """Out-of-fold predicted means of logistic (``kind="binomial"``) or Poisson candidates.

    Parameters
    ----------
    kind : {"binomial", "poisson"}
    X : ndarray (n, p)
    y : ndarray (n,)
        0/1 for binomial, counts for Poisson.
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    ridge : float
        Adds ``ridge / 2 * sum_j (sd_j b_j)^2`` over the non-intercept
        coefficients to the mean negative log-likelihood, ``sd_j`` the SD of
        column j over the fold's training rows (see :mod:`pearlstats.engines._common`).
    separation : {"drop", "ridge", "raise"}
        What to do with a candidate without a finite optimum: a logistic one whose classes
        separate, a Poisson one whose counts are 0 on one side of a direction (see
        :func:`~pearlstats.engines.newton_cv.newton_cv_predict`).
    ridges : mapping, optional
        Label -> ridge a candidate starts from (at least *ridge*).
    row_weights, offset : ndarray (n,), optional
        Positive observation weights (frequency or variance: the same fits) and an offset
        added to every linear predictor: each fit maximises the weighted log-likelihood, as
        statsmodels' ``GLM(..., freq_weights=, offset=)``, and a ridge weighs the columns
        by their weighted SDs (:class:`~pearlstats.engines.newton_cv.Observed`).

    Returns
    -------
    EngineOutput
        ``predictions`` (n, J): probabilities of class 1, or Poisson means;
        ``ridges`` the ridge each candidate was fitted with.
    """
    if kind == "poisson":
        _refuse_folds_without_counts(y, folds, row_weights)
    keep: dict = {}
    moments: dict = {}
    observed = _observed(len(y), row_weights, offset)
    output = newton_cv_predict(_engine(kind), X, y, candidates, folds, ridge,
                               separation=separation, ridges=ridges, keep=keep,
                               observed=observed, moments=moments)
    _remember(kind, (X, y, row_weights, offset), keep, moments)
    return output


def _refuse_folds_without_counts(y: np.ndarray, folds: np.ndarray,
                                 row_weights: np.ndarray | None) -> None:
    """A Poisson fold whose training rows count nothing has no finite fit: its intercept goes
    to minus infinity whatever the ridge (statsmodels' GLM fails there too)."""
    counted = y if row_weights is None else y * row_weights
    for fold in np.unique(folds[folds >= 0]):
        if not counted[folds != fold].any():
            raise fold_without_counts(fold)


def fold_without_counts(fold: int) -> FoldError:
    """The refusal of a Poisson fold whose training rows count nothing (in memory and on dask
    rows alike)."""
    return FoldError(
        f"the training rows of fold {fold} have no positive count: a Poisson candidate has no "
        "finite fit there (its mean would be 0 on every row, whatever the ridge: the intercept "
        "is not penalised); choose folds that each leave a positive count among their training "
        "rows (Poisson folds are not stratified on the counts: another seed, or fewer folds), "
        "or a response with more than a few positive counts")


def _observed(n: int, row_weights, offset) -> Observed | None:
    """The rows' weights and offset for the Newton driver; None when neither is given."""
    if row_weights is None and offset is None:
        return None
    weights = np.ones(n) if row_weights is None else np.asarray(row_weights, dtype=float)
    return Observed(weights, None if offset is None else np.asarray(offset, dtype=float))


# The last cross-validation's all-rows fits, for the refits of the same candidates on the same
# rows (results' statsmodels-agreeing coefficients): (kind, weak references to X, y and the
# weights and offset (or None), fits, the moments of the columns of X read). Weak references,
# so a design that goes is not kept, and a new one at its address is never matched; only the
# last cross-validation's, so a fit keeps no more than its own candidates' optima.
_LAST_CV: list = []


def _remember(kind: str, arrays: tuple, fits: dict, moments: dict) -> None:
    try:
        refs = tuple(None if a is None else weakref.ref(a) for a in arrays)
    except TypeError:  # not weakly referable: no reuse
        refs = None
    _LAST_CV[:] = [] if refs is None else [(kind, refs, fits, moments)]


def _last_cv(kind: str, arrays: tuple) -> tuple[dict, dict] | None:
    """The last cross-validation's fits and column moments if it was of *kind* on these very
    arrays (X, y, weights, offset: the same objects, or None where none was given)."""
    for known, refs, fits, moments in list(_LAST_CV):
        same = all((ref is None and a is None) or (ref is not None and ref() is a)
                   for ref, a in zip(refs, arrays))
        if known == kind and same:
            return fits, moments
    return None


def _cv_fit(kind: str, arrays: tuple, columns: np.ndarray, ridge: float) -> tuple | None:
    """The last cross-validation's all-rows fit of *columns* at *ridge* on these very arrays."""
    last = _last_cv(kind, arrays)
    if last is None:
        return None
    return last[0].get((tuple(int(c) for c in np.asarray(columns)), float(ridge)))


def _cv_moments(kind: str, arrays: tuple) -> dict | None:
    """The moments of the columns of X the last cross-validation on these very arrays read."""
    last = _last_cv(kind, arrays)
    return None if last is None else last[1]


def glm_fit(
    kind: str,
    X: np.ndarray,
    y: np.ndarray,
    columns: np.ndarray,
    ridge: float = 0.0,
    label: str = "",
    separation: str = "drop",
    row_weights: np.ndarray | None = None,
    offset: np.ndarray | None = None,
) -> tuple[np.ndarray, list[LedgerEntry]]:
    """Fit one candidate on all rows (with *row_weights* and *offset* as for
    :func:`glm_cv_predict`).

    With ``separation="ridge"`` a separated logistic fit is redone with the
    smallest larger ridge of the ladder that has a finite optimum (recorded in
    the notes); ``"raise"`` raises :class:`~pearlstats.exceptions.SeparationError`.

    Returns
    -------
    params : ndarray
        Coefficients on the original column scale.
    entries : list of LedgerEntry
        Separation / convergence notes for the refit (stage ``"refit"``).
    """
    # a Newton step or none from the CV's optimum, on the columns as the CV standardised them
    arrays = (X, y, row_weights, offset)
    start = _cv_fit(kind, arrays, columns, ridge)
    design, result, ladder = newton_fit(_engine(kind), X, y, columns, ridge, separation, label,
                                        start, _observed(len(y), row_weights, offset),
                                        _cv_moments(kind, arrays))
    return design.original(result.theta[0]), ladder + _notes(label, result, [None], "refit")
