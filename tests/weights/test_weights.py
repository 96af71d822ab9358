"""Simplex weight solvers against independent solvers on realistic candidate pools.

Candidates are cross-validated scikit-learn fits on column subsets of real
data sets (diabetes for regression, breast cancer for binary, wine for three
classes) or, for counts, of a simulated Poisson regression. References:
scipy's SLSQP from several starts for the smooth losses, a differently written
HiGHS linear programme (or a closed form) for the piecewise-linear ones, plain
quadprog for the large-J column generation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import quadprog
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize
from scipy.special import logit
from sklearn import metrics
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.linear_model import LinearRegression, LogisticRegression, PoissonRegressor
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_predict
from sklearn.preprocessing import StandardScaler

from conftest import simplex_minimum
from pearlstats.exceptions import (
    AllCandidatesFailedError,
    ConvergenceWarning,
    DataError,
    MissingValueError,
    OptionError,
)
from pearlstats.weights import solve_weights, solvers
from pearlstats.weights.losses import get_loss


def _subsets(p: int, sizes, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(p, size, replace=False)) for size in sizes]


@pytest.fixture(scope="module")
def regression():
    X, y = load_diabetes(return_X_y=True)
    folds = KFold(5, shuffle=True, random_state=0)
    subsets = [np.arange(k) for k in (1, 3, 6, 10)] + _subsets(10, (2, 3, 4, 5, 7, 2), seed=1)
    P = np.column_stack(
        [cross_val_predict(LinearRegression(), X[:, s], y, cv=folds) for s in subsets]
    )
    return P, y


def _logistic_out_of_fold(load, sizes, seed):
    """Out-of-fold class probabilities (n, J, C) of scikit-learn logistic fits on column subsets."""
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    model = LogisticRegression(C=0.5, max_iter=5000)
    subsets = _subsets(X.shape[1], sizes, seed=seed)
    P = np.stack(
        [cross_val_predict(model, X[:, s], y, cv=folds, method="predict_proba") for s in subsets],
        axis=1,
    )
    return P, y


@pytest.fixture(scope="module")
def binary():
    P, y = _logistic_out_of_fold(load_breast_cancer, (1, 2, 3, 4, 5, 6, 8, 10, 2, 3), seed=2)
    return P[:, :, 1], y.astype(float)


@pytest.fixture(scope="module")
def multiclass():
    return _logistic_out_of_fold(load_wine, (1, 2, 2, 3, 4, 5, 1, 2), seed=3)


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 6))
    y = rng.poisson(np.exp(0.3 + X @ np.array([0.5, -0.3, 0.2, 0.0, 0.1, 0.4]))).astype(float)
    folds = KFold(5, shuffle=True, random_state=0)
    subsets = [[0], [0, 1], [0, 1, 2], [3, 4], [0, 5], [1, 2, 5], list(range(6))]
    model = PoissonRegressor(alpha=1e-4, solver="newton-cholesky")
    return np.column_stack([cross_val_predict(model, X[:, s], y, cv=folds) for s in subsets]), y


DATA = {
    "gaussian": "regression",
    "binomial": "binary",
    "multinomial": "multiclass",
    "poisson": "counts",
}


# ---- independent references ---------------------------------------------------------------------
def _average(P, w):
    return np.tensordot(P, w, axes=([1], [0]))


def _decision(P, family):
    """Linear predictors behind stored probabilities: logit, or log p_c - log p_0 (reference class
    0)."""
    limit = 53 * np.log(2.0)
    if family == "multinomial":
        logp = np.maximum(np.log(P), -limit)
        return logp - logp[..., :1]
    return np.clip(logit(P), -limit, limit)


def _hinge_of_decision(family, y, f) -> float:
    if family == "multinomial":
        return metrics.hinge_loss(y, f, labels=list(range(f.shape[1])))
    return metrics.hinge_loss(2 * y - 1, f)


def _mean_loss(name, family, y, P, w) -> float:
    """The mean loss of the weighted candidates: the margin hinge averages decision functions."""
    if name == "hinge":
        return _hinge_of_decision(family, y, _average(_decision(P, family), w))
    return _metric(name, family, y, _average(P, w))


def _metric(name, family, y, pred) -> float:
    """The mean loss, from scikit-learn's metrics."""
    if name == "squared":
        if family == "multinomial":  # the mean over classes: the multi-class Brier score / C
            C = pred.shape[1]
            return metrics.brier_score_loss(y, pred, labels=list(range(C)), scale_by_half=False) / C
        return metrics.mean_squared_error(y, pred)
    if name == "cross_entropy":
        labels = list(range(pred.shape[1])) if family == "multinomial" else None
        return metrics.log_loss(y, pred, labels=labels)
    if name == "poisson_deviance":
        return metrics.mean_poisson_deviance(y, pred)
    if name == "absolute":
        return metrics.mean_absolute_error(y, pred)
    if name == "hinge":
        return _hinge_of_decision(family, y, _decision(pred, family))
    if family == "multinomial":
        return metrics.hinge_loss(y, pred, labels=list(range(pred.shape[1])))
    return metrics.hinge_loss(2 * y - 1, 2 * pred - 1)


