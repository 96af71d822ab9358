"""``fit(separation=...)``: separated logistic candidates refitted with the smallest ladder ridge.

References are direct penalised fits written here (scipy on the engines' objective, and
statsmodels' ``GLM.fit_regularized(L1_wt=0)`` with the engines' penalty weights).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.optimize import minimize
from scipy.special import expit, logsumexp
from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

import pearlstats as pearl
from conftest import separated_binomial
from pearlstats.design.candidates import build_candidates
from pearlstats.engines import glm as glm_engine
from pearlstats.engines._common import SEPARATION_RIDGES, ridge_penalty_weights
from pearlstats.engines.glm import glm_cv_predict, glm_fit
from pearlstats.families import EncodedResponse
from pearlstats.results.bootstrap import refit_weights
from pearlstats.stages import cross_validate
from pearlstats.weight_stage import cross_validate_draws

N = 60


def _multinomial_data():
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1, 2], N // 3)
    a = rng.normal(size=(N, 2)) + 0.8 * y[:, None]
    s = np.column_stack([3.0 * y + rng.uniform(0.2, 0.8, size=N), rng.normal(size=N)])
    return y, {"a": a, "s": s}


def _design(blocks, label):
    return np.column_stack([np.ones(N)] + [blocks[name] for name in label.split("+")])


def _fit(y, blocks, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit(
            "y ~ block(a) + block(s)", {"y": y}, blocks=blocks, seed=1, honest=False, **options
        )
    return res, [w for w in caught if issubclass(w.category, pearl.PearlWarning)]


def _penalised_logit(X, y, ridge):
    """Mean logistic NLL + ridge/2 * sum(var_j * b_j^2) (intercept unpenalised), by scipy."""
    w = ridge * ridge_penalty_weights(X)

    def objective(b):
        eta = X @ b
        return np.mean(np.logaddexp(0, eta) - y * eta) + 0.5 * np.sum(w * b * b)

    def gradient(b):
        return X.T @ (expit(X @ b) - y) / len(y) + w * b

    def hessian(b):
        p = expit(X @ b)
        return (X.T * (p * (1 - p))) @ X / len(y) + np.diag(w)

    # An exact-Hessian trust region: BFGS stops short on wide, weakly penalised problems.
    return minimize(
        objective,
        np.zeros(X.shape[1]),
        jac=gradient,
        hess=hessian,
        method="trust-exact",
        options={"gtol": 1e-12, "maxiter": 10_000},
    ).x


def _penalised_mnlogit(X, y, n_classes, ridge):
    """Mean multinomial NLL (class 0 the reference) + ridge/2 * sum_j var_j sum_c b_jc^2 (scipy)."""
    w = ridge * ridge_penalty_weights(X)
    onehot = np.eye(n_classes)[y]
    p, m = X.shape[1], n_classes - 1

    def objective(flat):
        B = flat.reshape(p, m)
        eta = np.column_stack([np.zeros(len(X)), X @ B])
        log_p = eta - logsumexp(eta, axis=1, keepdims=True)
        prob = np.exp(log_p)
        value = -np.mean(np.sum(onehot * log_p, axis=1)) + 0.5 * np.sum(w[:, None] * B * B)
        grad = X.T @ (prob - onehot)[:, 1:] / len(X) + w[:, None] * B
        return value, grad.ravel()

    B = minimize(
        objective,
        np.zeros(p * m),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-12, "maxiter": 10_000},
    ).x.reshape(p, m)
    eta = np.column_stack([np.zeros(len(X)), X @ B])
    return B, eta


def _ladder_rows(res):
    ledger = res.failures
    return ledger[(ledger.kind == "separation") & ~ledger.excluded]


# ---- binomial ----------------------------------------------------------------------------------
def test_separated_binomial_candidates_get_the_smallest_ladder_ridge_by_default():
    y, blocks = separated_binomial(N)
    res, warned = _fit(y, blocks, family="binomial")
    assert not res.failed.any() and np.isfinite(res.cv_predictions.to_numpy()).all()
    rows = _ladder_rows(res)
    assert set(rows.candidate) == {"s", "a+s"}
    assert rows.action.str.startswith(f"refitted with ridge={SEPARATION_RIDGES[0]:g} ").all()
    assert dict(res.stages.family.candidate_ridges) == {"s": 1e-4, "a+s": 1e-4}
    # One warning for the fit, naming both candidates and their ridges.
    assert [w.category for w in warned] == [pearl.SeparationWarning]
    assert "'s' (ridge=0.0001)" in str(warned[0].message) and "'a+s' (ridge=0.0001)" in str(
        warned[0].message
    )
    # The next smaller value, no ridge, has no maximum-likelihood estimate: statsmodels says so.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sm.Logit(y, _design(blocks, "s")).fit(disp=0, maxiter=50)
    assert any(issubclass(w.category, PerfectSeparationWarning) for w in caught)
    # And the unseparated candidate is the plain maximum-likelihood fit.
    assert "a" not in set(rows.candidate)


def test_out_of_fold_predictions_are_per_fold_penalised_fits_with_the_chosen_ridge():
    y, blocks = separated_binomial(N)
    res, _ = _fit(y, blocks, family="binomial")
    for label in ("s", "a+s"):
        X = _design(blocks, label)
        expected, statsmodels_fit = np.empty(N), np.empty(N)
        for k in range(res.n_folds):
            train = res.folds != k
            b = _penalised_logit(X[train], y[train], 1e-4)
            expected[~train] = expit(X[~train] @ b)
            # The same penalty in statsmodels' terms: alpha = ridge * training column variances.
            alpha = 1e-4 * ridge_penalty_weights(X[train])
            fitted = sm.GLM(y[train], X[train], family=sm.families.Binomial()).fit_regularized(
                alpha=alpha, L1_wt=0.0
            )
            statsmodels_fit[~train] = fitted.predict(X[~train])
        got = res.cv_predictions[label].to_numpy()
        np.testing.assert_allclose(got, expected, atol=1e-7)
        # statsmodels' coordinate descent stops with gradients near 1e-5: a looser check.
        np.testing.assert_allclose(got, statsmodels_fit, atol=2e-3)


def test_the_refit_uses_the_same_ridge_and_the_statsmodels_object_states_it():
    y, blocks = separated_binomial(N)
    res, _ = _fit(y, blocks, family="binomial")
    X = _design(blocks, "a+s")
    expected = _penalised_logit(X, y, 1e-4)
    np.testing.assert_allclose(
        res.candidate_params("a+s").to_numpy(), expected, rtol=1e-6, atol=1e-7
    )
    refit = res.candidates["a+s"]
    assert refit.penalty_ridge == 1e-4 and "ridge=0.0001" in refit.penalty
    np.testing.assert_allclose(refit.penalty_alpha, 1e-4 * ridge_penalty_weights(X))
    np.testing.assert_allclose(refit.params, expected, rtol=1e-3, atol=1e-3)
    # The unseparated candidate's refit is statsmodels' unpenalised Logit.
    assert not hasattr(res.candidates["a"], "penalty_ridge")
    np.testing.assert_allclose(
        res.candidates["a"].params, sm.Logit(y, _design(blocks, "a")).fit(disp=0).params, rtol=1e-6
    )
    # Prediction averages the refitted candidates: finite probabilities, the same after pickling.
    prediction = res.predict({"y": y}, blocks=blocks)
    assert np.isfinite(prediction.to_numpy()).all()
    restored = pickle.loads(pickle.dumps(res))
    np.testing.assert_array_equal(restored.predict({"y": y}, blocks=blocks), prediction)
    assert restored.stages.family.candidate_ridges == {"s": 1e-4, "a+s": 1e-4}


def test_a_candidate_wider_than_its_folds_starts_on_the_ladder_by_default():
    # 40 columns, 48 training rows per fold: with the intercept and the block a, a+w has more
    # coefficients than training rows, so its classes are separable and the MLE does not exist.
    rng = np.random.default_rng(3)
    y = (rng.normal(size=N) > 0).astype(float)
    blocks = {"a": rng.normal(size=(N, 2)) + y[:, None], "w": rng.normal(size=(N, 50))}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit("y ~ block(a) + block(w)", {"y": y}, blocks=blocks, family="binomial",
                        seed=1, honest=False)
    assert [w.category for w in caught] == [pearl.SeparationWarning]
    rows = _ladder_rows(res)
    assert set(rows.candidate) == {"w", "a+w"}
    assert rows.reason.str.contains("training rows in the smallest fold").all()
    assert not res.failed.any()
    X = np.column_stack([np.ones(N), blocks["a"], blocks["w"]])
    ridge = res.stages.family.candidate_ridges["a+w"]
    assert ridge in SEPARATION_RIDGES
    expected = np.empty(N)
    for k in range(res.n_folds):
        train = res.folds != k
        expected[~train] = expit(X[~train] @ _penalised_logit(X[train], y[train], ridge))
    np.testing.assert_allclose(res.cv_predictions["a+w"].to_numpy(), expected, atol=1e-6)
    # separation="drop" keeps the old answer: the wide candidates are infeasible, weight 0.
    with pytest.warns(pearl.CandidateFailureWarning):
        dropped = pearl.fit("y ~ block(a) + block(w)", {"y": y}, blocks=blocks,
                            family="binomial", seed=1, honest=False, separation="drop")
    ledger = dropped.failures
    assert set(ledger.loc[ledger.kind == "infeasible", "candidate"]) == {"w", "a+w"}
    assert dropped.weights["a"] == 1.0


def test_the_summary_reports_the_refits_through_the_ledger():
    y, blocks = separated_binomial(N)
    res, _ = _fit(y, blocks, family="binomial")
    text = " ".join(str(res.summary()).split())  # the text wraps long cells
    # routine refits have their own heading, not the failure ledger's (issue 29)
    assert "Refits" in text and "refitted with ridge=0.0001" in text


def test_drop_reproduces_the_old_behaviour():
    y, blocks = separated_binomial(N)
    dropped, warned = _fit(y, blocks, family="binomial", separation="drop")
    assert dropped.failed.to_dict() == {"a": False, "s": True, "a+s": True}
    assert dropped.weights["a"] == 1.0
    assert {w.category for w in warned} == {pearl.CandidateFailureWarning}
    ledger = dropped.failures
    assert set(ledger.loc[ledger.excluded, "candidate"]) == {"s", "a+s"}
    assert (ledger.kind == "separation").all() and len(ledger) == 2 * dropped.n_folds
    # The candidates that do not separate are fitted exactly as under the default.
    default, _ = _fit(y, blocks, family="binomial")
    np.testing.assert_array_equal(dropped.cv_predictions["a"], default.cv_predictions["a"])
    # The engines' own default is the old behaviour too.
    X = np.column_stack([np.ones(N), blocks["a"], blocks["s"]])
    candidates = build_candidates(
        "all", {"a": slice(1, 3), "s": slice(3, 5)}, ["1", "a1", "a2", "s1", "s2"], 1
    )
    out = glm_cv_predict("binomial", X, y, candidates, dropped.folds)
    np.testing.assert_array_equal(out.failed, dropped.failed.to_numpy())
    # One stacked array against pearl.fit's column stack: products summed in other groups of
    # columns, so equal to rounding (both fits stop within about 1e-12 of the optimum).
    np.testing.assert_allclose(out.predictions[:, 0], dropped.cv_predictions["a"].to_numpy(),
                               rtol=0, atol=1e-12)


def test_raise_names_the_candidate():
    y, blocks = separated_binomial(N)
    with pytest.raises(
        pearl.SeparationError,
        match=r"candidate 's': without a ridge the classes are "
        r"\(quasi-\)separated on all rows.*separation='ridge'",
    ):
        _fit(y, blocks, family="binomial", separation="raise")
    with pytest.raises(pearl.OptionError, match=r"separation='shrink'; use 'ridge'"):
        _fit(y, blocks, family="binomial", separation="shrink")


def test_an_explicit_ridge_keeps_its_meaning():
    y, blocks = separated_binomial(N)
    res, warned = _fit(y, blocks, family="binomial", ridge=1e-3)
    assert warned == [] and len(res.failures) == 0
    assert dict(res.stages.family.candidate_ridges) == {}
    np.testing.assert_array_equal(res.stages.output.ridges, 1e-3)


def _slow_newton(monkeypatch, max_iter):
    """Cap the logistic engine's Newton iterations: small ridges do not reach their optimum."""
    original = glm_engine.batched_newton

    def capped(objective, theta0, **options):
        return original(objective, theta0, **{**options, "max_iter": max_iter})

    monkeypatch.setattr(glm_engine, "batched_newton", capped)


