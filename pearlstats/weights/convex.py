"""Simplex weights for the smooth convex losses (cross-entropy, Poisson deviance).

An active-set Newton method on the simplex, certified by the Frank-Wolfe gap:

* The weights live on a face ``F`` (the candidates with positive weight). On
  the face, Newton's step minimises the quadratic model over ``{sum s = 0}``:
  an eigen-solve of the face Hessian (scaled to unit diagonal, restricted to
  the null space of the constraint), with a Levenberg-Marquardt floor
  ``1e-12`` of the largest eigenvalue so that affinely dependent candidates
  (more candidates than rows, near duplicates) give a step rather than a
  failure. A step that would leave the simplex stops at its boundary (ratio
  test) and the blocking candidate leaves the face; Armijo backtracking keeps
  every step a descent step.
* At a face optimum the full gradient ``g`` is computed (one pass over the
  (n, J) matrix): candidates with ``g_j`` below ``g'w`` enter (at most
  ``_BATCH``, and no more than the rows can tell apart); a candidate whose
  Newton step would take it below 0 at once leaves again before the step.
* It stops when the Frank-Wolfe gap ``g'w - min_j g_j`` (a bound on
  ``f(w) - f*`` by convexity) is at most ``tol (1 + |f|) / 4``.

Only the face's Hessian is formed (``n |F|^2``), so thousands of candidates
cost a gradient per round, and nothing is handed to a QP solver whose
conditioning checks could refuse it: the method it replaces (SQP with
quadprog subproblems) stalled at Frank-Wolfe gaps of 0.22 (the quickstart's
binomial honest risk) and 0.004 (J = 1023 binomial at n = 500) where
quadprog needed a damping ridge or returned a non-descent step.

Examples
--------
Two Poisson candidates, each too high on half of the rows:

>>> import numpy as np
>>> from pearlstats.weights.losses import get_loss
>>> y = np.array([1.0, 2.0, 3.0, 4.0])
>>> form = get_loss("poisson_deviance", "poisson").form(y, np.column_stack([y * 1.5, y / 1.5]))
>>> w, converged = solve_smooth(form, np.array([1.0, 0.0]), 1e-10, 100)
>>> bool(converged), w.round(4).tolist()
(True, [0.4, 0.6])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .losses import LogBarrierForm

__all__ = ["solve_smooth", "frank_wolfe_gap"]

_BATCH = 50  # candidates entering the face per round
_ARMIJO, _MIN_STEP = 1e-4, 1e-12
_ROUNDOFF = 1e-13  # predicted decreases below this fraction of 1 + |f| are lost in round-off
_FLOOR = 1e-12  # Levenberg-Marquardt floor relative to the largest face eigenvalue
_DENSE = 500  # above this many candidates only the face's columns are formed


def _goal(f: float, tol: float) -> float:
    """The gap the iteration aims at: a quarter of the certificate's ``tol (1 + |f|)``, so that
    rounding the weights (:func:`~pearlstats.weights.solvers.snap_to_simplex`) keeps it certified,
    and never 0 (an exact fit has ``f = 0``)."""
    return tol * (1.0 + abs(f)) / 4


def frank_wolfe_gap(g: np.ndarray, w: np.ndarray) -> float:
    """``g'w - min_j g_j``: a bound on ``f(w) - min f`` over the simplex for convex ``f``."""
    return float(g @ w - g.min())


def _face_factor(form, w: np.ndarray, face: np.ndarray) -> np.ndarray:
    """Columns *face* of the Hessian's factor at *w* (only those columns formed when J is large)."""
    if isinstance(form, LogBarrierForm) and face.size < form.size and form.size > _DENSE:
        return form.restrict(face).hessian_factor(w[face])
    if isinstance(form, LogBarrierForm):  # the face's columns of the full factor, alone
        return form.hessian_factor(w, face)
    return form.hessian_factor(w)[:, face]


