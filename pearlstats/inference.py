"""Inference for the averaged model: coefficients, standard errors, residuals, CV+ intervals.

Pure functions over plain inputs (mappings from candidate label to a pandas
object, a weight Series, numpy arrays), so the results object can wire them to
``params``, ``bse``, ``conf_int()``, ``fittedvalues``, ``resid`` and
``predict(new, interval=...)``.

Model-averaged coefficients follow MuMIn's *full average*: a candidate that
lacks a term contributes a coefficient of 0 with standard error 0 (Burnham &
Anderson 2002, section 4.3; Lukacs, Burnham & Anderson 2010). The standard
errors treat the weights as fixed: they describe the spread over candidates and
within each candidate, not the sampling variability of the cross-validated
weights themselves. Coefficients of candidates fitted with a ridge penalty are
shrunken and their statsmodels standard errors are not those of an unpenalised
fit; the caller flags that.

Prediction intervals use CV+ (Barber, Candès, Ramdas & Tibshirani 2021,
"Predictive inference with the jackknife+", Ann. Statist. 49(1), 486-507),
which needs only the out-of-fold predictions and the K fold models; prediction
sets for classes use the same inputs with the adaptive conformity score of
Romano, Sesia & Candès (2020, "Classification with valid and adaptive
coverage", NeurIPS 33).

Examples
--------
>>> import pandas as pd
>>> params = {"a": pd.Series({"Intercept": 1.0, "x": 2.0}),
...           "a+b": pd.Series({"Intercept": 3.0, "x": 2.0, "z": 4.0})}
>>> weights = pd.Series({"a": 0.5, "a+b": 0.5})
>>> averaged_params(params, weights).tolist()
[2.0, 2.0, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from .exceptions import DataError, FoldError, OptionError, format_positions

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "term_union",
    "coefficient_order",
    "averaged_params",
    "unconditional_se",
    "adjusted_se",
    "averaged_conf_int",
    "averaged_fitted",
    "averaged_resid",
    "cv_plus_interval",
    "averaged_mean_se",
    "aps_scores",
    "aps_prediction_sets",
]

ParamsLike = pd.Series | pd.DataFrame

# Tolerance on sum(w) = 1: solvers return weights accurate to about 1e-10, so a
# larger gap means the caller passed something that is not simplex weights.
_SIMPLEX_TOL = 1e-6
# Elements per block when a CV+ order statistic is taken over (n, m) values;
# 2**22 doubles is 32 MB, small enough next to the other engineers' jobs.
_BLOCK_ELEMENTS = 2**22


# ---------------------------------------------------------------------------
# input checks and alignment


def _weight_vector(weights: pd.Series, labels: list[Hashable], what: str) -> np.ndarray:
    """Weights of ``labels`` in that order, checked to lie on the simplex."""
    if not isinstance(weights, pd.Series):
        raise DataError(f"weights must be a pandas Series indexed by candidate label, "
                        f"got {type(weights).__name__}")
    w = pd.to_numeric(weights, errors="coerce").astype(float)
    if not np.all(np.isfinite(w.to_numpy())):
        bad = list(w.index[~np.isfinite(w.to_numpy())])
        raise DataError(f"weights of {bad} are not finite numbers")
    if (w < 0).any():
        raise DataError(f"weights of {list(w.index[w < 0])} are negative; weights must lie "
                        "on the simplex (w >= 0, sum w = 1)")
    if abs(w.sum() - 1.0) > _SIMPLEX_TOL:
        raise DataError(f"weights sum to {w.sum():.10g}; weights must sum to 1")
    missing = [lab for lab in labels if lab not in w.index]
    if missing:
        raise DataError(f"{what} has candidates {missing} that have no weight; "
                        f"weights are given for {list(w.index)}")
    absent = [lab for lab in w.index if lab not in labels and w[lab] > 0]
    if absent:
        raise DataError(f"candidates {absent} have positive weight but no {what}; "
                        f"{what} is given for {labels}")
    # Renormalise so that a weight vector summing to 1 - 1e-12 still averages exactly.
    vec = w.reindex(labels).to_numpy()
    return vec / vec.sum()


def _check_params(params: Mapping[Hashable, ParamsLike], what: str = "params") -> list[Hashable]:
    """Labels of ``params``; all Series, or all DataFrames with the same columns."""
    if not isinstance(params, Mapping) or len(params) == 0:
        raise DataError(f"{what} must be a non-empty mapping from candidate label to a "
                        "pandas Series (or DataFrame for multinomial)")
    labels = list(params)
    kinds = {type(params[lab]).__name__ for lab in labels}
    if not all(isinstance(params[lab], (pd.Series, pd.DataFrame)) for lab in labels):
        raise DataError(f"{what} values must be pandas Series or DataFrames, got {sorted(kinds)}")
    if len({isinstance(params[lab], pd.DataFrame) for lab in labels}) > 1:
        raise DataError(f"{what} mixes Series and DataFrames; give all candidates as Series, "
                        "or all as DataFrames (multinomial, one column per class)")
    first = params[labels[0]]
    if isinstance(first, pd.DataFrame):
        for lab in labels[1:]:
            if not params[lab].columns.equals(first.columns):
                raise DataError(f"{what}[{lab!r}] has class columns {list(params[lab].columns)} "
                                f"but {what}[{labels[0]!r}] has {list(first.columns)}; "
                                "every multinomial candidate needs the same classes")
    for lab in labels:
        if params[lab].index.has_duplicates:
            dup = list(params[lab].index[params[lab].index.duplicated()])
            raise DataError(f"{what}[{lab!r}] repeats the terms {dup}")
    return labels


def term_union(params: Mapping[Hashable, ParamsLike]) -> list[Hashable]:
    """Union of the candidates' terms in first-seen order.

    Parameters
    ----------
    params : mapping of label -> Series or DataFrame
        Each candidate's coefficients, indexed by design column name.

    Returns
    -------
    list
        Every term that occurs in some candidate, in the order first met when
        the candidates are read in mapping order.

    Examples
    --------
    >>> import pandas as pd
    >>> term_union({"a": pd.Series({"Intercept": 1, "a[0]": 2}),
    ...             "b": pd.Series({"Intercept": 1, "b[0]": 3})})
    ['Intercept', 'a[0]', 'b[0]']
    """
    labels = _check_params(params)
    # dict keeps first-seen order and makes membership O(1).
    seen: dict[Hashable, None] = {}
    for lab in labels:
        seen.update(dict.fromkeys(params[lab].index))
    return list(seen)


def coefficient_order(params: Mapping[Hashable, ParamsLike]) -> list[Hashable]:
    """Order of the averaged coefficient table: shared covariates first, then the rest.

    Terms present in every candidate (the formula's ordinary covariates) come
    first, then the terms only some candidates have (block columns); each group
    keeps first-seen order.

    Parameters
    ----------
    params : mapping of label -> Series or DataFrame
        Each candidate's coefficients.

    Returns
    -------
    list
        The terms of :func:`term_union`, reordered.

    Examples
    --------
    >>> import pandas as pd
    >>> coefficient_order({"pca": pd.Series({"pca[0]": 1, "Intercept": 0, "age": 2}),
    ...                    "kpca": pd.Series({"Intercept": 0, "kpca[0]": 1, "age": 2})})
    ['Intercept', 'age', 'pca[0]', 'kpca[0]']
    """
    terms = term_union(params)
    shared = set.intersection(*(set(p.index) for p in params.values()))
    return [t for t in terms if t in shared] + [t for t in terms if t not in shared]


def _stack(values: Mapping[Hashable, ParamsLike], labels: list[Hashable],
           terms: list[Hashable]) -> np.ndarray:
    """Candidates x terms (x classes) array; a term a candidate lacks is 0 (full average)."""
    for lab in labels:
        # A NaN the candidate reports itself is an error; only absent terms become 0.
        if not np.all(np.isfinite(np.asarray(values[lab], dtype=float))):
            raise DataError(f"candidate {lab!r} has non-finite coefficients or standard errors; "
                            "refit it, or give it weight 0 and leave it out")
    out = np.stack([np.asarray(values[lab].reindex(terms), dtype=float) for lab in labels])
    return np.nan_to_num(out, nan=0.0)


def _params_bse(params: Mapping[Hashable, ParamsLike], bse: Mapping[Hashable, ParamsLike],
                weights: pd.Series):
    """Aligned coefficient and standard-error arrays, weights, terms and the output shape."""
    labels = _check_params(params)
    _check_params(bse, "bse")
    if set(bse) != set(labels):
        raise DataError(f"bse is given for candidates {list(bse)} but params for {labels}; "
                        "give both for the same candidates")
    for lab in labels:
        if set(bse[lab].index) != set(params[lab].index) or (
                isinstance(params[lab], pd.DataFrame)
                and not bse[lab].columns.equals(params[lab].columns)):
            raise DataError(f"bse[{lab!r}] has terms {list(bse[lab].index)} but params[{lab!r}] "
                            f"has {list(params[lab].index)}; they must match")
    terms = term_union(params)
    w = _weight_vector(weights, labels, "params")
    return _stack(params, labels, terms), _stack(bse, labels, terms), w, labels, terms


def _wrap(values: np.ndarray, terms: list[Hashable], template: ParamsLike) -> ParamsLike:
    if isinstance(template, pd.DataFrame):
        return pd.DataFrame(values, index=pd.Index(terms), columns=template.columns)
    return pd.Series(values, index=pd.Index(terms))


def _spread(b: np.ndarray, s2: np.ndarray, w: np.ndarray, revised: bool) -> np.ndarray:
    """Buckland et al. (1997) combination of within-candidate variance and between spread."""
    b_avg = np.tensordot(w, b, axes=1)
    total = s2 + (b - b_avg) ** 2
    if revised:
        # Burnham & Anderson (2004) / MuMIn revised.var=TRUE: sqrt of the weighted variance.
        return np.sqrt(np.tensordot(w, total, axes=1))
    # Burnham & Anderson (2002, eq. 4.9): weighted mean of per-candidate SDs.
    return np.tensordot(w, np.sqrt(total), axes=1)


def averaged_params(params: Mapping[Hashable, ParamsLike], weights: pd.Series) -> ParamsLike:
    """Model-averaged coefficients (full average): ``b_avg = sum_j w_j b_j``, 0 where absent.

    Parameters
    ----------
    params : mapping of label -> Series or DataFrame
        Each candidate's coefficients (statsmodels ``params``); DataFrames (terms
        x non-reference classes) for multinomial candidates.
    weights : pandas.Series
        Simplex weights indexed by label. Labels with weight 0 may be missing
        from ``params`` (for example failed candidates).

    Returns
    -------
    Series or DataFrame
        Indexed by :func:`term_union`; a DataFrame with the classes as columns
        for multinomial candidates.

    Raises
    ------
    DataError
        Weights off the simplex, labels that do not match, non-finite coefficients.

    Examples
    --------
    >>> import pandas as pd
    >>> params = {"a": pd.Series({"Intercept": 1.0, "x": 2.0}),
    ...           "b": pd.Series({"Intercept": 3.0, "z": 4.0})}
    >>> averaged_params(params, pd.Series({"a": 0.25, "b": 0.75}))
    Intercept    2.5
    x            0.5
    z            3.0
    dtype: float64
    """
    labels = _check_params(params)
    terms = term_union(params)
    w = _weight_vector(weights, labels, "params")
    b = _stack(params, labels, terms)
    return _wrap(np.tensordot(w, b, axes=1), terms, params[labels[0]])


def unconditional_se(params: Mapping[Hashable, ParamsLike], bse: Mapping[Hashable, ParamsLike],
                     weights: pd.Series, *, revised: bool = False) -> ParamsLike:
    """Unconditional standard errors of the full-average coefficients.

    ``se = sum_j w_j sqrt(se_j**2 + (b_j - b_avg)**2)`` (Buckland, Burnham &
    Augustin 1997; Burnham & Anderson 2002, eq. 4.9), with ``b_j = se_j = 0`` in a
    candidate that lacks the term, as MuMIn's full average does. With
    ``revised=True``: ``sqrt(sum_j w_j (se_j**2 + (b_j - b_avg)**2))`` (Burnham &
    Anderson 2004; MuMIn's default ``revised.var = TRUE``). Both take the weights
    as fixed.

    Parameters
    ----------
    params, bse : mapping of label -> Series or DataFrame
        Coefficients and their standard errors, same terms per candidate.
    weights : pandas.Series
        Simplex weights indexed by label.
    revised : bool, default False
        Use the revised (square root of weighted variance) formula.

    Returns
    -------
    Series or DataFrame
        Indexed like :func:`averaged_params`.

    Examples
    --------
    >>> import pandas as pd
    >>> params = {"a": pd.Series({"x": 1.0}), "b": pd.Series({"x": 3.0})}
    >>> bse = {"a": pd.Series({"x": 0.0}), "b": pd.Series({"x": 0.0})}
    >>> unconditional_se(params, bse, pd.Series({"a": 0.5, "b": 0.5})).tolist()
    [1.0]
    """
    b, s, w, labels, terms = _params_bse(params, bse, weights)
    return _wrap(_spread(b, s**2, w, revised), terms, params[labels[0]])


def _df_vector(df_resid, labels: list[Hashable]) -> np.ndarray:
    if isinstance(df_resid, Mapping):
        missing = [lab for lab in labels if lab not in df_resid]
        if missing:
            raise DataError(f"df_resid has no entry for candidates {missing}")
        df = np.array([df_resid[lab] for lab in labels], dtype=float)
    else:
        df = np.full(len(labels), float(df_resid))
    if np.any(~(df > 0)):
        raise DataError(f"df_resid must be positive (or inf for normal quantiles), "
                        f"got {df.tolist()}")
    return df


def adjusted_se(params: Mapping[Hashable, ParamsLike], bse: Mapping[Hashable, ParamsLike],
                weights: pd.Series, df_resid: Mapping[Hashable, float] | float, *,
                alpha: float = 0.05, revised: bool = False) -> ParamsLike:
    """Adjusted unconditional standard errors for t-based candidates.

    Burnham & Anderson (2002, section 4.3.3) and MuMIn's ``par.avg``: each
    candidate's variance is inflated by ``(t_{df_j, 1-alpha/2} / z_{1-alpha/2})**2``
    so that ``b_avg +- z_{1-alpha/2} * adjusted_se`` carries the candidates' t
    quantiles. A term a candidate lacks has se 0 there, so its df does not matter.

    Parameters
    ----------
    params, bse : mapping of label -> Series or DataFrame
        Coefficients and standard errors.
    weights : pandas.Series
        Simplex weights.
    df_resid : mapping of label -> float, or float
        Residual degrees of freedom per candidate (``np.inf`` for z-based fits).
    alpha : float, default 0.05
        The level the adjustment is made for.
    revised : bool, default False
        As in :func:`unconditional_se`.

    Returns
    -------
    Series or DataFrame

    Examples
    --------
    >>> import pandas as pd
    >>> se = adjusted_se({"a": pd.Series({"x": 1.0})}, {"a": pd.Series({"x": 1.0})},
    ...                  pd.Series({"a": 1.0}), {"a": 10})
    >>> round(float(se.iloc[0]), 4)  # t_{10, .975} / z_{.975}
    1.1368
    """
    _check_alpha(alpha)
    b, s, w, labels, terms = _params_bse(params, bse, weights)
    z = stats.norm.ppf(1 - alpha / 2)
    ratio = stats.t.ppf(1 - alpha / 2, _df_vector(df_resid, labels)) / z
    scale = ratio.reshape((-1,) + (1,) * (s.ndim - 1))
    return _wrap(_spread(b, (s * scale) ** 2, w, revised), terms, params[labels[0]])


def averaged_conf_int(params: Mapping[Hashable, ParamsLike], bse: Mapping[Hashable, ParamsLike],
                      weights: pd.Series, alpha: float = 0.05, *,
                      df_resid: Mapping[Hashable, float] | float | None = None,
                      revised: bool = False) -> pd.DataFrame:
    """Confidence intervals of the full-average coefficients, as MuMIn's ``confint``.

    ``b_avg +- z_{1-alpha/2} * se`` with normal quantiles; ``se`` is the
    adjusted SE (:func:`adjusted_se`) when ``df_resid`` is given (OLS
    candidates), else the unconditional SE (:func:`unconditional_se`; Logit,
    GLM and MNLogit candidates, whose statsmodels intervals are z-based). For a
    single candidate with weight 1 this is statsmodels' ``conf_int``.

    Parameters
    ----------
    params, bse : mapping of label -> Series or DataFrame
    weights : pandas.Series
    alpha : float, default 0.05
        Intervals at level ``1 - alpha``.
    df_resid : mapping of label -> float, float, or None
        Residual degrees of freedom of t-based candidates.
    revised : bool, default False
        As in :func:`unconditional_se`.

    Returns
    -------
    pandas.DataFrame
        Columns ``lower`` and ``upper``; rows are terms, or (class, term) pairs
        for multinomial candidates (as statsmodels' ``MNLogit`` ``conf_int``).

    Examples
    --------
    >>> import pandas as pd
    >>> ci = averaged_conf_int({"a": pd.Series({"x": 0.0})}, {"a": pd.Series({"x": 1.0})},
    ...                        pd.Series({"a": 1.0}))
    >>> ci.round(3).values.tolist()
    [[-1.96, 1.96]]
    """
    _check_alpha(alpha)
    mean = averaged_params(params, weights)
    if df_resid is None:
        se = unconditional_se(params, bse, weights, revised=revised)
    else:
        se = adjusted_se(params, bse, weights, df_resid, alpha=alpha, revised=revised)
    half = stats.norm.ppf(1 - alpha / 2) * se
    if isinstance(mean, pd.DataFrame):
        # Class-major rows as statsmodels' MNLogit.conf_int.
        mean, half = mean.T.stack(), half.T.stack()
    return pd.DataFrame({"lower": mean - half, "upper": mean + half})


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float, np.floating)) and 0 < alpha < 1):
        raise OptionError(f"alpha={alpha!r} must be a number strictly between 0 and 1 "
                          "(for example 0.05 for 95% intervals)")


# ---------------------------------------------------------------------------
# fitted values and residuals


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
    y_arr, mu = np.asarray(y, dtype=float), np.asarray(fitted, dtype=float)
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
    bad = np.flatnonzero(~(var > 0))
    if bad.size:
        raise DataError(f"fitted values give a non-positive {family} variance at "
                        f"{format_positions(bad)}; Pearson residuals need 0 < mu "
                        "(and mu < 1 for binomial)")
    return (y_arr - mu) / np.sqrt(var)


# ---------------------------------------------------------------------------
# CV+ prediction intervals


def _cv_plus_ranks(alpha: float, n: int) -> tuple[int, int]:
    """Ranks ``floor(alpha (n+1))`` and ``ceil((1-alpha)(n+1))`` of Barber et al. (2021)."""
    # Round away float noise first: (1 - 0.1) * 200 is 180.00000000000003 in binary.
    upper = math.ceil(round((1.0 - alpha) * (n + 1), 9))
    # n + 1 - ceil(x) = floor(n + 1 - x) exactly for integer n + 1.
    return n + 1 - upper, upper


def _lth_largest(fold_pred: np.ndarray, folds: np.ndarray, resid: np.ndarray,
                 count: int) -> np.ndarray:
    """For each new row j, the count-th largest of ``fold_pred[folds[i], j] + resid[i]``."""
    # Within a fold the shift fold_pred[k, j] is common to all rows, so the count
    # largest values of the union come from each fold's count largest residuals:
    # selecting among those K * count values instead of all n gives the same number.
    keep = []
    for k in np.unique(folds):
        rows = np.flatnonzero(folds == k)
        if rows.size > count:
            rows = rows[np.argpartition(resid[rows], rows.size - count)[rows.size - count:]]
        keep.append(rows)
    rows = np.concatenate(keep)
    sub_folds, sub_resid = folds[rows], resid[rows]
    position = rows.size - count
    m = fold_pred.shape[1]
    out = np.empty(m)
    step = max(1, _BLOCK_ELEMENTS // rows.size)
    for start in range(0, m, step):
        cols = slice(start, min(m, start + step))
        values = fold_pred[:, cols][sub_folds] + sub_resid[:, None]
        # Selection is O(n) per column where a sort would be O(n log n).
        out[cols] = np.partition(values, position, axis=0)[position]
    return out


def _check_cv_plus(y, oof_prediction, folds, new_fold_predictions):
    y_arr = np.asarray(y, dtype=float).ravel()
    oof = np.asarray(oof_prediction, dtype=float).ravel()
    fold_pred = np.asarray(new_fold_predictions, dtype=float)
    fold_arr = np.asarray(folds)
    n = y_arr.size
    if oof.size != n or fold_arr.size != n:
        raise DataError(f"y has {n} rows but oof_prediction has {oof.size} and folds "
                        f"{fold_arr.size}; give one of each per training row")
    if fold_pred.ndim == 1:
        fold_pred = fold_pred[:, None]
    if fold_pred.ndim != 2:
        raise DataError(f"new_fold_predictions has shape {fold_pred.shape}; give a (K, m) "
                        "array: row k is the fold-k model's prediction for each new row")
    for name, arr in (("y", y_arr), ("oof_prediction", oof)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise DataError(f"{name} is not finite at {format_positions(bad)}")
    if not np.all(np.isfinite(fold_pred)):
        raise DataError("new_fold_predictions has non-finite values")
    k = fold_pred.shape[0]
    if not np.issubdtype(fold_arr.dtype, np.integer) or fold_arr.min() < 0 or fold_arr.max() >= k:
        raise FoldError(f"folds must be integer fold indices 0..{k - 1} matching the {k} rows "
                        f"of new_fold_predictions; got values {np.unique(fold_arr)[:10].tolist()}")
    return y_arr, oof, fold_arr.ravel().astype(np.intp), fold_pred


def cv_plus_interval(
    y: ArrayLike,
    oof_prediction: ArrayLike,
    folds: ArrayLike,
    new_fold_predictions: ArrayLike,
    alpha: float = 0.1,
    *,
    family: str = "gaussian",
    integer: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """CV+ prediction intervals (Barber, Candès, Ramdas & Tibshirani 2021).

    With ``R_i = |y_i - mu_{-k(i)}(x_i)|`` the out-of-fold residuals, the interval for
    a new row x is::

        lower = floor(alpha (n+1))-th smallest of  mu_{-k(i)}(x) - R_i,  i = 1..n
        upper = ceil((1-alpha)(n+1))-th smallest of mu_{-k(i)}(x) + R_i

    (-inf / +inf when the rank is below 1 / above n). Marginal coverage is at
    least ``1 - 2 alpha - sqrt(2/n)`` in general and close to ``1 - alpha`` in
    practice (Barber et al. 2021, Theorem 4 and section 5).

    Parameters
    ----------
    y : array-like, shape (n,)
        Training response.
    oof_prediction : array-like, shape (n,)
        ``mu_{-k(i)}(x_i)``: each training row's prediction by the procedure
        (here: the weighted average) fitted without its fold.
    folds : array-like of int, shape (n,)
        Fold index k(i) in 0..K-1 of each training row.
    new_fold_predictions : array-like, shape (K, m)
        Row k: the fold-k procedure's predictions ``mu_{-k}(x)`` for the new rows.
    alpha : float, default 0.1
        Miscoverage level.
    family : {"gaussian", "poisson"}
        ``"poisson"`` works on the count scale and clips the lower bound at 0
        (counts are never negative, so coverage is unchanged).
    integer : bool, default False
        For counts: report ``ceil(lower)`` and ``floor(upper)``, which contain
        exactly the same integers as the real interval (it may then be empty).

    Returns
    -------
    lower, upper : numpy.ndarray, shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> y = np.arange(10.0)
    >>> oof = y + np.array([1, -1] * 5) * np.arange(1, 11) / 10
    >>> folds = np.arange(10) % 2
    >>> lo, hi = cv_plus_interval(y, oof, folds, np.array([[0.0], [0.2]]), alpha=0.2)
    >>> lo.round(2).tolist(), hi.round(2).tolist()
    ([-0.8], [1.0])
    """
    _check_alpha(alpha)
    if family not in ("gaussian", "poisson"):
        raise OptionError(f"CV+ intervals are for family 'gaussian' or 'poisson', got "
                          f"{family!r}; classification needs prediction sets instead")
    y_arr, oof, fold_idx, fold_pred = _check_cv_plus(y, oof_prediction, folds,
                                                     new_fold_predictions)
    n, m = y_arr.size, fold_pred.shape[1]
    resid = np.abs(y_arr - oof)
    lo_rank, hi_rank = _cv_plus_ranks(alpha, n)
    # The lo-th smallest of mu - R is minus the lo-th largest of -mu + R (negation is
    # exact in floating point); the hi-th smallest of mu + R is its (n+1-hi)-th largest.
    lower = (-_lth_largest(-fold_pred, fold_idx, resid, lo_rank) if lo_rank >= 1
             else np.full(m, -np.inf))
    upper = (_lth_largest(fold_pred, fold_idx, resid, n + 1 - hi_rank) if hi_rank <= n
             else np.full(m, np.inf))
    if family == "poisson":
        lower = np.maximum(lower, 0.0)
        if integer:
            lower, upper = np.ceil(lower), np.floor(upper)
    elif integer:
        raise OptionError("integer=True is for counts; use it with family='poisson'")
    return lower, upper


# ---------------------------------------------------------------------------
# confidence interval for the averaged mean (linear candidates)


def averaged_mean_se(X_by_candidate: Mapping[Hashable, object],
                     cov_by_candidate: Mapping[Hashable, object],
                     params_by_candidate: Mapping[Hashable, object], weights: pd.Series, *,
                     alpha: float = 0.05, df_resid: Mapping[Hashable, float] | None = None,
                     revised: bool = False) -> pd.DataFrame:
    """Averaged mean ``sum_j w_j x_j' b_j`` of linear candidates with an unconditional SE.

    Per candidate the delta method gives ``var_j(x) = x_j' V_j x_j`` (exact for a
    linear mean); the candidates are then combined as the coefficients are
    (:func:`unconditional_se`): ``se = sum_j w_j sqrt(var_j + (m_j - m_avg)**2)``.
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
    revised : bool, default False
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
    z = stats.norm.ppf(1 - alpha / 2)
    mean = w @ mu
    se = _spread(mu, var, w, revised)
    if df_resid is None:
        half = z * se
    else:
        ratio = stats.t.ppf(1 - alpha / 2, _df_vector(df_resid, labels)) / z
        half = z * _spread(mu, var * ratio[:, None] ** 2, w, revised)
    return pd.DataFrame({"mean": mean, "mean_se": se,
                         "mean_ci_lower": mean - half, "mean_ci_upper": mean + half})


# ---------------------------------------------------------------------------
# adaptive prediction sets for classification (CV+ calibration)


def aps_scores(proba: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Adaptive conformity scores of every class (Romano, Sesia & Candès 2020).

    ``E(x, y, u; pi) = sum of pi_c over the classes ranked above y + u * pi_y``,
    classes ranked by decreasing probability, ties broken by class order.

    Parameters
    ----------
    proba : array-like, shape (m, C)
        Class probabilities of each row.
    u : array-like, shape (m,)
        Uniform(0, 1) draws (1 for the non-randomised score).

    Returns
    -------
    numpy.ndarray, shape (m, C)
        Column c is the score the row would have if its class were c.

    Examples
    --------
    >>> aps_scores([[0.2, 0.5, 0.3]], [1.0]).round(2).tolist()
    [[1.0, 0.5, 0.8]]
    """
    proba = np.atleast_2d(np.asarray(proba, dtype=float))
    order = np.argsort(-proba, axis=1, kind="stable")
    ranked = np.take_along_axis(proba, order, axis=1)
    above = np.cumsum(ranked, axis=1) - ranked
    scores = np.empty_like(proba)
    np.put_along_axis(scores, order, above + np.asarray(u, dtype=float)[:, None] * ranked, axis=1)
    # With u = 1 the least likely class scores the full mass 1; float sums leave it an
    # ulp or so off, which would decide the tie between such scores at random.
    scores[np.abs(scores - 1.0) < 1e-12] = 1.0
    return scores


def _check_aps(y, oof_proba, folds, new_fold_proba):
    probs = np.asarray(oof_proba, dtype=float)
    fold_probs = np.asarray(new_fold_proba, dtype=float)
    if probs.ndim != 2 or fold_probs.ndim != 3 or fold_probs.shape[2] != probs.shape[1]:
        raise DataError(f"oof_proba has shape {probs.shape} and new_fold_proba "
                        f"{fold_probs.shape}; give (n, C) and (K, m, C) class probabilities")
    n, n_classes = probs.shape
    codes = np.asarray(y)
    if codes.shape != (n,) or not np.issubdtype(codes.dtype, np.integer):
        raise DataError(f"y must hold one integer class code per row of oof_proba ({n}), "
                        f"got shape {codes.shape} and dtype {codes.dtype}")
    bad = np.flatnonzero((codes < 0) | (codes >= n_classes))
    if bad.size:
        raise DataError(f"class codes at {format_positions(bad)} are outside 0..{n_classes - 1}")
    if not (np.all(np.isfinite(probs)) and np.all(np.isfinite(fold_probs))):
        raise DataError("class probabilities must be finite")
    fold_idx = np.asarray(folds)
    k = fold_probs.shape[0]
    if (fold_idx.shape != (n,) or not np.issubdtype(fold_idx.dtype, np.integer)
            or fold_idx.min() < 0 or fold_idx.max() >= k):
        raise FoldError(f"folds must be one integer fold index 0..{k - 1} per training row, "
                        f"matching the {k} fold models of new_fold_proba")
    return codes, probs, fold_idx.astype(np.intp), fold_probs


def aps_prediction_sets(
    y: ArrayLike,
    oof_proba: ArrayLike,
    folds: ArrayLike,
    new_fold_proba: ArrayLike,
    alpha: float = 0.1,
    *,
    randomize: bool = True,
    seed: int | np.random.SeedSequence | None = None,
    new_uniforms: ArrayLike | None = None,
) -> np.ndarray:
    """CV+ adaptive prediction sets for classes (Romano, Sesia & Candès 2020).

    With training scores ``E_i = E(x_i, y_i, U_i; pi_{-k(i)})`` from the
    out-of-fold probabilities (:func:`aps_scores`), class y is in the set of a
    new row x when::

        #{i : E_i < E(x, y, U; pi_{-k(i)})} < (1 - alpha)(n + 1)

    Marginal coverage is at least ``1 - 2 alpha`` less a small term (as for CV+)
    and near ``1 - alpha`` in practice.

    Parameters
    ----------
    y : array-like of int, shape (n,)
        Class codes 0..C-1 of the training rows.
    oof_proba : array-like, shape (n, C)
        Each training row's class probabilities from the fit without its fold.
    folds : array-like of int, shape (n,)
        Fold index of each training row.
    new_fold_proba : array-like, shape (K, m, C)
        The fold-k model's class probabilities for the new rows.
    alpha : float, default 0.1
    randomize : bool, default True
        Use uniform U (smaller sets, coverage near 1 - alpha); ``False`` sets
        U = 1 (larger, conservative sets).
    seed : int or numpy.random.Generator, optional
        Source of U: n draws for the training rows, then m for the new rows.
    new_uniforms : array-like of float in [0, 1], shape (m,), optional
        The new rows' U instead of the m draws from *seed* (with *randomize*):
        a caller can tie each row's U to the row itself, so that its set does
        not depend on the other rows predicted with it or their order.

    Returns
    -------
    numpy.ndarray of bool, shape (m, C)
        Entry (j, c) says whether class c is in the set of new row j.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 1] * 10)
    >>> oof = np.where(y[:, None] == [0, 1], 0.9, 0.1)
    >>> new = np.array([[[0.95, 0.05]], [[0.9, 0.1]]])
    >>> aps_prediction_sets(y, oof, np.arange(20) % 2, new, 0.1, randomize=False)
    array([[ True, False]])
    """
    _check_alpha(alpha)
    codes, probs, fold_idx, fold_probs = _check_aps(y, oof_proba, folds, new_fold_proba)
    n, m = codes.size, fold_probs.shape[1]
    rng = np.random.default_rng(seed)
    u_train = rng.uniform(size=n) if randomize else np.ones(n)
    if not randomize:
        u_new = np.ones(m)
    elif new_uniforms is None:
        u_new = rng.uniform(size=m)
    else:
        u_new = np.asarray(new_uniforms, dtype=float)
        if u_new.shape != (m,):
            raise DataError(f"new_uniforms has shape {u_new.shape}; give one U per new row ({m},)")
    train = aps_scores(probs, u_train)[np.arange(n), codes]
    beaten = np.zeros((m, probs.shape[1]), dtype=np.int64)
    for k in range(fold_probs.shape[0]):
        # Training scores of fold k, sorted once, count how many lie strictly below.
        fold_scores = np.sort(train[fold_idx == k])
        beaten += np.searchsorted(fold_scores, aps_scores(fold_probs[k], u_new), side="left")
    # count < (1 - alpha)(n + 1) for an integer count is count < ceil((1 - alpha)(n + 1)).
    return beaten < _cv_plus_ranks(alpha, n)[1]
