"""A batched Newton method with backtracking, for K fold problems at once.

Each of the K problems (one per cross-validation fold, or a single one for a
refit on all rows) minimises a smooth convex objective in its own parameter
vector. Working on all folds together turns K small Python loops into a few
batched linear-algebra calls. A problem stops moving once its Newton decrement
is below tolerance, or once ``stop`` (e.g. a separation check) flags it.

The iterations run with BLAS on one thread: they multiply and factor many
small matrices, where OpenBLAS threads cost more than they give and, on a
busy machine, spin-wait (a binomial fit with a 384-column block took 13.8 s
with two threads on a loaded 2-core machine and 1.35 s with one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["NewtonResult", "batched_newton", "batched_solve", "fold_start", "separated_in_every_fold"]


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
    """

    theta: np.ndarray
    converged: np.ndarray
    stopped: np.ndarray
    singular: np.ndarray
    iterations: int


_THREADPOOLS: ThreadpoolController | None = None


def _one_blas_thread():
    """A context in which BLAS libraries use one thread (the controller is built once)."""
    global _THREADPOOLS
    if _THREADPOOLS is None:
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def batched_solve(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``H[k] x[k] = g[k]``, using least squares where ``H[k]`` is singular.

    Returns
    -------
    x : ndarray (K, d)
    singular : ndarray of bool (K,)
    """
    try:
        np.linalg.cholesky(H)
        return np.linalg.solve(H, g[..., None])[..., 0], np.zeros(len(H), dtype=bool)
    except np.linalg.LinAlgError:
        pass
    x = np.empty_like(g)
    singular = np.zeros(len(H), dtype=bool)
    for k in range(len(H)):
        try:
            np.linalg.cholesky(H[k])
            x[k] = np.linalg.solve(H[k], g[k])
        except np.linalg.LinAlgError:
            x[k] = np.linalg.lstsq(H[k], g[k], rcond=None)[0]
            singular[k] = True
    return x, singular


def batched_newton(
    objective: Callable,
    theta0: np.ndarray,
    *,
    stop: Callable | None = None,
    max_iter: int = 100,
    tol: float = 1e-20,
) -> NewtonResult:
    """Minimise K convex objectives by damped Newton steps.

    Parameters
    ----------
    objective : callable
        ``objective(theta, derivatives) -> (f, g, H)`` with f (K,), and g (K, d),
        H (K, d, d) when *derivatives* is true (else None, None).
    theta0 : ndarray (K, d)
    stop : callable, optional
        ``stop(theta, step, iteration) -> bool (K,)``: problems to halt, checked
        after each iteration with the step just taken (zero for problems that
        did not move).
    max_iter : int
    tol : float
        Convergence when the Newton decrement ``g' H^{-1} g`` is below *tol*.

    Returns
    -------
    NewtonResult
    """
    with _one_blas_thread():
        return _newton_iterations(objective, theta0, stop, max_iter, tol)


def _newton_iterations(objective, theta0, stop, max_iter, tol) -> NewtonResult:
    theta = theta0.copy()
    K = theta.shape[0]
    converged = np.zeros(K, dtype=bool)
    stopped = np.zeros(K, dtype=bool)
    singular = np.zeros(K, dtype=bool)
    f, g, H = objective(theta, True)
    iteration = 0
    for iteration in range(1, max_iter + 1):
        step, was_singular = batched_solve(H, g)
        singular |= was_singular
        decrement = np.einsum("kd,kd->k", g, step)
        converged |= decrement <= tol * np.maximum(1.0, np.abs(f))
        moving = ~(converged | stopped)
        if not moving.any():
            break
        scale = np.where(moving, 1.0, 0.0)
        for _ in range(60):
            trial = theta - scale[:, None] * step
            f_trial, _, _ = objective(trial, False)
            accepted = ~moving | (f_trial <= f - 1e-4 * scale * decrement) | (np.abs(f_trial - f) <= 1e-15 * np.abs(f))
            if accepted.all():
                break
            scale = np.where(accepted, scale, scale / 2)
        else:
            # No decrease even for tiny steps: we are at the optimum to rounding.
            converged |= moving & ~accepted
            scale = np.where(accepted, scale, 0.0)
            trial = theta - scale[:, None] * step
        theta = trial
        if stop is not None:
            stopped |= stop(theta, scale[:, None] * step, iteration) & ~converged
        f, g, H = objective(theta, True)
    return NewtonResult(theta, converged, stopped, singular, iteration)


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
    return NewtonResult(np.zeros((n_folds, d)), no, np.ones(n_folds, dtype=bool), no.copy(), everything.iterations)
