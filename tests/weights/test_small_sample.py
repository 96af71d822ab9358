"""``fit(cv_repeats=R)`` and ``fit(weight_shrinkage=...)``: variance-reducing weight choices.

References are written here: per-draw OLS out-of-fold predictions by numpy, the averaged
objective solved by scipy's SLSQP over the simplex, the shrinkage amount by a loop over folds.
"""

from __future__ import annotations

import numpy as np
import pytest

import pearlstats as pearl
from conftest import simplex_minimum
from pearlstats.design.folds import make_folds

N = 80


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    a, b, c = rng.normal(size=(N, 2)), rng.normal(size=(N, 3)), rng.normal(size=(N, 2))
    y = a[:, 0] - 0.7 * b[:, 1] + 0.3 * c[:, 0] + rng.normal(size=N)
    return {"y": y, "a": a, "b": b, "c": c}


FORMULA = "y ~ block(a) + block(b) + block(c)"


def _fit(data, **options):
    return pearl.fit(FORMULA, data, seed=3, honest=False, **options)


def _ols_out_of_fold(data, label, folds):
    X = np.column_stack([np.ones(N)] + [data[name] for name in label.split("+")])
    y = data["y"]
    out = np.empty(N)
    for k in np.unique(folds):
        train = folds != k
        beta = np.linalg.lstsq(X[train], y[train], rcond=None)[0]
        out[~train] = X[~train] @ beta
    return out


def _draw(r, seed=3, K=5):
    return make_folds(K, N, seed=seed if r == 0 else np.random.SeedSequence([seed, r]))


def test_one_repeat_is_the_plain_fit(data):
    plain, once = _fit(data), _fit(data, cv_repeats=1)
    np.testing.assert_array_equal(plain.weights, once.weights)
    np.testing.assert_array_equal(plain.cv_predictions, once.cv_predictions)
    np.testing.assert_array_equal(plain.folds, once.folds)


def test_repeated_weights_minimise_the_averaged_out_of_fold_loss(data):
    R = 4
    res = _fit(data, cv_repeats=R)
    labels = res.candidate_labels
    draws = [_draw(r) for r in range(R)]
    np.testing.assert_array_equal(res.folds, draws[0])
    P = [
        np.column_stack([_ols_out_of_fold(data, label, folds) for label in labels])
        for folds in draws
    ]
    np.testing.assert_allclose(res.cv_predictions.to_numpy(), P[0], atol=1e-10)
    y = data["y"]

    def averaged(w):
        return np.mean([np.mean((y - P_r @ w) ** 2) for P_r in P])

    w, best = simplex_minimum(averaged, len(labels))
    assert res.weight_objective == pytest.approx(averaged(res.weights.to_numpy()), rel=1e-12)
    assert res.weight_objective <= best * (1 + 1e-9)
    np.testing.assert_allclose(res.weights.to_numpy(), w, atol=2e-4)
    # The averaged weights differ from the first draw's alone.
    assert not np.allclose(res.weights, _fit(data).weights, atol=1e-3)


def test_cv_repeats_needs_k_fold(data):
    with pytest.raises(
        pearl.OptionError, match=r"cv_repeats=3 needs cv=K \(an int\), got cv='loo'"
    ):
        _fit(data, cv="loo", cv_repeats=3)
    with pytest.raises(pearl.OptionError, match=r"cv_repeats=0; use an int >= 1"):
        _fit(data, cv_repeats=0)


def test_a_given_shrinkage_moves_the_weights_toward_equal_weights(data):
    plain = _fit(data)
    half = _fit(data, weight_shrinkage=0.5)
    J = len(plain.weights)
    np.testing.assert_allclose(half.weights, 0.5 * plain.weights + 0.5 / J, atol=1e-15)
    np.testing.assert_array_equal(_fit(data, weight_shrinkage=1.0).weights, np.full(J, 1 / J))
    np.testing.assert_array_equal(_fit(data, weight_shrinkage=0).weights, plain.weights)
    P, y = plain.cv_predictions.to_numpy(), data["y"]
    assert half.weight_objective == pytest.approx(
        np.mean((y - P @ half.weights.to_numpy()) ** 2), rel=1e-12
    )
    # The gap bounds how far the shrunk weights are above the optimum.
    assert half.kkt_gap >= half.weight_objective - plain.weight_objective
    note = half.failures[half.failures.kind == "shrinkage"]
    assert note.action.tolist() == ["shrinkage amount 0.5 (given)"]
    with pytest.raises(pearl.OptionError, match=r"weight_shrinkage=1.5; use None"):
        _fit(data, weight_shrinkage=1.5)
    with pytest.raises(pearl.OptionError, match=r"'cv' \(chosen by cross-validation\) or 'size' "
                       r"\(min\(1, 2.5 J / n\)\)"):
        _fit(data, weight_shrinkage="auto")


