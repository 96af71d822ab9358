"""Multinomial CV + weights on real Fashion-MNIST images against a scikit-learn loop.

Run from the repository root (needs Debian's ``dataset-fashion-mnist`` and scikit-learn), with
the repository first on the path so that this checkout's ``pearlstats`` is the one timed::

    PYTHONPATH=. python benchmarks/bench_multinomial.py [learned|kpca|pca] [--repeats R]
        [--threads 1 2] [--profile]

Do not set ``OMP_NUM_THREADS`` or ``OPENBLAS_NUM_THREADS``: each setting of ``--threads`` is
applied inside the process with threadpoolctl to BLAS and OpenMP (scikit-learn's loss functions
use OpenMP threads), to both sides alike, one process each (scikit-learn with ``n_jobs=1``).

Two cases, each with 1 000 labeled images (10 classes), four 10-column blocks
fitted on an unlabeled pool of other images, J = 15 candidates, K = 5 and
``ridge=1e-3``:

* ``learned``: PCA, factor analysis, NMF and a Gaussian random projection of the pixels;
* ``kpca``: four kernel-PCA blocks (rbf, poly, sigmoid, cosine kernels);
* ``pca``: the first 40 principal components of the pixels split into four blocks of 10
  (components 1-10, 11-20, ...): well-conditioned blocks, where lbfgs does not struggle
  (issue 35).

The alternative is what a scikit-learn user writes: for every candidate and
fold, standardise the training columns (training mean and SD, as pearlstats'
ridge does) and fit ``LogisticRegression(lbfgs, tol=1e-10)`` with
``C = 1 / (ridge * n_train)``, so that its objective is the mean
cross-entropy plus ``ridge / 2`` times the squared standardised coefficients.
Both use the same folds. pearlstats (``pearl.fit(..., honest=False)``: CV,
weights and the all-rows refits) penalises the C - 1 coefficient vectors of
statsmodels' reference-class parametrisation, scikit-learn the C vectors of
the symmetric one: two different objectives with different optima.

**Certificate.** Equal speed means nothing at unequal accuracy, so every fold fit of both sides
(J candidates x K folds each) is checked against a reference minimum of *its own* objective,
written out here and minimised by scipy's ``trust-ncg`` (exact gradients and Hessian-vector
products) and two full Newton steps, to a gradient norm below 1e-11: each side's objective at
its own fit must be within ``CERTIFY`` (1e-9) relative of the reference minimum. pearlstats'
fold fits are recorded (outside the timed runs) by wrapping its multinomial engine's solver;
their objective is evaluated from the linear predictors they give the training rows,
re-expressed on the fold-standardised columns.
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

import pearlstats as pearl
from pearlstats.design.folds import make_folds

from _timing import median_time

N_LABELED, N_POOL, WIDTH, RIDGE, SEED = 1000, 3000, 10, 1e-3, 0
N_CLASSES = 10
CERTIFY = 1e-9


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
        if case == "pca":
            from sklearn.decomposition import PCA

            scores = PCA(4 * WIDTH, random_state=SEED).fit(pool).transform(labeled)
            for b in range(4):
                blocks[f"pc{b + 1}"] = scores[:, b * WIDTH:(b + 1) * WIDTH]
        for name, learner in ({} if case == "pca" else learners(case)).items():
            blocks[name] = learner.fit(pool).transform(labeled)
    folds = make_folds(5, N_LABELED, seed=SEED, strata=labels)
    return blocks, labels, folds


def pearl_fit(blocks, labels, folds):
    formula = "y ~ " + " + ".join(f"block({name})" for name in blocks)
    return pearl.fit(formula, {"y": labels}, blocks=blocks, family="multinomial", cv=folds,
                     ridge=RIDGE, honest=False)


def sklearn_fits(blocks, labels, folds, candidates):
    """Out-of-fold probabilities (n, J, C) and the fitted models [j][k] of the scikit-learn loop."""
    from sklearn.linear_model import LogisticRegression

    out = np.empty((len(labels), len(candidates), N_CLASSES))
    models = []
    for j, names in enumerate(candidates):
        X = np.column_stack([blocks[name] for name in names])
        models.append([])
        for k in range(folds.max() + 1):
            train = folds != k
            mean, sd = X[train].mean(axis=0), X[train].std(axis=0)
            model = LogisticRegression(C=1.0 / (RIDGE * train.sum()), tol=1e-10, max_iter=10_000)
            model.fit((X[train] - mean) / sd, labels[train])
            out[~train, j] = model.predict_proba((X[~train] - mean) / sd)
            models[-1].append(model)
    return out, models


def candidate_sets(res, blocks) -> list[tuple[str, ...]]:
    return [tuple(name for name in blocks if name in label.split("+"))
            for label in res.candidate_labels]


# --- the certificate -------------------------------------------------------------------------

def objective(Z, onehot, symmetric):
    """Mean cross-entropy + RIDGE/2 |non-intercept coefficients|^2, its gradient and Hv.

    ``Z`` is (n, q) with the intercept in column 0; *params* is (q, C) for the symmetric
    parametrisation (class 0's intercept fixed at 0: the objective does not depend on a
    common shift of the intercepts) or (q, C - 1) for the reference-class one (class 0's
    linear predictor is 0).
    """
    from scipy.special import log_softmax

    C = onehot.shape[1]
    width = C if symmetric else C - 1
    n = len(Z)

    def unpack(flat):
        B = np.zeros((Z.shape[1], width))
        free = np.ones_like(B, dtype=bool)
        if symmetric:
            free[0, 0] = False
        B[free] = flat
        return B, free

    def eta_of(B):
        eta = Z @ B
        return eta if symmetric else np.column_stack([np.zeros(n), eta])

    def value_and_gradient(flat):
        B, free = unpack(flat)
        logp = log_softmax(eta_of(B), axis=1)
        f = -np.mean(np.sum(onehot * logp, axis=1)) + RIDGE / 2 * np.sum(B[1:] ** 2)
        resid = np.exp(logp) - onehot
        G = Z.T @ (resid if symmetric else resid[:, 1:]) / n
        G[1:] += RIDGE * B[1:]
        return f, G[free]

    def hessp(flat, vector):
        B, free = unpack(flat)
        V, _ = unpack(vector)
        p = np.exp(log_softmax(eta_of(B), axis=1))
        a = eta_of(V) if symmetric else np.column_stack([np.zeros(n), Z @ V])
        r = p * (a - np.sum(p * a, axis=1, keepdims=True))
        HV = Z.T @ (r if symmetric else r[:, 1:]) / n
        HV[1:] += RIDGE * V[1:]
        return HV[free]

    size = Z.shape[1] * width - symmetric
    return value_and_gradient, hessp, size


def reference_minimum(Z, onehot, symmetric) -> float:
    """The objective's minimum by scipy's trust-region Newton-CG, polished by full Newton steps
    (the Hessian assembled from its products with the unit vectors), certified by its gradient.
    """
    from scipy.optimize import minimize

    fun, hessp, size = objective(Z, onehot, symmetric)
    x = minimize(fun, np.zeros(size), jac=True, hessp=hessp, method="trust-ncg",
                 options={"gtol": 1e-10, "maxiter": 1000}).x
    for _ in range(2):
        H = np.column_stack([hessp(x, e) for e in np.eye(size)])
        x = x - np.linalg.solve((H + H.T) / 2, fun(x)[1])
    # With the Hessian's smallest eigenvalue mu (about RIDGE for the penalised directions),
    # f - f* <= |g|^2 / (2 mu): below 1e-19 here.
    value, gradient = fun(x)
    assert np.linalg.norm(gradient) < 1e-11, np.linalg.norm(gradient)
    return float(value)


def standardised(X, train):
    mean, sd = X[train].mean(axis=0), X[train].std(axis=0)
    return np.column_stack([np.ones(train.sum()), (X[train] - mean) / sd])


def record_pearl_folds(blocks, labels, folds):
    """pearlstats' fold fits, recorded by wrapping the engine's solver (not timed)."""
    import pearlstats.engines.multinomial as engine

    recorded, solve = [], engine._solve

    def recording(Xs, codes, n_classes, weights, *args, **kwargs):
        result = solve(Xs, codes, n_classes, weights, *args, **kwargs)
        # a candidate's fold problems: not an all-rows fit, nor the intercept-only Null's folds
        if weights.shape[0] > 1 and Xs.shape[1] > 1:
            recorded.append((Xs, weights, result.theta))
        return result

    engine._solve = recording
    try:
        res = pearl_fit(blocks, labels, folds)
    finally:
        engine._solve = solve
    return res, recorded


def pearl_objective(Xs, weights_k, theta_k, Z_fold, onehot):
    """pearlstats' objective at its fold fit: its training rows' linear predictors, with the
    coefficients re-expressed on the fold-standardised columns (an exact change of basis)."""
    eta = Xs[weights_k > 0] @ theta_k.reshape(N_CLASSES - 1, -1).T  # (n_train, C - 1)
    B, *_ = np.linalg.lstsq(Z_fold, eta, rcond=None)
    assert np.abs(Z_fold @ B - eta).max() < 1e-8 * max(1.0, np.abs(eta).max())
    return objective_value(Z_fold, onehot, B, symmetric=False)


def objective_value(Z, onehot, B, symmetric):
    """The objective at coefficients B (q, C) or (q, C - 1), intercepts in row 0."""
    fun, _, _ = objective(Z, onehot, symmetric)
    free = np.ones_like(B, dtype=bool)
    if symmetric:
        B = B.copy()
        B[0] -= B[0, 0]  # the gauge: a common shift of the intercepts changes nothing
        free[0, 0] = False
    return fun(B[free])[0]


def certify(blocks, labels, folds, candidates, recorded, models) -> dict:
    """Largest relative excess of each side's objective over the reference minimum."""
    onehot_all = np.eye(N_CLASSES)[labels]
    excess = {"pearlstats": [], "scikit-learn": []}
    assert len(recorded) == len(candidates), "a candidate was refitted on the ridge ladder"
    for j, names in enumerate(candidates):
        X = np.column_stack([blocks[name] for name in names])
        Xs, weights, theta = recorded[j]
        for k in range(folds.max() + 1):
            train = folds != k
            assert np.array_equal(weights[k] > 0, train)
            Z, onehot = standardised(X, train), onehot_all[train]
            ours = pearl_objective(Xs, weights[k], theta[k], Z, onehot)
            model = models[j][k]
            theirs = objective_value(Z, onehot, np.vstack([model.intercept_, model.coef_.T]),
                                     symmetric=True)
            for side, value, symmetric in (("pearlstats", ours, False),
                                           ("scikit-learn", theirs, True)):
                best = reference_minimum(Z, onehot, symmetric)
                excess[side].append((value - best) / abs(best))
    return {side: float(np.max(values)) for side, values in excess.items()}