def _gradient(name, family, y, P, w) -> np.ndarray:
    """Gradient of the mean loss in w, by the chain rule through the averaged prediction."""
    n = len(y)
    pred = _average(P, w)
    if name == "squared":
        if family == "multinomial":
            C = P.shape[2]
            return -2.0 / (n * C) * np.einsum("ijc,ic->j", P, np.eye(C)[y] - pred)
        return -2.0 / n * P.T @ (y - pred)
    if name == "cross_entropy":
        A = (
            P[np.arange(n), :, y]
            if family == "multinomial"
            else np.where(y[:, None] == 1, P, 1 - P)
        )
        return -A.T @ (1.0 / (A @ w)) / n
    return 2.0 / n * P.T @ (1.0 - y / pred)


def _value(name, family, y, P, w) -> float:
    """The mean loss written out for the optimiser, which may step slightly outside the simplex."""
    n = len(y)
    pred = _average(P, w)
    if name == "squared":
        target = np.eye(P.shape[2])[y] if family == "multinomial" else y
        return float(np.mean((target - pred) ** 2))
    if name == "cross_entropy":
        A = (
            P[np.arange(n), :, y]
            if family == "multinomial"
            else np.where(y[:, None] == 1, P, 1 - P)
        )
        return float(-np.mean(np.log(np.maximum(A @ w, 1e-300))))
    mu = np.maximum(pred, 1e-300)
    return float(2 * np.mean(np.where(y > 0, y * np.log(np.where(y > 0, y, 1) / mu), 0) - (y - mu)))


