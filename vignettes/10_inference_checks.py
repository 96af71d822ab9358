# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Is the inference calibrated? Coverage and spread checks by simulation
#
# pearlstats prints three kinds of uncertainty: 95% intervals for the averaged coefficients,
# a resampling distribution of the weights, and a standard error beside each honest risk. Each is
# computed correctly from its formula, but a referee asks a different question: **over many data
# sets, do the intervals cover the truth as often as they claim?** This vignette answers it by
# simulation on four designs (`pearlstats.experiments.inference_checks.designs`):
#
# - `paper`: the paper's Section 4.1 regression with its five learned representations (PCA and
#   four kernel PCAs, 31 candidates) plus a covariate `x` with coefficient 1;
# - `blocks`: y = x + 0.6 a₀ + 0.4 b₀ + 0.3 c₁ + 1.5 ε with three two-column blocks (7 candidates);
# - `heteroscedastic`: the same mean, with a noise SD that grows with |x|;
# - `t3`: the same mean, Student-t noise with 3 degrees of freedom (heavy tails).
#
# Each check prints its target and whether it is **met** or **not met**. Targets not met are
# reported as such, here and in the README: they say where an interval should not be trusted.
#
# **Full run:** 30 minutes on two cores (measured on a loaded machine; 400 data sets per coverage
# figure). It writes `results/inference_checks_*.csv`, which reproduced the committed tables
# exactly (the honest table to its six printed digits); the committed full-run tables, with a
# reading of each, are `vignettes/results/inference_checks_coefficients.md`,
# `inference_checks_weights.md` and `inference_checks_honest.md`. In quick mode (the tests and the
# documentation) each check runs on a handful of data sets, so its numbers and verdicts are noisy
# and illustrate the code only.

# %%
import matplotlib.pyplot as plt
import numpy as np

from pearlstats.experiments import run_settings
from pearlstats.experiments.inference_checks.coefficients import check_coefficients
from pearlstats.experiments.inference_checks.honest import check_honest_se
from pearlstats.experiments.inference_checks.weights import check_weight_uncertainty

# PEARLSTATS_QUICK=1: the reduced run that the tests and the docs execute; results go to
# $PEARLSTATS_RESULTS, else results/ here (quick runs: a temp folder); every core for a full run
QUICK, RESULTS, N_JOBS = run_settings()


def verdict(met) -> str:
    return "met" if bool(met) else "NOT met"


# %% [markdown]
# ## 1. Coefficients: the terms in every candidate
# `res.params`, `res.bse` and `res.conf_int()` report the intercept and the formula's covariates,
# the terms every candidate contains, averaged with the PEARL weights; the SE is Burnham &
# Anderson's revised formula (eq. 6.12, MuMIn's default). Target: the 95% interval covers the true
# coefficient 93–97% of the time, at n = 100 and n = 400 (400 data sets: Monte Carlo SE about 1
# point). The classical rows (`coverage`) sit beside the HC3 ones: `coverage_hc3` is the same SE
# with each candidate's HC3 covariance (`res.get_robustcov("HC3")`, nothing refitted), and
# `coverage_joint_hc3` the interval of `t_test` with the candidates' joint HC3 covariance
# (`cov_params()`, weights fixed, no spread between candidates added).

# %%
ALL_DESIGNS = ("paper", "blocks", "heteroscedastic", "t3")
coefficients = check_coefficients(
    designs=("blocks", "heteroscedastic") if QUICK else ALL_DESIGNS,
    sizes=(100,) if QUICK else (100, 400),
    n_datasets=10 if QUICK else 400,
    seed=28,
    n_jobs=N_JOBS,
)
coefficients.to_csv(RESULTS / "inference_checks_coefficients.csv", index=False)
shown = coefficients[["design", "n", "term", "coverage", "mc_se", "coverage_eq49", "se_ratio",
                      "coverage_hc3", "coverage_joint_hc3"]]
print(shown.assign(target="0.93-0.97", verdict=coefficients["met"].map(verdict))
      .round(3).to_string(index=False))

# %% [markdown]
# Block columns are not in this table: a block column means different things in candidates with
# different other blocks, and its full average's interval covered only 0.67–0.82 of the time at
# n = 100 when pearlstats reported it. They are reported per candidate (`res.candidate_params()`)
# or averaged without an interval (`res.coef_table(terms="all", average="conditional")`).
#
# ## 2. Weights: is a resampling spread their sampling SD?
# Three schemes re-estimate the weights on resampled data: the refitting bootstrap (`refit`, what
# `res.weight_uncertainty()` does), m-out-of-n subsampling (`subsample`, m = n/2) and a bootstrap
# of the weight problem with the candidates' fits held fixed (`fixed-oof`). Weights sit on the
# simplex's boundary, where the plain bootstrap is not consistent (Andrews 2000). Target: for every
# candidate whose Monte Carlo mean weight exceeds 0.05, the mean spread is 0.7–1.3 times the
# Monte Carlo SD of the weight over data sets, on every design.

