"""The averaged model's fitted values, residuals and the confidence interval of its mean."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._lazy import lazy_module
from ..backends.lazy import is_dask_collection
from ..exceptions import DataError, OptionError, format_positions
from ._checks import _check_alpha, _df_vector, _weight_vector
from .coefficients import _spread

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

stats = lazy_module("scipy.stats")  # quantiles, on the first interval


def averaged_fitted(
    fitted_by_candidate: Mapping[Hashable, object], weights: pd.Series
) -> pd.Series | pd.DataFrame:
    """Fitted values of the averaged model: ``sum_j w_j fitted_j``.

    Parameters
    ----------
    fitted_by_candidate : mapping of label -> array-like
        Each candidate's fitted values on the response scale (means for
        gaussian / poisson, probabilities for binomial, an (n, C) probability
        matrix for multinomial), all of one shape.
    weights : pandas.Series
        Simplex weights indexed by label.

    Returns
    -------
    numpy.ndarray, Series or DataFrame
        Same shape as one candidate's values; a pandas object keeps the index
        (and columns) of the first candidate's.

    Examples
    --------
    >>> import pandas as pd
    >>> averaged_fitted({"a": [1.0, 2.0], "b": [3.0, 4.0]}, pd.Series({"a": 0.5, "b": 0.5}))
    array([2., 3.])
    """
    if not isinstance(fitted_by_candidate, Mapping) or len(fitted_by_candidate) == 0:
        raise DataError("fitted_by_candidate must be a non-empty mapping from candidate label "
                        "to fitted values")
    labels = list(fitted_by_candidate)
    w = _weight_vector(weights, labels, "fitted_by_candidate")
    arrays = [np.asarray(fitted_by_candidate[lab], dtype=float) for lab in labels]
    shapes = {lab: a.shape for lab, a in zip(labels, arrays)}
    if len(set(shapes.values())) > 1:
        raise DataError(f"candidates' fitted values differ in shape: {shapes}; "
                        "give every candidate's values on the same rows")
    avg = np.tensordot(w, np.stack(arrays), axes=1)
    first = fitted_by_candidate[labels[0]]
    if isinstance(first, pd.DataFrame):
        return pd.DataFrame(avg, index=first.index, columns=first.columns)
    if isinstance(first, pd.Series):
        return pd.Series(avg, index=first.index, name=first.name)
    return avg


_PEARSON_VARIANCE = {
    "gaussian": lambda mu: np.ones_like(mu),
    "binomial": lambda mu: mu * (1.0 - mu),
    "poisson": lambda mu: mu,
}


def averaged_resid(
    y: ArrayLike, fitted: ArrayLike, *, kind: str = "response", family: str = "gaussian"
) -> np.ndarray:
    """Residuals of the averaged model.

    ``kind="response"``: ``y - mu``. ``kind="pearson"``: ``(y - mu) / sqrt(V(mu))``
    with the family's variance function ``V``: 1 (gaussian), ``mu (1 - mu)``
    (binomial, 0/1 response), ``mu`` (poisson) -- statsmodels' GLM
    ``resid_pearson`` with unit scale.

    Parameters
    ----------
    y : array-like
        Observed response (0/1 for binomial; a one-hot (n, C) matrix for
        multinomial response residuals).
    fitted : array-like
        Averaged fitted values on the response scale, same shape as ``y``.
    kind : {"response", "pearson"}
    family : {"gaussian", "binomial", "poisson"}
        Needed for Pearson residuals; multinomial has none here.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> averaged_resid([1, 0], [0.8, 0.2], kind="pearson", family="binomial")
    array([ 0.5, -0.5])
    """
    # A lazy (dask) pair stays lazy: the residuals of a fit on dask data are computed where
    # its rows live.
    y_arr, mu = (y, fitted) if is_dask_collection(y) else (np.asarray(y, dtype=float),
                                                           np.asarray(fitted, dtype=float))
    if y_arr.shape != mu.shape:
        raise DataError(f"y has shape {y_arr.shape} but fitted has {mu.shape}; give one fitted "
                        "value per response value")
    if kind == "response":
        return y_arr - mu
    if kind != "pearson":
        raise OptionError(f"kind={kind!r} is not known; use 'response' or 'pearson'")
    if family not in _PEARSON_VARIANCE:
        raise OptionError(f"Pearson residuals for family={family!r} are not available; use "
                          f"one of {sorted(_PEARSON_VARIANCE)} or kind='response'")
    var = _PEARSON_VARIANCE[family](mu)
    nonpositive = ~(var > 0)
    if bool(nonpositive.any()):  # one reduction (a pass, for a fit on dask data)
        bad = np.flatnonzero(np.asarray(nonpositive))
        raise DataError(f"fitted values give a non-positive {family} variance at "
                        f"{format_positions(bad)}; Pearson residuals need 0 < mu "
                        "(and mu < 1 for binomial)")
    return (y_arr - mu) / np.sqrt(var)


def combined_mean_se(means: np.ndarray, variances: np.ndarray, weights: np.ndarray, *,
                     revised: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, se)``: candidates' means (J, m) with delta-method variances combined as
    :func:`averaged_mean_se` combines them (fixed weights, unconditional SE).

    Examples
    --------
    >>> import numpy as np
    >>> mean, se = combined_mean_se(np.array([[1.0], [3.0]]), np.array([[9.0], [0.0]]),
    ...                             np.array([0.5, 0.5]))
    >>> mean.tolist(), round(float(se[0]), 4)  # sqrt(0.5 (9 + 1) + 0.5 (0 + 1))
    ([2.0], 2.3452)
    """
    w = np.asarray(weights, dtype=float)
    return w @ means, _spread(means, variances, w, revised)


