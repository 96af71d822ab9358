"""Representation-learner benchmarks: the paper's five simulation learners against scikit-learn.

Run from the repository root (after ``pip install ".[test]"``)::

    python benchmarks/bench_representations.py              # N = 2 000 and 20 000
    python benchmarks/bench_representations.py --sizes 2000 --repeats 3

For each N, x ~ N(0, I_2) training rows (columns x1, x2) are drawn once and
every learner is fitted on the same rows:

* **fit time** — PCA + kernel PCA with the rbf, poly, sigmoid and cosine
  kernels, two components each, scikit-learn defaults for the kernel
  parameters. pearlstats runs ``Representations(...).fit`` with
  ``method="auto"`` (randomized subspace iteration to a 1e-10 residual for
  N <= 10 000, Nyström with 1 000 landmarks beyond); scikit-learn runs
  ``PCA(2)`` and ``KernelPCA(2, kernel=...)`` with ``eigen_solver="auto"``,
  which is ARPACK at these sizes (n_components < 10, N > 200). Times are medians
  of the repeats; the ratio is scikit-learn / pearlstats (above 1: pearlstats faster).
* **accuracy** — 1 000 new rows are projected by each fitted learner; the
  smallest principal-angle cosine between the column spaces of pearlstats'
  block and scikit-learn's ARPACK block (solved with tol=0, i.e. to machine
  precision) measures agreement up to sign and rotation. For N = 2 000 the
  exact mode (LAPACK ``eigh`` of the top 2 eigenpairs) and Nyström with 300 and
  1 000 landmarks are also compared against the exact mode, and for
  N = 20 000 the full-kernel ``method="arpack"`` (what ``"auto"`` uses up to
  N = 10 000) is timed next to scikit-learn as well.

scikit-learn's KernelPCA always forms the N x N kernel: 3.2 GB at N = 20 000.
The ``--no-sklearn-large`` flag skips it there.
"""

from __future__ import annotations

import argparse
import platform
import resource

import numpy as np
import pandas as pd
import sklearn
from scipy.linalg import subspace_angles
from sklearn.decomposition import PCA as SklearnPCA
from sklearn.decomposition import KernelPCA as SklearnKernelPCA

from pearlstats.representations import PCA, KernelPCA, Representations

from _timing import median_time

KERNELS = ("rbf", "poly", "sigmoid", "cosine")


def min_cosine(A, B) -> float:
    return float(np.cos(subspace_angles(A, B)).min())


def ours_learners(**options):
    return {"pca": PCA(2), **{f"kpca_{k}": KernelPCA(2, kernel=k, **options) for k in KERNELS}}


def sklearn_learners():
    return {"pca": SklearnPCA(2), **{f"kpca_{k}": SklearnKernelPCA(2, kernel=k) for k in KERNELS}}


def fit_sklearn(X):
    return {name: learner.fit(X) for name, learner in sklearn_learners().items()}


def per_learner_times(X, frame, repeats, with_sklearn):
    rows = []
    for name in ours_learners():
        ours_time, _ = median_time(
            lambda: Representations(
                {name: ours_learners()[name]}, columns=["x1", "x2"], seed=0
            ).fit(frame),
            repeats,
        )
        row = {"learner": name, "pearlstats_s": ours_time}
        if with_sklearn:
            row["sklearn_s"], _ = median_time(lambda: sklearn_learners()[name].fit(X), repeats)
            row["ratio"] = row["sklearn_s"] / ours_time
        rows.append(row)
    return pd.DataFrame(rows)


def accuracy_table(reps, fitted_sklearn, new):
    blocks = reps.transform(pd.DataFrame(new, columns=["x1", "x2"]))
    return {name: min_cosine(blocks[name], fitted_sklearn[name].transform(new)) for name in blocks}


