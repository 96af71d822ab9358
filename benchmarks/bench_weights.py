"""Timing of the simplex weight solvers on large candidate pools.

The pool is the paper's "fusion-matrix column subsets" design: every
non-empty subset of p feature columns is a candidate OLS model, so J = 2^p - 1
(p = 15 gives J = 32 767). Out-of-fold predictions come from K-fold OLS fits
computed from fold Gram matrices, batched by subset size.

Three comparisons:

* n = 10^6, J = 31 (``--gram-n``): every non-empty subset of five 10-column
  random blocks, out-of-fold OLS predictions (10 folds) -- nested,
  near-duplicate candidates whose Gram matrix quadprog rejects as
  ill-conditioned. ``solve_weights`` (checks, duplicate merging, the Gram
  pass, the active-set solve, the certificate, the objective) against the
  floor ``Z'Z`` of the 31 out-of-fold columns, both timed in this run
  (median of 3) with the same threads.

* J = 32 767, n = 1 000: column generation (``solver="active-set"``) alone; the
  dense J x J quadprog problem would need 8.6 GB for the matrix only.
* smaller pools (default p = 9, 10): column generation against dense quadprog
  on the same problem, with their objectives.

Run ``python benchmarks/bench_weights.py`` (``--help`` for sizes).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import quadprog

from pearlstats.weights import solve_weights
from pearlstats.weights.losses import get_loss

from _timing import median_time


def subset_ols_predictions(X: np.ndarray, y: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Out-of-fold OLS predictions (n, 2^p - 1) of every non-empty column subset plus intercept."""
    n, p = X.shape
    Z = np.column_stack([np.ones(n), X])
    fold = np.random.default_rng(seed).permutation(n) % folds
    subsets = [s for k in range(1, p + 1) for s in itertools.combinations(range(1, p + 1), k)]
    P = np.empty((n, len(subsets)))
    for k in range(folds):
        train, test = fold != k, fold == k
        gram, moment = Z[train].T @ Z[train], Z[train].T @ y[train]
        start = 0
        for size in range(1, p + 1):
            count = sum(1 for s in subsets[start:] if len(s) == size)
            cols = np.array([(0,) + s for s in subsets[start : start + count]])  # (count, size + 1)
            beta = np.linalg.solve(
                gram[cols[:, :, None], cols[:, None, :]], moment[cols][..., None]
            )[..., 0]
            P[test, start : start + count] = np.einsum("ick,ck->ic", Z[test][:, cols], beta)
            start += count
    return P


def dense_quadprog(P: np.ndarray, y: np.ndarray) -> float:
    """Plain quadprog on the full J x J problem (ridge 1e-10 * mean diagonal); the objective."""
    n, J = P.shape
    E = y[:, None] - P
    G = E.T @ E / n
    G = G + (1e-10 * np.trace(G) / J) * np.eye(J)
    C = np.column_stack([np.ones(J), np.eye(J)])
    w = quadprog.solve_qp(G + np.trace(G) / J, np.zeros(J), C, np.r_[1.0, np.zeros(J)], meq=1)[0]
    w = np.maximum(w, 0.0) / np.maximum(w, 0.0).sum()
    return float(np.mean((y - P @ w) ** 2))


def problem(n: int, p: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    beta = rng.normal(size=p) * (rng.random(p) < 0.6)
    y = X @ beta + np.sin(X[:, 0]) + rng.normal(size=n)
    return subset_ols_predictions(X, y, folds=5, seed=seed), y


def nested_block_pool(n: int, seed: int, blocks: int = 5, width: int = 10, folds: int = 10):
    """Out-of-fold OLS predictions (n, 2^blocks - 1) of every non-empty subset of random blocks."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, blocks * width))
    y = X[:, :3].sum(axis=1) + 0.5 * X[:, width:width + 2].sum(axis=1) + rng.normal(size=n)
    subsets = [s for k in range(1, blocks + 1) for s in itertools.combinations(range(blocks), k)]
    fold = rng.permutation(n) % folds
    P = np.empty((n, len(subsets)))
    for k in range(folds):
        train = fold != k
        mean, y_mean = X[train].mean(axis=0), y[train].mean()
        Xc = X[train] - mean
        gram, moment = Xc.T @ Xc, Xc.T @ (y[train] - y_mean)
        B = np.zeros((X.shape[1], len(subsets)))  # one coefficient column per candidate
        for j, subset in enumerate(subsets):
            cols = np.concatenate([np.arange(b * width, (b + 1) * width) for b in subset])
            B[cols, j] = np.linalg.solve(gram[np.ix_(cols, cols)], moment[cols])
        test = ~train
        P[test] = y_mean + (X[test] - mean) @ B
    return P, y


def gram_scale(n: int, seed: int) -> None:
    """``solve_weights`` on 31 nested near-duplicate candidates against ``Z'Z`` (same run)."""
    tic = time.perf_counter()
    P, y = nested_block_pool(n, seed)
    print(f"nested pool: n = {n}, J = {P.shape[1]} (built in {time.perf_counter() - tic:.1f} s)")
    loss = get_loss("squared", "gaussian")
    floor, _ = median_time(lambda: P.T @ P, 3)
    solve, sol = median_time(lambda: solve_weights(P, y, loss), 3)
    print(
        f"  solve_weights {solve:.3f} s vs floor Z'Z {floor:.3f} s: {solve / floor:.1f}x "
        f"({sol.solver}, kkt_gap {sol.kkt_gap:.2g}, support {int((sol.weights > 0).sum())})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--p", type=int, default=15, help="feature columns; J = 2^p - 1")
    parser.add_argument(
        "--compare",
        type=int,
        nargs="*",
        default=[9, 10],
        help="p values timed against dense quadprog",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gram-n", type=int, default=1_000_000,
                        help="rows of the nested 31-candidate pool timed against Z'Z (0: skip)")
    args = parser.parse_args()
    loss = get_loss("squared", "gaussian")
    if args.gram_n:
        gram_scale(args.gram_n, args.seed)

    tic = time.perf_counter()
    P, y = problem(args.n, args.p, args.seed)
    print(
        f"candidates: n = {args.n}, J = {P.shape[1]} (built in {time.perf_counter() - tic:.1f} s)"
    )
    tic = time.perf_counter()
    sol = solve_weights(P, y, loss)
    elapsed = time.perf_counter() - tic
    support = int((sol.weights > 0).sum())
    print(
        f"  {sol.solver}: {elapsed:.2f} s, objective {sol.objective:.10g}, "
        f"kkt_gap {sol.kkt_gap:.2g}, "
        f"support {support}, ridge {sol.ridge:.2g}"
    )

    for p in args.compare:
        P, y = problem(args.n, p, args.seed)
        tic = time.perf_counter()
        sol = solve_weights(P, y, loss)
        fast = time.perf_counter() - tic
        tic = time.perf_counter()
        reference = dense_quadprog(P, y)
        slow = time.perf_counter() - tic
        print(
            f"J = {P.shape[1]:5d}: {sol.solver} {fast:.3f} s vs dense quadprog {slow:.3f} s "
            f"(ratio {slow / fast:.1f}); objectives {sol.objective:.10g} vs {reference:.10g}"
        )


if __name__ == "__main__":
    main()
