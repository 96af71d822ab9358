"""Shrinkage of the weights on designs other than the paper's, and the leak of the ``"cv"`` amount.

For every data set of a design (``pearlstats.experiments.inference_checks.designs``) one
default fit (K = 5, gaussian) gives the candidates' out-of-fold predictions, PEARL's weights
``w`` and the baselines' weights; all are scored on one large test sample of the design
(the candidates refitted on all rows, so every weight vector is scored without refitting).
The shrunk weights ``(1 - lam) w + lam u`` toward SA-FRL's ``u``:

* ``size``: ``lam = min(1, 2.5 J / n)`` (``weight_shrinkage="size"``);
* ``cv``: ``lam`` chosen as ``weight_shrinkage="cv"`` chooses it
  (:func:`pearlstats.weights.shrinkage.choose_shrinkage` over the out-of-fold predictions:
  for held-out fold g the weights are re-solved on the other folds' out-of-fold predictions,
  which come from candidates trained on g's rows -- a second-order leak);
* ``cv-nested``: the same grid and scoring, but for held-out fold g the weights are those of
  a PEARL fit on the other folds alone (their out-of-fold predictions from candidates trained
  without g: the folds other than g are the inner folds), so nothing of g reaches them.

Prints, per design and n, the mean test MSE (and its SE over data sets) of PEARL, the three
shrunk variants and the baselines, the mean amounts, and whether each variant's mean is at
or below the best baseline's.

Run::

    nice -n 5 python benchmarks/bench_shrinkage_designs.py --designs paper heteroscedastic t3 \\
        --n 100 200 --data-sets 200 --out /tmp/shrinkage_designs.csv
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import pearlstats as pearl
from pearlstats.experiments.inference_checks import get_design
from pearlstats.weights.shrinkage import choose_shrinkage, shrink_toward, size_shrinkage

BASELINES = ("SA-cand", "SA-FRL", "MS", "Fusion", "Best")
VARIANTS = ("PEARL", "size", "cv", "cv-nested")


def nested_amount(res, data, blocks, u, grid) -> float:
    """The ``"cv"`` amount with each held-out fold's weights fitted without any of its rows."""
    state = res.stages
    J = len(state.candidates.pool)
    P, y, folds = state.output.predictions[:, :J], state.response.y, state.folds
    totals = np.zeros(len(grid))
    for g in range(int(folds.max()) + 1):
        inside, held = np.flatnonzero(folds != g), folds == g
        inner = np.unique(folds[inside], return_inverse=True)[1]  # the other folds, 0..K-2
        fitted = pearl.fit(res.formula, data.iloc[inside],
                           blocks={k: v[inside] for k, v in blocks.items()}, cv=inner,
                           seed=res.seed, honest=False)
        w_inner = fitted.weights[res.candidate_labels].to_numpy()
        for i, amount in enumerate(grid):
            w = shrink_toward(w_inner, u, amount)
            totals[i] += ((y[held] - P[held] @ w) ** 2).sum()
    return float(grid[int(np.argmin(totals))])


def one_data_set(design, n: int, r: int, test) -> dict:
    sample = design.sample(n, seed=10_000 * n + r)
    res = pearl.fit(design.formula, sample.data, blocks=sample.blocks, seed=r, honest=False)
    state = res.stages
    labels = list(res.candidate_labels)
    strategies = res.strategy_weights
    u = strategies.loc["SA-FRL", labels].to_numpy()
    J = len(labels)
    active = ~state.output.failed[:J]
    P = state.output.predictions[:, :J]
    leaky = choose_shrinkage(P, state.response.y, state.loss, state.folds,
                             np.arange(n), active, target=u)
    amounts = {"PEARL": 0.0, "size": size_shrinkage(int(active.sum()), n), "cv": leaky.amount,
               "cv-nested": nested_amount(res, sample.data, sample.blocks, u,
                                          np.asarray(leaky.grid))}
    P_test = res.predict_candidates(test.data, blocks=test.blocks,
                                    labels=list(strategies.columns)).to_numpy()
    y_test = test.data["y"].to_numpy()
    w = res.weights[labels].to_numpy()
    out = {"n": n, "data set": r}
    for name, amount in amounts.items():
        shrunk = np.zeros(P_test.shape[1])
        shrunk[:J] = shrink_toward(w, u, amount)
        out[name] = float(np.mean((y_test - P_test @ shrunk) ** 2))
        out[f"lam {name}"] = amount
    for name in BASELINES:
        out[name] = float(np.mean((y_test - P_test @ strategies.loc[name].to_numpy()) ** 2))
    return out


def report(results: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (design, n), part in results.groupby(["design", "n"], sort=False):
        means = part[list(VARIANTS + BASELINES)].mean()
        best = means[list(BASELINES)].idxmin()
        row = {"design": design, "n": n, "data sets": len(part), "best baseline": best,
               "best baseline MSE": means[best]}
        for name in VARIANTS:
            diff = part[name] - part[best]
            row[f"{name} MSE"] = means[name]
            se = diff.std(ddof=1) / np.sqrt(len(diff))
            row[f"{name} - best (SE)"] = f"{diff.mean():+.4f} ({se:.4f})"
            row[f"{name} <= best"] = bool(means[name] <= means[best])
        for name in ("size", "cv", "cv-nested"):
            row[f"mean lam {name}"] = part[f"lam {name}"].mean()
        row["cv lam = 1"] = int((part["lam cv"] == 1).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", nargs="+", default=["paper", "heteroscedastic", "t3"])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--data-sets", type=int, default=200)
    parser.add_argument("--test-rows", type=int, default=20_000)
    parser.add_argument("--out", default=None, help="CSV of the per-data-set test MSEs")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    frames = []
    for name in args.designs:
        design = get_design(name)
        test = design.sample(args.test_rows, seed=987_654_321)
        for n in args.n:
            frames.append(pd.DataFrame(
                [one_data_set(design, n, r, test) for r in range(args.data_sets)]
            ).assign(design=name))
    results = pd.concat(frames, ignore_index=True)
    if args.out:
        results.to_csv(args.out, index=False)
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        print(report(results).round(4).T.to_string())
    print(f"{time.perf_counter() - start:.0f} s wall")


if __name__ == "__main__":
    main()
