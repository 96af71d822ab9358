"""The margin hinge (on recovered linear predictors) against linear programmes written here.

``hinge`` reads logits / log probabilities, so it reaches its flat part and can have
interior optima; ``hinge_probability`` (on ``2p - 1``) is linear in the weights and
always picks a vertex.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import expit, softmax

from pearlstats.weights import solve_weights
from pearlstats.weights.losses import LOGIT_LIMIT, get_loss, linear_predictor


def _binomial_hinge_lp(F: np.ndarray, y: np.ndarray):
    """min mean(t) s.t. t_i >= 1 - s_i F_i w, t >= 0, w on the simplex; variables (w, t)."""
    n, J = F.shape
    s = 2 * y - 1
    A_ub = np.hstack([-s[:, None] * F, -np.eye(n)])
    result = linprog(
        np.r_[np.zeros(J), np.full(n, 1 / n)],
        A_ub=A_ub,
        b_ub=-np.ones(n),
        A_eq=np.r_[np.ones(J), np.zeros(n)][None],
        b_eq=[1.0],
        bounds=(0, None),
        method="highs-ds",
    )
    return result.x[:J], result.fun


def test_two_candidate_margin_hinge_has_an_interior_optimum():
    # Each candidate is confidently right on half the rows and wrong on the other half;
    # only their equal mix gets every margin to 1.
    f1 = np.array([3.0, -1.0, -3.0, 1.0])
    f2 = np.array([-1.0, 3.0, 1.0, -3.0])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    F = np.column_stack([f1, f2])
    P = expit(F)
    sol = solve_weights(P, y, get_loss("hinge", "binomial"))
    w_lp, value_lp = _binomial_hinge_lp(F, y)
    np.testing.assert_allclose(sol.weights, [0.5, 0.5], atol=1e-9)
    np.testing.assert_allclose(sol.weights, w_lp, atol=1e-9)
    assert sol.objective == pytest.approx(value_lp, abs=1e-12) and value_lp == pytest.approx(
        0.0, abs=1e-12
    )
    # both vertices are strictly worse: this is not model selection
    vertices = [get_loss("hinge", "binomial").risk(y, P[:, j]) for j in range(2)]
    assert min(vertices) == pytest.approx(1.0)
    # on the same data the probability hinge is linear in w: mixing gains nothing over a vertex
    probability_hinge = get_loss("hinge_probability", "binomial")
    old = solve_weights(P, y, probability_hinge)
    assert old.objective == pytest.approx(
        min(probability_hinge.risk(y, P[:, j]) for j in range(2)), rel=1e-12
    )


@pytest.mark.parametrize("seed", range(5))
def test_binomial_margin_hinge_matches_linprog(seed):
    rng = np.random.default_rng(seed)
    n, J = 80, 5
    signal = rng.normal(size=n)
    y = (signal + rng.logistic(size=n) > 0).astype(float)
    F = rng.uniform(0.5, 3.0, size=J) * signal[:, None] + rng.normal(scale=1.5, size=(n, J))
    sol = solve_weights(expit(F), y, get_loss("hinge", "binomial"))
    _, value = _binomial_hinge_lp(F, y)
    assert sol.objective == pytest.approx(value, rel=1e-8, abs=1e-10)
    assert sol.kkt_gap <= 1e-8
    assert sol.objective - value <= sol.kkt_gap + 1e-10


def test_multinomial_margin_hinge_matches_linprog_on_reference_class_logits():
    rng = np.random.default_rng(3)
    n, J, C = 60, 4, 3
    y = rng.integers(0, C, size=n)
    logits = rng.normal(size=(n, J, C)) + 2.0 * np.eye(C)[y][:, None, :] * rng.uniform(
        0.3, 1.5, size=(1, J, 1)
    )
    P = softmax(logits, axis=2)
    sol = solve_weights(P, y, get_loss("hinge", "multinomial"))
    # reference: Crammer-Singer on log p_c - log p_0 (a different per-row shift than pearlstats'
    # centring)
    F = np.log(P) - np.log(P[..., :1])
    rows, rhs = [], []
    for i in range(n):
        for c in range(C):
            if c != y[i]:
                rows.append(np.r_[F[i, :, c] - F[i, :, y[i]], -np.eye(n)[i]])
                rhs.append(-1.0)
    result = linprog(
        np.r_[np.zeros(J), np.full(n, 1 / n)],
        A_ub=np.array(rows),
        b_ub=rhs,
        A_eq=np.r_[np.ones(J), np.zeros(n)][None],
        b_eq=[1.0],
        bounds=(0, None),
        method="highs-ds",
    )
    assert sol.objective == pytest.approx(result.fun, rel=1e-8)
    assert 0 < sol.weights.max() < 1  # mixing logits helps here


def test_multinomial_hinge_reduces_to_the_binomial_one_for_two_classes():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.01, 0.99, size=30)
    y = (rng.random(30) < 0.5).astype(float)
    binomial = get_loss("hinge", "binomial").pointwise(y, p)
    multinomial = get_loss("hinge", "multinomial").pointwise(
        y.astype(int), np.column_stack([1 - p, p])
    )
    np.testing.assert_allclose(multinomial, binomial, rtol=1e-10)


def test_saturated_probabilities_are_clipped_symmetrically():
    f = linear_predictor(np.array([0.0, 1e-300, 1.0 - 2**-53, 1.0]), False)
    assert np.isfinite(f).all()
    np.testing.assert_allclose(
        f, [-LOGIT_LIMIT, -LOGIT_LIMIT, LOGIT_LIMIT, LOGIT_LIMIT], rtol=1e-12
    )
    loss = get_loss("hinge", "binomial")
    # relabelling the classes (y -> 1 - y, p -> 1 - p) gives the same losses, saturated or not
    p = np.array([0.0, 1.0, 0.3, 1e-300])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(loss.pointwise(y, p), loss.pointwise(1 - y, 1 - p), rtol=1e-12)


def test_combined_prediction_averages_decision_functions():
    P = np.array([[0.9, 0.2], [0.4, 0.7]])
    w = np.array([0.25, 0.75])
    loss = get_loss("hinge", "binomial")
    expected = expit(np.log(P / (1 - P)) @ w)
    np.testing.assert_allclose(loss.combine(P, w), expected, rtol=1e-12)
    y = np.array([1.0, 0.0])
    assert loss.objective(y, P, w) == pytest.approx(loss.risk(y, expected), rel=1e-12)


def test_probability_hinge_is_linear_in_the_weights_and_picks_a_vertex():
    rng = np.random.default_rng(6)
    P = rng.uniform(0.05, 0.95, size=(50, 4))
    y = (rng.random(50) < 0.5).astype(float)
    sol = solve_weights(P, y, get_loss("hinge_probability", "binomial"))
    values = 2 * np.abs(y[:, None] - P).mean(axis=0)
    assert sol.objective == pytest.approx(values.min(), rel=1e-10)
    assert sol.weights[np.argmin(values)] == 1.0
