"""Simplex weights minimising a surrogate loss of the averaged out-of-fold prediction.

``solve_weights(P, y, loss)`` returns ``w >= 0, sum(w) = 1`` minimising
``mean V(y, P @ w)``:

* ``qp`` (squared loss): on the simplex ``||y - P w||^2 = ||E w||^2`` with
  the residual columns ``E = y 1' - P``, so the problem is ``min w'(E'E/n)w``
  on the J x J Gram matrix, built once by one pass over row chunks and never
  from n-row matrices inside the solver (:mod:`pearlstats.weights.gram`).
  ``E`` is divided by a power of two near the spread of ``y`` (the weights
  cannot depend on the units or origin of ``y``; no centre is needed since
  ``y 1' - P`` ignores a common shift). quadprog solves well-conditioned
  problems (unit-diagonal Gram matrix plus ``(1'w)^2``, eigenvalue ratio at
  most 1e10) when its answer's gap on the Gram matrix is at round-off; every
  other problem -- near-duplicate candidates, an exact fit, a singular Gram
  matrix -- goes to an active-set method on the Gram matrix, exact and
  without a ridge (``solver="active-set"``).
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
candidates, drop those at zero weight; the J x J matrix is never formed (the
squared loss's restricted problems are solved on their working set's Gram
matrix).

Candidates whose predictions agree to 1e-9 of their spread (or to a few ulps
of their size) are merged before solving and share their weight equally, so
permuting candidates permutes the weights; a large common offset does not make
distinct candidates look identical.

**Ties: the minimum-norm optimum.** Where the squared-loss optimum is not
unique -- two candidates that both reproduce ``y``, duplicates, a mix of
candidates that reproduces another -- the weights are the point of minimum
Euclidean norm of the optimal face (counting each merged duplicate's share),
e.g. equal shares for exact duplicates and a third each for candidates 1, 2,
3 when ``(P_1 + P_2) / 2 = P_3 = y``. Candidates count as tied when their
reduced gradients agree to ``1e-12`` of the largest single-candidate loss and
the directions between them change the residual by at most ``1e-6`` of the
largest residual norm (eigenvalues ``1e-12`` of the largest); see
:mod:`pearlstats.weights.gram`. Column generation applies the rule to the
candidates tied with its final optimum.

Every solution carries a certified bound ``kkt_gap >= objective - optimum``:
for the smooth losses the Frank-Wolfe gap ``g'w - min_j g_j`` (g the gradient;
convexity gives ``f(w) - f* <= g'(w - w*) <= g'w - min_j g_j``), for the LPs
the gap to the dual bound built from HiGHS' multipliers, made exactly dual
feasible before use.

Every path (quadprog, the active-set and column-generation fallbacks, Newton,
HiGHS, the distributed solver) returns its weights through one check,
:func:`snap_to_simplex` and ``_expand``: a weight at most ``ZERO_WEIGHT_RTOL =
1e-10`` times the largest is solver residue (quadprog leaves about 1e-13 on
candidates whose gradient shows them inactive) and becomes exactly 0, the
rest is rescaled to sum to exactly 1, and the result must be finite,
non-negative and sum to 1. Weights with a NaN or without a positive entry
raise :class:`InvalidWeightsError` there instead of being rescaled;
:func:`solve_weights` then returns the best single candidate with a
``ConvergenceWarning`` (no known problem gets there). The objective and the
gap are computed on the snapped weights, from the problem itself (the
squared loss's from its Gram matrix). Zeroing a residue on an inactive
candidate can only lower the objective (to first order); zeroing a genuine
weight ``delta`` of an active candidate raises it by ``O(delta^2)``, far
below the solver's tolerance.

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

import dataclasses
from dataclasses import dataclass

import numpy as np
import quadprog

from .._warnings import warn
from ..exceptions import AllCandidatesFailedError, ConvergenceWarning, OptionError
from .certificate import gap_target, warn_uncertified
from .convex import solve_smooth
from .gram import _TIE, frank_wolfe_gap, largest_vertex, simplex_least_squares
from .linear import solve_lp
from .losses import CONSTANT_RESPONSE_ULPS, Loss, check_response_variation

__all__ = [
    "WeightSolution", "solve_weights", "snap_to_simplex", "check_on_simplex", "InvalidWeightsError",
    "DENSE_LIMIT", "ZERO_WEIGHT_RTOL",
]

DENSE_LIMIT = 500  # above this many candidates (or more candidates than rows): column generation
_BATCH = 50  # candidates added per column-generation round
ZERO_WEIGHT_RTOL = 1e-10  # weights at most this times the largest are residue: exactly 0
_GRID = 2**53  # weights are returned as multiples of 1 / _GRID (see snap_to_simplex)
_MAX_CONDITION = 1e10  # largest eigenvalue ratio of a matrix handed to quadprog
# quadprog's squared-loss answer is kept if its Frank-Wolfe gap is at most this times the largest
# single-candidate loss (it leaves about 4e-13 on the demo's nested pool); else the active set
_QUADPROG_GAP = 1e-12
# ... and only up to this many candidates: quadprog's dense O(J^3) steps lose to the active set
# beyond (0.2 ms against 4.6 ms at J = 31, 47 ms against 51 ms at J = 200, 0.82 s against
# 0.26 s at J = 500 on random pools)
_QUADPROG_MAX = 200


class InvalidWeightsError(ArithmeticError):
    """A solver produced weights that are not a point of the simplex (NaN, none positive).

    Internal: :func:`solve_weights` never returns such weights (it falls back to
    the best single candidate and warns).
    """


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
        ``"quadprog"``, ``"active-set"`` (the active-set method on the Gram
        matrix for an ill-conditioned or singular squared-loss problem, or
        column generation for many candidates), ``"newton"`` (cross-entropy,
        Poisson deviance), ``"highs"``, ``"single candidate"`` or ``"single candidate
        (solver failed)"`` (a solver bug caught by the final check, with a warning).
    ridge : float
        Always 0: ill-conditioned squared-loss problems go to the active-set
        method instead of a ridge, and the Newton method needs none. Kept for
        callers that record it.
    merged : tuple of tuple of int
        Groups of candidate indices with identical predictions, merged before
        solving; each member gets an equal share of the group's weight.
    shrinkage : float or None
        The amount the weights were shrunk toward a target by (``weight_shrinkage``,
        after ``"cv"`` or ``"size"`` chose it); None when they were not.
    """

    weights: np.ndarray
    objective: float
    kkt_gap: float
    solver: str
    ridge: float
    merged: tuple
    shrinkage: float | None = None


