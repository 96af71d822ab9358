"""PEARL on dask data larger than the workers' memory, against the in-memory fit (issue 27).

Five 10-column blocks, every block subset a candidate (J = 31), K folds (``--folds``,
default 5). The dask data are generated lazily from a seed by ``dask.array.random`` (each
pass over the data regenerates it; nothing is persisted or written), on a LocalCluster of
two single-threaded workers with a memory limit per worker well below the data's size.
The in-memory reference fits the same model on n_mem rows held as numpy arrays, in the
same process before the cluster starts. ``pearl.fit`` returns a ``PearlResults`` for both.

Reported: seconds, seconds per 10^6 rows and their ratio (dask / in-memory), the passes
over the data (``res.stages.partitions.fitted.passes``), and the peak process memory of
the workers (the cluster's sum sampled every 0.5 s by ``MemorySampler``). With
``--summary``, ``res.summary()`` is timed too: it computes the honest risks (``--honest``
outer folds, nested re-runs by passes on the cluster) and its Strategies panel is printed.

Families: gaussian, binomial, and multinomial with ``--classes`` classes (class c's
linear predictor is a block column plus an offset; class 0 is the reference).

Run (from the repository root)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_dask.py \\
        --family binomial --n 10000000
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_dask.py \\
        --family multinomial --classes 10 --n 1000000 --n-mem 1000000
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_dask.py \\
        --family binomial --n 1000000 --summary --honest 5
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_dask.py --in-process \\
        --family binomial --n 200000 --n-mem 200000 --chunk 50000 --rounds 3

``--in-process`` runs no cluster: both fits in one process, the dask fit on dask's
synchronous scheduler, in wall and CPU time (medians of ``--rounds`` alternating rounds):
the per-row cost of the passes themselves, on a machine whose other load would otherwise
decide how a LocalCluster's workers share the cores.

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


def _signal(blocks):
    return 0.5 * blocks["a"][:, 0] - 0.5 * blocks["b"][:, 1] + 0.3 * blocks["c"][:, 2]


def _class_etas(blocks, classes: int):
    """Class c > 0: one block column (cycling over a, b, c) plus an offset; class 0: zero."""
    return [0.6 * blocks["abc"[c % 3]][:, c % 10] + 0.1 * c for c in range(1, classes)]


def _response(xp, blocks, family: str, classes: int, uniform, normal):
    """y from the blocks: *xp* is numpy or dask.array; *uniform*, *normal* draw n values."""
    if family == "gaussian":
        return _signal(blocks) + normal()
    if family == "binomial":
        return (uniform() < 1 / (1 + xp.exp(-_signal(blocks)))).astype(float)
    # multinomial: inverse-CDF draw from the softmax of the class predictors
    exps = [xp.exp(eta) for eta in _class_etas(blocks, classes)]
    total = 1 + sum(exps)
    u = uniform() * total
    y, cum = 0.0, 1.0
    for e in exps:  # y = how many cumulative class weights u has passed
        y = y + (u >= cum)
        cum = cum + e
    return y.astype(float)


def dask_data(n: int, chunk: int, family: str, classes: int, seed: int) -> dict:
    import dask.array as da

    rng = da.random.default_rng(seed)
    blocks = {b: rng.normal(size=(n, 10), chunks=(chunk, 10)) for b in BLOCKS}
    y = _response(da, blocks, family, classes, lambda: rng.random(size=n, chunks=chunk),
                  lambda: rng.normal(size=n, chunks=chunk))
    return {"y": y, **blocks}


def memory_data(n: int, family: str, classes: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    blocks = {b: rng.normal(size=(n, 10)) for b in BLOCKS}
    y = _response(np, blocks, family, classes, lambda: rng.random(size=n),
                  lambda: rng.normal(size=n))
    return {"y": y, **blocks}


def _options(args) -> dict:
    return {"family": args.family, "cv": args.folds, "seed": args.seed, "honest": args.honest}


def in_memory(args) -> float:
    """Seconds of the in-memory fit at n_mem rows (data built outside the timing)."""
    data = memory_data(args.n_mem, args.family, args.classes, args.seed)
    start = time.perf_counter()
    pearl.fit(FORMULA, data, **_options(args))
    seconds = time.perf_counter() - start
    print(f"in-memory n={args.n_mem}: {seconds:.1f} s, "
          f"{seconds / args.n_mem * 1e6:.2f} s per 1e6 rows", flush=True)
    return seconds


def on_cluster(args) -> tuple[float, object]:
    """Fit (and with --summary, summarise) on a LocalCluster; seconds of the fit."""
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    design_gb = args.n * 51 * 8 / 1e9
    print(f"dask n={args.n}: design {design_gb:.1f} GB, chunks of {args.chunk} rows, "
          f"2 workers x {args.memory_limit}", flush=True)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                     memory_limit=args.memory_limit, dashboard_address=None) as cluster,
        Client(cluster),
    ):
        sampler = MemorySampler()
        data = dask_data(args.n, args.chunk, args.family, args.classes, args.seed)
        start = time.perf_counter()
        with sampler.sample("fit", interval=0.5):
            res = pearl.fit(FORMULA, data, **_options(args))
        seconds = time.perf_counter() - start
        passes = res.stages.partitions.fitted.passes
        peak = sampler.to_pandas()["fit"].max() / 1e9
        print(f"dask: {seconds:.1f} s, {seconds / args.n * 1e6:.2f} s per 1e6 rows, "
              f"{passes} passes, peak worker memory (sum of 2) {peak:.2f} GB", flush=True)
        print(res.weights.sort_values(ascending=False).head(5).round(3).to_string())
        if args.summary:
            start = time.perf_counter()
            with sampler.sample("summary", interval=0.5):
                summary = res.summary()
            took = time.perf_counter() - start
            peak = sampler.to_pandas()["summary"].max() / 1e9
            print(f"res.summary() with honest={args.honest} on the cluster: {took:.1f} s, "
                  f"peak worker memory (sum of 2) {peak:.2f} GB", flush=True)
            print(summary.panels["strategies"])
    return seconds, res


def in_process(args) -> None:
    """Both fits in this process, the dask one on the synchronous scheduler, --rounds times.

    Alternating in-memory and dask fits, each timed in wall and CPU seconds (process CPU:
    the same one BLAS thread on both sides, and it holds when the machine is loaded, where
    a LocalCluster's wall time measures how the workers shared the cores). The dask data is
    regenerated by every pass, as data read from storage would be read again.
    """
    import dask

    mem = memory_data(args.n_mem, args.family, args.classes, args.seed)
    lazy = dask_data(args.n, args.chunk, args.family, args.classes, args.seed)
    times = {"in-memory": [], "dask": []}
    passes = None
    for _ in range(args.rounds):
        for name in times:
            wall, cpu = time.perf_counter(), time.process_time()
            if name == "dask":
                with dask.config.set(scheduler="synchronous"):
                    res = pearl.fit(FORMULA, lazy, **_options(args))
                passes = res.stages.partitions.fitted.passes
            else:
                pearl.fit(FORMULA, mem, **_options(args))
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    rows = {"in-memory": args.n_mem, "dask": args.n}
    median = {name: np.median(np.array(values), axis=0) for name, values in times.items()}
    for name, (wall, cpu) in median.items():
        print(f"{name} n={rows[name]}: median of {args.rounds}: {wall:.2f} s wall, {cpu:.2f} s "
              f"CPU, {cpu / rows[name] * 1e6:.2f} CPU-s per 1e6 rows", flush=True)
    per_row = {name: median[name] / rows[name] for name in median}
    wall_ratio, cpu_ratio = per_row["dask"] / per_row["in-memory"]
    print(f"dask passes: {passes}; dask / in-memory per row: {wall_ratio:.2f} wall, "
          f"{cpu_ratio:.2f} CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="binomial",
                        choices=["gaussian", "binomial", "multinomial"])
    parser.add_argument("--classes", type=int, default=10, help="multinomial only")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--n-mem", type=int, default=1_000_000)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--honest", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=250_000)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-memory", action="store_true",
                        help="no in-memory reference (no ratio)")
    parser.add_argument("--summary", action="store_true",
                        help="also time res.summary() (honest risks on the cluster)")
    parser.add_argument("--in-process", action="store_true",
                        help="no cluster: both fits in this process (dask's synchronous "
                             "scheduler), wall and CPU time, medians of --rounds")
    parser.add_argument("--rounds", type=int, default=3, help="with --in-process")
    args = parser.parse_args()

    if args.in_process:
        in_process(args)
        return
    t_mem = None if args.skip_memory else in_memory(args)
    t_dask, _ = on_cluster(args)
    if t_mem is not None:
        ratio = (t_dask / args.n) / (t_mem / args.n_mem)
        print(f"ratio dask / in-memory per row: {ratio:.2f}")


if __name__ == "__main__":
    main()
