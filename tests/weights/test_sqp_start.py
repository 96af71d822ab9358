"""The dask weight solve starts from sequential quadratic models (issue 35: passes over dask data).

:class:`~pearlstats.distributed.weights.DistributedBarrierForm` pays a pass over the data for
every point it evaluates. :func:`~pearlstats.distributed.weights.sqp_start` minimises each
pass's quadratic model over the whole simplex without a pass, so the Newton method that
certifies the weights starts near the optimum. Checked here on real data (scikit-learn's
diabetes study, outcome above its median for the binomial, progression / 25 rounded for
the Poisson), with a form whose evaluations are the in-memory form's (no dask needed): the
weights are the in-memory fit's, and they take no more passes than the Newton method alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

sklearn_datasets = pytest.importorskip("sklearn.datasets")

import pearlstats as pearl
import pearlstats.distributed.weights as distributed_weights
from pearlstats.distributed.weights import DistributedBarrierForm, solve_from_form

BLOCKS = "abcde"  # two of the ten baseline variables each: J = 31 candidates


def _problem(family: str):
    X, target = sklearn_datasets.load_diabetes(return_X_y=True)
    if family == "binomial":
        y = (target > np.median(target)).astype(float)
    else:
        y = np.round(target / 25)
    blocks = {name: X[:, 2 * i: 2 * i + 2] for i, name in enumerate(BLOCKS)}
    formula = "y ~ " + " + ".join(f"block({name})" for name in BLOCKS)
    res = pearl.fit(formula, pd.DataFrame({"y": y}), blocks=blocks, family=family, honest=False,
                    seed=0)
    return y, np.asarray(res.cv_predictions), res


def _counted_form(y, P, family):
    """A DistributedBarrierForm whose 'passes' are the in-memory form's evaluations."""
    loss = pearl.get_loss(None, family)
    form = loss.form(y, P)

    def evaluate(w):
        W = form.hessian_factor(w)
        return form.value(w), form.gradient(w), W.T @ W, loss.objective(y, P, w)

    return DistributedBarrierForm(evaluate, form.vertex_values(), y.size), form


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_the_weights_are_the_in_memory_fits_in_no_more_passes(family, monkeypatch):
    y, P, res = _problem(family)
    J = P.shape[1]
    counted, form = _counted_form(y, P, family)
    w, gap, _, _ = solve_from_form(counted, "sqp", np.ones(J, dtype=bool))
    in_memory = res.weights.to_numpy()

    # Both solves are certified: each objective is within its gap of the optimum, so the two
    # objectives are within the sum of the gaps of each other.
    assert gap <= 1e-10 * (1 + form.value(w))
    assert abs(form.value(w) - form.value(in_memory)) <= gap + res.kkt_gap + 1e-15
    # The weights, by strong convexity on the simplex's tangent space (smallest curvature mu
    # there at the optimum): |w - w*| <= sqrt(2 gap / mu) for each; doubled for the Hessian's
    # change over that distance.
    W = form.hessian_factor(in_memory)
    N = np.linalg.qr(np.ones((J, 1)), mode="complete")[0][:, 1:]
    mu = np.linalg.eigvalsh(N.T @ (W.T @ W) @ N)[0]
    assert mu > 0
    bound = 2 * (np.sqrt(2 * gap / mu) + np.sqrt(2 * res.kkt_gap / mu))
    np.testing.assert_allclose(w, in_memory, rtol=0, atol=max(bound, 1e-14))

    # The same exit without the quadratic models: the Newton method from the best vertex.
    monkeypatch.setattr(distributed_weights, "sqp_start", lambda *args: None)
    plain, _ = _counted_form(y, P, family)
    w_plain, _, _, _ = solve_from_form(plain, "sqp", np.ones(J, dtype=bool))
    np.testing.assert_allclose(w_plain, in_memory, rtol=0, atol=max(bound, 1e-14))
    assert counted.passes <= plain.passes
    if family == "binomial":  # five candidates share the weight: faces change along the way
        assert np.count_nonzero(in_memory) >= 4
        assert counted.passes < plain.passes


def test_the_quadratic_model_is_its_own_second_order_expansion():
    """The model's value, gradient and vertex values against direct evaluation."""
    rng = np.random.default_rng(0)
    J = 6
    A = rng.normal(size=(J, J))
    H, g, centre = A.T @ A, rng.normal(size=J), rng.dirichlet(np.ones(J))
    model = distributed_weights._QuadraticModel(centre, 0.7, g, H, 100)
    w = rng.dirichlet(np.ones(J))
    d = w - centre
    assert model.value(w) == pytest.approx(0.7 + g @ d + 0.5 * d @ H @ d, rel=1e-14)
    np.testing.assert_allclose(model.gradient(w), g + H @ d, rtol=1e-13)
    vertices = [model.value(np.eye(J)[j]) for j in range(J)]
    np.testing.assert_allclose(model.vertex_values(), vertices, rtol=1e-13)
    R = model.hessian_factor(w)
    np.testing.assert_allclose(R.T @ R, H, rtol=1e-10, atol=1e-12 * np.abs(H).max())