# ---- quadprog on the simplex -----------------------------------------------------------------
def _quadprog_simplex(Hs: np.ndarray, d: np.ndarray) -> np.ndarray | None:
    """``min v'(D Hs D)v`` over the simplex, as ``v``; or None if ill-conditioned.

    quadprog solves in ``u = D v`` (unit-diagonal Hessian ``Hs``), where the
    simplex is ``sum_j u_j (d_min / d_j) = d_min, u >= 0``. The added
    ``(sum_j u_j d_min / d_j)^2 = d_min^2`` is constant on the simplex, so the
    minimiser is unchanged while the matrix becomes positive definite for
    affinely independent columns; its entries are at most 1, so it cannot
    swamp ``Hs`` whatever the units. quadprog never sees a matrix with an
    eigenvalue ratio above ``_MAX_CONDITION``: None is returned instead, for
    the active-set method on the Gram matrix.
    """
    k = len(d)
    a = d.min() / d
    G = Hs + np.outer(a, a)
    eigenvalues = np.linalg.eigvalsh(G)
    low, high = eigenvalues[0], eigenvalues[-1]
    if not (np.isfinite(high) and low > high / _MAX_CONDITION):
        return None
    constraints = np.column_stack([a, np.eye(k)])
    try:
        bounds = np.r_[d.min(), np.zeros(k)]
        u = quadprog.solve_qp(G, np.zeros(k), constraints, bounds, meq=1)[0]
    except ValueError:  # quadprog's own tests disagree with the eigenvalues: leave it to the caller
        return None
    return u / d


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

    Raises
    ------
    InvalidWeightsError
        ``w`` has a NaN or infinite entry, or no positive one: a solver failed,
        and rescaling would only hide it.

    Examples
    --------
    >>> w = snap_to_simplex(np.array([0.6, 3e-13, 0.4, -1e-17]))
    >>> w.tolist(), float(w.sum())
    ([0.6, 0.0, 0.4, 0.0], 1.0)
    """
    w = np.asarray(w, dtype=float)
    if not (np.isfinite(w).all() and w.max(initial=0.0) > 0):
        raise InvalidWeightsError(
            f"a weight solver returned {w[:10]}: not finite or without a positive entry"
        )
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


def _gram_quadprog(H: np.ndarray, d: np.ndarray) -> np.ndarray | None:
    """quadprog on the unit-diagonal form of ``D H D`` if well-conditioned, else None."""
    norms = np.sqrt(np.maximum(np.diagonal(H), 0.0))
    if not (norms > 0).all():
        return None  # a candidate reproducing y exactly: a singular problem for the active set
    Hs = H / norms[:, None] / norms[None, :]
    return _quadprog_simplex(Hs, d * norms)


def _solve_least_squares(form, w0, tol, max_iter):
    """The squared loss on the J x J Gram of its residual columns (:mod:`.gram`).

    quadprog solves well-conditioned problems (as it always has, so their
    weights do not move); the others, and any quadprog answer whose
    Frank-Wolfe gap on the Gram is not at round-off, go to the active-set
    method; tied optima are then resolved to the minimum-norm point.
    Returns ``(w, ridge, converged, fallback)``; the ridge is always 0.
    """
    H, d = form.gram()
    w = _gram_quadprog(H, d) if form.size <= _QUADPROG_MAX else None
    if w is not None and np.isfinite(w).all():
        w = np.maximum(w, 0.0)
        top = largest_vertex(H, d)
        if w.sum() > 0 and frank_wolfe_gap(H, d, w / w.sum()) <= _QUADPROG_GAP * top:
            return snap_to_simplex(w), 0.0, True, False
    w = simplex_least_squares(H, d, max_iter, getattr(form, "multiplicity", None))
    return snap_to_simplex(w), 0.0, True, True


def _widen_ties(form, w: np.ndarray, max_iter: int) -> np.ndarray:
    """Column generation's squared-loss optimum re-solved over every candidate tied with it.

    The minimum-norm rule needs the whole optimal face, and column generation
    only saw its working set: candidates outside it whose reduced gradient is
    zero (within ``_TIE`` of the largest single-candidate loss) may share the
    optimum. Their Gram matrix is formed and solved as a dense problem (singular
    if they outnumber the rows, which the active-set method handles) when they
    are at most ``DENSE_LIMIT``.
    """
    g = form.gradient(w)
    tied = np.flatnonzero((g - g @ w <= _TIE * float(form.vertex_values().max())) | (w > 0))
    if tied.size <= np.count_nonzero(w) or tied.size > DENSE_LIMIT:
        return w
    sub = _solve_least_squares(form.restrict(tied), None, None, max_iter)[0]
    out = np.zeros(form.size)
    out[tied] = sub
    return out


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


# Rows per block of the passes over all candidates' predictions (:func:`_row_blocks`).
_SUMMARY_ROWS = 8192


def _row_blocks(n: int) -> list[slice]:
    """Slices of at most :data:`_SUMMARY_ROWS` rows covering range(n) (one, empty, if n = 0)."""
    return [slice(start, start + _SUMMARY_ROWS) for start in range(0, max(n, 1), _SUMMARY_ROWS)]


def _column(P: np.ndarray, j: int) -> np.ndarray:
    return P[:, j]


def _column_summaries(sub: np.ndarray, direction: np.ndarray, classes: np.ndarray | None):
    """``(score, tolerance)`` of every column of ``sub``, from three passes over it.

    ``score`` is the random projection ``direction' P_j`` (times ``classes``
    for class probabilities) that orders the columns; ``tolerance`` the
    distance (max norm) below which another candidate counts as a duplicate:
    relative to the column's spread around its mean, not to its size (adding
    1e10 to ``y``, and so to every prediction, must not make distinct
    candidates look identical), with a floor of a few ulps of the column's
    size for predictions that agree in exact arithmetic but were rounded at a
    large offset.
    """
    # one matrix product gives the projections and the means; min and max one pass each. The
    # product is summed a block of rows at a time: tensordot copies a strided *sub* (the pool's
    # columns of a wider array), which for class probabilities is the size of the fit's largest
    # array.
    weights = np.stack([direction, np.full(sub.shape[0], 1.0 / sub.shape[0])])
    both = sum(np.tensordot(weights[:, rows], sub[rows], axes=(1, 0))
               for rows in _row_blocks(sub.shape[0]))
    score, mean, low, high = both[0], both[1], sub.min(axis=0), sub.max(axis=0)
    spread = np.maximum(high - mean, mean - low)
    top = np.maximum(np.abs(high), np.abs(low))
    if sub.ndim == 3:  # classes: the largest over a candidate's probability columns
        score, spread, top = score @ classes, spread.max(axis=1), top.max(axis=1)
    return score, _DUPLICATE_RTOL * spread + _DUPLICATE_ULPS * np.spacing(top)


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
    classes = rng.standard_normal(P.shape[2]) if P.ndim == 3 else None
    sub = P if candidates.size == P.shape[1] else P[:, candidates]  # active: no NaN
    score, tolerance = _column_summaries(sub, direction, classes)
    reach_factor = np.abs(direction).sum() * (1.0 if classes is None else np.abs(classes).sum())
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


def _solve_reduced(form, kind: str, tol: float, max_iter: int, start: np.ndarray | None = None):
    """Merged candidates' weights: ``(w, lower bound or None, ridge, converged, solver name)``.

    *start*: where the Newton method of the smooth losses starts (default: the best vertex).
    """
    if form.size == 1:
        return np.ones(1), None, 0.0, True, "single candidate"
    if kind == "lp":
        w, lower, failure = solve_lp(form)
        if failure is not None:
            warn(
                f"HiGHS stopped without an optimal weight LP ({failure}); "
                "using the best single candidate",
                ConvergenceWarning,
            )
        return snap_to_simplex(w), lower, 0.0, True, "highs"
    if kind != "qp":
        # the active-set Newton method of .convex, from the best vertex: an overfitted
        # candidate with wild predictions would dominate the uniform start
        if start is None:
            start = np.zeros(form.size)
            start[int(np.nanargmin(form.vertex_values()))] = 1.0
        w, converged = solve_smooth(form, start, tol, max_iter)
        # the dual bound at the solver's own point: a weight rounded by snap_to_simplex can move
        # the gradient of a candidate with huge predictions far more than the objective
        lower = form.value(w) - _fw_gap(form.gradient(w), w)
        excluded = (w > 0) & _negligible(w)
        while excluded.any():
            # snap_to_simplex will zero these weights (a 1e257 Poisson candidate wants about
            # 1e-259): the weights returned are the optimum without them, also when such a
            # candidate's gradient stopped the solve short of the optimum (seen with other BLAS
            # kernels: the weights then stopped 7e-8 above the optimum of the others)
            w = np.where(excluded, 0.0, w)
            w, converged = solve_smooth(form, w / w.sum(), tol, max_iter, excluded)
            tiny = (w > 0) & _negligible(w)
            if not tiny.any():
                break
            excluded |= tiny
        return snap_to_simplex(w), lower, 0.0, converged, "newton"
    if form.size > min(DENSE_LIMIT, form.n_rows):
        w, ridge, converged = _column_generation(form, _solve_least_squares, tol, max_iter)
        return _widen_ties(form, w, max_iter), None, ridge, converged, "active-set"
    w0 = np.full(form.size, 1.0 / form.size)
    w, ridge, converged, fallback = _solve_least_squares(form, w0, tol, max_iter)
    return w, None, ridge, converged, "active-set" if fallback else "quadprog"


# ---- the one exit: a point of the simplex with a certificate ---------------------------------
def _expand(w: np.ndarray, columns, group, sizes, J: int) -> np.ndarray:
    """Merged candidates' weights shared out over all J candidates, snapped and checked."""
    weights = np.zeros(J)
    weights[columns] = w[group] / sizes[group]
    return check_on_simplex(snap_to_simplex(weights))


