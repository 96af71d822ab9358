"""Multinomial CV + weights on real Fashion-MNIST images against a scikit-learn loop.

Run from the repository root (needs Debian's ``dataset-fashion-mnist`` and scikit-learn)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_multinomial.py [learned|kpca]
        [--repeats R] [--profile]

Two cases, each with 1 000 labeled images (10 classes), four 10-column blocks
fitted on an unlabeled pool of other images, J = 15 candidates, K = 5 and
``ridge=1e-3``:

* ``learned``: PCA, factor analysis, NMF and a Gaussian random projection of the pixels;
* ``kpca``: four kernel-PCA blocks (rbf, poly, sigmoid, cosine kernels).

The alternative is what a scikit-learn user writes: for every candidate and
fold, standardise the training columns (training mean and SD, as pearlstats'
ridge does) and fit ``LogisticRegression(lbfgs, tol=1e-10)`` with
``C = 1 / (ridge * n_train)``, so that its objective is the mean
cross-entropy plus ``ridge / 2`` times the squared standardised coefficients.
Both use the same folds. pearlstats (``pearl.fit(..., honest=False)``: CV,
weights and the all-rows refits) penalises the C - 1 coefficient vectors of
statsmodels' reference-class parametrisation, scikit-learn the C vectors of
the symmetric one; the two penalised optima differ by O(ridge), so the printed
max |difference| of out-of-fold probabilities measures that, not solver error.
The objective check below evaluates pearlstats' objective at scikit-learn's
solution (mapped to the reference parametrisation) for one fold: it cannot be
lower than at pearlstats' own.
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import warnings

import numpy as np

import pearlstats as pearl
from pearlstats.design.folds import make_folds

from _timing import median_time

N_LABELED, N_POOL, WIDTH, RIDGE, SEED = 1000, 3000, 10, 1e-3, 0


def images():
    data = pearl.datasets.fashion_mnist()
    pixels = data.train_images.reshape(len(data.train_images), -1) / 255.0
    order = np.random.default_rng(SEED).permutation(len(pixels))
    pool = pixels[order[N_LABELED:N_LABELED + N_POOL]]
    labeled = pixels[order[:N_LABELED]]
    return pool, labeled, data.train_labels[order[:N_LABELED]]


def learners(case: str) -> dict:
    from sklearn.decomposition import NMF, PCA, FactorAnalysis
    from sklearn.random_projection import GaussianRandomProjection

    if case == "learned":
        return {
            "pca": PCA(WIDTH, random_state=SEED),
            "fa": FactorAnalysis(WIDTH, random_state=SEED),
            "nmf": NMF(WIDTH, init="nndsvda", max_iter=300, random_state=SEED),
            "proj": GaussianRandomProjection(WIDTH, random_state=SEED),
        }
    return {
        kernel: pearl.KernelPCA(n_components=WIDTH, kernel=kernel, seed=SEED)
        for kernel in ("rbf", "poly", "sigmoid", "cosine")
    }


def problem(case: str):
    pool, labeled, labels = images()
    blocks = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, learner in learners(case).items():
            blocks[name] = learner.fit(pool).transform(labeled)
    folds = make_folds(5, N_LABELED, seed=SEED, strata=labels)
    return blocks, labels, folds


def pearl_fit(blocks, labels, folds, separation="ridge"):
    formula = "y ~ " + " + ".join(f"block({name})" for name in blocks)
    return pearl.fit(formula, {"y": labels}, blocks=blocks, family="multinomial", cv=folds,
                     ridge=RIDGE, honest=False, separation=separation)


def sklearn_loop(blocks, labels, folds, candidates):
    """Out-of-fold probabilities (n, J, C) of a LogisticRegression per candidate and fold."""
    from sklearn.linear_model import LogisticRegression

    out = np.empty((len(labels), len(candidates), 10))
    for j, names in enumerate(candidates):
        X = np.column_stack([blocks[name] for name in names])
        for k in range(folds.max() + 1):
            train = folds != k
            mean, sd = X[train].mean(axis=0), X[train].std(axis=0)
            model = LogisticRegression(C=1.0 / (RIDGE * train.sum()), tol=1e-10, max_iter=10_000)
            model.fit((X[train] - mean) / sd, labels[train])
            out[~train, j] = model.predict_proba((X[~train] - mean) / sd)
    return out


def candidate_sets(res, blocks) -> list[tuple[str, ...]]:
    return [tuple(name for name in blocks if name in label.split("+"))
            for label in res.candidate_labels]


def reference_fit(X_train, labels, X_held):
    """Held-out probabilities of pearlstats' penalised objective minimised by scipy (L-BFGS).

    The objective written out independently: statsmodels' reference-class softmax on the
    training-standardised columns with an intercept, mean cross-entropy plus
    ``RIDGE / 2`` times the squared non-intercept coefficients.
    """
    from scipy.optimize import minimize
    from scipy.special import log_softmax, softmax

    mean, sd = X_train.mean(axis=0), X_train.std(axis=0)
    Z = np.column_stack([np.ones(len(X_train)), (X_train - mean) / sd])
    onehot = np.eye(10)[labels]
    shape = (Z.shape[1], 9)

    def objective(flat):
        B = flat.reshape(shape)
        eta = np.column_stack([np.zeros(len(Z)), Z @ B])
        resid = softmax(eta, axis=1) - onehot
        f = -np.mean(np.sum(onehot * log_softmax(eta, axis=1), axis=1))
        f += RIDGE / 2 * np.sum(B[1:] ** 2)
        grad = Z.T @ resid[:, 1:] / len(Z)
        grad[1:] += RIDGE * B[1:]
        return f, grad.ravel()

    fitted = minimize(objective, np.zeros(np.prod(shape)), jac=True, method="L-BFGS-B",
                      options={"maxiter": 100_000, "gtol": 1e-13, "ftol": 0})
    held = np.column_stack([np.ones(len(X_held)), (X_held - mean) / sd])
    return softmax(np.column_stack([np.zeros(len(held)), held @ fitted.x.reshape(shape)]), axis=1)


def failed_labels(res) -> list[str]:
    """Candidates without out-of-fold predictions (weight 0)."""
    values = res.cv_predictions.to_numpy().reshape(N_LABELED, len(res.candidate_labels), -1)
    return [label for label, v in zip(res.candidate_labels, values.transpose(1, 0, 2))
            if np.isnan(v).all()]


def interleaved_medians(functions: dict, repeats: int) -> tuple[dict, dict]:
    """Median time of each function over *repeats* rounds that call each once in turn.

    Interleaving spreads a shared machine's changing load over all alternatives alike.
    """
    times = {name: [] for name in functions}
    results = {}
    for _ in range(repeats):
        for name, function in functions.items():
            elapsed, results[name] = median_time(function, 1)
            times[name].append(elapsed)
    return {name: float(np.median(t)) for name, t in times.items()}, results


def run(case: str, repeats: int, profile: bool) -> None:
    blocks, labels, folds = problem(case)
    print(f"\n## {case}: blocks {list(blocks)}, n={N_LABELED}, pool {N_POOL}, ridge={RIDGE}")
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        pearl_fit(blocks, labels, folds)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return
    candidates = candidate_sets(pearl_fit(blocks, labels, folds), blocks)
    times, results = interleaved_medians({
        "ridge": lambda: pearl_fit(blocks, labels, folds),
        "drop": lambda: pearl_fit(blocks, labels, folds, "drop"),
        "sklearn": lambda: sklearn_loop(blocks, labels, folds, candidates),
    }, repeats)
    res, theirs = results["ridge"], results["sklearn"]
    ours = res.cv_predictions.to_numpy().reshape(N_LABELED, len(candidates), -1)
    print(f"pearl.fit separation='ridge' (default) {times['ridge']:8.2f} s")
    print(f"pearl.fit separation='drop'            {times['drop']:8.2f} s   "
          f"dropped: {failed_labels(results['drop'])}")
    print(f"scikit-learn lbfgs loop (tol 1e-10)    {times['sklearn']:8.2f} s   "
          f"loop / pearl.fit = {times['sklearn'] / times['ridge']:.2f}x   (medians of {repeats} "
          "interleaved rounds)")
    print(f"max |difference| of out-of-fold probabilities to scikit-learn: "
          f"{np.abs(ours - theirs).max():.2e} (symmetric penalty, another optimum)")
    assert candidates[-1] == tuple(blocks)
    X = np.column_stack([blocks[name] for name in blocks])
    train = folds != 0
    direct = reference_fit(X[train], labels[train], X[~train])
    print(f"all four blocks, fold 0: max |difference| to scipy L-BFGS on pearlstats' objective "
          f"{np.abs(ours[~train, -1] - direct).max():.2e}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*", default=["learned", "kpca"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print(f"# bench_multinomial on {platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    for case in args.cases:
        run(case, args.repeats, args.profile)