# %%
weights = check_weight_uncertainty(
    designs=("blocks-3",) if QUICK else ("paper", "blocks-3", "blocks"),
    n_datasets=8 if QUICK else 400,
    n_boot=8 if QUICK else 100,
    seed=0,
    n_jobs=N_JOBS,
)
weights.to_csv(RESULTS / "inference_checks_weights.csv", index=False)
in_target = weights[weights["in_target"]]
by_scheme = in_target.groupby(["design", "scheme"]).agg(
    min_ratio=("ratio", "min"), max_ratio=("ratio", "max"), candidates=("ratio", "size"),
    met=("met", "all"), intervals_contain_estimate=("covers_estimate", "min"))
print(by_scheme.assign(verdict=by_scheme["met"].map(verdict)).round(3).to_string())
every_design = in_target.groupby("scheme")["met"].all()
print("\nscheme within 0.7-1.3 on every design:",
      ", ".join(f"{scheme} {verdict(ok)}" for scheme, ok in every_design.items()))

# %% [markdown]
# In the full run no scheme met the target on all three designs (the refitting bootstrap and
# subsampling overstate the spread of small weights on the block designs, the fixed-fit bootstrap
# understates it on the paper's), so pearlstats presents `weight_uncertainty` as the **bootstrap
# distribution of the procedure**: its mean, spread and quantiles, not a standard error.
#
# ## 3. Honest risks: does ±1.96 SE cover the test risk?
# `res.honest` re-runs the whole procedure in outer folds. Its default SE (`honest_se="naive"`)
# treats the held-out rows as independent; `honest_se="nested"` uses the nested cross-validation of
# Bates, Hastie & Tibshirani (2023). The truth for one data set is the test risk of the fitted
# strategy on 5 000 fresh rows. Target: ±1.96 SE covers it 92–99% of the time at n = 100.

# %%
honest = check_honest_se(
    designs=("blocks",) if QUICK else ("paper", "heteroscedastic", "t3", "blocks"),
    n=100,
    n_datasets=6 if QUICK else 400,
    n_test=500 if QUICK else 5000,
    seed=20261125,
    n_jobs=N_JOBS,
    repeats=1 if QUICK else 5,
)
honest.to_csv(RESULTS / "inference_checks_honest.csv", index=False)
coverage = honest.pivot_table(index=["design", "strategy"], columns="se_method",
                              values="coverage", sort=False)
print(coverage.assign(target="0.92-0.99",
                      naive_verdict=coverage["naive"].between(0.92, 0.99).map(verdict),
                      nested_verdict=coverage["nested"].between(0.92, 0.99).map(verdict))
      .round(3).to_string())

# %% [markdown]
# ### The nested SE at its default number of splits
# The table above is at R = 5 splits; `NestedSE()` defaults to more. Split r of the nested CV
# depends only on the fit's seed and r, so one fit with R splits gives the estimate at every
# smaller R too (`res.nested_se.using(r)`), and
# `pearlstats.experiments.inference_checks.nested_calibration` measures, per design, number of
# outer folds K and R: coverage of the test risk (target 0.93–0.98), mean SE / SD of the risk
# estimate over data sets (`se_over_sd`, target 0.8–1.25), mean SE / RMS of risk − test risk
# (`se_over_rmse`: the spread the SE describes, since the target varies over data sets too), how
# often the naive lower bound sets the SE (`clip_lower`), how often the raw MSE estimate is
# negative, and the CPU seconds of one fit. It is a command (hours of CPU, resumable); the full run
# summarises the draws it committed (`results/nested_se_calibration.md` says how they were made),
# the quick run draws a few data sets itself.

# %%
from pearlstats.experiments.inference_checks.nested_calibration import (  # noqa: E402
    calibration_draws,
    summarise,
)

if QUICK:
    draws = calibration_draws(["blocks"], outer=3, repeats=2, n_datasets=3, n_test=300,
                              prefixes=(1, 2))
else:
    import pandas as pd

    draws = pd.read_csv(RESULTS / "nested_se_draws.csv.gz", keep_default_na=False,
                        na_values=["", "nan", "NaN"])
