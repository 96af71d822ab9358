"""The binomial and Poisson likelihoods row by row: means, losses and their derivatives.

One definition for every engine that sums them over rows (the in-memory Newton fits,
the passes over dask partitions, the refits' information matrices), so that a loss
or a mean is computed the same way whatever holds the rows.

``kind`` is ``"binomial"`` (logit link, ``y`` in {0, 1}) or ``"poisson"`` (log link);
:func:`mean_of` also takes ``"gaussian"`` (identity).
Poisson means are capped at ``exp(MAX_ETA)``: ``exp`` overflows past about 709.

Examples
--------
>>> import numpy as np
>>> eta, y = np.array([-800.0, 0.0, 800.0]), np.array([0.0, 1.0, 1.0])
>>> loss, mu = row_terms("binomial", eta.copy(), y)
>>> loss.round(6).tolist(), mu.tolist()
([0.0, 0.693147, 0.0], [0.0, 0.5, 1.0])
>>> bool(np.allclose(mean_of("binomial", eta), mu))
True
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["MAX_ETA", "mean_of", "pearson_residuals", "row_terms", "variance_of"]

MAX_ETA = 700.0  # exp overflows past ~709


def mean_of(kind: str, eta: np.ndarray) -> np.ndarray:
    """The family's mean at linear predictors *eta*: identity (``"gaussian"``), logistic or
    exp (capped before it overflows)."""
    if kind == "gaussian":
        return eta
    return expit(eta) if kind == "binomial" else np.exp(np.minimum(eta, MAX_ETA))


def variance_of(kind: str, mu: np.ndarray) -> np.ndarray:
    """The family's variance function at means *mu* (the Newton weights)."""
    return mu * (1.0 - mu) if kind == "binomial" else mu


def pearson_residuals(kind: str, y: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``(y - mu) / sqrt(V(mu))`` (``y - mu`` for ``"gaussian"``); *y* broadcasts against *mu*.

    A row fitted exactly where V is 0 (a Poisson mean of 0 for a count of 0) gives 0, one
    not fitted there an infinite residual.

    Examples
    --------
    >>> pearson_residuals("poisson", np.array([0.0, 3.0]), np.array([0.0, 4.0])).tolist()
    [0.0, -0.5]
    """
    e = y - mu
    if kind == "gaussian":
        return e
    V = variance_of(kind, mu)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = e / np.sqrt(np.where(V > 0, V, 1.0))
    return np.where(V > 0, r, np.where(e == 0, 0.0, np.inf))


def row_terms(kind: str, eta: np.ndarray, y: np.ndarray,
              log_y: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row negative log-likelihood and mean at linear predictors *eta*, in place of eta.

    Returns ``(loss, mu)``; *eta* (any shape broadcasting with *y*) is overwritten by
    ``|eta|``, which the separation check reads.

    With *log_y* (``log y``, any value where y = 0), the Poisson loss is measured from the
    saturated model, ``mu - y - y (eta - log y)`` (half the unit deviance): the same
    gradient and Hessian, but a value that keeps its digits where counts are large
    (``mu - y eta`` is -1.7e12 for a count of 7e10 fitted exactly, so a fit's tolerance
    relative to it, and its line searches' comparisons, lost 12 digits).
    """
    if kind == "binomial":
        # One exp serves the loss and the mean (logaddexp and expit would cost four times more).
        positive = eta >= 0.0
        loss = np.maximum(eta, 0.0)
        loss -= y * eta
        np.abs(eta, out=eta)
        e = np.exp(-eta)
        loss += np.log1p(e)
        mu = np.where(positive, 1.0, e)
        mu /= 1.0 + e
    else:
        mu = np.exp(np.minimum(eta, MAX_ETA))
        loss = mu - y * eta if log_y is None else (mu - y) - y * (eta - log_y)
        np.abs(eta, out=eta)
    return loss, mu