def test_the_chosen_ridge_is_the_smallest_rung_with_a_finite_optimum(monkeypatch):
    """With few Newton steps small ridges do not converge: the ladder climbs to the first that does.
    """
    y, blocks = separated_binomial(N)
    _slow_newton(monkeypatch, 8)
    res, _ = _fit(y, blocks, family="binomial", ridge=1e-4)
    chosen = res.stages.family.candidate_ridges["s"]
    assert (
        chosen in SEPARATION_RIDGES and chosen > 1e-4
    )  # an explicit ridge that fails climbs above it
    X = np.column_stack([np.ones(N), blocks["s"]])
    folds = res.folds
    for value in [r for r in SEPARATION_RIDGES if r < chosen]:  # every smaller rung fails somewhere
        failing = glm_cv_predict(
            "binomial",
            X,
            y,
            build_candidates("all", {"s": slice(1, 3)}, ["1", "s1", "s2"], 1),
            folds,
            value,
        )
        assert failing.failed[0]
    params, notes = glm_fit("binomial", X, y, np.arange(3), chosen)
    assert notes == [] and np.isfinite(params).all()
    row = _ladder_rows(res).set_index("candidate").loc["s"]
    assert row.reason.startswith("with ridge=0.0001 the fit")
    assert row.action.startswith(f"refitted with ridge={chosen:g} in every fold and on all rows")


