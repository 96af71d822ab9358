"""The refitting bootstrap of the weights against independent re-fits of the resampled rows."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from conftest import overlapping_binomial
from pearlstats.design.folds import make_folds

N = 60
FORMULA = "y ~ block(a) + block(b)"


def _rows(n=N, seed=0, family="gaussian"):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    signal = a[:, 0] + b[:, 1]
    if family == "binomial":
        y = (signal + rng.normal(size=n) > 0).astype(float)
    else:
        y = signal + rng.normal(size=n)
    return pd.DataFrame({"y": y}), {"a": a, "b": b}


@pytest.fixture(scope="module")
def data():
    return _rows()


@pytest.fixture(scope="module")
def res(data):
    frame, blocks = data
    return pearl.fit(FORMULA, frame, blocks=blocks, seed=3)


def _documented_resample(n, seed, b, n_folds=None, strata=None, labels=None):
    """Rows and folds of resample b as the docstring describes them, written out here."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(b + 1)[b])
    if labels is not None:  # a cluster bootstrap: whole label groups, drawn until two differ
        names = np.unique(labels)
        while len(set(chosen := rng.integers(0, len(names), len(names)))) < 2:
            pass
        rows = np.concatenate([np.flatnonzero(labels == names[g]) for g in chosen])
        return rows, labels[rows]
    if strata is None:
        rows = rng.integers(0, n, size=n)
    else:  # a class response: each class's rows drawn from its own, in class order
        members = [np.flatnonzero(strata == c) for c in np.unique(strata)]
        rows = np.concatenate([rng.choice(m, size=m.size) for m in members])
    distinct, position = np.unique(rows, return_inverse=True)
    if n_folds is None:  # leave one original row out
        return rows, position
    folds = make_folds(
        n_folds, distinct.size, seed=rng, strata=None if strata is None else strata[distinct]
    )
    return rows, folds[position]


def _refit(frame, blocks, rows, folds, **kwargs):
    """pearl.fit on the resample's rows with the resample's folds."""
    sub = frame.iloc[rows].reset_index(drop=True)
    sub_blocks = {name: values[rows] for name, values in blocks.items()}
    return pearl.fit(FORMULA, sub, blocks=sub_blocks, cv=folds, seed=0, **kwargs).weights


def test_a_resample_is_pearl_fit_on_its_rows_with_its_folds(data, res):
    frame, blocks = data
    boot = res.resample_weights("bootstrap", n_resamples=4, seed=11, refit=True)
    assert (
        list(boot.columns) == [f"boot {b}" for b in range(4)]
        and list(boot.index) == res.candidate_labels
    )
    for b in (0, 3):
        rows, folds = _documented_resample(N, 11, b, n_folds=5)
        # copies of a row share its fold, so no row validates itself
        assert all(np.unique(folds[rows == r]).size == 1 for r in np.unique(rows))
        expected = _refit(frame, blocks, rows, folds)
        np.testing.assert_allclose(boot[f"boot {b}"], expected, rtol=0, atol=1e-10)
    # the candidates were refitted: re-solving the stored predictions on the same rows differs
    rows, _ = _documented_resample(N, 11, 0, n_folds=5)
    P, y = res.cv_predictions.to_numpy(), frame["y"].to_numpy()
    stored = pearl.weights.solve_weights(P[rows], y[rows], res.stages.loss).weights
    assert np.abs(stored - boot["boot 0"].to_numpy()).max() > 1e-3


def test_a_resample_repeats_the_fits_shrinkage(data):
    # A fit with shrinkage toward SA-FRL: every resample is pearl.fit with the same option on
    # its rows and folds, not the plain weight stage.
    frame, blocks = data
    options = {"weight_shrinkage": 0.5, "shrinkage_target": "single-block"}
    shrunk = pearl.fit(FORMULA, frame, blocks=blocks, seed=3, honest=False, **options)
    boot = shrunk.resample_weights("bootstrap", n_resamples=2, seed=11, refit=True)
    for b in (0, 1):
        rows, folds = _documented_resample(N, 11, b, n_folds=5)
        expected = _refit(frame, blocks, rows, folds, honest=False, **options)
        np.testing.assert_allclose(boot[f"boot {b}"], expected, rtol=0, atol=1e-10)
        plain = _refit(frame, blocks, rows, folds, honest=False)
        assert np.abs(plain - expected).max() > 1e-3