def _slsqp_minimum(name, family, y, P, starts=4, seed=0) -> float:
    J = P.shape[1]
    rng = np.random.default_rng(seed)
    best = np.inf
    for start in [np.full(J, 1.0 / J)] + [rng.dirichlet(np.ones(J)) for _ in range(starts - 1)]:
        result = minimize(
            lambda w: _value(name, family, y, P, w),
            start,
            jac=lambda w: _gradient(name, family, y, P, w),
            method="SLSQP",
            bounds=[(0.0, 1.0)] * J,
            constraints=[
                {"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones_like(w)}
            ],
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        w = np.clip(result.x, 0.0, None)
        best = min(best, _metric(name, family, y, _average(P, w / w.sum())))
    return best


def _lp_minimum(name, family, y, P) -> float:
    """Hinge/absolute optimum, formulated independently of pearlstats' piece representation."""
    n, J = P.shape[:2]
    if name == "absolute":  # y - P w = u - v with u, v >= 0; minimise mean(u + v)
        A_eq = np.block([[P, np.eye(n), -np.eye(n)], [np.ones((1, J)), np.zeros((1, 2 * n))]])
        cost = np.r_[np.zeros(J), np.full(2 * n, 1.0 / n)]
        result = linprog(cost, A_eq=A_eq, b_eq=np.r_[y, 1.0], bounds=(0, None), method="highs-ipm")
        return result.fun
    if (
        name == "hinge_probability" and family == "binomial"
    ):  # 2|y - p| is linear in w: a vertex wins
        return min(_metric(name, family, y, P[:, j]) for j in range(J))
    if name == "hinge":
        P = _decision(P, family)
    if family == "binomial":  # t_i >= 1 - s_i f_i w, t_i >= 0
        s = 2 * y - 1
        A_ub = np.hstack([-s[:, None] * P, -np.eye(n)])
        cost = np.r_[np.zeros(J), np.full(n, 1.0 / n)]
        A_eq = np.r_[np.ones(J), np.zeros(n)][None, :]
        result = linprog(cost, A_ub=A_ub, b_ub=-np.ones(n), A_eq=A_eq, b_eq=[1.0], bounds=(0, None),
                         method="highs-ipm")
        return result.fun
    rows, rhs = [], []
    for i in range(n):  # t_i >= 1 + (p_ic - p_iy) w for every rival class c; t_i >= 0 via bounds
        for c in range(P.shape[2]):
            if c != y[i]:
                slack = np.zeros(n)
                slack[i] = -1.0
                rows.append(np.r_[P[i, :, c] - P[i, :, y[i]], slack])
                rhs.append(-1.0)
    cost = np.r_[np.zeros(J), np.full(n, 1.0 / n)]
    A_eq = np.r_[np.ones(J), np.zeros(n)][None, :]
    result = linprog(
        cost,
        A_ub=np.array(rows),
        b_ub=rhs,
        A_eq=A_eq,
        b_eq=[1.0],
        bounds=(0, None),
        method="highs-ipm",
    )
    return result.fun


def _assert_on_simplex(w, J):
    assert w.shape == (J,) and w.dtype == np.float64
    assert (w >= 0).all() and not np.signbit(w).any()
    assert w.sum() == 1.0 and math.fsum(w) == 1.0
    # no solver residue: a weight is exactly 0 or more than ZERO_WEIGHT_RTOL of the largest
    assert not ((w > 0) & (w <= solvers.ZERO_WEIGHT_RTOL * w.max())).any()


CASES = [
    ("squared", "gaussian"), ("absolute", "gaussian"),
    ("cross_entropy", "binomial"), ("squared", "binomial"), ("hinge", "binomial"),
    ("hinge_probability", "binomial"),
    ("cross_entropy", "multinomial"), ("squared", "multinomial"), ("hinge", "multinomial"),
    ("hinge_probability", "multinomial"),
    ("poisson_deviance", "poisson"), ("squared", "poisson"), ("absolute", "poisson"),
]


@pytest.mark.parametrize("name, family", CASES)
def test_optimum_matches_independent_solver(name, family, request):
    P, y = request.getfixturevalue(DATA[family])
    loss = get_loss(name, family)
    sol = solve_weights(P, y, loss)
    _assert_on_simplex(sol.weights, P.shape[1])
    objective = _mean_loss(name, family, y, P, sol.weights)
    assert sol.objective == pytest.approx(objective, rel=1e-10)
    reference = (
        _lp_minimum(name, family, y, P)
        if loss.solver == "lp"
        else _slsqp_minimum(name, family, y, P)
    )
    assert sol.objective == pytest.approx(reference, rel=1e-7)
    # the gap certifies the distance to the optimum
    assert 0.0 <= sol.kkt_gap <= 1e-8 * max(sol.objective, 1.0)
    assert sol.objective - reference <= sol.kkt_gap + 1e-9 * reference
    # every vertex is feasible, so no single candidate does better
    singles = [_metric(name, family, y, P[:, j]) for j in range(P.shape[1])]
    assert sol.objective <= min(singles) * (1 + 1e-12)
    expected = {"qp": "quadprog", "convex": "newton", "lp": "highs"}[loss.solver]
    assert sol.solver == expected and sol.merged == ()


@pytest.mark.parametrize("name, family", [c for c in CASES if get_loss(*c).solver != "lp"])
def test_kkt_conditions_hold(name, family, request):
    P, y = request.getfixturevalue(DATA[family])
    w = solve_weights(P, y, get_loss(name, family)).weights
    g = _gradient(name, family, y, P, w)
    support = w > 1e-6
    scale = np.abs(g).max()
    # equal gradient on the support, no smaller anywhere else
    assert np.ptp(g[support]) <= 1e-6 * scale
    assert g.min() >= g[support].max() - 1e-6 * scale


# ---- structure of the solution -------------------------------------------------------------------
def _nested_ols_pool(n: int, n_blocks: int, seed: int):
    """Out-of-fold OLS predictions of every non-empty subset of random two-column blocks."""
    rng = np.random.default_rng(seed)
    blocks = [rng.standard_normal((n, 2)) for _ in range(n_blocks)]
    X = np.hstack(blocks)
    y = X @ rng.normal(scale=0.5, size=X.shape[1]) + np.sin(X[:, 0]) ** 2 + rng.standard_normal(n)
    folds = np.arange(n) % 5
    columns = []
    for size in range(1, n_blocks + 1):
        for subset in itertools.combinations(range(n_blocks), size):
            Z = np.hstack([np.ones((n, 1))] + [blocks[b] for b in subset])
            p = np.empty(n)
            for k in range(5):
                train = folds != k
                p[~train] = Z[~train] @ np.linalg.lstsq(Z[train], y[train], rcond=None)[0]
            columns.append(p)
    return np.column_stack(columns), y


def test_quadprog_residue_becomes_exact_zero_and_the_optimum_is_kept(monkeypatch):
    # The demo's case: 31 nested candidates on 400 rows, where quadprog leaves weights of
    # 1e-13 to 3e-13 on candidates that its own gradient shows inactive.
    P, y = _nested_ols_pool(400, 5, seed=42)
    J = P.shape[1]
    loss = get_loss("squared", "gaussian")
    with monkeypatch.context() as patch:
        patch.setattr(solvers, "ZERO_WEIGHT_RTOL", 0.0)  # keep every positive entry
        raw = solve_weights(P, y, loss)
    residue = (raw.weights > 0) & (raw.weights < 1e-10)
    assert raw.solver == "quadprog" and residue.any()

    sol = solve_weights(P, y, loss)
    assert sol.solver == "quadprog"
    _assert_on_simplex(sol.weights, J)
    np.testing.assert_array_equal(sol.weights == 0, (raw.weights == 0) | residue)
    gradient = 2.0 / len(y) * P.T @ (P @ sol.weights - y)
    assert (gradient[residue] > gradient @ sol.weights).all()  # they were inactive

    def mse(w):
        return float(np.mean((y - P @ w) ** 2))

    _, best = simplex_minimum(mse, J, jac=lambda w: 2.0 / len(y) * P.T @ (P @ w - y))
    assert sol.objective == pytest.approx(mse(sol.weights), rel=1e-13)
    assert abs(sol.objective - best) <= 1e-12
    # the certified gap is that of the returned weights
    gap = gradient @ sol.weights - gradient.min()
    assert sol.kkt_gap == pytest.approx(gap, rel=1e-6, abs=1e-15)
    assert sol.objective - best <= sol.kkt_gap + 1e-15


def test_snapping_keeps_merged_duplicates_equal_and_permutations_permuted():
    w = np.array([0.25, 0.25, 0.25, 0.25 + 3e-13, 2e-13])
    snapped = solvers.snap_to_simplex(w)
    assert snapped[4] == 0.0 and math.fsum(snapped) == 1.0
    perm = np.array([3, 0, 4, 2, 1])
    np.testing.assert_array_equal(solvers.snap_to_simplex(w[perm]), snapped[perm])
    # only tied weights: the shares stay equal (a sum of three thirds cannot be exactly 1)
    thirds = solvers.snap_to_simplex(np.array([1.0, 1.0, 0.0, 1.0]))
    assert thirds[0] == thirds[1] == thirds[3] and thirds[2] == 0.0
    assert abs(thirds.sum() - 1.0) <= 4 * 2.0**-53


def test_inactive_candidates_get_zero_and_the_rest_is_optimal(regression):
    P, y = regression
    full = solve_weights(P, y, get_loss("squared", "gaussian")).weights
    out = int(np.argmax(full))
    P_failed = P.copy()
    P_failed[:, out] = np.nan
    active = np.ones(P.shape[1], dtype=bool)
    active[out] = False
    sol = solve_weights(P_failed, y, get_loss("squared", "gaussian"), active=active)
    _assert_on_simplex(sol.weights, P.shape[1])
    assert sol.weights[out] == 0.0
    reference = _slsqp_minimum("squared", "gaussian", y, np.delete(P, out, axis=1))
    assert sol.objective == pytest.approx(reference, rel=1e-7)


@pytest.mark.parametrize(
    "name, family",
    [("squared", "gaussian"), ("cross_entropy", "multinomial"), ("absolute", "gaussian")],
)
def test_duplicates_are_merged_and_share_weight_equally(name, family, request):
    P, y = request.getfixturevalue(DATA[family])
    loss = get_loss(name, family)
    base = solve_weights(P, y, loss)
    top = int(np.argmax(base.weights))
    order = [top, 0, 1, top, 2, top] + list(range(3, P.shape[1]))
    order = [j for k, j in enumerate(order) if j not in order[:k] or j == top]
    P_dup = P[:, order]
    sol = solve_weights(P_dup, y, loss)
    copies = [k for k, j in enumerate(order) if j == top]
    assert sol.merged == (tuple(copies),)
    assert np.ptp(sol.weights[copies]) == 0.0
    assert sol.weights[copies].sum() == pytest.approx(base.weights[top], abs=1e-7)
    assert sol.objective == pytest.approx(base.objective, rel=1e-10)


def test_negative_zero_duplicates_are_merged():
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    first = np.array([0.0, 1.2, 1.7, 3.1, 4.4])
    second = first.copy()
    second[0] = -0.0
    P = np.column_stack([first, y[::-1], second])
    sol = solve_weights(P, y, get_loss("squared", "gaussian"))
    assert sol.merged == ((0, 2),)
    _assert_on_simplex(sol.weights, 3)


@pytest.mark.parametrize(
    "name, family",
    [("squared", "gaussian"), ("cross_entropy", "binomial"), ("poisson_deviance", "poisson")],
)
def test_candidate_equal_to_y_gets_weight_one(name, family, request):
    P, y = request.getfixturevalue(DATA[family])
    P = np.column_stack([P[:, :3], y, P[:, 3:]])
    sol = solve_weights(P, y, get_loss(name, family))
    expected = np.zeros(P.shape[1])
    expected[3] = 1.0
    np.testing.assert_array_equal(sol.weights, expected)
    assert sol.objective == pytest.approx(0.0, abs=1e-12)


def _small_problem(kind: str, seed: int, n: int, J: int):
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        y = rng.normal(size=n)
        return (
            y[:, None] + rng.normal(size=(n, J)) * rng.uniform(0.3, 2.0, size=J),
            y,
            get_loss("squared", kind),
        )
    y = (rng.random(n) < 0.5).astype(float)
    return rng.uniform(0.05, 0.95, size=(n, J)), y, get_loss("cross_entropy", kind)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["gaussian", "binomial"]),
    seed=st.integers(0, 10_000),
    n=st.integers(15, 40),
    J=st.integers(2, 6),
    duplicate=st.booleans(),
    data=st.data(),
)
def test_permuting_candidates_permutes_weights(kind, seed, n, J, duplicate, data):
    P, y, loss = _small_problem(kind, seed, n, J)
    if duplicate:
        P = np.column_stack([P, P[:, 0]])
    perm = np.array(data.draw(st.permutations(range(P.shape[1]))))
    w = solve_weights(P, y, loss).weights
    w_perm = solve_weights(P[:, perm], y, loss).weights
    np.testing.assert_allclose(w_perm, w[perm], atol=1e-7)
    if duplicate:
        assert w[0] == w[-1]


