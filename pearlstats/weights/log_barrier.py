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

__all__ = ["LogBarrierForm"]

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
            return float(self.c @ _excess(u, self.shift) + self.b @ w) / self.n_obs
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
                    total -= self.c[part] @ _excess(self.A[part, block], self.shift[part, None])
                else:
                    total += self.c[part] @ np.log(self.A[part, block])
            out[block] = self.const - total + self.b[block]
        return out / self.n_obs


def _excess(u: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``phi(u / s - 1)`` with ``phi(r) = r - log1p(r)``, to its last digits also where u and s
    agree to many (``u - s`` is then exact; phi is summed as its series ``sum_k>=2 (-r)^k / k``,
    whose terms after k = 9 are below 1e-17 of it for ``|r| < 0.01``; elsewhere
    ``r - log(u / s)`` loses at most ``2 eps / |r|``)."""
    r = (u - s) / s
    small = np.abs(r) < 1e-2
    series = sum((-r) ** k / k for k in range(2, 10))
    # log(u / s), not log1p(r): a mean floored at EPS has u / s > 0 where r rounds to -1
    return np.where(small, series, r - np.log(u / s))
