"""Newton for many problems whose every evaluation is a pass over the data.

The in-memory engine (:func:`pearlstats.engines.newton.batched_newton`) moves
all its problems in lock step, one objective evaluation per line-search trial,
which is cheap when the rows are in memory. Over dask partitions every
evaluation is a pass that rebuilds each partition's design, so this driver
spends passes, and the work inside a pass, only where a problem needs them:

* a pass evaluates only the problems still moving: a converged (or stopped)
  problem is not sent to the partitions again;
* a pass evaluates several step lengths of a problem's line search at once
  (the value and gradient at each, the Hessian at the longest), so a damped
  Newton step costs one pass, not one per halving;
* a Hessian is formed only while the problem's Newton decrements are not yet
  contracting quickly; afterwards the last one is reused (chord steps cost a
  gradient), as the in-memory engine does, but decided per problem;
* a problem may start from another's optimum with that problem's Hessian
  (a fold from its candidate's all-rows fit), so its first steps need no
  Hessian at all; with ``secant=True`` each such chord step corrects the kept
  matrix by a BFGS update (as the in-memory fold fits do), so the chords
  converge superlinearly instead of at the old Hessian's linear rate.

The minimised function is ``loss(theta) + 1/2 sum(penalty_weight * u**2)`` in
``u = theta / r`` (:func:`pearlstats.engines._common.shrinkage_factors`), and
the convergence rule is the in-memory engine's (Newton decrement below
``tol * max(1, |f|)``, or at the rounding floor and no longer halving), so the
optima agree with it to the Newton tolerance; only the path differs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..engines._common import shrinkage_factors
from ..engines.newton import NewtonResult, NewtonSystems, _bfgs_update

__all__ = ["PassNewton", "pass_newton"]

_STALL = 1e-12  # the in-memory engine's rounding-floor rule (engines/newton.py)
_LADDER = 4  # step lengths 1, 1/2, 1/4, 1/8 after a damped step
_SEARCH = 8  # halvings per pass once the longest step was rejected
_MAX_HALVINGS = 60
_RESOLVED = 1e-11  # Newton decrements (relative to |f|) below which f cannot judge a step


@dataclass
class PassNewton:
    """State of Q problems minimised by :func:`pass_newton` (all arrays indexed by problem).

    Attributes
    ----------
    u : ndarray (Q, d)
        Current points in the shrunken parametrisation ``u = theta / r``.
    f, g : ndarray (Q,), (Q, d)
        Objective and gradient at ``u`` (valid where ``ready``).
    hessian : ndarray (Q, d, d)
        The Hessian steps are solved with (possibly from an earlier point).
    sizes : ndarray of int (Q,)
        How many leading coordinates of each problem are its own (default all d): the rest
        pad it to the widest problem, with gradient 0 and an identity Hessian, so the
        systems are solved and updated at each problem's own width.
    by_fold : (ndarray (Q, K), ndarray (Q, K, d)) or None
        Where the passes also return sums over each fold's rows (``f_by``, ``g_by``): those
        at each problem's current point (:mod:`pearlstats.distributed.fold_sums`).
    """

    u: np.ndarray
    r: np.ndarray
    penalty: np.ndarray
    sizes: np.ndarray | None = None
    f: np.ndarray = field(init=False)
    g: np.ndarray = field(init=False)
    hessian: np.ndarray = field(init=False)
    has_hessian: np.ndarray = field(init=False)
    step: np.ndarray = field(init=False)
    decrement: np.ndarray = field(init=False)
    previous: np.ndarray = field(init=False)
    longest: np.ndarray = field(init=False)
    ladder: np.ndarray = field(init=False)
    halvings: np.ndarray = field(init=False)
    want_hessian: np.ndarray = field(init=False)
    ready: np.ndarray = field(init=False)
    converged: np.ndarray = field(init=False)
    stopped: np.ndarray = field(init=False)
    exhausted: np.ndarray = field(init=False)
    singular: np.ndarray = field(init=False)
    iterations: np.ndarray = field(init=False)
    evaluations: np.ndarray = field(init=False)
    by_fold: tuple | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        Q, d = self.u.shape
        self.sizes = np.full(Q, d) if self.sizes is None else np.asarray(self.sizes, dtype=int)
        self.f, self.g = np.zeros(Q), np.zeros((Q, d))
        # identity in the padded coordinates, which no update touches (:func:`_steps`)
        self.hessian = np.tile(np.eye(d), (Q, 1, 1))
        self.has_hessian = np.zeros(Q, dtype=bool)
        self.step, self.decrement = np.zeros((Q, d)), np.zeros(Q)
        self.previous = np.full(Q, np.nan)  # the decrement of the problem's previous step
        self.longest, self.ladder = np.zeros(Q), np.ones(Q, dtype=int)
        self.halvings = np.zeros(Q, dtype=int)
        self.want_hessian = np.ones(Q, dtype=bool)
        self.ready = np.zeros(Q, dtype=bool)  # f and g are known at u
        self.converged = np.zeros(Q, dtype=bool)
        self.stopped = np.zeros(Q, dtype=bool)
        self.exhausted = np.zeros(Q, dtype=bool)  # out of iterations
        self.singular = np.zeros(Q, dtype=bool)
        self.iterations = np.zeros(Q, dtype=int)
        self.evaluations = np.zeros(Q, dtype=int)  # passes each problem took part in

    @property
    def theta(self) -> np.ndarray:
        return self.r * self.u

    @property
    def moving(self) -> np.ndarray:
        return ~(self.converged | self.stopped | self.exhausted)

    def warm(self, which: np.ndarray, loss_hessian: np.ndarray) -> None:
        """Give problems *which* a loss Hessian (from a related fit) to step with from the start."""
        self._set_hessian(which, loss_hessian)
        self.want_hessian[which] = False
        self.previous[which] = np.inf  # trusted: the first steps reuse it

    def kept_loss_hessians(self) -> np.ndarray:
        """The matrices steps are solved with, as loss Hessians in theta (no penalty): the last
        formed Hessian, or its BFGS update after chord steps."""
        H = self.hessian.copy()
        diagonal = np.arange(H.shape[1])
        H[:, diagonal, diagonal] -= self.penalty
        return H / (self.r[:, :, None] * self.r[:, None, :])

    def known(self, which: np.ndarray, f: np.ndarray, g: np.ndarray,
              by_fold: tuple | None = None) -> None:
        """Problems *which* start with their loss *f* and gradient *g* (theta) known: no pass.

        *by_fold*: their sums over each fold's rows there (:attr:`by_fold`), if the passes
        keep them.
        """
        u = self.u[which]
        self.f[which] = f + 0.5 * np.sum(self.penalty[which] * u**2, axis=1)
        self.g[which] = self.r[which] * g + self.penalty[which] * u
        self.ready[which] = True
        if by_fold is not None:
            self._keep_by_fold(which, *by_fold)

    def _keep_by_fold(self, which: np.ndarray, f_by: np.ndarray, g_by: np.ndarray) -> None:
        if self.by_fold is None:
            Q, d = self.u.shape
            self.by_fold = (np.zeros((Q, f_by.shape[1])), np.zeros((Q, f_by.shape[1], d)))
        self.by_fold[0][which], self.by_fold[1][which] = f_by, g_by

    def _set_hessian(self, which: np.ndarray, loss_hessian: np.ndarray) -> None:
        """The penalised Hessians in u of problems *which* from their loss Hessians in theta,
        each at its own width."""
        sizes = self.sizes[which]
        for size in np.unique(sizes):
            part = np.flatnonzero(sizes == size)
            q, r = which[part], self.r[which[part], :size]
            H = r[:, :, None] * loss_hessian[part, :size, :size] * r[:, None, :]
            diagonal = np.arange(size)
            H[:, diagonal, diagonal] += self.penalty[q, :size]
            self.hessian[q, :size, :size] = H
        self.has_hessian[which] = True


def _directions(state: PassNewton, tol: float, reuse: float) -> None:
    """Newton steps and convergence for the ready, moving problems (no pass needed)."""
    which = np.flatnonzero(state.ready & state.moving)
    if which.size == 0:
        return
    step, decrement = _steps(state, which)
    scale = np.maximum(1.0, np.abs(state.f[which]))
    previous = state.previous[which]
    done = decrement <= tol * scale
    done |= (decrement <= _STALL * scale) & (decrement >= 0.5 * previous)
    state.converged[which] |= done
    state.step[which], state.decrement[which] = step, decrement
    state.ready[which] = False
    # A Hessian is formed at the next point until the decrements contract quickly.
    # (reuse 0: a Hessian at every point, also after a trusted warm start's previous = inf)
    contracting = decrement <= reuse * previous if reuse > 0 else np.zeros(which.size, bool)
    state.want_hessian[which] = ~contracting | ~state.has_hessian[which]
    state.longest[which] = 1.0
    state.halvings[which] = 0


def _steps(state: PassNewton, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps and decrements of problems *which*, each system at its own width.

    The padded coordinates (identity Hessian, gradient 0) take no step; factorising them
    with the rest cost most of the client's time for multinomial fits of mixed widths.
    """
    step, decrement = np.zeros((which.size, state.u.shape[1])), np.zeros(which.size)
    sizes = state.sizes[which]
    for size in np.unique(sizes):
        part = np.flatnonzero(sizes == size)
        problems = which[part]
        systems = NewtonSystems.from_hessians(state.hessian[problems, :size, :size])
        state.singular[problems] |= systems.singular
        step[part, :size], decrement[part] = systems.steps(state.g[problems, :size])
    return step, decrement


