"""Squared-loss weights on degenerate problems: exact fits, ties, constant responses (issue 25).

The references are independent of the package's solver: a brute force over the supports
of the simplex (scipy's least squares on each face's affine hull, minimum-norm) gives the
optimum and, where the optimum is a face, its point of minimum norm (on its support the
minimum-norm optimum is the minimum-norm minimiser of the face's affine hull, so the
smallest-norm feasible face solution among the optimal ones is it).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pearlstats as pearl
from conftest import simplex_minimum
from pearlstats.exceptions import ConvergenceWarning, PearlWarning, ResponseError
from pearlstats.weights import solve_weights, solvers
from pearlstats.weights.losses import check_response_variation, get_loss

SQUARED = get_loss("squared", "gaussian")


def _assert_simplex(w) -> None:
    w = np.asarray(w, dtype=float)
    assert np.isfinite(w).all() and (w >= 0).all(), w
    assert math.fsum(w) == pytest.approx(1.0, abs=len(w) * 2.0**-53)


# ---- independent reference: brute force over the faces ------------------------------------------
def _face_solutions(P: np.ndarray, y: np.ndarray):
    """For every support S: the minimum-norm minimiser of ``||E z||`` on ``{sum z = 1}`` over S."""
    E = y[:, None] - P
    J = P.shape[1]
    for size in range(1, J + 1):
        for S in itertools.combinations(range(J), size):
            S = list(S)
            start = np.full(size, 1.0 / size)
            # an orthonormal basis of {sum = 0} within S (orthogonal to the uniform start)
            N = scipy.linalg.null_space(np.ones((1, size))) if size > 1 else np.zeros((1, 0))
            if size > 1:
                # minimum-norm least squares, singular values below 1e-12 of the response's
                # norm dropped (rounding: differences of that size are ties)
                U, sv, Vt = scipy.linalg.svd(E[:, S] @ N, full_matrices=False)
                keep = sv > 1e-12 * np.linalg.norm(y)
                v = Vt[keep].T @ ((U[:, keep].T @ -(E[:, S] @ start)) / sv[keep])
                z = start + N @ v
            else:
                z = start
            w = np.zeros(J)
            w[S] = z
            yield w, float(np.mean((E @ w) ** 2))


def _reference(P: np.ndarray, y: np.ndarray):
    """``(optimum, minimum-norm optimal weights)`` by brute force (small J only)."""
    feasible = [(w, f) for w, f in _face_solutions(P, y) if w.min() >= -1e-9]
    best = min(f for _, f in feasible)
    optimal = [w for w, f in feasible if f <= best * (1 + 1e-9) + 1e-20 * np.mean(y**2)]
    return best, min(optimal, key=lambda w: float(w @ w))


# ---- the exact fits of the issue, through pearl.fit ----------------------------------------------
def _exact_data(seed: int, n: int = 200):
    rng = np.random.default_rng(seed)
    a, b, x = rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=n)
    return {"y": a[:, 0] + 0.3 * x, "a": a, "b": b, "x": x}


def _fit_exact(data, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # once: invalid value in divide / cast
        warnings.simplefilter("ignore", PearlWarning)
        return pearl.fit("y ~ block(a) + block(b) + x", data, **options)


@pytest.mark.parametrize("options", [
    {"candidates": "single", "seed": 0},  # once: weights -1024
    {"candidates": "single", "seed": 1},
    {"candidates": "single", "seed": 2},
    {"candidates": "single", "seed": 3},
    {"candidates": "all", "seed": 0},  # once: OverflowError from snap_to_simplex
    {"candidates": "single", "cv": "loo", "seed": 0},
    {"candidates": "single", "weight_shrinkage": 0.5, "seed": 0},
], ids=["single-0", "single-1", "single-2", "single-3", "all", "loo", "shrinkage"])
def test_an_exact_fit_gives_simplex_weights_that_reproduce_y(options):
    data = _exact_data(options["seed"])
    res = _fit_exact(data, **options)
    _assert_simplex(res.weights.to_numpy())
    # the exact candidates (a, and a+b when all subsets are candidates) carry the weight;
    # shrinkage moves half of it to the equal-weight target
    exact = [label for label in res.weights.index if "a" in label.split("+")]
    assert res.weights[exact].sum() == pytest.approx(
        0.5 + 0.5 * len(exact) / len(res.weights) if "weight_shrinkage" in options else 1.0,
        abs=1e-12)
    if "weight_shrinkage" not in options:
        prediction = np.asarray(res.predict(data), dtype=float)
        np.testing.assert_allclose(prediction, data["y"], rtol=0, atol=1e-12)
        assert res.kkt_gap <= 1e-10
    with warnings.catch_warnings():
        # the honest table's remark that the exact candidate alone beats a shrunk average
        warnings.simplefilter("ignore", PearlWarning)
        assert "PEARL" in str(res.summary())


def test_tied_exact_candidates_share_the_weight_equally():
    # a and a+b both reproduce y: the minimum-norm optimum splits between them
    res = _fit_exact(_exact_data(0), candidates="all", seed=0)
    assert res.weights["a"] == res.weights["a+b"] == 0.5


def test_an_exact_fit_on_dask_data_gives_the_in_memory_weights():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")
    da = pytest.importorskip("dask.array")
    data = _exact_data(0)
    frame = dd.from_pandas(pd.DataFrame({"y": data["y"], "x": data["x"]}), npartitions=2)
    lengths = tuple(frame.map_partitions(len).compute().tolist())
    blocks = {k: da.from_array(data[k], chunks=(lengths, 3)) for k in "ab"}
    res = _fit_exact(frame, blocks=blocks, candidates="single", seed=0)
    _assert_simplex(np.asarray(res.weights))
    np.testing.assert_array_equal(np.asarray(res.weights), [1.0, 0.0])


# ---- constant responses --------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0.0, 3.0, -1e100, 1e-300])
def test_a_constant_gaussian_response_is_refused(value):
    rng = np.random.default_rng(0)
    data = {"y": np.full(50, value), "a": rng.normal(size=(50, 2)), "b": rng.normal(size=(50, 2))}
    with pytest.raises(ResponseError, match="constant"):
        pearl.fit("y ~ block(a) + block(b)", data, seed=0)
    # the candidates of a fit without offset predict the constant itself: nothing to weigh
    with pytest.raises(ResponseError, match="constant"):
        solve_weights(np.full((50, 3), value), data["y"], SQUARED)


def test_a_constant_response_that_varies_net_of_its_offset_is_fitted():
    # y = 3 with offset 3 - y_real is the model y_real = X b (the mean is X b + offset), so
    # the fit equals that of y_real without an offset: same folds, same least squares
    rng = np.random.default_rng(3)
    n = 60
    a, b, x = rng.normal(size=(n, 3)), rng.normal(size=(n, 2)), rng.normal(size=n)
    y_real = a[:, 0] + x + rng.normal(size=n)
    formula = "y ~ block(a) + block(b) + x"
    shifted = pearl.fit(formula, {"y": np.full(n, 3.0), "a": a, "b": b, "x": x},
                        offset=3.0 - y_real, seed=0, honest=False)
    plain = pearl.fit(formula, {"y": y_real, "a": a, "b": b, "x": x}, seed=0, honest=False)
    # rounding of 3 - y_real and back: a few ulps of |y|, amplified by the well-conditioned
    # (standardised, n = 60) least squares
    np.testing.assert_allclose(shifted.weights.to_numpy(), plain.weights.to_numpy(), atol=1e-9)
    np.testing.assert_allclose(shifted.params.to_numpy(), plain.params.to_numpy(), rtol=1e-9)
    # constant net of the offset: refused, naming the offset
    with pytest.raises(ResponseError, match="net of the offset"):
        pearl.fit(formula, {"y": y_real, "a": a, "b": b, "x": x}, offset=y_real - 1.0, seed=0)


def test_new_rows_with_a_constant_response_can_still_be_evaluated():
    # the refusal is for the rows a fit learns from, not for test rows
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
    res = pearl.fit("y ~ block(a) + block(b)", {"y": a[:, 0] + rng.normal(size=60), "a": a,
                                                "b": b}, seed=0, honest=False)
    test = {"y": np.full(5, 2.0), "a": a[:5], "b": b[:5]}
    table = res.evaluate(test)
    expected = np.mean((2.0 - np.asarray(res.predict(test), dtype=float)) ** 2)
    assert table.loc["PEARL"].iloc[0] == pytest.approx(expected, rel=1e-12)


def test_rounding_level_variation_is_constant_and_more_is_not():
    y = np.full(40, 1.0)
    y[::2] += 8 * np.finfo(float).eps  # 8 ulps of 1: rounding
    with pytest.raises(ResponseError):
        check_response_variation(y)
    check_response_variation(np.full(40, 1.0) + 1e-12 * np.arange(40))


def test_a_nearly_constant_genuine_response_is_fitted():
    rng = np.random.default_rng(1)
    n = 60
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    signal = a[:, 0] + 0.1 * rng.normal(size=n)
    small = pearl.fit("y ~ block(a) + block(b)", {"y": 1.0 + 1e-9 * signal, "a": a, "b": b},
                      seed=0, honest=False)
    plain = pearl.fit("y ~ block(a) + block(b)", {"y": signal, "a": a, "b": b}, seed=0,
                      honest=False)
    # the weights do not depend on the response's units or origin
    np.testing.assert_allclose(small.weights.to_numpy(), plain.weights.to_numpy(), atol=1e-5)


def test_a_constant_outer_training_response_makes_honest_unavailable():
    rng = np.random.default_rng(0)
    n = 60
    y = np.zeros(n)
    y[7] = 1.0  # every outer training set but the one holding row 7 out is all zeros
    data = {"y": y, "a": rng.normal(size=(n, 2)), "b": rng.normal(size=(n, 2))}
    res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
    _assert_simplex(res.weights.to_numpy())
    with pytest.warns(PearlWarning, match="could not run"):
        assert res.honest is None
    assert "constant" in res.honest_failure


# ---- property test over degenerate pools ---------------------------------------------------------
KINDS = ["random", "exact", "duplicate", "collinear", "constant", "mirror"]


@st.composite
def pools(draw):
    """y and 2..6 candidates: noisy ones plus exact, duplicate, collinear, constant and mirrored
    (a pair whose average is y) ones."""
    seed = draw(st.integers(0, 2**16))
    n = draw(st.integers(12, 40))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=2, max_size=6))
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    columns = []
    for kind in kinds:
        if kind == "exact":
            columns.append(y.copy())
        elif kind == "duplicate" and columns:
            columns.append(columns[rng.integers(len(columns))].copy())
        elif kind == "collinear" and len(columns) >= 2:
            i, j = rng.choice(len(columns), 2, replace=False)
            share = rng.uniform(0.2, 0.8)
            columns.append(share * columns[i] + (1 - share) * columns[j])
        elif kind == "constant":
            columns.append(np.full(n, rng.normal()))
        elif kind == "mirror":
            noise = rng.normal(scale=rng.uniform(0.3, 1.5), size=n)
            columns.extend([y + noise, y - noise])
        else:
            columns.append(rng.uniform(0.3, 1.0) * y + rng.normal(scale=rng.uniform(0.3, 1.5),
                                                                  size=n))
    return np.column_stack(columns[:7]), y


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(pool=pools())
def test_degenerate_pools_give_the_certified_minimum_norm_optimum(pool):
    P, y = pool
    sol = solve_weights(P, y, SQUARED)
    _assert_simplex(sol.weights)
    best, minimum_norm = _reference(P, y)
    objective = float(np.mean((y - P @ sol.weights) ** 2))
    assert objective <= best + 1e-10 * (1 + best)
    assert 0 <= sol.kkt_gap <= 1e-10 * (1 + sol.objective)
    assert sol.objective - best <= sol.kkt_gap + 1e-12 * (1 + best)
    np.testing.assert_allclose(sol.weights, minimum_norm, atol=1e-7)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16), n=st.integers(20, 80), J=st.integers(2, 6))
def test_ordinary_problems_agree_with_scipy(seed, n, J):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    P = rng.uniform(0.3, 1.0, size=J) * y[:, None] + rng.normal(
        scale=rng.uniform(0.3, 1.5, size=J), size=(n, J))
    sol = solve_weights(P, y, SQUARED)
    best, reference = _reference(P, y)
    np.testing.assert_allclose(sol.weights, reference, rtol=0, atol=1e-10)
    assert sol.objective == pytest.approx(best, rel=1e-12)
    assert sol.kkt_gap <= 1e-10 * (1 + sol.objective)


def test_a_mix_that_reproduces_y_and_an_exact_candidate_split_by_minimum_norm():
    # the optimal face is {t e_3 + (1 - t)(e_1 + e_2)/2}: its minimum-norm point is a third each
    rng = np.random.default_rng(3)
    y, noise = rng.normal(size=30), rng.normal(size=30)
    P = np.column_stack([y + noise, y - noise, y, y + 2.0])
    sol = solve_weights(P, y, SQUARED)
    np.testing.assert_allclose(sol.weights, [1 / 3, 1 / 3, 1 / 3, 0.0], atol=1e-12)
    assert sol.objective <= 1e-30


def test_column_generation_applies_the_minimum_norm_rule():
    # more candidates than rows: column generation, whose working set first holds only the
    # exact candidate; the tied mirrored pair outside it must still share the optimum
    rng = np.random.default_rng(0)
    n = 30
    y, noise = rng.normal(size=n), rng.normal(size=n)
    others = rng.normal(size=(n, 40)) + y[:, None]
    P = np.column_stack([others[:, :20], y + noise, y - noise, y, others[:, 20:]])
    sol = solve_weights(P, y, SQUARED)
    assert sol.solver == "active-set"
    _assert_simplex(sol.weights)
    expected = np.zeros(P.shape[1])
    expected[20:23] = 1 / 3
    np.testing.assert_allclose(sol.weights, expected, atol=1e-12)
    assert sol.objective <= 1e-28


@pytest.mark.parametrize("name", ["squared", "absolute"])
def test_a_solver_returning_nan_never_reaches_the_caller(name, monkeypatch):
    # a solver bug (NaN weights) becomes the best single candidate with a warning, never NaN
    rng = np.random.default_rng(4)
    y = rng.normal(size=40)
    P = y[:, None] + rng.normal(scale=[0.5, 1.0, 2.0], size=(40, 3))
    loss = get_loss(name, "gaussian")

    def broken(form, *args):
        raise solvers.InvalidWeightsError("NaN from a broken solver")

    monkeypatch.setattr(solvers, "_solve_least_squares" if name == "squared" else "solve_lp",
                        broken)
    with pytest.warns(ConvergenceWarning, match="best single candidate"):
        sol = solve_weights(P, y, loss)
    np.testing.assert_array_equal(sol.weights, [1.0, 0.0, 0.0])
    risks = [float(np.mean(loss.pointwise(y, P[:, j]))) for j in range(3)]
    assert sol.objective == pytest.approx(min(risks), rel=1e-12)
    assert sol.kkt_gap >= 0


@pytest.mark.parametrize("wild", ["constant 1e250", "noise 1e250", "noise 1e-200"])
def test_an_astronomical_candidate_beside_an_exact_fit_changes_nothing(wild):
    # its Gram column is scaled by a power of two; its overflowing gradient never makes it tied
    rng = np.random.default_rng(0)
    n = 50
    y, noise = rng.normal(size=n), rng.normal(size=n)
    extra = {"constant 1e250": np.full(n, 1e250), "noise 1e250": 1e250 * rng.normal(size=n),
             "noise 1e-200": 1e-200 * rng.normal(size=n)}[wild]
    P = np.column_stack([y + noise, y - noise, y, y + rng.normal(size=n), extra])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or division warnings either
        sol = solve_weights(P, y, SQUARED)
    np.testing.assert_allclose(sol.weights, [1 / 3, 1 / 3, 1 / 3, 0, 0], atol=1e-12)
    assert sol.kkt_gap >= 0


# ---- the same degenerate pools under every other loss --------------------------------------------
def _as_family(P: np.ndarray, y: np.ndarray, family: str) -> tuple[np.ndarray, np.ndarray]:
    """The pool's columns mapped into *family*'s range; an exact column stays exact there."""
    exact = np.all(np.isclose(P, y[:, None], rtol=0, atol=1e-14), axis=0)
    if family == "binomial":
        labels = (y > np.median(y)).astype(float)
        probabilities = 1.0 / (1.0 + np.exp(-3.0 * (P - np.median(y))))
        probabilities[:, exact] = labels[:, None]  # certain and right: log-loss 0
        return probabilities, labels
    if family == "poisson":
        counts = np.random.default_rng(0).poisson(np.exp(y)).astype(float)
        means = np.exp(P)
        means[:, exact] = counts[:, None]
        return means, counts
    return P, y


@pytest.mark.parametrize("name, family", [("absolute", "gaussian"), ("cross_entropy", "binomial"),
                                          ("hinge", "binomial"),
                                          ("poisson_deviance", "poisson")])
@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(pool=pools())
def test_degenerate_pools_give_certified_simplex_weights_for_every_loss(name, family, pool):
    P, y = _as_family(*pool, family)
    loss = get_loss(name, family)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sol = solve_weights(P, y, loss)
    _assert_simplex(sol.weights)
    assert 0 <= sol.kkt_gap <= 1e-10 * (1 + sol.objective)
    # an independent minimum (SLSQP from the centre and every vertex) is not below ours
    _, reference = simplex_minimum(lambda w: loss.objective(y, P, np.maximum(w, 0) / w.sum()),
                                   P.shape[1])
    assert sol.objective <= reference + 1e-8 * (1 + reference)
