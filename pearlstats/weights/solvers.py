"""Simplex weights minimising a surrogate loss of the averaged out-of-fold prediction.

``solve_weights(P, y, loss)`` returns ``w >= 0, sum(w) = 1`` minimising
``mean V(y, P @ w)``:

* ``qp`` (squared loss): on the simplex ``||y - P w||^2 = ||E w||^2`` with the
  residual columns ``E = y 1' - P``, so quadprog solves ``min w'(E'E/n)w``.
  The loss builds ``E`` from centred and scaled data (the weights cannot
  depend on the units or origin of ``y``), the Gram matrix is scaled to unit
  diagonal, and ``(1'w)^2`` (constant on the simplex, entries at most 1) is
  added to make it positive definite. quadprog never receives a matrix whose
  eigenvalue ratio exceeds 1e10 (near-duplicate candidates, one outlying row
  dominating every residual): those problems go to a primal active-set method
  that solves least-squares problems on ``E`` itself (``solver="active-set"``);
  no ridge perturbs the squared-loss weights.
* ``convex`` (cross-entropy, Poisson deviance): an active-set Newton method
  on the simplex (:mod:`pearlstats.weights.convex`, ``solver="newton"``):
  Newton steps on the face of the positive weights, candidates entering by
  their gradient at the face's optimum; only the face's Hessian is formed, so
  it serves thousands of candidates too. Its certificate is the dual bound
  at its own (unrounded) point: rounding a weight on a candidate with huge
  predictions moves that candidate's gradient far more than the objective.
* ``lp`` (hinge, absolute): a linear programme in ``(w, t)`` with one slack
  ``t_i`` per row, solved by HiGHS (:mod:`pearlstats.weights.linear`;
  absolute loss on centred and scaled data, since HiGHS' tolerances are absolute).

With more candidates than rows (or than ``DENSE_LIMIT``) the squared loss
is solved by column generation: solve on a working set, compute the full
gradient with one pass over the (n, J) matrix, add the most violating
candidates, drop those at zero weight; the J x J matrix is never formed.

Candidates whose predictions agree to 1e-9 of their spread (or to a few ulps
of their size) are merged before solving and share their weight equally, so
permuting candidates permutes the weights; a large common offset does not make
distinct candidates look identical.

Every solution carries a certified bound ``kkt_gap >= objective - optimum``:
for the smooth losses the Frank-Wolfe gap ``g'w - min_j g_j`` (g the gradient;
convexity gives ``f(w) - f* <= g'(w - w*) <= g'w - min_j g_j``), for the LPs
the gap to the dual bound built from HiGHS' multipliers, made exactly dual
feasible before use.

Every path (quadprog, the active-set and column-generation fallbacks, Newton,
HiGHS, the distributed solver) returns its weights through one function,
:func:`snap_to_simplex`: a weight at most ``ZERO_WEIGHT_RTOL = 1e-10`` times
the largest is solver residue (quadprog leaves about 1e-13 on candidates whose
gradient shows them inactive) and becomes exactly 0, and the rest is rescaled
to sum to exactly 1. The objective and the gap are computed on
the snapped weights. Zeroing a residue on an inactive candidate can only lower
the objective (to first order); zeroing a genuine weight ``delta`` of an active
candidate raises it by ``O(delta^2)``, far below the solver's tolerance.

Examples
--------
>>> import numpy as np
>>> from pearlstats.weights.losses import get_loss
>>> y = np.array([1.0, 2.0, 3.0, 4.0])
>>> P = np.column_stack([y + 1, y - 1, np.zeros(4)])
>>> sol = solve_weights(P, y, get_loss("squared", "gaussian"))
>>> sol.weights.round(12).tolist(), round(sol.objective, 12), sol.solver
([0.5, 0.5, 0.0], 0.0, 'quadprog')
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import quadprog

from ..exceptions import AllCandidatesFailedError, ConvergenceWarning, OptionError
from .certificate import gap_target, user_stacklevel, warn_uncertified
from .convex import solve_smooth
from .linear import solve_lp
from .losses import LeastSquaresForm, Loss

__all__ = ["WeightSolution", "solve_weights", "snap_to_simplex", "DENSE_LIMIT", "ZERO_WEIGHT_RTOL"]

DENSE_LIMIT = 500  # above this many candidates (or more candidates than rows): column generation
_BATCH = 50  # candidates added per column-generation round
ZERO_WEIGHT_RTOL = 1e-10  # weights at most this times the largest are residue: exactly 0
_GRID = 2**53  # weights are returned as multiples of 1 / _GRID (see snap_to_simplex)
_MAX_CONDITION = 1e10  # largest eigenvalue ratio of a matrix handed to quadprog
_ROUNDOFF = 1e-12  # relative size below which changes of f are lost in its round-off


@dataclass(frozen=True)
class WeightSolution:
    """Result of :func:`solve_weights`.

    Attributes
    ----------
    weights : ndarray (J,)
        On the simplex: ``>= 0`` (no ``-0.0``), inactive candidates exactly 0
        (see :func:`snap_to_simplex`), summing to exactly 1.0 in any order
        of addition unless every non-zero weight is a tied duplicate share.
    objective : float
        Mean surrogate loss (``loss.risk``) of ``P @ weights``, for the returned
        (snapped) weights.
    kkt_gap : float
        Certified bound on ``objective - optimum`` (see the module notes).
    solver : str
        ``"quadprog"``, ``"active-set"`` (the least-squares active-set method
        for an ill-conditioned Gram matrix, or column generation for many
        candidates), ``"newton"`` (cross-entropy, Poisson deviance), ``"highs"`` or
        ``"single candidate"``.
    ridge : float
        Always 0: ill-conditioned squared-loss problems go to the active-set
        method instead of a ridge, and the Newton method needs none. Kept for
        callers that record it.
    merged : tuple of tuple of int
        Groups of candidate indices with identical predictions, merged before
        solving; each member gets an equal share of the group's weight.
    """

    weights: np.ndarray
    objective: float
    kkt_gap: float
    solver: str
    ridge: float
    merged: tuple


# ---- quadprog on the simplex -----------------------------------------------------------------
def _unit_gram(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Hs, d)`` with ``W'W = D Hs D``, ``d`` the column norms of ``W`` and ``Hs`` unit-diagonal.

    Columns are divided by their largest entry before any product, so a
    candidate whose predictions reach 1e256 (its ``W'W`` entry would be
    1e512) or 1e-160 (1e-320) neither overflows nor underflows. A zero column
    keeps a zero row in ``Hs`` and gets ``d = max(d)``.
    """
    top = np.abs(W).max(axis=0)
    V = W / np.where(top > 0, top, 1.0)
    norms = np.sqrt(np.einsum("ij,ij->j", V, V))
    V = V / np.where(norms > 0, norms, 1.0)
    d = top * norms
    d = np.where(d > 0, d, d.max() if d.size and d.max() > 0 else 1.0)
    return V.T @ V, d