def check_on_simplex(weights: np.ndarray) -> np.ndarray:
    """``weights`` if finite, non-negative and summing to 1 (to ``4 J eps``); else raise.

    The check every weight vector passes before it leaves the weight stage
    (solver results and shrunk weights alike).

    Raises
    ------
    InvalidWeightsError

    Examples
    --------
    >>> check_on_simplex(np.array([0.25, 0.75])).tolist()
    [0.25, 0.75]
    """
    weights = np.asarray(weights, dtype=float)
    if not (np.isfinite(weights).all() and (weights >= 0).all()
            and abs(weights.sum() - 1.0) <= 4 * weights.size * np.finfo(float).eps):
        raise InvalidWeightsError(f"weights off the simplex: {weights[:10]}")
    return weights


def _best_vertex(form) -> np.ndarray:
    """The best single candidate: always a valid point of the simplex."""
    if hasattr(form, "vertex_values"):
        values = form.vertex_values()
    else:
        values = np.array([form.value(np.eye(form.size)[j]) for j in range(form.size)])
    w = np.zeros(form.size)
    w[int(np.nanargmin(values))] = 1.0
    return w


def _certified_gap(form, kind: str, w: np.ndarray, lower, n_leaders: int) -> float:
    """``objective - optimum <= gap``, computed from the problem at the returned weights.

    The forms of the squared and absolute losses are standardised: ``unit``
    converts back. The squared loss's dense problems are certified on their
    Gram matrix (no pass over the rows); column generation uses the gradient.
    Every loss is non-negative, so the objective itself also bounds the gap:
    an exact fit is certified even beside a candidate of 1e250, whose gradient
    entry (0 in exact arithmetic) is rounding noise of size 1e232.
    """
    if n_leaders == 1:
        return 0.0
    dense_qp = kind == "qp" and form.size <= min(DENSE_LIMIT, form.n_rows)
    if kind == "lp":
        gap = max(form.value(w) - lower, 0.0) if lower is not None else np.inf
    elif dense_qp:
        H, d = form.gram()
        gap = frank_wolfe_gap(H, d, w)
    else:
        gap = max(_fw_gap(form.gradient(w), w), 0.0)
        if lower is not None:  # the Newton method's dual bound: the better of two valid bounds
            gap = min(gap, max(form.value(w) - lower, 0.0))
    if not gap <= 1e-300:  # (NaN too) the loss is >= 0, so the optimum is too
        u = d * w if dense_qp else None
        value = float(u @ H @ u) if dense_qp else form.value(w)
        gap = min(gap, max(value, 0.0)) if np.isfinite(value) else gap
    if not np.isfinite(gap):  # an overflowed gradient certifies nothing; say so
        return float("inf")
    return gap * form.unit


