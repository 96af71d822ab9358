"""Every weight solve of a fit is certified and recorded: the fit, each honest outer fold, each
refitting-bootstrap re-run and each fold complement.

The binomial fit is the quickstart's (vignettes/01_quickstart.py in quick mode: five learned
blocks, ``high ~``, 31 candidates), whose honest risk once came from an outer fold whose weight
solver stopped 0.11 nats from its optimum (0.22 with the full-size data).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit

import pearlstats as pearl
from pearlstats.exceptions import ConvergenceWarning
from pearlstats.weights import solve_weights, solvers
from pearlstats.weights.certificate import gap_target, is_certified
from pearlstats.weights.losses import get_loss

FORMULA = ("high ~ block(pca) + block(kpca_rbf) + block(kpca_poly) + block(kpca_sigmoid) "
           "+ block(kpca_cosine)")


@pytest.fixture(scope="module")
def quickstart():
    data = pearl.datasets.simulate_paper(200, N=500, n_test=10, sigma=0.5, seed=1)
    reps = pearl.Representations({
        "pca": pearl.PCA(n_components=2),
        "kpca_rbf": pearl.KernelPCA(kernel="rbf", n_components=2),
        "kpca_poly": pearl.KernelPCA(kernel="poly", n_components=2),
        "kpca_sigmoid": pearl.KernelPCA(kernel="sigmoid", n_components=2),
        "kpca_cosine": pearl.KernelPCA(kernel="cosine", n_components=2),
    }, columns=["x1", "x2"], seed=0).fit(data.unlabeled)
    y = data.labeled["y"]
    labeled = data.labeled.assign(high=np.where(y > y.median(), "high", "low"))
    return labeled, reps


def _gap_within_target(gaps: dict, objectives_below: float = 1.0) -> bool:
    """Each recorded gap under 1e-10 (1 + objective) for objectives below *objectives_below*."""
    return all(gap <= gap_target(objectives_below) for gap in gaps.values())


def test_every_solve_of_the_quickstart_binomial_fit_is_certified(quickstart):
    labeled, reps = quickstart
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = pearl.fit(FORMULA, labeled, blocks=reps, family="binomial", seed=0)
        honest = res.honest
        stability = res.weight_stability
        uncertainty = res.weight_uncertainty(n_resamples=3)
    assert is_certified(res.stages.solution)
    # the honest table marks PEARL's row with the largest gap of its outer folds' solves
    folds = res.last_honest_risk.fold_gaps
    assert list(folds.index) == [f"outer fold {k}" for k in range(5)]
    assert folds["certified"].all() and (folds["solver"] == "newton").all()
    assert (folds["kkt_gap"] <= 1e-10 * (1 + folds["objective"])).all()
    assert honest.loc["PEARL", "kkt_gap"] == folds["kkt_gap"].max()
    assert bool(honest["certified"].all())
    # the fold complements and the refitting bootstrap record theirs
    assert sorted(stability.attrs["kkt_gap"]) == [f"fold {k}" for k in range(5)]
    assert stability.attrs["uncertified"] == [] and _gap_within_target(stability.attrs["kkt_gap"])
    assert sorted(uncertainty.attrs["kkt_gap"]) == [f"boot {b}" for b in range(3)]
    assert uncertainty.attrs["uncertified"] == []
    assert _gap_within_target(uncertainty.attrs["kkt_gap"])


def test_the_fits_certificate_holds_against_random_points_of_the_simplex(quickstart):
    """Re-solving the fit's stored predictions gives its weights, and no point of the simplex
    beats the objective by more than the recorded gap."""
    labeled, reps = quickstart
    res = pearl.fit(FORMULA, labeled, blocks=reps, family="binomial", seed=0)
    P = res.cv_predictions.to_numpy()
    y = res.stages.response.y
    sol = solve_weights(P, y, get_loss("cross_entropy", "binomial"))
    points = np.random.default_rng(0).dirichlet(np.full(P.shape[1], 0.2), size=4000)
    best = -np.mean(np.log(np.where(y[:, None] == 1, P @ points.T, 1 - P @ points.T)), axis=0)
    assert best.min() >= res.weight_objective - res.kkt_gap
    np.testing.assert_allclose(sol.weights, res.weights.to_numpy(), atol=1e-9)
    assert is_certified(sol) and res.kkt_gap <= gap_target(res.weight_objective)


def test_an_uncertified_outer_fold_is_named_pointed_at_the_user_and_marked(quickstart,
                                                                            monkeypatch):
    labeled, reps = quickstart
    res = pearl.fit(FORMULA, labeled, blocks=reps, family="binomial", seed=0)

    def one_vertex(form, w0, tol, max_iter):  # a solver that gives up at its start
        return w0, False

    monkeypatch.setattr(solvers, "solve_smooth", one_vertex)
    with pytest.warns(ConvergenceWarning) as caught:
        honest = res.honest
    messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert len(messages) == 5
    for k in range(5):
        assert any(f"in outer fold {k} of the honest risk (res.honest) of the binomial fit of "
                   f"{FORMULA!r}" in message for message in messages)
    assert {w.filename for w in caught if w.category is ConvergenceWarning} == {__file__}
    assert not honest.loc["PEARL", "certified"]
    folds = res.last_honest_risk.fold_gaps
    assert not folds["certified"].any() and (folds["kkt_gap"] > 1e-6).all()
    # the fold complements and the refitting bootstrap record and name theirs too
    with pytest.warns(ConvergenceWarning) as caught:
        stability = res.resample_weights("folds")
        uncertainty = res.weight_uncertainty(n_resamples=2)
    messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert any(f"in re-solve 'fold 3' of the binomial fit of {FORMULA!r}" in message
               for message in messages)
    assert any(f"in boot 1 of the refitting bootstrap of the binomial fit of {FORMULA!r}"
               in message for message in messages)
    assert {w.filename for w in caught if w.category is ConvergenceWarning} == {__file__}
    assert stability.attrs["uncertified"] == [f"fold {k}" for k in range(5)]
    assert uncertainty.attrs["uncertified"] == ["boot 0", "boot 1"]
    assert min(uncertainty.attrs["kkt_gap"].values()) > 1e-6


def test_a_thousand_candidates_at_fewer_rows_reach_a_certified_gap():
    """J = 1023 logistic candidates (all subsets of 10 features) on 200 rows: more candidates than
    rows, solved on the face of the positive weights without the J x J Hessian."""
    rng = np.random.default_rng(0)
    n = 200
    x = rng.normal(size=(n, 10))
    y = (rng.uniform(size=n) < expit(x[:, 0] + 0.5 * x[:, 1] - 0.5 * x[:, 2])).astype(float)
    masks = (np.arange(1, 1024)[:, None] >> np.arange(10)) & 1
    beta = np.array([1.0, 0.5, -0.5, 0, 0, 0, 0, 0, 0, 0]) + 0.3 * rng.normal(size=(1023, 10))
    P = expit(x @ (masks * beta).T)
    sol = solve_weights(P, y, get_loss("cross_entropy", "binomial"))
    assert sol.solver == "newton" and is_certified(sol)
    points = np.vstack([np.eye(1023)[np.argsort(-sol.weights)[:40]],
                        rng.dirichlet(np.full(1023, 0.05), size=500)])
    values = -np.mean(np.log(np.where(y[:, None] == 1, P @ points.T, 1 - P @ points.T)), axis=0)
    assert values.min() >= sol.objective - sol.kkt_gap
