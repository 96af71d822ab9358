"""Penalised fits with observation weights and an offset: the engines' ridge, weighted.

A candidate fitted with ``ridge > 0`` on training rows ``T`` with weights ``w`` and offset
``o`` minimises the weighted mean loss plus the ridge of :mod:`pearlstats.engines._common`,

    sum_T w_i l(y_i, x_i'b + o_i) / sum_T w_i  +  ridge / 2 * sum_j (sd_j * b_j) ** 2,

over the non-intercept coefficients, ``sd_j`` the *weighted* SD (ddof 0) of column j over
the training rows (a column constant there: its all-rows weighted scale, as the unweighted
engines use their all-rows scale). ``l`` is half the squared error (gaussian) or the
negative log-likelihood (binomial, poisson). With all weights 1 and offset 0 this is the
unweighted engines' objective, so the fits are theirs; a frequency weight of 2 is the row
twice (the weighted SD and mean loss are those of the repeated rows); scaling all weights
changes nothing. Gaussian fits (:func:`penalised_weighted_fit`) run on the columns
standardised over the training rows (centred when the intercept is among them), by least
squares on the penalised system; binomial and poisson fits are the Newton engine's, given
this penalty on its standardised coefficients (:func:`weighted_standardised_penalty`).
statsmodels' ``GLM(..., freq_weights= | var_weights=, offset=).fit_regularized(alpha=,
L1_wt=0)`` divides the log-likelihood by the number of rows, not the weights' sum: its
``alpha`` is ``ridge * sd_j**2 * sum(w) / n`` (see :func:`weighted_penalty_weights`).
"""

from __future__ import annotations

import numpy as np

from ._common import ScaledDesign, _intercept

__all__ = ["weighted_moments", "weighted_penalty_weights", "penalised_weighted_fit",
           "weighted_standardised_penalty", "all_rows_scale", "gram_solve"]

# Smallest squared Cholesky pivot of a unit-diagonal Gram solved by the normal equations
# (its condition number is then below about 1e8, so they keep ~8 of least squares' digits
# beyond float64's 1e-16); worse-conditioned systems go to lstsq.
_PIVOT_FLOOR = 1e-8


