"""The nested-SE calibration command: what its draws keep and what its summary counts."""

import numpy as np
import pandas as pd
import pytest

from conftest import refused_command
from pearlstats.exceptions import OptionError
from pearlstats.experiments.inference_checks.nested_calibration import (
    DRAW_COLUMNS,
    calibration_draws,
    summarise,
)

OUTER = 3


@pytest.fixture(scope="module")
def draws():
    return calibration_draws(["blocks"], outer=OUTER, repeats=3, n_datasets=2, n_test=200,
                             seed=0, prefixes=(1, 3))


def test_a_run_split_across_processes_draws_the_same_data_sets(draws):
    # first= lets two processes share a run: data set 1 alone equals data set 1 of the run
    second = calibration_draws(["blocks"], outer=OUTER, repeats=3, n_datasets=2, n_test=200,
                               seed=0, prefixes=(1, 3), first=1)
    assert set(second["data_set"]) == {1}
    expected = draws[draws["data_set"] == 1].reset_index(drop=True)
    numbers = ["risk", "se", "mse", "test_risk", "ratio", "ratio_se"]
    # the same fits on the same rows: equal to rounding
    np.testing.assert_allclose(second[numbers].to_numpy(dtype=float),
                               expected[numbers].to_numpy(dtype=float), rtol=1e-12)


def test_the_draws_keep_the_naive_se_the_estimate_is_bounded_by(draws):
    assert tuple(draws.columns) == DRAW_COLUMNS
    se, naive, raw = draws["se"], draws["naive_se"], np.sqrt(
        (OUTER - 1) / OUTER * draws["mse"].clip(lower=0))
    bound = draws["se_bound"].fillna("")
    # Equalities of the same floating-point numbers: a relative 1e-12 is rounding only.
    lower, upper, inside = bound == "lower", bound == "upper", bound == ""
    assert lower.any() and upper.any() and inside.any()
    np.testing.assert_allclose(se[lower], naive[lower], rtol=1e-12)
    np.testing.assert_allclose(se[upper], np.sqrt(OUTER) * naive[upper], rtol=1e-12)
    np.testing.assert_allclose(se[inside], raw[inside], rtol=1e-12)
    assert (raw[lower] < naive[lower]).all() and (raw[upper] > se[upper]).all()
    assert (se >= naive * (1 - 1e-12)).all() and (se <= np.sqrt(OUTER) * naive * (1 + 1e-12)).all()


def test_summary_counts_misses_on_each_side_of_the_interval():
    rng = np.random.default_rng(3)
    n = 200
    risk, se = rng.uniform(1, 2, n), rng.uniform(0.05, 0.2, n)
    test = risk + rng.standard_t(3, n) * 0.15
    frame = pd.DataFrame({
        "design": "blocks", "outer": 5, "data_set": np.arange(n), "n": 100, "repeats": 5,
        "strategy": "PEARL", "risk": risk, "se": se, "mse": se**2, "bias": 0.0,
        "err_cv": risk, "naive_se": se, "se_bound": "", "se_mc_error": 0.1,
        "ratio": 1.0, "ratio_se": 0.0, "test_risk": test, "test_ratio": 1.0,
        "cpu_seconds": 1.0,
    })
    row = summarise(frame).iloc[0]
    z = (test - risk) / se
    below, above = np.mean(z < -1.959963984540054), np.mean(z > 1.959963984540054)
    assert 0 < above < 1 - row["coverage"]  # both sides miss in this draw
    assert row["miss_above"] == pytest.approx(above, abs=1e-15)
    assert row["coverage"] == pytest.approx(1 - above - below, abs=1e-15)


def test_resuming_draws_of_another_version_is_refused(tmp_path):
    old = tmp_path / "draws.csv"
    pd.DataFrame({"design": ["blocks"], "outer": [3], "data_set": [0]}).to_csv(old, index=False)
    with pytest.raises(OptionError, match="naive_se"):
        calibration_draws(["blocks"], outer=OUTER, repeats=1, n_datasets=1, n_test=50,
                          prefixes=(1,), out=old)
    assert pd.read_csv(old).shape == (1, 3)  # nothing appended


def test_mean_interval_coverage_equals_a_direct_count():
    from pearlstats.experiments.inference_checks.loss_tails import mean_interval_coverage

    losses = np.random.default_rng(5).lognormal(0.0, 1.5, 200 * 50)
    row = mean_interval_coverage(losses, 50)
    risk, hits, above = losses.mean(), 0, 0
    for start in range(0, losses.size, 50):
        sample = losses[start:start + 50]
        half = 1.959963984540054 * sample.std(ddof=1) / np.sqrt(50)
        hits += abs(sample.mean() - risk) <= half
        above += sample.mean() + half < risk
    assert row["samples"] == 200 and row["risk"] == pytest.approx(risk, rel=1e-15)
    assert row["coverage"] == hits / 200 and row["miss_above"] == above / 200
    # a right-skewed loss: the misses fall above (the mean of 50 rows usually under the risk)
    assert row["miss_above"] > 0.5 * (1 - row["coverage"]) > 0


