"""The paper's simulation example: PCA + four kernel PCAs, 31 candidates, one summary.

Run ``python -m pearlstats.demo``. The data follow the paper's eq. (dgp1):
``y = b0 + b1 x1 + b2 x2 + a1 x1^2 + a2 x2^2 + g x1 x2 + sin^2(x1) + eps`` with
coefficients drawn from N(0, 0.09). Representations are learned on N = 2000
unlabeled rows and applied to n = 400 labeled and 2000 test rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.linalg import eigh

import pearlstats as pearl

KERNELS = {
    "kpca_rbf": lambda A, B: np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)),
    "kpca_poly": lambda A, B: (A @ B.T + 1.0) ** 2,
    "kpca_sigmoid": lambda A, B: np.tanh(0.1 * A @ B.T + 0.5),
    "kpca_cosine": lambda A, B: (A / np.linalg.norm(A, axis=1, keepdims=True))
    @ (B / np.linalg.norm(B, axis=1, keepdims=True)).T,
}


def _kernel_pca(kernel, unlabeled: np.ndarray, k: int = 2):
    """Exact top-k kernel PCA fitted on *unlabeled*; returns the projection of new rows."""
    K = kernel(unlabeled, unlabeled)
    col_mean = K.mean(axis=0)
    centred = K - col_mean[None, :] - col_mean[:, None] + col_mean.mean()
    values, vectors = eigh(centred, subset_by_index=[len(K) - k, len(K) - 1])
    alphas = vectors[:, ::-1] / np.sqrt(values[::-1])

    def transform(rows):
        Kn = kernel(rows, unlabeled)
        Kn = Kn - Kn.mean(axis=1, keepdims=True) - col_mean[None, :] + col_mean.mean()
        return Kn @ alphas

    return transform


def _simulate(rng, n, coefs, sigma):
    x = rng.normal(size=(n, 2))
    b0, b1, b2, a1, a2, g = coefs
    mean = b0 + b1 * x[:, 0] + b2 * x[:, 1] + a1 * x[:, 0] ** 2 + a2 * x[:, 1] ** 2 + g * x[:, 0] * x[:, 1]
    return x, mean + np.sin(x[:, 0]) ** 2 + rng.normal(scale=sigma, size=n)


def main(seed: int = 2024) -> pearl.PearlResults:
    rng = np.random.default_rng(seed)
    coefs = rng.normal(scale=0.3, size=6)
    unlabeled, _ = _simulate(rng, 2000, coefs, 0.5)
    x, y = _simulate(rng, 400, coefs, 0.5)
    x_test, y_test = _simulate(rng, 2000, coefs, 0.5)
    centre = unlabeled.mean(axis=0)
    _, _, pca_axes = np.linalg.svd(unlabeled - centre, full_matrices=False)
    learners = {"pca": lambda rows: (rows - centre) @ pca_axes[:2].T}
    learners.update({name: _kernel_pca(kernel, unlabeled) for name, kernel in KERNELS.items()})
    blocks = {name: learn(x) for name, learn in learners.items()}
    test_blocks = {name: learn(x_test) for name, learn in learners.items()}

    formula = "y ~ " + " + ".join(f"block({name})" for name in learners)
    res = pearl.fit(formula, pd.DataFrame({"y": y}), blocks=blocks, cv=5, seed=seed)
    print(res.summary())
    test_mse = np.mean((y_test - res.predict({"y": y_test, **test_blocks}).to_numpy()) ** 2)
    print(f"\nPEARL test MSE on {len(y_test)} new rows: {test_mse:.4f}")
    return res


if __name__ == "__main__":
    main()