# ---- multinomial -------------------------------------------------------------------------------
def test_separated_multinomial_candidates_match_a_direct_penalised_fit():
    y, blocks = _multinomial_data()
    res, warned = _fit(y, blocks, family="multinomial")
    assert not res.failed.any()
    assert set(_ladder_rows(res).candidate) == {"s", "a+s"}
    assert [w.category for w in warned] == [pearl.SeparationWarning]
    for label in ("s", "a+s"):
        X = _design(blocks, label)
        expected = np.empty((N, 3))
        for k in range(res.n_folds):
            train = res.folds != k
            B, _ = _penalised_mnlogit(X[train], y[train], 3, 1e-4)
            eta = np.column_stack([np.zeros((~train).sum()), X[~train] @ B])
            expected[~train] = np.exp(eta - logsumexp(eta, axis=1, keepdims=True))
        np.testing.assert_allclose(res.cv_predictions[label].to_numpy(), expected, atol=1e-6)
        B, _ = _penalised_mnlogit(X, y, 3, 1e-4)
        np.testing.assert_allclose(res.candidate_params(label).to_numpy(), B, rtol=1e-4, atol=1e-5)
    with pytest.raises(pearl.OptionError, match=r"fitted with ridge=0.0001.*results.failures"):
        res.candidates["s"]


