"""Ridge fits of wide candidates in the row space (the n x n dual), never forming p x p.

A candidate with more columns than training rows is fitted, when ``ridge > 0``,
through the representer theorem: its coefficients lie in the span of the
training rows, so only the n_T x n_T linear kernel of the training rows is
needed. For a sparse design that kernel is one sparse-times-sparse-transpose
product; nothing of size p x p is formed and the sparse columns are never
densified.

The objective is exactly the engines' (:mod:`pearlstats.engines._common`): the
mean training loss plus ``ridge / 2 * sum_j w_j b_j**2`` over the non-intercept
coefficients, ``w_j`` column j's variance (ddof 0) over the training rows, or
its all-rows scale squared where it is constant over them. With
``u_j = sqrt(w_j) b_j`` and ``Z = (X - m) diag(1 / sqrt(w))`` (``m`` the
training means when the intercept is among the columns, else 0) this is a
plain ridge on ``u`` whose solution is ``u = Z_T' a``:

- gaussian: ``(K + n_T ridge I) a = y_T - mean(y_T)``, ``K = Z_T Z_T'``;
- logistic and Poisson: Newton on ``(a, c)`` for ``eta = c + K a`` with the
  penalty ``ridge / 2 * a' K a`` (the same objective, n_T + 1 unknowns);
- multinomial: the same for each class but the reference, ``(C - 1)(n_T + 1)``
  unknowns coupled through the softmax.

Coefficients on the original columns are ``b = diag(1 / w) (X_T - m)' a``.
The kernel is ``X_T D X_T'`` corrected for the centring by rank-one terms;
columns that are mostly non-zero (covariates) are centred explicitly instead,
so a covariate with a large mean loses no digits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp, softmax

from ..design.sparse import Values

# the likelihoods of the primal engine: one definition of each family's loss
from .glm import _mean_and_variance, _row_loss

__all__ = ["DualColumns", "dual_fit"]

# Columns with more than this share of non-zero rows are centred explicitly (dense).
_DENSE_SHARE = 0.5
_MAX_ITER = 100


@dataclass(frozen=True)
class DualColumns:
    """A candidate's columns of the full design, split for the kernel.

    Attributes
    ----------
    X : sparse or ndarray (n, s)
        The candidate's columns (all rows).
    intercept : int or None
        Position of the intercept among them (never penalised).
    intercept_value : float
    scale : ndarray (s,)
        All-rows scale of each column (SD, else |value|, else 1): the penalty
        of a column constant over the training rows.
    dense : ndarray of int
        Columns centred explicitly (mostly non-zero).
    """

    X: object
    intercept: int | None
    intercept_value: float
    scale: np.ndarray
    dense: np.ndarray

    @classmethod
    def of(cls, X: Values, columns: np.ndarray) -> DualColumns:
        """The columns *columns* of *X*.

        The intercept is the first of them constant and non-zero over all rows, as for
        the primal engines (:class:`~pearlstats.engines._common.ScaledDesign`).
        """
        columns = np.asarray(columns)
        Xs = sp.csr_matrix(X[:, columns]) if sp.issparse(X) else np.asarray(X[:, columns])
        mean, var, high, low = _moments(Xs, np.ones(Xs.shape[0], dtype=bool))
        big = np.maximum(np.abs(high), np.abs(low))
        scale = np.where(high > low, np.sqrt(var), np.where(big > 0, big, 1.0))
        first = _row(Xs, 0) if Xs.shape[0] else np.zeros(columns.size)
        constant = np.flatnonzero((high == low) & (first != 0))
        local = int(constant[0]) if constant.size else None
        value = float(first[local]) if local is not None else 1.0
        nonzero = Xs.getnnz(axis=0) if sp.issparse(Xs) else np.count_nonzero(Xs, axis=0)
        dense = np.flatnonzero(nonzero > _DENSE_SHARE * Xs.shape[0])
        return cls(Xs, local, value, scale, dense)


def _row(X, i: int) -> np.ndarray:
    return X[[i]].toarray().ravel() if sp.issparse(X) else X[i]


def _moments(X, rows: np.ndarray):
    """Mean, variance (ddof 0), max and min per column over *rows* (dense or sparse)."""
    Xr = X[rows]
    n = Xr.shape[0]
    if sp.issparse(Xr):
        mean = np.asarray(Xr.sum(axis=0)).ravel() / n
        square = np.asarray(Xr.multiply(Xr).sum(axis=0)).ravel() / n
        high = Xr.max(axis=0).toarray().ravel()
        low = Xr.min(axis=0).toarray().ravel()
        var = np.maximum(square - mean**2, 0.0)
    else:
        mean, var = Xr.mean(axis=0), Xr.var(axis=0)
        high, low = Xr.max(axis=0), Xr.min(axis=0)
    var = np.where(high > low, var, 0.0)
    return mean, var, high, low


@dataclass
class _FoldKernel:
    """The training rows' centred, penalty-scaled kernel and what turns *a* into coefficients."""

    K: np.ndarray  # (n_T, n_T)
    inverse_weight: np.ndarray  # (s,) 1 / w_j, 0 for the intercept
    centre: np.ndarray  # (s,) m


