"""Observation weights: the cost of ``fit(weights=...)`` against the unweighted fit.

With ``weights=``/``offset=``/``exposure=`` every candidate is fitted fold by fold by
weighted least squares or IRLS (:mod:`pearlstats.engines.weighted`) instead of the fused
fold Grams (gaussian) and the batched Newton engine (binomial, poisson). The alternative
in the same run is the same data without weights; the weighted fit is given unit frequency
weights, so both fit the same models and the ratio is the engines' cost alone. Three
20-column blocks (7 candidates), 5 folds, ``honest=False``; median of ``--repeats`` runs.

Run ``python benchmarks/bench_obsweights.py`` (``--help`` for options; from a worktree, with
``PYTHONPATH=.`` so that its ``pearlstats`` is imported).
"""

from __future__ import annotations

import argparse

import numpy as np

import pearlstats as pearl

from _timing import median_time


def _data(family: str, n: int) -> dict:
    rng = np.random.default_rng(0)
    data = {name: rng.normal(size=(n, 20)) for name in "abc"}
    eta = 0.3 * data["a"][:, 0] - 0.2 * data["b"][:, 1]
    data["y"] = {"gaussian": eta + rng.normal(size=n),
                 "poisson": rng.poisson(np.exp(eta)).astype(float),
                 "binomial": (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)}[family]
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'family':<10}{'n':>7}{'unweighted s':>14}{'weighted s':>12}{'ratio':>8}")
    for family in ("gaussian", "binomial", "poisson"):
        for n in args.rows:
            data = _data(family, n)

            def fit(**kwargs):
                return pearl.fit("y ~ block(a) + block(b) + block(c)", data, family=family,
                                 honest=False, seed=0, **kwargs)

            plain, _ = median_time(fit, args.repeats)
            weighted, _ = median_time(
                lambda: fit(weights=np.ones(n), weight_type="frequency"), args.repeats)
            print(f"{family:<10}{n:>7}{plain:>14.3f}{weighted:>12.3f}{weighted / plain:>8.2f}")


if __name__ == "__main__":
    main()