def test_separated_multinomial_se_refusal_names_a_remedy_that_works():
    # The refusal used to end "read the intervals as those of the penalised fit", an
    # instruction about intervals it had just refused. It must name what gives SEs, and
    # that remedy must work: with separation="drop" only 'a' is left, and the averaged
    # intercept's SE is statsmodels' MNLogit SE of that candidate (a single candidate of
    # weight 1: eq. 6.12 is its own SE). Both are Newton fits of the same likelihood, so
    # they agree to ~1e-8 relative; 1e-6 leaves room for the convergence tolerances.
    y, blocks = _multinomial_data()
    res, _ = _fit(y, blocks, family="multinomial")
    assert res.weights[["s", "a+s"]].sum() > 0  # a separated candidate is weighted
    for method in (lambda: res.bse, res.conf_int, res.candidate_params):
        with pytest.raises(pearl.OptionError) as refused:
            method()
        message = str(refused.value)
        assert "separation='drop'" in message and "candidate_params(label)" in message
        assert "read the intervals" not in message
    dropped, _ = _fit(y, blocks, family="multinomial", separation="drop")
    assert dropped.weights["a"] == 1.0
    direct = sm.MNLogit(y, _design(blocks, "a")).fit(method="newton", disp=0, tol=1e-12)
    np.testing.assert_allclose(dropped.bse.loc["Intercept"].to_numpy(), direct.bse[0],
                               rtol=1e-6)


def test_digits_with_small_pca_blocks_fit_with_defaults():
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    X, y = load_digits(return_X_y=True)
    rows = np.random.default_rng(0).choice(len(y), 300, replace=False)
    X, y = X[rows], y[rows]
    scores = PCA(12, random_state=0).fit_transform(X)
    blocks = {"p1": scores[:, :6], "p2": scores[:, 6:]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res, dropped = (
            pearl.fit("y ~ block(p1) + block(p2)", {"y": y}, blocks=blocks, family="multinomial",
                      seed=0, honest=False, separation=separation)
            for separation in ("ridge", "drop")
        )
    assert not res.failed.any()
    assert set(_ladder_rows(res).candidate) == set(dropped.failed.index[dropped.failed])
    assert len(res.stages.family.candidate_ridges) > 0
    probabilities = res.predict({"y": y}, blocks=blocks).to_numpy()
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)


# ---- re-runs: nested cross-validation and the refitting bootstrap ---------------------------
def test_re_runs_choose_their_ridges_on_their_own_rows():
    y, blocks = separated_binomial(N)
    res, _ = _fit(y, blocks, family="binomial")
    state = res.stages
    rows = np.arange(0, N, 2)
    response = EncodedResponse(y[rows], state.response.classes)
    folds = np.arange(len(rows)) % 3
    # What nested.py and results/bootstrap.py call: the fit's family (which remembers the
    # ridges chosen on all rows), the fit's ridge. The ridges are chosen again on these rows.
    (out,), family = cross_validate_draws(state.family, state.design.X[rows], response,
                                          list(state.candidates.pool), [folds], loo=False,
                                          ridge=state.ridge)
    assert dict(zip(res.candidate_labels, out.ridges)) == {"a": 0.0, "s": 1e-4, "a+s": 1e-4}
    assert dict(family.candidate_ridges) == {"s": 1e-4, "a+s": 1e-4}
    moved = {e.candidate for e in out.entries if e.kind == "separation" and not e.excluded}
    assert not out.failed.any() and moved == {"s", "a+s"}
    X = _design(blocks, "s")[rows]
    expected = np.empty(len(rows))
    for k in range(3):
        train = folds != k
        expected[~train] = expit(X[~train] @ _penalised_logit(X[train], y[rows][train], 1e-4))
    np.testing.assert_allclose(out.predictions[:, 1], expected, atol=1e-7)
    weights = refit_weights(state, rows, folds)
    assert np.isfinite(weights).all() and abs(weights.sum() - 1) < 1e-12
    # The engines themselves still start from ridges they are given (draws on the same rows).
    given = cross_validate(state.family, state.design.X[rows], response,
                           list(state.candidates.pool), folds, ridge=state.ridge)
    np.testing.assert_array_equal(given.ridges, out.ridges)
    assert not [e for e in given.entries if e.kind == "separation"]