def _face_step(W: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Newton step ``s`` (sum 0) minimising ``g's + |W s|^2 / 2``, floored as in the module notes.

    Columns are scaled to unit norm first (``x = d s``), so candidates whose
    predictions differ by 1e250 in size share one well-scaled matrix; the
    constraint becomes ``(1/d)'x = 0`` and is eliminated with an orthonormal
    basis ``N`` of its null space. *W* (the caller's new array) is scaled in place:
    no (n, |face|) temporaries beside it.
    """
    k = W.shape[1]
    if k == 1:
        return np.zeros(1)
    top = np.maximum(W.max(axis=0), -W.min(axis=0))  # max |W_ij| per column, exactly
    V = W
    V /= np.where(top > 0, top, 1.0)
    norms = np.sqrt(np.einsum("ij,ij->j", V, V))
    V /= np.where(norms > 0, norms, 1.0)
    d = top * norms
    d = np.where(d > 0, d, d.max() if d.max() > 0 else 1.0)
    a = d.min() / d  # the constraint, scaled to entries at most 1
    N = np.linalg.qr(a[:, None], mode="complete")[0][:, 1:]
    M = N.T @ (V.T @ V) @ N
    b = N.T @ (g / d)
    values, vectors = np.linalg.eigh((M + M.T) / 2)
    floor = _FLOOR * max(float(values[-1]), np.finfo(float).tiny)
    u = -vectors @ ((vectors.T @ b) / np.maximum(values, 0.0 + floor))
    return (N @ u) / d


def _step_length(form, w, f, g, step) -> tuple[float, float, bool]:
    """``(alpha, f(w + alpha step), at_boundary)`` by the ratio test and Armijo backtracking.

    ``alpha`` is 0 when no decrease is found.
    """
    shrinking = step < 0
    limit = 1.0
    if shrinking.any():
        limit = min(1.0, float(np.min(w[shrinking] / -step[shrinking])))
    slope = float(g @ step)
    if -slope * limit <= _ROUNDOFF * (1.0 + abs(f)):
        # f cannot resolve the predicted decrease: the step is taken on the model's word
        # (the caller checks the gradient's gap afterwards)
        trial = np.maximum(w + limit * step, 0.0)
        return limit, form.value(trial / trial.sum()), limit < 1.0
    alpha = limit
    while alpha >= _MIN_STEP * limit:
        trial = np.maximum(w + alpha * step, 0.0)
        value = form.value(trial / trial.sum())
        if value <= f + _ARMIJO * alpha * slope:
            return alpha, value, alpha == limit and limit < 1.0
        alpha /= 2
    return 0.0, f, False


def _entering(g: np.ndarray, w: np.ndarray, free: np.ndarray, room: int) -> np.ndarray:
    """Candidates outside the face whose gradient is below ``g'w``, most negative first."""
    outside = np.flatnonzero(~free)
    below = outside[g[outside] < g @ w]
    return below[np.argsort(g[below], kind="stable")][:room]


def _newton_direction(form, w, g, free) -> tuple[np.ndarray, np.ndarray]:
    """The face's Newton step (full length) and the face after removing candidates stuck at 0.

    Entering candidates (weight 0) whose step is negative leave the face; if that would
    leave none of them, the one with the lowest gradient stays alone: entering alone at a
    face optimum, its Newton step is positive.
    """
    entering = free & (w == 0)
    while True:
        face = np.flatnonzero(free)
        step = np.zeros(w.size)
        step[face] = _face_step(_face_factor(form, w, face), g[face])
        stuck = entering & free & (step < 0)  # entering candidates the step would make negative
        if not stuck.any():
            return step, free
        free = free & ~stuck
        if not (free & entering).any():
            alone = np.flatnonzero(stuck)[np.argmin(g[stuck])]
            free[alone] = True
            entering = np.zeros_like(entering)
            entering[alone] = True


def solve_smooth(form: Any, w0: np.ndarray, tol: float, max_iter: int,
                 excluded: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """Minimise a smooth convex *form* over the simplex from the vertex or point *w0*.

    Parameters
    ----------
    form : LogBarrierForm or a form with ``value``, ``gradient``, ``hessian_factor``
    w0 : ndarray (J,)
        A point of the simplex (the best vertex, by the caller).
    tol : float
        The Frank-Wolfe gap aimed at is ``tol (1 + |f|) / 4``.
    max_iter : int
        Cap on Newton steps (each entering round counts as one).
    excluded : ndarray of bool (J,), optional
        Candidates kept at weight 0 (zero in *w0*): the minimum is over the others.

    Returns
    -------
    w : ndarray (J,)
        Not yet rounded (:func:`~pearlstats.weights.solvers.snap_to_simplex`).
    converged : bool
        Frank-Wolfe gap (over the candidates not excluded) at most ``tol (1 + |f|) / 4``.
    """
    w = np.asarray(w0, dtype=float).copy()
    free = w > 0
    allowed = np.ones(w.size, dtype=bool) if excluded is None else ~excluded
    f, g = form.value(w), form.gradient(w)
    stalled = False  # the face's Newton steps stopped making progress: its optimum to round-off
    for _ in range(max_iter):
        target = _goal(f, tol)
        if frank_wolfe_gap(g[allowed], w[allowed]) <= target:
            return w, True
        on_face = not stalled and _face_gap(g, w, free) > target / 4
        trial_free = free
        if not on_face:  # the face is optimal: let candidates in
            room = max(1, min(_BATCH, getattr(form, "n_rows", w.size) + 1 - int(free.sum())))
            entering = _entering(g, w, free | ~allowed, room)
            if entering.size == 0:
                break
            trial_free = free.copy()
            trial_free[entering] = True
        step, trial_free = _newton_direction(form, w, g, trial_free)
        moved = _take_step(form, w, f, g, step)
        progress = moved is not None
        if progress:
            f_new, g_new = form.value(moved), form.gradient(moved)
            measure = _face_gap if on_face else _full_gap
            progress = f_new < f or measure(g_new, moved, trial_free) < measure(g, w, trial_free)
        if not progress:
            if on_face:
                stalled = True
                continue
            break  # round-off has the last word
        w, f, g, free, stalled = moved, f_new, g_new, moved > 0, False
    return w, frank_wolfe_gap(g[allowed], w[allowed]) <= _goal(f, tol)


def _face_gap(g: np.ndarray, w: np.ndarray, free: np.ndarray) -> float:
    return float(g @ w - g[free].min())


def _full_gap(g: np.ndarray, w: np.ndarray, free: np.ndarray) -> float:
    return frank_wolfe_gap(g, w)


def _take_step(form, w, f, g, step) -> np.ndarray | None:
    """The point the step reaches (a blocking candidate set exactly to 0), or None."""
    alpha, _, at_boundary = _step_length(form, w, f, g, step)
    if alpha == 0.0:
        return None
    moved = np.maximum(w + alpha * step, 0.0)
    if at_boundary:  # the blocking candidate leaves exactly
        shrinking = step < 0
        ratios = np.where(shrinking, w / np.where(shrinking, -step, 1.0), np.inf)
        moved[int(np.argmin(ratios))] = 0.0
    return moved / moved.sum()
