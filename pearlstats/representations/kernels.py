"""Kernel functions for kernel PCA, evaluated in row chunks to bound memory.

The kernels and their parameters follow scikit-learn's ``pairwise_kernels`` so
that a :class:`~pearlstats.representations.KernelPCA` with the same settings
spans the same subspace as ``sklearn.decomposition.KernelPCA``:

========  =====================================  ==========================
kernel    k(a, b)                                parameters used
========  =====================================  ==========================
rbf       exp(-gamma * ||a - b||^2)              gamma
poly      (gamma * <a, b> + coef0) ** degree     gamma, degree, coef0
sigmoid   tanh(gamma * <a, b> + coef0)           gamma, coef0
cosine    <a, b> / (||a|| ||b||)                 none (zero rows give 0)
linear    <a, b>                                 none
========  =====================================  ==========================

Examples
--------
>>> import numpy as np
>>> X = np.array([[0.0, 1.0], [1.0, 1.0]])
>>> kernel_matrix(X, X, "rbf", gamma=0.5).round(4)
array([[1.    , 0.6065],
       [0.6065, 1.    ]])
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["KERNELS", "KERNEL_PARAMETERS", "kernel_matrix", "row_chunks"]

KERNELS = ("rbf", "poly", "sigmoid", "cosine", "linear")
KERNEL_PARAMETERS = {
    "rbf": ("gamma",),
    "poly": ("gamma", "degree", "coef0"),
    "sigmoid": ("gamma", "coef0"),
    "cosine": (),
    "linear": (),
}

# A chunk of kernel rows holds at most this many entries (2 MB of float64): small enough for
# the element-wise steps (exp, tanh, powers) to run in cache, large enough for efficient BLAS.
CHUNK_ENTRIES = 1 << 18


def row_chunks(n_rows: int, n_columns: int) -> Iterator[slice]:
    """Slices of ``range(n_rows)`` so that a chunk of kernel rows stays near 2 MB.

    Examples
    --------
    >>> [(s.start, s.stop) for s in row_chunks(5, 100_000)]
    [(0, 2), (2, 4), (4, 5)]
    """
    size = max(1, CHUNK_ENTRIES // max(1, n_columns))
    for start in range(0, n_rows, size):
        yield slice(start, min(start + size, n_rows))


def _unit_rows(X: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    norms[norms == 0] = 1.0  # a zero row stays zero, as in sklearn's normalize()
    return X / norms[:, None]


def kernel_matrix(
    A: np.ndarray,
    B: np.ndarray,
    kernel: str,
    *,
    gamma: float | None = None,
    degree: float = 3,
    coef0: float = 1.0,
) -> np.ndarray:
    """The kernel matrix ``K[i, j] = k(A[i], B[j])``.

    Rows are computed in chunks of about 2 MB, so the element-wise steps run
    in cache and need no temporary as large as ``K``.

    Parameters
    ----------
    A, B : ndarray of shape (n_a, d) and (n_b, d)
    kernel : {"rbf", "poly", "sigmoid", "cosine", "linear"}
    gamma : float, optional
        Defaults to ``1 / d`` for rbf, poly and sigmoid (scikit-learn's default).
    degree, coef0 : float
        Polynomial degree and the additive constant of poly and sigmoid.

    Returns
    -------
    ndarray of shape (n_a, n_b)

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[3.0, 4.0], [0.0, 0.0]])
    >>> kernel_matrix(A, A, "cosine")
    array([[1., 0.],
           [0., 0.]])
    """
    gamma = 1.0 / A.shape[1] if gamma is None else gamma
    if kernel == "cosine":
        A, B = _unit_rows(A), _unit_rows(B)
    out = np.empty((A.shape[0], B.shape[0]))
    B_squared = np.einsum("ij,ij->i", B, B) if kernel == "rbf" else None
    for rows in row_chunks(A.shape[0], B.shape[0]):
        K = out[rows]
        np.matmul(A[rows], B.T, out=K)
        if kernel == "rbf":
            K *= -2.0
            K += np.einsum("ij,ij->i", A[rows], A[rows])[:, None]
            K += B_squared[None, :]
            np.maximum(K, 0.0, out=K)  # rounding can make a squared distance slightly negative
            K *= -gamma
            np.exp(K, out=K)
        elif kernel in ("poly", "sigmoid"):
            K *= gamma
            K += coef0
            if kernel == "sigmoid":
                np.tanh(K, out=K)
            else:
                _power(K, degree)
    return out


def _power(K: np.ndarray, degree: float) -> None:
    """``K **= degree`` in place; small integer degrees by multiplication (faster than pow)."""
    if float(degree).is_integer() and 1 <= degree <= 8:
        base = K.copy()
        for _ in range(int(degree) - 1):
            K *= base
    else:
        np.power(K, degree, out=K)
