"""Argument checks shared by the inference modules: simplex weights, coefficient tables, alpha."""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import pandas as pd

from ..exceptions import DataError, OptionError

ParamsLike = pd.Series | pd.DataFrame

# Tolerance on sum(w) = 1: solvers return weights accurate to about 1e-10, so a
# larger gap means the caller passed something that is not simplex weights.
_SIMPLEX_TOL = 1e-6


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



def _df_vector(df_resid, labels: list[Hashable]) -> np.ndarray:
    if isinstance(df_resid, Mapping):
        missing = [lab for lab in labels if lab not in df_resid]
        if missing:
            raise DataError(f"df_resid has no entry for candidates {missing}")
        df = np.array([df_resid[lab] for lab in labels], dtype=float)
    else:
        df = np.full(len(labels), float(df_resid))
    if np.any(np.isnan(df)):
        raise DataError(f"df_resid must be numbers (inf for normal quantiles), got {df.tolist()}")
    # no residual degrees of freedom (frequency weights summing to at most the coefficients):
    # no t quantile, so NaN intervals, as statsmodels gives them
    return np.where(df > 0, df, np.nan)



def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float, np.floating)) and 0 < alpha < 1):
        raise OptionError(f"alpha={alpha!r} must be a number strictly between 0 and 1 "
                          "(for example 0.05 for 95% intervals)")

