"""Cross-validation engine benchmarks: pearlstats against what a user would otherwise write.

Run from the repository root (after ``pip install ".[test]"``)::

    python benchmarks/bench_cv.py            # every scenario
    python benchmarks/bench_cv.py ols        # one scenario: ols, columns, rows, multinomial

Each scenario runs the alternatives in one process on the same data and folds,
checks they give the same out-of-fold predictions, and prints medians of
repeated timings, the ratios, and peak traced memory. The numbers in
benchmarks/RESULTS.md come from this script.
"""

from __future__ import annotations

import platform
import sys
import tracemalloc
import warnings

import numpy as np
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.design.candidates import build_candidates
from pearlstats.design.folds import make_folds
from pearlstats.engines.multinomial import multinomial_cv_predict
from pearlstats.engines.ols import ols_cv_predict

from _timing import median_time


def peak_memory(func) -> float:
    tracemalloc.start()
    func()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def ols_problem(n=2000, M=8, width=3, seed=0):
    rng = np.random.default_rng(seed)
    blocks = {f"b{m}": rng.normal(size=(n, width)) for m in range(M)}
    y = sum(b @ rng.normal(size=width) for b in list(blocks.values())[:4]) + rng.normal(size=n)
    X = np.column_stack([np.ones(n)] + list(blocks.values()))
    slices = {name: slice(1 + width * m, 1 + width * (m + 1)) for m, name in enumerate(blocks)}
    candidates = build_candidates("all", slices, [str(i) for i in range(X.shape[1])], 1)
    return blocks, X, y, candidates


def naive_statsmodels(X, y, candidates, folds):
    out = np.empty((len(y), len(candidates)))
    for j, candidate in enumerate(candidates):
        for k in range(folds.max() + 1):
            train = folds != k
            fitted = sm.OLS(y[train], X[train][:, candidate.columns]).fit()
            out[~train, j] = fitted.predict(X[~train][:, candidate.columns])
    return out


def numpy_bound(X, y, candidates, folds):
    """The bare algorithm: one Gram pass per fold, a solve per candidate, one product per fold."""
    K = folds.max() + 1
    out = np.empty((len(y), len(candidates)))
    for k in range(K):
        train, test = folds != k, folds == k
        G, b = X[train].T @ X[train], X[train].T @ y[train]
        B = np.zeros((X.shape[1], len(candidates)))
        for j, candidate in enumerate(candidates):
            S = candidate.columns
            B[S, j] = np.linalg.solve(G[np.ix_(S, S)], b[S])
        out[test] = X[test] @ B
    return out


def sklearn_stacking(X, y, candidates, folds):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import StackingRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import PredefinedSplit
    from sklearn.pipeline import make_pipeline

    estimators = [
        (
            f"c{j}",
            make_pipeline(
                ColumnTransformer([("s", "passthrough", list(c.columns[1:]))]), LinearRegression()
            ),
        )
        for j, c in enumerate(candidates)
    ]
    stack = StackingRegressor(
        estimators, final_estimator=LinearRegression(positive=True), cv=PredefinedSplit(folds)
    )
    stack.fit(X, y)
    return stack


def scenario_ols():
    blocks, X, y, candidates = ols_problem()
    folds = make_folds(10, len(y), seed=1)
    print(f"\n## OLS: n={len(y)}, M=8 blocks of 3, J={len(candidates)}, K=10")
    t_engine, ours = median_time(lambda: ols_cv_predict(X, y, candidates, folds), 7)
    t_fit, _ = median_time(
        lambda: pearl.fit(
            "y ~ " + " + ".join(f"block({b})" for b in blocks),
            {"y": y},
            blocks=blocks,
            cv=folds,
            seed=0,
        ),
        5,
    )
    t_numpy, bound = median_time(lambda: numpy_bound(X, y, candidates, folds), 5)
    t_naive, naive = median_time(lambda: naive_statsmodels(X, y, candidates, folds), 1)
    t_stack, _ = median_time(lambda: sklearn_stacking(X, y, candidates, folds), 1)
    assert np.allclose(ours.predictions, naive, atol=1e-8) and np.allclose(bound, naive, atol=1e-8)
    print(f"pearlstats CV engine     {t_engine:9.4f} s")
    print(f"pearlstats fit (all)     {t_fit:9.4f} s   (CV + weights + refits)")
    print(f"numpy lower bound        {t_numpy:9.4f} s   engine / bound = {t_engine / t_numpy:.2f}")
    print(
        f"naive statsmodels loop   {t_naive:9.4f} s   naive / engine = {t_naive / t_engine:.0f}x, "
        f"naive / fit = {t_naive / t_fit:.0f}x"
    )
    print(f"sklearn StackingRegressor{t_stack:9.4f} s   stacking / fit = {t_stack / t_fit:.0f}x")
    peak_ours = peak_memory(lambda: ols_cv_predict(X, y, candidates, folds))
    peak_naive = peak_memory(lambda: naive_statsmodels(X, y, candidates, folds))
    print(
        f"peak traced memory: engine {peak_ours / 2**20:.1f} MiB, "
        f"naive loop {peak_naive / 2**20:.1f} MiB"
    )