def _quadprog_simplex(Hs: np.ndarray, d: np.ndarray, linear: np.ndarray, *, damp: bool):
    """``min 1/2 v'(D Hs D)v - (D linear)'v`` over the simplex, as ``v``; or None.

    quadprog solves in ``u = D v`` (unit-diagonal Hessian ``Hs``), where the
    simplex is ``sum_j u_j (d_min / d_j) = d_min, u >= 0``. The added
    ``(sum_j u_j d_min / d_j)^2 = d_min^2`` is constant on the simplex, so the
    minimiser is unchanged while the matrix becomes positive definite for
    affinely independent columns; its entries are at most 1, so it cannot
    swamp ``Hs`` whatever the units. quadprog never sees a matrix with an
    eigenvalue ratio above ``_MAX_CONDITION``: with ``damp`` (an SQP step, where
    a ridge only shortens the step) a ridge brings it down to that, otherwise
    None is returned for the caller's fallback. Returns ``(v, ridge)``.
    """
    k = len(d)
    a = d.min() / d
    G = Hs + np.outer(a, a)
    eigenvalues = np.linalg.eigvalsh(G)
    low, high = eigenvalues[0], eigenvalues[-1]
    ridge = 0.0
    if not (np.isfinite(high) and low > high / _MAX_CONDITION):
        if not (damp and np.isfinite(high)):
            return None
        ridge = high / _MAX_CONDITION - low
    constraints = np.column_stack([a, np.eye(k)])
    try:
        bounds = np.r_[d.min(), np.zeros(k)]
        u = quadprog.solve_qp(G + ridge * np.eye(k), linear, constraints, bounds, meq=1)[0]
    except ValueError:  # quadprog's own tests disagree with the eigenvalues: leave it to the caller
        return None
    return u / d, ridge


