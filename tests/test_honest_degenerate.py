"""Honest risks where the estimators reach their limits: a bias extrapolation below 0, risks
at the rounding level of an exact fit, too few outer folds for nested SEs, separable classes.

A risk is never reported below 0 nor a ratio of rounding noise as a finding; every ``--`` of
the summary's strategies panel says why it is there.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import pearlstats as pearl
from pearlstats.exceptions import OptionError, PearlWarning
from pearlstats.honest_se import NestedSE, nested_se
from pearlstats.nested import nested_cross_validation

FORMULA = "y ~ block(a) + block(b) + x"


def _rows(n: int, width: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    a, b, x = rng.normal(size=(n, width)), rng.normal(size=(n, 2)), rng.normal(size=n)
    return {"y": a[:, 0] + x + rng.normal(size=n), "a": a, "b": b, "x": x}


def _strategy_rows(text: str) -> list[str]:
    panel = text.split("Strategies (honest risk")[1].split("Block importance")[0]
    return [line for line in panel.splitlines()
            if re.match(r"(PEARL|MS|SA-FRL|SA-cand|Fusion|Best|Null)\b", line)]


def test_a_bias_corrected_risk_below_zero_is_reported_undefined_with_its_reason():
    # n = 30, an 8-column block: Fusion has 12 coefficients on the 18 rows of a pair's
    # training set, its inner losses dwarf the outer ones and the extrapolation overshoots
    data = _rows(30, 8, seed=1)
    res = pearl.fit(FORMULA, data, honest_se=NestedSE(1), seed=0)
    table = res.honest
    assert ((table["risk"] >= 0) | table["risk"].isna()).all()
    undefined = table.index[table["risk"].isna()]
    assert "Fusion" in undefined
    # by hand from the nested losses: Err_NCV - (1 + (K - 2)/K)(Err_NCV - Err_CV) < 0
    nested = nested_cross_validation(res.stages, outer=5, option="honest")
    estimate = nested_se(res.stages, nested, NestedSE(1))
    column = list(table.index).index("Fusion")
    K = 5
    err_cv = estimate.outer_losses[0][:, column].mean()
    inner = estimate.inner_losses[0][..., column]
    err_ncv = np.nanmean(inner)
    assert err_ncv - (1 + (K - 2) / K) * (err_ncv - err_cv) < 0
    assert f"Err_CV is {err_cv:.4g}" in table.loc["Fusion", "note"]
    assert np.isnan(table.loc["Fusion", ["ratio", "ratio_se"]].astype(float)).all()
    text = res.summary().as_text()
    assert "-0." not in "".join(_strategy_rows(text))
    assert "[1] Fusion: risk undefined" in text


def test_every_dash_in_the_strategies_panel_has_a_footnote():
    res = pearl.fit(FORMULA, _rows(30, 8, seed=1), honest=3, honest_se=NestedSE(1), seed=0)
    text = res.summary().as_text()
    for line in _strategy_rows(text):
        if "--" in line:
            mark = re.search(r"\[(\d+)\]", line)
            assert mark, line
            assert re.search(rf"^\[{mark.group(1)}\] .*{line.split()[0]}", text, re.M), line


def test_risks_at_the_rounding_level_of_an_exact_fit_give_no_ratio_and_no_warning():
    data = _rows(60, 3, seed=0)
    data["y"] = 1.0 + 0.3 * data["x"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PearlWarning)
        res = pearl.fit(FORMULA, data, seed=0)
        honest, baselines = res.honest, res.baselines
        text = res.summary().as_text()
    # the response's spread (the Null risk, about var(y) = 0.09) is resolved to sqrt(eps) of
    # it at best: every strategy's risk is below eps * 0.09, so no ratio is a finding
    for table, risk, ratio in ((honest, "risk", "ratio"), (baselines, "cv_risk", "risk_ratio")):
        strategies = table.drop(index="Null")
        assert (strategies[risk] < np.finfo(float).eps * table.loc["Null", risk]).all()
        assert strategies[ratio].isna().all()
        assert table.loc["Null", ratio] == 0.0  # PEARL exact over a real risk
        assert strategies["note"].str.contains("precision").all()
    assert "Warning" not in text and "exceeds that of MS" not in text


def test_a_nearly_exact_but_genuine_fit_keeps_its_ratios():
    data = _rows(60, 3, seed=0)
    rng = np.random.default_rng(5)
    data["y"] = 1.0 + 0.3 * data["x"] + 1e-6 * rng.normal(size=60)
    res = pearl.fit(FORMULA, data, seed=0, honest=False)
    table = res.baselines
    # the ratio is the quotient of the CV risks, computed here from the table's own risks
    np.testing.assert_allclose(table["risk_ratio"],
                               table.loc["PEARL", "cv_risk"] / table["cv_risk"], rtol=1e-12)
    assert (table["note"] == "").all()


def test_nested_ses_with_two_outer_folds_are_refused_at_fit():
    with pytest.raises(OptionError, match=r"honest=2 .*needs honest >= 3"):
        pearl.fit(FORMULA, _rows(40, 2, seed=0), honest=2, honest_se="nested", seed=0)


def test_the_honest_failure_is_known_without_reading_res_honest_first():
    rng = np.random.default_rng(0)
    y = np.zeros(60)
    y[7] = 1.0  # every outer training set but one is all zeros
    res = pearl.fit("y ~ block(a) + block(b)",
                    {"y": y, "a": rng.normal(size=(60, 2)), "b": rng.normal(size=(60, 2))},
                    seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "constant" in res.honest_failure
    # said to be in an outer fold's re-run (the fit itself ran), with K-fold advice
    assert re.search(r"^in outer fold \d of 5, re-running the procedure on its 48 training rows",
                     res.honest_failure)
    assert "more outer folds give larger outer training sets (honest=6" in res.honest_failure
    with pytest.warns(PearlWarning, match="could not run"):
        assert res.honest is None


def test_a_separable_fit_summary_divides_no_zero_by_zero():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    y = (a[:, 0] > 0).astype(float)
    a[:, 0] += 4 * (2 * y - 1)  # block a separates the classes by a margin: hinge risks 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PearlWarning)
        res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
                        family="binomial", loss="hinge", seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            res.summary().as_text()
