"""The intercept-only (null) model: the risk of ignoring every input.

The summary's "Null" row scores the family's intercept-only model on the
same folds as the candidates: the (weighted) mean for gaussian, the class
frequencies for binomial and multinomial, the mean rate for Poisson. With an
offset (or ``exposure``, whose log is the offset) the intercept solves the
family's score equation ``sum_i w_i (y_i - mu(a + o_i)) = 0``, so it is the
maximum-likelihood intercept of ``GLM(y, 1, offset=o, freq_weights=w)``;
frequency and variance weights give the same intercept (only the SEs
differ). It is a reference, not a candidate: no strategy can weight it.

Examples
--------
>>> import numpy as np
>>> y = np.array([1.0, 2.0, 3.0, 6.0])
>>> intercept_only_predictions("gaussian", y, np.array([0, 0, 1, 1]))
array([4.5, 4.5, 1.5, 1.5])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit

if TYPE_CHECKING:
    from ..families import EncodedResponse

__all__ = ["intercept_fit", "intercept_from_mean", "intercept_predict",
           "intercept_only_predictions"]


def _binomial_intercept(y: np.ndarray, w: np.ndarray, offset: np.ndarray) -> float:
    """The ``a`` with ``sum w (y - expit(a + o)) = 0`` (monotone in ``a``, bracketed exactly).

    At ``a = logit(p) - max(o)`` every mean is at most ``p`` (the score is >= 0); at
    ``a = logit(p) - min(o)`` every mean is at least ``p`` (the score is <= 0).
    """
    p = float(w @ y / w.sum())
    if p in (0.0, 1.0):  # one class only: the estimate is on the boundary
        return -np.inf if p == 0.0 else np.inf
    centre = float(logit(p))
    lower, upper = centre - offset.max(), centre - offset.min()
    if lower == upper:
        return lower

    def score(a):
        return float(w @ (y - expit(a + offset)))

    return brentq(score, lower, upper, xtol=1e-14, rtol=4 * np.finfo(float).eps)


def intercept_fit(family: str, y: np.ndarray, row_weights: np.ndarray | None = None,
                  offset: np.ndarray | None = None, n_classes: int | None = None
                  ) -> float | np.ndarray:
    """The intercept-only model fitted to rows: its mean (or class frequencies) parameter.

    Parameters
    ----------
    family : {"gaussian", "binomial", "poisson", "multinomial"}
    y : ndarray (n,)
        The encoded response (0/1 for binomial, class codes for multinomial).
    row_weights : ndarray (n,), optional
    offset : ndarray (n,), optional
        Added to the linear predictor (not multinomial).
    n_classes : int, optional
        Multinomial only: the number of classes.

    Returns
    -------
    float or ndarray (n_classes,)
        The intercept on the link scale (gaussian: identity, binomial: logit,
        Poisson: log), or the class frequencies (multinomial).
    """
    w = np.ones(len(y)) if row_weights is None else np.asarray(row_weights, dtype=float)
    if family == "multinomial":
        counts = np.bincount(np.asarray(y, dtype=np.intp), weights=w, minlength=n_classes)
        return counts / counts.sum()
    o = np.zeros(len(y)) if offset is None else np.asarray(offset, dtype=float)
    if family == "gaussian":
        return float(w @ (y - o) / w.sum())
    if family == "poisson":
        with np.errstate(divide="ignore"):
            return float(np.log(w @ y) - np.log(w @ np.exp(o)))
    if family == "binomial":
        return _binomial_intercept(np.asarray(y, dtype=float), w, o)
    raise ValueError(f"no intercept-only model for family {family!r}")


def intercept_from_mean(family: str, mean: float | np.ndarray) -> float | np.ndarray:
    """:func:`intercept_fit`'s parameter from the mean response of unweighted rows without an
    offset (there the maximum-likelihood intercept is the link of the mean; multinomial: the
    class frequencies themselves).

    >>> float(intercept_from_mean("binomial", 0.5))
    0.0
    """
    if family == "multinomial":
        return np.asarray(mean, dtype=float)
    with np.errstate(divide="ignore"):  # a mean of 0 (or 1) is the boundary, as intercept_fit
        if family == "poisson":
            return float(np.log(mean))
        return float(logit(mean)) if family == "binomial" else float(mean)


def intercept_predict(family: str, parameter: float | np.ndarray, n: int,
                      offset: np.ndarray | None = None) -> np.ndarray:
    """Means (n,) or class probabilities (n, C) of the intercept-only model for *n* rows."""
    if family == "multinomial":
        return np.tile(parameter, (n, 1))
    eta = np.full(n, parameter) + (0.0 if offset is None else offset)
    if family == "gaussian":
        return eta
    if family == "poisson":
        return np.exp(eta)
    return expit(eta)


def intercept_only_predictions(family: str, y: np.ndarray, folds: np.ndarray,
                               row_weights: np.ndarray | None = None,
                               offset: np.ndarray | None = None,
                               n_classes: int | None = None,
                               trains: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """Out-of-fold predictions of the intercept-only model: each fold from the others' rows.

    Parameters
    ----------
    family, y, row_weights, offset, n_classes
        As for :func:`intercept_fit`.
    folds : ndarray of int (n,)
        Fold labels (the fit's folds, or the outer folds of the honest risk); -1 for rows
        no fold tests (NaN predictions).
    trains : sequence of ndarray, optional
        Training rows of each fold, where they are not all the other folds' rows
        (splits that are not a partition, :class:`~pearlstats.design.splitters.Splits`).

    Returns
    -------
    ndarray (n,) or (n, n_classes)
    """
    folds = np.asarray(folds)
    out = None
    for k in np.unique(folds[folds >= 0]):
        test, train = folds == k, folds != k if trains is None else trains[k]

        def pick(values, rows):
            return None if values is None else np.asarray(values)[rows]

        parameter = intercept_fit(family, y[train], pick(row_weights, train),
                                  pick(offset, train), n_classes)
        prediction = intercept_predict(family, parameter, int(test.sum()), pick(offset, test))
        if out is None:
            out = np.full((len(y),) + prediction.shape[1:], np.nan)
        out[test] = prediction
    return out


def response_intercept_predictions(response: EncodedResponse, family: str,
                                   folds: np.ndarray,
                                   trains: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """:func:`intercept_only_predictions` of an encoded response (its weights and offset)."""
    return intercept_only_predictions(family, response.y, folds, response.row_weights,
                                      response.offset, response.n_classes or None, trains)
