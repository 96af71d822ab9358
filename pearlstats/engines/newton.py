"""A batched Newton method with backtracking, for K fold problems at once.

Each of the K problems (one per cross-validation fold, or a single one for a
refit on all rows) minimises a smooth convex objective in its own parameter
vector. Working on all folds together turns K small Python loops into a few
batched linear-algebra calls. A problem stops moving once its Newton decrement
is below tolerance, or once ``stop`` (e.g. a separation check) flags it. A
Hessian is reused for further steps while the decrements keep shrinking fast,
since forming it costs far more than a gradient.

The iterations run with BLAS on one thread: they multiply and factor many
small matrices, where OpenBLAS threads cost more than they give and, on a
busy machine, spin-wait (a binomial fit with a 384-column block took 13.8 s
with two threads on a loaded 2-core machine and 1.35 s with one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import lapack

from ._common import one_blas_thread, shrinkage_factors

__all__ = [
    "NewtonResult",
    "NewtonSystems",
    "batched_newton",
    "fold_start",
    "separated_in_every_fold",
    "penalised_newton",
]


@dataclass(frozen=True)
class NewtonResult:
    """Outcome of :func:`batched_newton`.

    Attributes
    ----------
    theta : ndarray (K, d)
    converged : ndarray of bool (K,)
    stopped : ndarray of bool (K,)
        Problems halted by the ``stop`` callback (e.g. separation).
    singular : ndarray of bool (K,)
        Problems whose Hessian was singular at some step (solved by least squares).
    iterations : int
    hessian : ndarray (K, d, d) or None
        The last Hessian of the loss (without penalty) the solver formed, at
        or near ``theta``; set by :func:`penalised_newton`.
    fold_values : tuple or None
        ``(point, f, g)`` for an all-rows fit whose likelihood sums were kept by fold: each
        fold's training-row loss (F,) and gradient (F, d) (means, no penalty) at ``point``
        (d,), the last point the fit evaluated (within its final step of ``theta``). The fold
        fits start there with their first values known, without a pass over the rows.
    """

    theta: np.ndarray
    converged: np.ndarray
    stopped: np.ndarray
    singular: np.ndarray
    iterations: int
    hessian: np.ndarray | None = None
    fold_values: tuple | None = None


@dataclass(frozen=True)
class NewtonSystems:
    """K Hessians ready to be solved against gradients, possibly several times.

    A Hessian that is not numerically positive definite (collinear columns)
    is replaced by its pseudo-inverse, which gives minimum-norm steps within
    the column space. The Cholesky factors that test definiteness are kept:
    for wide systems each further solve (a chord step) then costs two
    triangular solves, O(d^2), instead of a new O(d^3) factorisation.

    Attributes
    ----------
    H : ndarray (K, d, d)
    singular : ndarray of bool (K,)
    pseudo_inverse : ndarray (n_singular, d, d)
    factors : ndarray (K, d, d) or None
        Lower Cholesky factors of the definite Hessians (identity placeholders
        for the singular ones), kept for wide systems only.
    """

    H: np.ndarray
    singular: np.ndarray
    pseudo_inverse: np.ndarray
    factors: np.ndarray | None = None

    @classmethod
    def from_hessians(cls, H: np.ndarray) -> "NewtonSystems":
        singular, factors = _cholesky_factors(H)
        if H.shape[1] < _FACTOR_WIDTH:
            factors = None
        if not singular.any():
            return cls(H, singular, np.empty((0,) + H.shape[1:]), factors)
        H = H.copy()
        pseudo_inverse = np.linalg.pinv(H[singular], hermitian=True)
        H[singular] = np.eye(H.shape[1])  # placeholders, never used for steps
        if factors is not None:
            factors[singular] = np.eye(H.shape[1])
        return cls(H, singular, pseudo_inverse, factors)

    @property
    def any_singular(self) -> bool:
        """Whether any Hessian is singular (one pseudo-inverse per singular Hessian).

        Read from the pseudo-inverses' count, a Python integer: ``singular.any()`` costs a
        numpy call, several per Newton step (a small fit with its nested SE makes 10^5).
        """
        return len(self.pseudo_inverse) > 0

    def steps(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Steps ``H^{-1} g`` (K, d) and Newton decrements ``g' H^{-1} g`` (K,)."""
        if self.factors is None:
            # Narrow systems: one batched solve costs less than K calls of a triangular solver.
            step = np.linalg.solve(self.H, g[:, :, None])[:, :, 0]
        else:
            step = np.empty_like(g)
            for k in range(len(g)):
                step[k] = _cholesky_solve(self.factors[k], g[k])
        if self.any_singular:
            step[self.singular] = np.matmul(self.pseudo_inverse, g[self.singular][:, :, None])[
                :, :, 0
            ]
        return step, np.einsum("kd,kd->k", g, step)