def _fold_kernel(cols: DualColumns, train: np.ndarray) -> _FoldKernel:
    mean, var, high, low = _moments(cols.X, train)
    weight = np.where(high > low, var, cols.scale**2)
    inverse = 1.0 / weight
    centre = mean if cols.intercept is not None else np.zeros_like(mean)
    if cols.intercept is not None:
        inverse[cols.intercept] = 0.0
    XT = cols.X[train]
    sparse_part = inverse.copy()
    sparse_part[cols.dense] = 0.0
    if sp.issparse(XT):
        XT = sp.csr_matrix(XT)
        scaled = XT @ sp.diags(sparse_part)
        K = (scaled @ XT.T).toarray()
        shift = scaled @ centre  # X_T D m
    else:
        K = (XT * sparse_part) @ XT.T
        shift = (XT * sparse_part) @ centre
    offset = float(centre @ (sparse_part * centre))
    K = K - shift[:, None] - shift[None, :] + offset
    if cols.dense.size:
        Zd = (_dense(XT, cols.dense) - centre[cols.dense]) * np.sqrt(inverse[cols.dense])
        K += Zd @ Zd.T
    return _FoldKernel(0.5 * (K + K.T), inverse, centre)


def _dense(X, columns: np.ndarray) -> np.ndarray:
    return X[:, columns].toarray() if sp.issparse(X) else X[:, columns]


def _coefficients(cols: DualColumns, kernel: _FoldKernel, train: np.ndarray, a: np.ndarray,
                  c: float) -> np.ndarray:
    """Original-scale coefficients ``b = diag(1/w) (X_T - m)' a``; the intercept takes ``c``."""
    XT = cols.X[train]
    b = kernel.inverse_weight * (np.asarray(XT.T @ a).ravel() - kernel.centre * a.sum())
    if cols.intercept is not None:
        b[cols.intercept] = (c - kernel.centre @ b) / cols.intercept_value
    return b


def dual_fit(kind: str, cols: DualColumns, y: np.ndarray, train: np.ndarray,
             ridge: float, n_classes: int = 2) -> tuple[np.ndarray, bool]:
    """Coefficients (original columns) of one ridge fit on rows *train*, and whether it converged.

    Parameters
    ----------
    kind : {"gaussian", "binomial", "poisson", "multinomial"}
    cols : DualColumns
    y : ndarray (n,)
        Class codes 0..C-1 for multinomial.
    train : ndarray of bool (n,)
    ridge : float
        Must be positive.
    n_classes : int
        C, for multinomial: the coefficients are then (s, C - 1), class 0 the reference
        (statsmodels' ``MNLogit``).
    """
    kernel = _fold_kernel(cols, train)
    yT = y[train]
    n_T = yT.size
    if kind == "gaussian":
        centre = yT.mean() if cols.intercept is not None else 0.0
        A = kernel.K + n_T * ridge * np.eye(n_T)
        a = np.linalg.solve(A, yT - centre)
        return _coefficients(cols, kernel, train, a, centre), True
    if kind == "multinomial":
        A, c, converged = _multinomial_newton(kernel.K, yT, n_classes, ridge,
                                              cols.intercept is not None)
        b = [_coefficients(cols, kernel, train, A[:, k], c[k]) for k in range(n_classes - 1)]
        return np.column_stack(b), converged
    a, c, converged = _newton(kind, kernel.K, yT, ridge, cols.intercept is not None)
    return _coefficients(cols, kernel, train, a, c), converged


def _objective(kind, K, y, ridge, a, c) -> float:
    return float(_row_loss(kind, c + K @ a, y).mean() + 0.5 * ridge * a @ (K @ a))


