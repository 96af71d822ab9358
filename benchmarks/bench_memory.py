"""Peak memory of the in-memory ``pearl.fit`` beyond its data, as a ratio to the data (issue 27).

Five 10-column blocks (``bench_scale.make_data``; binomial: ``y > 0`` of the same
linear predictor plus noise; Poisson: counts with mean ``exp(0.3 y)``; multinomial: ten
classes, the deciles of ``y``), every block
subset a candidate (J = 31), K = 10 folds, ``honest`` at its default (lazy: not part
of the fit). For each family two fresh
processes run: one only builds the data, the other builds it and fits. "Beyond the
data" is the difference of their peak RSS (VmHWM of /proc/self/status, the process's
own high-water mark), divided by the data's size. The fitting process then reads
``res.cv_predictions`` and, with ``--summary``, ``res.summary()`` (which runs the lazy
nested cross-validation: *honest* more fits) and reports the peak after each: they are
served from what the fit stored, not by refitting. The out-of-fold predictions the weights
are solved from are n x J numbers (n x J x C for the multinomial: 6x the design at ten
classes), so the report also gives the peak beyond the data *and* that array, and beyond
those and the libraries a fit loads (the peak after the same fit on 300 rows, run first in
the fitting process: about 140 MiB whatever n).

Run (from the repository root, one BLAS thread)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_memory.py
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_memory.py \\
        --families gaussian --summary
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale  # noqa: E402


def peak_mib() -> float:
    """VmHWM of this process, MiB."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM"))
    return int(line.split()[1]) / 1024


def make_data(family: str, n: int, seed: int) -> dict:
    data = bench_scale.make_data(n, seed)
    if family == "binomial":
        data["y"] = (data["y"] > 0).astype(float)
    elif family == "poisson":  # counts with log-mean 0.3 (linear predictor plus noise)
        rng = np.random.default_rng([seed, 1])
        data["y"] = rng.poisson(np.exp(0.3 * data["y"])).astype(float)
    elif family == "multinomial":
        data["y"] = np.digitize(data["y"], np.quantile(data["y"], np.arange(1, 10) / 10))
    return data


def child(family: str, n: int, folds: int, seed: int, fit: bool, summary: bool) -> dict:
    """Run in a fresh process: build the data, optionally fit; peaks and timings."""
    data = make_data(family, n, seed)
    out = {"data_mib": sum(v.nbytes for v in data.values()) / 2**20, "built": peak_mib()}
    if not fit:
        return out
    import pearlstats as pearl

    # The same fit on 300 rows first: every module the fit uses is then loaded (about 140 MiB of
    # libraries, whatever n), so the peak after it is the data plus that fixed cost.
    small = make_data(family, 300, seed)
    pearl.fit(bench_scale.FORMULA, small, family=family, candidates="all", cv=folds, seed=seed,
              progress=False)
    out["imported"] = peak_mib()
    start = time.perf_counter()
    res = pearl.fit(bench_scale.FORMULA, data, family=family, candidates="all", cv=folds,
                    seed=seed)
    out["fit_s"] = time.perf_counter() - start
    out["fitted"] = peak_mib()
    out["cv_predictions_shape"] = list(res.cv_predictions.shape)
    out["oof_mib"] = res.cv_predictions.to_numpy().nbytes / 2**20
    out["after_cv_predictions"] = peak_mib()
    if summary:
        start = time.perf_counter()
        text = str(res.summary())
        out["summary_s"] = time.perf_counter() - start
        out["summary_lines"] = len(text.splitlines())
        out["after_summary"] = peak_mib()
    return out


def run_child(family: str, n: int, folds: int, seed: int, fit: bool, summary: bool) -> dict:
    code = [sys.executable, __file__, "--child", family, "--n", str(n), "--folds", str(folds),
            "--seed", str(seed)] + (["--fit"] if fit else []) + (["--summary"] if summary else [])
    done = subprocess.run(code, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(family: str, base: dict, full: dict) -> None:
    data = base["data_mib"]

    def beyond(key: str) -> str:
        extra = full[key] - base["built"]
        return f"{extra:.0f} MiB = {extra / data:.2f}x the data"

    print(f"{family}: data {data:.0f} MiB; fit {full['fit_s']:.1f} s; peak RSS beyond the data: "
          f"fit {beyond('fitted')}; after res.cv_predictions {full['cv_predictions_shape']} "
          f"{beyond('after_cv_predictions')}")
    extra = full["fitted"] - base["built"] - full["oof_mib"]
    print(f"  the fit's peak beyond the data and its {full['oof_mib']:.0f} MiB of out-of-fold "
          f"predictions: {extra:.0f} MiB = {extra / data:.2f}x the data")
    libraries = full["imported"] - base["built"]
    extra -= libraries
    print(f"  ... and beyond the {libraries:.0f} MiB the libraries take in any fit (the peak after "
          f"a 300-row fit): {extra:.0f} MiB = {extra / data:.2f}x the data")
    if "after_summary" in full:
        print(f"  res.summary() ({full['summary_lines']} lines, {full['summary_s']:.1f} s, "
              f"the lazy nested CV included): {beyond('after_summary')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["gaussian", "binomial"])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summary", action="store_true",
                        help="also time res.summary() (runs the lazy nested CV) and its peak")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--fit", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n, args.folds, args.seed, args.fit,
                               args.summary)))
        return
    print(f"n = {args.n}, five 10-column blocks, J = 31, K = {args.folds}")
    for family in args.families:
        base = run_child(family, args.n, args.folds, args.seed, False, False)
        full = run_child(family, args.n, args.folds, args.seed, True, args.summary)
        report(family, base, full)


if __name__ == "__main__":
    main()