def _solve_checked(form, kind: str, columns, group, sizes, n_all: int, tol: float,
                   max_iter: int, start: np.ndarray | None = None):
    """The solver's weights over all ``n_all`` candidates, through the final check.

    Weights failing the check (a solver bug) become the best single candidate, with a warning.
    Returns ``(weights, lower bound or None, ridge, converged, solver name)``; *start* as
    :func:`_solve_reduced`.
    """
    try:
        w, lower, ridge, converged, solver = _solve_reduced(form, kind, tol, max_iter, start)
        weights = _expand(w, columns, group, sizes, n_all)
    except InvalidWeightsError as err:
        # never reached on any problem we know of: a solver bug must not become invalid weights
        w, lower, ridge, converged = _best_vertex(form), None, 0.0, True
        solver = "single candidate (solver failed)"
        weights = _expand(w, columns, group, sizes, n_all)
        warn(
            f"the {kind} weight solver failed ({err}); the weights are the best single "
            "candidate instead, with the gap to the optimum reported in kkt_gap",
            ConvergenceWarning,
        )
    return weights, lower, ridge, converged, solver


# ---- public entry point ------------------------------------------------------------------------
def _constant_columns(P: np.ndarray, columns: np.ndarray) -> bool:
    """Whether every active candidate predicts one value for all rows (to 16 ulps of it)."""
    active = P[:, columns]
    spread = active.max(axis=0) - active.min(axis=0)
    top = np.abs(active).max(axis=0)
    return bool((spread <= CONSTANT_RESPONSE_ULPS * np.finfo(float).eps * top).all())


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

    if loss.family == "gaussian" and _constant_columns(P, columns):
        # A constant y is nothing to fit only if the predictions are constant too; with an
        # offset the candidates' means vary around a constant y, and the weights are defined.
        check_response_variation(y, " of the rows the weights are fitted on")
    group = _duplicate_groups(P, columns)
    sizes = np.bincount(group)
    leaders = columns[np.unique(group, return_index=True)[1]]
    reduced = P if leaders.size == J else P[:, leaders]
    form = loss.form(y, reduced)
    if loss.solver == "qp":  # the minimum-norm rule counts every merged duplicate
        form = dataclasses.replace(form, multiplicity=sizes)
    weights, lower, ridge, converged, solver = _solve_checked(
        form, loss.solver, columns, group, sizes, J, tol, max_iter)
    w = np.bincount(group, weights[columns], minlength=sizes.size)
    gap = _certified_gap(form, loss.solver, w, lower, leaders.size)
    objective = loss.objective(y, P, weights)
    # The gap certifies the weights whatever the solver's own stopping rule said: a solver
    # that stopped at its iteration cap within the target needs no warning (one said "gap
    # 7.6e-11 above its target 1.9e-10"); a gap that could not be computed (NaN) does.
    if not gap <= gap_target(objective, tol):
        warn_uncertified(solver, gap, objective, tol, context)
    merged = tuple(tuple(int(j) for j in columns[group == g]) for g in np.flatnonzero(sizes > 1))
    return WeightSolution(weights, float(objective), float(gap), solver, float(ridge), merged)