def test_normal_losses_are_covered_at_the_nominal_rate():
    from pearlstats.experiments.inference_checks.loss_tails import mean_interval_coverage

    row = mean_interval_coverage(np.random.default_rng(6).normal(3.0, 1.0, 2000 * 100), 100)
    # 2 000 intervals: Monte Carlo SE 0.005 around 0.95 (t quantile vs 1.96 at n = 100: -0.002)
    assert abs(row["coverage"] - 0.948) < 4 * 0.005


def test_loss_tail_table_scores_the_fitted_predictor_on_fresh_rows():
    from pearlstats.experiments.inference_checks.loss_tails import loss_tail_table

    table = loss_tail_table(["blocks"], n_datasets=1, samples=50)
    # y's noise variance is 1.5^2 = 2.25, the least any predictor's risk can be; on 5 000
    # rows the mean squared error is within 3 SD (about 8 %) of its risk, and a fit of
    # 7 candidates on 100 rows adds a little: a misaligned prediction would be far above
    assert 2.25 * 0.92 < table.loc[0, "risk"] < 3.0
    with pytest.raises(OptionError, match="gaussian"):
        loss_tail_table(["logistic"], n_datasets=1, samples=2)


@pytest.mark.parametrize("argv, message", [
    (["--outer", "1"], "argument --outer: 1 is out of range; use an integer >= 2"),
    (["--outer", "101"], "--outer 101 is more folds than the 100 rows of a data set"),
    (["--repeats", "3"], "argument --repeats: 3 is out of range; use an integer >= 5"),
    (["--n-datasets", "2", "--first", "2"], "--first 2 draws nothing"),
    (["--seed", "-1"], "argument --seed: -1 is out of range"),
    (["--summarise", "{tmp}/none.csv"], "--summarise {tmp}/none.csv cannot be read"),
    (["--summarise", "{tmp}/old.csv"], "--summarise {tmp}/old.csv lacks the columns ['outer'"),
    (["--out", "{tmp}/old.csv"], "--out {tmp}/old.csv: out="),
    (["--out", "{tmp}/missing/n.csv"], "the folder {tmp}/missing does not exist"),
])
def test_the_calibration_command_refuses_bad_arguments_before_drawing(argv, message, tmp_path,
                                                                     capsys, monkeypatch):
    # these were tracebacks (OptionError, FileNotFoundError), some after a data set was drawn
    from pearlstats.experiments.inference_checks import nested_calibration

    def drawn(*args, **kwargs):
        raise AssertionError("drawn before the arguments were checked")

    monkeypatch.setattr(nested_calibration, "_one_data_set", drawn)
    pd.DataFrame({"design": ["blocks"], "data_set": [0]}).to_csv(tmp_path / "old.csv",
                                                                 index=False)
    printed = refused_command(nested_calibration.main, ["--out", "{tmp}/n.csv", *argv], capsys,
                              tmp_path)
    assert message.format(tmp=tmp_path) in printed
    assert sorted(path.name for path in tmp_path.iterdir()) == ["old.csv"]


@pytest.mark.parametrize("argv, message", [
    (["--n-datasets", "0"], "argument --n-datasets: 0 is out of range; use an integer >= 1"),
    (["--samples", "0"], "argument --samples: 0 is out of range; use an integer >= 1"),
    (["--designs", "logistic"], "argument --designs: invalid choice: 'logistic'"),
    (["--out", "{tmp}/missing/l.csv"], "the folder {tmp}/missing does not exist"),
])
def test_the_loss_tails_command_refuses_bad_arguments_and_writes_nothing(argv, message, tmp_path,
                                                                        capsys, monkeypatch):
    # --n-datasets 0 was a KeyError that left an empty l.csv behind
    from pearlstats.experiments.inference_checks import loss_tails

    monkeypatch.chdir(tmp_path)
    printed = refused_command(loss_tails.main, ["--out", "l.csv", *argv], capsys, tmp_path)
    assert message.format(tmp=tmp_path) in printed
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OptionError, match=r"n_datasets=0; use an int >= 1"):
        loss_tails.loss_tail_table(["blocks"], n_datasets=0)  # was an empty table