def test_honest_risk_runs_with_the_default():
    y, blocks = separated_binomial(N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit(
            "y ~ block(a) + block(s)", {"y": y}, blocks=blocks, family="binomial", seed=1, honest=3
        )
        table = res.honest
    assert table is not None and np.isfinite(table["risk"]).all()


# ---- Poisson: counts of 0 on one side of a direction -------------------------------------------
def _sparse_counts():
    """Two positive counts in 200 rows: a fold whose training rows hold one of them (at a
    corner of block b's points) has no Poisson MLE for the candidates with b; the fit used
    to stop there with out-of-fold means of 1e198, reported only as "rank deficient"."""
    rng = np.random.default_rng(2)
    n = 200
    blocks = {"a": rng.normal(size=(n, 2)), "b": rng.normal(size=(n, 2))}
    y = np.zeros(n)
    y[[3, 50]] = 1.0
    return y, blocks


def _penalised_poisson(X, y, ridge):
    """Mean Poisson NLL + ridge/2 * sum(var_j * b_j^2) (intercept unpenalised), by scipy."""
    w = ridge * ridge_penalty_weights(X)

    def objective(b):
        eta = X @ b
        return np.mean(np.exp(eta) - y * eta) + 0.5 * np.sum(w * b * b)

    def gradient(b):
        return X.T @ (np.exp(X @ b) - y) / len(y) + w * b

    def hessian(b):
        return (X.T * np.exp(X @ b)) @ X / len(y) + np.diag(w)

    start = np.zeros(X.shape[1])
    start[0] = np.log(y.mean())
    return minimize(objective, start, jac=gradient, hess=hessian, method="trust-exact",
                    options={"gtol": 1e-12, "maxiter": 10_000}).x


def test_a_poisson_candidate_without_an_mle_in_a_fold_takes_the_ladder_ridge():
    y, blocks = _sparse_counts()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit("y ~ block(a) + block(b)", {"y": y, **blocks}, family="poisson",
                        seed=0, honest=False)
    warned = [w for w in caught if issubclass(w.category, pearl.PearlWarning)]
    assert [w.category for w in warned] == [pearl.SeparationWarning]
    # in the words of counts, not of classes (the warning and the summary's ridge note)
    reason = "the counts are 0 on one side of a direction of the columns"
    assert reason in str(warned[0].message) and "classes" not in str(warned[0].message)
    assert f"The ridge was needed because {reason}" in res.summary().as_text().replace("\n", " ")
    rows = _ladder_rows(res)
    ridges = dict(res.stages.family.candidate_ridges)
    assert set(rows.candidate) == set(ridges) and "a" not in ridges and ridges
    assert "counts are 0 on one side" in " ".join(res.failures.reason)
    # Each flagged candidate's out-of-fold means are the penalised fits at its ridge (scipy on
    # the engine's objective; the optimum is well conditioned once penalised: 1e-6 relative on
    # means of about 0.01 is far above both solvers' tolerances).
    n = len(y)
    for label, ridge in ridges.items():
        X = np.column_stack([np.ones(n)] + [blocks[name] for name in label.split("+")])
        expected = np.empty(n)
        for k in range(res.n_folds):
            train = res.folds != k
            expected[~train] = np.exp(X[~train] @ _penalised_poisson(X[train], y[train], ridge))
        np.testing.assert_allclose(res.cv_predictions[label].to_numpy(), expected, rtol=1e-6)
    assert res.cv_predictions.to_numpy().max() < 10  # was 6.4e198


def test_a_poisson_candidate_without_an_mle_is_dropped_or_raised_on_request():
    y, blocks = _sparse_counts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dropped = pearl.fit("y ~ block(a) + block(b)", {"y": y, **blocks}, family="poisson",
                            seed=0, honest=False, separation="drop")
    assert dropped.failed.any() and (dropped.weights[dropped.failed] == 0).all()
    with pytest.raises(pearl.SeparationError, match="counts are 0 on one side"):
        pearl.fit("y ~ block(a) + block(b)", {"y": y, **blocks}, family="poisson", seed=0,
                  honest=False, separation="raise")


def test_a_poisson_fold_whose_training_rows_count_nothing_is_refused():
    """No ridge on the block columns gives the intercept an optimum there (statsmodels' GLM
    fails too): its out-of-fold means were 1e-23 where the held-out counts average 3."""
    rng = np.random.default_rng(2)
    n = 200
    folds = np.arange(n) % 5
    y = np.zeros(n)
    y[folds == 2] = rng.poisson(3, size=(folds == 2).sum())
    with pytest.raises(pearl.FoldError, match="training rows of fold 2 have no positive count"):
        pearl.fit("y ~ block(a)", {"y": y, "a": rng.normal(size=(n, 2))}, family="poisson",
                  cv=folds, seed=0, honest=False)


def test_a_small_separated_multinomial_class_is_separation_not_rank_deficiency():
    """Class 3 is the two rows of largest a0: the likelihood rises without bound along a0
    (checked below), but the singular Hessian's pseudo-inverse steps stalled and the candidate
    was recorded "rank deficient" and kept with weight 1 (coefficients -303 and 124). It is
    separated: "drop" gives it weight 0, the default ladder refits it with a ridge."""
    rng = np.random.default_rng(12)
    n = 500
    a, b, x = rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=n)
    y = rng.integers(0, 3, size=n)
    y[np.argsort(a[:, 0])[-2:]] = 3
    X = np.column_stack([np.ones(n), x, a])
    threshold = np.sort(a[:, 0])[-3:-1].mean()

    def mean_nll(t):  # along the separating direction of class 3, from 0
        B = np.zeros((4, 3))
        B[0, 2], B[2, 2] = -t * threshold, t
        E = np.column_stack([np.zeros(n), X @ B])
        return np.mean(logsumexp(E, axis=1) - E[np.arange(n), y])

    assert mean_nll(10) > mean_nll(100) > mean_nll(1000)  # no finite optimum
    data = {"y": y, "x": x, "a": a, "b": b}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # b and a+b are separated too, in the fold whose training rows hold one row of class 3
        # on the boundary of the others (a hyperplane splits it off: see the class-of-one test
        # below), so with "drop" no candidate is left
        with pytest.raises(pearl.AllCandidatesFailedError) as dropped:
            pearl.fit("y ~ x + block(a) + block(b)", data, family="multinomial",
                      honest=False, seed=0, separation="drop")
        laddered = pearl.fit("y ~ x + block(a) + block(b)", data, family="multinomial",
                             honest=False, seed=0)
    separated = dropped.value.failures.query("candidate == 'a' and kind == 'separation'")
    assert len(separated) >= 2  # the folds whose training rows hold both rows of class 3
    assert laddered.failures.query("candidate == 'a' and kind == 'separation'").shape[0] >= 1
    assert np.isfinite(laddered.candidate_params("a").to_numpy()).all()


