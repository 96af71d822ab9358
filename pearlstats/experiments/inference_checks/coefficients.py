"""Coverage of the averaged coefficients' 95% intervals (issue 28).

For each design, sample size and data set, :func:`check_coefficients` fits
PEARL with the design's formula and asks whether ``res.conf_int()`` contains
the true value of each term every candidate has (``design.true_params``: the
covariate ``x``, and the intercept where it is known). Both SE formulas come
from the same fits: the default (Burnham & Anderson 2002, eq. 6.12, MuMIn's
``revised.var = TRUE``) and eq. 4.9 (``revised=False``), and the default SE with the
candidates' HC3 covariance (``res.get_robustcov("HC3")``, nothing refitted), whose
``cov_params()`` (the candidates' joint covariance, weights fixed) also gives the
t-test interval ``params -/+ t sqrt(diag)``. The target is the issue's: 95%
intervals that cover between 0.93 and 0.97 of the time.

Block columns are not checked: pearlstats gives them no averaged interval
(their coefficient means different things in different candidates), only
per-candidate intervals and an interval-free conditional average.

Examples
--------
>>> table = check_coefficients(designs=("blocks",), sizes=(60,), n_datasets=3, seed=1)
>>> list(table.columns[:5])
['design', 'n', 'term', 'coverage', 'mc_se']
>>> table["n_datasets"].tolist()
[3, 3]
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...exceptions import OptionError, PearlWarning
from ..runner import grid, run_grid
from .designs import DESIGNS, get_design

__all__ = ["check_coefficients", "coverage_table", "coefficient_run", "TARGET"]

TARGET = (0.93, 0.97)
_LEVEL = 0.95


def coefficient_run(setting: dict, seed: np.random.SeedSequence) -> list[dict]:
    """One data set: per true term, the estimate, both SEs and whether both intervals cover.

    ``setting`` holds ``design`` and ``n``; the data set and the fit's folds are
    drawn from *seed*. Used by :func:`check_coefficients` through
    :func:`~pearlstats.experiments.run_grid`.
    """
    from ... import fit

    design = get_design(setting["design"])
    data_seed, fit_seed = (int(value) for value in seed.generate_state(2))
    sample = design.sample(int(setting["n"]), data_seed)
    with warnings.catch_warnings():
        # A ridge or unidentified term would be reported in the table as NaN.
        warnings.simplefilter("ignore", PearlWarning)
        res = fit(design.formula, sample.data, blocks=sample.blocks, seed=fit_seed % 2**31)
        revised = res.conf_int(1 - _LEVEL)
        eq49 = res.conf_int(1 - _LEVEL, revised=False)
        table = res.coef_table(revised=False)
        robust = res.get_robustcov("HC3")
        hc3 = robust.conf_int(1 - _LEVEL)
        tested = robust.t_test(np.eye(len(robust.params))).conf_int(1 - _LEVEL)
    joint = pd.DataFrame(tested, index=robust.params.index, columns=["lower", "upper"])
    rows = []
    for term, truth in design.true_params.items():
        rows.append({
            "term": term, "truth": truth, "estimate": float(res.params[term]),
            "se": float(res.bse[term]), "se_eq49": float(table.loc[term, "std err"]),
            "covered": bool(revised.loc[term, "lower"] <= truth <= revised.loc[term, "upper"]),
            "covered_eq49": bool(eq49.loc[term, "lower"] <= truth <= eq49.loc[term, "upper"]),
            "covered_hc3": bool(hc3.loc[term, "lower"] <= truth <= hc3.loc[term, "upper"]),
            "covered_joint_hc3": bool(joint.loc[term, "lower"] <= truth
                                      <= joint.loc[term, "upper"]),
        })
    return rows


def coverage_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (design, n, term) from :func:`coefficient_run`'s records.

    Columns: ``coverage`` (default SE formula) and its Monte Carlo SE
    ``mc_se = sqrt(p (1 - p) / n_datasets)``, ``n_datasets``, the target range,
    ``met``, ``coverage_eq49`` (eq. 4.9 SEs) and ``se_ratio``: the mean default SE
    over the standard deviation of the estimates across data sets (1 when the SE
    describes the estimator's spread); ``coverage_hc3`` (the default SE with the
    candidates' HC3 covariances) and ``coverage_joint_hc3`` (the t-test interval of
    the joint HC3 ``cov_params()``) when the records have them.
    """
    keys = ["design", "n", "term"]
    grouped = runs.groupby(keys, sort=False)
    out = grouped.agg(coverage=("covered", "mean"), n_datasets=("covered", "size"),
                      coverage_eq49=("covered_eq49", "mean"), mean_se=("se", "mean"),
                      sd_estimate=("estimate", "std")).reset_index()
    p, count = out["coverage"], out["n_datasets"]
    out.insert(4, "mc_se", np.sqrt(p * (1 - p) / count))
    out.insert(6, "target_low", TARGET[0])
    out.insert(7, "target_high", TARGET[1])
    out.insert(8, "met", (p >= TARGET[0]) & (p <= TARGET[1]))
    out["se_ratio"] = out.pop("mean_se") / out.pop("sd_estimate")
    for column in ("covered_hc3", "covered_joint_hc3"):
        if column in runs:
            out[column.replace("covered", "coverage")] = grouped[column].mean().to_numpy()
    return out