def _cv_shrinkage_amount(plain, y, target):
    """The amount on 0, 0.1, ..., 1 with the lowest CV loss: scipy weights without each fold."""
    P, folds = plain.cv_predictions.to_numpy(), plain.folds
    grid = np.linspace(0, 1, 11)
    risk = np.zeros(len(grid))
    for k in range(plain.n_folds):
        held = folds == k
        P_fit, y_fit = P[~held], y[~held]

        def loss(w, P_fit=P_fit, y_fit=y_fit):
            return np.mean((y_fit - P_fit @ w) ** 2)

        w_hat, _ = simplex_minimum(loss, P.shape[1])
        for i, lam in enumerate(grid):
            w = (1 - lam) * w_hat + lam * target
            risk[i] += np.sum((y[held] - P[held] @ w) ** 2)
    return grid[np.argmin(risk)]


def test_shrinkage_chosen_by_cross_validation_over_the_out_of_fold_predictions(data):
    res = _fit(data, weight_shrinkage="cv")
    plain = _fit(data)
    J = len(plain.weights)
    amount = _cv_shrinkage_amount(plain, data["y"], np.full(J, 1 / J))
    note = res.failures[res.failures.kind == "shrinkage"]
    assert note.action.iloc[0].startswith(
        f"shrinkage amount {amount:g} (chosen by cross-validation"
    )
    np.testing.assert_allclose(res.weights, (1 - amount) * plain.weights + amount / J, atol=1e-12)


def _single_block_target(labels):
    single = np.array(["+" not in label for label in labels], dtype=float)
    return single / single.sum()


def test_shrinkage_toward_the_single_block_candidates_ends_at_sa_frl(data):
    plain = _fit(data)
    u = _single_block_target(plain.candidate_labels)
    # SA-FRL's weights, as the fit's own baseline table states them.
    np.testing.assert_array_equal(plain.strategy_weights.loc["SA-FRL", plain.candidate_labels], u)

    def shrunk(amount):
        return _fit(data, weight_shrinkage=amount, shrinkage_target="single-block").weights

    np.testing.assert_array_equal(shrunk(0.0), plain.weights)
    np.testing.assert_array_equal(shrunk(1.0), u)
    np.testing.assert_allclose(shrunk(0.3), 0.7 * plain.weights + 0.3 * u, atol=1e-15)
    res = _fit(data, weight_shrinkage="cv", shrinkage_target="single-block")
    amount = _cv_shrinkage_amount(plain, data["y"], u)
    np.testing.assert_allclose(res.weights, (1 - amount) * plain.weights + amount * u, atol=1e-12)
    note = res.failures[res.failures.kind == "shrinkage"]
    assert note.reason.tolist() == [
        "weights shrunk toward equal weights over the single-block candidates that did not "
        "fail (SA-FRL): 3 candidates"
    ]


def test_shrinkage_toward_named_weights(data):
    plain = _fit(data)
    target = {"a": 1.0, "b+c": 3.0}  # normalised to 0.25 and 0.75
    u = np.array([{"a": 0.25, "b+c": 0.75}.get(label, 0.0) for label in plain.candidate_labels])
    res = _fit(data, weight_shrinkage=0.4, shrinkage_target=target)
    np.testing.assert_allclose(res.weights, 0.6 * plain.weights + 0.4 * u, atol=1e-15)
    chosen = _fit(data, weight_shrinkage="cv", shrinkage_target=target)
    amount = _cv_shrinkage_amount(plain, data["y"], u)
    np.testing.assert_allclose(chosen.weights, (1 - amount) * plain.weights + amount * u,
                               atol=1e-12)


@pytest.mark.parametrize("target", ["candidates", "single-block"])
def test_size_rule_shrinks_by_2_5_candidates_per_row(data, target):
    # lam = min(1, 2.5 J / n): 7 candidates on 80 rows -> 0.21875, toward either target.
    plain = _fit(data)
    J = len(plain.weights)
    u = np.full(J, 1 / J) if target == "candidates" else _single_block_target(
        plain.candidate_labels)
    res = _fit(data, weight_shrinkage="size", shrinkage_target=target)
    lam = 2.5 * J / N
    assert lam == pytest.approx(0.21875)
    np.testing.assert_allclose(res.weights, (1 - lam) * plain.weights + lam * u, atol=1e-15)
    note = res.failures[res.failures.kind == "shrinkage"]
    assert note.action.tolist() == [
        "shrinkage amount 0.21875 (min(1, 2.5 J / n) with J = 7 candidates, n = 80 rows)"
    ]


def test_size_rule_counts_labeled_rows_not_stacked_draws(data):
    # With cv_repeats=3 the weight problem has 3 n stacked rows; the rule still uses n.
    repeated = _fit(data, cv_repeats=3)
    res = _fit(data, cv_repeats=3, weight_shrinkage="size")
    J = len(repeated.weights)
    lam = 2.5 * J / N
    np.testing.assert_allclose(res.weights, (1 - lam) * repeated.weights + lam / J, atol=1e-15)