# ---- many candidates -----------------------------------------------------------------------------
def test_column_generation_matches_plain_quadprog():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:50], y[:50]
    subsets = [s for s in _subsets(10, np.random.default_rng(5).integers(1, 9, size=400), seed=6)]
    unique = list({tuple(s): s for s in subsets}.values())[:200]
    folds = KFold(5, shuffle=True, random_state=0)
    P = np.column_stack(
        [cross_val_predict(LinearRegression(), X[:, s], y, cv=folds) for s in unique]
    )
    n, J = P.shape
    assert (n, J) == (50, 200)
    sol = solve_weights(P, y, get_loss("squared", "gaussian"))
    assert sol.solver == "active-set"
    _assert_on_simplex(sol.weights, J)
    # plain quadprog on the raw J x J problem; J > n makes P'P singular, hence the tiny ridge
    G = P.T @ P / n
    G += 1e-9 * np.trace(G) / J * np.eye(J)
    w = quadprog.solve_qp(
        G, P.T @ y / n, np.column_stack([np.ones(J), np.eye(J)]), np.r_[1.0, np.zeros(J)], meq=1
    )[0]
    w = np.clip(w, 0.0, None) / np.clip(w, 0.0, None).sum()
    assert sol.objective == pytest.approx(metrics.mean_squared_error(y, P @ w), rel=1e-7)


