"""Candidates' all-rows refits as sums over rows: the per-rows kernel, and its in-memory pass.

statsmodels' inference for a candidate refitted on all rows (``OLS``, ``Logit``,
``GLM``: ``cov_params()``, ``df_resid``, ``scale``, ``llf``) needs only sums over
the rows at the candidate's all-rows coefficients: the Gram matrix of its columns
(gaussian) or the Fisher information ``X' W X`` (binomial, Poisson), the residual
sum of squares, the log-likelihood, the row count. :func:`row_sums` takes some rows
(the design's columns, the response, optionally offsets and observation weights)
and the coefficients of many candidates at once, and returns those sums as a
:class:`RefitSums`, whose ``+`` pools two sets of rows. The same kernel runs

- in memory over row chunks (:func:`chunk_refit_sums`, through
  :func:`pearlstats.backends.chunks.sum_chunks`, the design's columns read in place a
  chunk at a time), so the working memory is a chunk's, not the n-row copies of each
  candidate's columns that statsmodels' refits keep (exog, wexog, pinv);
- on dask data over the partitions (:mod:`pearlstats.distributed.inference`, through
  :func:`pearlstats.backends.partitions.tree_sum`).

:mod:`pearlstats.inference.sums_refit` turns the pooled sums into each candidate's
covariance and statsmodels-like results.

Numerics: every set of rows contributes its weighted column means and the Gram
matrix of its columns centred at them (a :class:`Spread`); sets are pooled exactly
by the pairwise update of Chan, Golub & LeVeque (1979), so a shifted covariate
(``x + 1e4``) or chunks with different column means lose no digits to
``sum x**2 - n mean**2``.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.column_stack([np.ones(6), rng.normal(size=6) + 1e4])
>>> left, right = Spread.of(X[:2]), Spread.of(X[2:])
>>> pooled = left + right
>>> bool(np.allclose(pooled.gram, np.cov(X.T, bias=True) * 6, rtol=1e-9, atol=1e-12))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from ..backends.chunks import sum_chunks
from ..backends.columns import ColumnStack
from ..engines.likelihood import mean_of, pearson_residuals, row_terms, variance_of
from ..engines.moments import chunk_columns

__all__ = ["FAMILIES", "RefitSums", "Spread", "chunk_refit_sums", "row_sums", "stack_columns"]

# the families whose refits are sums over rows (statsmodels' MNLogit is fitted as it is)
FAMILIES = ("gaussian", "binomial", "poisson")


# ---- sums over rows that pool exactly ------------------------------------------------------------
@dataclass(frozen=True)
class Spread:
    """Weighted row count, column means and centred Gram matrix of some rows.

    ``a + b`` pools the rows of both (Chan, Golub & LeVeque 1979): the means move by
    the weighted difference and the Gram gains ``delta delta' w_a w_b / (w_a + w_b)``,
    so no sum of squares about 0 is ever formed.

    Attributes
    ----------
    weight : float
        ``sum w``.
    mean : ndarray (p,)
        ``sum w x / sum w`` (0 without weight).
    gram : ndarray (p, p)
        ``sum w (x - mean)(x - mean)'``.
    """

    weight: float
    mean: np.ndarray
    gram: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray, w: np.ndarray | None = None) -> Spread:
        """The spread of the rows *X* with weights *w* (1 for None)."""
        total = float(len(X)) if w is None else float(w.sum())
        p = X.shape[1]
        if total <= 0:
            return cls(0.0, np.zeros(p), np.zeros((p, p)))
        mean = (X.sum(axis=0) if w is None else w @ X) / total
        B = X - mean
        if w is not None:
            B *= np.sqrt(w)[:, None]
        return cls(total, mean, B.T @ B)

    def __add__(self, other: Spread) -> Spread:
        total = self.weight + other.weight
        if other.weight <= 0:
            return Spread(self.weight, self.mean, self.gram + other.gram)
        if self.weight <= 0:
            return Spread(other.weight, other.mean, self.gram + other.gram)
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.weight / total)
        gram = self.gram + other.gram + np.outer(delta, delta) * (
            self.weight * other.weight / total)
        return Spread(total, mean, gram)

    def subset(self, columns: np.ndarray) -> Spread:
        return Spread(self.weight, self.mean[columns], self.gram[np.ix_(columns, columns)])

    def moment(self) -> np.ndarray:
        """``sum w x x'`` (about 0)."""
        return self.gram + self.weight * np.outer(self.mean, self.mean)


