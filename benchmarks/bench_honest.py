"""Honest risk of a J = 1023 binomial fit: its time against the fit's, and every solve's gap.

Ten 2-column blocks, ``candidates="all"`` (2^10 - 1 = 1023 logistic candidates), n = 500
rows, K = 5 folds, ``honest=5``. Prints, measured in one process:

* ``pearl.fit`` time and ``res.honest`` time (the nested cross-validation: 5 outer folds,
  each re-running the inner cross-validation of all 1023 candidates and the weight solve);
  the target is honest within 6x the fit;
* the certified gap of the fit's weight solve and of each outer fold's
  (target ``1e-10 (1 + objective)``), and the time spent in the weight solver.

Run ``OMP_NUM_THREADS=1 python benchmarks/bench_honest.py`` (``--help`` for sizes).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import pearlstats as pearl
from pearlstats.weights import solvers
from pearlstats.weights.certificate import gap_target


def problem(n: int, blocks: int, seed: int) -> tuple[str, dict]:
    rng = np.random.default_rng(seed)
    data = {f"b{k}": rng.normal(size=(n, 2)) for k in range(blocks)}
    eta = data["b0"][:, 0] + 0.5 * data["b1"][:, 1] - 0.5 * data["b2"][:, 0]
    data["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return "y ~ " + " + ".join(f"block(b{k})" for k in range(blocks)), data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    formula, data = problem(args.n, args.blocks, args.seed)

    spent = [0.0]
    solve = solvers.solve_weights

    def timed(*a, **k):  # time inside the weight solver
        start = time.perf_counter()
        try:
            return solve(*a, **k)
        finally:
            spent[0] += time.perf_counter() - start

    solvers.solve_weights = timed
    import pearlstats.stages as stages

    stages.solve_weights = timed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        warnings.simplefilter("error", pearl.ConvergenceWarning)
        start = time.perf_counter()
        res = pearl.fit(formula, data, family="binomial", candidates="all", seed=args.seed)
        fit_time = time.perf_counter() - start
        fit_solver = spent[0]
        start = time.perf_counter()
        table = res.honest
        honest_time = time.perf_counter() - start
    folds = res.last_honest_risk.fold_gaps
    J = len(res.weights)
    print(f"J = {J} binomial candidates, n = {args.n}")
    print(f"pearl.fit      {fit_time:7.2f} s  (weight solver {fit_solver:.3f} s)")
    print(f"res.honest     {honest_time:7.2f} s  (weight solver {spent[0] - fit_solver:.3f} s)")
    print(f"honest / fit   {honest_time / fit_time:7.2f}x  (target <= 6x)")
    print(f"fit gap        {res.kkt_gap:.2e}  target {gap_target(res.weight_objective):.2e}  "
          f"solver {res.weight_solver}")
    print(folds.to_string(float_format=lambda v: f"{v:.3e}"))
    print(f"PEARL honest row: kkt_gap {table.loc['PEARL', 'kkt_gap']:.2e}, "
          f"certified {bool(table.loc['PEARL', 'certified'])}")
    print("all certified:", bool(folds["certified"].all())
          and res.kkt_gap <= gap_target(res.weight_objective))


if __name__ == "__main__":
    main()
