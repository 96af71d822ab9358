"""Variance-reducing weight choices for PEARL on the paper's simulation grid (issue 17, part 2).

For every repetition and (n, sigma) cell of the paper's simulation (the same draws as
``SimulationSweep``: blocks learned once per repetition, common random numbers across
cells, the cell's fold seed from :func:`pearlstats.experiments.cell_seed`), one PEARL fit
with the default 5 folds gives the baselines (SA-cand, SA-FRL, MS, Fusion) and the
candidates refitted on all rows. Only the weights differ between the PEARL variants, so
each variant re-runs the cross-validation stage with its own folds (through
``pearlstats.fit`` options) and is scored with the same refitted candidates on the test rows:

* ``K=5`` (the default), ``K=10``, ``loo`` (exact leave-one-out, closed form);
* ``K=5 x R`` repeated K-fold (``cv_repeats=R``): the weight objective averages R
  out-of-fold losses;
* ``shrink`` (``weight_shrinkage="cv"``): the weights shrunk toward equal weights over the
  candidates, the amount chosen by cross-validation over the out-of-fold predictions;
* ``shrink FRL`` (``weight_shrinkage="cv", shrinkage_target="single-block"``): shrunk toward
  equal weights over the single-block candidates (SA-FRL's weights) instead;
* ``size`` / ``size FRL`` (``weight_shrinkage="size"``): the amount ``min(1, 2.5 J / n)``
  instead of a cross-validated one (its constant chosen on other root seeds by
  ``benchmarks/explore_size_rule.py``).

``--variants`` runs a subset (the baselines always come from the default fit).

Run (about 12 s of run time per repetition, all variants)::

    nice -n 10 python benchmarks/bench_small_sample.py --repetitions 50 --n-jobs 2 \
        --out vignettes/_build/small_sample.csv
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pearlstats as pearl
from pearlstats.datasets import simulate_paper
from pearlstats.experiments import (
    PAPER_GRID,
    cell_seed,
    paper_representations,
    run_grid,
)

# Name -> fit options of each PEARL variant.
VARIANTS = {
    "K=5": {},
    "K=10": {"cv": 10},
    "loo": {"cv": "loo"},
    "K=5x5": {"cv_repeats": 5},
    "K=5x20": {"cv_repeats": 20},
    "K=5 shrink": {"weight_shrinkage": "cv"},
    "K=5x5 shrink": {"cv_repeats": 5, "weight_shrinkage": "cv"},
    "K=10x5": {"cv": 10, "cv_repeats": 5},
    "K=5 shrink FRL": {"weight_shrinkage": "cv", "shrinkage_target": "single-block"},
    "K=5x5 shrink FRL": {"cv_repeats": 5, "weight_shrinkage": "cv",
                         "shrinkage_target": "single-block"},
    "K=5 size": {"weight_shrinkage": "size"},
    "K=5 size FRL": {"weight_shrinkage": "size", "shrinkage_target": "single-block"},
    "K=5x5 size FRL": {"cv_repeats": 5, "weight_shrinkage": "size",
                       "shrinkage_target": "single-block"},
}
BASELINES = ("SA-cand", "SA-FRL", "MS", "Fusion")


def _cell(formula, data, blocks, test, test_blocks, seed, variants) -> list[dict]:
    """Test MSE of the baselines and of every PEARL variant in one cell."""
    base = pearl.fit(formula, data, blocks=blocks, seed=seed, honest=False)
    strategies = base.strategy_weights
    labels = list(strategies.columns)
    P = base.predict_candidates(test, blocks=test_blocks, labels=labels).to_numpy()
    y = test["y"].to_numpy()
    records = []
    for name in BASELINES:
        w = strategies.loc[name].to_numpy()
        records.append({"method": name, "MSE": float(np.mean((y - P @ w) ** 2))})
    for name in variants:
        options = VARIANTS[name]
        res = (
            base
            if not options
            else pearl.fit(formula, data, blocks=blocks, seed=seed, honest=False, **options)
        )
        w = res.weights.reindex(labels, fill_value=0.0).to_numpy()
        records.append({"method": f"PEARL {name}", "MSE": float(np.mean((y - P @ w) ** 2))})
    return records


def grid_cells(setting: dict, seed: np.random.SeedSequence):
    """The cells of one repetition over the grid, with ``SimulationSweep``'s draws and fold seeds.

    Yields ``(n, sigma, formula, labeled, blocks, test, test_blocks, fold_seed)``: blocks learned
    once per repetition on the unlabeled rows, common random numbers across cells, the cell's
    fold seed from :func:`pearlstats.experiments.cell_seed`. PEARL's warnings are silenced.
    """
    n_values, sigmas = setting["n_values"], setting["sigmas"]
    data_seed, learner_seed, folds_seed = (int(s.generate_state(1)[0]) for s in seed.spawn(3))
    sizes = {"N": 2000, "n_test": 1000}
    inputs = simulate_paper(max(n_values), sigma=1.0, seed=data_seed, **sizes)
    reps = paper_representations(learner_seed).fit(inputs.unlabeled)
    labeled_blocks, test_blocks = reps.transform(inputs.labeled), reps.transform(inputs.test)
    formula = "y ~ " + " + ".join(f"block({name})" for name in reps.names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        for sigma in sigmas:
            data = simulate_paper(max(n_values), sigma=sigma, seed=data_seed, **sizes)
            for n in n_values:
                blocks = {name: block[:n] for name, block in labeled_blocks.items()}
                yield (n, sigma, formula, data.labeled.iloc[:n], blocks, data.test, test_blocks,
                       cell_seed(folds_seed, n, sigma))


def sweep(setting: dict, seed: np.random.SeedSequence) -> list[dict]:
    """One repetition over the paper's grid: every variant's and baseline's test MSE per cell."""
    records = []
    for n, sigma, *cell in grid_cells(setting, seed):
        records += [{"n": n, "sigma": sigma, **record}
                    for record in _cell(*cell, setting["variants"])]
    return records


