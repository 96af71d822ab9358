"""CV+ intervals and prediction sets with observation weights and offsets (issue 26 item 2).

Frequency weights count rows in the quantiles (an integer weight is the row repeated in its
fold); variance weights scale the residuals by sqrt(w); offsets reach every outer fold's
procedure. Checked against repeated rows and against the nested cross-validation rebuilt by
hand from ``pearl.fit`` on each outer training set.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_observation_weights import _data, _fit

from pearlstats.exceptions import OptionError, PearlError
from pearlstats.inference import aps_prediction_sets, cv_plus_interval
from pearlstats.inference.conformal import aps_scores
from pearlstats.nested import row_uniforms


def _weighted_order_statistic(values: np.ndarray, weights: np.ndarray, rank: float) -> float:
    """Smallest value whose total weight at or below it reaches *rank* (by enumeration)."""
    for v in np.sort(values):
        if weights[values <= v].sum() >= rank - 1e-9:
            return float(v)
    raise AssertionError("rank above the total weight")


def _toy(n=37, k=4, m=6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    oof = y + rng.normal(scale=0.7, size=n)
    folds = np.arange(n) % k
    fold_pred = rng.normal(size=(k, m))
    return y, oof, folds, fold_pred


@pytest.mark.parametrize("alpha", [0.1, 0.2, 0.33])
def test_integer_frequency_weights_give_the_bounds_of_the_repeated_rows(alpha):
    y, oof, folds, fold_pred = _toy()
    counts = np.random.default_rng(1).integers(1, 4, size=y.size)
    rows = np.repeat(np.arange(y.size), counts)
    for family in ("gaussian", "poisson"):
        weighted = cv_plus_interval(y, oof, folds, fold_pred, alpha, family=family,
                                    row_weights=counts, weight_type="frequency")
        repeated = cv_plus_interval(y[rows], oof[rows], folds[rows], fold_pred, alpha,
                                    family=family)
        np.testing.assert_array_equal(weighted, repeated)


def test_non_integer_frequency_weights_take_the_weighted_order_statistics():
    y, oof, folds, fold_pred = _toy(seed=2)
    w = np.random.default_rng(3).uniform(0.3, 2.5, size=y.size)
    total, alpha = w.sum(), 0.15
    lo_rank, hi_rank = np.floor(alpha * (total + 1)), np.ceil((1 - alpha) * (total + 1))
    lower, upper = cv_plus_interval(y, oof, folds, fold_pred, alpha, row_weights=w,
                                    weight_type="frequency")
    resid = np.abs(y - oof)
    for j in range(fold_pred.shape[1]):
        mu = fold_pred[folds, j]
        assert lower[j] == _weighted_order_statistic(mu - resid, w, lo_rank)
        assert upper[j] == _weighted_order_statistic(mu + resid, w, hi_rank)
    # a rank beyond the total weight: an unbounded side
    lower, upper = cv_plus_interval(y, oof, folds, fold_pred, 0.01, row_weights=w,
                                    weight_type="frequency")
    assert np.all(np.isinf(lower)) and np.all(np.isinf(upper))


def test_variance_weights_scale_the_residuals_and_the_new_rows_by_their_own():
    y, oof, folds, fold_pred = _toy(seed=4)
    w = np.random.default_rng(5).uniform(0.2, 4.0, size=y.size)
    new_w = np.random.default_rng(6).uniform(0.5, 3.0, size=fold_pred.shape[1])
    n, alpha = y.size, 0.2
    lo_rank, hi_rank = int(np.floor(alpha * (n + 1))), int(np.ceil((1 - alpha) * (n + 1)))
    lower, upper = cv_plus_interval(y, oof, folds, fold_pred, alpha, row_weights=w,
                                    weight_type="variance", new_weights=new_w)
    for j in range(fold_pred.shape[1]):
        scores = np.sqrt(w / new_w[j]) * np.abs(y - oof)
        mu = fold_pred[folds, j]
        np.testing.assert_allclose(lower[j], np.sort(mu - scores)[lo_rank - 1], rtol=1e-13)
        np.testing.assert_allclose(upper[j], np.sort(mu + scores)[hi_rank - 1], rtol=1e-13)
    # new weight 1: the unweighted CV+ of responses whose residuals are sqrt(w) times as large
    scaled = oof + np.sqrt(w) * (y - oof)
    np.testing.assert_allclose(
        cv_plus_interval(y, oof, folds, fold_pred, alpha, row_weights=w, weight_type="variance"),
        cv_plus_interval(scaled, oof, folds, fold_pred, alpha), rtol=1e-13)


def test_weight_arguments_are_checked_by_name():
    y, oof, folds, fold_pred = _toy()
    with pytest.raises(OptionError, match="together"):
        cv_plus_interval(y, oof, folds, fold_pred, row_weights=np.ones(y.size))
    with pytest.raises(OptionError, match="new_weights"):
        cv_plus_interval(y, oof, folds, fold_pred, row_weights=np.ones(y.size),
                         weight_type="frequency", new_weights=np.ones(fold_pred.shape[1]))


def test_integer_frequency_weights_in_prediction_sets_are_the_repeated_rows():
    rng = np.random.default_rng(11)
    n, k, m, classes = 41, 4, 9, 3
    proba = rng.dirichlet(0.4 * np.ones(classes), size=n)
    y = np.array([rng.choice(classes, p=p) for p in proba])
    folds = np.arange(n) % k
    new = rng.dirichlet(0.4 * np.ones(classes), size=(k, m))
    counts = rng.integers(1, 4, size=n)
    rows = np.repeat(np.arange(n), counts)
    for alpha in (0.1, 0.25):
        weighted = aps_prediction_sets(y, proba, folds, new, alpha, randomize=False,
                                       row_weights=counts)
        repeated = aps_prediction_sets(y[rows], proba[rows], folds[rows], new, alpha,
                                       randomize=False)
        np.testing.assert_array_equal(weighted, repeated)
    # the weights matter: the unweighted sets differ (here at alpha 0.25)
    assert not np.array_equal(weighted, aps_prediction_sets(y, proba, folds, new, alpha,
                                                            randomize=False))


def _by_hand(res, data, weights, offset, family, new, new_offset):
    """Held-out means and each outer fold's means for *new*, from pearl.fit per outer fold."""
    nested = res.honest_risk(outer=3)
    held_out = np.empty(len(data["y"]))
    fold_means = []
    for k in range(3):
        train, test = nested.outer_folds != k, nested.outer_folds == k
        inner = _fit({name: values[train] for name, values in data.items()}, family,
                     weights=weights[train], weight_type=res.stages.response.weight_type,
                     offset=offset[train], cv=nested.inner_folds[k])
        rows = {"a": data["a"][test], "b": data["b"][test]}
        held_out[test] = inner.predict(rows, offset=offset[test]).to_numpy()
        fold_means.append(inner.predict(new, offset=new_offset).to_numpy())
    return held_out, np.array(fold_means), nested.outer_folds


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_variance_weighted_interval_is_the_cv_plus_of_the_nested_cv_rebuilt_by_hand(family):
    data, weights, offset = _data(family, n=90, seed=21)
    res = _fit(data, family, weights=weights, weight_type="variance", offset=offset, honest=3)
    new_data, new_w, new_offset = _data(family, n=7, seed=41)
    new = {"a": new_data["a"], "b": new_data["b"]}
    band = res.predict(new, interval="prediction", alpha=0.1, offset=new_offset, weights=new_w)
    held_out, fold_means, outer = _by_hand(res, data, weights, offset, family, new, new_offset)
    n, alpha = 90, 0.1
    lo_rank, hi_rank = int(np.floor(alpha * 91)), int(np.ceil((1 - alpha) * 91))
    for j in range(7):
        scores = np.sqrt(weights / new_w[j]) * np.abs(data["y"] - held_out)
        mu = fold_means[outer, j]
        lower = np.sort(mu - scores)[lo_rank - 1]
        expected = max(lower, 0.0) if family == "poisson" else lower
        np.testing.assert_allclose(band["lower"].iloc[j], expected, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(band["upper"].iloc[j], np.sort(mu + scores)[hi_rank - 1],
                                   rtol=1e-7)
    np.testing.assert_allclose(band["mean"], res.predict(new, offset=new_offset), rtol=1e-12)
    # a larger variance weight (smaller variance): a narrower interval, mean unchanged
    narrow = res.predict(new, interval="prediction", alpha=0.1, offset=new_offset,
                         weights=4 * new_w)
    assert np.all(narrow["upper"] - narrow["mean"] < band["upper"] - band["mean"])
    assert n == len(held_out)


def test_frequency_weighted_prediction_sets_from_the_nested_cv_rebuilt_by_hand():
    data, weights, offset = _data("binomial", n=100, seed=15)
    res = _fit(data, "binomial", weights=weights, weight_type="frequency", offset=offset,
               honest=3)
    new_data, _, new_offset = _data("binomial", n=9, seed=42)
    new = {"a": new_data["a"], "b": new_data["b"]}
    sets = res.predict(new, interval="set", alpha=0.2, offset=new_offset)
    held_out, fold_means, outer = _by_hand(res, data, weights, offset, "binomial", new,
                                           new_offset)
    # the sets' rule written out: class c is in the set when the weight of the training
    # scores strictly below its score is < ceil((1 - alpha)(N + 1)), N = sum of weights
    u_train = np.random.default_rng(3).uniform(size=100)
    u_new = row_uniforms(res.design_matrix(new), 3)
    two = np.column_stack([1 - held_out, held_out])
    train = aps_scores(two, u_train)[np.arange(100), data["y"].astype(int)]
    limit = np.ceil(0.8 * (weights.sum() + 1))
    for j in range(9):
        for c in range(2):
            probs = np.column_stack([1 - fold_means[:, j], fold_means[:, j]])
            score = aps_scores(probs, np.full(3, u_new[j]))[:, c]
            below = weights[train < score[outer]].sum()
            assert sets.iloc[j, c] == (below < limit)
    assert sets.to_numpy().sum() < 18  # not every set is both classes


def test_interval_refusals_with_weights_name_the_option():
    data, weights, offset = _data("binomial", n=80, seed=16)
    new = {"a": data["a"][:3], "b": data["b"][:3]}
    res = _fit(data, "binomial", weights=weights, weight_type="variance", honest=3)
    with pytest.raises(OptionError, match="prediction sets with variance weights"):
        res.predict(new, interval="set")
    gdata, gweights, _ = _data("gaussian", n=80, seed=16)
    counted = _fit(gdata, "gaussian", weights=gweights, weight_type="frequency", honest=3)
    with pytest.raises(OptionError, match="variance weight"):
        counted.predict(new, interval="prediction", weights=np.ones(3))
    varied = _fit(gdata, "gaussian", weights=gweights, weight_type="variance", honest=3)
    with pytest.raises(OptionError, match="leave it None"):
        varied.predict(new, weights=np.ones(3))
    with pytest.raises(OptionError, match="leave it None"):
        varied.predict(new, interval="confidence", weights=np.ones(3))


def test_variance_weighted_intervals_cover_rows_of_each_variance_at_about_the_level():
    # Rows of variance 4 and 1/4 (variance weights 1/4 and 4): unweighted CV+ gives every row
    # the same width, too narrow for the noisy rows and too wide for the quiet ones; scaled by
    # their variance weights both groups are covered at about 1 - alpha.
    import pearlstats as pearl

    def draw(n, seed):
        rng = np.random.default_rng(seed)
        a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
        w = rng.choice([0.25, 4.0], size=n)
        return {"y": a[:, 0] + rng.normal(size=n) / np.sqrt(w), "a": a, "b": b}, w

    hits = {"weighted": np.zeros(2), "plain": np.zeros(2)}
    total = np.zeros(2)
    for seed in range(6):
        (train, w), (test, new_w) = draw(150, seed), draw(200, 100 + seed)
        new = {"a": test["a"], "b": test["b"]}
        weighted = pearl.fit("y ~ block(a) + block(b)", train, weights=w,
                             weight_type="variance", seed=seed, honest=5)
        plain = pearl.fit("y ~ block(a) + block(b)", train, seed=seed, honest=5)
        bands = {"weighted": weighted.predict(new, interval="prediction", alpha=0.1,
                                              weights=new_w),
                 "plain": plain.predict(new, interval="prediction", alpha=0.1)}
        for name, band in bands.items():
            inside = ((test["y"] >= band["lower"]) & (test["y"] <= band["upper"])).to_numpy()
            hits[name] += [inside[new_w == 0.25].sum(), inside[new_w == 4.0].sum()]
        total += [(new_w == 0.25).sum(), (new_w == 4.0).sum()]
    weighted, plain = hits["weighted"] / total, hits["plain"] / total
    assert np.all((weighted >= 0.84) & (weighted <= 0.97)), weighted  # measured 0.936, 0.885
    assert plain[0] < 0.88 and plain[1] > 0.97, plain  # measured 0.855, 1.000


def test_get_prediction_checks_the_new_weights_as_predict_does():
    """get_prediction(weights=) goes through predict's check: a bad weight is refused with
    predict's message, and a Series is matched to the new rows by label."""
    import pandas as pd

    import pearlstats as pearl

    data, weights, offset = _data("gaussian", n=90, seed=21)
    frame = pd.DataFrame({"y": data["y"], "b": data["b"][:, 0]})
    res = pearl.fit("y ~ b + block(a)", frame, blocks={"a": data["a"]}, weights=weights,
                    weight_type="variance", honest=3, seed=3)
    rows = [f"n{i}" for i in range(4)]
    new = pd.DataFrame({"b": [0.1, -0.4, 1.2, 0.3]}, index=rows)
    blocks = {"a": pd.DataFrame(np.linspace(-1, 1, 8).reshape(4, 2), index=rows)}
    bad = np.array([-1.0, 5.0, 1.0, 1.0])
    with pytest.raises(PearlError, match="weights") as by_predict:
        res.predict(new, blocks, interval="prediction", weights=bad)
    with pytest.raises(type(by_predict.value)) as by_get:
        res.get_prediction(new, blocks, weights=bad).summary_frame()
    assert str(by_get.value) == str(by_predict.value)
    new_w = np.array([0.5, 2.0, 1.0, 3.0])
    shuffled = pd.Series(new_w, index=rows).iloc[[2, 0, 3, 1]]
    aligned = res.get_prediction(new, blocks, weights=new_w).summary_frame(alpha=0.1)
    by_label = res.get_prediction(new, blocks, weights=shuffled).summary_frame(alpha=0.1)
    pd.testing.assert_frame_equal(by_label, aligned)
    band = res.predict(new, blocks, interval="prediction", alpha=0.1, weights=new_w)
    np.testing.assert_allclose(aligned[["obs_ci_lower", "obs_ci_upper"]].to_numpy(),
                               band[["lower", "upper"]].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_exposure_at_predict_is_refused_outside_poisson_as_at_fit(family):
    """exposure= at predict added log(t) to an identity or logit predictor (a fit with an
    offset took it as offset=log(t)); fit refuses exposure= outside Poisson, so does predict."""
    data, weights, offset = _data(family, n=80, seed=5)
    res = _fit(data, family, offset=offset)
    new = {"a": data["a"][:2], "b": data["b"][:2]}
    for call in (lambda: res.predict(new, exposure=[1.0, 2.0]),
                 lambda: res.get_prediction(new, exposure=[1.0, 2.0]),
                 lambda: res.evaluate({"y": data["y"][:2], **new}, exposure=[1.0, 2.0])):
        with pytest.raises(OptionError, match="exposure= is for family='poisson'"):
            call()
    np.testing.assert_allclose(res.predict(new, offset=np.log([1.0, 2.0])),
                               res.predict(new, offset=[0.0, np.log(2.0)]), rtol=1e-15)


def test_new_rows_beyond_the_training_weights_or_exposure_are_warned():
    """CV+ covers new rows like the training rows: a new variance weight (or Poisson exposure)
    far above every training row's under-covers (0.57 for nominal 0.90 in a probe with weights
    thousands of times the training ones), so rows beyond twice the largest are named."""
    import warnings

    from pearlstats.exceptions import ObservationWeightWarning

    data, weights, offset = _data("gaussian", n=90, seed=21)
    res = _fit(data, "gaussian", weights=weights, weight_type="variance", honest=3)
    new = {"a": data["a"][:3], "b": data["b"][:3]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ObservationWeightWarning)
        res.predict(new, interval="prediction", weights=np.full(3, 2 * weights.max()))
    with pytest.warns(ObservationWeightWarning, match=r"2 of 3 new rows have a variance weight"):
        res.get_prediction(new, weights=[1.0, 50.0, 400.0]).summary_frame()
    pdata, pweights, poffset = _data("poisson", n=90, seed=22)
    counts = _fit(pdata, "poisson", offset=poffset, honest=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ObservationWeightWarning)
        counts.predict(new, interval="prediction", offset=np.full(3, poffset.max() + np.log(1.9)))
    with pytest.warns(ObservationWeightWarning, match=r"1 of 3 new rows have an exposure"):
        counts.predict(new, interval="prediction", exposure=[1.0, 1.0, 100.0])
