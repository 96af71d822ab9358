"""Simplex weights from partition-wise statistics, with the in-memory solvers.

Squared loss: on the simplex ``mean (y - P w)^2 = w'(E'E / n)w`` with
``E = y 1' - P``, so the weights depend on the data only through the J x J
matrix ``E'E``, which one pass accumulates. :class:`GramLeastSquaresForm`
offers the solver interface of
:class:`~pearlstats.weights.losses.LeastSquaresForm` from that matrix: the
in-memory squared-loss solver (:mod:`pearlstats.weights.gram`: quadprog when
well-conditioned, else the active-set method, and the minimum-norm point of a
tied optimum) only ever reads the Gram matrix, so both paths give the same
weights from the same ``E'E``.

Cross-entropy and Poisson deviance: the active-set Newton method of
:mod:`pearlstats.weights.convex` runs unchanged on a
:class:`DistributedBarrierForm`, whose value, gradient and Hessian factor at
a weight vector come from one pass over the partitions (the out-of-fold
predictions are recomputed from the fold coefficients in each pass; the
(n, J) matrix is never stored). Each Newton step costs one pass, and so does
each change of that method's face (the candidates with positive weight), which
on the simplex is most of its steps. So the method starts where a sequence of
quadratic models says the optimum is (:func:`sqp_start`): each model (the
pass's value, gradient and Hessian at the current point) is minimised over the
whole simplex on the client, faces and all, without a pass, and the pass at
the model's minimiser (after Armijo's test along the way to it) gives the next
model. The Newton method then only certifies that point (its Frank-Wolfe gap),
so the weights are the same method's, to its tolerance.

Candidates whose out-of-fold residuals agree to 1e-9 of their norm (in the
Euclidean norm, where the in-memory solver compares maximum norms) are merged
as duplicates for the squared loss; the convex losses are solved without
merging (quadprog's subproblems are damped instead).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import AllCandidatesFailedError, OptionError
from ..weights.convex import frank_wolfe_gap, solve_smooth
from ..weights.solvers import DENSE_LIMIT, WeightSolution, _fw_gap, _solve_checked

__all__ = ["DistributedBarrierForm", "GramLeastSquaresForm", "check_candidate_count",
           "solve_from_form", "sqp_start", "too_many_candidates"]

_DUPLICATE_RTOL = 1e-9
_MODEL_TOL = 1e-3  # the model's own gap, relative to the gap the weights are certified at
_ARMIJO, _HALVINGS = 1e-4, 30


def _factor(M: np.ndarray) -> np.ndarray:
    """A square ``R`` with ``R'R = M`` for a symmetric positive semi-definite M."""
    values, vectors = np.linalg.eigh((M + M.T) / 2)
    return np.sqrt(np.maximum(values, 0.0))[:, None] * vectors.T


def too_many_candidates(J: int) -> OptionError:
    """The refusal of *J* > :data:`~pearlstats.weights.solvers.DENSE_LIMIT` weighted
    candidates on dask data, with what to do instead (the in-memory solver has no limit:
    it generates columns)."""
    return OptionError(
        f"the distributed weight solver handles at most {DENSE_LIMIT} candidates, got {J}; "
        "use candidates='single' or 'nested', or an explicit list of at most "
        f"{DENSE_LIMIT} candidates, or fit in memory, where there is no such limit (the rows, "
        "ddf.compute(), or a sample of them, ddf.sample(frac=0.1).compute())"
    )


def check_candidate_count(J: int) -> None:
    """Raise :func:`too_many_candidates` for more than ``DENSE_LIMIT`` weighted candidates."""
    if J > DENSE_LIMIT:
        raise too_many_candidates(J)


