"""Surrogate losses V(y, prediction) that the PEARL weights minimise.

Layouts: ``y`` is float (gaussian, poisson), 0/1 float (binomial) or int
codes (multinomial); a prediction is a mean / P(class 1) of shape (n,) or
class probabilities of shape (n, C).

==================  ================================  ========  ==========================
name                per-row value                     solver    families
==================  ================================  ========  ==========================
squared             (y - mu)^2; Brier sum_c (e_c-p_c)^2  qp     all
cross_entropy       -log p(observed class)             convex    binomial, multinomial
poisson_deviance    2 (y log(y/mu) - (y - mu))        convex    poisson
hinge               max(0, 1 - s (2p - 1)), s = +-1;  lp        binomial, multinomial
                    multiclass: max(0, 1 + max_{c!=y} p_c - p_y)
absolute            |y - mu|                          lp        gaussian, poisson
==================  ================================  ========  ==========================

For binomial the squared loss is ``(y - p)^2`` with p = P(class 1), half of
the two-class Brier sum (the factor does not change the weights).

Examples
--------
>>> import numpy as np
>>> get_loss(None, "binomial").name
'cross_entropy'
>>> float(get_loss("squared", "gaussian").pointwise(np.array([1.0]), np.array([0.5]))[0])
0.25
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

from .exceptions import OptionError

__all__ = ["Loss", "get_loss", "LOSSES", "observed_probability", "EPS"]

EPS = 1e-15  # probabilities are clipped to [EPS, 1] before taking logs


def observed_probability(y: np.ndarray, prediction: np.ndarray) -> np.ndarray:
    """Probability the prediction gives the observed class, per row."""
    if prediction.ndim == 1:
        return np.where(y == 1, prediction, 1.0 - prediction)
    return np.take_along_axis(prediction, y.astype(np.intp)[:, None], axis=1)[:, 0]


def _squared(y, pred):
    if pred.ndim == 2:
        onehot = np.eye(pred.shape[1])[y.astype(np.intp)]
        return np.sum((onehot - pred) ** 2, axis=1)
    return (y - pred) ** 2


def _cross_entropy(y, pred):
    return -np.log(np.clip(observed_probability(y, pred), EPS, 1.0))


def _poisson_deviance(y, pred):
    mu = np.maximum(pred, EPS)
    return 2.0 * (xlogy(y, y / mu) - (y - mu))


def _hinge(y, pred):
    if pred.ndim == 1:
        sign = 2.0 * y - 1.0
        return np.maximum(0.0, 1.0 - sign * (2.0 * pred - 1.0))
    own = observed_probability(y, pred)
    others = pred.copy()
    np.put_along_axis(others, y.astype(np.intp)[:, None], -np.inf, axis=1)
    return np.maximum(0.0, 1.0 + others.max(axis=1) - own)


def _absolute(y, pred):
    return np.abs(y - pred)


@dataclass(frozen=True)
class Loss:
    """A surrogate loss.

    Attributes
    ----------
    name : str
    original : str
        The loss it stands for, for the summary.
    solver : {"qp", "convex", "lp"}
    families : frozenset of str
    """

    name: str
    original: str
    solver: str
    families: frozenset
    _function: object

    def pointwise(self, y: np.ndarray, prediction: np.ndarray) -> np.ndarray:
        """Per-row loss of a prediction (n,) or (n, C)."""
        return self._function(np.asarray(y), np.asarray(prediction, dtype=float))

    def risk(self, y: np.ndarray, prediction: np.ndarray) -> float:
        """Mean loss over rows."""
        return float(np.mean(self.pointwise(y, prediction)))


_ALL = frozenset({"gaussian", "poisson", "binomial", "multinomial"})
_CLASSES = frozenset({"binomial", "multinomial"})


LOSSES = {
    "squared": Loss("squared", "squared error (Brier score for classes)", "qp", _ALL, _squared),
    "cross_entropy": Loss("cross_entropy", "log-loss (0-1 loss)", "convex", _CLASSES, _cross_entropy),
    "poisson_deviance": Loss("poisson_deviance", "Poisson deviance", "convex", frozenset({"poisson"}), _poisson_deviance),
    "hinge": Loss("hinge", "0-1 loss", "lp", _CLASSES, _hinge),
    "absolute": Loss("absolute", "absolute error", "lp", frozenset({"gaussian", "poisson"}), _absolute),
}
_DEFAULTS = {"gaussian": "squared", "poisson": "poisson_deviance", "binomial": "cross_entropy", "multinomial": "cross_entropy"}


def get_loss(name: str | None, family: str) -> Loss:
    """The surrogate loss *name* for *family*, or the family's default when None.

    Raises
    ------
    OptionError
        Unknown loss, or a loss that does not apply to the family.
    """
    if name is None:
        return LOSSES[_DEFAULTS[family]]
    valid = sorted(key for key, loss in LOSSES.items() if family in loss.families)
    if name not in LOSSES:
        raise OptionError(f"unknown loss={name!r}; for family={family!r} use one of {valid}")
    loss = LOSSES[name]
    if family not in loss.families:
        raise OptionError(f"loss={name!r} does not apply to family={family!r}; use one of {valid}")
    return loss