def test_column_generation_for_cross_entropy_matches_em(binary):
    P, y = binary
    rows = np.r_[np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 1)[:20]]
    rng = np.random.default_rng(7)
    # 80 candidates on 40 rows: the logistic fits with noise in logit space
    logits = np.log(P[rows] / (1 - P[rows]))
    mixed = logits[:, rng.integers(0, P.shape[1], size=80)] + rng.normal(scale=0.5, size=(40, 80))
    P_many, y_many = 1 / (1 + np.exp(-mixed)), y[rows]
    sol = solve_weights(P_many, y_many, get_loss("cross_entropy", "binomial"))
    assert sol.solver == "newton"
    _assert_on_simplex(sol.weights, 80)
    # -mean log(A w) is a mixture-proportion likelihood: EM's multiplicative update is a monotone
    # reference
    A = np.where(y_many[:, None] == 1, P_many, 1 - P_many)
    w = np.full(80, 1 / 80)
    for _ in range(20_000):
        w = w * (A.T @ (1 / (A @ w))) / len(A)
    reference = metrics.log_loss(y_many, P_many @ w)
    assert sol.objective == pytest.approx(reference, rel=1e-7)
    assert sol.objective - reference <= sol.kkt_gap + 1e-12
    assert sol.kkt_gap <= 1e-9


