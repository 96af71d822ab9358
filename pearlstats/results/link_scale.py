"""Predictions on the scale of the linear predictor: ``predict(which="linear")``.

PEARL averages the candidates' *means* (the weights were solved for the averaged mean's
loss), so the averaged model's linear predictor is the link of the averaged mean,
``g(sum_j w_j mu_j)``, not the average of the candidates' linear predictors: with one
candidate the two agree and equal statsmodels' ``predict(which="linear")`` and R's
``predict(type = "link")``.

The transforms are numpy ufuncs and pandas (or array) operations only, so they apply alike to
a pandas prediction and to the lazy (dask) prediction of dask rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["WHICH", "linear_predictor", "linear_name"]

WHICH = {"mean": "the averaged mean (probabilities for classes)",
         "linear": "the link of the averaged mean (R's type = 'link')"}


def linear_name(family: str, mean_name: str) -> str:
    """The name of a one-column prediction on the link scale.

    Examples
    --------
    >>> linear_name("binomial", "P(y=1)"), linear_name("poisson", "prediction")
    ('logit(P(y=1))', 'log(prediction)')
    """
    link = {"binomial": "logit", "poisson": "log"}.get(family)
    return mean_name if link is None else f"{link}({mean_name})"


def linear_predictor(family: str, mean: Any) -> Any:
    """The link of the averaged *mean* (a Series, or one column per class for classes).

    Binomial: ``log(p) - log(1 - p)``; Poisson: ``log(mu)``; gaussian: the mean itself.
    Multinomial: ``log(p_c / p_0)`` for every class c, the first class the reference (its
    column is 0), as statsmodels' ``MNLogit.predict(which="linear")``. Computed from the
    averaged mean, a logit keeps fewer digits than the linear predictor itself where the
    probability is within about 1e-7 of 0 or 1 (``|eta| > 16``: 33.479 for statsmodels'
    33.488 at ``eta`` = 33.5), and is ``+-inf`` where it rounds to 0 or 1 (``|eta|`` beyond
    about 36.7); R's ``type = "link"`` and statsmodels return ``eta`` of one model there.

    Examples
    --------
    >>> import pandas as pd
    >>> linear_predictor("binomial", pd.Series([0.5, 0.75])).round(4).tolist()
    [0.0, 1.0986]
    >>> probabilities = pd.DataFrame({"a": [0.25], "b": [0.5], "c": [0.25]})
    >>> linear_predictor("multinomial", probabilities).round(4).to_numpy().tolist()
    [[0.0, 0.6931, 0.0]]
    """
    if family == "gaussian":
        return mean
    with np.errstate(divide="ignore"):  # a mean of 0 (or a probability of 1) is -inf (+inf)
        if family == "binomial":
            return np.log(mean) - np.log1p(-mean)
        logs = np.log(mean)
    if family == "poisson":
        return logs
    if hasattr(logs, "iloc"):  # multinomial: against the first class
        return logs.sub(logs.iloc[:, 0], axis=0)
    return logs - logs[:, :1]  # a (dask) array of class probabilities