def test_a_resample_chooses_its_separation_ridges_on_its_own_rows():
    # The fit's CV holds rows 16 and 22 out together, so s and a+s separate and get ridge 1e-4;
    # each resample is pearl.fit on its rows with its folds, which chooses its own ridges (none
    # for s in resamples 0 and 1, whose folds keep the two rows apart), not the fit's.
    y, blocks = overlapping_binomial(N)
    frame = pd.DataFrame({"y": y})
    options = {"family": "binomial", "honest": False}
    with pytest.warns(pearl.SeparationWarning):
        res = pearl.fit("y ~ block(a) + block(s)", frame, blocks=blocks, seed=1, **options)
    assert res.stages.family.candidate_ridges == {"s": 1e-4, "a+s": 1e-4}
    boot = res.resample_weights("bootstrap", n_resamples=4, seed=6, refit=True)
    chosen = []
    for b in range(4):
        rows, folds = _documented_resample(N, 6, b, n_folds=5, strata=y.astype(int))
        sub_blocks = {name: values[rows] for name, values in blocks.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pearl.SeparationWarning)
            refit = pearl.fit("y ~ block(a) + block(s)", frame.iloc[rows].reset_index(drop=True),
                              blocks=sub_blocks, cv=folds, seed=0, **options)
        chosen.append(dict(refit.stages.family.candidate_ridges))
        np.testing.assert_allclose(boot[f"boot {b}"], refit.weights, rtol=0, atol=1e-10)
    assert {} in chosen and {"a+s": 1e-4} in chosen  # resamples that do not need the fit's ridges


def test_binomial_folds_are_stratified_on_the_distinct_rows():
    frame, blocks = _rows(80, seed=5, family="binomial")
    res = pearl.fit(FORMULA, frame, blocks=blocks, family="binomial", cv=4, seed=1)
    boot = res.resample_weights("bootstrap", n_resamples=2, seed=2, refit=True)
    rows, folds = _documented_resample(
        80, 2, 1, n_folds=4, strata=frame["y"].to_numpy().astype(int)
    )
    expected = _refit(frame, blocks, rows, folds, family="binomial")
    np.testing.assert_allclose(boot["boot 1"], expected, rtol=0, atol=1e-10)


