"""Squared-loss simplex weights from the J x J Gram matrix of the residual columns.

On the simplex ``y - P w = E w`` with ``E = y 1' - P``, so the squared loss
``mean (y - P w)^2 = w' (E'E / n) w`` depends on the rows only through the
J x J matrix ``E'E``. :func:`residual_gram` builds it in one pass over row
chunks; everything after that -- the active-set method, the minimum-norm
choice among tied optima, the certificate -- works on the J x J matrix, so the
solve costs the same at n = 100 and n = 10^6.

* **Accuracy.** ``E`` is formed chunk by chunk as ``y - P`` and each chunk's
  ``E'E`` is accumulated, then divided by ``s^2`` (``s`` a power of two near
  the spread of ``y``, so the division is exact):
  entry ``(i, j)`` is accurate to about ``eps ||E_i|| ||E_j||``, also when a
  candidate fits ``y`` exactly (its column is then rounding noise and its row
  of the Gram matrix is tiny, not the difference of two large moments).
  A column whose squares would overflow is scaled by a power of two first
  (the matrix is returned as ``D H D``, ``D = diag(d)``).
* **Stage 1: the optimum.** A primal active-set method on ``H``: on the face
  of the free candidates it moves to a minimiser of ``u'Hu`` over the face's
  affine hull (a least-squares solve of at most J x J, minimum-norm when the
  face is singular, so exact duplicates and collinear candidates need no
  ridge); a step that would leave the simplex stops at its boundary and frees
  the blocking candidate; at a face optimum the candidate with the most
  negative reduced gradient enters. It stops when the Frank-Wolfe gap is at
  round-off (``_STOP * max_j G_jj``).
* **Stage 2: the minimum-norm optimum.** The optimum of a singular problem is
  a face, not a point (two candidates that both fit exactly, a mix of two that
  reproduces a third). The weights returned are then the point of minimum
  Euclidean norm of that optimal face: with ``w*`` the stage-1 optimum, the
  optimal face is ``{w in simplex: w_j = 0 off T, E (w - w*) = 0}`` where
  ``T`` are the candidates whose reduced gradient is zero (within ``_TIE *
  max_j G_jj``) and ``E (w - w*) = 0`` holds for ``w - w*`` in the null space
  of ``G_TT`` (eigenvalues at most ``_NULL`` times its largest). Minimising
  ``||w||^2`` over it is a small strictly convex least-distance programme,
  solved exactly by its reduction to non-negative least squares (Lawson and
  Hanson; scipy's ``nnls``), checked (feasible, no worse, no larger norm),
  with an exact solve on the support of a slightly regularised optimum as a
  second route and the stage-1 optimum as the last. Equal shares for
  duplicates, a third each for ``{e_3, (e_1 + e_2)/2}``-type ties: the rule is
  invariant to permuting the candidates. Merged duplicates count with their
  multiplicity (the norm is that of the weights of all candidates).

:func:`simplex_least_squares` returns the weights; the caller certifies them
(finite, non-negative, sum 1, Frank-Wolfe gap from ``G``).
:class:`LeastSquaresForm` is the squared loss's view of a problem (the
solvers' interface: value, gradient, restriction, the Gram matrix).

Examples
--------
>>> import numpy as np
>>> y = np.array([1.0, 2.0, 3.0, 4.0])
>>> P = np.column_stack([y, y, y + 1.0])  # two exact fits: a tie, split equally
>>> H, d = residual_gram(P, y, 1.0, 4)
>>> simplex_least_squares(H, d).round(12).tolist()
[0.5, 0.5, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.optimize import nnls

__all__ = [
    "LeastSquaresForm", "residual_gram", "residual_products", "simplex_least_squares",
    "frank_wolfe_gap",
]

_CHUNK_ELEMENTS = 1 << 16  # rows per chunk times columns: a chunk of E stays in cache
_SAFE = 1e200  # a column sum of squares above this (in units of scale^2) is rescaled
_STOP = 64 * np.finfo(float).eps  # stage 1 stops at a Frank-Wolfe gap this relative to max G_jj
_TIE = 1e-12  # reduced gradients this relative to max G_jj are zero: the candidate may share
_NULL = 1e-12  # eigenvalues of G_TT this relative to its largest are zero: a tie direction


def _chunks(m: int, J: int):
    step = max(1, _CHUNK_ELEMENTS // max(J, 1))
    for start in range(0, m, step):
        yield slice(start, min(start + step, m))


def _residual_chunk(X: np.ndarray, t: np.ndarray, rows: slice, inv_scale: np.ndarray):
    """``E[rows] = (t 1' - X)[rows] * inv_scale`` (per-column powers of two: exact scalings)."""
    return (t[rows, None] - X[rows]) * inv_scale


def _gram_pass(X: np.ndarray, t: np.ndarray, inv: np.ndarray | None) -> np.ndarray:
    """``E'E`` summed over row chunks; ``E = t 1' - X``, times ``inv`` (per column) if given."""
    m, J = X.shape
    H = np.zeros((J, J))
    buffer = np.empty((max(1, _CHUNK_ELEMENTS // max(J, 1)), J))
    for rows in _chunks(m, J):
        E = buffer[: rows.stop - rows.start]
        if inv is None:
            np.subtract(t[rows, None], X[rows], out=E)
        else:  # scaled before subtracting: no overflow
            np.subtract(t[rows, None] * inv, X[rows] * inv, out=E)
        H += E.T @ E  # numpy's A.T @ A is a symmetric rank-k update
    return H


def residual_gram(X: np.ndarray, t: np.ndarray, scale: float, n_obs: int):
    """``(H, d)`` with ``E'E / n_obs = D H D``, ``E = (t 1' - X) / scale``, one pass over chunks.

    The pass forms ``t 1' - X`` unscaled and divides the sums by ``scale^2``
    (a power of two: exact) when the squares of entries of the size of
    ``scale`` neither overflow nor lose digits to underflow. ``d`` is 1 for
    every column unless an entry is so large that the sums overflow (or the
    scale itself is extreme): a second pass then scales every column by
    ``1 / scale`` and such columns by a further power of two before their
    products, so ``H`` stays finite (``D H D`` itself may not be representable).

    Parameters
    ----------
    X : ndarray (m, J)
    t : ndarray (m,)
    scale : float
        A power of two (exact division), e.g. the spread of ``t``.
    n_obs : int
        The divisor of the mean.
    """
    m, J = X.shape
    d = np.ones(J)
    if 1e-100 < scale < 1e100:
        with np.errstate(over="ignore", invalid="ignore"):
            H = _gram_pass(X, t, None)
        diagonal = np.diagonal(H) / scale**2
        if np.isfinite(H).all() and diagonal.max(initial=0.0) < _SAFE:
            return H / scale**2 / n_obs, d
    inv = np.full(J, 1.0 / scale)
    # a power of two at least half of each column's largest possible entry (no overflow)
    half = 0.5 * np.abs(X).max(axis=0, initial=0.0) + 0.5 * float(np.abs(t).max(initial=0.0))
    big = half * inv > 1e100
    d[big] = 2.0 ** (1 + np.ceil(np.log2(half[big]) + np.log2(inv[big])))
    return _gram_pass(X, t, inv / d) / n_obs, d


def residual_products(X: np.ndarray, t: np.ndarray, scale: float, v: np.ndarray) -> np.ndarray:
    """``E'v`` (J,) with ``E = (t 1' - X) / scale``, chunk by chunk (no (m, J) copy)."""
    m, J = X.shape
    inv = np.full(J, 1.0 / scale)
    out = np.zeros(J)
    for rows in _chunks(m, J):
        out += v[rows] @ _residual_chunk(X, t, rows, inv)
    return out


def largest_vertex(H: np.ndarray, d: np.ndarray) -> float:
    """The largest finite single-candidate value ``G_jj = H_jj d_j^2`` (the tolerances' scale)."""
    with np.errstate(over="ignore"):
        vertex = np.diagonal(H) * d**2
    return float(vertex[np.isfinite(vertex)].max(initial=0.0))


def frank_wolfe_gap(H: np.ndarray, d: np.ndarray, w: np.ndarray) -> float:
    """``g'w - min_j g_j`` with ``g = 2 G w`` the gradient of ``w'Gw``, ``G = D H D``."""
    u = d * w
    with np.errstate(over="ignore"):  # a column of 1e250 has an infinite gradient, weight 0
        g = 2.0 * d * (H @ u)
    used = w > 0
    return max(float(g[used] @ w[used] - g.min()), 0.0)


# ---- stage 1: active set on the Gram matrix ---------------------------------------------------
def _face_minimiser(H: np.ndarray, a: np.ndarray, start: np.ndarray) -> np.ndarray:
    """A minimiser of ``z'Hz`` subject to ``a'z = a'start``, the one nearest to ``start``.

    ``z = start + N v`` with ``N`` an orthonormal basis of ``{a'x = 0}``; the
    minimum-norm least-squares ``v`` of ``(N'HN) v = -N'H start`` (SVD) copes
    with a singular face and leaves a residual at round-off (backward stable),
    so the gradient on the face is constant to round-off however ill-conditioned.
    """
    k = a.size
    if k == 1:
        return start.copy()
    N = np.linalg.qr(a[:, None], mode="complete")[0][:, 1:]
    HN = H @ N
    v = np.linalg.lstsq(N.T @ HN, -(HN.T @ start), rcond=None)[0]
    return start + N @ v


def _active_set(H: np.ndarray, a: np.ndarray, max_iter: int) -> np.ndarray:
    """Minimise ``u'Hu`` subject to ``a'u = 1``, ``u >= 0`` (``a > 0``), from the best vertex."""
    J = a.size
    with np.errstate(over="ignore", divide="ignore"):  # a column of 1e250: inf, never chosen
        vertex = np.diagonal(H) / a**2  # u'Hu at the vertex u = e_j / a_j
    stop = _STOP * float(vertex.max())
    u = np.zeros(J)
    first = int(np.argmin(vertex))
    u[first] = 1.0 / a[first]
    free = u > 0
    for _ in range(max_iter + 3 * J):
        F = np.flatnonzero(free)
        target = _face_minimiser(H[np.ix_(F, F)], a[F], u[F])
        step = target - u[F]
        shrinking = step < 0
        ratios = np.full(F.size, np.inf)
        ratios[shrinking] = u[F][shrinking] / -step[shrinking]
        blocking = int(np.argmin(ratios))
        if ratios[blocking] < 1.0:  # the face's minimiser is outside the simplex: stop at the edge
            moved = np.maximum(u[F] + ratios[blocking] * step, 0.0)
            moved[blocking] = 0.0
            u[F] = moved
            free = u > 0
            continue
        u[F] = np.maximum(target, 0.0)
        u /= a @ u
        g = 2.0 * (H @ u)
        reduced = (g - (g @ u) * a) / a  # in weight units: the Frank-Wolfe gap is -min(reduced)
        outside = np.flatnonzero(~free)
        if outside.size == 0:
            break
        entering = outside[np.argmin(reduced[outside])]
        if reduced[entering] >= -stop:
            break
        free[entering] = True
    return u


# ---- stage 2: minimum norm over the optimal face ----------------------------------------------
def _minimum_norm_face(H: np.ndarray, d: np.ndarray, w: np.ndarray,
                       multiplicity: np.ndarray) -> np.ndarray:
    """The minimum-norm point of the optimal face through the optimum ``w`` (see the module notes).

    Column j stands for ``multiplicity[j]`` merged duplicates sharing its weight
    equally, so its part of the norm of the full weight vector is ``w_j^2 / k_j``.
    """
    u = d * w
    with np.errstate(over="ignore", invalid="ignore"):  # a column of 1e250 is never tied
        g = 2.0 * d * (H @ u)  # the gradient in weight coordinates
    scale = largest_vertex(H, d)
    with np.errstate(over="ignore"):
        ordinary = np.isfinite(np.diagonal(H) * d**2)  # a 1e250 column cannot share an optimum
    tied = np.flatnonzero((g - g[w > 0] @ w[w > 0] <= _TIE * scale) & ordinary)
    if tied.size < 2:
        return w
    with np.errstate(over="ignore", invalid="ignore"):
        G = d[tied, None] * H[np.ix_(tied, tied)] * d[None, tied]
    if not np.isfinite(G).all():
        return w
    values, vectors = np.linalg.eigh(G)
    N = vectors[:, values <= _NULL * max(float(values[-1]), 0.0)]
    if N.shape[1] == 0:
        return w
    k, current = multiplicity[tied], w[tied]
    best, top = float(current @ G @ current), float(values[-1])
    for attempt in (_least_distance_point, _support_point):
        point = attempt(G, N, current, k, top)
        if point is not None and _acceptable(G, point, current, k, best + _TIE * scale):
            out = np.zeros_like(w)
            out[tied] = point
            return out
    return w


def _acceptable(G, point, current, k, objective_bound: float) -> bool:
    """A candidate minimum-norm optimum: feasible, as good as ``current``, not of larger norm."""
    return bool(
        np.isfinite(point).all() and point.min() >= 0.0 and abs(point.sum() - 1.0) <= 1e-12
        and float(point @ G @ point) <= objective_bound
        and float(point @ (point / k)) <= float(current @ (current / k)) * (1 + 1e-12)
    )


def _feasible_point(raw: np.ndarray) -> np.ndarray | None:
    """``raw`` with round-off negatives zeroed and renormalised, or None if it is not near the
    simplex (a failed reduction)."""
    if not (np.isfinite(raw).all() and raw.min() >= -1e-9 and abs(raw.sum() - 1.0) <= 1e-9):
        return None
    point = np.maximum(raw, 0.0)
    return point / point.sum()


def _least_distance_point(G, N, current, k, top) -> np.ndarray | None:
    """The minimum-norm optimum as ``current + N z`` (:func:`_least_norm_shift`)."""
    z = _least_norm_shift(N, current, k)
    return None if z is None else _feasible_point(current + N @ z)


def _support_point(G, N, current, k, top) -> np.ndarray | None:
    """The minimum-norm optimum from its support, for problems that defeat the reduction.

    The support is that of the optimum of ``w'(G + eps diag(1/k))w`` (``eps =
    1e-10`` of the largest eigenvalue: strictly convex, its optimum tends to
    the minimum-norm optimum as ``eps -> 0``), solved by the active set; on
    that support the minimiser of ``z'G z`` over ``{sum z = 1}`` of least
    norm (null directions as in the module notes) is computed exactly.
    """
    regularised = (G + 1e-10 * top * np.diag(1.0 / k)) / top
    u = _active_set(regularised, np.ones(k.size), 500)
    S = np.flatnonzero(u > 1e-8 * u.max())
    root = np.sqrt(k[S])  # z = root * x turns the norm sum z^2 / k into ||x||^2
    Gx = root[:, None] * G[np.ix_(S, S)] * root[None, :]
    start = root / (root @ root)  # the least-norm x with root'x = 1
    basis = np.linalg.qr(root[:, None], mode="complete")[0][:, 1:]
    values, vectors = np.linalg.eigh(basis.T @ Gx @ basis)
    keep = values > _NULL * top
    rhs = vectors.T @ (basis.T @ (Gx @ start))
    v = -vectors[:, keep] @ (rhs[keep] / values[keep])
    point = np.zeros(k.size)
    point[S] = root * (start + basis @ v)
    return _feasible_point(point)


def _least_norm_shift(N: np.ndarray, w: np.ndarray, k: np.ndarray) -> np.ndarray | None:
    """``z`` minimising ``sum_j (w + N z)_j^2 / k_j`` subject to ``w + N z >= 0``, ``1'N z = 0``.

    ``z = 0`` is feasible. With ``Q = N' diag(1/k) N = L L'`` (positive
    definite: ``N`` has orthonormal columns) and ``z = z0 + L'^{-1} x``, ``z0``
    the unconstrained minimiser, this is a least-distance programme ``min ||x||
    subject to G x >= h`` (the equality as two inequalities), solved exactly by
    Lawson and Hanson's reduction to non-negative least squares (scipy's
    ``nnls``): robust where many constraints are active and dependent at the
    start, as in an exact fit among more candidates than rows, which defeats
    quadprog's dual method. None if the reduction fails (the caller keeps ``w``).
    """
    Q = N.T @ (N / k[:, None])
    L = np.linalg.cholesky(Q)
    z0 = -np.linalg.solve(Q, N.T @ (w / k))
    back = np.linalg.inv(L.T)
    ones = N.sum(axis=0) @ back
    G = np.vstack([N @ back, ones, -ones])
    s = float(N.sum(axis=0) @ z0)
    h = np.r_[-w - N @ z0, -s, s]
    # unit normals; a candidate the null directions do not move (a row of N at round-off)
    # keeps its weight and would only wreck the scaling of the reduction
    norms = np.linalg.norm(G, axis=1)
    moved = norms > 1e-9 * norms.max()
    G, h = G[moved] / norms[moved, None], h[moved] / norms[moved]
    E = np.vstack([G.T, h])
    f = np.zeros(E.shape[0])
    f[-1] = 1.0
    try:
        u = nnls(E, f, maxiter=50 * E.shape[1])[0]
    except RuntimeError:  # iteration limit
        return None
    r = E @ u - f
    if not abs(r[-1]) > 0:
        return None
    return z0 + back @ (-r[:-1] / r[-1])


def simplex_least_squares(H: np.ndarray, d: np.ndarray, max_iter: int = 500,
                          multiplicity: np.ndarray | None = None) -> np.ndarray:
    """Weights minimising ``w' D H D w`` on the simplex; the minimum-norm one where tied.

    Parameters
    ----------
    H : ndarray (J, J)
        Symmetric positive semi-definite (from :func:`residual_gram`).
    d : ndarray (J,)
        Positive column scales.
    max_iter : int
        Cap on the active-set iterations beyond ``3 J``.
    multiplicity : ndarray of int (J,), optional
        How many merged duplicates each column stands for (they share its
        weight equally); the norm minimised over a tied optimum is that of
        the weights of all of them. Default 1 each.

    Returns
    -------
    ndarray (J,)
        Non-negative, summing to 1 up to rounding (the caller snaps and certifies).
    """
    multiplicity = np.ones(d.size) if multiplicity is None else np.asarray(multiplicity, float)
    top = float(np.abs(np.diagonal(H)).max(initial=0.0))
    if not top > 0:  # every candidate reproduces y exactly: all tied, equal full weights
        return multiplicity / multiplicity.sum()
    Hs = H / top  # entries at most 1: the tolerances above are relative to this
    u = _active_set(Hs, 1.0 / d, max_iter)
    w = u / d
    w = np.maximum(w, 0.0) / np.maximum(w, 0.0).sum()
    return _minimum_norm_face(Hs, d, w, multiplicity)


# ---- the solver form of the squared loss ------------------------------------------------------
@dataclass(frozen=True)
class LeastSquaresForm:
    """Objective ``f(w) = ||E w||^2 / n_obs`` on the simplex, ``E = (t 1' - X) / scale`` (m, J).

    On the simplex ``E w = (t - X w) / scale``, so ``f`` is the mean squared
    error of ``X w`` divided by ``scale^2``; ``unit = scale^2`` converts back
    (``mean loss = unit * f(w)``). ``scale`` is a power of two (exact
    division) set by the loss to the spread of the response, so the weights
    do not depend on its units, and no centre is needed: ``t 1' - X`` does
    not change when the same constant is subtracted from ``t`` and ``X``.
    Every method works on ``E`` chunk by chunk, formed from differences of
    ``t`` and ``X`` (accurate at any offset); the (m, J) matrix ``E`` is never
    stored. The methods assume ``w`` on the simplex.
    """

    X: np.ndarray
    t: np.ndarray
    n_obs: int
    scale: float = 1.0
    multiplicity: np.ndarray | None = None  # merged duplicates per column (the tie rule's norm)

    @property
    def unit(self) -> float:
        return self.scale**2

    @property
    def size(self) -> int:
        return self.X.shape[1]

    @property
    def n_rows(self) -> int:
        return self.X.shape[0]

    def restrict(self, columns: np.ndarray) -> LeastSquaresForm:
        multiplicity = None if self.multiplicity is None else self.multiplicity[columns]
        return LeastSquaresForm(self.X[:, columns], self.t, self.n_obs, self.scale, multiplicity)

    def residual(self, w: np.ndarray) -> np.ndarray:
        """``E w`` (m,), from the columns with non-zero weight."""
        used = np.flatnonzero(w)
        return ((self.t[:, None] - self.X[:, used]) / self.scale) @ w[used]

    def value(self, w: np.ndarray) -> float:
        r = self.residual(w)
        return float(r @ r) / self.n_obs

    def gradient(self, w: np.ndarray) -> np.ndarray:
        """``2 E'E w / n_obs``: on the simplex the gradient up to a constant vector."""
        return (2.0 / self.n_obs) * residual_products(self.X, self.t, self.scale, self.residual(w))

    def vertex_values(self) -> np.ndarray:
        """``f(e_j)`` for every j, without forming the (m, J) residual matrix."""
        X, t = self.X, self.t
        out = np.zeros(self.size)
        step = max(1, (1 << 16) // max(self.size, 1))
        for start in range(0, self.n_rows, step):
            E = (t[start:start + step, None] - X[start:start + step]) / self.scale
            out += np.einsum("ij,ij->j", E, E)
        return out / self.n_obs

    def gram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(H, d)`` with ``E'E / n_obs = D H D`` (:func:`~pearlstats.weights.gram.residual_gram`).

        Computed once per form (one pass over the rows); the solver and the
        certificate share it.
        """
        return self._gram

    @cached_property
    def _gram(self) -> tuple[np.ndarray, np.ndarray]:
        return residual_gram(self.X, self.t, self.scale, self.n_obs)
