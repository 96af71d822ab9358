"""The log-barrier form of the cross-entropy and Poisson-deviance weight objectives.

``f(w) = (const + sum_i c_i (-log A_i w) + b'w) / n_obs`` over the simplex (or, with a
*shift*, the same function as deviations from each row's optimum), with its gradient, the
factor of its Hessian and its values at the vertices, for
:func:`~pearlstats.weights.convex.solve_smooth`. The (n, J) matrix A is the form's only
row-sized array: products with it read the columns they need a block of rows at a time,
so a solve holds no second (n, J) array (issue 27: at n = 10^6 and J = 31 each is 237 MiB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LogBarrierForm", "relative_excess"]

# Rows of M whose used columns :func:`_times` copies at a time. OpenBLAS's matrix-vector
# product takes rows in groups, with another code path for the last few: with blocks of a
# multiple of 64 rows only the last block has those, at the rows where the all-rows product
# has them (blocks of 16 rows changed some rows' products in the last bit).
_TIMES_ROWS = 8192

# Bytes of logarithms LogBarrierForm.vertex_values forms at a time (one block of rows).
_LOG_BYTES = 2**25


def _times(M: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``M @ w`` using only the columns where ``w`` is non-zero (weights are sparse for large J).

    The used columns are copied :data:`_TIMES_ROWS` rows at a time, not all at once (at
    n = 10^6 up to half of M, 118 MiB of a 31-candidate one). Each row's product is the
    dot product of that row with ``w[used]``: the same numbers as one product over all
    rows (``test_times_by_row_chunks_equals_the_product_of_the_columns``).
    """
    used = np.flatnonzero(w)
    if 2 * used.size >= w.size:
        return M @ w
    if len(M) <= _TIMES_ROWS:
        return M[:, used] @ w[used]
    out = np.empty(len(M))
    for start in range(0, len(M), _TIMES_ROWS):
        rows = slice(start, start + _TIMES_ROWS)
        out[rows] = M[rows][:, used] @ w[used]
    return out