def test_loo_leaves_out_every_copy_and_given_labels_are_kept(data):
    frame, blocks = data
    loo = pearl.fit(FORMULA, frame, blocks=blocks, cv="loo", seed=0)
    rows, folds = _documented_resample(N, 4, 1)
    np.testing.assert_allclose(
        loo.resample_weights("bootstrap", n_resamples=2, seed=4, refit=True)["boot 1"],
        _refit(frame, blocks, rows, folds),
        rtol=0,
        atol=1e-10,
    )
    labels = np.repeat(["g1", "g2", "g3"], N // 3)
    grouped = pearl.fit(FORMULA, frame, blocks=blocks, cv=labels, seed=0)
    rows, folds = _documented_resample(N, 4, 0, labels=labels)
    np.testing.assert_allclose(
        grouped.resample_weights("bootstrap", n_resamples=2, seed=4, refit=True)["boot 0"],
        _refit(frame, blocks, rows, folds),
        rtol=0,
        atol=1e-10,
    )


def test_given_labels_resample_whole_groups():
    # Rows sharing a label are one group: a resample holds each drawn group whole (all its
    # rows, as often as the group was drawn), and its weights are pearl.fit on those rows
    # with cv= their labels.
    frame, blocks = _rows(48, seed=2)
    labels = np.repeat([f"p{i}" for i in range(8)], 6)
    grouped = pearl.fit(FORMULA, frame, blocks=blocks, cv=labels, seed=0, honest=False)
    boot = grouped.resample_weights("bootstrap", n_resamples=6, seed=11, refit=True)
    for b in range(6):
        rows, folds = _documented_resample(48, 11, b, labels=labels)
        counts = pd.Series(rows).value_counts()
        for name in set(labels[rows]):
            members = np.flatnonzero(labels == name)
            assert counts[members].nunique() == 1  # every row of a drawn group, equally often
        assert len(rows) % 6 == 0 and len(set(labels[rows])) >= 2
        np.testing.assert_allclose(boot[f"boot {b}"], _refit(frame, blocks, rows, folds),
                                   rtol=0, atol=1e-10)


def test_same_seed_same_weights_and_resample_b_does_not_depend_on_their_number(res):
    first = res.resample_weights("bootstrap", n_resamples=5, seed=8, refit=True)
    pd.testing.assert_frame_equal(
        first, res.resample_weights("bootstrap", n_resamples=5, seed=8, refit=True)
    )
    pd.testing.assert_frame_equal(
        first.iloc[:, :3], res.resample_weights("bootstrap", 3, 8, refit=True)
    )
    assert not first.equals(res.resample_weights("bootstrap", n_resamples=5, seed=9, refit=True))
    pd.testing.assert_frame_equal(
        res.resample_weights("bootstrap", 3, refit=True),
        res.resample_weights("bootstrap", 3, res.seed, refit=True),
    )
    # refit implies the bootstrap
    pd.testing.assert_frame_equal(
        res.resample_weights(n_resamples=3, seed=8, refit=True), first.iloc[:, :3]
    )


def test_weights_do_not_depend_on_n_jobs(res):
    serial = res.resample_weights("bootstrap", n_resamples=6, seed=1, refit=True)
    pd.testing.assert_frame_equal(
        serial, res.resample_weights("bootstrap", n_resamples=6, seed=1, refit=True, n_jobs=2)
    )


def test_weight_uncertainty_is_the_refitting_bootstraps_distribution_not_an_se(res):
    table = res.weight_uncertainty(n_resamples=20, alpha=0.1, seed=5)
    boot = res.resample_weights("bootstrap", n_resamples=20, seed=5, refit=True).to_numpy()
    # named for what they are: no sd / se column, no "interval" (issue 28)
    assert list(table.columns) == ["weight", "mean", "spread", "q_lower", "q_upper"]
    pd.testing.assert_series_equal(table["weight"], res.weights, check_names=False)
    np.testing.assert_allclose(table["mean"], boot.sum(axis=1) / 20, rtol=1e-12)
    centred = boot - boot.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(table["spread"], np.sqrt((centred**2).sum(axis=1) / 19),
                               rtol=1e-12)
    ordered = np.sort(boot, axis=1)  # 5 % and 95 % of 20 values: positions 0.95 and 18.05
    np.testing.assert_allclose(
        table["q_lower"], ordered[:, 0] + 0.95 * (ordered[:, 1] - ordered[:, 0]), atol=1e-14
    )
    np.testing.assert_allclose(
        table["q_upper"], ordered[:, 18] + 0.05 * (ordered[:, 19] - ordered[:, 18]), atol=1e-14
    )
    assert {key: table.attrs[key] for key in ("n_resamples", "alpha", "seed")} == {
        "n_resamples": 20, "alpha": 0.1, "seed": 5,
    }
    # every re-run's weight solve recorded its certified gap
    assert sorted(table.attrs["kkt_gap"]) == sorted(f"boot {b}" for b in range(20))
    assert table.attrs["uncertified"] == []
    assert res.last_weight_uncertainty is table


def test_fold_table_reports_a_spread_not_an_sd(res):
    assert list(res.diagnostics["stability"].columns) == ["weight", "mean", "spread"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"refit": "yes"}, "refit='yes'; use True"),
        ({"method": "folds", "refit": True}, "refit=True needs method='bootstrap'"),
        ({"method": "jackknife"}, "method='jackknife'; use 'folds'"),
        ({"refit": True, "n_resamples": 1}, "n_resamples=1; use an int >= 2"),
        ({"refit": True, "n_resamples": 2.5}, "n_resamples=2.5"),
        ({"refit": True, "seed": -1}, "seed=-1; use an int in \\[0, 2\\*\\*63\\)"),
        ({"refit": True, "n_jobs": 0}, "n_jobs=0"),
    ],
)
def test_bad_resample_arguments_are_option_errors(res, kwargs, message):
    kwargs = {"method": "bootstrap", **kwargs}
    with pytest.raises(pearl.OptionError, match=message):
        res.resample_weights(**kwargs)


@pytest.mark.parametrize("alpha", [0, 1, 1.5, True, "0.05", None])
def test_bad_alpha_is_an_option_error(res, alpha):
    with pytest.raises(pearl.OptionError, match="alpha=.*use a number in \\(0, 1\\)"):
        res.weight_uncertainty(n_resamples=2, alpha=alpha)


