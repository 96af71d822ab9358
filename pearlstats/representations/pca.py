"""Linear learners: principal components and the raw inputs themselves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.linalg import svd

from ..exceptions import BlockError
from ._checks import (
    Standardizer,
    align_columns,
    as_float_matrix,
    check_bool,
    check_fitted,
    check_int,
    check_width,
    column_names,
    flip_signs,
    transactional,
)
from ._params import LearnerParams

__all__ = ["PCA", "Raw"]

# A principal variance below this fraction of the largest is zero: the axis is rounding noise.
NULL_VARIANCE = 1e-10


class PCA(LearnerParams):
    """Principal component scores of numeric inputs.

    Parameters
    ----------
    n_components : int, default 2
        Number of components (the block's width).
    standardize : bool, default False
        Scale every input column to standard deviation 1 (training statistics)
        before the decomposition, i.e. PCA of the correlation matrix.
    columns : str or list of str, optional
        Input columns this learner reads inside a ``Representations`` container.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Unit-length principal axes; the largest-magnitude loading of each is positive.
    explained_variance_ : ndarray of shape (n_components,)
        Variance of each score on the training rows (divisor ``N - 1``).
    mean_ : ndarray of shape (n_features,)
        Training means of the (standardised) inputs.
    feature_names_in_ : list or None
        Columns of the DataFrame fitted on (None for an array); a DataFrame given to
        :meth:`transform` is read by these names.
    input_kind : str
        ``"numeric"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a float 2-D array of its columns.

    Notes
    -----
    The axes come from a thin SVD of the centred training matrix, so scores
    equal scikit-learn's ``PCA`` up to the sign of each component.
    ``n_components`` may not exceed the rank of the centred inputs (a
    direction with variance below ``1e-10`` times the largest is rounding
    noise), as for :class:`KernelPCA` with the linear kernel.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(100, 3)) * [3.0, 1.0, 0.1]
    >>> pca = PCA(2).fit(X)
    >>> pca.transform(X).shape, np.abs(pca.components_[0]).argmax()
    ((100, 2), np.int64(0))
    """

    input_kind = "numeric"

    def __init__(
        self,
        n_components: int = 2,
        *,
        standardize: bool = False,
        columns: str | Sequence[str] | None = None,
    ):
        check_int(n_components, "n_components")
        check_bool(standardize, "standardize")
        self.n_components = n_components
        self.standardize = standardize
        self.columns = columns

    def __repr__(self):
        return self._repr(n_components=self.n_components, standardize=self.standardize)

    @transactional
    def fit(self, X: Any, y: Any = None) -> PCA:
        """Learn the principal axes from the rows of ``X`` (n_rows x n_features).

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
        >>> pca = pearl.PCA(n_components=2).fit(X)
        >>> pca.components_.shape, pca.explained_variance_.round(3)
        ((2, 3), array([1.435, 0.77 ]))
        """
        names = column_names(X)
        X = as_float_matrix(X, "PCA")
        n, d = X.shape
        if self.n_components > min(n, d):
            raise BlockError(
                f"PCA(n_components={self.n_components}) needs at least that many rows and input "
                f"columns; got {n} rows and {d} columns — use n_components <= {min(n, d)}"
            )
        scaler = Standardizer(X) if self.standardize else None
        Z = scaler(X) if scaler is not None else X
        mean = Z.mean(axis=0)
        _, singular, axes = svd(Z - mean, full_matrices=False, check_finite=False)
        k = self.n_components
        # Beyond the rank of the centred inputs an axis is rounding noise and its scores are
        # ~1e-16 noise, not a component; the same cut-off as KernelPCA's (on variances).
        # (ratios first: squaring singular values of huge inputs would overflow)
        rank = int(np.sum((singular / singular[0]) ** 2 > NULL_VARIANCE)) if singular[0] else 0
        if rank < k:
            raise BlockError(
                f"PCA(n_components={k}) found only {rank} direction(s) with non-zero variance "
                f"in the {'standardised ' if self.standardize else ''}training inputs (their "
                f"centred rank is {rank}); use n_components <= {rank}"
                if rank else
                f"PCA(n_components={k}) got training rows that are all identical; there is no "
                "direction of variation — use other inputs"
            )
        self.scaler_, self.mean_ = scaler, mean
        self.components_ = flip_signs(axes[:k].T).T
        self.explained_variance_ = singular[:k] ** 2 / max(n - 1, 1)
        self.n_features_in_ = d
        self.feature_names_in_ = names
        self.output_dim_ = k
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Scores of the rows of ``X`` on the training axes, shape (n_rows, n_components).

        After a fit on a DataFrame, a DataFrame is read by column name (in any order).

        Parameters
        ----------
        X : array_like or DataFrame (n_rows, n_features)
            Numeric input rows.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> pearl.PCA(n_components=2).fit(X).transform(X[:3]).round(3)
        array([[ 0.214, -0.308],
               [ 0.067, -0.421],
               [ 1.267,  1.4  ]])
        """
        check_fitted(self, "components_")
        X = as_float_matrix(align_columns(X, self, "PCA"), "PCA")
        check_width(X, self.n_features_in_, "PCA")
        Z = self.scaler_(X) if self.standardize else X
        return (Z - self.mean_) @ self.components_.T

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
        >>> pearl.PCA(n_components=2).fit_transform(X).shape
        (30, 2)
        """
        return self.fit(X).transform(X)


class Raw(LearnerParams):
    """The input columns themselves as a block (for example flattened pixels).

    Parameters
    ----------
    standardize : bool, default False
        Centre and scale each column with its training mean and standard
        deviation (constant columns become 0).
    columns : str or list of str, optional
        Input columns this learner reads inside a ``Representations`` container.

    Attributes
    ----------
    input_kind : str
        ``"numeric"``: a ``Representations`` container hands :meth:`fit` and
        :meth:`transform` a float 2-D array of its columns.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 10.0], [3.0, 10.0]])
    >>> Raw(standardize=True).fit(X).transform(X)
    array([[-1.,  0.],
           [ 1.,  0.]])
    """

    input_kind = "numeric"

    def __init__(self, *, standardize: bool = False, columns: str | Sequence[str] | None = None):
        check_bool(standardize, "standardize")
        self.standardize = standardize
        self.columns = columns

    def __repr__(self):
        return self._repr(standardize=self.standardize)

    def _output_names(self, width: int, input_features: list | None) -> list[str]:
        # The block's columns are the inputs themselves, so they keep the inputs' names, as a
        # DataFrame block's columns do in pearlstats' tables (a block raw of columns age and
        # bmi has raw[age], raw[bmi]); raw[0], raw[1], ... for an array.
        labels = (input_features if input_features is not None
                  else getattr(self, "feature_names_in_", None))
        return [f"raw[{label}]" for label in (range(width) if labels is None else labels)]

    @transactional
    def fit(self, X: Any, y: Any = None) -> Raw:
        """Record the number of columns and, with ``standardize``, their means and scales.

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
        >>> pearl.Raw(standardize=True).fit(X).n_features_in_
        3
        """
        self.feature_names_in_ = column_names(X)
        X = as_float_matrix(X, "Raw")
        self.scaler_ = Standardizer(X) if self.standardize else None
        self.n_features_in_ = self.output_dim_ = X.shape[1]
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The inputs as float64, standardised with the training statistics if asked.

        After a fit on a DataFrame, a DataFrame is read by column name (in any order).

        Parameters
        ----------
        X : array_like or DataFrame (n_rows, n_features)
            Numeric input rows.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> raw = pearl.Raw(standardize=True).fit(X)
        >>> raw.transform(X).std(axis=0).round(3)
        array([1., 1., 1.])
        """
        check_fitted(self, "n_features_in_")
        X = as_float_matrix(align_columns(X, self, "Raw"), "Raw")
        check_width(X, self.n_features_in_, "Raw")
        return self.scaler_(X) if self.standardize else X.copy()

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
        >>> pearl.Raw().fit_transform(X[:2]).round(3)
        array([[ 0.126, -0.132,  0.64 ],
               [ 0.105, -0.536,  0.362]])
        """
        return self.fit(X).transform(X)