def approximation_table(X, new, repeats):
    """Nyström and randomized against the exact mode (N small enough for eigh)."""
    rows = []
    for kernel in KERNELS:
        exact_time, exact = median_time(
            lambda: KernelPCA(2, kernel=kernel, method="exact").fit(X), repeats
        )
        reference = exact.transform(new)
        row = {"kernel": kernel, "exact_s": exact_time}
        for label, options in [("arpack", {"method": "arpack"}),
                               ("randomized", {"method": "randomized"}),
                               ("nystrom_300", {"method": "nystrom", "n_landmarks": 300}),
                               ("nystrom_1000", {"method": "nystrom", "n_landmarks": 1000})]:
            seconds, fitted = median_time(
                lambda: KernelPCA(2, kernel=kernel, seed=0, **options).fit(X), repeats
            )
            row[f"{label}_s"] = seconds
            row[f"{label}_1-cos"] = 1.0 - min_cosine(fitted.transform(new), reference)
        rows.append(row)
    return pd.DataFrame(rows)


def full_kernel_table(X, new, fitted_sklearn, repeats):
    """pearlstats' exact-equivalent ARPACK mode on the full kernel next to scikit-learn's ARPACK."""
    rows = []
    for kernel in KERNELS:
        seconds, fitted = median_time(
            lambda: KernelPCA(2, kernel=kernel, method="arpack", seed=0).fit(X), repeats
        )
        reference = fitted_sklearn[f"kpca_{kernel}"].transform(new)
        rows.append(
            {
                "kernel": kernel,
                "arpack_s": seconds,
                "1-cos_vs_sklearn": 1 - min_cosine(fitted.transform(new), reference),
            }
        )
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--repeats", type=int, default=5, help="repeats for N <= 10 000")
    parser.add_argument("--large-repeats", type=int, default=2, help="repeats for N > 10 000")
    parser.add_argument(
        "--no-sklearn-large", action="store_true", help="skip scikit-learn for N > 10 000"
    )
    args = parser.parse_args(argv)
    print(
        f"# pearlstats representations benchmark — {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}"
    )
    pd.set_option("display.float_format", lambda v: f"{v:.3g}")
    pd.set_option("display.width", 160)
    for N in args.sizes:
        large = N > 10_000
        repeats = args.large_repeats if large else args.repeats
        with_sklearn = not (large and args.no_sklearn_large)
        rng = np.random.default_rng(N)
        X = rng.normal(size=(N, 2))
        new = rng.normal(size=(1000, 2))
        frame = pd.DataFrame(X, columns=["x1", "x2"])
        print(f"\n## N = {N} ({repeats} repeats)")
        ours_time, reps = median_time(
            lambda: Representations(ours_learners(), columns=["x1", "x2"], seed=0).fit(frame),
            repeats,
        )
        methods = {name: getattr(reps[name], "method_", "svd") for name in reps.names}
        print(f"pearlstats: five learners fitted in {ours_time:.3f} s; methods {methods}")
        if with_sklearn:
            sklearn_time, fitted = median_time(lambda: fit_sklearn(X), repeats)
            print(f"scikit-learn: five learners fitted in {sklearn_time:.3f} s; "
                  f"ratio sklearn/pearlstats = {sklearn_time / ours_time:.2f}")
            cosines = accuracy_table(reps, fitted, new)
            print("smallest principal-angle cosine vs scikit-learn (ARPACK), 1000 new rows:")
            print(pd.Series(cosines).map(lambda c: f"1 - {1 - c:.1e}").to_string())
            if large:
                print(
                    "pearlstats with method='arpack' (full kernel, exact-equivalent), per kernel:"
                )
                print(full_kernel_table(X, new, fitted, repeats).to_string(index=False))
            del fitted
        print(
            "peak resident memory so far: "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB"
        )
        print("per learner (median seconds):")
        print(per_learner_times(X, frame, repeats, with_sklearn).to_string(index=False))
        if not large:
            print(
                "approximate modes vs the exact mode "
                "(1 - smallest principal-angle cosine; seconds):"
            )
            print(approximation_table(X, new, repeats).to_string(index=False))


if __name__ == "__main__":
    main()
