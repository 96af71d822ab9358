"""Is the nested-CV SE calibrated at the default number of splits? (issue 36, item 5).

For each design and number of outer folds K, data sets are drawn and fitted once with
``honest=K, honest_se=NestedSE(repeats=R_max)``. Split r of the nested CV is drawn from
the fit's seed and r alone, so the first r splits of that fit are exactly what
``NestedSE(repeats=r)`` would compute (``res.nested_se.using(r)``): one fit per data
set gives the estimate at every R up to R_max. Each strategy's honest risk and SE are
compared with its test risk, the mean loss of the strategy fitted on the n rows on
``n_test`` fresh rows (``res.evaluate``): Bates et al.'s Err_XY, the target.

What is measured, per (design, K, R, strategy) (:func:`summarise`):

* ``coverage`` of the test risk by risk +- 1.96 SE (target 0.93-0.98) and its Monte
  Carlo SE; ``miss_above``, the share of data sets whose test risk lies above the
  interval (the rest of the misses lie below it): misses on one side say the risk
  estimate is skewed, which no SE of a symmetric interval mends;
* ``se_over_sd``: mean SE / SD over data sets of the risk estimate (issue 36's
  0.8-1.25 target), and ``se_over_rmse``: mean SE / root mean square of (risk -
  test risk), the spread the SE is meant to describe (Bates et al. estimate the
  MSE of the CV estimate around Err_XY, which includes Err_XY's own variation
  over data sets);
* ``clip_lower`` / ``clip_upper``: how often the naive lower bound (the MSE
  estimate below it, often negative) or the sqrt(K) upper bound set the SE;
  ``negative_mse``: how often the raw MSE estimate is below 0;
* ``median_se_mc_error``: the median over data sets (where no bound sets the SE) of
  the SE's relative Monte Carlo error from R splits (``se_mc_error``): how much
  another R splits would move it;
* ``corr_target``: correlation over data sets of the risk estimate with the
  test risk;
* ``ratio_coverage``: coverage of the test ratio PEARL / strategy by ratio +- 1.96
  ``ratio_se`` (the heuristic ratio SE);
* the draws keep ``naive_se`` (the lower bound: SD of the inner losses / sqrt(n)) beside
  ``mse`` (the raw MSE estimate), so another way of combining them can be judged on the
  same draws without refitting;
* ``cpu_seconds``: CPU time of one fit with its nested SE at R splits (the
  measured time at R_max, scaled by R / R_max: the splits cost the same).

Run it as a command (resumable: each finished data set is appended to the CSV, and
a rerun skips those already there)::

    python -m pearlstats.experiments.inference_checks.nested_calibration \\
        --designs blocks logistic --outer 5 --repeats 50 --n-datasets 400 \\
        --out nested_draws.csv
    python -m pearlstats.experiments.inference_checks.nested_calibration \\
        --summarise nested_draws.csv --out vignettes/results/nested_se_calibration.csv

Examples
--------
>>> draws = calibration_draws(["blocks"], outer=3, repeats=2, n_datasets=1, n_test=200,
...                           seed=0, prefixes=(1, 2))
>>> sorted(set(draws["repeats"]))
[1, 2]
>>> table = summarise(draws)
>>> bool((table["n_datasets"] == 1).all())
True
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ...exceptions import OptionError
from ...fitting import fit
from ...honest_se import NestedSE, ncv_moments
from ...weights.baselines import STRATEGIES, TABLE_ROWS
from ..arguments import HelpWithDefaults, bounded_int, check_output
from .designs import ALL_DESIGNS, get_design

__all__ = ["COVERAGE_TARGET", "DEFAULT_N", "DRAW_COLUMNS", "SE_RATIO_TARGET", "calibration_draws",
           "main", "summarise"]

COVERAGE_TARGET = (0.93, 0.98)  # issue 36, item 5
SE_RATIO_TARGET = (0.8, 1.25)
DEFAULT_N = {"logistic": 150}  # the referee's logistic design; 100 rows elsewhere
PREFIXES = (5, 10, 20, 50)
_Z = 1.959963984540054
_KEY = ["design", "outer", "data_set"]
DRAW_COLUMNS = ("design", "outer", "data_set", "n", "repeats", "strategy", "risk", "se", "mse",
                "bias", "err_cv", "naive_se", "se_bound", "se_mc_error", "ratio", "ratio_se",
                "test_risk", "test_ratio", "cpu_seconds")


def _one_data_set(design_name: str, outer: int, repeats: int, n_test: int, seed: int,
                  index: int, prefixes: Sequence[int]) -> pd.DataFrame:
    """Nested-CV risks at every prefix of the splits, and test risks, on one data set."""
    design = get_design(design_name)
    n = DEFAULT_N.get(design_name, 100)
    key = [seed, ALL_DESIGNS.index(design_name), index]
    sample, test = design.sample(n, seed=key), design.sample(n_test, seed=key + [1])
    started = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PEARL-above-MS warnings: the check reports, not warns
        res = fit(design.formula, sample.data, blocks=sample.blocks, family=design.family,
                  seed=index, honest=outer, honest_se=NestedSE(repeats=repeats))
        estimate = res.nested_se
    cpu = time.process_time() - started
    primary = "MSE" if res.classes is None else "cross_entropy"
    tested = res.evaluate(test.data, blocks=test.blocks)[primary]
    rows = []
    for r in prefixes:
        table = estimate.using(r)
        moments = ncv_moments(estimate.folds[:r], estimate.outer_losses[:r],
                              estimate.inner_losses[:r])
        naive_bound = table["se_bound"]
        for name in STRATEGIES:
            rows.append({
                "design": design_name, "outer": outer, "data_set": index, "n": n,
                "repeats": r, "strategy": name,
                "risk": table.loc[name, "risk"], "se": table.loc[name, "se"],
                "mse": table.loc[name, "mse"], "bias": table.loc[name, "bias"],
                "err_cv": moments["err_cv"][TABLE_ROWS.index(name)],
                "naive_se": moments["naive_se"][TABLE_ROWS.index(name)],
                "se_bound": naive_bound[name],
                "se_mc_error": table.loc[name, "se_mc_error"],
                "ratio": table.loc[name, "ratio"], "ratio_se": table.loc[name, "ratio_se"],
                "test_risk": tested[name], "test_ratio": tested["PEARL"] / tested[name],
                "cpu_seconds": cpu * r / repeats,
            })
    return pd.DataFrame(rows, columns=list(DRAW_COLUMNS))


def calibration_draws(designs: Sequence[str], outer: int = 5, repeats: int = 50,
                      n_datasets: int = 400, n_test: int = 5000, seed: int = 20261125,
                      prefixes: Sequence[int] = PREFIXES, out: str | Path | None = None,
                      first: int = 0) -> pd.DataFrame:
    """One row per (design, data set, R prefix, strategy): estimates and test risks.

    Parameters
    ----------
    designs : sequence of str
        Names in :data:`~.designs.ALL_DESIGNS`.
    outer : int
        Outer folds K (``honest=K``).
    repeats : int
        Splits R_max of each fit; the estimates at every ``prefixes`` value <= it are kept.
    n_datasets, n_test : int
        Data sets per design; fresh test rows per data set.
    seed : int
        Data set i of design d is drawn from ``[seed, d, i]`` (d its position in
        :data:`~.designs.ALL_DESIGNS`), its test rows from ``[seed, d, i, 1]``; the
        fit's seed is i, so the outer folds differ between data sets but not between K.
    prefixes : sequence of int
        The R values reported.
    out : path, optional
        A CSV to which each data set's rows are appended as it finishes; data sets
        already in it (same design, K and index) are not rerun.
    first : int, default 0
        The first data set drawn (data sets ``first .. n_datasets - 1``): two processes
        with ``first=0, n_datasets=m`` and ``first=m`` draw one run's data sets, since a
        data set's draws depend only on its index.

    Returns
    -------
    DataFrame
    """
    prefixes = [r for r in prefixes if r <= repeats]
    done = _finished(out)
    frames = []
    for name in designs:
        for i in range(first, n_datasets):
            if (name, outer, i) in done:
                continue
            frame = _one_data_set(name, outer, repeats, n_test, seed, i, prefixes)
            if out is not None:
                frame.to_csv(out, mode="a", header=not Path(out).exists(), index=False)
            frames.append(frame)
    if out is not None:
        return pd.read_csv(out, keep_default_na=False, na_values=["", "nan", "NaN"])
    return pd.concat(frames, ignore_index=True)


def _finished(out: str | Path | None) -> set:
    """The (design, K, data set) keys already drawn into *out* (OptionError: other columns)."""
    if out is None or not Path(out).exists():
        return set()
    previous = pd.read_csv(out)
    if tuple(previous.columns) != DRAW_COLUMNS:
        raise OptionError(
            f"out={str(out)!r} holds draws with the columns {list(previous.columns)}, "
            f"not this version's {list(DRAW_COLUMNS)}; resume it with the version that "
            "made it, or draw into a new file")
    return set(map(tuple, previous[_KEY].drop_duplicates().to_numpy().tolist()))


def summarise(draws: pd.DataFrame) -> pd.DataFrame:
    """Coverage, SE / spread ratios, clip rates and cost per (design, K, R, strategy)."""
    bound = draws["se_bound"].fillna("").astype(str)
    draws = draws.assign(se_bound=bound.where(bound.isin(["lower", "upper"]), ""))
    rows = []
    for (design, outer, repeats, strategy), group in draws.groupby(
            ["design", "outer", "repeats", "strategy"], sort=False):
        usable = group.dropna(subset=["risk", "se", "test_risk"])
        error = usable["risk"] - usable["test_risk"]
        covered = error.abs() <= _Z * usable["se"]
        coverage = covered.mean() if len(usable) else np.nan
        rows.append({
            "design": design, "outer": outer, "repeats": repeats, "strategy": strategy,
            "n": int(group["n"].iloc[0]), "n_datasets": len(group),
            "undefined_risk": 1 - len(usable) / len(group),
            "coverage": coverage,
            "coverage_mcse": np.sqrt(coverage * (1 - coverage) / max(len(usable), 1)),
            # which side the misses fall on: above = the estimate too low for its test risk
            "miss_above": (error < -_Z * usable["se"]).mean() if len(usable) else np.nan,
            "mean_se": usable["se"].mean(),
            "risk_sd": usable["risk"].std(ddof=1),
            "se_over_sd": usable["se"].mean() / usable["risk"].std(ddof=1),
            "se_over_rmse": usable["se"].mean() / np.sqrt(np.mean(error**2)),
            "mean_bias": error.mean(),
            "corr_target": usable["risk"].corr(usable["test_risk"]),
            # the heuristic ratio SE (PEARL / strategy; PEARL's own ratio is 1 with SE 0)
            "ratio_coverage": (np.nan if strategy == "PEARL" else
                               ((usable["test_ratio"] - usable["ratio"]).abs()
                                <= _Z * usable["ratio_se"]).mean()),
            "clip_lower": (group["se_bound"] == "lower").mean(),
            "clip_upper": (group["se_bound"] == "upper").mean(),
            "negative_mse": (group["mse"] < 0).mean(),
            "median_se_mc_error": group["se_mc_error"].median(),
            "cpu_seconds": group["cpu_seconds"].mean(),
            "met": bool(COVERAGE_TARGET[0] <= coverage <= COVERAGE_TARGET[1]
                        and SE_RATIO_TARGET[0] <= usable["se"].mean()
                        / usable["risk"].std(ddof=1) <= SE_RATIO_TARGET[1]),
        })
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """The command: draw (resumably) or summarise.

    The arguments, ``--out`` (writable, and with this version's columns when resumed)
    and the ``--summarise`` draws are checked before anything is computed; a bad one is
    an argparse error (exit status 2), not a traceback.
    """
    parser = argparse.ArgumentParser(
        prog="python -m pearlstats.experiments.inference_checks.nested_calibration",
        description="Calibrate the nested-CV SE of res.honest (issue 36, item 5).",
        formatter_class=HelpWithDefaults)
    parser.add_argument("--designs", nargs="+", choices=ALL_DESIGNS, default=["blocks"],
                        help="designs to draw data sets from")
    parser.add_argument("--outer", type=bounded_int(2), default=5, help="outer folds K (>= 2)")
    parser.add_argument("--repeats", type=bounded_int(min(PREFIXES)), default=50,
                        help=f"splits R_max of each fit; the draws keep R in {list(PREFIXES)} "
                             "up to it")
    parser.add_argument("--n-datasets", type=bounded_int(1), default=400,
                        help="data sets per design (indices --first .. this - 1)")
    parser.add_argument("--first", type=bounded_int(0), default=0,
                        help="first data set index (split a run across processes)")
    parser.add_argument("--n-test", type=bounded_int(1), default=5000,
                        help="fresh test rows per data set")
    parser.add_argument("--seed", type=bounded_int(0), default=20261125, help="root seed")
    parser.add_argument("--summarise", metavar="DRAWS_CSV",
                        help="summarise these draws instead of drawing")
    parser.add_argument("--out", required=True, help="CSV of draws (appended) or of the summary")
    args = parser.parse_args(argv)
    check_output(parser, "--out", args.out)
    if args.summarise:
        summarise(_read_draws(parser, args.summarise)).to_csv(args.out, index=False,
                                                             float_format="%.6g")
        return 0
    smallest = min(DEFAULT_N.get(name, 100) for name in args.designs)
    if args.outer > smallest:
        parser.error(f"--outer {args.outer} is more folds than the {smallest} rows of a data "
                     f"set; give at most {smallest}")
    if args.first >= args.n_datasets:
        parser.error(f"--first {args.first} draws nothing: data sets run from --first to "
                     f"--n-datasets - 1 = {args.n_datasets - 1}")
    try:
        _finished(args.out)
    except (OptionError, ValueError) as error:  # ValueError: pandas cannot read it as CSV
        parser.error(f"--out {args.out}: {error}")
    calibration_draws(args.designs, args.outer, args.repeats, args.n_datasets, args.n_test,
                      args.seed, out=args.out, first=args.first)
    return 0


_SUMMARISED = ("design", "outer", "repeats", "strategy", "n", "risk", "se", "mse", "se_bound",
               "se_mc_error", "ratio", "ratio_se", "test_risk", "test_ratio", "cpu_seconds")


def _read_draws(parser: argparse.ArgumentParser, path: str) -> pd.DataFrame:
    """The draws in *path*, or ``parser.error`` saying why they cannot be summarised."""
    try:
        draws = pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"])
    except (OSError, ValueError) as error:  # missing or unreadable; ValueError: not a CSV
        parser.error(f"--summarise {path} cannot be read ({error}); give a CSV of draws "
                     "written by this command")
    missing = [column for column in _SUMMARISED if column not in draws.columns]
    if missing or draws.empty:
        what = f"lacks the columns {missing}" if missing else "holds no draws"
        parser.error(f"--summarise {path} {what}; give a CSV of draws written by this command")
    return draws


if __name__ == "__main__":  # pragma: no cover - the command
    raise SystemExit(main())