def gram_solve(gram: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """``gram^-1 rhs`` by Cholesky on the unit-diagonal scaling, or None when ill-conditioned.

    The scaled Gram's Cholesky pivots bound its conditioning; below ``_PIVOT_FLOOR`` the
    normal equations would lose the digits least squares keeps, and the caller uses lstsq.
    """
    with np.errstate(all="ignore"):  # overflowed moments (columns near 1e154) go to lstsq
        scale = np.sqrt(np.diag(gram))
        if not np.all(np.isfinite(scale) & (scale > 0)) or not np.isfinite(rhs).all():
            return None
        try:
            factor = np.linalg.cholesky(gram / np.outer(scale, scale))
        except np.linalg.LinAlgError:
            return None
        if not np.isfinite(factor).all() or np.diag(factor).min() ** 2 < _PIVOT_FLOOR:
            return None
        solved = np.linalg.solve(factor.T, np.linalg.solve(factor, rhs / scale)) / scale
    return solved if np.isfinite(solved).all() else None


def weighted_moments(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted mean, weighted SD (ddof 0; 0 for constant columns) and largest |value|.

    Each column is divided by its largest absolute value first (no under- or overflow).
    """
    big = np.abs(X).max(axis=0) if len(X) else np.zeros(X.shape[1])
    unit = np.where(big > 0, big, 1.0)
    Z = X / unit
    share = w / w.sum()
    mean = share @ Z
    sd = np.sqrt(share @ (Z - mean) ** 2)
    sd[X.max(axis=0) == X.min(axis=0)] = 0.0
    return mean * unit, sd * unit, big


def all_rows_scale(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each column's weighted SD over all rows; a constant column's |value|; 1 if all 0."""
    _, sd, big = weighted_moments(X, w)
    return np.where(sd > 0, sd, np.where(big > 0, big, 1.0))


def weighted_penalty_weights(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per-coefficient ridge weights on the original coefficients of *X* (all rows).

    The weighted variance of each column (its scale squared if constant), 0 for the
    intercept: ``ridge * weighted_penalty_weights(X, w) * w.sum() / len(w)`` is the
    ``alpha`` of statsmodels' ``GLM(..., freq_weights=w).fit_regularized(L1_wt=0)``, and
    ``ridge * weighted_penalty_weights(X, w)`` that of ``WLS(..., weights=w)``'s.

    Examples
    --------
    >>> X = np.column_stack([np.ones(3), [0.0, 1.0, 2.0]])
    >>> weighted_penalty_weights(X, np.array([1.0, 1.0, 2.0])).round(4).tolist()
    [0.0, 0.6875]
    """
    scale = all_rows_scale(X, w)
    penalized = np.ones(X.shape[1], dtype=bool)
    intercept = _intercept(X)
    if intercept is not None:
        penalized[intercept] = False
    return penalized * scale**2


def weighted_standardised_penalty(design: ScaledDesign, X_S: np.ndarray, w: np.ndarray,
                                  rows: list[np.ndarray] | None) -> np.ndarray:
    """This module's ridge as weights on coefficients standardised by *design*.

    For training rows T the penalty is ``ridge / 2 * sum_j (sd_j b_j)^2`` with ``sd_j`` the
    weighted SD of column j over T (its all-rows weighted scale where it is constant
    there); on ``gamma_j = scale_j b_j`` that is ``ridge / 2 * (sd_j / scale_j)^2 *
    gamma_j^2``. *rows* None: all rows, (1, p); else the held-out rows of each fold, (K, p)
    for their training rows. 0 for the intercept.

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> design = ScaledDesign.from_design(X)
    >>> w = np.array([1.0, 1.0, 1.0, 1.0])
    >>> weighted_standardised_penalty(design, X, w, None).tolist()
    [[0.0, 1.0]]
    >>> weighted_standardised_penalty(design, X, w, [np.array([3])]).round(4).tolist()
    [[0.0, 0.5333]]
    """
    all_scale = all_rows_scale(X_S, w)
    every = [np.ones(len(w), dtype=bool)]
    if rows is not None:
        every = []
        for held in rows:
            train = np.ones(len(w), dtype=bool)
            train[held] = False
            every.append(train)
    out = np.empty((len(every), X_S.shape[1]))
    for k, train in enumerate(every):
        sd = weighted_moments(X_S[train], w[train])[1]
        out[k] = np.where(design.penalized, (np.where(sd > 0, sd, all_scale) / design.scale) ** 2,
                          0.0)
    return out


def _training_design(X_S: np.ndarray, w: np.ndarray, train: np.ndarray,
                     all_scale: np.ndarray) -> ScaledDesign:
    """Standardisation by the training rows' weighted moments (all-rows scale if constant)."""
    mean, sd, _ = weighted_moments(X_S[train], w[train])
    intercept = _intercept(X_S)
    penalized = np.arange(X_S.shape[1]) != (-1 if intercept is None else intercept)
    value = 1.0 if intercept is None else float(X_S[0, intercept])
    center = np.zeros(X_S.shape[1]) if intercept is None else np.where(penalized, mean, 0.0)
    return ScaledDesign(center, np.where(sd > 0, sd, all_scale), penalized, intercept, value)


def penalised_weighted_fit(X_S: np.ndarray, y: np.ndarray, w: np.ndarray,
                           offset: np.ndarray, train: np.ndarray, ridge: float,
                           all_scale: np.ndarray | None = None) -> np.ndarray:
    """Coefficients (original columns) of one penalised weighted least-squares fit on the
    *train* rows (binomial and Poisson fits with this penalty are the Newton engine's:
    :class:`~pearlstats.engines.newton_cv.Observed`).

    Parameters
    ----------
    X_S : ndarray (n, p)
        The candidate's columns over all rows (their intercept and all-rows scales).
    y, w, offset : ndarray (n,)
    train : ndarray of bool (n,)
    ridge : float
        > 0.
    all_scale : ndarray (p,), optional
        The columns' all-rows weighted scales (computed when not given).

    Returns
    -------
    params : ndarray (p,)
    """
    if all_scale is None:
        all_scale = all_rows_scale(X_S, w)
    design = _training_design(X_S, w, train, all_scale)
    Z = design.transform(X_S[train])
    share = w[train] / w[train].sum()
    z, o = y[train], offset[train]
    penalized = design.penalized.astype(float)
    weighted = Z * share[:, None]
    gamma = gram_solve(weighted.T @ Z + np.diag(ridge * penalized), weighted.T @ (z - o))
    if gamma is None:  # ill-conditioned: least squares on the penalised system
        root = np.sqrt(share)
        system = np.vstack([Z * root[:, None], np.diag(np.sqrt(ridge * penalized))])
        target = np.concatenate([(z - o) * root, np.zeros(Z.shape[1])])
        gamma = np.linalg.lstsq(system, target, rcond=None)[0]
    return design.original(gamma)