# ---- bad input -----------------------------------------------------------------------------------
def test_shape_mismatch_names_both_shapes():
    with pytest.raises(DataError, match=r"shape \(10, 3\) and y of shape \(9,\)"):
        solve_weights(np.zeros((10, 3)), np.zeros(9), get_loss(None, "gaussian"))
    with pytest.raises(DataError, match=r"\(n, J, C\).*shape \(10, 3\)"):
        solve_weights(np.full((10, 3), 0.5), np.zeros(10, dtype=int), get_loss(None, "multinomial"))


def test_nan_in_an_active_candidate_names_the_column(regression):
    P, y = regression
    P = P.copy()
    P[[4, 9], 2] = np.nan
    with pytest.raises(
        MissingValueError,
        match=r"NaN values at candidate column 2 \(column 2: rows 4, 9\).*active=",
    ):
        solve_weights(P, y, get_loss(None, "gaussian"))


def test_negative_poisson_mean_names_the_column(counts):
    P, y = counts
    P = P.copy()
    P[11, 1] = -0.3
    with pytest.raises(
        DataError, match=r">= 0; violated at candidate column 1 \(column 1: row 11\)"
    ):
        solve_weights(P, y, get_loss(None, "poisson"))
    active = np.ones(P.shape[1], dtype=bool)
    active[1] = False  # an inactive column is not inspected
    assert solve_weights(P, y, get_loss(None, "poisson"), active=active).weights[1] == 0.0


