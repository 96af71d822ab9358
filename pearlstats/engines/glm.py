"""Logistic and Poisson candidates: batched Newton fits over all folds at once.

The folds of one candidate are solved together by the driver in
:mod:`pearlstats.engines.newton_cv`; this module gives it the likelihoods. The maximum-likelihood
fits equal ``sm.Logit`` / ``sm.GLM(family=Poisson())`` where those converge.

Separation (logistic) is detected when, without a ridge penalty, a fold is
still taking large steps (``SEPARATION_STEP`` on standardised coefficients)
after ``SEPARATION_MIN_ITER`` Newton iterations while a training row's
linear predictor exceeds ``SEPARATION_ETA`` in absolute value. Newton converges
quadratically when the MLE exists, so a fit still diverging by then has no MLE;
it is halted and reported rather than left to produce huge coefficients. (A
converged fit may legitimately give some rows probabilities within 1e-15 of
0 or 1; that alone is not separation.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..backends.chunks import map_chunks
from ..ledger import LedgerEntry
from ._common import EngineOutput
from .likelihood import mean_of, row_terms, variance_of
from .newton import batched_newton, penalised_newton
from .newton_cv import (
    SEPARATION_ETA,
    SEPARATION_MIN_ITER,
    SEPARATION_STEP,
    NewtonEngine,
    newton_cv_predict,
    newton_fit,
    newton_notes,
    separation_check,
)

if TYPE_CHECKING:
    from ..design.candidates import Candidate

__all__ = ["glm_cv_predict", "glm_fit", "SEPARATION_ETA", "SEPARATION_MIN_ITER", "SEPARATION_STEP"]

# Rows per block of the likelihood's sums (:func:`_make_loss`): 16 MB of (K, p, rows)
# Hessian product at K = 10, p = 51.
_BLOCK_ROWS = 4096

# Columns from which a block's K weighted Gram matrices are formed one at a time
# (:func:`_weighted_grams`; below it the batched product is faster).
_GRAM_WIDTH = 16


def _mean_and_variance(kind: str, eta: np.ndarray):
    mu = mean_of(kind, eta)
    return mu, variance_of(kind, mu)


def _row_loss(kind: str, eta: np.ndarray, y: np.ndarray) -> np.ndarray:
    return row_terms(kind, eta.copy(), y)[0]


def _weighted_grams(Z_rows: np.ndarray, row_weights: np.ndarray) -> np.ndarray:
    """``Z' diag(row_weights[k]) Z`` for each k: (K, p, p), as
    ``np.matmul(Z_rows.T[None] * row_weights[:, None, :], Z_rows)`` gives them, bit for bit.

    From :data:`_GRAM_WIDTH` columns on, one problem at a time: each product is the same
    BLAS call on the same layout (the weighted columns column-major, as the batched
    product lays out each problem's), without the (K, p, rows) temporary (16 MiB at
    K = 10, p = 51), which took a third longer to form and read than K cached (p, rows) ones.
    """
    if Z_rows.shape[1] < _GRAM_WIDTH:
        return np.matmul(Z_rows.T[None] * row_weights[:, None, :], Z_rows)
    grams = np.empty((len(row_weights),) + (Z_rows.shape[1],) * 2)
    scaled = np.empty_like(Z_rows).T
    for k, weights in enumerate(row_weights):
        np.multiply(Z_rows.T, weights, out=scaled)
        np.matmul(scaled, Z_rows, out=grams[k])
    return grams


def _make_loss(kind, Z, y, weights, n_train):
    """Mean negative log-likelihood over each fold's training rows (no penalty).

    The value, gradient and Hessian are summed over blocks of :data:`_BLOCK_ROWS` rows, so
    the working memory is a few (K, rows) arrays and one (K, p, rows) product per block,
    not their all-rows versions (the Hessian's was 4 GB at K = 10, p = 51, n = 10^6). The
    block size is fixed, not the backend's chunk size: a Newton fit stops anywhere within
    its tolerance (about 1e-10 in the coefficients), so sums in another order can end it a
    step earlier or later; with fixed blocks the fits do not depend on how the rows are
    chunked. With n within one block the sums are those over all rows at once.
    """

    def block(theta, order, rows: slice) -> list:
        Z_rows, w, y_rows = Z[rows], weights[:, rows], y[rows]
        eta = theta @ Z_rows.T  # (K, rows)
        loss, mu = row_terms(kind, eta, y_rows)  # the dask passes' row terms (one exp)
        sums = [np.sum(w * loss, axis=1)]
        if order >= 1:
            sums.append((w * (mu - y_rows)) @ Z_rows)
        if order == 2:
            sums.append(_weighted_grams(Z_rows, w * variance_of(kind, mu)))
        return sums

    def loss(theta, order):
        sums = None
        for values in map_chunks(lambda rows: block(theta, order, rows), len(y), _BLOCK_ROWS):
            sums = values if sums is None else [a + b for a, b in zip(sums, values)]
        f = sums[0] / n_train
        if order == 0:
            return f
        g = sums[1] / n_train[:, None]
        if order == 1:
            return f, g
        return f, g, sums[2] / n_train[:, None, None]

    return loss


def _extreme_rows(Z, weights) -> Callable:
    """``extreme_rows(theta)`` of :func:`separation_check`, a block of rows at a time.

    The (K, n) linear predictors and masks are never formed at once (152 MiB at K = 10,
    n = 10^6 for the predictors and their absolute values).
    """
    def extreme_rows(theta):
        def block(rows: slice) -> np.ndarray:
            eta = theta @ Z[rows].T
            return np.any((weights[:, rows] > 0) & (np.abs(eta) > SEPARATION_ETA), axis=1)

        return np.logical_or.reduce(list(map_chunks(block, len(Z), _BLOCK_ROWS)))

    return extreme_rows


def _solve(kind, Z, y, weights, penalty, ridge, intercept, theta0):
    n_train = weights.sum(axis=1)
    separated = separation_check(_extreme_rows(Z, weights), ridge, kind == "binomial")

    if theta0 is None:
        theta0 = np.zeros((weights.shape[0], Z.shape[1]))
        if kind == "poisson" and intercept is not None:
            # Start from the intercept-only mean so the first exp() cannot overflow.
            mean_y = (weights @ y) / n_train
            theta0[:, intercept] = np.log(np.maximum(mean_y, 1e-8)) / Z[0][intercept]
    penalty = penalty * np.ones((weights.shape[0], 1))
    # batched_newton is looked up here, at call time, so tests can replace it in this module.
    return penalised_newton(_make_loss(kind, Z, y, weights, n_train), theta0, ridge, penalty,
                            stop=separated, newton=batched_newton)


def _notes(label: str, result, fold_ids, stage: str) -> list:
    sign = f"a training row's linear predictor beyond {SEPARATION_ETA:g} in absolute value"
    return newton_notes(label, result, fold_ids, stage, sign)


def _engine(kind: str) -> NewtonEngine:
    def solve(Z, y, weights, penalty, ridge, intercept, theta0):
        return _solve(kind, Z, y, weights, penalty, ridge, intercept, theta0)

    def predict(Z_rows, theta):
        return _mean_and_variance(kind, Z_rows @ theta)[0]

    return NewtonEngine(1, solve, predict, _notes, separates=kind == "binomial", reads_rows=True)


def glm_cv_predict(
    kind: str,
    X: np.ndarray,
    y: np.ndarray,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
    ridge: float = 0.0,
    separation: str = "drop",
    ridges: Mapping[str, float] | None = None,
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
        What to do with a logistic candidate whose classes separate (see
        :func:`~pearlstats.engines.newton_cv.newton_cv_predict`); Poisson fits ignore it.
    ridges : mapping, optional
        Label -> ridge a candidate starts from (at least *ridge*).

    Returns
    -------
    EngineOutput
        ``predictions`` (n, J): probabilities of class 1, or Poisson means;
        ``ridges`` the ridge each candidate was fitted with.
    """
    return newton_cv_predict(_engine(kind), X, y, candidates, folds, ridge, separation=separation,
                             ridges=ridges)


def glm_fit(
    kind: str,
    X: np.ndarray,
    y: np.ndarray,
    columns: np.ndarray,
    ridge: float = 0.0,
    label: str = "",
    separation: str = "drop",
) -> tuple[np.ndarray, list[LedgerEntry]]:
    """Fit one candidate on all rows.

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
    design, result, ladder = newton_fit(_engine(kind), X, y, columns, ridge, separation, label)
    return design.original(result.theta[0]), ladder + _notes(label, result, [None], "refit")