def table(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and 90th percentile of the test MSE per cell and method."""
    grouped = results.groupby(["sigma", "n", "method"])["MSE"]
    out = pd.concat({"mean": grouped.mean(), "p90": grouped.quantile(0.9)}, axis=1)
    return out.unstack("method")


def _markdown_table(results: pd.DataFrame, statistic: str) -> str:
    """A statistic per cell and method; bold: a PEARL variant at or below every baseline."""
    stats = table(results)[statistic]
    variants = [c for c in stats.columns if c.startswith("PEARL ")]
    stats = stats[variants + list(BASELINES)]
    best_baseline = stats[list(BASELINES)].min(axis=1)
    won = stats[variants].le(best_baseline + 1e-12, axis=0)
    names = [c.removeprefix("PEARL ") for c in variants] + list(BASELINES)
    lines = ["| σ | n | " + " | ".join(names) + " |", "| --- | --- |" + " ---: |" * len(names)]
    for (sigma, n), row in stats.iterrows():
        cells = [f"**{row[c]:.4f}**" if won.loc[(sigma, n), c] else f"{row[c]:.4f}"
                 for c in variants] + [f"{row[c]:.4f}" for c in BASELINES]
        lines.append(f"| {sigma:g} | {n} | " + " | ".join(cells) + " |")
    lines.append("| cells won | | " + " | ".join(str(int(won[c].sum())) for c in variants)
                 + " |" * len(BASELINES) + " |")
    return "\n".join(lines)


def paired_differences(results: pd.DataFrame, reference: str = "PEARL K=5") -> pd.DataFrame:
    """Mean and SE over repetitions of (method - reference) test MSE, per cell."""
    wide = results.pivot_table(index=["sigma", "n", "repetition"], columns="method", values="MSE")
    diff = wide.sub(wide[reference], axis=0).drop(columns=reference)
    grouped = diff.groupby(["sigma", "n"])
    return pd.concat({"mean": grouped.mean(), "se": grouped.sem()}, axis=1)


def markdown(results: pd.DataFrame) -> str:
    """The mean and 90th-percentile tables of ``benchmarks/RESULTS.md``."""
    return "\n\n".join(_markdown_table(results, statistic) for statistic in ("mean", "p90"))


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=50)
    parser.add_argument("--n", type=int, nargs="+", default=PAPER_GRID["n"])
    parser.add_argument("--sigma", type=float, nargs="+", default=PAPER_GRID["sigma"])
    parser.add_argument("--seed", type=int, default=2025, help="root seed (the CLI's default)")
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--out", default=None, help="CSV of the per-run results")
    parser.add_argument("--from-csv", default=None,
                        help="print the markdown tables of an earlier run's --out CSV and exit")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    args = parser.parse_args(argv)
    if args.from_csv:
        results = pd.read_csv(args.from_csv)
        print(markdown(results))
        with pd.option_context("display.width", 250, "display.max_columns", 50):
            print(paired_differences(results).round(4).to_string())
        return results
    start, cpu = time.perf_counter(), time.process_time()
    results = run_grid(
        sweep,
        [{"n_values": args.n, "sigmas": args.sigma, "variants": args.variants}],
        args.repetitions,
        seed=args.seed,
        n_jobs=args.n_jobs,
        progress=False,
    )
    results = results.drop(columns=["n_values", "sigmas", "variants"])
    elapsed = time.perf_counter() - start
    if args.out:
        results.to_csv(args.out, index=False)
    summary = table(results)
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        print(summary.round(4).to_string())
    total_cpu = results.groupby("repetition")["seconds"].first().sum()
    print(
        f"\n{len(args.n) * len(args.sigma)} cells x {args.repetitions} repetitions: "
        f"{elapsed:.0f} s wall, {total_cpu:.0f} s summed over runs "
        f"(this process's CPU {time.process_time() - cpu:.0f} s)",
        file=sys.stderr,
    )
    return results


if __name__ == "__main__":
    main()
