"""PEARL on dask data larger than the workers' memory, against the in-memory engine.

Five 10-column blocks, every block subset a candidate (J = 31), K = 5. The
dask data are generated lazily from a seed by ``dask.array.random`` (each
pass over the data regenerates it; nothing is persisted or written), on a
LocalCluster of two single-threaded workers with a memory limit per worker
well below the data's size. The in-memory reference fits the same model on
n_mem rows held as numpy arrays. Reported: seconds, seconds per 10^6 rows,
their ratio, passes over the data, and the peak process memory of the
workers (the cluster's sum sampled every 0.5 s by ``MemorySampler``).

Run (from the repository root)::

    nice -n 10 python3 benchmarks/bench_dask.py --family gaussian --n 10000000
    nice -n 10 python3 benchmarks/bench_dask.py --family binomial --n 10000000

On a real multi-machine cluster nothing in pearlstats changes: connect the
client to the scheduler (``Client("tcp://scheduler:8786")``) instead of
starting a LocalCluster, and give the workers data they can read or generate
(e.g. ``dd.read_parquet`` on shared storage); every pass then reads each
partition on the worker that holds it, and only p x p and J x J sums travel.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pearlstats as pearl  # noqa: E402

BLOCKS = "abcde"
FORMULA = "y ~ " + " + ".join(f"block({b})" for b in BLOCKS)


def _signal(blocks, family):
    eta = 0.5 * blocks["a"][:, 0] - 0.5 * blocks["b"][:, 1] + 0.3 * blocks["c"][:, 2]
    return eta


def dask_data(n: int, chunk: int, family: str, seed: int):
    import dask.array as da

    rng = da.random.default_rng(seed)
    blocks = {b: rng.normal(size=(n, 10), chunks=(chunk, 10)) for b in BLOCKS}
    eta = _signal(blocks, family)
    if family == "gaussian":
        y = eta + rng.normal(size=n, chunks=chunk)
    else:
        y = (rng.random(size=n, chunks=chunk) < 1 / (1 + da.exp(-eta))).astype(float)
    return {"y": y, **blocks}


def memory_data(n: int, family: str, seed: int):
    rng = np.random.default_rng(seed)
    blocks = {b: rng.normal(size=(n, 10)) for b in BLOCKS}
    eta = _signal(blocks, family)
    if family == "gaussian":
        y = eta + rng.normal(size=n)
    else:
        y = (rng.random(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return {"y": y, **blocks}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", default="gaussian", choices=["gaussian", "binomial"])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--n-mem", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=250_000)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()

    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    if not args.skip_memory:
        data = memory_data(args.n_mem, args.family, args.seed)
        start = time.perf_counter()
        pearl.fit(FORMULA, data, family=args.family, cv=5, seed=args.seed, honest=False)
        t_mem = time.perf_counter() - start
        del data
        print(
            f"in-memory n={args.n_mem}: {t_mem:.1f} s, "
            f"{t_mem / args.n_mem * 1e6:.2f} s per 1e6 rows"
        )
    design_gb = args.n * 51 * 8 / 1e9
    print(f"dask n={args.n}: design {design_gb:.1f} GB, chunks of {args.chunk} rows, "
          f"2 workers x {args.memory_limit}")
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit=args.memory_limit,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        sampler = MemorySampler()
        data = dask_data(args.n, args.chunk, args.family, args.seed)
        start = time.perf_counter()
        with sampler.sample("fit", interval=0.5):
            res = pearl.fit(FORMULA, data, family=args.family, cv=5, seed=args.seed)
        t_dask = time.perf_counter() - start
        peak = sampler.to_pandas().max().iloc[0] / 1e9
        del client
    per = t_dask / args.n * 1e6
    print(f"dask: {t_dask:.1f} s, {per:.2f} s per 1e6 rows, {res.passes} passes, "
          f"peak worker memory (sum of 2) {peak:.2f} GB")
    print(res)
    if not args.skip_memory:
        print(f"ratio dask / in-memory per row: {per / (t_mem / args.n_mem * 1e6):.2f}")


if __name__ == "__main__":
    main()
