"""Wide sparse blocks: time and peak-memory growth of ``pearl.fit`` with a TF-IDF-like block.

n = 300 rows, a p = 20 000-column sparse block (density 0.5 %, values in [0, 1], the shape
of a TF-IDF matrix) beside a 2-column block: candidates a, w and a+w. Each configuration
runs in a fresh subprocess; after the imports and the data are in memory, the fit is timed
and its peak resident memory growth is ``ru_maxrss`` after minus before the fit. Imports leave
a high-water mark of a few hundred MB, which a small fit does not exceed (growth 0), so the
peak of the fit's own allocations (``tracemalloc``, numpy and scipy buffers included) is
shown too (from a second, identical fit: tracing slows the first one's timing). Targets:
under 1 s and under 200 MB, without a ridge (the wide candidates are screened from their
shape) and with one (fitted in the row space).

The alternative in the same run is the same data with the block given dense
(``words.toarray()``), which is what every sparse block became before this change, at a
smaller width (``--dense-width``, default 2 000) so that it finishes on a shared machine: at
20 000 columns that path took 28-62 s and 6.4 GB (issue 26).

Run ``python benchmarks/bench_sparse.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent("""
    import json, resource, sys, time, tracemalloc, warnings
    import numpy as np, pandas as pd, scipy.sparse as sp
    import pearlstats as pearl
    n, p, family, ridge, dense = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], \\
        float(sys.argv[4]), sys.argv[5] == "dense"
    rng = np.random.default_rng(0)
    words = sp.random(n, p, density=0.005, format="csr", random_state=1, data_rvs=rng.random)
    small = rng.normal(size=(n, 2))
    eta = small[:, 0] + 3 * np.asarray(words[:, :300].sum(axis=1)).ravel()
    y = {"gaussian": eta + rng.normal(size=n), "binomial": (eta > np.median(eta)) * 1.0,
         "multinomial": np.digitize(eta, np.quantile(eta, [1 / 3, 2 / 3]))}[family]
    block = words.toarray() if dense else words
    data = pd.DataFrame({"y": y})
    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pearl.fit("y ~ block(a) + block(w)", data, blocks={"a": small, "w": block},
                             family=family, ridge=ridge, seed=0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    res = fit()
    seconds = time.perf_counter() - start
    growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    tracemalloc.start()  # a second, identical fit: tracemalloc slows what it traces
    fit()
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    print(json.dumps({"seconds": seconds, "growth_mb": growth, "traced_mb": traced,
                      "failed": res.failed[res.failed].index.tolist(),
                      "weights": res.weights.round(3).to_dict()}))
""")


def run(n: int, p: int, family: str, ridge: float, dense: bool, threads: int) -> dict:
    """One configuration in a fresh interpreter (its own ru_maxrss)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n), str(p), family, str(ridge),
         "dense" if dense else "sparse"],
        capture_output=True, text=True, check=True, cwd=root, env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--width", type=int, default=20_000)
    parser.add_argument("--dense-width", type=int, default=2_000,
                        help="width of the dense alternative (0 to skip it)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(f"n={args.rows}, sparse block {args.width} columns (density 0.5%) + 2-column block; "
          f"{args.threads} BLAS thread(s); fresh subprocess per line")
    print(f"{'family':11} {'ridge':>6} {'block':>14} {'seconds':>8} {'RSS MB':>8} {'traced MB':>9}"
          "  failed")
    for family in ("gaussian", "binomial", "multinomial"):
        for ridge in (0.0, 0.1):
            cases = [(args.width, False)]
            if args.dense_width and family != "multinomial":  # dense multinomial: minutes
                cases.append((args.dense_width, True))
            for width, dense in cases:
                r = run(args.rows, width, family, ridge, dense, args.threads)
                kind = f"{'dense' if dense else 'sparse'} {width}"
                print(f"{family:11} {ridge:6g} {kind:>14} {r['seconds']:8.2f} "
                      f"{r['growth_mb']:8.1f} {r['traced_mb']:9.1f}  {r['failed']}")


if __name__ == "__main__":
    main()