def _zero_level(family: str):
    """Six rows of a level z of g whose response is all 0: no finite coefficient for z."""
    rng = np.random.default_rng(5)
    n = 300
    x, a, b = rng.normal(size=n), rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    g = rng.choice(list("abc"), n)
    g[:6] = "z"
    if family == "poisson":
        y = rng.poisson(np.exp(0.3 * x + 0.4 * a[:, 0])).astype(float)
    else:
        y = (rng.random(n) < expit(0.3 * x + a[:, 0])).astype(float)
    y[:6] = 0.0
    return {"y": y, "x": x, "g": g, "a": a, "b": b}


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_a_level_whose_rows_are_all_zero_is_separation_not_rank_deficiency(family):
    """The level's coefficient moved about one unit per Newton step (a small step on the
    standardised scale of a rare indicator) until the Hessian was singular; the fit was then
    recorded "rank deficient" and kept, its estimate -35 with an SE of 1e7, and its CV risk
    depended on where the steps had stopped (1.5 % from statsmodels' own stopping point)."""
    data = _zero_level(family)
    X = np.column_stack([np.ones(300), data["x"], data["g"] == "b", data["g"] == "c",
                         data["g"] == "z", data["a"]]).astype(float)
    nll = {"binomial": lambda eta: np.mean(np.logaddexp(0, eta) - data["y"] * eta),
           "poisson": lambda eta: np.mean(np.exp(eta) - data["y"] * eta)}[family]
    base = sm.GLM(data["y"], X[:, [0, 1, 2, 3, 5, 6]],
                  family=sm.families.Binomial() if family == "binomial"
                  else sm.families.Poisson()).fit().params
    along = [nll(X @ np.insert(base, 4, -t)) for t in (5, 10, 20, 40)]
    assert all(np.diff(along) < 0)  # the likelihood rises without bound as z's coefficient falls
    formula = "y ~ x + C(g) + block(a) + block(b)"
    # every candidate holds the level: with "drop" none has an estimate
    with pytest.raises(pearl.AllCandidatesFailedError) as dropped:
        pearl.fit(formula, data, family=family, honest=False, seed=0, separation="drop")
    ledger = dropped.value.failures
    assert not (ledger.kind == "rank deficient").any()
    assert set(ledger.query("kind == 'separation'").candidate) == {"a", "b", "a+b",
                                                                   "covariates only"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        laddered = pearl.fit(formula, data, family=family, honest=False, seed=0)
    assert any(issubclass(w.category, pearl.SeparationWarning) for w in caught)
    params = laddered.candidate_params("a")
    assert np.isfinite(params.to_numpy()).all() and abs(params["C(g)[T.z]"]) < 20
    with pytest.raises(pearl.SeparationError):
        pearl.fit(formula, data, family=family, honest=False, seed=0, separation="raise")


def test_rows_beyond_the_threshold_with_both_outcomes_are_not_separation():
    # an offset of 40 on a level's rows, which have both outcomes: the level's coefficient has
    # a finite optimum (about -40), though those rows' variances vanish from the start and the
    # Hessian is singular; only rows beyond the threshold all at their limit are separation
    rng = np.random.default_rng(0)
    n = 300
    g = rng.choice(list("abc"), n)
    g[:8] = "z"
    x = rng.normal(size=n)
    y = (rng.random(n) < expit(0.3 * x)).astype(float)
    y[:4], y[4:8] = 1.0, 0.0
    offset = np.where(g == "z", 40.0, 0.0)
    data = {"y": y, "x": x, "g": g, "a": rng.normal(size=(n, 2))}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit("y ~ x + C(g) + block(a)", data, family="binomial", offset=offset,
                        honest=False, seed=0, separation="raise")  # raised "separation"
    assert not (res.failures.kind == "separation").any()
    assert not any(issubclass(w.category, pearl.SeparationWarning) for w in caught)


@pytest.mark.parametrize("family, offset", [("binomial", 40.0), ("binomial", 36.0),
                                            ("poisson", -40.0)])
def test_a_level_with_a_huge_offset_gets_its_maximum_likelihood_estimate(family, offset):
    """Rows whose offset puts their mean within 1e-16 of its limit at the start (both outcomes,
    or some counts, so the optimum is finite) have variances at rounding level there: Newton's
    minimum-norm steps never moved the level's coefficient, and the fit "converged" 36-40 units
    from statsmodels' estimate, recorded as rank deficient. The estimates and every fold's
    out-of-fold means now equal statsmodels' fits (to 1e-8: both solve well-conditioned
    problems from there to about 1e-10 in the coefficients)."""
    rng = np.random.default_rng(0)
    n = 300
    g = rng.choice(list("abc"), n)
    g[:8] = "z"
    x = rng.normal(size=n)
    if family == "binomial":
        y = (rng.random(n) < expit(0.3 * x)).astype(float)
        y[:4], y[4:8] = 1.0, 0.0
        sm_family = sm.families.Binomial()
    else:
        y = rng.poisson(np.exp(0.3 * x)).astype(float)
        y[:8] = [1, 2, 0, 3, 0, 0, 1, 0]
        sm_family = sm.families.Poisson()
    offsets = np.where(g == "z", offset, 0.0)
    data = {"y": y, "x": x, "g": g, "a": rng.normal(size=(n, 2))}
    res = pearl.fit("y ~ x + C(g) + block(a)", data, family=family, offset=offsets,
                    honest=False, seed=0)
    assert len(res.failures) == 0  # was "rank deficient" in every fold and the refit
    X = np.column_stack([np.ones(n), g == "b", g == "c", g == "z", x, data["a"]]).astype(float)
    direct = sm.GLM(y, X, family=sm_family, offset=offsets).fit(tol=1e-12)
    params = res.candidate_params("a")
    np.testing.assert_allclose(params[["Intercept", "C(g)[T.b]", "C(g)[T.c]", "C(g)[T.z]", "x",
                                       "a[0]", "a[1]"]].to_numpy(), direct.params,
                               rtol=0, atol=1e-8)
    assert abs(params["C(g)[T.z]"] + offset) < 2  # near minus the offset, not near 0
    for k in np.unique(res.folds):
        held = res.folds == k
        fold_fit = sm.GLM(y[~held], X[~held], family=sm_family, offset=offsets[~held]).fit(
            tol=1e-12)
        expected = fold_fit.predict(X[held], offset=offsets[held])
        np.testing.assert_allclose(res.cv_predictions["a"].to_numpy()[held], expected,
                                   rtol=1e-8)


def test_a_poisson_mean_of_4e_18_beside_one_of_7e10_is_not_separation():
    """A covariate outlier puts one row's mean at 4e-18 and another's at 7e10: Newton moves the
    log-means about a unit per step from the intercept-only start, so after 15 steps a row was
    still beyond the threshold with large steps, and the fit was stopped as separated (refitted
    on the ridge ladder, 1e-4 from statsmodels' estimate, with a SeparationWarning). The rows
    have no direction of recession, so the fit goes on to the maximum-likelihood estimate."""
    rng = np.random.default_rng(0)
    n = 300
    x1, x2, x3 = rng.normal(size=(3, n))
    x3[0], x3[1] = -40.0, 25.0
    y = rng.poisson(np.minimum(np.exp(0.2 + 0.3 * x1 + x3), 1e15)).astype(float)
    a = rng.normal(size=(n, 2))
    data = {"y": y, "x1": x1, "x2": x2, "x3": x3, "a": a}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit("y ~ x1 + x2 + x3 + block(a)", data, family="poisson", honest=False,
                        seed=0, separation="raise")
    assert not any(issubclass(w.category, pearl.SeparationWarning) for w in caught)
    assert len(res.failures) == 0
    X = np.column_stack([np.ones(n), x1, x2, x3, a])
    direct = sm.GLM(y, X, family=sm.families.Poisson()).fit(tol=1e-12)
    np.testing.assert_allclose(res.candidate_params("a").to_numpy(), direct.params,
                               rtol=0, atol=1e-8)  # both stop within about 1e-10
    for k in np.unique(res.folds):
        held = res.folds == k
        fold_fit = sm.GLM(y[~held], X[~held], family=sm.families.Poisson()).fit(tol=1e-12)
        np.testing.assert_allclose(res.cv_predictions["a"].to_numpy()[held],
                                   fold_fit.predict(X[held]), rtol=1e-8)


@pytest.mark.parametrize("absent", [2.0, 0.0])
def test_a_multinomial_level_without_some_class_is_separation(absent):
    """A level of 6 rows never of one class: along that class's coefficient of the level
    (for the reference class, all the others' together) the likelihood rises for ever. The
    fast path stopped where the gradient vanished (-23 for class 2, no warning, kept), where
    statsmodels' MNLogit does not converge."""
    rng = np.random.default_rng(5)
    n = 300
    x, a, b = rng.normal(size=n), rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    g = rng.choice(list("abc"), n)
    g[:6] = "z"
    y = rng.integers(0, 3, n).astype(float)
    y[:6] = [c for c in (0.0, 1.0, 2.0) if c != absent] * 3
    X = np.column_stack([np.ones(n), x, g == "b", g == "c", g == "z", a]).astype(float)
    fitted = sm.MNLogit(y, X[:, [0, 1, 2, 3, 5, 6]]).fit(disp=0, method="newton", maxiter=100)
    base = np.insert(fitted.params, 4, 0.0, axis=0)  # level z's coefficients at 0
    direction = np.zeros_like(base)
    if absent == 0.0:
        direction[4] = 1.0  # every other class up at the level
    else:
        direction[4, int(absent) - 1] = -1.0
    model = sm.MNLogit(y, X)
    along = [model.loglike(base + t * direction) for t in (5, 10, 20, 40)]
    assert all(np.diff(along) > 0)  # the likelihood rises without bound
    data = {"y": y, "x": x, "g": g, "a": a, "b": b}
    formula = "y ~ x + C(g) + block(a) + block(b)"
    with pytest.raises(pearl.AllCandidatesFailedError) as dropped:
        pearl.fit(formula, data, family="multinomial", honest=False, seed=0, separation="drop")
    assert set(dropped.value.failures.query("kind == 'separation'").candidate) == {
        "a", "b", "a+b", "covariates only"}
    with pytest.warns(pearl.SeparationWarning):
        laddered = pearl.fit(formula, data, family="multinomial", honest=False, seed=0)
    params = laddered.candidate_params("a").loc["C(g)[T.z]"]
    assert np.isfinite(params.to_numpy()).all() and np.abs(params).max() < 15
    with pytest.raises(pearl.SeparationError):
        pearl.fit(formula, data, family="multinomial", honest=False, seed=0,
                  separation="raise")


def test_a_multinomial_level_with_every_class_equals_mnlogit():
    # the same design with all three classes in level z: no separation, statsmodels' estimate
    rng = np.random.default_rng(5)
    n = 300
    x, a = rng.normal(size=n), rng.normal(size=(n, 2))
    g = rng.choice(list("abc"), n)
    g[:6] = "z"
    y = rng.integers(0, 3, n).astype(float)
    y[:6] = [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", pearl.SeparationWarning)
        res = pearl.fit("y ~ x + C(g) + block(a)", {"y": y, "x": x, "g": g, "a": a},
                        family="multinomial", honest=False, seed=0)
    assert len(res.failures) == 0
    X = np.column_stack([np.ones(n), g == "b", g == "c", g == "z", x, a]).astype(float)
    direct = sm.MNLogit(y, X).fit(disp=0, method="newton", maxiter=100, tol=1e-12)
    np.testing.assert_allclose(res.candidate_params("a").to_numpy(), direct.params, rtol=0,
                               atol=1e-8)  # both Newton optima to about 1e-10


def test_a_multinomial_class_of_one_training_row_split_off_by_a_hyperplane_is_separation():
    """A class with one row among fold 2's training rows, on the outer boundary of the others
    (a linear program finds a hyperplane with a positive margin): no estimate exists, but no
    row was at the threshold where Newton stopped, so the fit was "rank deficient" and kept;
    its held-out rows of that class got probabilities of 1e-166, which statsmodels' iterations
    move by ten orders of magnitude (iteration-dependent numbers)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(6)
    n = 600
    x, a, b = rng.normal(size=n) + 2, rng.normal(size=(n, 2)), rng.normal(size=(n, 3))
    signal = a[:, 0] - 0.7 * b[:, 1] + 0.3 * (x - 2)
    y = np.digitize(signal + rng.logistic(size=n), [-1.0, 0.5]).astype(float)
    y[[10, 300, 500]] = 7.0
    folds = np.arange(n) % 4
    folds[10], folds[300], folds[500] = 0, 2, 2  # fold 2 trains on row 10 alone of class 7
    training = folds != 2
    Z = np.column_stack([x, a, b])[training]
    lone = int(np.flatnonzero(np.flatnonzero(training) == 10)[0])
    differences = Z[lone] - np.delete(Z, lone, axis=0)
    p = Z.shape[1]
    margin = linprog(np.r_[np.zeros(p), -1.0], A_ub=np.c_[-differences, np.ones(len(Z) - 1)],
                     b_ub=np.zeros(len(Z) - 1), bounds=[(-1, 1)] * p + [(None, 1)])
    assert -margin.fun > 0.1  # row 10 is split off from every other training row
    data = {"y": y, "x": x, "a": a, "b": b}
    with pytest.warns(pearl.SeparationWarning):
        res = pearl.fit("y ~ x + block(a) + block(b)", data, family="multinomial",
                        candidates=[["a", "b"]], cv=folds, seed=1, honest=False)
    entry = res.failures.query("candidate == 'a+b'")
    assert list(entry.kind) == ["separation"] and "fold(s) [2]" in entry.reason.iloc[0]
    held = np.asarray(res.cv_predictions)[[300, 500], list(res.classes).index(7.0)]
    assert np.all(held > 1e-8)  # the ridge fit's probabilities, not 1e-166