class GramLeastSquaresForm:
    """``f(w) = w'(E'E)w / n`` on the simplex, from the J x J residual Gram matrix."""

    unit = 1.0

    def __init__(self, EtE: np.ndarray, n: int, multiplicity: np.ndarray | None = None):
        self.EtE = np.asarray(EtE, dtype=float)
        self.n_rows = int(n)
        self.multiplicity = multiplicity  # merged duplicates per column (the tie rule's norm)

    @property
    def size(self) -> int:
        return self.EtE.shape[0]

    def restrict(self, columns: Any) -> GramLeastSquaresForm:
        multiplicity = None if self.multiplicity is None else self.multiplicity[columns]
        return GramLeastSquaresForm(self.EtE[np.ix_(columns, columns)], self.n_rows, multiplicity)

    def value(self, w: np.ndarray) -> float:
        return float(w @ self.EtE @ w) / self.n_rows

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return (2.0 / self.n_rows) * (self.EtE @ w)

    def vertex_values(self) -> np.ndarray:
        return np.diagonal(self.EtE) / self.n_rows

    def gram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(H, d)`` with ``E'E / n = D H D`` as the in-memory form gives it (here ``d = 1``)."""
        return self.EtE / self.n_rows, np.ones(self.size)

    def duplicate_groups(self) -> np.ndarray:
        """Group number of each candidate (numbered by first member), from residual distances."""
        norms = np.sqrt(np.maximum(np.diagonal(self.EtE), 0.0))
        distance = np.sqrt(np.maximum(norms[:, None] ** 2 + norms[None] ** 2 - 2 * self.EtE, 0.0))
        label = np.arange(self.size)
        for j in range(self.size):
            for lead in range(j):
                if label[lead] == lead and distance[j, lead] <= _DUPLICATE_RTOL * max(
                    norms[j], norms[lead]
                ):
                    label[j] = lead
                    break
        _, inverse = np.unique(label, return_inverse=True)
        return inverse


class DistributedBarrierForm:
    """The solver interface of a log-barrier form, each new point evaluated by one distributed pass.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(w) -> (value, gradient (J,), hessian (J, J), objective)``; row means.
    vertex : ndarray (J,)
        ``f(e_j)`` of every candidate (from the first pass).
    n : int
    """

    unit = 1.0

    def __init__(self, evaluate: Any, vertex: np.ndarray, n: int):
        self._evaluate = evaluate
        self._vertex = np.asarray(vertex, dtype=float)
        self.n_rows = int(n)
        self._memo: dict = {}
        self.passes = 0

    @property
    def size(self) -> int:
        return self._vertex.size

    def at(self, w: np.ndarray) -> Any:
        key = np.asarray(w, dtype=float).tobytes()
        if key not in self._memo:
            self.passes += 1
            self._memo[key] = self._evaluate(np.asarray(w, dtype=float))
        return self._memo[key]

    def restrict(self, columns: Any) -> Any:
        raise too_many_candidates(self.size)

    def value(self, w: np.ndarray) -> float:
        hot = np.flatnonzero(w)
        if hot.size == 1 and w[hot[0]] == 1.0:
            return float(self._vertex[hot[0]])
        return self.at(w)[0]

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return self.at(w)[1]

    def hessian_factor(self, w: np.ndarray) -> np.ndarray:
        return _factor(self.at(w)[2])

    def vertex_values(self) -> np.ndarray:
        return self._vertex.copy()


class _QuadraticModel:
    """``f + g'(w - c) + (w - c)'H(w - c) / 2`` on the simplex: a pass's second-order model at c.

    Has the solver interface :func:`~pearlstats.weights.convex.solve_smooth` reads, and no
    pass behind it.
    """

    unit = 1.0

    def __init__(self, centre: np.ndarray, f: float, g: np.ndarray, H: np.ndarray, n: int):
        self.centre, self.f, self.g = centre, float(f), g
        self.H = (H + H.T) / 2
        self.factor = _factor(self.H)
        self.n_rows = n

    @property
    def size(self) -> int:
        return self.g.size

    def value(self, w: np.ndarray) -> float:
        d = w - self.centre
        return self.f + float(self.g @ d) + 0.5 * float(d @ self.H @ d)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return self.g + self.H @ (w - self.centre)

    def hessian_factor(self, w: np.ndarray) -> np.ndarray:
        return self.factor

    def vertex_values(self) -> np.ndarray:
        # at e_j, d = e_j - c: f + g_j - g'c + (H_jj - 2 (Hc)_j + c'Hc) / 2
        Hc = self.H @ self.centre
        return (self.f + self.g - self.g @ self.centre
                + 0.5 * (np.diagonal(self.H) - 2 * Hc + self.centre @ Hc))


