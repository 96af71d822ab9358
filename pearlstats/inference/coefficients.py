"""Model-averaged coefficients and their standard errors (full average, MuMIn's vocabulary).

A candidate that lacks a term contributes a coefficient of 0 with standard
error 0 to the *full* average (Burnham & Anderson 2002, section 4.3; Lukacs,
Burnham & Anderson 2010). The standard errors treat the weights as fixed: they
describe the spread over candidates and within each candidate, not the sampling
variability of the cross-validated weights themselves.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import pandas as pd

from .._lazy import lazy_module
from ..exceptions import DataError
from ._checks import ParamsLike, _check_alpha, _check_params, _df_vector, _weight_vector

stats = lazy_module("scipy.stats")  # quantiles, on the first interval


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
           terms: list[Hashable], nan_allowed: bool = False) -> np.ndarray:
    """Candidates x terms (x classes) array; a term a candidate lacks is 0 (full average).

    With *nan_allowed* (standard errors) a NaN the candidate reports stays NaN: a candidate
    without residual degrees of freedom has no SE (statsmodels gives NaN), and neither has
    an average over it.
    """
    for lab in labels:
        # A NaN the candidate reports itself is an error; only absent terms become 0.
        reported = np.asarray(values[lab], dtype=float)
        if not np.all(np.isfinite(reported) | (nan_allowed & np.isnan(reported))):
            raise DataError(f"candidate {lab!r} has non-finite coefficients or standard errors; "
                            "refit it, or give it weight 0 and leave it out")
    out = np.stack([np.asarray(values[lab].reindex(terms), dtype=float) for lab in labels])
    absent = np.stack([~pd.Index(terms).isin(values[lab].index) for lab in labels])
    return np.where(absent.reshape(absent.shape + (1,) * (out.ndim - 2)), 0.0, out)


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
    return (_stack(params, labels, terms), _stack(bse, labels, terms, nan_allowed=True), w,
            labels, terms)


def _wrap(values: np.ndarray, terms: list[Hashable], template: ParamsLike) -> ParamsLike:
    if isinstance(template, pd.DataFrame):
        return pd.DataFrame(values, index=pd.Index(terms), columns=template.columns)
    return pd.Series(values, index=pd.Index(terms))


def _spread(b: np.ndarray, s2: np.ndarray, w: np.ndarray, revised: bool) -> np.ndarray:
    """Buckland et al. (1997) combination of within-candidate variance and between spread."""
    b_avg = np.tensordot(w, b, axes=1)
    total = s2 + (b - b_avg) ** 2
    if revised:
        # Burnham & Anderson (2002, eq. 6.12; 2004, eq. 4), MuMIn's revised.var = TRUE:
        # the square root of the weighted variance.
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
                     weights: pd.Series, *, revised: bool = True) -> ParamsLike:
    """Unconditional standard errors of the full-average coefficients.

    With ``revised=True`` (the default, as MuMIn's ``revised.var = TRUE``):
    ``se = sqrt(sum_j w_j (se_j**2 + (b_j - b_avg)**2))`` (Burnham & Anderson
    2002, eq. 6.12; 2004, eq. 4). With ``revised=False``:
    ``se = sum_j w_j sqrt(se_j**2 + (b_j - b_avg)**2)`` (Buckland, Burnham &
    Augustin 1997; Burnham & Anderson 2002, eq. 4.9). A candidate that lacks the
    term has ``b_j = se_j = 0``, as in MuMIn's full average. Both take the
    weights and the candidate set as fixed.

    Parameters
    ----------
    params, bse : mapping of label -> Series or DataFrame
        Coefficients and their standard errors, same terms per candidate.
    weights : pandas.Series
        Simplex weights indexed by label.
    revised : bool, default True
        The revised formula (eq. 6.12); ``False`` for eq. 4.9.

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
    >>> bse = {"a": pd.Series({"x": 3.0}), "b": pd.Series({"x": 0.0})}
    >>> [round(float(unconditional_se(params, bse, pd.Series({"a": 0.5, "b": 0.5}),
    ...                               revised=r).iloc[0]), 4) for r in (True, False)]
    [2.3452, 2.0811]
    """
    b, s, w, labels, terms = _params_bse(params, bse, weights)
    return _wrap(_spread(b, s**2, w, revised), terms, params[labels[0]])




def adjusted_se(params: Mapping[Hashable, ParamsLike], bse: Mapping[Hashable, ParamsLike],
                weights: pd.Series, df_resid: Mapping[Hashable, float] | float, *,
                alpha: float = 0.05, revised: bool = True) -> ParamsLike:
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
    revised : bool, default True
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
    # isf(alpha / 2), not ppf(1 - alpha / 2), which is inf (and the ratio NaN) once
    # 1 - alpha / 2 rounds to 1, below alpha ~ 1e-16
    z = stats.norm.isf(alpha / 2)
    ratio = stats.t.isf(alpha / 2, _df_vector(df_resid, labels)) / z
    scale = ratio.reshape((-1,) + (1,) * (s.ndim - 1))
    # a term a candidate lacks has se 0 whatever its df (a NaN quantile too)
    inflated = np.where(s == 0, 0.0, s * scale)
    return _wrap(_spread(b, inflated**2, w, revised), terms, params[labels[0]])


def averaged_conf_int(params: Mapping[Hashable, ParamsLike], bse: Mapping[Hashable, ParamsLike],
                      weights: pd.Series, alpha: float = 0.05, *,
                      df_resid: Mapping[Hashable, float] | float | None = None,
                      revised: bool = True) -> pd.DataFrame:
    """Confidence intervals of the full-average coefficients, as MuMIn's ``confint(full=TRUE)``.

    They estimate the weighted average of the candidates' coefficients with the
    weights and the candidate set held fixed. For a term that some candidates
    lack, that target shrinks towards 0 and means different things in different
    candidates; report such terms per candidate or with
    :func:`conditional_params` instead.

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
    revised : bool, default True
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
    half = stats.norm.isf(alpha / 2) * se
    if isinstance(mean, pd.DataFrame):
        # Class-major rows as statsmodels' MNLogit.conf_int.
        mean, half = mean.T.stack(), half.T.stack()
    return pd.DataFrame({"lower": mean - half, "upper": mean + half})



# ---------------------------------------------------------------------------
# conditional (subset) average: MuMIn's coef(full = FALSE)


def _subset_weights(params: Mapping[Hashable, ParamsLike], weights: pd.Series):
    """Coefficients with NaN where a candidate lacks a term, and each term's renormalised weights.

    Returns ``(b, mask, w_term, labels, terms)``: ``w_term[j, k]`` is
    ``w_j / sum_{i has k} w_i`` for the candidates j that have term k, else 0.
    """
    labels = _check_params(params)
    terms = term_union(params)
    w = _weight_vector(weights, labels, "params")
    _stack(params, labels, terms)  # the finiteness check
    b = np.stack([np.asarray(params[lab].reindex(terms), dtype=float) for lab in labels])
    mask = ~np.isnan(b)
    shape = (-1,) + (1,) * (b.ndim - 1)
    held = mask * w.reshape(shape)
    total = held.sum(axis=0)
    # A term only weight-0 candidates have gets total 0: its subset average is undefined.
    with np.errstate(invalid="ignore", divide="ignore"):
        w_term = np.where(total > 0, held / total, np.nan)
    return np.nan_to_num(b, nan=0.0), mask, w_term, labels, terms


def term_weights(params: Mapping[Hashable, ParamsLike], weights: pd.Series) -> pd.Series:
    """Sum of the weights of the candidates that have each term (MuMIn's ``sw``, "importance").

    Parameters
    ----------
    params : mapping of label -> Series or DataFrame
    weights : pandas.Series

    Returns
    -------
    pandas.Series
        Indexed by :func:`term_union`; 1 for a term every candidate has.

    Examples
    --------
    >>> import pandas as pd
    >>> params = {"a": pd.Series({"x": 1.0}), "a+b": pd.Series({"x": 2.0, "z": 4.0})}
    >>> term_weights(params, pd.Series({"a": 0.25, "a+b": 0.75})).tolist()
    [1.0, 0.75]
    """
    labels = _check_params(params)
    terms = term_union(params)
    w = _weight_vector(weights, labels, "params")
    has = np.array([[term in params[lab].index for term in terms] for lab in labels])
    return pd.Series(w @ has, index=pd.Index(terms))


def conditional_params(params: Mapping[Hashable, ParamsLike], weights: pd.Series) -> ParamsLike:
    """Conditional (subset) average: each term averaged over the candidates that have it.

    ``b_k = sum_{j has k} w_j b_jk / sum_{j has k} w_j``, MuMIn's
    ``coef(x, full = FALSE)``. For a term every candidate has this is the full
    average. A block column's coefficient means different things in candidates
    with different other blocks, so this average is a summary, not an estimate
    of one parameter. NaN for a term only weight-0 candidates have.

    Parameters
    ----------
    params : mapping of label -> Series or DataFrame
    weights : pandas.Series

    Returns
    -------
    Series or DataFrame
        Indexed like :func:`averaged_params`.

    Examples
    --------
    >>> import pandas as pd
    >>> params = {"a": pd.Series({"x": 1.0}), "a+b": pd.Series({"x": 2.0, "z": 4.0})}
    >>> conditional_params(params, pd.Series({"a": 0.25, "a+b": 0.75})).tolist()
    [1.75, 4.0]
    """
    b, _, w_term, labels, terms = _subset_weights(params, weights)
    return _wrap(np.sum(w_term * b, axis=0), terms, params[labels[0]])


def conditional_se(params: Mapping[Hashable, ParamsLike], bse: Mapping[Hashable, ParamsLike],
                   weights: pd.Series, *, revised: bool = True) -> ParamsLike:
    """Standard errors of :func:`conditional_params` (MuMIn's subset average).

    The formulas of :func:`unconditional_se` over the candidates that have the
    term, with their weights renormalised to sum to 1 (MuMIn's ``par.avg`` on
    that subset). Conditional on the weights, the candidate set and on the term
    being in the model.

    Parameters
    ----------
    params, bse : mapping of label -> Series or DataFrame
    weights : pandas.Series
    revised : bool, default True
        Burnham & Anderson (2002) eq. 6.12; ``False`` for eq. 4.9.

    Returns
    -------
    Series or DataFrame

    Examples
    --------
    >>> import pandas as pd
    >>> params = {"a": pd.Series({"x": 1.0}), "a+b": pd.Series({"x": 1.0, "z": 4.0})}
    >>> bse = {"a": pd.Series({"x": 1.0}), "a+b": pd.Series({"x": 1.0, "z": 2.0})}
    >>> conditional_se(params, bse, pd.Series({"a": 0.5, "a+b": 0.5})).tolist()
    [1.0, 2.0]
    """
    _params_bse(params, bse, weights)  # same candidates and terms
    b, _, w_term, labels, terms = _subset_weights(params, weights)
    s = _stack(bse, labels, terms)
    avg = np.sum(w_term * b, axis=0)
    total = s**2 + (b - avg) ** 2
    if revised:
        se = np.sqrt(np.sum(w_term * total, axis=0))
    else:
        se = np.sum(w_term * np.sqrt(total), axis=0)
    return _wrap(se, terms, params[labels[0]])