@dataclass(frozen=True)
class LogBarrierForm:
    """Objective ``f(w) = (const + sum_i c_i (-log A_i w) + b'w) / n_obs``, ``A > 0``, ``c > 0``.

    Cross-entropy has ``A_ij`` = probability candidate j gives the observed
    class of row i (floored at ``EPS``), ``c = 1``, ``b = 0``.

    Poisson deviance has ``A`` = the means on rows with ``y > 0``, ``c = 2y`` there (times
    the rows' weights), and is written with ``shift = y`` on those rows: ``f(w) = (sum_i
    c_i phi(A_i w / s_i - 1) + b'w) / n_obs`` with ``phi(r) = r - log1p(r)``, ``b`` = 2 *
    column sums of the means over the rows with ``y = 0`` and ``const = 0``: the same
    function as ``2 sum (y log y - y) - 2 sum y log(A w) + 2 sum_all (P w)``, whose terms of
    1e13 cancel to 1e-4 of a deviance at counts of 1e12 (the solver then could not certify
    its weights). Its gradient ``A'(c (u - s) / (s u)) + b`` (``u = A w``) keeps every digit
    where ``u`` and ``s`` agree to many; the Hessian is the same.
    """

    A: np.ndarray
    c: np.ndarray
    b: np.ndarray
    const: float
    n_obs: int
    unit: float = 1.0  # as in LeastSquaresForm; these losses are not standardised
    shift: np.ndarray | None = None

    @property
    def size(self) -> int:
        return self.A.shape[1]

    @property
    def n_rows(self) -> int:
        return self.A.shape[0]

    def restrict(self, columns: np.ndarray) -> LogBarrierForm:
        return LogBarrierForm(self.A[:, columns], self.c, self.b[columns], self.const, self.n_obs,
                              self.unit, self.shift)

    def value(self, w: np.ndarray) -> float:
        u = _times(self.A, w)
        if self.shift is not None:
            return float(self.c @ relative_excess(u, self.shift) + self.b @ w) / self.n_obs
        return float(self.const - self.c @ np.log(u) + self.b @ w) / self.n_obs

    def gradient(self, w: np.ndarray) -> np.ndarray:
        u = _times(self.A, w)
        if self.shift is not None:
            return (self.A.T @ (self.c * ((u - self.shift) / (self.shift * u))) + self.b
                    ) / self.n_obs
        return (self.b - self.A.T @ (self.c / u)) / self.n_obs

    def hessian_factor(self, w: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        """``W`` (m, J) with ``W'W`` the Hessian at ``w``; finite where ``W'W`` would overflow.

        With *columns*, only those columns of W (``W[:, columns]``, a new array), without
        forming the others.
        """
        u = _times(self.A, w)
        if columns is None:
            return self.A * (np.sqrt(self.c / self.n_obs) / u)[:, None]
        W = self.A[:, np.asarray(columns)]  # an index array: a copy, never a view of A
        W *= (np.sqrt(self.c / self.n_obs) / u)[:, None]
        return W

    def hessian(self, w: np.ndarray) -> np.ndarray:
        """The Hessian ``W'W``; it overflows for candidates with astronomically large predictions,
        which is why the solvers work with :meth:`hessian_factor` instead."""
        W = self.hessian_factor(w)
        return W.T @ W

    def vertex_values(self, chunk: int = 4096) -> np.ndarray:
        """``f(e_j)`` for every j, taking logs of a block of at most *chunk* columns and
        :data:`_LOG_BYTES` at a time to bound memory.

        (Beyond that many rows, summed over blocks of rows, in another order than one
        product over all rows: the values agree to rounding; they choose the solver's
        starting vertex.)
        """
        out = np.empty(self.size)
        for start in range(0, self.size, chunk):
            block = slice(start, start + chunk)
            width = len(range(self.size)[block])
            rows = max(16, _LOG_BYTES // (8 * width) // 16 * 16)
            total = np.zeros(width)
            for first in range(0, self.n_rows, rows):
                part = slice(first, first + rows)
                if self.shift is not None:
                    shift = self.shift[part, None]
                    total -= self.c[part] @ relative_excess(self.A[part, block], shift)
                else:
                    total += self.c[part] @ np.log(self.A[part, block])
            out[block] = self.const - total + self.b[block]
        return out / self.n_obs


# phi(r) = r - log1p(r) = r^2 (1/2 - r/3 + r^2/4 - ...): the coefficients (-1)^k / k, k = 2..9,
# of its series; for |r| < 0.01 the terms after k = 9 are below 1e-17 of it
_PHI_SERIES = tuple((-1) ** k / k for k in range(2, 10))


def relative_excess(u: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``phi(u / s - 1)`` with ``phi(r) = r - log1p(r)``, to its last digits also where u and
    s agree to many: ``s phi(u / s - 1) = u - s - s log(u / s)``, a Poisson deviance's half
    at count s and mean u, whose terms cancel there.

    ``r = (u - s) / s`` is exact to rounding (``u - s`` is exact where they are close). For
    ``|r| < 0.01`` phi is its series (Horner, on those entries only); for ``-0.5 < r`` it is
    ``r - log1p(r)``, which loses about ``2 eps / |r|`` of itself (at most 4.4e-14); below,
    ``r - log(u / s)`` (a mean floored at ``EPS`` has ``u / s > 0`` where r rounds to -1).
    *u* and *s* broadcast; every entry of *s* is positive.

    Examples
    --------
    >>> relative_excess(np.array([1e12 + 1e6]), np.array([1e12]))  # r^2 / 2 - r^3 / 3 + ...
    array([4.99999667e-13])
    """
    u, s = np.broadcast_arrays(u, s)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = (u - s) / s
        out = r - np.log1p(r)
    low = r <= -0.5
    if low.any():
        out[low] = r[low] - np.log(u[low] / s[low])
    small = np.abs(r) < 1e-2
    if small.any():
        near = r[small]
        total = np.full(near.shape, _PHI_SERIES[-1])
        for coefficient in reversed(_PHI_SERIES[:-1]):
            total = total * near + coefficient
        out[small] = total * near * near
    return out
