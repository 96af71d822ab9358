"""Simplex weights for the piecewise-linear losses (hinge, absolute): a linear programme.

``min (1/n) sum_i t_i`` over ``(w, t)`` with ``t_i >= intercepts[k] + slopes[k] @ w`` for
every piece ``k`` of row ``i``, ``w >= 0``, ``sum w = 1``, solved by HiGHS with its
feasibility tolerances at their tightest (1e-10; the defaults, 1e-7, left gaps of that size).
The certificate is a lower bound from HiGHS' multipliers, rescaled to be exactly dual
feasible: any ``lam >= 0`` summing to ``1/n`` over each row's pieces gives
``f* >= lam'intercepts + min_j (lam'slopes)_j``.

Examples
--------
>>> import numpy as np
>>> from pearlstats.weights.losses import get_loss
>>> y = np.array([1.0, 2.0, 3.0, 4.0])
>>> form = get_loss("absolute", "gaussian").form(y, np.column_stack([y + 1, y - 1]))
>>> x, lower, message = solve_lp(form)
>>> x.round(12).tolist(), bool(form.value(x) - lower <= 1e-12)
([0.5, 0.5], True)
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from .losses import PiecewiseLinearForm

__all__ = ["solve_lp", "dual_lower_bound"]

_TOLERANCE = 1e-10  # HiGHS' smallest primal and dual feasibility tolerances
_WILD = 1e8  # slopes this many times the median candidate's are left out if HiGHS refuses them


def dual_lower_bound(form: PiecewiseLinearForm, lam: np.ndarray, w: np.ndarray) -> float:
    """A valid lower bound on the optimum from non-negative piece multipliers *lam*.

    A row without multiplier mass gets it on its piece that is largest at *w*; then each
    row's multipliers are rescaled to sum to ``1/n``, which makes them exactly dual feasible.
    """
    n = form.n_obs
    lam = np.maximum(lam, 0.0)
    per_row = np.bincount(form.rows, lam, minlength=n)
    if (per_row == 0).any():
        order = np.lexsort((form.intercepts + form.slopes @ w, form.rows))
        top = order[np.r_[np.diff(form.rows[order]) != 0, True]]  # the largest piece of each row
        lam[top[per_row == 0]] = 1.0
        per_row = np.bincount(form.rows, lam, minlength=n)
    lam = lam / (n * per_row[form.rows])
    return float(lam @ form.intercepts + (lam @ form.slopes).min())


def _highs(form: PiecewiseLinearForm):
    """HiGHS' result for the LP of *form* (see the module notes)."""
    J, n = form.size, form.n_obs
    A_ub = sparse.hstack([sparse.csr_matrix(form.slopes), -form.row_indicator()], format="csr")
    A_eq = np.r_[np.ones(J), np.zeros(n)][None, :]
    cost = np.r_[np.zeros(J), np.full(n, 1.0 / n)]
    bounds = [(0, None)] * J + [(None, None)] * n
    return linprog(
        cost, A_ub=A_ub, b_ub=-form.intercepts, A_eq=A_eq, b_eq=[1.0], bounds=bounds,
        method="highs",
        options={"primal_feasibility_tolerance": _TOLERANCE,
                 "dual_feasibility_tolerance": _TOLERANCE},
    )


def _restricted(form: PiecewiseLinearForm, keep: np.ndarray) -> PiecewiseLinearForm:
    return PiecewiseLinearForm(form.rows, form.intercepts, form.slopes[:, keep], form.n_obs,
                               form.unit)


def solve_lp(form: PiecewiseLinearForm) -> tuple[np.ndarray, float, str | None]:
    """HiGHS' weights (not yet snapped), a certified lower bound, and why it failed (or None).

    HiGHS refuses coefficients beyond about 1e15 ("model error": a wildly overfitted
    candidate's predictions); the LP is then solved without the candidates whose slopes
    exceed ``_WILD`` times the others' and the bound comes from its multipliers on the whole
    problem. If HiGHS fails even so, the weights are the best single candidate's and the
    bound is ``-inf``.
    """
    J = form.size
    keep = np.ones(J, dtype=bool)
    result = _highs(form)
    if result.status != 0:
        size = np.abs(form.slopes).max(axis=0)
        keep = size <= _WILD * max(float(np.median(size)), np.finfo(float).tiny)
        if keep.any() and not keep.all():
            result = _highs(_restricted(form, keep))
    if result.status != 0:
        values = np.full((form.n_obs, J), -np.inf)
        np.maximum.at(values, form.rows, form.intercepts[:, None] + form.slopes)
        w = np.zeros(J)
        w[int(np.argmin(values.mean(axis=0)))] = 1.0
        return w, -np.inf, str(result.message)
    w = np.zeros(J)
    w[keep] = np.maximum(result.x[: int(keep.sum())], 0.0)
    w = w / w.sum()
    return w, dual_lower_bound(form, -result.ineqlin.marginals, w), None