def test_no_active_candidate_raises():
    with pytest.raises(AllCandidatesFailedError, match="all 3"):
        solve_weights(
            np.full((5, 3), np.nan),
            np.zeros(5),
            get_loss(None, "gaussian"),
            active=np.zeros(3, dtype=bool),
        )


@pytest.mark.parametrize(
    "kwargs, fragment",
    [({"active": [True, False]}, r"shape \(3,\)"), ({"active": np.ones(3)}, "boolean mask"),
     ({"tol": 0.0}, "tol=0.0"), ({"max_iter": 0}, "max_iter=0")],
)
def test_bad_options(kwargs, fragment):
    with pytest.raises(OptionError, match=fragment):
        solve_weights(np.ones((5, 3)), np.ones(5), get_loss(None, "gaussian"), **kwargs)
    with pytest.raises(OptionError, match="get_loss"):
        solve_weights(np.ones((5, 3)), np.ones(5), "squared")


def test_lp_failure_falls_back_to_best_candidate(regression, monkeypatch):
    P, y = regression

    class Failed:
        status, message = 4, "numerical difficulties"

    monkeypatch.setattr("pearlstats.weights.linear.linprog", lambda *args, **kwargs: Failed())
    with pytest.warns(ConvergenceWarning) as caught:
        sol = solve_weights(P, y, get_loss("absolute", "gaussian"))
    messages = [str(w.message) for w in caught]
    assert any("numerical difficulties" in m for m in messages)  # HiGHS' reason
    assert any("certified gap inf" in m for m in messages)  # and the uncertified solve
    best = int(np.argmin([metrics.mean_absolute_error(y, P[:, j]) for j in range(P.shape[1])]))
    assert sol.weights[best] == 1.0 and sol.kkt_gap == np.inf


# ---- one MSE -------------------------------------------------------------------------------------
def test_multinomial_squared_weights_equal_those_of_the_summed_brier_score(multiclass):
    """Averaging over classes divides the objective by C and leaves the argmin where it was."""
    P, y = multiclass
    n, J, C = P.shape
    sol = solve_weights(P, y, get_loss("squared", "multinomial"))
    # the old per-row value summed over classes: min sum_i sum_c (1[y=c] - P_icj w_j)^2 / n, by
    # quadprog
    E = (np.eye(C)[y][:, None, :] - P).transpose(0, 2, 1).reshape(n * C, J)
    G = 2 * E.T @ E / n
    old = quadprog.solve_qp(
        G, np.zeros(J), np.column_stack([np.ones(J), np.eye(J)]), np.r_[1.0, np.zeros(J)], meq=1
    )[0]
    np.testing.assert_allclose(sol.weights, np.clip(old, 0, None), atol=1e-7)
    summed = np.sum((np.eye(C)[y] - _average(P, sol.weights)) ** 2) / n
    assert sol.objective == pytest.approx(summed / C, rel=1e-12)
