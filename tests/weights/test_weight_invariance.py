"""Weights that do not depend on the response's units or origin, and solvers that never crash.

For the squared and absolute losses on the simplex ``y - P w = (y - c) - (P - c 1')w``
and a factor ``a`` scales the loss by ``a^2`` (or ``|a|``) without moving the argmin:
the weights must be invariant to ``y -> a y + c``. References are the untransformed
problem and scipy's SLSQP written out here.

Float64 keeps 16 digits, so ``a y + c`` only carries ``y`` when ``|c|`` is not much
larger than ``|a| * spread(y)``; the property tests draw ``|c| <= 1e4 |a|`` (and
``1e3`` through ``fit``, whose OLS predictions are rounded at the offset), which still
spans 1e-12..1e12 for both.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pearlstats as pearl
from conftest import simplex_minimum
from pearlstats.weights import solve_weights
from pearlstats.weights.losses import get_loss

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
FIT_SETTINGS = settings(max_examples=10, deadline=None, derandomize=True,
                        suppress_health_check=[HealthCheck.too_slow])


def _candidates(seed: int, n: int, J: int) -> tuple[np.ndarray, np.ndarray]:
    """y and J noisy, differently biased and shrunk predictions of it (a unique optimum)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    P = (
        rng.uniform(0.3, 1.0, size=J) * y[:, None]
        + rng.normal(scale=rng.uniform(0.2, 1.5, size=J), size=(n, J))
        + rng.normal(scale=0.3, size=J)
    )
    return P, y


@st.composite
def affine_maps(draw, ratio: float) -> tuple[float, float]:
    """``(a, c)`` with ``|a|`` in 1e-12..1e12, ``|c|`` in 1e-12..min(1e12, ratio |a|) or 0, both
    signs."""
    a_exponent = draw(st.floats(-12, 12))
    a = draw(st.sampled_from([-1.0, 1.0])) * 10.0**a_exponent
    c_top = min(12.0, a_exponent + np.log10(ratio))
    if draw(st.booleans()) or c_top <= -12:
        return a, 0.0
    c = draw(st.sampled_from([-1.0, 1.0])) * 10.0 ** draw(st.floats(-12, c_top))
    return a, c


# ---- solve_weights directly ----------------------------------------------------------------------
@SETTINGS
@given(seed=st.integers(0, 2**16), n=st.integers(15, 60), J=st.integers(2, 6), ac=affine_maps(1e4),
       name=st.sampled_from(["squared", "absolute"]))
def test_weights_are_invariant_to_affine_maps_of_y(seed, n, J, ac, name):
    a, c = ac
    P, y = _candidates(seed, n, J)
    loss = get_loss(name, "gaussian")
    base = solve_weights(P, y, loss)
    moved = solve_weights(a * P + c, a * y + c, loss)
    if name == "absolute" and not np.allclose(moved.weights, base.weights, atol=1e-6):
        # a linear programme may have a face of optima: then any optimum will do
        assert moved.objective == pytest.approx(abs(a) * base.objective, rel=1e-7)
        return
    np.testing.assert_allclose(moved.weights, base.weights, atol=1e-6)
    power = 2 if name == "squared" else 1
    assert moved.objective == pytest.approx(abs(a) ** power * base.objective, rel=1e-7)
    assert moved.kkt_gap <= 1e-8 * moved.objective


@SETTINGS
@given(seed=st.integers(0, 2**16), n=st.integers(15, 60), J=st.integers(2, 6), ac=affine_maps(1e4),
       order_seed=st.integers(0, 2**16))
def test_permuting_candidates_permutes_the_weights_at_any_scale(seed, n, J, ac, order_seed):
    a, c = ac
    P, y = _candidates(seed, n, J)
    P, y = a * P + c, a * y + c
    order = np.random.default_rng(order_seed).permutation(J)
    loss = get_loss("squared", "gaussian")
    np.testing.assert_allclose(solve_weights(P[:, order], y, loss).weights,
                               solve_weights(P, y, loss).weights[order], atol=1e-9)


@pytest.mark.parametrize("a, c", [(1e-150, 0.0), (1e-150, 3e-147), (-1e150, 1e150), (1e150, -2e153),
                                  (1e-155, 0.0), (1.0, 1e10), (-1e-7, 1e-5), (1e8, 1e11)])
@pytest.mark.parametrize("name", ["squared", "absolute"])
def test_extreme_units_keep_the_weights(a, c, name):
    P, y = _candidates(3, 40, 4)
    loss = get_loss(name, "gaussian")
    base = solve_weights(P, y, loss)
    moved = solve_weights(a * P + c, a * y + c, loss)
    assert np.isfinite(moved.weights).all() and np.isfinite(moved.objective)
    np.testing.assert_allclose(moved.weights, base.weights, atol=1e-6)
    power = 2 if name == "squared" else 1
    assert moved.objective == pytest.approx(abs(a) ** power * base.objective, rel=1e-6)


def test_a_large_offset_does_not_merge_distinct_candidates():
    P, y = _candidates(5, 50, 3)
    sol = solve_weights(P + 1e10, y + 1e10, get_loss("squared", "gaussian"))
    assert sol.merged == ()
    np.testing.assert_allclose(
        sol.weights, solve_weights(P, y, get_loss("squared", "gaussian")).weights, atol=1e-5
    )


