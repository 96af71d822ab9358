"""Observation weights: the cost of ``fit(weights=...)`` against the unweighted fit.

With ``weights=``/``offset=``/``exposure=`` gaussian candidates are fitted fold by fold by
weighted least squares (:mod:`pearlstats.engines.weighted`) instead of the fused fold Grams;
binomial and poisson candidates by the same batched Newton engine as unweighted ones, with
the weights and offset inside it (:mod:`pearlstats.engines.glm`; IRLS fold by fold before
0.7.0). The alternative in the same run is the same data without weights; the weighted fit is
given unit frequency weights, so both fit the same models and the ratio is the engines' cost
alone. Three 20-column blocks (7 candidates), 5 folds, ``honest=False``, one BLAS thread;
median wall and CPU seconds of ``--repeats`` interleaved runs, the load average before and
after.

Run ``python benchmarks/bench_obsweights.py`` (``--help`` for options; from a worktree, with
``PYTHONPATH=.`` so that its ``pearlstats`` is imported).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

import pearlstats as pearl


def _data(family: str, n: int) -> dict:
    rng = np.random.default_rng(0)
    data = {name: rng.normal(size=(n, 20)) for name in "abc"}
    eta = 0.3 * data["a"][:, 0] - 0.2 * data["b"][:, 1]
    data["y"] = {"gaussian": eta + rng.normal(size=n),
                 "poisson": rng.poisson(np.exp(eta)).astype(float),
                 "binomial": (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)}[family]
    return data


def _clock(func) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    func()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--families", nargs="+", default=["gaussian", "binomial", "poisson"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    print("| family | n | unweighted wall s | weighted wall s | unweighted CPU s | "
          "weighted CPU s | CPU ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for family in args.families:
        for n in args.rows:
            data = _data(family, n)

            def fit(**kwargs):
                return pearl.fit("y ~ block(a) + block(b) + block(c)", data, family=family,
                                 honest=False, seed=0, progress=False, **kwargs)

            def weighted():
                return fit(weights=np.ones(n), weight_type="frequency")

            times: dict = {"plain": [], "weighted": []}
            with threadpool_limits(1):
                fit(), weighted()  # warm imports and caches
                for _ in range(args.repeats):
                    times["plain"].append(_clock(fit))
                    times["weighted"].append(_clock(weighted))
            plain_wall, plain_cpu = np.median(times["plain"], axis=0)
            wall, cpu = np.median(times["weighted"], axis=0)
            print(f"| {family} | {n} | {plain_wall:.3f} | {wall:.3f} | {plain_cpu:.3f} | "
                  f"{cpu:.3f} | {cpu / plain_cpu:.2f} |")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