calibration = summarise(draws)
calibration.to_csv(RESULTS / "nested_se_calibration.csv", index=False, float_format="%.6g")
shown = calibration[calibration["strategy"].isin(["PEARL", "MS", "Fusion"])]
print(shown[["design", "outer", "repeats", "strategy", "n_datasets", "coverage", "se_over_sd",
             "se_over_rmse", "clip_lower", "negative_mse", "cpu_seconds"]]
      .assign(verdict=shown["met"].map(verdict)).round(3).to_string(index=False))

# %% [markdown]
# Where the nested SE under-covers (the paper's design, t₃ noise), ask what the best interval of
# its kind could do: fix the predictor PEARL fitted on one data set, draw n = 100 fresh rows again
# and again, and cover its risk by the mean loss of the 100 rows ± 1.96 SD / √100 (no selection,
# no cross-validation, independent rows). On designs whose squared errors have a long right tail
# even this oracle misses, always above: the mean of 100 rows is usually below the risk
# (`median_ratio`), and no SE from those rows can know it.

# %%
import pandas as pd  # noqa: E402

from pearlstats.experiments.inference_checks.loss_tails import loss_tail_table  # noqa: E402

if QUICK:
    tails = loss_tail_table(["blocks"], n_datasets=1, samples=50)
else:
    tails = pd.read_csv(RESULTS / "nested_se_loss_tails.csv")
print(tails.groupby("design")[["skewness", "coverage", "miss_above", "median_ratio"]]
      .mean().round(3).to_string())

# %% [markdown]
# ## The three checks at a glance
# Each dot is one coverage or ratio with its Monte Carlo SE where it has one; the band is the
# target.

# %%
in_target = in_target.sort_values(["scheme", "design", "candidate"], kind="stable")
rows_shown = max(len(coefficients), len(in_target) // 3, len(honest) // 2)
fig, axes = plt.subplots(1, 3, figsize=(11, max(3.8, 1.4 + 0.2 * rows_shown)),
                         layout="constrained")
ax = axes[0]
labels = [f"{d} n={n} {t}" for d, n, t in coefficients[["design", "n", "term"]].to_numpy()]
ax.errorbar(coefficients["coverage"], np.arange(len(labels)), xerr=coefficients["mc_se"],
            fmt="o", color="C0")
ax.axvspan(0.93, 0.97, color="C2", alpha=0.2, label="target")
ax.set_yticks(np.arange(len(labels)), labels, fontsize=7)
ax.set_xlabel("coverage of 95% intervals")
ax.set_title("Coefficients (terms in every candidate)")
ax.legend(frameon=False, loc="lower left", fontsize=7)

ax = axes[1]
for offset, (scheme, rows) in enumerate(in_target.groupby("scheme", sort=False)):
    ax.plot(rows["ratio"], np.arange(len(rows)) + 0.2 * offset, "o", label=scheme)
names = in_target[in_target["scheme"] == in_target["scheme"].iloc[0]]
def short(label: str) -> str:
    """A candidate's label that fits a tick: first and last block, and how many blocks."""
    parts = label.split("+")
    return label if len(parts) <= 3 else f"{parts[0]}+...+{parts[-1]} ({len(parts)} blocks)"


ax.set_yticks(np.arange(len(names)),
              [f"{d}: {short(c)}" for d, c in names[["design", "candidate"]].to_numpy()],
              fontsize=7)
ax.axvspan(0.7, 1.3, color="C2", alpha=0.2)
ax.set_xlabel("spread / Monte Carlo SD")
ax.set_title("Weights (mean weight > 0.05)")
ax.legend(frameon=False, fontsize=7)

ax = axes[2]
for offset, method in enumerate(("naive", "nested")):
    rows = honest[honest["se_method"] == method]
    ax.errorbar(rows["coverage"], np.arange(len(rows)) + 0.25 * offset,
                xerr=rows["coverage_mcse"], fmt="o", label=f"SE: {method}")
first = honest[honest["se_method"] == "naive"]
ax.set_yticks(np.arange(len(first)),
              [f"{d}: {s}" for d, s in first[["design", "strategy"]].to_numpy()], fontsize=7)
ax.axvspan(0.92, 0.99, color="C2", alpha=0.2)
ax.set_xlabel("coverage by ±1.96 SE")
ax.set_title("Honest risks (n = 100)")
ax.legend(frameon=False, fontsize=7, loc="upper left")
fig.savefig(RESULTS / "inference_checks.png", dpi=150)
print("VIGNETTE OK")
