"""Simplex weights minimising a surrogate loss of the averaged out-of-fold prediction.

``solve_weights(P, y, loss)`` returns ``w >= 0, sum(w) = 1`` minimising
``mean V(y, P w)``:

* squared loss: a quadratic programme solved by quadprog. Candidates with
  identical predictions are merged first (quadprog rejects the singular
  matrix; R's SuperLearner crashes there) and share their weight equally; a
  tiny scaled ridge, recorded, handles nested-collinear candidates. When J is
  larger than n (e.g. 2^15 - 1 fusion-column candidates) the dense J x J
  matrix is never formed: column generation solves the QP on a working set
  and adds the candidates whose gradient violates optimality.
* cross-entropy and Poisson deviance: sequential quadratic programming
  (Newton steps on the simplex, each a quadprog QP) with backtracking.
* hinge and absolute loss: linear programmes solved by HiGHS.

Every solution carries a certified optimality gap: for the smooth losses the
Frank-Wolfe duality gap ``g'w - min_j g_j`` (an upper bound on f(w) - f*),
for the LPs the primal-dual gap reported by HiGHS' duals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import quadprog
import scipy.sparse as sp
from scipy.optimize import linprog

from .exceptions import AllCandidatesFailedError, DataError
from .losses import EPS, Loss, observed_probability

__all__ = ["WeightSolution", "solve_weights"]

# Past this many candidates (and more candidates than rows) the QP is solved by
# column generation on the n x J prediction matrix.
DENSE_QP_LIMIT = 2000


@dataclass(frozen=True)
class WeightSolution:
    """Result of :func:`solve_weights`.

    Attributes
    ----------
    weights : ndarray (J,)
        On the simplex exactly; inactive candidates get 0.
    objective : float
        Mean surrogate loss at the weights.
    kkt_gap : float
        Certified bound on ``objective - optimum``.
    solver : str
    ridge : float
        Ridge added to the QP matrix (0 if none).
    merged : tuple of tuple of int
        Groups of candidates with identical predictions, merged before solving.
    """

    weights: np.ndarray
    objective: float
    kkt_gap: float
    solver: str
    ridge: float
    merged: tuple


def _simplex_constraints(J: int):
    return np.column_stack([np.ones(J), np.eye(J)]), np.r_[1.0, np.zeros(J)]


def _quadprog_simplex(G: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, float]:
    """min 1/2 w'Gw - a'w on the simplex; a ridge is added (and returned) if G is singular."""
    J = len(a)
    C, b = _simplex_constraints(J)
    scale = max(np.trace(G) / J, 1e-300)
    ridge = 0.0
    for attempt in range(12):
        try:
            w = quadprog.solve_qp(G + ridge * np.eye(J), a, C, b, meq=1)[0]
            return w, ridge
        except ValueError:
            ridge = scale * 10.0 ** (attempt - 12)
    raise RuntimeError("quadprog failed even with a ridge of 1e-1 of the mean diagonal")


def _clean(w: np.ndarray) -> np.ndarray:
    # quadprog leaves round-off weights ~1e-14 on inactive candidates.
    w = np.where(w > 1e-10, w, 0.0)
    return w / w.sum() + 0.0  # + 0.0 turns -0.0 into 0.0


def _flat(P: np.ndarray, y: np.ndarray):
    """Predictions and targets stacked over classes: (n*C, J) and (n*C,)."""
    if P.ndim == 2:
        return P, y.astype(float)
    n, J, C = P.shape
    onehot = np.eye(C)[y.astype(np.intp)]
    return P.transpose(0, 2, 1).reshape(n * C, J), onehot.reshape(-1)


def _solve_qp(P, y):
    M, target = _flat(P, y)
    n = len(P)
    J = M.shape[1]
    if J > DENSE_QP_LIMIT and J > n:
        return _column_generation(M, target, n)
    G = 2.0 * (M.T @ M) / n
    a = 2.0 * (M.T @ target) / n
    w, ridge = _quadprog_simplex(G, a)
    return _clean(w), ridge, "quadprog"


def _column_generation(M, target, n, tol=1e-12):
    """Squared-loss QP over many candidates without the dense J x J matrix."""
    J = M.shape[1]
    residual = target[:, None] - M
    working = list(np.argsort(np.mean(residual**2, axis=0))[:50])
    ridge = 0.0
    for _ in range(200):
        sub = M[:, working]
        w_sub, r = _quadprog_simplex(2.0 * sub.T @ sub / n, 2.0 * sub.T @ target / n)
        ridge = max(ridge, r)
        w = np.zeros(J)
        w[working] = _clean(w_sub)
        gradient = 2.0 * M.T @ (M @ w - target) / n
        gap = gradient @ w - gradient.min()
        if gap <= tol * max(1.0, np.mean((target - M @ w) ** 2)):
            break
        keep = [j for j in working if w[j] > 0]
        new = [j for j in np.argsort(gradient)[:50] if j not in keep]
        working = keep + new
    return w, ridge, "active-set (quadprog)"


def _smooth_parts(loss: Loss, P, y):
    """Objective, gradient and Hessian of the convex losses on the weights."""
    if loss.name == "cross_entropy":
        if P.ndim == 2:
            A = np.where(y[:, None] == 1, P, 1.0 - P)
        else:
            A = np.take_along_axis(P, y.astype(np.intp)[:, None, None], axis=2)[:, :, 0]
        A = np.clip(A, EPS, 1.0)

        def parts(w):
            a = A @ w
            return -np.mean(np.log(a)), -A.T @ (1.0 / a) / len(a), (A / a[:, None]).T @ (A / a[:, None]) / len(a)

        return parts
    M = np.maximum(P, EPS)

    def parts(w):
        mu = M @ w
        f = 2.0 * np.mean(np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0) / mu), 0.0) - (y - mu))
        g = 2.0 * M.T @ (1.0 - y / mu) / len(y)
        H = 2.0 * (M * (y / mu**2)[:, None]).T @ M / len(y)
        return f, g, H

    return parts


def _solve_sqp(loss, P, y, tol=1e-12, max_iter=200):
    parts = _smooth_parts(loss, P, y)
    J = P.shape[1]
    w = np.full(J, 1.0 / J)
    f, g, H = parts(w)
    ridge = 0.0
    for _ in range(max_iter):
        if g @ w - g.min() <= tol:
            break
        z, r = _quadprog_simplex(H, H @ w - g)
        ridge = max(ridge, r)
        direction = _clean(z) - w
        t = 1.0
        while t > 1e-12:
            candidate = w + t * direction
            f_new = parts(candidate)[0]
            if f_new <= f + 1e-4 * t * (g @ direction):
                break
            t /= 2
        if t <= 1e-12:
            break
        w = candidate
        f, g, H = parts(w)
    return _clean(w), ridge, "sqp (quadprog)"


def _solve_lp(loss, P, y):
    n, J = P.shape[:2]
    if loss.name == "absolute":
        # t_i >= y_i - p_i w  and  t_i >= p_i w - y_i
        rows_w = sp.vstack([-sp.csr_matrix(P), sp.csr_matrix(P)])
        rows_t = sp.vstack([-sp.identity(n), -sp.identity(n)])
        b = np.r_[-y, y]
    elif P.ndim == 2:
        sign = 2.0 * y - 1.0
        # t_i >= 1 - s_i (2 p_i w - 1)
        rows_w = sp.csr_matrix(-2.0 * sign[:, None] * P)
        rows_t = -sp.identity(n)
        b = -(1.0 + sign)
    else:
        C = P.shape[2]
        own = np.take_along_axis(P, y.astype(np.intp)[:, None, None], axis=2)[:, :, 0]
        blocks_w, blocks_t, rhs = [], [], []
        for c in range(C):
            rows = np.flatnonzero(y != c)
            # t_i >= 1 + (p_ic - p_iy) w
            blocks_w.append(sp.csr_matrix(P[rows, :, c] - own[rows]))
            blocks_t.append(sp.csr_matrix((-np.ones(rows.size), (np.arange(rows.size), rows)), shape=(rows.size, n)))
            rhs.append(-np.ones(rows.size))
        rows_w, rows_t, b = sp.vstack(blocks_w), sp.vstack(blocks_t), np.concatenate(rhs)
    A_ub = sp.hstack([rows_w, rows_t]).tocsr()
    c = np.r_[np.zeros(J), np.full(n, 1.0 / n)]
    A_eq = sp.csr_matrix(np.r_[np.ones(J), np.zeros(n)][None, :])
    result = linprog(c, A_ub=A_ub, b_ub=b, A_eq=A_eq, b_eq=[1.0], bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"HiGHS could not solve the {loss.name} weight LP: {result.message}")
    dual = b @ result.ineqlin.marginals + result.eqlin.marginals[0]
    return _clean(result.x[:J]), abs(result.fun - dual)


def _duplicate_groups(P: np.ndarray, active: np.ndarray) -> list[list[int]]:
    groups: dict[bytes, list[int]] = {}
    for j in np.flatnonzero(active):
        groups.setdefault(np.ascontiguousarray(P[:, j]).tobytes(), []).append(int(j))
    return list(groups.values())


def _fw_gap(loss: Loss, P, y, w) -> float:
    if loss.solver == "qp":
        M, target = _flat(P, y)
        g = 2.0 * M.T @ (M @ w - target) / len(P)
    else:
        g = _smooth_parts(loss, P, y)(w)[1]
    return float(max(g @ w - g.min(), 0.0))


def solve_weights(P, y, loss: Loss, *, active=None) -> WeightSolution:
    """Simplex weights minimising the mean surrogate loss of ``P @ w``.

    Parameters
    ----------
    P : ndarray (n, J) or (n, J, C)
        Out-of-fold predictions (means, P(class 1), or class probabilities).
    y : ndarray (n,)
    loss : Loss
    active : ndarray of bool (J,), optional
        Candidates allowed a weight; the others (failed ones) get exactly 0.

    Returns
    -------
    WeightSolution

    Examples
    --------
    >>> import numpy as np
    >>> from pearlstats.losses import get_loss
    >>> y = np.array([1.0, 2.0, 3.0])
    >>> P = np.column_stack([y + 1, y - 1])
    >>> solve_weights(P, y, get_loss("squared", "gaussian")).weights.round(12).tolist()
    [0.5, 0.5]
    """
    P = np.asarray(P, dtype=float)
    y = np.asarray(y)
    if P.ndim not in (2, 3) or P.shape[0] != y.shape[0]:
        raise DataError(f"predictions of shape {P.shape} do not match a response of shape {y.shape}")
    J = P.shape[1]
    active = np.ones(J, dtype=bool) if active is None else np.asarray(active, dtype=bool)
    if not active.any():
        raise AllCandidatesFailedError("no candidate is available for the weights: every candidate failed")
    bad = [j for j in np.flatnonzero(active) if not np.isfinite(P[:, j]).all()]
    if bad:
        raise DataError(f"candidate column(s) {bad} of the prediction matrix have NaN or inf values")
    groups = _duplicate_groups(P, active)
    leaders = [group[0] for group in groups]
    reduced = P[:, leaders]
    ridge = 0.0
    gap = None
    if len(leaders) == 1:
        w_reduced, solver = np.ones(1), "single candidate"
    elif loss.solver == "qp":
        w_reduced, ridge, solver = _solve_qp(reduced, y)
    elif loss.solver == "convex":
        w_reduced, ridge, solver = _solve_sqp(loss, reduced, y)
    else:
        w_reduced, gap = _solve_lp(loss, reduced, y)
        solver = "highs (LP)"
    weights = np.zeros(J)
    for group, share in zip(groups, w_reduced):
        weights[group] = share / len(group)
    weights = _clean(weights)
    if gap is None:
        gap = _fw_gap(loss, reduced, y, w_reduced) if len(leaders) > 1 else 0.0
    objective = loss.risk(y, np.tensordot(weights[weights > 0], np.moveaxis(P[:, weights > 0], 1, 0), axes=1))
    merged = tuple(tuple(group) for group in groups if len(group) > 1)
    return WeightSolution(weights, objective, gap, solver, ridge, merged)
