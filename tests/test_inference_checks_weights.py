"""Quick mode of the weight-uncertainty check, against a re-computation with scipy's solver."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

import pearlstats as pearl
from conftest import refused_command
from pearlstats.experiments.inference_checks import get_design
from pearlstats.experiments.inference_checks.weights import (
    SCHEMES,
    WEIGHT_DESIGNS,
    check_weight_uncertainty,
)
from pearlstats.results import bootstrap

N_DATASETS, N_BOOT = 3, 6


@pytest.fixture(scope="module")
def table():
    return check_weight_uncertainty(designs=("blocks-3",), schemes=SCHEMES,
                                    n_datasets=N_DATASETS, n_boot=N_BOOT, seed=4)


def _simplex_least_squares(P, y):
    """argmin over the simplex of mean (y - P w)^2, by scipy's SLSQP (not the package's QP)."""
    J = P.shape[1]
    result = minimize(lambda w: np.mean((y - P @ w) ** 2), np.full(J, 1.0 / J),
                      jac=lambda w: -2 * P.T @ (y - P @ w) / len(y), method="SLSQP",
                      bounds=[(0, 1)] * J,
                      constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
                      options={"ftol": 1e-14, "maxiter": 500})
    return result.x


def _data_sets():
    """The check's data sets of "blocks-3", drawn and fitted as its docstring says."""
    design = get_design("blocks")
    fits = []
    for r in range(N_DATASETS):
        state = np.random.SeedSequence(4, spawn_key=(1, r)).generate_state(1)[0]
        sample = design.sample(100, int(state))
        blocks = {name: sample.blocks[name] for name in ("a", "b")}
        fits.append((pearl.fit("y ~ x + block(a) + block(b)", sample.data, blocks=blocks,
                               cv=5, seed=r), sample))
    return fits


def test_one_row_per_design_scheme_and_candidate(table):
    assert len(table) == len(SCHEMES) * 3
    assert table[["design", "n"]].drop_duplicates().values.tolist() == [["blocks-3", 100]]
    assert table.groupby("scheme")["candidate"].apply(list).to_dict() == {
        scheme: ["a", "b", "a+b"] for scheme in SCHEMES
    }
    np.testing.assert_allclose(table["ratio"], table["mean_spread"] / table["mc_sd"])
    in_target = table["mc_mean_weight"] > 0.05
    assert (table["in_target"] == in_target).all()
    inside = table["ratio"].between(0.7, 1.3)
    assert (table.loc[in_target, "met"].astype(bool) == inside[in_target]).all()
    assert table.loc[~in_target, "met"].isna().all()
    assert table["covers_estimate"].between(0, 1).all()


def test_monte_carlo_moments_and_fixed_oof_spread_match_scipy(table):
    fits = _data_sets()
    weights = np.vstack([res.weights.to_numpy() for res, _ in fits])
    fixed = table[table["scheme"] == "fixed-oof"].set_index("candidate")
    np.testing.assert_allclose(fixed["mc_mean_weight"], weights.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(fixed["mc_sd"], weights.std(axis=0, ddof=1), atol=1e-12)
    spreads = []
    for r, (res, sample) in enumerate(fits):
        P, y = res.cv_predictions.to_numpy(), sample.data["y"].to_numpy()
        rows = np.random.default_rng(r).integers(0, len(y), size=(N_BOOT, len(y)))
        draws = np.vstack([_simplex_least_squares(P[b], y[b]) for b in rows])
        spreads.append(draws.std(axis=0, ddof=1))
    np.testing.assert_allclose(fixed["mean_spread"], np.mean(spreads, axis=0), atol=1e-5)


def test_subsample_spread_is_rescaled_refits_of_half_the_rows(table):
    res, sample = _data_sets()[0]
    m = 50
    rows, folds = bootstrap.subsample(100, m, 5, seed=0, b=2, state_folds=res.stages.folds,
                                      y=res.stages.response.y)
    assert len(rows) == m and len(np.unique(rows)) == m  # without replacement
    sub = sample.data.iloc[rows].reset_index(drop=True)
    blocks = {name: sample.blocks[name][rows] for name in ("a", "b")}
    direct = pearl.fit("y ~ x + block(a) + block(b)", sub, blocks=blocks, cv=folds, seed=0)
    draws = bootstrap.subsampling_weights(res.stages, 3, m, seed=0)
    np.testing.assert_allclose(draws[2], direct.weights.to_numpy(), atol=1e-10)


@pytest.mark.parametrize("kwargs, message", [
    ({"designs": ("nope",)}, r"designs=\['nope'\]; choose from"),
    ({"schemes": ("jackknife",)}, r"schemes=\['jackknife'\]; choose from"),
])
def test_unknown_design_or_scheme_is_an_option_error(kwargs, message):
    with pytest.raises(pearl.OptionError, match=message):
        check_weight_uncertainty(n_datasets=2, n_boot=2, **kwargs)


def test_the_designs_are_those_the_issue_names():
    counts = {}
    for name, design in WEIGHT_DESIGNS.items():
        res = design.fit(np.random.SeedSequence(0), fit_seed=0)
        counts[name] = (design.n, len(res.weights))
    assert counts == {"paper": (200, 31), "blocks-3": (100, 3), "blocks": (200, 7)}


def test_the_table_does_not_depend_on_n_jobs(table):
    parallel = check_weight_uncertainty(designs=("blocks-3",), schemes=SCHEMES,
                                        n_datasets=N_DATASETS, n_boot=N_BOOT, seed=4, n_jobs=2)
    pd.testing.assert_frame_equal(parallel, table)


@pytest.mark.parametrize("argv, message", [
    (["--designs", "bogus"], "argument --designs: invalid choice: 'bogus'"),
    (["--schemes", "jackknife"], "argument --schemes: invalid choice: 'jackknife'"),
    (["--n-datasets", "0"], "argument --n-datasets: 0 is out of range; use an integer >= 2"),
    (["--n-boot", "1"], "argument --n-boot: 1 is out of range; use an integer >= 2"),
    (["--n-jobs", "0"], "argument --n-jobs: 0 is out of range"),
    (["--out", "{tmp}/missing/w.csv"], "the folder {tmp}/missing does not exist"),
    (["--out", "{tmp}"], "--out {tmp} is a folder"),
])
def test_the_command_refuses_bad_arguments_before_computing(argv, message, tmp_path, capsys,
                                                            monkeypatch):
    # these were tracebacks (OptionError, IndexError), a bad --out only after the whole run
    from pearlstats.experiments.inference_checks import weights

    def computed(*args, **kwargs):
        raise AssertionError("computed before the arguments were checked")

    monkeypatch.setattr(weights, "check_weight_uncertainty", computed)
    printed = refused_command(weights.main, ["--out", "{tmp}/w.csv", *argv], capsys, tmp_path)
    assert message.format(tmp=tmp_path) in printed
    assert list(tmp_path.iterdir()) == []


def test_fewer_than_two_data_sets_is_an_option_error():
    # n_datasets=0 was an IndexError; 1 gave a NaN Monte Carlo SD
    for n_datasets in (0, 1, 2.0):
        with pytest.raises(pearl.OptionError, match=r"n_datasets=.*; use an int >= 2"):
            check_weight_uncertainty(n_datasets=n_datasets, n_boot=2)
