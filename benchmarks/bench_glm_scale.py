"""Logistic, Poisson and multinomial ``pearl.fit`` against peer loops and the IRLS floor (issue 35).

Five 10-column N(0, 1) blocks (51 design columns with the intercept), every block subset a
candidate (J = 31), ``honest=False``, no ridge. The contenders solve the same problems on the
same folds (``res.folds`` of the pearl fit):

* ``pearl.fit`` (the whole fit: design, cross-validation, weights);
* scikit-learn loops: for every candidate, K fold fits (predicting the held-out rows) and one
  refit on all rows, with ``LogisticRegression(solver="lbfgs", tol=1e-8)`` and
  ``solver="newton-cholesky"`` (Poisson: ``PoissonRegressor``), unpenalised;
* a glum ``GeneralizedLinearRegressor`` loop (binomial and Poisson; if glum is installed).

The peers' loops may run on a seeded sample of the candidates (``--peer-candidates``); their
times are then scaled by J / sample, which the table says. Each contender's out-of-fold
predictions are compared with pearl's on the candidates it fitted (max absolute difference).

The IRLS floor is the issue's: one ``X'X`` over the 51 columns, times 6 iterations, times
sum_j (p_j / 51)^2, times K: what K fold fits of 6 Newton iterations each must at least
compute in Hessians.

Times are medians of ``--rounds`` interleaved rounds (each round runs every contender once),
wall and CPU (``time.process_time``: less inflated than wall time on a shared machine), at
``--threads`` BLAS/OpenMP threads for everyone (threadpoolctl). The load average is printed
before and after.

Run (from the repository root)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_glm_scale.py \
        --family binomial --n 100000 --folds 5
    ... --family poisson --n 1000000 --peer-candidates 4
    ... --family multinomial --n 20000 --classes 10
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pearlstats as pearl  # noqa: E402

BLOCKS = "abcde"
FORMULA = "y ~ " + " + ".join(f"block({b})" for b in BLOCKS)


def make_data(family: str, n: int, seed: int, classes: int = 10) -> dict:
    """y from blocks a, b and c; d and e are pure noise blocks."""
    rng = np.random.default_rng(seed)
    blocks = {b: rng.normal(size=(n, 10)) for b in BLOCKS}
    eta = 0.5 * blocks["a"][:, 0] - 0.5 * blocks["b"][:, 1] + 0.3 * blocks["c"][:, 2]
    if family == "binomial":
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif family == "poisson":
        y = rng.poisson(np.exp(eta)).astype(float)
    else:
        loadings = rng.normal(scale=0.5, size=(3, classes))
        scores = np.column_stack([blocks[b][:, 0] for b in "abc"]) @ loadings
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        y = (rng.random(n)[:, None] > p.cumsum(axis=1)).sum(axis=1).astype(float)
    return {"y": y, **blocks}


def candidate_sets() -> list[tuple[str, ...]]:
    """Block subsets in pearl's label order (its ``candidates="all"``)."""
    return [c for r in range(1, len(BLOCKS) + 1) for c in itertools.combinations(BLOCKS, r)]


def irls_floor(data: dict, folds: int, clock) -> float:
    """One X'X over the 51 columns x 6 iterations x sum_j (p_j / 51)^2 x K (best of 3)."""
    n = len(data["y"])
    X = np.column_stack([np.ones(n)] + [data[b] for b in BLOCKS])
    best = np.inf
    for _ in range(3):
        start = clock()
        X.T @ X
        best = min(best, clock() - start)
    share = sum(((1 + 10 * len(c)) / X.shape[1]) ** 2 for c in candidate_sets())
    return best * 6 * share * folds


def _peer_model(name: str, family: str):
    from sklearn.linear_model import LogisticRegression, PoissonRegressor

    if name == "glum":
        from glum import GeneralizedLinearRegressor

        return GeneralizedLinearRegressor(family=family, alpha=0, gradient_tol=1e-8)
    solver = "lbfgs" if name == "sklearn-lbfgs" else "newton-cholesky"
    if family == "poisson":
        return PoissonRegressor(alpha=0, solver=solver, tol=1e-8, max_iter=1000)
    return LogisticRegression(C=np.inf, solver=solver, tol=1e-8, max_iter=10_000)


def _predict(model, family: str, X: np.ndarray) -> np.ndarray:
    if family == "binomial" and hasattr(model, "predict_proba"):
        return model.predict_proba(X)[:, 1]
    if family == "multinomial":
        return model.predict_proba(X)
    return model.predict(X)


