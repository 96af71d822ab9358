"""The Poisson deviance and its weight objective at large counts (means of 1e9 to 1e12).

``2 (y log y - y log mu - (y - mu))`` cancels terms of 1e13 to a deviance of about 1 per row;
the references are the same deviances summed in 60-digit decimal arithmetic from the same
float64 inputs, so the only error allowed is the float64 result's own rounding (a few eps
per row, summed: 1e-14 relative).
"""

from __future__ import annotations

import warnings
from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import pearlstats as pearl
from pearlstats.weights import solve_weights
from pearlstats.weights.log_barrier import LogBarrierForm
from pearlstats.weights.losses import get_loss, poisson_deviance_rows

getcontext().prec = 60


def _exact_deviance(y: np.ndarray, mu: np.ndarray) -> float:
    """Mean Poisson deviance in decimal arithmetic (y > 0 rows: 2 (y ln(y/mu) - (y - mu)))."""
    total = Decimal(0)
    for yi, mi in zip(y.tolist(), mu.tolist()):
        y_, m_ = Decimal(yi), Decimal(mi)
        total += 2 * ((y_ * (y_ / m_).ln() if yi > 0 else 0) - (y_ - m_))
    return float(total / len(y))


def _large_counts(base: float, seed: int = 13, n: int = 300):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    mu = base * np.exp(0.3 * x)
    y = rng.poisson(mu).astype(float)
    # two candidates that each miss part of the signal: a unique optimum inside the simplex
    P = np.column_stack([base * np.exp(0.25 * x + 1e-6 * rng.normal(size=n)),
                         base * np.exp(0.32 * x - 2e-6)])
    return y, P


@pytest.mark.parametrize("base", [1.0, 1e6, 1e9, 1e12])
def test_deviance_rows_keep_their_digits(base):
    y, P = _large_counts(base)
    y[:5] = 0.0  # and rows without a count
    for mu in P.T:
        got = poisson_deviance_rows(y, mu).mean()
        assert got == pytest.approx(_exact_deviance(y, mu), rel=1e-14)


@pytest.mark.parametrize("base", [1e6, 1e12])
def test_weights_at_large_counts_are_certified_and_optimal(base):
    # the weight objective lost 1e-4 of itself at 1e12 (terms of 1e13 cancelling): its solve
    # stopped with a certified gap of 1.6e-4 (a ConvergenceWarning, already at 1e6) and weights
    # 4e-4 off; the reference minimises the deviance summed in decimal arithmetic over the
    # segment between the two candidates
    y, P = _large_counts(base)
    loss = get_loss("poisson_deviance", "poisson")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pearl.ConvergenceWarning)
        solution = solve_weights(P, y, loss)
    best = minimize_scalar(lambda t: _exact_deviance(y, P @ [1 - t, t]), bounds=(0, 1),
                           method="bounded", options={"xatol": 1e-10})
    # the reference's float objective is flat to 1e-16 within about 1e-7 of its minimiser
    np.testing.assert_allclose(solution.weights, [1 - best.x, best.x], atol=1e-6)
    form = loss.form(y, P)
    assert isinstance(form, LogBarrierForm)
    assert form.value(solution.weights) == pytest.approx(
        _exact_deviance(y, P @ solution.weights), rel=1e-13)


def test_the_shifted_form_equals_the_deviance_at_every_vertex_and_point():
    y, P = _large_counts(1e9)
    y[:7] = 0.0
    form = get_loss("poisson_deviance", "poisson").form(y, P)
    exact = [_exact_deviance(y, P[:, j]) for j in range(2)]
    np.testing.assert_allclose(form.vertex_values(), exact, rtol=1e-13)
    w = np.array([0.3, 0.7])
    # the gradient against central differences of the decimal deviance (step 1e-4: the
    # deviance is quadratic in w to 1e-8 there)
    h = 1e-4
    numeric = [(_exact_deviance(y, P @ (w + h * e)) - _exact_deviance(y, P @ (w - h * e)))
               / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(form.gradient(w), numeric, rtol=1e-6)
