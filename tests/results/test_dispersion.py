"""Overdispersion of Poisson fits: ``res.dispersion()`` against statsmodels' GLM, and the summary's
note on it (R's ``summary.glm`` prints the dispersion a user checks first).

Real counts: the RAND health insurance experiment's doctor visits (statsmodels' ``randhie``),
whose variance is about five times their mean given the covariates.
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.exceptions import OptionError

# the same coefficients on both sides (pearlstats' Newton and statsmodels' IRLS stop within
# 1e-10 of the optimum), so the statistics differ by the optimisers' stopping points only
RTOL = 1e-7

BLOCKS = {"ins": ["lncoins", "idp", "lpi"], "health": ["physlm", "disea", "hlthg", "hlthf",
                                                        "hlthp"], "dem": ["fmde"]}


@pytest.fixture(scope="module")
def visits():
    data = sm.datasets.randhie.load_pandas().data.sample(1500, random_state=0)
    return data.reset_index(drop=True)


def _fit(data, **options):
    blocks = {name: data[columns].to_numpy() for name, columns in BLOCKS.items()}
    return pearl.fit("mdvis ~ block(ins) + block(health) + block(dem)",
                     {"mdvis": data["mdvis"].to_numpy()}, blocks=blocks, family="poisson",
                     seed=0, honest=False, **options)


def _direct(data, label):
    columns = [column for name in label.split("+") for column in BLOCKS[name]]
    exog = np.column_stack([np.ones(len(data)), data[columns].to_numpy()])
    return sm.GLM(data["mdvis"].to_numpy(), exog, family=sm.families.Poisson()).fit(tol=1e-13)


def test_dispersion_is_statsmodels_pearson_chi2_per_residual_df(visits):
    res = _fit(visits)
    table = res.dispersion()
    assert list(table.index) == list(res.weights.index[res.weights > 0])
    for label, row in table.iterrows():
        direct = _direct(visits, label)
        assert row["pearson_chi2"] == pytest.approx(direct.pearson_chi2, rel=RTOL)
        assert row["df_resid"] == direct.df_resid
        assert row["dispersion"] == pytest.approx(direct.pearson_chi2 / direct.df_resid,
                                                  rel=RTOL)
        assert row["weight"] == res.weights[label]
    assert (table["dispersion"] > 3).all() and (table["pvalue"] < 1e-10).all()


def test_the_summary_says_the_counts_are_overdispersed_and_what_does_not_assume_it(visits):
    res = _fit(visits)
    text = " ".join(str(res.summary()).split())
    mean = np.average(res.dispersion()["dispersion"], weights=res.dispersion()["weight"])
    assert f"{mean:.2f} weighted" in text and "Overdispersion" in text
    assert f"too small by a factor of about {np.sqrt(mean):.1f}" in text
    assert "robust (sandwich, HC1) covariance type does not assume it" in text
    # a paper's notes: words, no code (the convention of the summary's other notes)
    note = text[text.index("Overdispersion"):]
    assert "res." not in note and "_" not in note and "()" not in note
    # a sandwich does not assume dispersion 1: no note then
    robust = _fit(visits, cov_type="HC1")
    assert "Overdispersion" not in str(robust.summary())


def test_poisson_counts_get_no_note():
    # counts drawn from the Poisson model itself (the candidate with every block is right):
    # its Pearson statistic is within the chi-square law's bulk, so no note
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(1500, 2)), rng.normal(size=(1500, 2))
    y = rng.poisson(np.exp(0.3 + 0.4 * a[:, 0] - 0.3 * b[:, 1]))
    res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, family="poisson",
                    seed=0, honest=False)
    assert res.dispersion().loc["a+b", "pvalue"] > 0.01
    assert "Overdispersion" not in str(res.summary())


def test_other_families_are_told_why_not():
    res = pearl.datasets.example_fit()
    with pytest.raises(OptionError, match="gaussian fit estimates its scale"):
        res.dispersion()
