"""Quick mode of the coefficient-coverage check (issue 28): its table, and one coverage
recomputed independently (statsmodels fits of the weighted candidates, Burnham & Anderson's
eq. 6.12 with each candidate's t quantile, by hand)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

import pearlstats as pearl
from pearlstats.exceptions import OptionError
from pearlstats.experiments.inference_checks import get_design
from pearlstats.experiments.inference_checks.coefficients import (
    check_coefficients,
    coverage_table,
    markdown_report,
)

N, DATASETS, SEED = 60, 4, 3


@pytest.fixture(scope="module")
def table():
    return check_coefficients(designs=("blocks",), sizes=(N,), n_datasets=DATASETS, seed=SEED)


def test_table_has_one_row_per_design_size_and_term(table):
    assert list(table.columns) == [
        "design", "n", "term", "coverage", "mc_se", "n_datasets", "target_low", "target_high",
        "met", "coverage_eq49", "se_ratio", "coverage_hc3", "coverage_joint_hc3"]
    assert table[["design", "n", "term"]].to_numpy().tolist() == [
        ["blocks", N, "Intercept"], ["blocks", N, "x"]]
    assert (table["n_datasets"] == DATASETS).all()
    assert (table["target_low"] == 0.93).all() and (table["target_high"] == 0.97).all()
    p = table["coverage"]
    np.testing.assert_allclose(table["mc_se"], np.sqrt(p * (1 - p) / DATASETS))
    assert table["met"].tolist() == ((p >= 0.93) & (p <= 0.97)).tolist()
    # eq. 4.9 SEs are never larger than eq. 6.12's, so their intervals cover no more often.
    assert (table["coverage_eq49"] <= table["coverage"]).all()


def _hand_interval(design, data_seed, fit_seed, cov_type="nonrobust"):
    """The 95% interval for x: weights from the fit, everything else by hand (the candidates'
    OLS with *cov_type*)."""
    sample = design.sample(N, data_seed)
    res = pearl.fit(design.formula, sample.data, blocks=sample.blocks, seed=fit_seed % 2**31)
    w = {label: float(v) for label, v in res.weights.items() if v > 0}
    fits = {}
    for label in w:
        columns = [np.ones(N), sample.data["x"].to_numpy()]
        columns += [sample.blocks[name] for name in label.split("+")]
        fitted = sm.OLS(sample.data["y"].to_numpy(), np.column_stack(columns)).fit()
        fits[label] = (fitted if cov_type == "nonrobust"
                       else fitted.get_robustcov_results(cov_type))
    z = stats.norm.ppf(0.975)
    b = {j: float(f.params[1]) for j, f in fits.items()}
    s = {j: float(f.bse[1]) * stats.t.ppf(0.975, f.df_resid) / z for j, f in fits.items()}
    mean = sum(w[j] * b[j] for j in w)
    se = math.sqrt(sum(w[j] * (s[j] ** 2 + (b[j] - mean) ** 2) for j in w))
    return mean - z * se, mean + z * se


def test_one_coverage_agrees_with_an_independent_computation(table):
    design = get_design("blocks")
    # run_grid gives repetition r of the only setting the r-th child of SeedSequence(seed).
    children = np.random.SeedSequence(SEED).spawn(DATASETS)
    covered, covered_hc3 = [], []
    for child in children:
        data_seed, fit_seed = (int(v) for v in child.generate_state(2))
        lower, upper = _hand_interval(design, data_seed, fit_seed)
        covered.append(lower <= design.true_params["x"] <= upper)
        lower, upper = _hand_interval(design, data_seed, fit_seed, "HC3")
        covered_hc3.append(lower <= design.true_params["x"] <= upper)
    row = table[table["term"] == "x"].iloc[0]
    assert row["coverage"] == pytest.approx(np.mean(covered), abs=1e-12)
    assert row["coverage_hc3"] == pytest.approx(np.mean(covered_hc3), abs=1e-12)


def test_coverage_table_counts_by_hand():
    runs = pd.DataFrame({
        "design": ["d"] * 5, "n": [10] * 5, "term": ["x"] * 5,
        "estimate": [1.0, 2.0, 3.0, 4.0, 5.0], "se": [1.0] * 5, "se_eq49": [0.9] * 5,
        "covered": [True, True, True, False, True],
        "covered_eq49": [True, False, True, False, True]})
    out = coverage_table(runs).iloc[0]
    assert out["coverage"] == 0.8 and out["coverage_eq49"] == 0.6
    assert out["mc_se"] == pytest.approx(math.sqrt(0.8 * 0.2 / 5))
    assert out["se_ratio"] == pytest.approx(1.0 / np.std([1, 2, 3, 4, 5], ddof=1))
    assert not out["met"]
    text = markdown_report(coverage_table(runs), "python -c ...")
    assert "python -c ..." in text and "NOT met" in text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"designs": ("nope",)}, "design='nope' is not known"),
    ({"sizes": (5,)}, "at least 20 rows"),
    ({"n_datasets": 1}, "at least 2 data sets"),
])
def test_bad_arguments_are_option_errors(kwargs, message):
    with pytest.raises(OptionError, match=message):
        check_coefficients(**kwargs)