def check_coefficients(
    designs: Sequence[str] = DESIGNS,
    sizes: Sequence[int] = (100, 400),
    n_datasets: int = 400,
    seed: int = 0,
    n_jobs: int | None = 1,
) -> pd.DataFrame:
    """Coverage of ``res.conf_int()`` (95%) for the terms in every candidate.

    Parameters
    ----------
    designs : sequence of str, default all of :data:`~.designs.DESIGNS`
        Designs to draw from (``"paper"``, ``"blocks"``, ``"heteroscedastic"``, ``"t3"``).
    sizes : sequence of int, default (100, 400)
        Numbers of labelled rows per data set.
    n_datasets : int, default 400
        Data sets per (design, size): the Monte Carlo SE of a coverage near 0.95
        is then about 0.011.
    seed : int, default 0
        Root of the seed tree; the same seed gives the same table, whatever
        *n_jobs* is (:func:`~pearlstats.experiments.run_grid`).
    n_jobs : int or None, default 1
        joblib workers.

    Returns
    -------
    pandas.DataFrame
        One row per (design, n, term); see :func:`coverage_table`.

    Raises
    ------
    OptionError
        An unknown design, a size below 20 or fewer than 2 data sets.
    """
    for name in designs:
        get_design(name)  # names the known designs if *name* is not one
    if any(int(n) < 20 for n in sizes):
        raise OptionError(f"sizes={list(sizes)}: each data set needs at least 20 rows")
    if int(n_datasets) < 2:
        raise OptionError(f"n_datasets={n_datasets}: coverage needs at least 2 data sets")
    runs = run_grid(coefficient_run, grid(design=list(designs), n=[int(n) for n in sizes]),
                    int(n_datasets), seed=seed, n_jobs=n_jobs, progress=False)
    return coverage_table(runs)


def markdown_report(table: pd.DataFrame, command: str) -> str:
    """The coverage table as Markdown, with the command that produced it."""
    shown = table.copy()
    numbers = ("coverage", "mc_se", "coverage_eq49", "se_ratio", "coverage_hc3",
               "coverage_joint_hc3")
    for column in [name for name in numbers if name in shown]:
        shown[column] = shown[column].map(lambda value: f"{value:.3f}")
    shown["met"] = shown["met"].map({True: "met", False: "NOT met"})
    header = "| " + " | ".join(shown.columns) + " |"
    rule = "|" + "---|" * len(shown.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in shown.to_numpy()]
    return "\n".join([
        "# Coverage of the averaged coefficients' 95% intervals (issue 28)", "",
        "Produced by:", "", "```", command, "```", "",
        f"Target: coverage between {TARGET[0]} and {TARGET[1]} for the terms in every "
        "candidate. `coverage` uses the default SE (Burnham & Anderson 2002, eq. 6.12, "
        "MuMIn's revised.var = TRUE); `coverage_eq49` the same fits with eq. 4.9; "
        "`se_ratio` is the mean default SE over the SD of the estimates; `coverage_hc3` the "
        "default SE with the candidates' HC3 covariances (`res.get_robustcov(\"HC3\")`), "
        "`coverage_joint_hc3` the t-test interval of its joint `cov_params()`.", "",
        header, rule, *body, "",
    ])