def peer_loop(name: str, family: str, data: dict, folds: np.ndarray, sets: list) -> dict:
    """Out-of-fold predictions of each candidate in *sets* (plus its refit on all rows)."""
    y = data["y"]
    out = {}
    for blocks in sets:
        X = np.column_stack([data[b] for b in blocks])
        pred = np.empty((len(y),) + ((len(np.unique(y)),) if family == "multinomial" else ()))
        for k in range(int(folds.max()) + 1):
            test = folds == k
            model = _peer_model(name, family).fit(X[~test], y[~test])
            pred[test] = _predict(model, family, X[test])
        _peer_model(name, family).fit(X, y)  # the refit pearl's result also holds
        out["+".join(blocks)] = pred
    return out


def pearl_fit(family: str, data: dict, folds: int, seed: int):
    return pearl.fit(FORMULA, data, family=family, candidates="all", cv=folds, seed=seed,
                     honest=False)


def agreement(res, family: str, predictions: dict) -> float:
    """Max |pearl - peer| over the out-of-fold predictions of the peer's candidates."""
    table = res.cv_predictions
    worst = 0.0
    for label, pred in predictions.items():
        ours = table[label].to_numpy()
        worst = max(worst, float(np.nanmax(np.abs(ours.reshape(pred.shape) - pred))))
    return worst


def _timed(func):
    start, cpu = time.perf_counter(), time.process_time()
    value = func()
    return time.perf_counter() - start, time.process_time() - cpu, value


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="binomial",
                        choices=["binomial", "poisson", "multinomial"])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--classes", type=int, default=10, help="multinomial classes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peer-candidates", type=int, default=0,
                        help="candidates the peer loops fit (a seeded sample; 0: all 31)")
    parser.add_argument("--peers", default="sklearn-lbfgs,sklearn-newton-cholesky,glum")
    return parser.parse_args()


def main() -> None:
    from threadpoolctl import threadpool_limits

    args = _options()
    warnings.filterwarnings("ignore")
    load_before = os.getloadavg()
    data = make_data(args.family, args.n, args.seed, args.classes)
    peers = [p for p in args.peers.split(",") if p]
    if args.family == "multinomial":
        peers = [p for p in peers if p != "glum"]  # glum has no multinomial family
    try:
        import glum  # noqa: F401
    except ImportError:
        peers = [p for p in peers if p != "glum"]
    sets = candidate_sets()
    if args.peer_candidates:
        pick = np.random.default_rng(args.seed).choice(len(sets), args.peer_candidates,
                                                       replace=False)
        sets = [sets[i] for i in sorted(pick)]
    scale = len(candidate_sets()) / len(sets)
    times = {name: [] for name in ["pearl.fit"] + peers}
    agree: dict = {}
    with threadpool_limits(args.threads):
        res = pearl_fit(args.family, data, args.folds, args.seed)  # warm imports; the folds
        folds = res.folds
        floor = irls_floor(data, args.folds, time.process_time)
        floor_wall = irls_floor(data, args.folds, time.perf_counter)
        for _ in range(args.rounds):
            wall, cpu, res = _timed(lambda: pearl_fit(args.family, data, args.folds, args.seed))
            times["pearl.fit"].append((wall, cpu))
            for name in peers:
                wall, cpu, pred = _timed(lambda: peer_loop(name, args.family, data, folds, sets))
                times[name].append((wall * scale, cpu * scale))
                agree[name] = agreement(res, args.family, pred)
    load_after = os.getloadavg()
    _report(args, times, agree, floor, floor_wall, scale, len(sets), load_before, load_after)


def _report(args, times, agree, floor, floor_wall, scale, sampled, before, after) -> None:
    mib = args.n * 50 * 8 / 2**20
    print(f"{args.family}, n = {args.n} ({mib:.0f} MiB of blocks), J = 31, K = {args.folds}, "
          f"threads = {args.threads}, medians of {args.rounds} interleaved rounds")
    print(f"load average before {before[0]:.2f} {before[1]:.2f}, after {after[0]:.2f} "
          f"{after[1]:.2f}")
    if scale != 1:
        print(f"peer loops fitted {sampled} of 31 candidates (seeded sample); their times are "
              f"scaled by {scale:.2f}")
    ours = float(np.median([cpu for _, cpu in times["pearl.fit"]]))
    print("| contender | wall s | CPU s | CPU vs pearl.fit | max abs OOF difference |")
    print("| --- | --- | --- | --- | --- |")
    for name, values in times.items():
        wall = float(np.median([w for w, _ in values]))
        cpu = float(np.median([c for _, c in values]))
        diff = "-" if name not in agree else f"{agree[name]:.1e}"
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {cpu / ours:.2f} | {diff} |")
    print(f"| IRLS floor | {floor_wall:.2f} | {floor:.2f} | {floor / ours:.2f} | - |")
    print(f"pearl.fit CPU = {ours / floor:.2f}x the IRLS floor")


if __name__ == "__main__":
    main()
