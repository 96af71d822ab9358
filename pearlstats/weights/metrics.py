"""The held-out metrics every score table reports, in memory and on dask rows.

==============  ==================================================================
regression      ``MSE`` (mean squared error), ``MAE`` (mean absolute error); Poisson
                fits also ``poisson_deviance`` (mean ``2 (y log(y / mu) - (y - mu))``,
                the family's loss, by which the oracle row's block is chosen)
classification  ``accuracy`` (argmax class), ``cross_entropy`` (mean ``-log p_y``,
                probabilities floored at 1e-15), ``MSE`` between the one-hot
                labels and the class probabilities (mean over rows and classes)
==============  ==================================================================

``ORACLE`` names the extra row of those tables: the single-block candidate best
on the test rows themselves, a weight vector chosen in hindsight. The score
tables are built by :func:`pearlstats.results.evaluation.evaluate` (rows in
memory) and :mod:`pearlstats.distributed.predict` (dask rows); both read the
metric names from here, so that their tables have the same rows and columns.
"""

from __future__ import annotations

import numpy as np

from .losses import mean_squared_error, poisson_deviance_rows

__all__ = [
    "ORACLE",
    "REGRESSION_METRICS",
    "CLASSIFICATION_METRICS",
    "metric_names",
    "primary_metric",
    "regression_metrics",
    "classification_metrics",
    "metric_sums",
]

ORACLE = "Oracle block"
REGRESSION_METRICS = ("MSE", "MAE")
CLASSIFICATION_METRICS = ("accuracy", "cross_entropy", "MSE")
_PROBABILITY_FLOOR = 1e-15


def metric_names(family: str) -> tuple:
    """The columns of a score table of a fit of *family*.

    Examples
    --------
    >>> metric_names("poisson"), metric_names("binomial")
    (('MSE', 'MAE', 'poisson_deviance'), ('accuracy', 'cross_entropy', 'MSE'))
    """
    if family in ("binomial", "multinomial"):
        return CLASSIFICATION_METRICS
    return REGRESSION_METRICS + (("poisson_deviance",) if family == "poisson" else ())


def primary_metric(family: str) -> str:
    """The metric of the family's default loss: the oracle row's block is the best by it."""
    return {"binomial": "cross_entropy", "multinomial": "cross_entropy",
            "poisson": "poisson_deviance"}.get(family, "MSE")


def regression_metrics(y: np.ndarray, mean: np.ndarray, weights: np.ndarray | None = None,
                       family: str = "gaussian") -> dict:
    """``MSE`` and ``MAE`` of predicted means, and for ``family="poisson"`` the mean Poisson
    deviance (weighted means with row *weights*)."""
    if weights is not None:
        scores = {"MSE": float(np.average((y - mean) ** 2, weights=weights)),
                  "MAE": float(np.average(np.abs(y - mean), weights=weights))}
    else:
        scores = {"MSE": mean_squared_error(y, mean, "gaussian"),
                  "MAE": float(np.mean(np.abs(y - mean)))}
    if family == "poisson":
        scores["poisson_deviance"] = float(np.average(poisson_deviance_rows(y, mean),
                                                      weights=weights))
    return scores


def classification_metrics(codes: np.ndarray, probabilities: np.ndarray,
                           weights: np.ndarray | None = None) -> dict:
    """``accuracy``, ``cross_entropy`` and one-hot ``MSE`` of class probabilities (n, C).

    With row *weights*, each is the weighted mean over the rows.

    Examples
    --------
    >>> import numpy as np
    >>> m = classification_metrics(np.array([0, 1]), np.array([[0.8, 0.2], [0.4, 0.6]]))
    >>> m["accuracy"], round(m["MSE"], 2)
    (1.0, 0.1)
    """
    codes = np.asarray(codes, dtype=np.intp)
    observed = probabilities[np.arange(len(codes)), codes]
    if weights is not None:
        squared = ((np.eye(probabilities.shape[1])[codes] - probabilities) ** 2).mean(axis=1)
        return {
            "accuracy": float(np.average(np.argmax(probabilities, axis=1) == codes,
                                         weights=weights)),
            "cross_entropy": float(np.average(-np.log(np.maximum(observed, _PROBABILITY_FLOOR)),
                                              weights=weights)),
            "MSE": float(np.average(squared, weights=weights)),
        }
    return {
        "accuracy": float(np.mean(np.argmax(probabilities, axis=1) == codes)),
        "cross_entropy": float(np.mean(-np.log(np.maximum(observed, _PROBABILITY_FLOOR)))),
        "MSE": mean_squared_error(codes, probabilities, "multinomial"),
    }


def metric_sums(family: str, y: np.ndarray, predictions: np.ndarray) -> dict:
    """The metrics' sums over rows for M predictions at once (divide by the rows for the metrics).

    What a pass over row chunks or dask partitions adds up: the dask score tables are
    these sums over the partitions (:mod:`pearlstats.distributed.predict`), and for one
    prediction they are :func:`regression_metrics` and :func:`classification_metrics`
    times the row count.

    Parameters
    ----------
    family : str
        ``"gaussian"`` or ``"poisson"`` (regression metrics), ``"binomial"`` or
        ``"multinomial"`` (classification metrics).
    y : ndarray (n,)
        The response in the family's coding (0/1 for binomial, class codes 0..C-1).
    predictions : ndarray (n, M), or (n, M, C) for multinomial
        Means or P(y = 1); class probabilities.

    Returns
    -------
    dict of str -> ndarray (M,)

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[[0.8, 0.2]], [[0.4, 0.6]]])  # two rows, one prediction, two classes
    >>> sums = metric_sums("multinomial", np.array([0, 1]), P)
    >>> float(sums["accuracy"][0]), round(float(sums["MSE"][0]) / 2, 2)
    (2.0, 0.1)
    """
    if family not in ("binomial", "multinomial"):
        error = y[:, None] - predictions
        sums = {"MSE": np.sum(error**2, axis=0), "MAE": np.sum(np.abs(error), axis=0)}
        if family == "poisson":
            sums["poisson_deviance"] = poisson_deviance_rows(y, predictions).sum(axis=0)
        return sums
    if family == "binomial":
        ones = (y == 1)[:, None]
        observed = np.where(ones, predictions, 1.0 - predictions)
        hits, squared = (predictions > 0.5) == ones, (y[:, None] - predictions) ** 2
    else:
        codes = np.asarray(y, dtype=np.intp)
        observed = np.take_along_axis(predictions, codes[:, None, None], axis=2)[:, :, 0]
        hits = np.argmax(predictions, axis=2) == codes[:, None]
        onehot = np.arange(predictions.shape[2]) == codes[:, None, None]
        squared = ((onehot - predictions) ** 2).mean(axis=2)
    return {"accuracy": np.sum(hits, axis=0).astype(float),
            "cross_entropy": np.sum(-np.log(np.maximum(observed, _PROBABILITY_FLOOR)), axis=0),
            "MSE": np.sum(squared, axis=0)}