def _add_optional(a, b):
    return None if a is None else a + b


@dataclass(frozen=True)
class RefitSums:
    """What the refits of some candidates need from some rows; ``+`` pools two sets of rows.

    Attributes
    ----------
    design : Spread
        Of the design's columns, weighted by the observation weights (1 without).
    low, high, big : ndarray (p,)
        Column minima, maxima and maxima of ``|x|`` (inf, -inf, 0 over no rows).
    rows : float
        The number of rows (not weighted).
    log_weights : float
        ``sum log w`` (0 without weights): the concentrated gaussian log-likelihood with
        variance weights needs it.
    rss : ndarray (J,) or None
        Gaussian: each candidate's weighted residual sum of squares.
    llf : ndarray (J,) or None
        Binomial, Poisson: each candidate's (weighted) log-likelihood.
    info : tuple of Spread, or None
        Binomial, Poisson: each candidate's columns weighted by the GLM working
        weights (``mu (1 - mu)`` or ``mu``) times the observation weights.
    pearson : ndarray (J,) or None
        Binomial, Poisson: each candidate's Pearson statistic, the sum of the observation
        weights times ``(y - mu)^2 / V(mu)`` (statsmodels' GLM ``pearson_chi2``).
    """

    design: Spread
    low: np.ndarray
    high: np.ndarray
    big: np.ndarray
    rows: float
    log_weights: float = 0.0
    rss: np.ndarray | None = None
    llf: np.ndarray | None = None
    info: tuple | None = None
    pearson: np.ndarray | None = None

    def __add__(self, other: RefitSums) -> RefitSums:
        info = (None if self.info is None
                else tuple(a + b for a, b in zip(self.info, other.info)))
        return RefitSums(self.design + other.design, np.minimum(self.low, other.low),
                         np.maximum(self.high, other.high), np.maximum(self.big, other.big),
                         self.rows + other.rows, self.log_weights + other.log_weights,
                         _add_optional(self.rss, other.rss), _add_optional(self.llf, other.llf),
                         info, _add_optional(self.pearson, other.pearson))

    # sum_chunks adds with +=; the pooled value is a new object (the dataclass is frozen)
    __iadd__ = __add__

    def intercept(self, S: np.ndarray) -> int | None:
        """Position in S of the first column constant and non-zero over all rows (statsmodels'
        and the engines' intercept of the candidate's columns)."""
        constant = np.flatnonzero((self.low[S] == self.high[S]) & (self.low[S] != 0))
        return int(constant[0]) if constant.size else None

    def penalty_weights(self, S: np.ndarray) -> np.ndarray:
        """The engines' ridge weights of the columns S: their (weighted) variance, 0 for the
        intercept (:func:`~pearlstats.engines._common.ridge_penalty_weights`, and
        :func:`~pearlstats.engines.weighted_ridge.weighted_penalty_weights` with weights)."""
        n = self.design.weight
        constant = self.low[S] == self.high[S]
        sd = np.where(constant, 0.0, np.sqrt(np.maximum(np.diagonal(self.design.gram)[S] / n,
                                                        0.0)))
        scale = np.where(sd > 0, sd, np.where(self.big[S] > 0, self.big[S], 1.0))
        penalized = np.ones(S.size, dtype=bool)
        where = self.intercept(S)
        if where is not None:
            penalized[where] = False
        return penalized * scale**2