def _newton(kind: str, K: np.ndarray, y: np.ndarray, ridge: float, intercept: bool):
    """Minimise mean loss(c + K a) + ridge / 2 a'Ka over (a, c) by damped Newton.

    The gradient in *a* is ``K (g / n + ridge a)``; the step solves the system with
    that factor K removed, which is the Newton step whenever K is nonsingular and a
    descent direction for the same fitted values when it is not.
    """
    n = y.size
    mean_y = y.mean()
    if kind == "binomial":
        c = float(np.log(np.clip(mean_y, 1e-8, 1 - 1e-8) / np.clip(1 - mean_y, 1e-8, 1)))
    else:
        c = float(np.log(max(mean_y, 1e-8)))
    c = c if intercept else 0.0
    a = np.zeros(n)
    value = _objective(kind, K, y, ridge, a, c)
    for _ in range(_MAX_ITER):
        mu, var = _mean_and_variance(kind, c + K @ a)
        g = mu - y
        top = np.column_stack([var[:, None] * K / n + ridge * np.eye(n), var / n])
        rhs = -np.append(g / n + ridge * a, g.sum() / n)
        if intercept:
            bottom = np.append(var @ K / n, var.sum() / n)
            step = np.linalg.solve(np.vstack([top, bottom]), rhs)
        else:
            step = np.append(np.linalg.solve(top[:, :n], rhs[:n]), 0.0)
        t = 1.0
        while True:
            trial = _objective(kind, K, y, ridge, a + t * step[:n], c + t * step[n])
            if trial <= value or t < 1e-10:
                break
            t /= 2
        a, c = a + t * step[:n], c + t * step[n]
        change = np.max(np.abs(t * (K @ step[:n] + step[n])))
        value = min(value, trial)
        if change < 1e-12 * (1.0 + np.max(np.abs(c + K @ a))):
            return a, c, True
    return a, c, False


def _multinomial_objective(K, onehot, ridge, A, c) -> float:
    eta = np.column_stack([np.zeros(K.shape[0]), c + K @ A])
    log_p = eta - logsumexp(eta, axis=1, keepdims=True)
    return float(-np.mean(np.sum(onehot * log_p, axis=1)) + 0.5 * ridge * np.sum(A * (K @ A)))


def _multinomial_system(K, p, ridge, intercept: bool) -> np.ndarray:
    """The Newton matrix of the multinomial dual with the factor K of the gradient removed.

    Unknowns: the m = C - 1 columns of A (n each), then the m intercepts. Class pair (c, d)
    has the weights ``W_cd = p_c (delta_cd - p_d)`` of the softmax Hessian.
    """
    n, m = p.shape
    size = m * (n + 1) if intercept else m * n
    M = np.zeros((size, size))
    for c in range(m):
        rows = slice(c * n, (c + 1) * n)
        for d in range(m):
            w = p[:, c] * ((c == d) - p[:, d]) / n
            cols = slice(d * n, (d + 1) * n)
            M[rows, cols] = w[:, None] * K
            if intercept:
                M[rows, m * n + d] = w
                M[m * n + c, cols] = w @ K
                M[m * n + c, m * n + d] = w.sum()
        M[rows, rows] += ridge * np.eye(n)
    return M


def _multinomial_newton(K: np.ndarray, codes: np.ndarray, n_classes: int, ridge: float,
                        intercept: bool):
    """Minimise the mean softmax loss of ``[0, c + K A]`` + ridge / 2 sum_c A_c' K A_c.

    The same damped Newton as :func:`_newton`, with the m = C - 1 classes' systems coupled
    through the softmax weights.
    """
    n, m = codes.size, n_classes - 1
    onehot = np.eye(n_classes)[codes]
    share = np.clip(onehot.mean(axis=0), 1e-8, None)
    c = np.log(share[1:] / share[0]) if intercept else np.zeros(m)
    A = np.zeros((n, m))
    value = _multinomial_objective(K, onehot, ridge, A, c)
    for _ in range(_MAX_ITER):
        eta = np.column_stack([np.zeros(n), c + K @ A])
        p = softmax(eta, axis=1)[:, 1:]
        G = p - onehot[:, 1:]
        rhs = -(G / n + ridge * A).ravel(order="F")
        if intercept:
            rhs = np.append(rhs, -G.sum(axis=0) / n)
        step = np.linalg.solve(_multinomial_system(K, p, ridge, intercept), rhs)
        dA = step[:m * n].reshape((n, m), order="F")
        dc = step[m * n:] if intercept else np.zeros(m)
        t = 1.0
        while True:
            trial = _multinomial_objective(K, onehot, ridge, A + t * dA, c + t * dc)
            if trial <= value or t < 1e-10:
                break
            t /= 2
        A, c = A + t * dA, c + t * dc
        value = min(value, trial)
        change = np.max(np.abs(t * (K @ dA + dc)))
        if change < 1e-12 * (1.0 + np.max(np.abs(c + K @ A))):
            return A, c, True
    return A, c, False