def _request(state: PassNewton, todo: np.ndarray) -> dict:
    """Trial points of problems *todo*: base theta, step in theta, step lengths, Hessian flags."""
    counts = state.ladder[todo]
    columns = np.repeat(np.arange(todo.size), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    power = np.arange(columns.size) - np.repeat(first, counts)
    t = state.longest[todo][columns] * 0.5**power
    return {
        "problems": todo,
        "theta": state.r[todo] * state.u[todo],
        "step": state.r[todo] * state.step[todo],
        "columns": columns,
        "t": t,
        "first": first,
        "hessian": state.want_hessian[todo],
    }


def _objective_columns(state: PassNewton, request: dict, values: dict):
    """Objective and gradient in u at every trial column (the penalty added on the client)."""
    q = request["problems"][request["columns"]]
    t = request["t"]
    u = state.u[q] - t[:, None] * state.step[q]
    f = values["f"] + 0.5 * np.sum(state.penalty[q] * u**2, axis=1)
    g = state.r[q] * values["g"] + state.penalty[q] * u
    return u, f, g


def _accept(state: PassNewton, request: dict, values: dict, stop: Callable | None,
            secant: bool = False) -> None:
    """Take, per problem, the longest trial that decreases the objective enough.

    With *secant*, a problem that stepped without a fresh Hessian updates its kept one
    (:func:`_secant_update`).
    """
    todo, columns, t = request["problems"], request["columns"], request["t"]
    u, f, g = _objective_columns(state, request, values)
    q = todo[columns]
    start = t == 0.0  # an evaluation of the starting point: always taken
    armijo = f <= state.f[q] - 1e-4 * t * state.decrement[q]
    flat = np.abs(f - state.f[q]) <= 1e-15 * np.abs(f)
    # A decrease this small is below the rounding of f's sums over many rows, so the comparison
    # is noise; in this quadratic regime the full step is taken (the decrements decide).
    local = (t == 1.0) & (state.decrement[q] <= _RESOLVED * np.maximum(1.0, np.abs(state.f[q])))
    ok = start | armijo | flat | local
    state.evaluations[todo] += 1
    taken = np.full(todo.size, -1)
    for c in np.flatnonzero(ok)[::-1]:  # the longest accepted trial of each problem wins
        taken[columns[c]] = c
    hit = taken >= 0
    fresh = hit & request["hessian"] & (taken == request["first"])
    if fresh.any():  # values["H"]: the problems that asked for one, in order
        position = np.cumsum(request["hessian"]) - 1
        state._set_hessian(todo[fresh], values["H"][position[fresh]])
    missed = todo[~hit]
    _after_miss(state, missed)
    c, q = taken[hit], todo[hit]
    stepped = t[c] > 0
    step_theta = state.r[q] * (t[c][:, None] * state.step[q])
    if secant:
        chord = stepped & ~fresh[hit]
        _secant_update(state, q[chord], u[c][chord] - state.u[q[chord]],
                       g[c][chord] - state.g[q[chord]])
    state.u[q], state.f[q], state.g[q] = u[c], f[c], g[c]
    if "f_by" in values:
        state._keep_by_fold(q, values["f_by"][c], values["g_by"][c])
    state.ready[q] = True
    state.iterations[q] += stepped
    state.previous[q] = np.where(stepped, state.decrement[q], state.previous[q])
    # After a full step (or the start) the next full step is usually taken: try it alone.
    state.ladder[q] = np.where(t[c] < 1.0, _LADDER, 1)
    state.ladder[q[~stepped]] = 1
    if stop is not None:
        halt = stop(q, state.theta[q], step_theta, state.iterations[q], values, c)
        state.stopped[q] |= halt & stepped & ~state.converged[q]


def _secant_update(state: PassNewton, which: np.ndarray, s: np.ndarray, y: np.ndarray) -> None:
    """BFGS updates of the kept matrices of problems *which* after steps *s* (gradient change
    *y*, both in u); a problem whose curvature along its step is not positive keeps its own."""
    for a, q in enumerate(which):  # one at a time: _bfgs_update refuses a batch if any fails
        size = state.sizes[q]  # the padded coordinates neither move nor change the gradient
        updated = _bfgs_update(state.hessian[q, :size, :size][None], s[a, :size][None],
                               y[a, :size][None])
        if updated is not None:
            state.hessian[q, :size, :size] = updated[0]


def _after_miss(state: PassNewton, missed: np.ndarray) -> None:
    """Problems whose every trial was rejected: shorter steps next pass, or give up (optimum)."""
    state.halvings[missed] += state.ladder[missed]
    state.longest[missed] *= 0.5 ** state.ladder[missed]
    state.ladder[missed] = _SEARCH
    # No decrease even 2^-60 of the way: at the optimum to rounding (the in-memory rule).
    state.converged[missed] |= state.halvings[missed] > _MAX_HALVINGS


def pass_newton(
    evaluate: Callable,
    theta0: np.ndarray,
    ridge: float,
    weights: np.ndarray,
    *,
    warm: tuple | None = None,
    stop: Callable | None = None,
    max_iter: int = 100,
    tol: float = 1e-20,
    reuse: float = 0.01,
    secant: bool = False,
    known: tuple | None = None,
    sizes: np.ndarray | None = None,
) -> tuple[NewtonResult, PassNewton, int]:
    """Minimise ``loss(theta) + ridge / 2 * sum(weights * theta**2)`` for Q problems, by passes.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(request) -> dict`` for a request of :func:`_request` (keys
        ``problems`` (A,), ``theta`` and ``step`` (A, d), ``columns`` (C,) the
        problem position of each trial, ``t`` (C,) its step length, ``first``
        (A,) each problem's first column and ``hessian`` (A,) bool). Returns the
        loss ``f`` (C,) and its gradient ``g`` (C, d) at ``theta - t * step``
        of each column, and ``H`` (H, d, d), the loss Hessians at the first
        column of the H problems whose ``hessian`` is True, in their order.
    theta0 : ndarray (Q, d)
    ridge : float
    weights : ndarray (Q, d)
        Penalty weight of each coefficient (0 for the intercept).
    warm : (which, loss_hessians), optional
        Problems that start with a known loss Hessian (theta scale, no penalty).
    stop : callable, optional
        ``stop(problems, theta, step, iterations, values, columns) -> bool``,
        checked after each step; *values* and *columns* locate each problem's
        accepted trial in the pass's result (e.g. for a separation check).
    max_iter, tol, reuse : as :func:`pearlstats.engines.newton.batched_newton`
    secant : bool
        BFGS updates of the kept matrices after chord steps (module notes).
    sizes : ndarray of int (Q,), optional
        Each problem's own width; the coordinates after it pad it (:class:`PassNewton`).
    known : (which, f, g) or (which, f, g, (f_by, g_by)), optional
        Problems whose loss (Q_w,) and gradient (Q_w, d) in theta at *theta0* are known
        (and their sums over each fold's rows): their first pass is a step.

    Returns
    -------
    result : NewtonResult
        ``iterations`` is the largest number of steps any problem took.
    state : PassNewton
    passes : int
    """
    r, penalty = shrinkage_factors(ridge, weights)
    state = PassNewton(theta0 / r, r, penalty, sizes)
    if warm is not None:
        state.warm(*warm)
    state.step[:] = 0.0
    if known is not None:
        state.known(*known)
    passes = 0
    while True:
        _directions(state, tol, reuse)
        state.exhausted |= state.moving & (state.iterations >= max_iter)
        todo = np.flatnonzero(state.moving)
        if todo.size == 0:
            break
        request = _request(state, todo)
        passes += 1
        _accept(state, request, evaluate(request), stop, secant)
    result = NewtonResult(
        state.theta, state.converged, state.stopped, state.singular,
        int(state.iterations.max(initial=0)),
    )
    return result, state, passes