def sqp_start(form: DistributedBarrierForm, tol: float, max_iter: int) -> np.ndarray:
    """Weights near the optimum of *form* by sequential quadratic models, a pass per step.

    From the best single candidate: the model at the current point (its value,
    gradient and Hessian, one pass) is minimised over the simplex on the client by
    :func:`~pearlstats.weights.convex.solve_smooth`; the objective is then
    evaluated toward that minimiser (the full step first, halved until Armijo's
    condition holds). It stops at a Frank-Wolfe gap the Newton method would accept,
    when a step no longer decreases the objective, or after *max_iter* steps; the
    caller's Newton method starts there and certifies (or finishes) the solve.

    Parameters
    ----------
    form : DistributedBarrierForm
    tol, max_iter : as :func:`~pearlstats.weights.convex.solve_smooth`

    Returns
    -------
    ndarray (J,)
        A point of the simplex.
    """
    w = np.zeros(form.size)
    w[int(np.nanargmin(form.vertex_values()))] = 1.0
    if form.size == 1:  # nothing to solve: no pass
        return w
    f, g, H = form.at(w)[:3]
    for _ in range(max_iter):
        goal = tol * (1.0 + abs(f)) / 4
        if frank_wolfe_gap(g, w) <= goal:
            break
        model = _QuadraticModel(w, f, g, H, form.n_rows)
        target, _ = solve_smooth(model, w, tol * _MODEL_TOL, max_iter)
        step = target - w
        slope = float(g @ step)
        if not slope < 0:  # the model sees no descent from here
            break
        for halving in range(_HALVINGS):
            alpha = 0.5**halving
            trial = np.maximum(w + alpha * step, 0.0)  # (a convex combination: on the simplex)
            trial /= trial.sum()
            f_trial, g_trial, H_trial = form.at(trial)[:3]
            if f_trial <= f + _ARMIJO * alpha * slope:
                break
        else:
            break  # no decrease along the model's direction: the Newton method takes over
        w, f, g, H = trial, f_trial, g_trial, H_trial
    return w


def solve_from_form(
    form: Any, kind: str, active: np.ndarray, *, tol: float = 1e-10, max_iter: int = 500
) -> Any:
    """Simplex weights for the active candidates of *form*, as ``solve_weights``.

    Returns
    -------
    weights : ndarray (J,)
    gap : float
        The certified Frank-Wolfe gap.
    solver : str
    merged : tuple of tuple of int
    """
    J = form.size
    if not active.any():
        raise AllCandidatesFailedError(
            f"no candidate is active for the weights: all {J} are marked failed"
        )
    check_candidate_count(J)
    columns = np.flatnonzero(active)
    sub = form.restrict(columns) if columns.size < J else form
    group = sub.duplicate_groups() if hasattr(sub, "duplicate_groups") else np.arange(columns.size)
    sizes = np.bincount(group)
    leaders = np.unique(group, return_index=True)[1]
    reduced = sub.restrict(leaders) if leaders.size < columns.size else sub
    if isinstance(reduced, GramLeastSquaresForm):
        reduced = GramLeastSquaresForm(reduced.EtE, reduced.n_rows, sizes)
    start = sqp_start(reduced, tol, max_iter) if isinstance(reduced, DistributedBarrierForm) \
        else None
    weights, _, _, _, solver = _solve_checked(reduced, kind, columns, group, sizes, J, tol,
                                              max_iter, start)
    if leaders.size == 1:
        gap = 0.0
    else:
        full = np.zeros(J)
        full[columns] = weights[columns]
        gap = max(_fw_gap(form.gradient(full)[columns], full[columns]), 0.0)
    merged = tuple(tuple(int(j) for j in columns[group == g]) for g in np.flatnonzero(sizes > 1))
    return weights, float(gap), solver, merged


def weight_solution(
    weights: Any, objective: Any, gap: Any, solver: Any, merged: Any
) -> WeightSolution:
    return WeightSolution(weights, float(objective), float(gap), solver, 0.0, merged)