def _affine_minimiser(W: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The minimiser of ``||W z||`` subject to ``sum(z) = 1`` nearest to ``start`` (summing to 1).

    ``z = start + N u`` with ``N`` an orthonormal basis of ``{sum = 0}``;
    the minimum-norm least-squares ``u`` (SVD) copes with rank deficiency.
    """
    k = W.shape[1]
    if k == 1:
        return np.ones(1)
    N = np.linalg.qr(np.ones((k, 1)), mode="complete")[0][:, 1:]
    u = np.linalg.lstsq(W @ N, -(W @ start), rcond=None)[0]
    return start + N @ u


def _active_set_least_squares(W: np.ndarray, w0: np.ndarray, max_iter: int) -> np.ndarray:
    """Primal active-set method for ``min ||W w||^2`` over the simplex.

    The fallback for Gram matrices too ill-conditioned for quadprog (near
    duplicates, one outlying row that dominates every residual): each step
    minimises over the affine hull of the free candidates by least squares
    on ``W`` itself, never forming ``W'W``; a step that would leave the
    simplex stops at its boundary and frees the blocking candidate; at a
    face optimum the candidate with the most negative reduced gradient
    enters. Starts from the vertex ``w0``.
    """
    w = w0.copy()
    free = w > 0
    for _ in range(max_iter + 2 * w.size):
        F = np.flatnonzero(free)
        target = _affine_minimiser(W[:, F], w[F])
        step = target - w[F]
        ratios = np.full(F.size, np.inf)
        shrinking = step < 0
        ratios[shrinking] = w[F][shrinking] / -step[shrinking]
        blocking = int(np.argmin(ratios))
        if ratios[blocking] < 1.0:  # the face's minimiser is outside the simplex: stop at the edge
            moved = np.maximum(w[F] + ratios[blocking] * step, 0.0)
            moved[blocking] = 0.0
            w[F] = moved
            free = w > 0
            continue
        w[F] = np.maximum(target, 0.0)
        w /= w.sum()
        g = W.T @ (W @ w)
        outside = np.flatnonzero(~free)
        if outside.size == 0:
            break
        entering = outside[np.argmin(g[outside])]
        if g[entering] >= g @ w - _ROUNDOFF * max(float(np.abs(g).max()), np.finfo(float).tiny):
            break
        free[entering] = True
    return w


def _negligible(w: np.ndarray) -> np.ndarray:
    """Mask of the weights that are zero to within the solvers' accuracy (see the module notes)."""
    return w <= ZERO_WEIGHT_RTOL * w.max()


def snap_to_simplex(w: np.ndarray) -> np.ndarray:
    """Weights from a solver with their residue removed: the one exit of every solver path.

    Entries at most ``ZERO_WEIGHT_RTOL`` times the largest (and any negative
    round-off) become exactly 0; the rest are rescaled to sum to 1 and
    rounded to multiples of ``2**-53`` (each moves by at most ``2**-54``; the
    largest weight that no other equals absorbs the rounding remainder, at
    most ``J 2**-54``), so that their sum is exactly 1 however they are added.
    Only if every non-zero weight is tied with another (equal shares of
    merged duplicates) is there no such weight; then the shares stay equal
    and the sum is within ``J 2**-54`` of 1.

    Parameters
    ----------
    w : ndarray (J,)
        Approximately on the simplex, with a positive largest entry.

    Returns
    -------
    ndarray (J,)
        Non-negative (no ``-0.0``), summing to 1.0 exactly (ties aside, see above).

    Examples
    --------
    >>> w = snap_to_simplex(np.array([0.6, 3e-13, 0.4, -1e-17]))
    >>> w.tolist(), float(w.sum())
    ([0.6, 0.0, 0.4, 0.0], 1.0)
    """
    w = np.where(_negligible(w), 0.0, w)
    # Weights on the grid of multiples of 2**-53 add up exactly in any order (every partial sum
    # is such a multiple in [0, 1], which a double holds exactly), so "sums to 1" holds for
    # numpy, pandas and math.fsum alike. Rounding to the grid is of the size of the round-off
    # the division leaves anyway.
    units = np.rint(w / w.sum() * _GRID).astype(np.int64)  # integer sums are exact
    remainder = _GRID - int(units.sum())
    if remainder:
        # The largest weight that no other weight equals absorbs the integer remainder: chosen
        # by value, so permuting candidates permutes the result, and merged duplicates keep
        # exactly equal shares.
        values, first, counts = np.unique(units, return_index=True, return_counts=True)
        unique = first[(counts == 1) & (values > 0) & (values + remainder > 0)]
        if unique.size:
            units[unique[-1]] += remainder
    return units / _GRID + 0.0  # + 0.0 turns any -0.0 into 0.0


def _target(f: float, tol: float) -> float:
    return tol * max(abs(f), np.finfo(float).tiny)


def _fw_gap(g: np.ndarray, w: np.ndarray) -> float:
    return float(g @ w - g.min())


def _solve_least_squares(form: LeastSquaresForm, w0, tol, max_iter):
    """quadprog on the unit-diagonal residual Gram matrix, the active-set method if ill-conditioned.

    Returns ``(w, ridge, converged, fallback)``; the ridge is always 0 now that
    ill-conditioned problems go to the active-set method instead of being perturbed.
    """
    W = form.hessian_factor()
    Hs, d = _unit_gram(W)
    solved = _quadprog_simplex(Hs, d, np.zeros(form.size), damp=False)
    if solved is not None:
        return snap_to_simplex(solved[0]), 0.0, True, False
    scaled = W / float(np.abs(W).max() or 1.0)  # steps are scale-free; this keeps g near 1
    start = np.zeros(form.size)
    start[int(np.argmin(d))] = 1.0  # the best single candidate: ||W e_j|| = d_j
    return snap_to_simplex(_active_set_least_squares(scaled, start, max_iter)), 0.0, True, True


def _column_generation(form, restricted_solver, tol, max_iter) -> tuple[np.ndarray, float, bool]:
    """Solve on a working set, add the candidates whose gradient is below ``g'w``, repeat.

    A ridge ``r`` in the restricted QP (affinely dependent working set) leaves a
    Frank-Wolfe gap of up to ``r ||w||^2``; that much is accepted as converged.
    """
    start = int(np.argmin(form.vertex_values()))
    w = np.zeros(form.size)
    w[start] = 1.0
    ridge = 0.0

    def done(g):
        return _fw_gap(g, w) <= _target(form.value(w), tol) + ridge * (w @ w)

    for _ in range(max_iter):
        g = form.gradient(w)
        if done(g):
            return w, ridge, True
        support = np.flatnonzero(w > 0)
        order = np.argsort(g, kind="stable")
        # more than n_rows + 1 candidates are affinely dependent and would need a ridge
        room = max(1, min(_BATCH, form.n_rows + 1 - support.size))
        entering = order[(g[order] < g @ w) & (w[order] == 0)][:room]
        if entering.size == 0:  # only the working set's own round-off is left
            break
        working = np.sort(np.concatenate([support, entering]))
        sub, ridge, _, _ = restricted_solver(form.restrict(working), w[working], tol, max_iter)
        w = np.zeros(form.size)
        w[working] = sub
    return w, ridge, done(form.gradient(w))


# ---- input handling ----------------------------------------------------------------------------
def _check_active(active, J: int) -> np.ndarray:
    if active is None:
        return np.ones(J, dtype=bool)
    mask = np.asarray(active)
    if mask.shape != (J,) or mask.dtype != bool:
        raise OptionError(
            f"active must be a boolean mask with one flag per candidate, shape ({J},); "
            f"got shape {mask.shape} and dtype {mask.dtype}"
        )
    return mask


_DUPLICATE_RTOL = 1e-9  # candidates closer than this fraction of their spread are the same
_DUPLICATE_ULPS = 64  # ... or closer than this many units in the last place of their size


def _column(P: np.ndarray, j: int) -> np.ndarray:
    return P[:, j]


def _duplicate_tolerance(P: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Per-candidate distance (max norm) below which another candidate counts as its duplicate.

    Relative to the column's spread around its mean, not to its size: adding
    1e10 to ``y`` (and so to every prediction) must not make distinct
    candidates look identical. The floor of a few ulps of the column's size
    covers predictions that agree in exact arithmetic but were rounded at a
    large offset.
    """
    tolerance = np.empty(candidates.size)
    for position, j in enumerate(candidates):
        column = _column(P, j)
        spread = np.abs(column - column.mean(axis=0)).max()
        tolerance[position] = _DUPLICATE_RTOL * spread + _DUPLICATE_ULPS * np.spacing(
            np.abs(column).max()
        )
    return tolerance


def _duplicate_groups(P: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Group number of each candidate, numbered by first member.

    Candidates whose predictions agree to round-off (see
    :func:`_duplicate_tolerance`) share a group: two blocks spanning the same
    column space give OLS predictions that differ in the last bits, and such
    a pair makes the QP singular just as an exact duplicate does. Columns are
    sorted by a seeded random projection and neighbours within reach of
    each other are compared entry by entry.
    """
    rng = np.random.default_rng(0)
    direction = rng.standard_normal(P.shape[0])
    if P.ndim == 2:
        score = (direction @ np.nan_to_num(P))[candidates]
        reach_factor = np.abs(direction).sum()
    else:
        classes = rng.standard_normal(P.shape[2])
        score = np.einsum("n,njc,c->j", direction, np.nan_to_num(P), classes)[candidates]
        reach_factor = np.abs(direction).sum() * np.abs(classes).sum()
    tolerance = _duplicate_tolerance(P, candidates)
    reach = reach_factor * tolerance
    label = np.arange(candidates.size)
    window: list[int] = []  # positions (into candidates) of group leaders near the current score
    for position in np.argsort(score, kind="stable"):
        window = [
            lead
            for lead in window
            if score[position] - score[lead] <= reach[lead] + reach[position]
        ]
        column = _column(P, candidates[position])
        for lead in window:
            distance = np.abs(column - _column(P, candidates[lead])).max()
            if distance <= max(tolerance[lead], tolerance[position]):
                label[position] = label[lead]
                break
        else:
            window.append(position)
    _, first, inverse = np.unique(label, return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse]


def _check_tuning(tol, max_iter) -> None:
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol > 0):
        raise OptionError(
            f"tol={tol!r}; use a positive number (target gap relative to the objective)"
        )
    if not (
        isinstance(max_iter, (int, np.integer)) and not isinstance(max_iter, bool) and max_iter >= 1
    ):
        raise OptionError(f"max_iter={max_iter!r}; use a positive integer")


def _solve_reduced(form, kind: str, tol: float, max_iter: int):
    """Merged candidates' weights: ``(w, lower bound or None, ridge, converged, solver name)``."""
    if form.size == 1:
        return np.ones(1), None, 0.0, True, "single candidate"
    if kind == "lp":
        w, lower, failure = solve_lp(form)
        if failure is not None:
            warnings.warn(
                f"HiGHS stopped without an optimal weight LP ({failure}); "
                "using the best single candidate",
                ConvergenceWarning,
                stacklevel=user_stacklevel(),
            )
        return snap_to_simplex(w), lower, 0.0, True, "highs"
    if kind != "qp":
        # the active-set Newton method of .convex, from the best vertex: an overfitted
        # candidate with wild predictions would dominate the uniform start
        w0 = np.zeros(form.size)
        w0[int(np.nanargmin(form.vertex_values()))] = 1.0
        w, converged = solve_smooth(form, w0, tol, max_iter)
        # the dual bound at the solver's own point: a weight rounded by snap_to_simplex can move
        # the gradient of a candidate with huge predictions far more than the objective
        lower = form.value(w) - _fw_gap(form.gradient(w), w)
        excluded = (w > 0) & _negligible(w)
        while excluded.any() and converged:
            # snap_to_simplex will zero these weights (a 1e257 Poisson candidate wants about
            # 1e-259): the weights returned are the optimum without them
            w = np.where(excluded, 0.0, w)
            w, converged = solve_smooth(form, w / w.sum(), tol, max_iter, excluded)
            tiny = (w > 0) & _negligible(w)
            if not tiny.any():
                break
            excluded |= tiny
        return snap_to_simplex(w), lower, 0.0, converged, "newton"
    if form.size > min(DENSE_LIMIT, form.n_rows):
        w, ridge, converged = _column_generation(form, _solve_least_squares, tol, max_iter)
        return w, None, ridge, converged, "active-set"
    w0 = np.full(form.size, 1.0 / form.size)
    w, ridge, converged, fallback = _solve_least_squares(form, w0, tol, max_iter)
    return w, None, ridge, converged, "active-set" if fallback else "quadprog"


# ---- public entry point ------------------------------------------------------------------------
def solve_weights(
    P: np.ndarray,
    y: np.ndarray,
    loss: Loss,
    *,
    active: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 500,
    context: str | None = None,
) -> WeightSolution:
    """Simplex weights minimising the mean surrogate loss of ``P @ w``.

    Parameters
    ----------
    P : array_like (n, J) or (n, J, C)
        Out-of-fold candidate predictions: means (gaussian, poisson),
        P(y = 1) (binomial) or class probabilities (multinomial).
    y : array_like (n,)
        The response in the family's coding (see :mod:`pearlstats.weights.losses`).
    loss : Loss
        From :func:`pearlstats.weights.losses.get_loss`; its ``solver`` picks the method.
    active : array_like of bool (J,), optional
        Candidates allowed a weight. The others (failed ones, whose columns
        may hold NaN) get exactly 0 and are left out of the solve.
    tol : float, default 1e-10
        A solve is certified when ``kkt_gap <= tol (1 + |objective|)``; the
        Newton method stops at a quarter of that, column generation at
        ``tol |objective|``.
    max_iter : int, default 500
        Cap on Newton steps and on column-generation rounds.
    context : str, optional
        Where the solve runs (``"in outer fold 2 of the honest risk of ..."``), for the warning.

    Returns
    -------
    WeightSolution

    Raises
    ------
    DataError, MissingValueError, ResponseError
        Mis-shaped predictions, NaN/inf in an active candidate's column, values
        that are not probabilities / non-negative means, or a bad response.
    AllCandidatesFailedError
        No candidate is active.

    Warns
    -----
    ConvergenceWarning
        The certified gap is above ``tol (1 + |objective|)`` (the reported
        ``kkt_gap`` still bounds the suboptimality); it names *context* and
        points at the first caller outside pearlstats.

    Examples
    --------
    >>> import numpy as np
    >>> from pearlstats.weights.losses import get_loss
    >>> y = np.array([0.0, 1.0, 1.0, 0.0])
    >>> P = np.array([[0.2, 0.4], [0.9, 0.5], [0.3, 0.8], [0.4, 0.1]])
    >>> sol = solve_weights(P, y, get_loss("cross_entropy", "binomial"))
    >>> bool(abs(sol.weights.sum() - 1) < 1e-12), sol.solver, bool(sol.kkt_gap < 1e-9)
    (True, 'newton', True)
    """
    if not isinstance(loss, Loss):
        raise OptionError(
            "loss must be a Loss from "
            f"pearlstats.weights.losses.get_loss, got {type(loss).__name__}"
        )
    _check_tuning(tol, max_iter)
    P = loss.check_shape(y, P, candidates=True)
    J = P.shape[1]
    active = _check_active(active, J)
    if not active.any():
        raise AllCandidatesFailedError(
            f"no candidate is active for the weights: all {J} are marked failed"
        )
    columns = np.flatnonzero(active)
    y, _ = loss.check(
        y,
        P if columns.size == J else P[:, columns],
        candidates=True,
        labels=columns,
        allow_nan=False,
    )

    group = _duplicate_groups(P, columns)
    sizes = np.bincount(group)
    leaders = columns[np.unique(group, return_index=True)[1]]
    reduced = P if leaders.size == J else P[:, leaders]
    form = loss.form(y, reduced)
    w, lower, ridge, converged, solver = _solve_reduced(form, loss.solver, tol, max_iter)

    weights = np.zeros(J)
    weights[columns] = w[group] / sizes[group]
    weights = snap_to_simplex(weights)
    w = np.bincount(group, weights[columns], minlength=sizes.size)
    # the forms of the squared and absolute losses are standardised: unit converts back
    if leaders.size == 1:
        gap = 0.0
    elif loss.solver == "lp":
        gap = max(form.value(w) - lower, 0.0) * form.unit
    else:
        gap = max(_fw_gap(form.gradient(w), w), 0.0) * form.unit
        if lower is not None:  # the better of two valid bounds (see _solve_reduced)
            gap = min(gap, max(form.value(w) - lower, 0.0) * form.unit)
    objective = loss.objective(y, P, weights)
    if not converged or gap > gap_target(objective, tol):
        warn_uncertified(solver, gap, objective, tol, context, user_stacklevel())
    merged = tuple(tuple(int(j) for j in columns[group == g]) for g in np.flatnonzero(sizes > 1))
    return WeightSolution(weights, float(objective), float(gap), solver, float(ridge), merged)
