"""The cross-entropy and Poisson weight solves and checks hold no (n, J) temporaries beside
their matrix (issue 27): each helper equals the all-at-once computation it replaces, bit for
bit where the operations are the same, and to rounding where the order of a sum changes.
"""

from __future__ import annotations

import numpy as np
import pytest

from pearlstats.weights import convex, log_barrier, losses
from pearlstats.weights.losses import EPS, get_loss, observed_probability


def _form(n: int = 3000, J: int = 31, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) > 0.4).astype(float)
    P = rng.uniform(0.02, 0.98, size=(n, J))
    P[:5, 3] = 0.0  # floored at EPS for the rows with y = 1
    return y, P, get_loss("cross_entropy", "binomial").form(y, P)


def test_observed_probability_in_place_equals_where_and_leaves_p_alone():
    y, P, form = _form()
    before = P.copy()
    got = observed_probability(y, P, False)
    assert got.tobytes() == np.where(y[:, None] == 1, P, 1.0 - P).tobytes()
    assert P.tobytes() == before.tobytes()
    assert form.A.tobytes() == np.maximum(np.where(y[:, None] == 1, P, 1.0 - P), EPS).tobytes()
    assert not np.shares_memory(form.A, P)


@pytest.mark.parametrize("used", [[4], [0, 7, 30], list(range(0, 31, 3))])
def test_times_by_row_chunks_equals_the_product_of_the_columns(used, monkeypatch):
    y, P, form = _form(n=20_011)
    w = np.zeros(31)
    w[used] = np.linspace(1.0, 2.0, len(used)) / len(used)
    want = form.A[:, used] @ w[used]
    for rows in (1024, log_barrier._TIMES_ROWS, 30_000):
        monkeypatch.setattr(log_barrier, "_TIMES_ROWS", rows)
        assert log_barrier._times(form.A, w).tobytes() == want.tobytes()
    np.testing.assert_allclose(want, (form.A * w).sum(axis=1), rtol=1e-14)


def test_hessian_factor_of_some_columns_equals_those_columns_of_the_full_factor():
    y, P, form = _form()
    w = np.full(31, 1 / 31)
    A = form.A.copy()
    face = np.array([2, 5, 30])
    want = form.hessian_factor(w)[:, face]
    got = form.hessian_factor(w, face)
    assert got.tobytes() == want.tobytes() and got.flags.f_contiguous == want.flags.f_contiguous
    assert form.A.tobytes() == A.tobytes()  # a copy was scaled, not the form's matrix
    np.testing.assert_allclose(got.T @ got, form.hessian(w)[np.ix_(face, face)], rtol=1e-12)


def _face_step_before(W, g):
    """The face step as it was computed with (n, |face|) temporaries (before issue 27)."""
    top = np.abs(W).max(axis=0)
    V = W / np.where(top > 0, top, 1.0)
    norms = np.sqrt(np.einsum("ij,ij->j", V, V))
    V = V / np.where(norms > 0, norms, 1.0)
    d = top * norms
    d = np.where(d > 0, d, d.max() if d.max() > 0 else 1.0)
    a = d.min() / d
    N = np.linalg.qr(a[:, None], mode="complete")[0][:, 1:]
    M = N.T @ (V.T @ V) @ N
    b = N.T @ (g / d)
    values, vectors = np.linalg.eigh((M + M.T) / 2)
    floor = convex._FLOOR * max(float(values[-1]), np.finfo(float).tiny)
    u = -vectors @ ((vectors.T @ b) / np.maximum(values, 0.0 + floor))
    return (N @ u) / d


def test_face_step_scaling_in_place_equals_the_step_with_temporaries():
    y, P, form = _form()
    w = np.zeros(31)
    w[[1, 4, 9]] = [0.5, 0.3, 0.2]
    face = np.array([1, 4, 9, 12])
    g = form.gradient(w)[face]
    W = form.hessian_factor(w, face)
    H = W.T @ W
    step = convex._face_step(W.copy(order="K"), g)
    assert step.tobytes() == _face_step_before(W.copy(order="K"), g).tobytes()
    # the Newton step on {sum s = 0}: H s + g is constant (the multiplier), s sums to 0
    np.testing.assert_allclose(H @ step + g, np.mean(H @ step + g), rtol=1e-8)
    assert abs(step.sum()) < 1e-12 * np.abs(step).max()
    W[:, 2] *= -1e-200  # negative and tiny entries: the scale is max |W_ij| either way
    want = _face_step_before(W.copy(order="K"), g)
    assert convex._face_step(W, g).tobytes() == want.tobytes()


def test_vertex_values_over_row_blocks_equal_each_vertex_objective(monkeypatch):
    y, P, form = _form(n=4000)
    whole = form.vertex_values()
    monkeypatch.setattr(log_barrier, "_LOG_BYTES", 8 * 31 * 100)  # 96 rows at a time
    blocks = form.vertex_values()
    np.testing.assert_allclose(blocks, whole, rtol=1e-13)
    np.testing.assert_allclose(blocks, [form.value(e) for e in np.eye(31)], rtol=1e-12)
    direct = -np.log(form.A).mean(axis=0)
    np.testing.assert_allclose(blocks, direct, rtol=1e-12)


@pytest.mark.parametrize("bad, error", [(np.nan, "NaN values at"), (np.inf, "infinite values"),
                                        (1.5, "must lie in"), (-0.1, "must lie in")])
def test_range_checks_over_row_blocks_find_a_bad_value_in_any_block(bad, error, monkeypatch):
    monkeypatch.setattr(losses, "_CHECK_ROWS", 64)
    y, P, _ = _form(n=1000)
    loss = get_loss("cross_entropy", "binomial")
    loss.check(y, P, candidates=True, labels=np.arange(31), allow_nan=False)  # all fine
    P[977, 12] = bad  # in the last block of rows
    with pytest.raises(Exception, match=error) as caught:
        loss.check(y, P, candidates=True, labels=np.arange(31), allow_nan=False)
    assert "977" in str(caught.value)  # the row is named, as from the all-rows mask


def test_poisson_form_floors_the_counted_rows_in_a_single_copy():
    rng = np.random.default_rng(5)
    y = rng.poisson(1.0, size=2000).astype(float)
    P = rng.gamma(2.0, 0.5, size=(2000, 7))
    P[np.flatnonzero(y > 0)[:3], 2] = 0.0  # floored at EPS
    before = P.copy()
    form = get_loss("poisson_deviance", "poisson").form(y, P)
    assert form.A.tobytes() == np.maximum(P[y > 0], EPS).tobytes()
    assert P.tobytes() == before.tobytes() and not np.shares_memory(form.A, P)
    # the objective at a vertex is the mean Poisson deviance of that candidate
    deviance = 2 * (np.where(y > 0, y * np.log(np.where(y > 0, y, 1) / np.maximum(P[:, 2], EPS)),
                             0.0) - (y - P[:, 2]))
    np.testing.assert_allclose(form.value(np.eye(7)[2]), deviance.mean(), rtol=1e-12)