# ---- the kernel ----------------------------------------------------------------------------------
def _log_likelihood(kind: str, y: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Per-row, per-candidate log-likelihood (columns of eta), as statsmodels' Logit / Poisson
    (whose Poisson log-likelihood keeps the ``log(y!)`` the engines' loss drops)."""
    loss, _ = row_terms(kind, eta.copy(), y[:, None])
    return -loss if kind == "binomial" else -loss - gammaln(y + 1.0)[:, None]


def row_sums(kind: str, X: np.ndarray, y: np.ndarray, columns: Sequence[np.ndarray],
             B: np.ndarray, offset: np.ndarray | None = None,
             weights: np.ndarray | None = None) -> RefitSums:
    """The refit sums of some rows for the candidates whose columns and coefficients are given.

    Parameters
    ----------
    kind : {"gaussian", "binomial", "poisson"}
    X : ndarray (m, p)
        The rows' design columns (those of the candidates, at least).
    y : ndarray (m,)
        The rows' responses (0/1 for binomial).
    columns : sequence of int arrays
        Each candidate's positions among X's columns.
    B : ndarray (p, J)
        Each candidate's all-rows coefficients in its column (0 outside its columns).
    offset, weights : ndarray (m,), optional
        The rows' offsets (added to the linear predictor) and observation weights.

    Returns
    -------
    RefitSums
    """
    m, p = X.shape
    if m:
        low, high, big = X.min(axis=0), X.max(axis=0), np.abs(X).max(axis=0)
    else:
        low, high, big = np.full(p, np.inf), np.full(p, -np.inf), np.zeros(p)
    log_weights = 0.0
    if weights is not None:
        with np.errstate(divide="ignore"):  # a weight of 0: statsmodels' llf is -inf too
            log_weights = float(np.log(weights).sum())
    sums = {"design": Spread.of(X, weights), "low": low, "high": high, "big": big,
            "rows": float(m), "log_weights": log_weights}
    eta = X @ B  # zeros outside a candidate's columns add nothing
    if offset is not None:
        eta += offset[:, None]
    if kind == "gaussian":
        residuals = y[:, None] - eta
        residuals *= residuals
        sums["rss"] = residuals.sum(axis=0) if weights is None else weights @ residuals
        return RefitSums(**sums)
    ll = _log_likelihood(kind, y, eta)
    sums["llf"] = ll.sum(axis=0) if weights is None else weights @ ll
    mu = mean_of(kind, eta)
    working = variance_of(kind, mu)
    # (y - mu)^2 / V(mu); a row fitted exactly where V is 0 (mu = 0 for a count of 0) adds 0
    pearson = pearson_residuals(kind, y[:, None], mu) ** 2
    sums["pearson"] = pearson.sum(axis=0) if weights is None else weights @ pearson
    if weights is not None:
        working *= weights[:, None]
    sums["info"] = tuple(Spread.of(X[:, S], working[:, j]) for j, S in enumerate(columns))
    return RefitSums(**sums)


# ---- in memory: one pass over row chunks ---------------------------------------------------------
def stack_columns(column_sets: Sequence[np.ndarray], params: Sequence[np.ndarray]) -> tuple:
    """``(used, local, B)``: the union of the candidates' columns, each candidate's positions
    in it, and their coefficients as a (len(used), J) array (0 outside a candidate)."""
    used = np.unique(np.concatenate([np.asarray(S, dtype=np.intp) for S in column_sets]))
    local = [np.searchsorted(used, np.asarray(S, dtype=np.intp)) for S in column_sets]
    B = np.zeros((used.size, len(local)))
    for j, (S, b) in enumerate(zip(local, params)):
        B[S, j] = b
    return used, local, B


def chunk_refit_sums(kind: str, X: np.ndarray | ColumnStack, y: np.ndarray,
                     column_sets: Sequence[np.ndarray], params: Sequence[np.ndarray],
                     offset: np.ndarray | None = None,
                     weights: np.ndarray | None = None) -> tuple:
    """:func:`row_sums` of all rows in memory, one chunk of rows at a time.

    Parameters
    ----------
    kind : {"gaussian", "binomial", "poisson"}
    X : ndarray or ColumnStack
        The fit's design (read in place, a chunk of the candidates' columns at a time).
    y : ndarray (n,)
    column_sets : sequence of int arrays
        Each candidate's columns of the design.
    params : sequence of ndarray
        Each candidate's all-rows coefficients (aligned with its columns).
    offset, weights : ndarray (n,), optional

    Returns
    -------
    (RefitSums, local) :
        The pooled sums (over the union of the candidates' columns) and each candidate's
        positions among those columns.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([np.ones(20), rng.normal(size=(20, 2))])
    >>> y = X @ [1.0, 2.0, 0.0] + rng.normal(size=20)
    >>> b = np.linalg.lstsq(X[:, :2], y, rcond=None)[0]
    >>> sums, local = chunk_refit_sums("gaussian", X, y, [np.array([0, 1])], [b])
    >>> bool(np.isclose(sums.rss[0], np.sum((y - X[:, :2] @ b) ** 2)))
    True
    """
    used, local, B = stack_columns(column_sets, params)

    def one(rows: slice) -> RefitSums:
        return row_sums(kind, chunk_columns(X, rows, None, used), y[rows], local, B,
                        None if offset is None else offset[rows],
                        None if weights is None else weights[rows])

    return sum_chunks(one, len(y), width=used.size), local