def test_size_rule_counts_only_candidates_that_did_not_fail():
    # 16 rows, K = 5: the three candidates with the 9-column block have more coefficients
    # than training rows and fail, so J = 4 and lam = 2.5 * 4 / 16.
    rng = np.random.default_rng(4)
    n = 16
    blocks = {"a": rng.normal(size=(n, 2)), "b": rng.normal(size=(n, 3)),
              "w": rng.normal(size=(n, 9))}
    small = {"y": blocks["a"][:, 0] - 0.7 * blocks["b"][:, 1] + rng.normal(size=n), **blocks}
    formula = "y ~ block(a) + block(b) + block(w)"
    with pytest.warns(pearl.PearlWarning):
        plain = pearl.fit(formula, small, seed=3, honest=False)
    with pytest.warns(pearl.PearlWarning):
        res = pearl.fit(formula, small, seed=3, honest=False, weight_shrinkage="size")
    failed = plain.failures.loc[plain.failures.stage == "cv", "candidate"]
    assert sorted(failed) == ["a+b+w", "a+w", "b+w"]
    active = ~plain.weights.index.isin(failed)
    u = active / active.sum()
    np.testing.assert_allclose(res.weights, 0.375 * plain.weights + 0.625 * u, atol=1e-15)
    assert (res.weights[~active] == 0).all()
    # Three candidates on 6 rows: 2.5 * 3 / 6 > 1, so the weights are the target's.
    six = {"y": small["y"][:6], "a": blocks["a"][:6, :1], "b": blocks["b"][:6, :1]}
    tiny = pearl.fit("y ~ block(a) + block(b)", six, seed=3, honest=False, cv=3,
                     weight_shrinkage="size")
    np.testing.assert_array_equal(tiny.weights, np.full(3, 1 / 3))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"weight_shrinkage": 0.5, "shrinkage_target": "singles"},
         r"shrinkage_target='singles'; use one of \['candidates', 'single-block'\]"),
        ({"shrinkage_target": "single-block"},
         r"shrinkage_target='single-block' needs weight_shrinkage"),
        ({"weight_shrinkage": 0.5, "shrinkage_target": {"a": 1, "d": 1}},
         r"shrinkage_target names \['d'\], which are not candidates"),
        ({"weight_shrinkage": 0.5, "shrinkage_target": {"a": -1.0, "b": 2.0}},
         r"shrinkage_target has weights \{'a': -1.0\} that are not finite numbers >= 0"),
        ({"weight_shrinkage": 0.5, "shrinkage_target": {"a": 0.0}},
         r"not finite numbers >= 0 with a positive sum"),
    ],
)
def test_bad_shrinkage_targets_are_named(data, options, message):
    with pytest.raises(pearl.OptionError, match=message):
        _fit(data, **options)


def test_shrinkage_and_repeats_together_are_deterministic(data):
    first = _fit(data, cv_repeats=3, weight_shrinkage="cv")
    again = _fit(data, cv_repeats=3, weight_shrinkage="cv")
    np.testing.assert_array_equal(first.weights, again.weights)
    assert abs(first.weights.sum() - 1) < 1e-12 and (first.weights >= 0).all()


def test_simulation_sweep_passes_fit_options():
    from pearlstats.experiments import SimulationSweep

    setting = {"N": 200, "n_test": 100}
    plain = SimulationSweep(n=[60], sigma=[0.5])(setting, np.random.SeedSequence(1))
    repeated = SimulationSweep(n=[60], sigma=[0.5], fit_options={"cv_repeats": 3})(
        setting, np.random.SeedSequence(1)
    )
    mse = {r["method"]: r["MSE"] for r in plain}
    mse_repeated = {r["method"]: r["MSE"] for r in repeated}
    # Same data, blocks and candidates: the same refits. Equal to rounding only, since the OLS
    # engine forms the all-rows Gram by adding up the folds' moments, in an order set by the draw.
    assert mse["SA-cand"] == pytest.approx(mse_repeated["SA-cand"], rel=1e-12)
    assert mse["PEARL"] != mse_repeated["PEARL"]  # other weights
    with pytest.raises(pearl.OptionError, match=r"fit_options \['seed'\] are set by the sweep"):
        SimulationSweep(n=[60], sigma=[0.5], fit_options={"seed": 1})


@pytest.mark.parametrize("amount", [0.5, "size"])
def test_weight_stability_re_solves_the_shrunk_weights(data, amount):
    # The fold-complement weights in res.diagnostics are the fit's procedure on each
    # complement: the simplex minimum there (scipy), shrunk toward equal weights by the
    # given amount or by the size rule with the complement's own row count.
    res = _fit(data, weight_shrinkage=amount)
    P, y, folds = res.cv_predictions.to_numpy(), data["y"], res.folds
    J = P.shape[1]
    for k in range(res.n_folds):
        rows = folds != k

        def loss(w, rows=rows):
            return np.mean((y[rows] - P[rows] @ w) ** 2)

        w_hat, _ = simplex_minimum(loss, J)
        lam = 0.5 if amount == 0.5 else min(1.0, 2.5 * J / rows.sum())
        expected = (1 - lam) * w_hat + lam / J
        np.testing.assert_allclose(res.weight_stability[f"fold {k}"], expected, atol=2e-4)
    stability = res.diagnostics["stability"]
    np.testing.assert_allclose(stability["mean"], res.weight_stability.mean(axis=1))