def averaged_mean_se(X_by_candidate: Mapping[Hashable, object],
                     cov_by_candidate: Mapping[Hashable, object],
                     params_by_candidate: Mapping[Hashable, object], weights: pd.Series, *,
                     alpha: float = 0.05, df_resid: Mapping[Hashable, float] | None = None,
                     revised: bool = True) -> pd.DataFrame:
    """Averaged mean ``sum_j w_j x_j' b_j`` of linear candidates with an unconditional SE.

    Per candidate the delta method gives ``var_j(x) = x_j' V_j x_j`` (exact for a
    linear mean); the candidates are then combined as the coefficients are
    (:func:`unconditional_se`): ``se = sqrt(sum_j w_j (var_j + (m_j - m_avg)**2))``
    (Burnham & Anderson 2002, eq. 6.12), or with ``revised=False``
    ``se = sum_j w_j sqrt(var_j + (m_j - m_avg)**2)`` (eq. 4.9). A mean that is a
    coefficient (the row picks one term every candidate has) then has that
    coefficient's averaged SE.
    The weights are treated as fixed, so the SE is conditional on them. The
    interval is ``m_avg +- z_{1-alpha/2} se`` with the t adjustment of
    :func:`adjusted_se` when ``df_resid`` is given; for one candidate this is
    statsmodels' ``get_prediction().summary_frame()``.

    Parameters
    ----------
    X_by_candidate : mapping of label -> array-like, shape (m, p_j)
        Each candidate's design rows for the new points.
    cov_by_candidate : mapping of label -> array-like, shape (p_j, p_j)
        ``cov_params()`` of each candidate.
    params_by_candidate : mapping of label -> array-like, shape (p_j,)
    weights : pandas.Series
    alpha : float, default 0.05
    df_resid : mapping of label -> float, optional
        Residual df of each candidate for t quantiles.
    revised : bool, default True
        As in :func:`unconditional_se`.

    Returns
    -------
    pandas.DataFrame
        Columns ``mean``, ``mean_se``, ``mean_ci_lower``, ``mean_ci_upper``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> out = averaged_mean_se({"a": np.ones((1, 1))}, {"a": np.eye(1) * 4},
    ...                        {"a": np.array([1.0])}, pd.Series({"a": 1.0}))
    >>> out[["mean", "mean_se"]].values.tolist()
    [[1.0, 2.0]]
    """
    _check_alpha(alpha)
    labels = list(X_by_candidate)
    w = _weight_vector(weights, labels, "X_by_candidate")
    means, variances = [], []
    for lab in labels:
        if lab not in cov_by_candidate or lab not in params_by_candidate:
            raise DataError(f"candidate {lab!r} has a design but no cov_params or params")
        X = np.atleast_2d(np.asarray(X_by_candidate[lab], dtype=float))
        V = np.asarray(cov_by_candidate[lab], dtype=float)
        b = np.asarray(params_by_candidate[lab], dtype=float).ravel()
        if V.shape != (b.size, b.size) or X.shape[1] != b.size:
            raise DataError(f"candidate {lab!r}: design has {X.shape[1]} columns, params "
                            f"{b.size} values and cov_params shape {V.shape}; they must agree")
        means.append(X @ b)
        variances.append(np.sum((X @ V) * X, axis=1))
    if len({m.size for m in means}) > 1:
        raise DataError("candidates' designs have different numbers of rows")
    mu, var = np.stack(means), np.stack(variances)
    # isf(alpha / 2), not ppf(1 - alpha / 2), which is inf (and the ratio NaN) once
    # 1 - alpha / 2 rounds to 1, below alpha ~ 1e-16
    z = stats.norm.isf(alpha / 2)
    mean = w @ mu
    se = _spread(mu, var, w, revised)
    if df_resid is None:
        half = z * se
    else:
        ratio = stats.t.isf(alpha / 2, _df_vector(df_resid, labels)) / z
        half = z * _spread(mu, var * ratio[:, None] ** 2, w, revised)
    return pd.DataFrame({"mean": mean, "mean_se": se,
                         "mean_ci_lower": mean - half, "mean_ci_upper": mean + half})