# --- timing ----------------------------------------------------------------------------------

def interleaved_medians(functions: dict, repeats: int, threads: int) -> tuple[dict, dict, dict]:
    """Median wall and CPU (process) time of each function over *repeats* rounds that call each
    once in turn, every call under the same BLAS and OpenMP thread limit; and the results.

    Interleaving spreads a shared machine's changing load over all alternatives alike; CPU time
    is less sensitive to that load than wall time (it still counts slower cycles).
    """
    times = {name: [] for name in functions}
    cpu = {name: [] for name in functions}
    results = {}
    for _ in range(repeats):
        for name, function in functions.items():
            with threadpool_limits(limits=threads):
                start = time.process_time()
                elapsed, results[name] = median_time(function, 1)
                cpu[name].append(time.process_time() - start)
            times[name].append(elapsed)
    def medians(values):
        return {name: float(np.median(t)) for name, t in values.items()}

    return medians(times), medians(cpu), results


def run(case: str, repeats: int, threads: list[int], profile: bool) -> None:
    blocks, labels, folds = problem(case)
    print(f"\n## {case}: blocks {list(blocks)}, n={N_LABELED}, pool {N_POOL}, ridge={RIDGE}")
    if profile:
        pearl_fit(blocks, labels, folds)  # imports and caches outside the profile
        profiler = cProfile.Profile()
        with threadpool_limits(limits=threads[0]):
            profiler.enable()
            pearl_fit(blocks, labels, folds)
            profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return
    res, recorded = record_pearl_folds(blocks, labels, folds)
    candidates = candidate_sets(res, blocks)
    assert candidates[-1] == tuple(blocks)
    for limit in threads:
        times, cpu, results = interleaved_medians({
            "pearl": lambda: pearl_fit(blocks, labels, folds),
            "sklearn": lambda: sklearn_fits(blocks, labels, folds, candidates),
        }, repeats, limit)
        ours, theirs = times["pearl"], times["sklearn"]
        print(f"{limit} BLAS and OpenMP thread(s) each, one process each: pearl.fit {ours:.3f} s, "
              f"scikit-learn lbfgs loop (tol 1e-10) {theirs:.3f} s: loop / pearl.fit = "
              f"{theirs / ours:.2f}x; CPU time {cpu['pearl']:.3f} s vs {cpu['sklearn']:.3f} s: "
              f"{cpu['sklearn'] / cpu['pearl']:.2f}x (medians of {repeats} interleaved rounds)")
    ours = res.cv_predictions.to_numpy().reshape(N_LABELED, len(candidates), -1)
    theirs, models = results["sklearn"]
    print(f"max |difference| of out-of-fold probabilities to scikit-learn: "
          f"{np.abs(ours - theirs).max():.2e} (another objective: symmetric penalty)")
    worst = certify(blocks, labels, folds, candidates, recorded, models)
    for side, value in worst.items():
        verdict = "certified" if value <= CERTIFY else "NOT certified"
        print(f"{side}: largest relative objective excess over the scipy reference, "
              f"{len(candidates)} candidates x {folds.max() + 1} folds: {value:.1e} ({verdict})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*", default=["learned", "kpca"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print(f"# bench_multinomial on {platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, pearlstats from {pearl.__file__}")
    for case in args.cases:
        run(case, args.repeats, args.threads, args.profile)
