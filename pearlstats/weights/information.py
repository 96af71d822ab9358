"""Information-criterion model averaging over the candidates (MuMIn's ``model.avg``).

Classical model averaging weighs candidate *j* by ``exp(-Delta_j / 2)``, where ``Delta_j``
is its information criterion less the smallest one (Burnham & Anderson 2002, ch. 4; MuMIn's
``Weights``). PEARL's tables show these weights beside the cross-validated ones, as the
strategies ``"AICc"`` and ``"BIC"`` of :mod:`pearlstats.weights.baselines`:

* ``AIC  = -2 llf + 2 k``
* ``AICc = AIC + 2 k (k + 1) / (n - k - 1)`` (infinite, so weight 0, when ``n <= k + 1``)
* ``BIC  = -2 llf + k log n``

``llf`` is the candidate's log-likelihood on the rows it was fitted on (its fit on all rows
for the fit's own tables; on an outer fold's training rows in the honest re-runs). ``k``
counts the estimated parameters as R's ``logLik`` does, which MuMIn reads: the coefficients
(times ``C - 1`` class equations for the multinomial) plus one for the gaussian variance.
``n`` is the effective sample size: the sum of frequency weights, else the number of rows.
A candidate fitted with a ridge is scored at its penalised fit with the nominal ``k`` (an
approximation: its effective degrees of freedom are fewer).

Examples
--------
>>> import numpy as np
>>> criteria(np.array([-10.0, -12.0]), np.array([2, 3]), 50.0)["AICc"].round(3).tolist()
[24.255, 30.522]
>>> akaike_weights(np.array([24.255, 30.522, np.nan])).round(3).tolist()
[0.958, 0.042, 0.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import gammaln

from ..backends.lazy import computed

__all__ = ["CRITERIA", "log_likelihood", "n_parameters", "criteria", "candidate_criteria",
           "akaike_weights"]

CRITERIA = ("AICc", "BIC")  # the strategies of the tables, in this order


def log_likelihood(family: str, y: np.ndarray, mean: np.ndarray,
                   row_weights: np.ndarray | None = None,
                   weight_type: str | None = None) -> float:
    """The log-likelihood of fitted means *mean* (class probabilities for the multinomial).

    Frequency weights count rows; variance weights scale each row's log-density as
    statsmodels' ``GLM(var_weights=)`` does (the gaussian's ``WLS``: the variance of row
    *i* is ``sigma^2 / w_i``). The gaussian variance is its maximum-likelihood estimate
    (statsmodels' ``OLS.llf``, R's ``logLik.lm``).
    """
    w = 1.0 if row_weights is None else row_weights
    if family == "gaussian":
        squared = w * (y - mean) ** 2
        n = len(y) if row_weights is None or weight_type == "variance" else w.sum()
        with np.errstate(divide="ignore"):  # an exact fit's variance is 0: its llf is +inf
            llf = -0.5 * n * (np.log(2 * np.pi * squared.sum() / n) + 1.0)
        if weight_type == "variance":
            llf += 0.5 * np.log(w).sum()
        return llf
    with np.errstate(divide="ignore", invalid="ignore"):
        if family == "binomial":
            rows = np.where(y > 0, np.log(mean), np.log1p(-mean))
        elif family == "poisson":
            rows = y * np.log(mean) - mean - gammaln(y + 1.0)
            rows = np.where((y == 0) & (mean == 0), 0.0, rows)
        else:  # multinomial: the probability of the observed class
            chosen = (y[:, None] == np.arange(mean.shape[1])) * mean
            rows = np.log(chosen.sum(axis=1))
    return (w * rows).sum()


def n_parameters(family: str, n_columns: int, n_classes: int = 2) -> int:
    """Estimated parameters as R's ``logLik`` counts them (see the module docstring)."""
    if family == "multinomial":
        return n_columns * (n_classes - 1)
    return n_columns + (family == "gaussian")


def criteria(llf: np.ndarray, k: np.ndarray, n: float) -> dict[str, np.ndarray]:
    """``llf``, AIC, AICc and BIC of candidates with log-likelihoods *llf* and *k* parameters
    on *n* rows (NaN where *llf* is)."""
    llf, k = np.asarray(llf, dtype=float), np.asarray(k, dtype=float)
    aic = -2.0 * llf + 2.0 * k
    room = n - k - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        aicc = np.where(room > 0, aic + 2.0 * k * (k + 1.0) / room, np.inf)
    return {"llf": llf, "AIC": aic, "AICc": np.where(np.isnan(llf), np.nan, aicc),
            "BIC": -2.0 * llf + k * np.log(n)}


def candidate_criteria(family: str, response: Any, fitted: Mapping[int, Any],
                       n_columns: Sequence[int]) -> dict[str, np.ndarray]:
    """``llf``, AIC, AICc and BIC of every candidate (NaN where *fitted* has no mean).

    Parameters
    ----------
    family : str
    response : EncodedResponse
        The rows the candidates were fitted on (``y``, ``row_weights``, ``weight_type``,
        ``n_classes``).
    fitted : mapping of int -> ndarray
        Candidate index -> its fitted means on those rows (class probabilities for the
        multinomial); numpy or dask arrays (one pass computes every log-likelihood).
    n_columns : sequence of int
        Every candidate's number of design columns.
    """
    y, weights = response.y, response.row_weights
    order = list(fitted)
    values = computed(*[log_likelihood(family, y, fitted[j], weights, response.weight_type)
                        for j in order]) if order else ()
    llf = np.full(len(n_columns), np.nan)
    llf[order] = [float(value) for value in values]
    k = np.array([n_parameters(family, size, response.n_classes) for size in n_columns])
    frequency = weights is not None and response.weight_type != "variance"
    n = computed(weights.sum())[0] if frequency else len(y)
    return criteria(llf, k, float(n))


def akaike_weights(values: np.ndarray) -> np.ndarray:
    """``exp(-Delta / 2)`` normalised over the finite *values*; 0 elsewhere, NaN if none is."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    if not finite.any():
        return np.full(values.shape, np.nan)
    out = np.zeros(values.shape)
    out[finite] = np.exp(-0.5 * (values[finite] - values[finite].min()))
    return out / out.sum()
