"""Kernel PCA with exact, Lanczos, randomized and Nyström eigensolvers.

Out-of-sample rows are projected correctly (centred against the training kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.linalg import eigh, qr
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

from .._warnings import warn
from ..exceptions import BlockError, ConvergenceWarning, OptionError
from ._checks import (
    Standardizer,
    align_columns,
    as_float_matrix,
    check_bool,
    check_choice,
    check_fitted,
    check_int,
    check_positive,
    check_real,
    check_seed,
    check_width,
    column_names,
    flip_signs,
    largest_entry_signs,
    transactional,
)
from ._params import LearnerParams
from .kernels import KERNEL_PARAMETERS, KERNELS, kernel_matrix, row_chunks

__all__ = ["KernelPCA"]

METHODS = ("auto", "exact", "arpack", "randomized", "nystrom")
# "auto" keeps the whole N x N kernel in memory up to this many training rows (an 800 MB kernel).
AUTO_FULL_KERNEL_ROWS = 10_000
AUTO_EXACT_ROWS = 200  # as scikit-learn: ARPACK is faster from a few hundred rows
# Eigenvalues below this fraction of the largest are treated as zero (no usable direction).
NULL_EIGENVALUE = 1e-10
# ... and so are those within rounding of zero on the kernel's own scale: a centred kernel's
# eigenvalues carry an absolute error of about eps * n * max|K| (a kernel whose entries all
# round to one value, e.g. a saturated sigmoid, has a top eigenvalue of that size, which the
# rule above measures against itself). 1000 eps leaves the rounding far behind.
ROUNDING_EIGENVALUE = 1000 * float(np.finfo(float).eps)
# Landmark eigenvalues of an indefinite kernel below this fraction of the largest are dropped.
INDEFINITE_CUTOFF = 1e-6


class KernelPCA(LearnerParams):
    """Kernel principal components, projected out of sample with the training centring.

    The kernel matrix of the N training rows is centred in feature space
    (``K_c = (I - 1/N) K (I - 1/N)``) and its top ``n_components`` eigenpairs
    ``(lambda_j, v_j)`` give the block of a new row ``x`` as
    ``z_j(x) = sum_i k_c(x, x_i) v_ij / sqrt(lambda_j)``, where ``k_c`` centres
    ``k(x, .)`` with the *training* row and grand means. Training rows get the
    same mapping as new rows. The values equal scikit-learn's
    ``KernelPCA(...).transform`` up to sign (and a rotation within the
    subspace when eigenvalues tie).

    Parameters
    ----------
    n_components : int, default 2
        Number of components (the block's width).
    kernel : {"rbf", "poly", "sigmoid", "cosine", "linear"}, default "rbf"
        ``rbf`` is the Gaussian kernel; ``linear`` gives ordinary PCA scores.
        See :mod:`pearlstats.representations.kernels` for the formulas.
    gamma : float, optional
        Scale of rbf, poly and sigmoid; default ``1 / n_features`` as in scikit-learn.
    degree : float, default 3
        Degree of the poly kernel (scikit-learn's default).
    coef0 : float, default 1.0
        Additive constant of poly and sigmoid (scikit-learn's default).
    standardize : bool, default False
        Scale each input column to mean 0, standard deviation 1 (training
        statistics) before computing kernels.
    method : {"auto", "exact", "arpack", "randomized", "nystrom"}, default "auto"
        Eigensolver.

        - ``"exact"``: LAPACK ``eigh`` restricted to the top ``n_components``
          eigenpairs (``subset_by_index``) of the N x N kernel: O(N^3) time,
          O(N^2) memory; for N up to a few thousand.
        - ``"arpack"``: implicitly restarted Lanczos (ARPACK via
          ``scipy.sparse.linalg.eigsh``, largest algebraic eigenvalues) on the
          same in-memory kernel, to machine precision (``tol=0``): the same
          result as ``"exact"`` from a few dozen products ``K_c v``. What
          scikit-learn's ``eigen_solver="auto"`` picks for N > 200.
        - ``"randomized"``: block subspace iteration with ``oversample``
          extra vectors on the in-memory kernel, iterated until every Ritz
          residual ``||K_c v - lambda v||`` is below ``tol * |lambda_max|``.
          Agrees with ``"exact"`` to about ``tol``, but needs more arithmetic
          than ``"arpack"``; kept for comparison with randomized solvers.
        - ``"nystrom"``: kernel PCA of the Nyström approximation
          ``K ~ C W^+ C^T`` built on ``n_landmarks`` training rows drawn
          uniformly without replacement. O(N m^2) time and O(N m) memory, so it
          scales to large N; an approximation whose accuracy depends on how fast
          the kernel's spectrum decays. ``W^+`` drops landmark eigenvalues
          below ``1e-10`` times the largest, or ``1e-6`` for an indefinite
          kernel (sigmoid), whose small eigenvalues of both signs would
          otherwise amplify noise.
        - ``"auto"``: ``"exact"`` for N <= 200, ``"arpack"`` for
          N <= 10 000, and ``"nystrom"`` beyond, where the kernel alone would
          need more than 800 MB. The choice is recorded in ``method_``.

        If ``"arpack"`` does not converge, the exact solver is used instead (with
        a :class:`~pearlstats.ConvergenceWarning` unless ``method="auto"``).
    n_landmarks : int, default 1000
        Landmarks of the Nyström method (at most N).
    oversample : int, default 10
        Extra subspace vectors of the randomized method.
    tol : float, default 1e-10
        Relative residual at which the randomized method stops.
    max_iter : int, default 200
        Iteration limit of the randomized method; reaching it gives a
        :class:`~pearlstats.ConvergenceWarning`.
    seed : int, optional
        Seeds the start vectors of ``"arpack"`` and ``"randomized"`` (their
        results do not depend on it beyond rounding) and the landmark draw of
        ``"nystrom"``. ``"exact"`` uses no randomness.
    columns : str or list of str, optional
        Input columns this learner reads inside a ``Representations`` container.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components,)
        Top eigenvalues of the centred (approximate, for Nyström) training kernel, descending.
    method_ : str
        The solver used.
    gamma_ : float
        The gamma used (``1 / n_features`` when ``gamma`` is None).
    n_iter_ : int
        Iterations of the randomized method (0 otherwise).
    landmark_indices_ : ndarray of int
        Training rows used as Nyström landmarks (``"nystrom"``; None for the other methods).
    feature_names_in_ : list or None
        Columns of the DataFrame fitted on (None for an array); a DataFrame given to
        :meth:`transform` is read by these names.
    input_kind : str
        ``"numeric"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a float 2-D array of its columns.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> kpca = KernelPCA(2, kernel="poly", method="exact").fit(X)
    >>> kpca.transform(X[:4]).shape
    (4, 2)
    >>> fast = KernelPCA(2, kernel="poly", method="arpack", seed=1).fit(X)
    >>> bool(np.allclose(fast.transform(X[:4]), kpca.transform(X[:4])))
    True
    """

    input_kind = "numeric"

    def __init__(
        self,
        n_components: int = 2,
        *,
        kernel: str = "rbf",
        gamma: float | None = None,
        degree: float = 3,
        coef0: float = 1.0,
        standardize: bool = False,
        method: str = "auto",
        n_landmarks: int = 1000,
        oversample: int = 10,
        tol: float = 1e-10,
        max_iter: int = 200,
        seed: int | None = None,
        columns: str | Sequence[str] | None = None,
    ):
        check_int(n_components, "n_components")
        self.n_components = n_components
        check_choice(kernel, "kernel", KERNELS)
        check_positive(gamma, "gamma", allow_none=True)
        check_positive(degree, "degree")
        check_real(coef0, "coef0")
        check_choice(method, "method", METHODS)
        check_positive(tol, "tol")
        check_seed(seed)
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        check_bool(standardize, "standardize")
        self.standardize = standardize
        self.method = method
        check_int(n_landmarks, "n_landmarks")
        self.n_landmarks = n_landmarks
        if method == "nystrom" and self.n_landmarks < self.n_components:
            raise OptionError(
                f"KernelPCA(method='nystrom') has n_landmarks={self.n_landmarks} < n_components="
                f"{self.n_components}; the Nystrom approximation has at most n_landmarks "
                f"directions — use n_landmarks >= {self.n_components}"
            )
        check_int(oversample, "oversample", minimum=0)
        self.oversample = oversample
        self.tol = tol
        check_int(max_iter, "max_iter")
        self.max_iter = max_iter
        self.seed = seed
        self.columns = columns
        self._weights = None

    def __repr__(self):
        return self._repr(n_components=self.n_components, kernel=self.kernel,
                          method=self.method)

    # ------------------------------------------------------------------ fitting
    @transactional
    def fit(self, X: Any, y: Any = None) -> KernelPCA:
        """Learn the top kernel principal components of the rows of ``X``.

        If ``fit`` raises, the learner keeps its previous fit (or stays unfitted).

        Parameters
        ----------
        X : array_like or DataFrame (n_rows, n_features)
            Numeric input rows.
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> kpca = pearl.KernelPCA(n_components=2, kernel="rbf").fit(X)
        >>> kpca.output_dim_
        2
        """
        names = column_names(X)
        X = as_float_matrix(X, "KernelPCA")
        n, d = X.shape
        if self.n_components >= n:
            fix = f"use n_components <= {n - 1}" if n > 1 else "give at least 2 rows"
            raise BlockError(
                f"KernelPCA(n_components={self.n_components}) needs more training rows than "
                f"components; got {n} row{'s' if n != 1 else ''} — {fix}"
            )
        self.scaler_ = Standardizer(X) if self.standardize else None
        Z = self.scaler_(X) if self.standardize else X
        self.gamma_ = 1.0 / d if self.gamma is None else float(self.gamma)
        self.n_features_in_ = d
        self.feature_names_in_ = names
        self.output_dim_ = self.n_components
        self.n_iter_ = 0
        self.landmark_indices_ = None  # set by a Nystrom fit; a refit must not keep stale ones
        rng = np.random.default_rng(self.seed)
        method = self.method
        if method == "auto":
            method = (
                "exact"
                if n <= AUTO_EXACT_ROWS
                else "arpack"
                if n <= AUTO_FULL_KERNEL_ROWS
                else "nystrom"
            )
        if method == "nystrom":
            if min(self.n_landmarks, n) < self.n_components:
                raise BlockError(
                    f"KernelPCA(method='nystrom' via 'auto') has n_landmarks={self.n_landmarks} < "
                    f"n_components={self.n_components}; use n_landmarks >= {self.n_components}"
                )
            self._fit_nystrom(Z, rng)
        else:
            self._fit_full_kernel(Z, method, rng)
        return self

    def _kernel(self, A, B, stage: str = "training"):
        """``k(A, B)``; a NaN or infinite entry is a BlockError naming the kernel and parameters."""
        with np.errstate(over="ignore", invalid="ignore"):  # reported below as one BlockError
            K = kernel_matrix(A, B, self.kernel, gamma=self.gamma_, degree=self.degree,
                              coef0=self.coef0)
        if not np.isfinite(K).all():
            self._raise_not_finite(stage)
        return K

    def _raise_not_finite(self, stage: str):
        parameters = ", ".join(f"{name}={getattr(self, attribute)!r}" for name, attribute in
                               (("gamma", "gamma_"), ("degree", "degree"), ("coef0", "coef0"))
                               if name in KERNEL_PARAMETERS[self.kernel])
        hint = {
            "poly": "a non-integer degree of a negative base is NaN and large gamma or degree "
                    "overflow — use an integer degree, a smaller gamma, or standardize=True",
            "sigmoid": "lower gamma",
            "rbf": "lower gamma",
        }.get(self.kernel, "check the inputs' scale")
        parameters = f", {parameters}" if parameters else ""
        raise BlockError(
            f"KernelPCA(kernel={self.kernel!r}{parameters}) gives NaN or "
            f"infinite kernel values on the {stage} rows; {hint}"
        )

    def _fit_full_kernel(self, Z, method, rng):
        K = self._kernel(Z, Z)
        n, k = len(K), self.n_components
        scale = n * float(np.abs(K).max())  # before centring: what the eigenvalues round on
        col_mean = K.mean(axis=0)
        total = col_mean.mean()

        # The iterative solvers only need products with the centred kernel, which cost
        # O(N) on top of K @ v; centring K itself would be another pass over N^2 numbers.
        def centred_product(V):
            return _centred_product(K, col_mean, total, V)

        if method == "arpack":
            operator = LinearOperator(
                (n, n), matvec=centred_product, matmat=centred_product, dtype=np.float64
            )
            try:
                values, vectors = eigsh(
                    operator, k, which="LA", tol=0, v0=rng.uniform(-1.0, 1.0, n)
                )
                order = np.argsort(values)[::-1]
                values, vectors = values[order], vectors[:, order]
            except (ArpackNoConvergence, ArpackError) as error:
                # ArpackError: e.g. "starting vector is zero" on a kernel that centring leaves
                # at rounding (the exact solver then says what is wrong with the kernel)
                if self.method != "auto":
                    what = ("did not converge" if isinstance(error, ArpackNoConvergence)
                            else f"failed ({error})")
                    warn(f"KernelPCA(method='arpack') {what}; using the exact solver instead",
                         ConvergenceWarning)
                method = "exact"
        if method == "randomized":
            values, vectors, self.n_iter_, converged = _subspace_iteration(
                centred_product, n, k, self.oversample, self.tol, self.max_iter, rng
            )
            if not converged:
                warn(
                    f"KernelPCA(method='randomized') did not reach tol={self.tol:g} in "
                    f"max_iter={self.max_iter} iterations; the top eigenvalues are probably close "
                    "together. Raise max_iter or use "
                    "method='arpack' or 'exact'",
                    ConvergenceWarning,
                )
        if method == "exact":
            for rows in row_chunks(n, n):  # centre in place, one cache-friendly pass
                K[rows] -= col_mean[None, :] + (col_mean[rows] - total)[:, None]
            values, vectors = eigh(
                K, subset_by_index=[n - k, n - 1], overwrite_a=True, check_finite=False
            )
            values, vectors = values[::-1], vectors[:, ::-1]
        self.method_ = method
        self._set_eigenvalues(values, scale)
        alphas = flip_signs(vectors) / np.sqrt(values)
        self._basis = Z
        self._weights = alphas
        self._row_mean_weight = alphas.sum(axis=0)
        self._offset = col_mean @ alphas - total * self._row_mean_weight

    def _fit_nystrom(self, Z, rng):
        n = Z.shape[0]
        m = min(self.n_landmarks, n)
        chosen = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
        landmarks = Z[chosen]
        W = self._kernel(landmarks, landmarks)
        scale = n * float(np.abs(W).max())  # the n-row kernel's scale, from its landmark block
        w, U = eigh(W, check_finite=False)
        # An indefinite landmark kernel (sigmoid) has eigenvalues of both signs near zero whose
        # inverses amplify noise; a coarser cut-off keeps its Nystrom extension stable.
        indefinite = w.min() < -np.abs(w).max() * NULL_EIGENVALUE
        keep = np.abs(w) > np.abs(w).max() * (INDEFINITE_CUTOFF if indefinite else NULL_EIGENVALUE)
        signs = np.sign(w[keep])
        # Nystrom features f(x) = k(x, landmarks) U |w|^-1/2 with k ~ f S f^T, S = sign(w):
        # the pseudo-inverse of the landmark kernel, indefinite for the sigmoid kernel.
        feature_map = U[:, keep] / np.sqrt(np.abs(w[keep]))
        # Scatter of the kernel columns C = k(X, landmarks), accumulated in chunks about a
        # provisional mean (the first chunk's) so that centring does not cancel digits.
        shift = sums = scatter = None
        for rows in row_chunks(n, m):
            C = self._kernel(Z[rows], landmarks)
            if shift is None:
                shift = C.mean(axis=0)
                sums, scatter = np.zeros(m), np.zeros((m, m))
            C -= shift
            sums += C.sum(axis=0)
            scatter += C.T @ C
        scatter -= np.outer(sums, sums) / n
        mean_columns = shift + sums / n
        k = self.n_components
        values, weights, usable = _signed_gram_eigen(
            feature_map.T @ scatter @ feature_map, signs, k, scale * ROUNDING_EIGENVALUE
        )
        if usable < k:
            self._raise_too_few(usable)
        self.method_ = "nystrom"
        self.landmark_indices_ = chosen
        self._set_eigenvalues(values, scale)
        self._basis = landmarks
        self._weights = feature_map @ weights
        self._row_mean_weight = np.zeros(k)
        self._offset = mean_columns @ self._weights
        # Exact kernel PCA's training scores are sqrt(lambda) * eigenvector, so fixing the
        # sign on the training scores gives the same sign convention as the exact method.
        signs = largest_entry_signs(self._project(Z))
        self._weights *= signs
        self._offset *= signs

    def _set_eigenvalues(self, values, scale: float):
        """Keep *values* if all are usable: above ``NULL_EIGENVALUE`` of the largest and above
        rounding on the kernel's *scale* (``n max|K|``)."""
        usable = values > max(values[0] * NULL_EIGENVALUE, scale * ROUNDING_EIGENVALUE, 0.0)
        if not usable.all():
            self._raise_too_few(int(usable.sum()))
        self.eigenvalues_ = values

    def _raise_too_few(self, usable: int):
        fix = f"use n_components <= {usable} or another kernel" if usable else (
            "the centred kernel is zero to rounding: the training rows are identical in feature "
            "space, or the kernel is constant on them (a saturated sigmoid, a tiny gamma); "
            "change gamma or coef0, use other inputs or another kernel")
        raise BlockError(
            f"KernelPCA(kernel={self.kernel!r}) found only {usable} direction(s) with a positive "
            "eigenvalue in the centred training kernel, fewer than "
            f"n_components={self.n_components}; the kernel has low rank on these inputs — {fix}"
        )

    # --------------------------------------------------------------- projection
    def transform(self, X: Any) -> np.ndarray:
        """Project rows onto the training components, shape (n_rows, n_components).

        After a fit on a DataFrame, a DataFrame is read by column name (in any order).

        Parameters
        ----------
        X : array_like or DataFrame (n_rows, n_features)
            Numeric input rows.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> kpca = pearl.KernelPCA(n_components=2, kernel="poly", degree=2).fit(X)
        >>> kpca.transform(X[:3]).shape
        (3, 2)
        """
        check_fitted(self, "_weights")
        X = as_float_matrix(align_columns(X, self, "KernelPCA"), "KernelPCA")
        check_width(X, self.n_features_in_, "KernelPCA")
        return self._project(self.scaler_(X) if self.standardize else X)

    def _project(self, Z: np.ndarray) -> np.ndarray:
        out = np.empty((Z.shape[0], self.n_components))
        for rows in row_chunks(Z.shape[0], self._basis.shape[0]):
            K = self._kernel(Z[rows], self._basis, "new")
            block = K @ self._weights
            block -= K.mean(axis=1)[:, None] * self._row_mean_weight
            block -= self._offset
            out[rows] = block
        return out

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """``fit(X)`` then ``transform(X)``.

        Parameters
        ----------
        X : array_like or DataFrame (n_rows, n_features)
            Numeric input rows.
        y : None
            Ignored; accepted so that the learner can be a step of a scikit-learn
            ``Pipeline`` (which passes the response to every step).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> pearl.KernelPCA(n_components=2).fit_transform(X).shape
        (30, 2)
        """
        return self.fit(X).transform(X)


def _signed_gram_eigen(gram, signs, k, floor: float = 0.0):
    """Top-``k`` eigenpairs of ``F S F^T`` from ``gram = F^T F`` and the diagonal ``S = signs``.

    With ``gram = V D V^T`` and ``R = D^1/2 V^T`` (so ``F = Q R``), the non-zero
    eigenvalues of ``F S F^T`` are those of the small ``R S R^T = Y M Y^T``, and a new
    row's score is ``f_c(x) S R^T y / sqrt(mu)``. Returns (eigenvalues, weights on ``f``)
    and the number of usable (clearly positive, and above *floor*: rounding on the kernel's
    scale) eigenvalues; when that is below ``k`` the first two are None.
    """
    def count(values):  # values in decreasing order
        return int(np.sum(values > max(values[0] * NULL_EIGENVALUE, floor, 0.0)))

    r = gram.shape[0]
    if np.all(signs > 0):  # positive semi-definite: the eigenvectors of the Gram matrix itself
        if r < k:  # fewer directions than asked: how many of them are usable, for the message
            return None, None, count(eigh(gram, eigvals_only=True, check_finite=False)[::-1])
        values, vectors = eigh(gram, subset_by_index=[r - k, r - 1], check_finite=False)
        values, vectors = values[::-1], vectors[:, ::-1]
        return values, vectors, count(values)
    d, V = eigh(gram, check_finite=False)
    keep = d > d.max() * NULL_EIGENVALUE
    root = np.sqrt(d[keep]) * V[:, keep]  # R^T
    q = root.shape[1]
    small = (root.T * signs) @ root
    if q < k:
        return None, None, count(eigh(small, eigvals_only=True, check_finite=False)[::-1])
    values, Y = eigh(small, subset_by_index=[q - k, q - 1], check_finite=False)
    values, Y = values[::-1], Y[:, ::-1]
    usable = count(values)
    if usable < k:
        return None, None, usable
    return values, (signs[:, None] * root) @ Y / np.sqrt(values), usable


def _centred_product(K, col_mean, total, V):
    """``K_c @ V`` for the centred ``K_c = K - 1 m^T - m 1^T + total 1 1^T`` of symmetric ``K``."""
    KV = K @ V
    sums = V.sum(axis=0)
    KV -= np.multiply.outer(col_mean, sums)
    KV -= col_mean @ V - total * sums
    return KV


def _subspace_iteration(product, n, k, oversample, tol, max_iter, rng):
    """Top-``k`` (largest algebraic) eigenpairs of a symmetric operator by block power iteration.

    ``product(V)`` returns the operator times the ``n x b`` matrix ``V``. Returns
    eigenvalues (descending), eigenvectors, iterations and whether every Ritz
    residual ``||K v - lambda v||`` fell below ``tol`` times the largest Ritz value's magnitude.
    """
    width = min(n, k + oversample)
    Q, _ = qr(product(rng.standard_normal((n, width))), mode="economic", check_finite=False)
    for iteration in range(1, max_iter + 1):
        KQ = product(Q)
        ritz = Q.T @ KQ
        w, S = eigh((ritz + ritz.T) / 2, check_finite=False)
        top = np.argsort(w)[::-1][:k]
        values, vectors = w[top], Q @ S[:, top]
        residuals = np.linalg.norm(KQ @ S[:, top] - vectors * values, axis=0)
        if np.all(residuals <= tol * np.abs(w).max()):
            return values, vectors, iteration, True
        Q, _ = qr(KQ, mode="economic", check_finite=False)
    return values, vectors, max_iter, False
