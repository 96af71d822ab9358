"""Inference for the averaged model: coefficients, standard errors, residuals, CV+ intervals.

Pure functions over plain inputs (mappings from candidate label to a pandas
object, a weight Series, numpy arrays), so the results object can wire them to
``params``, ``bse``, ``conf_int()``, ``fittedvalues``, ``resid`` and
``predict(new, interval=...)``. Five modules, one job each:

:mod:`.coefficients`
    Model-averaged coefficients, MuMIn's *full* average (a candidate without a
    term contributes 0) and *conditional* (subset) average (over the candidates
    that have the term, weights renormalised), with the unconditional standard
    errors of Burnham & Anderson (2002): the revised formula (eq. 6.12, MuMIn's
    default ``revised.var = TRUE``) or eq. 4.9. Both take the weights and the
    candidate set as fixed. Coefficients of candidates fitted with a ridge
    penalty are shrunken and their standard errors are not those of an
    unpenalised fit; the caller flags that.
:mod:`.fitted`
    Fitted values, residuals, and the confidence interval of the averaged mean
    (of the fixed-weight average over the given candidates, not a prediction
    interval for a new response).
:mod:`.conformal`
    CV+ prediction intervals (Barber, Candès, Ramdas & Tibshirani 2021) and
    adaptive prediction sets (Romano, Sesia & Candès 2020): marginal coverage of
    a new response, not conditional on its x.
:mod:`.refit_sums`
    The candidates' all-rows refits as sums over rows: the per-rows kernel
    (Gram or Fisher information, residual sum of squares, log-likelihood at the
    candidates' coefficients), run over row chunks in memory and over the
    partitions on dask.
:mod:`.sums_refit`
    statsmodels' ``cov_params()``, ``df_resid``, ``scale`` and ``llf`` (and the
    ridge sandwich) of each candidate from those sums.

Examples
--------
>>> import pandas as pd
>>> params = {"a": pd.Series({"Intercept": 1.0, "x": 2.0}),
...           "a+b": pd.Series({"Intercept": 3.0, "x": 2.0, "z": 4.0})}
>>> weights = pd.Series({"a": 0.5, "a+b": 0.5})
>>> averaged_params(params, weights).tolist()
[2.0, 2.0, 2.0]
>>> conditional_params(params, weights).tolist()
[2.0, 2.0, 4.0]
"""

from __future__ import annotations

from .coefficients import (
    adjusted_se,
    averaged_conf_int,
    averaged_params,
    coefficient_order,
    conditional_params,
    conditional_se,
    term_union,
    term_weights,
    unconditional_se,
)
from .conformal import aps_prediction_sets, aps_scores, cv_plus_interval
from .fitted import averaged_fitted, averaged_mean_se, averaged_resid, combined_mean_se

__all__ = [
    "term_union",
    "coefficient_order",
    "averaged_params",
    "unconditional_se",
    "adjusted_se",
    "averaged_conf_int",
    "conditional_params",
    "conditional_se",
    "term_weights",
    "averaged_fitted",
    "averaged_resid",
    "cv_plus_interval",
    "averaged_mean_se",
    "combined_mean_se",
    "aps_scores",
    "aps_prediction_sets",
]