def _slsqp(P, y) -> np.ndarray:
    """Squared-loss simplex weights from SLSQP on a problem standardised here, best of several
    starts."""
    scale = np.abs(y - np.median(y)).max()
    E = (y[:, None] - P) / scale
    w, _ = simplex_minimum(lambda w: np.mean((E @ w) ** 2), P.shape[1],
                           jac=lambda w: 2 * E.T @ (E @ w) / len(y), ftol=1e-16)
    return w


def test_ill_conditioned_gram_goes_to_the_active_set_solver():
    # two candidates 1e-7 of their spread apart: not duplicates, but their Gram matrix has
    # an eigenvalue ratio near 1e14, which quadprog must not see
    P, y = _candidates(7, 50, 3)
    noise = np.random.default_rng(1).normal(size=50)
    P = np.column_stack([P, P[:, 0] + 1e-7 * noise])
    sol = solve_weights(P, y, get_loss("squared", "gaussian"))
    assert sol.solver == "active-set" and sol.ridge == 0.0 and sol.merged == ()
    reference = _slsqp(P, y)
    assert sol.objective <= np.mean((y - P @ reference) ** 2) * (1 + 1e-9)
    # the pair shares the first candidate's weight; the others are those without the twin
    single = solve_weights(P[:, :3], y, get_loss("squared", "gaussian"))
    np.testing.assert_allclose(sol.weights[[1, 2]], single.weights[[1, 2]], atol=1e-6)
    assert sol.weights[0] + sol.weights[3] == pytest.approx(single.weights[0], abs=1e-6)


def test_one_outlying_response_is_solved_exactly():
    P, y = _candidates(9, 60, 4)
    y, P = y.copy(), P.copy()
    y[3] = 1e9
    P[3] = 1e9 * np.array([0.3, 0.5, 0.1, 0.05])  # candidates that partly follow the outlier
    sol = solve_weights(P, y, get_loss("squared", "gaussian"))
    reference = _slsqp(P, y)
    assert sol.objective <= np.mean((y - P @ reference) ** 2) * (1 + 1e-9)
    np.testing.assert_allclose(sol.weights, reference, atol=1e-5)


# ---- through pearl.fit ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def three_blocks():
    rng = np.random.default_rng(0)
    n = 60
    blocks = {name: rng.normal(size=(n, 2)) for name in "abc"}
    y = blocks["a"][:, 0] + 0.5 * blocks["b"][:, 1] + rng.normal(size=n)
    return y, blocks


def _fit(y, blocks, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        return pearl.fit(
            "y ~ block(a) + block(b) + block(c)", {"y": y}, blocks=blocks, seed=0, **options
        )


@pytest.mark.parametrize("a, c, atol", [
    (1.0, 1e10, 1e-5),  # once: every candidate looked identical (equal weights)
    (1e-7, 0.0, 1e-9),  # once: shifted weights
    (1e-8, 0.0, 1e-9),  # once: quadprog "matrix G is not positive definite"
    (1e8, 0.0, 1e-9),  # once: quadprog "constraints are inconsistent"
    (1e-70, 0.0, 1e-9),  # at 1e-155 once NaN weights; now refused (its risk SEs underflow)
])
def test_reproduced_unit_and_offset_failures(three_blocks, a, c, atol):
    y, blocks = three_blocks
    base, moved = _fit(y, blocks), _fit(a * y + c, blocks)
    np.testing.assert_allclose(moved.weights.to_numpy(), base.weights.to_numpy(), atol=atol)
    assert moved.weight_objective == pytest.approx(a**2 * base.weight_objective, rel=1e-5)


def test_reproduced_outlier_failure(three_blocks):
    y, blocks = three_blocks
    y = y.copy()
    y[3] = 1e9  # once: quadprog "constraints are inconsistent"
    res = _fit(y, blocks)
    P = res.cv_predictions.to_numpy()
    reference = _slsqp(P, y)
    assert res.weight_objective <= np.mean((y - P @ reference) ** 2) * (1 + 1e-9)
    np.testing.assert_allclose(res.weights.to_numpy(), reference, atol=1e-5)


def test_reproduced_absolute_loss_failure(three_blocks):
    y, blocks = three_blocks
    base, moved = _fit(y, blocks, loss="absolute"), _fit(1e-10 * y, blocks, loss="absolute")
    # once: all weight on the worst candidate
    np.testing.assert_allclose(moved.weights.to_numpy(), base.weights.to_numpy(), atol=1e-9)
    singles = np.abs(moved.cv_predictions.to_numpy() - 1e-10 * y[:, None]).mean(axis=0)
    assert moved.weight_objective <= singles.min()


@st.composite
def fit_problems(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(40, 70))
    blocks = {name: rng.normal(size=(n, draw(st.integers(1, 3)))) for name in "abc"}
    y = sum(rng.normal() * block[:, 0] for block in blocks.values()) + rng.normal(size=n)
    return y, blocks


@FIT_SETTINGS
@given(problem=fit_problems(), ac=affine_maps(1e3))
def test_fit_weights_and_predictions_follow_affine_maps_of_y(problem, ac):
    a, c = ac
    y, blocks = problem
    base, moved = _fit(y, blocks), _fit(a * y + c, blocks)
    np.testing.assert_allclose(moved.weights.to_numpy(), base.weights.to_numpy(), atol=1e-6)
    spread = np.abs(a) * np.abs(base.cv_predictions.to_numpy()).max()
    np.testing.assert_allclose(
        moved.cv_predictions.to_numpy(),
        a * base.cv_predictions.to_numpy() + c,
        rtol=0,
        atol=1e-8 * spread + 1e-14 * abs(c),
    )
