"""``pearl.fit`` at n = 10^6 against the arithmetic floor, measured in the same process.

Five 10-column gaussian blocks (51 design columns with the intercept), every block
subset a candidate (J = 31), K = 10 folds, default ``n_jobs``. The floor is what any
least-squares PEARL fit must at least compute once:

* ``X'X`` over the 51 design columns (the Gram every fold's fit is downdated from),
* one ``X @ B`` with B of 51 x 31 (the candidates' predictions),
* ``Z'Z`` of the 31 out-of-fold columns (the weight stage's Gram).

``honest`` is left at its default (5): the nested re-runs behind ``res.honest`` are
lazy (they run on first use of ``res.honest`` or the summary), so they are not in
the timed fit. Reported: the fit, the floor, their ratio, the weight stage's time
(``solve_draw_weights``), the fit without it, and the fit's and the floor's CPU time
(less inflated than wall time on a loaded machine); ``--profile`` adds a breakdown
by stage (cProfile, cumulative seconds of the pipeline's functions); ``--memory``
runs the fit in a subprocess and reports its peak RSS beyond a subprocess that only
builds the data.

Run (from the repository root, same BLAS threads for everything)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_scale.py
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_scale.py --profile --memory
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pearlstats as pearl  # noqa: E402
import pearlstats.fitting as fitting  # noqa: E402

BLOCKS = "abcde"
FORMULA = "y ~ " + " + ".join(f"block({b})" for b in BLOCKS)
HONEST = inspect.signature(pearl.fit).parameters["honest"].default

# Pipeline functions shown by --profile (module path fragment, function name).
STAGES = [
    ("stages.py", "prepare_rows"),
    ("stages.py", "build_pool"),
    ("stages.py", "assign_folds"),
    ("weight_stage.py", "cross_validate_draws"),
    ("engines/ols.py", "ols_cv_predict"),
    ("weight_stage.py", "solve_draw_weights"),
    ("results/core.py", "results_from_state"),
    ("fitting.py", "fit"),
]


def make_data(n: int, seed: int) -> dict:
    """y from blocks a, b and c plus unit noise; d and e are pure noise blocks."""
    rng = np.random.default_rng(seed)
    blocks = {b: rng.normal(size=(n, 10)) for b in BLOCKS}
    eta = 0.5 * blocks["a"][:, 0] - 0.5 * blocks["b"][:, 1] + 0.3 * blocks["c"][:, 2]
    return {"y": eta + rng.normal(size=n), **blocks}


def floor_seconds(data: dict, folds: int, seed: int, clock=time.perf_counter) -> float:
    """Best of three timings of X'X (51 columns), X @ B (B 51 x 31) and Z'Z (31 columns).

    By *clock*: wall time by default, ``time.process_time`` for CPU time.
    """
    n = len(data["y"])
    X = np.column_stack([np.ones(n)] + [data[b] for b in BLOCKS])
    B = np.random.default_rng(seed).normal(size=(X.shape[1], 2 ** len(BLOCKS) - 1))
    best = np.inf
    for _ in range(3):
        start = clock()
        X.T @ X
        Z = X @ B
        Z.T @ Z
        best = min(best, clock() - start)
    return best


class _StageTimer:
    """Wall time spent in ``fitting.solve_draw_weights`` (the weight stage) during a fit."""

    def __init__(self):
        self.seconds = 0.0
        self._original = fitting.solve_draw_weights

    def __enter__(self):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return self._original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        fitting.solve_draw_weights = timed
        return self

    def __exit__(self, *exc):
        fitting.solve_draw_weights = self._original


def run_fit(data: dict, folds: int, seed: int):
    return pearl.fit(FORMULA, data, candidates="all", cv=folds, seed=seed)


def print_profile(profile: cProfile.Profile, top: int) -> None:
    stats = pstats.Stats(profile)
    rows = {}
    for (path, _, name), (_, _, _, cumulative, _) in stats.stats.items():
        for fragment, wanted in STAGES:
            if name == wanted and path.endswith(fragment):
                rows[(fragment, wanted)] = rows.get((fragment, wanted), 0.0) + cumulative
    print("stage breakdown (cumulative s):")
    for key in STAGES:
        if key in rows:
            print(f"  {key[0]}:{key[1]:<24} {rows[key]:7.2f}")
    print(f"top {top} functions by own time:")
    stats.sort_stats("tottime").print_stats(top)


def peak_rss_mib(n: int, folds: int, seed: int, fit: bool) -> float:
    """Peak RSS (MiB) of a fresh process that builds the data and, if *fit*, fits.

    Read from VmHWM in /proc/self/status: the high-water mark of the process's own
    memory (``getrusage``'s ru_maxrss keeps the parent's high-water mark across exec).
    """
    code = (
        "import sys; sys.path.insert(0, %r); import bench_scale as b; "
        "d = b.make_data(%d, %d); "
        "%s"
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"
    ) % (str(Path(__file__).parent), n, seed,
         "b.run_fit(d, %d, %d); " % (folds, seed) if fit else "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) / 1024  # kB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="fits timed (median reported)")
    parser.add_argument("--profile", action="store_true", help="cProfile breakdown by stage")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--memory", action="store_true",
                        help="peak RSS of the fit beyond the data, in subprocesses")
    args = parser.parse_args()

    data = make_data(args.n, args.seed)
    data_mib = sum(v.nbytes for v in data.values()) / 2**20
    run_fit(data, args.folds, args.seed) if args.n <= 200_000 else None  # warm imports
    # The floor is timed around every fit (best of three each time): on a shared machine the
    # load then falls on both; the ratio uses the median of those floors.
    # CPU time (one BLAS thread: about the wall time on an idle machine) is reported too: on
    # a loaded machine the long fit loses more wall time to other jobs than the short floor.
    floors, times, weights = [floor_seconds(data, args.folds, args.seed)], [], []
    cpu_floors, cpu_times = [floor_seconds(data, args.folds, args.seed, time.process_time)], []
    for _ in range(args.repeats):
        with _StageTimer() as timer:
            start, cpu_start = time.perf_counter(), time.process_time()
            res = run_fit(data, args.folds, args.seed)
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu_start)
        weights.append(timer.seconds)
        floors.append(floor_seconds(data, args.folds, args.seed))
        cpu_floors.append(floor_seconds(data, args.folds, args.seed, time.process_time))
    fit_s, weight_s = float(np.median(times)), float(np.median(weights))
    floor = float(np.median(floors))
    print(f"n = {args.n}, five 10-column blocks ({data_mib:.0f} MiB), J = {len(res.weights)}, "
          f"K = {args.folds}, honest = {HONEST} (its default; lazy: not run by the fit)")
    print(f"floor (X'X + X @ B + Z'Z): {floor:.3f} s (median; range {min(floors):.3f}-"
          f"{max(floors):.3f} s)")
    print(f"pearl.fit: {fit_s:.2f} s = {fit_s / floor:.1f}x the floor")
    print(f"  weight stage: {weight_s:.2f} s; fit without it: {fit_s - weight_s:.2f} s "
          f"= {(fit_s - weight_s) / floor:.1f}x the floor")
    cpu_fit, cpu_floor = float(np.median(cpu_times)), float(np.median(cpu_floors))
    print(f"CPU time: pearl.fit {cpu_fit:.2f} s (range {min(cpu_times):.2f}-{max(cpu_times):.2f}"
          f" s), floor {cpu_floor:.3f} s: {cpu_fit / cpu_floor:.1f}x the floor")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        run_fit(data, args.folds, args.seed)
        profile.disable()
        print_profile(profile, args.top)
    if args.memory:
        del data, res
        base = peak_rss_mib(args.n, args.folds, args.seed, fit=False)
        full = peak_rss_mib(args.n, args.folds, args.seed, fit=True)
        print(f"peak RSS: data only {base:.0f} MiB, data + fit {full:.0f} MiB; "
              f"fit beyond the data {full - base:.0f} MiB = {(full - base) / data_mib:.2f}x "
              "the data")


if __name__ == "__main__":
    main()