def test_resamples_that_draw_a_rare_class_once_are_recorded_and_the_others_kept():
    frame, blocks = _rows(30, seed=2, family="binomial")
    frame["y"] = 0.0
    frame.loc[[3, 17, 25], "y"] = 1.0  # three positives: some resample keeps at most one of them
    res = pearl.fit(FORMULA, frame, blocks=blocks, family="binomial", cv=3, seed=0, ridge=1.0)
    with pytest.warns(pearl.ResampleFailureWarning, match=r"of the 30 bootstrap resamples"):
        boot = res.resample_weights("bootstrap", n_resamples=30, seed=0, refit=True)
    failed = boot.attrs["failed"]
    y = frame["y"].to_numpy().astype(int)
    for b in range(30):
        rows, folds = _documented_resample(30, 0, b, n_folds=3, strata=y)
        positives = np.unique(rows[y[rows] == 1]).size
        # stratified: every resample has the fit's three positives, and fails exactly when
        # they are one row drawn three times (probability 3 (1/3)^3 = 1/9 per resample)
        assert y[rows].sum() == 3
        if positives < 2:
            assert re.search(rf"bootstrap resample {b} \(seed 0\).*only one row",
                             failed[f"boot {b}"])
            assert f"boot {b}" not in boot.columns
        else:
            assert f"boot {b}" not in failed
            np.testing.assert_allclose(boot[f"boot {b}"],
                                       _refit(frame, blocks, rows, folds, family="binomial",
                                              ridge=1.0), rtol=0, atol=1e-10)
    assert 0 < len(failed) < 30 and boot.shape[1] == 30 - len(failed)
    with pytest.warns(pearl.ResampleFailureWarning):
        table = res.weight_uncertainty(n_resamples=30, seed=0)
    assert table.attrs["n_failed"] == len(failed) and table.attrs["n_resamples"] == boot.shape[1]
    np.testing.assert_allclose(table["mean"], boot.mean(axis=1), atol=1e-12)


def test_a_single_fitted_resample_says_its_spread_is_undefined():
    """When failures leave one resample fitted the spread is NaN: the warning says why (the
    table came back with NaN and no reason). The seed is one where, by the documented
    resample rule, exactly one of two resamples keeps a single positive row."""
    frame, blocks = _rows(30, seed=2, family="binomial")
    frame["y"] = 0.0
    frame.loc[[3, 17, 25], "y"] = 1.0
    y = frame["y"].to_numpy().astype(int)

    def lonely(seed, b):
        rows, _ = _documented_resample(30, seed, b, n_folds=3, strata=y)
        return np.unique(rows[y[rows] == 1]).size < 2

    seed = next(s for s in range(500) if lonely(s, 0) != lonely(s, 1))
    res = pearl.fit(FORMULA, frame, blocks=blocks, family="binomial", cv=3, seed=0, ridge=1.0)
    with pytest.warns(pearl.ResampleFailureWarning, match="only 1 was fitted, so the spread"):
        table = res.weight_uncertainty(n_resamples=2, seed=seed)
    assert table["spread"].isna().all() and table.attrs["n_resamples"] == 1


def test_a_rare_class_keeps_its_rows_in_every_multinomial_resample():
    # 5 of 150 rows in class "r": an unstratified resample lost the class or kept one row of it
    # (then every resample done was lost with a ResponseError); stratified, each class's rows
    # are drawn from its own, so the class has its 5 draws and at least 2 distinct rows but
    # with probability 5 (1/5)^5 = 0.0016 per resample
    rng = np.random.default_rng(0)
    blocks = {"a": rng.normal(size=(150, 2)), "b": rng.normal(size=(150, 1))}
    frame = pd.DataFrame({"y": np.repeat(["p", "q", "r"], [70, 75, 5])})
    res = pearl.fit(FORMULA, frame, blocks=blocks, family="multinomial", honest=False, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pearl.ResampleFailureWarning)
        table = res.weight_uncertainty(n_resamples=8, seed=0)
    assert table.attrs["n_resamples"] == 8 and table.attrs["n_failed"] == 0
    codes = res.stages.response.y
    for b in range(8):
        rows, _ = _documented_resample(150, 0, b, n_folds=5, strata=codes)
        assert np.bincount(codes[rows]).tolist() == [70, 75, 5]


def test_when_every_resample_fails_the_first_failure_keeps_its_ledger(res, monkeypatch):
    """All resamples failing with AllCandidatesFailedError: the error raised names the count
    and keeps the first resample's failure ledger (not only its message)."""
    from pearlstats.exceptions import AllCandidatesFailedError
    from pearlstats.results import bootstrap

    ledger = pd.DataFrame({"candidate": ["a"], "fold": [0], "stage": ["fit"],
                           "reason": ["singular"], "action": ["dropped"]})

    def fail(*args, **kwargs):
        raise AllCandidatesFailedError("every candidate failed", ledger)

    monkeypatch.setattr(bootstrap, "refit_weights", fail)
    with pytest.raises(AllCandidatesFailedError, match="none of the 3 bootstrap") as raised:
        res.weight_uncertainty(n_resamples=3)
    assert raised.value.failures is ledger
