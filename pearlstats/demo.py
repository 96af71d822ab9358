"""The paper's simulation example: PCA + four kernel PCAs, 31 candidates, one summary.

Run ``python -m pearlstats.demo`` (``--seed N`` for other data, ``--help`` for the
options; it takes a few seconds). The data follow the paper's eq. (dgp1):
``y = b0 + b1 x1 + b2 x2 + a1 x1^2 + a2 x2^2 + g x1 x2 + sin^2(x1) + eps`` with
coefficients drawn from N(0, 0.09) (:func:`pearlstats.datasets.simulate_paper`).
The package's own learners (:class:`~pearlstats.PCA`,
:class:`~pearlstats.KernelPCA`) are fitted on N = 2000 unlabeled rows and
applied to n = 400 labeled and 2000 test rows.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

import pearlstats as pearl

KERNELS = ("rbf", "poly", "sigmoid", "cosine")


def main(seed: int = 2024) -> pearl.PearlResults:
    """Fit PEARL on the simulation, print its summary and its test MSE; return the fit."""
    data = pearl.datasets.simulate_paper(400, N=2000, n_test=2000, sigma=0.5, seed=seed)
    learners = {"pca": pearl.PCA(n_components=2)}
    learners.update({f"kpca_{kernel}": pearl.KernelPCA(kernel=kernel, n_components=2)
                     for kernel in KERNELS})
    reps = pearl.Representations(learners, columns=["x1", "x2"], seed=seed).fit(data.unlabeled)

    formula = "y ~ " + " + ".join(f"block({name})" for name in learners)
    res = pearl.fit(formula, data.labeled, blocks=reps, cv=5, seed=seed)
    print(res.summary())
    test_mse = np.mean((data.test["y"].to_numpy() - res.predict(data.test).to_numpy()) ** 2)
    print(f"\nPEARL test MSE on {len(data.test)} new rows: {test_mse:.4f}")
    return res


def _seed(text: str) -> int:
    """An argparse type: a seed in [0, 2**32), the range the learners accept."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{value} is out of range; use an integer in [0, 2**32)")
    return value


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The demo's options; ``--help`` prints them, and an unknown option or a seed outside
    [0, 2**32) is an error, all without running the demo (argparse exits with status 0, 2)."""
    parser = argparse.ArgumentParser(
        prog="python -m pearlstats.demo",
        description="PEARL on the paper's simulation (PCA + four kernel PCAs, 31 candidates): "
                    "prints the summary and the test MSE; a few seconds on one core.",
    )
    parser.add_argument("--seed", type=_seed, default=2024,
                        help="seed of the simulated data, the learners and the folds "
                             "(default: %(default)s)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(seed=parse_arguments().seed)