# Width from which NewtonSystems keeps Cholesky factors for its solves (below it the
# per-problem calls cost more than the batched factorisation they save).
_FACTOR_WIDTH = 48


def _cholesky_solve(factor: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``H^{-1} g`` from the lower Cholesky factor L of H (LAPACK potrs).

    ``L.T`` is the upper factor, already in the column-major layout LAPACK reads: no copy.
    """
    return lapack.dpotrs(factor.T, g, lower=0)[0]


def _cholesky_factors(H: np.ndarray, condition_limit: float = 1e12):
    """Which of the Hessians ``H[k]`` are numerically positive definite, and their factors.

    A Cholesky factorisation can succeed on an exactly singular matrix (two
    identical columns) with a pivot at rounding level, after which a solve
    gives a huge step; a pivot below ``max diag(H) / condition_limit`` counts
    as singular. Returns the mask (K,) and the lower factors (K, d, d), with
    identity placeholders where the factorisation failed.
    """
    def factor(one: np.ndarray) -> np.ndarray | None:
        try:
            return np.linalg.cholesky(one)
        except np.linalg.LinAlgError:
            return None

    try:
        factors = np.linalg.cholesky(H)
        failed = None
    except np.linalg.LinAlgError:
        each = [factor(one) for one in H]
        failed = np.array([f is None for f in each], dtype=bool)
        eye = np.eye(H.shape[1])
        factors = np.stack([eye if f is None else f for f in each]) if len(H) else H.copy()
    pivots = factors.diagonal(0, 1, 2) ** 2
    limit = H.diagonal(0, 1, 2).max(axis=1) / condition_limit
    small = ~(pivots.min(axis=1) > limit)
    return small if failed is None else failed | small, factors


# Newton decrement (relative to max(1, |f|)) below which a decrement that stopped shrinking
# counts as converged: f is then within about 5e-13 of its minimum.
_STALL = 1e-12


def batched_newton(
    objective: Callable,
    theta0: np.ndarray,
    *,
    stop: Callable | None = None,
    max_iter: int = 100,
    tol: float = 1e-20,
    reuse_contraction: float = 0.01,
    max_chord: int = 1,
    hessian0: np.ndarray | None = None,
    final_step: bool = False,
    exact_start: bool = False,
    secant: bool = False,
) -> NewtonResult:
    """Minimise K convex objectives by damped Newton steps that reuse Hessians.

    Far from the optimum every step is a Newton step, with the Hessian formed
    together with the gradient at the point the line search accepts. Once
    Newton's decrements shrink by *reuse_contraction* or more per step (its
    fast local phase), the last Hessian is kept and applied to new gradients
    (chord steps, each costing one gradient) for as long as every moving
    problem's decrement keeps shrinking at that rate; when one does not, the
    Hessians are formed afresh at the current point. Forming a Hessian is the
    (C-1)p-square product that dominates a multinomial fit, so this saves
    most of the work of the last steps. The optimum, and hence the result,
    does not depend on it.

    Parameters
    ----------
    objective : callable
        ``objective(theta, order)`` for theta (K, d) returns ``f`` (K,) for
        ``order=0``, ``(f, g)`` with g (K, d) for ``order=1``, and
        ``(f, g, H)`` with H (K, d, d) for ``order=2``.
    theta0 : ndarray (K, d)
    stop : callable, optional
        ``stop(theta, step, iteration) -> bool (K,)``: problems to halt, checked
        after each iteration with the step just taken (zero for problems that
        did not move).
    max_iter : int
        Maximum number of steps.
    tol : float
        Convergence when the Newton decrement ``g' H^{-1} g`` is below
        ``tol * max(1, |f|)``, or below ``1e-12 * max(1, |f|)`` and no longer
        halving from one step to the next (the rounding floor of the gradient).
    reuse_contraction : float
        Ratio of successive decrements below which a Hessian is reused; 0
        forms it at every step (plain Newton).
    max_chord : int
        Most chord steps in a row with one Hessian. More pays where a Hessian
        costs many gradients (wide multinomial designs: 20-30).
    hessian0 : ndarray (K, d, d), optional
        An approximation of the Hessians at *theta0* (e.g. the all-rows one
        for fold fits started at the all-rows optimum): the first steps are
        chord steps with it, for as long as they contract.
    final_step : bool
        Whether a problem that converges takes the step it converged on (already solved
        for, so free): its coefficients are then within about the square of its tolerance
        after a Newton step, and a chord step's contraction factor times it after a chord
        step, instead of within the tolerance itself. A problem also converges when its
        decrement times its last ratio of decrements (at most *reuse_contraction*: the
        decrement predicted after the step) is below tolerance, and takes that step.
    exact_start : bool
        Whether *hessian0* is the Hessian at *theta0* itself (e.g. ``X'X / 4`` at the
        logistic start 0), not an approximation: the fit is then plain Newton from the
        start, with the first Hessian known without a pass over the rows.
    secant : bool
        Whether a kept Hessian is corrected after each chord step by the BFGS update from
        the step and the change of gradient it made (the matrix then agrees with the
        objective's curvature along the last step): the chord steps converge superlinearly
        instead of linearly, where the kept Hessian is one at a nearby point (fold fits
        started with the all-rows fit's).

    Returns
    -------
    NewtonResult
    """
    with one_blas_thread():
        return _newton_iterations(objective, theta0, stop, max_iter, tol, reuse_contraction,
                                  max_chord, hessian0, final_step, exact_start, secant)


def _bfgs_update(H: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """``H - Hss'H / s'Hs + yy' / y's`` for each problem (K, d, d); None where any problem's
    curvature along its step is not positive (the update would not stay definite).

    A problem that did not move (s = 0) keeps its matrix.
    """
    Hs = np.einsum("kij,kj->ki", H, s)
    sHs, ys = np.einsum("ki,ki->k", s, Hs), np.einsum("ki,ki->k", y, s)
    moved = sHs > 0
    if np.any(moved & ~(ys > 1e-12 * np.sqrt(sHs * np.einsum("ki,ki->k", y, y)))):
        return None
    if moved.all():  # the usual case: no problem's rows need picking out
        return H + ((y[:, :, None] * y[:, None, :]) / ys[:, None, None] - (
            Hs[:, :, None] * Hs[:, None, :]) / sHs[:, None, None])
    out = H.copy()
    k = np.flatnonzero(moved)
    out[k] += (y[k, :, None] * y[k, None, :]) / ys[k, None, None] - (
        Hs[k, :, None] * Hs[k, None, :]) / sHs[k, None, None]
    return out


def _newton_iterations(objective, theta0, stop, max_iter, tol, reuse_contraction,
                       max_chord, hessian0, final_step=False, exact_start=False,
                       secant=False) -> NewtonResult:
    theta = theta0.copy()
    K = theta.shape[0]
    converged = np.zeros(K, dtype=bool)
    stopped = np.zeros(K, dtype=bool)
    # Whether the systems are the Hessians at the current theta.
    fresh = hessian0 is None or exact_start
    if hessian0 is None:
        f, g, H = objective(theta, 2)
    else:
        (f, g), H = objective(theta, 1), hessian0
    systems = NewtonSystems.from_hessians(H)
    singular = systems.singular.copy()
    # Each problem's decrement at its previous step; none yet (inf lets a given Hessian be tried).
    previous = np.full(K, np.nan if fresh else np.inf)
    previous_fresh = np.full(K, np.nan)  # ... at its previous step with a fresh Hessian
    chords = 0  # chord steps taken since the systems were formed
    iteration = 0
    for iteration in range(1, max_iter + 1):
        moving = ~(converged | stopped)
        step, decrement = systems.steps(g)
        contracting = bool((~moving | (decrement <= reuse_contraction * previous)).all())
        if not fresh and not contracting:
            # A chord step that no longer pays: form the Hessians here.
            f, g, H = objective(theta, 2)
            systems = NewtonSystems.from_hessians(H)
            singular |= systems.singular
            step, decrement = systems.steps(g)
            fresh = True
        # The tolerances are relative to max(1, |f|), formed once here for the three tests.
        magnitude = np.maximum(1.0, np.abs(f))
        tolerance = tol * magnitude
        converged |= decrement <= tolerance
        if fresh:
            # At the optimum to rounding, a decrement computed from rounding-level gradients
            # can stall above tol (seen for penalised fits of nearly separated classes, ridge
            # 1e-4): a tiny decrement that no longer shrinks means no further progress is
            # possible. Only decrements from fresh Hessians are compared: one from a kept
            # Hessian is measured in another metric, so its not shrinking says nothing about a
            # rounding floor.
            floor = decrement <= _STALL * magnitude
            converged |= moving & floor & (decrement >= 0.5 * previous_fresh)
            previous_fresh = np.where(moving, decrement, previous_fresh)
        if final_step:
            # The step about to be taken shrinks the decrement by about the last ratio of
            # decrements (linear for chord steps, better for Newton's): a problem whose
            # decrement after it is predicted below tol converges on taking it.
            known = np.isfinite(previous) & (previous > 0)
            ratio = np.minimum(decrement / np.where(known, previous, 1.0), reuse_contraction)
            converged |= moving & known & (decrement * ratio <= tolerance)
            now = moving & converged
            if now.any():
                now &= ~systems.singular
                theta[now] -= step[now]
        moving = ~(converged | stopped)
        if not moving.any():
            break
        # After a contracting step, try keeping this Hessian for the next.
        chords = 0 if fresh else chords
        reuse_next = contracting and reuse_contraction > 0 and chords < max_chord
        theta_before, g_before = theta, g
        theta, f, g, H, scale = _line_search(
            objective, theta, f, step, decrement, moving, 1 if reuse_next else 2, magnitude
        )
        if H is not None:
            systems = NewtonSystems.from_hessians(H)
            singular |= systems.singular
        elif secant and not systems.any_singular:
            moved, change = theta - theta_before, g - g_before
            if not moving.all():  # zero for the problems that did not move
                moved, change = moving[:, None] * moved, moving[:, None] * change
            updated = _bfgs_update(systems.H, moved, change)
            if updated is not None:
                systems = NewtonSystems.from_hessians(updated)
        fresh = H is not None
        chords += not fresh
        converged |= moving & (scale == 0.0)
        previous = np.where(moving, decrement, previous)
        if stop is not None:
            halt = np.asarray(stop(theta, scale[:, None] * step, iteration))
            if halt.any():  # rarely: most fits are never halted
                stopped |= halt & ~converged
    return NewtonResult(theta, converged, stopped, singular, iteration)


def _line_search(objective, theta, f, step, decrement, moving, order, magnitude):
    """Backtracking (Armijo) along ``-step`` for the moving problems.

    Returns the new theta, the objective's value, gradient and (for
    ``order=2``) Hessian there, and the step fraction taken (0 where no
    decrease was possible: the problem is at its optimum to rounding).
    *magnitude* is ``max(1, |f|)`` (the caller's), which the tolerances are relative to.

    A step whose decrement is below ``_STALL * max(1, |f|)`` is taken in full, as in
    :mod:`~pearlstats.engines.newton_cg`: it would lower f by less than f's rounding error,
    so values of f cannot judge it. (A fold fit that starts with its values summed by fold in
    the all-rows pass has an f a few units in the last place from the same f summed directly;
    at a fold optimum equal to the all-rows one, stratified folds of the intercept-only
    model, the comparison then rejected the step 60 times, a pass each.)
    """
    scale = moving.astype(float)  # 1 for the moving problems, 0 for the others
    trial = theta - scale[:, None] * step
    # The full step is usually accepted, so the derivatives are formed with f.
    values = objective(trial, order)
    f_trial = values[0]
    full = None  # the steps taken in full whatever f says (formed where Armijo's test fails)
    for halvings in range(61):
        accepted = f_trial <= f - 1e-4 * scale * decrement  # Armijo's test (usually enough)
        if accepted.all():
            break
        if full is None:
            full = moving & (decrement <= _STALL * magnitude)
        accepted |= ~moving | full | (np.abs(f_trial - f) <= 1e-15 * np.abs(f))
        if accepted.all():
            break
        if halvings == 60:
            scale = np.where(accepted, scale, 0.0)
            trial = theta - scale[:, None] * step
            break
        scale = np.where(accepted, scale, scale / 2)
        trial = theta - scale[:, None] * step
        f_trial = objective(trial, 0)
    if halvings > 0:
        values = objective(trial, order)
    return (trial, values[0], values[1], values[2] if order == 2 else None, scale)


def fold_start(everything: NewtonResult, n_folds: int) -> np.ndarray | None:
    """The all-rows optimum as the start of every fold's fit, or None when it was not reached.

    Each fold's training rows are most of the rows, so its optimum is near the
    all-rows one: Newton needs about 5 steps from there instead of 12 or so from
    zero (10-class multinomial), more than paying for the extra fit. The optimum
    itself does not depend on the start.
    """
    if everything.converged[0] and not everything.stopped[0]:
        return np.repeat(everything.theta, n_folds, axis=0)
    return None


def separated_in_every_fold(everything: NewtonResult, n_folds: int) -> NewtonResult:
    """Fold results when the all-rows fit is separated: every fold is, and none is fitted.

    Rows separated by a hyperplane stay separated in every subset of them, so no
    fold's maximum-likelihood estimate exists either.
    """
    d = everything.theta.shape[1]
    no = np.zeros(n_folds, dtype=bool)
    return NewtonResult(
        np.zeros((n_folds, d)), no, np.ones(n_folds, dtype=bool), no.copy(), everything.iterations
    )


def penalised_newton(
    loss: Callable,
    theta0: np.ndarray,
    ridge: float,
    weights: np.ndarray,
    *,
    stop: Callable | None = None,
    newton: Callable = batched_newton,
    hessian0: np.ndarray | None = None,
) -> NewtonResult:
    """Minimise ``loss(theta) + ridge / 2 * sum(weights * theta**2)`` for K problems.

    The problems are solved for ``u = theta / r`` with ``r = 1 / sqrt(1 +
    ridge * weights)`` (:func:`~pearlstats.engines._common.shrinkage_factors`):
    in u the penalty weight is below 1 and the Hessian stays well conditioned
    for any finite ridge, so a huge ridge shrinks the penalised coefficients to
    0 while the unpenalised intercept (weight 0, r = 1) is still fitted. With
    ``ridge = 0``, u is theta and this is plain :func:`batched_newton`.

    Parameters
    ----------
    loss : callable
        ``loss(theta, order)`` as *objective* of :func:`batched_newton`, without penalty.
    theta0 : ndarray (K, d)
    ridge : float
    weights : ndarray (K, d)
        Penalty weight of each coefficient (0 for the intercept).
    stop : callable, optional
        As for :func:`batched_newton`, called with theta and the step in theta.
    newton : callable
        The Newton solver (:func:`batched_newton`; replaceable in tests).
    hessian0 : ndarray (K, d, d), optional
        Approximate Hessians of *loss* at *theta0* (e.g. ``hessian`` of another
        result), passed on to *newton* in the solver's parametrisation.

    Returns
    -------
    NewtonResult
        With ``theta`` in the original parametrisation and ``hessian`` the
        loss's last Hessian formed.
    """
    r, penalty = shrinkage_factors(ridge, weights)
    if not np.any(penalty) and np.all(r == 1.0):
        return _unpenalised_newton(loss, theta0, stop, newton, hessian0)
    diagonal = np.arange(theta0.shape[1])
    last = {}  # the loss's last Hessian

    def in_u(H):
        H = r[:, :, None] * H * r[:, None, :]
        H[:, diagonal, diagonal] += penalty
        return H

    def objective(u, order):
        values = loss(r * u, order)
        # order 0 gives the K values alone, not a tuple: values[0] would be problem 0's loss.
        f = (values if order == 0 else values[0]) + 0.5 * np.sum(penalty * u**2, axis=1)
        if order == 0:
            return f
        g = r * values[1] + penalty * u
        if order == 1:
            return f, g
        last["H"] = values[2]
        return f, g, in_u(values[2])

    def stop_u(u, step, iteration):
        return stop(r * u, r * step, iteration)

    start = {} if hessian0 is None else {"hessian0": in_u(hessian0)}
    result = newton(objective, theta0 / r, stop=None if stop is None else stop_u, **start)
    return NewtonResult(r * result.theta, result.converged, result.stopped, result.singular,
                        result.iterations, last.get("H"))


def _unpenalised_newton(loss: Callable, theta0: np.ndarray, stop: Callable | None,
                        newton: Callable, hessian0: np.ndarray | None) -> NewtonResult:
    """:func:`penalised_newton` without a penalty (ridge 0): u is theta, the loss the objective.

    The penalised objective's values would be the loss's multiplied by ``r = 1`` with 0
    added, the same numbers, at a dozen array operations per evaluation: a tenth of the time
    of the many small fits of a nested SE on small data.
    """
    last = {}  # the loss's last Hessian

    def objective(theta, order):
        values = loss(theta, order)
        if order == 2:
            last["H"] = values[2]
        return values

    start = {} if hessian0 is None else {"hessian0": hessian0}
    result = newton(objective, theta0.copy(), stop=stop, **start)
    return replace(result, hessian=last.get("H"))