def scenario_columns():
    rng = np.random.default_rng(2)
    n = 1000
    A = rng.normal(size=(n, 15))
    y = A @ rng.normal(size=15) + rng.normal(size=n)
    blocks = {f"b{i}": A[:, 3 * i : 3 * i + 3] for i in range(5)}
    print(f"\n## Fusion-column candidates: n={n}, p=15 columns, J=2^15-1=32767, K=5")
    formula = "y ~ " + " + ".join(f"block({b})" for b in blocks)
    t, res = median_time(
        lambda: pearl.fit(formula, {"y": y}, blocks=blocks, candidates="columns", cv=5, seed=0), 1
    )
    print(
        f"pearl.fit (CV + weights) {t:9.2f} s   target < 60 s; "
        f"weight solver {res.weight_solver}, KKT gap {res.kkt_gap:.1e}"
    )


def scenario_rows():
    rng = np.random.default_rng(3)
    n = 10**6
    blocks = {f"b{i}": rng.normal(size=(n, 10)) for i in range(5)}
    y = sum(b[:, 0] for b in blocks.values()) + rng.normal(size=n)
    size = sum(b.nbytes for b in blocks.values())
    formula = "y ~ " + " + ".join(f"block({b})" for b in blocks)
    print(f"\n## Many rows: n={n}, five 10-column blocks ({size / 2**20:.0f} MiB), J=31, K=5")
    t, _ = median_time(lambda: pearl.fit(formula, {"y": y}, blocks=blocks, cv=5, seed=0), 3)
    peak = peak_memory(lambda: pearl.fit(formula, {"y": y}, blocks=blocks, cv=5, seed=0))
    print(f"pearl.fit                {t:9.2f} s   target < 30 s")
    print(
        f"peak traced memory       {peak / 2**20:9.0f} MiB = "
        f"{peak / size:.2f} x the blocks (target < 4x)"
    )


def scenario_multinomial():
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA, KernelPCA

    digits = load_digits()
    rng = np.random.default_rng(4)
    order = rng.permutation(len(digits.target))
    unlabeled, labeled = digits.data[order[1500:]], digits.data[order[:1500]]
    codes = digits.target[order[:1500]]
    # 4 components per block: with 8 the 10-class problem separates in some folds
    # (statsmodels then returns NaN coefficients while reporting convergence).
    width = 4
    learners = {
        "pca": PCA(n_components=width),
        "kpca_rbf": KernelPCA(n_components=width, kernel="rbf", gamma=1e-3),
        "kpca_poly": KernelPCA(n_components=width, kernel="poly", degree=2, gamma=1e-3),
    }
    blocks = {name: learner.fit(unlabeled).transform(labeled) for name, learner in learners.items()}
    X = np.column_stack([np.ones(1500)] + list(blocks.values()))
    slices = {name: slice(1 + width * m, 1 + width * (m + 1)) for m, name in enumerate(blocks)}
    candidates = build_candidates("all", slices, [str(i) for i in range(X.shape[1])], 1)
    folds = make_folds(5, 1500, seed=0, strata=codes)
    print(
        f"\n## Multinomial: digits, 10 classes, 3 blocks of {width} "
        f"(J={len(candidates)}), n=1500, K=5"
    )

    def statsmodels_loop(pool):
        out = np.empty((1500, len(pool), 10))
        for j, candidate in enumerate(pool):
            for k in range(5):
                train = folds != k
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fitted = sm.MNLogit(codes[train], X[train][:, candidate.columns]).fit(
                        disp=0, maxiter=100
                    )
                out[~train, j] = fitted.predict(X[~train][:, candidate.columns])
        return out

    t_ours, ours = median_time(lambda: multinomial_cv_predict(X, codes, 10, candidates, folds), 3)
    t_ridge, _ = median_time(
        lambda: multinomial_cv_predict(X, codes, 10, candidates, folds, separation="ridge"), 3)
    t_sm, theirs = median_time(lambda: statsmodels_loop(candidates), 1)
    print(f"pearlstats CV engine, separation='ridge' (pearl.fit's default) {t_ridge:9.3f} s   "
          f"statsmodels loop / engine = {t_sm / t_ridge:.1f}x")
    ok = ~ours.failed
    agree = np.abs(ours.predictions[:, ok] - theirs[:, ok]).max() if ok.any() else float("nan")
    print(
        f"pearlstats CV engine, separation='drop' {t_ours:9.3f} s   "
        f"failed candidates: {[c.label for c, f in zip(candidates, ours.failed) if f]}"
    )
    print(
        f"statsmodels MNLogit loop {t_sm:9.3f} s   loop / engine = {t_sm / t_ours:.1f}x; "
        f"max |diff| on fitted candidates {agree:.1e}"
    )
    # Separated candidates cost the engine 15 Newton steps before it gives up, while
    # statsmodels stops after a few with NaN coefficients; compare on the others too.
    fitted = [c for c, failed in zip(candidates, ours.failed) if not failed]
    if fitted and len(fitted) < len(candidates):
        t_ours_ok, _ = median_time(lambda: multinomial_cv_predict(X, codes, 10, fitted, folds), 3)
        t_sm_ok, _ = median_time(lambda: statsmodels_loop(fitted), 1)
        print(f"on the {len(fitted)} candidates that do not separate: engine {t_ours_ok:.3f} s, "
              f"statsmodels {t_sm_ok:.3f} s, loop / engine = {t_sm_ok / t_ours_ok:.1f}x")


SCENARIOS = {
    "ols": scenario_ols,
    "columns": scenario_columns,
    "rows": scenario_rows,
    "multinomial": scenario_multinomial,
}

if __name__ == "__main__":
    print(
        f"# bench_cv on {platform.machine()} / {platform.processor() or 'cpu'}, "
        f"Python {platform.python_version()}, "
        f"numpy {np.__version__}, statsmodels {sm.__version__}"
    )
    for name in sys.argv[1:] or list(SCENARIOS):
        SCENARIOS[name]()
