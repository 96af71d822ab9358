"""Any estimator with ``fit``/``predict`` as the downstream model of every candidate.

``pearl.fit(..., downstream=RandomForestRegressor())`` fits a fresh copy of the estimator
(``sklearn.base.clone`` for objects with ``get_params``, else a deep copy) on each candidate's
design columns (its blocks plus the formula's covariates and intercept) in each fold, on the
same folds as the built-in families, and once more on all rows. Its held-out predictions feed
the same weight stage, baselines, honest risks and CV+ intervals. The response is the family's
coding: gaussian and poisson estimators get ``y`` and give the mean with ``predict``; binomial
ones get 0/1 and multinomial ones the class codes ``0..C-1``, and give probabilities with
``predict_proba`` (columns matched by the estimator's ``classes_``; a class a training fold
lacks gets probability 0 there). Probabilities are kept inside ``[1e-12, 1 - 1e-12]`` so that
a tree's 0 or 1 does not make the cross-entropy infinite.

An estimator that raises in a fold is recorded in the ledger (``res.failures``) and its
candidate gets weight 0, as a statsmodels candidate that fails does. There are no
coefficients: ``res.params`` and ``candidate_params`` say so; ``res.candidates[label]`` is
an :class:`EstimatorResults` holding the estimator fitted on all rows.

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> from sklearn.tree import DecisionTreeRegressor
>>> rng = np.random.default_rng(0)
>>> a, b = rng.normal(size=(120, 2)), rng.normal(size=(120, 2))
>>> y = np.abs(a[:, 0]) + rng.normal(scale=0.1, size=120)
>>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, seed=0,
...                 downstream=DecisionTreeRegressor(max_depth=3, random_state=0))
>>> bool(res.weights["a"] + res.weights["a+b"] > 0.9)
True
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engines._common import EngineOutput, fold_rows
from ..exceptions import CandidateError, OptionError
from ..families import Family
from ..ledger import LedgerEntry
from .base import WrappedFamily

if TYPE_CHECKING:
    from ..families import EncodedResponse

__all__ = ["EstimatorFamily", "EstimatorResults", "FittedEstimator", "bind_estimator",
           "is_estimator"]

# Probabilities are kept this far from 0 and 1 (the cross-entropy of a 0 is infinite).
PROBABILITY_FLOOR = 1e-12


def is_estimator(value: Any) -> bool:
    """An object (not a class) with ``fit`` and ``predict``."""
    return (not isinstance(value, type) and callable(getattr(value, "fit", None))
            and callable(getattr(value, "predict", None)))


def bind_estimator(estimator: Any, family: Family) -> EstimatorFamily:
    """The family interface of *estimator* for *family* (checked for ``predict_proba``)."""
    if family.name in ("binomial", "multinomial") and not callable(
        getattr(estimator, "predict_proba", None)
    ):
        raise OptionError(
            f"downstream={estimator!r:.80} has no predict_proba, which family="
            f"{family.name!r} needs (class probabilities); use a classifier, e.g. "
            "RandomForestClassifier()"
        )
    return EstimatorFamily(estimator, family)


def _fresh(estimator: Any) -> Any:
    """An unfitted copy: scikit-learn's clone where the object supports it."""
    if hasattr(estimator, "get_params"):
        try:
            from sklearn.base import clone
        except ImportError:
            return copy.deepcopy(estimator)
        return clone(estimator)
    return copy.deepcopy(estimator)


@dataclass(frozen=True)
class FittedEstimator:
    """A fitted copy of the estimator and the number of classes of the rows it was fitted for."""

    estimator: Any
    n_classes: int


class EstimatorResults:
    """One candidate's estimator fitted on all rows; stands in for its statsmodels results.

    Attributes
    ----------
    estimator : object
        The fitted copy.
    exog_names : list of str
        The candidate's design columns, in the estimator's input order.
    """

    def __init__(self, estimator: Any, exog_names: list[str]):
        self.estimator = estimator
        self.exog_names = list(exog_names)

    def __repr__(self) -> str:
        return f"<EstimatorResults: {self.estimator!r} on {len(self.exog_names)} columns>"


class EstimatorFamily(WrappedFamily):
    """A family whose candidate model is any estimator (made by :func:`bind_estimator`)."""

    def __init__(self, estimator: Any, base: Family):
        super().__init__(base)
        self.estimator = estimator

    def __repr__(self) -> str:
        return f"<{type(self.estimator).__name__} downstream, {self.name} family>"

    def _fitted(self, X: np.ndarray, response: EncodedResponse, rows: Any) -> FittedEstimator:
        y = response.y[rows]
        target = y.astype(np.intp) if self.name in ("binomial", "multinomial") else y
        return FittedEstimator(_fresh(self.estimator).fit(X, target), response.n_classes)

    def _cv_predict(self, X, response, candidates, folds, ridge):
        # each fold's rows are predicted by a copy fitted without them; a failure is recorded
        y, n_classes = response.y, response.n_classes
        n = len(y)
        shape = (n, len(candidates), n_classes) if self.name == "multinomial" else (
            n, len(candidates))
        predictions = np.full(shape, np.nan)
        failed = np.zeros(len(candidates), dtype=bool)
        entries = []
        for j, candidate in enumerate(candidates):
            X_candidate = X[:, candidate.columns]
            for k, test in enumerate(fold_rows(folds)):
                if test.size == 0:
                    continue
                train = np.flatnonzero(folds != k)
                try:
                    fitted = self._fitted(X_candidate[train], response, train)
                    predictions[test, j] = self.predict(fitted, X_candidate[test])
                except Exception as err:  # any estimator's error: recorded, weight 0
                    failed[j] = True
                    predictions[:, j] = np.nan
                    entries.append(LedgerEntry(
                        candidate.label, k, "cv", "failed",
                        f"{type(self.estimator).__name__} raised {type(err).__name__}: {err}",
                        "given weight 0", True,
                    ))
                    break
        return EngineOutput(predictions, failed, entries)

    def _loo_predict(self, X, response, candidates, ridge):
        return self._cv_predict(X, response, candidates, np.arange(len(response.y)), ridge)

    def _fit_params(self, X, response, columns, ridge, label):
        try:
            return self._fitted(X[:, columns], response, slice(None)), []
        except Exception as err:
            raise CandidateError(
                f"candidate {label!r}: {type(self.estimator).__name__} raised "
                f"{type(err).__name__} when refitted on all rows: {err}"
            ) from err

    def predict(self, params: FittedEstimator, X_candidate: np.ndarray) -> np.ndarray:
        """The fitted estimator's mean (gaussian, poisson) or class probabilities."""
        estimator = params.estimator
        if self.name not in ("binomial", "multinomial"):
            return np.asarray(estimator.predict(X_candidate), dtype=np.float64)
        proba = np.asarray(estimator.predict_proba(X_candidate), dtype=np.float64)
        classes = [int(c) for c in getattr(estimator, "classes_", range(proba.shape[1]))]
        full = np.zeros((len(proba), max(params.n_classes, 2)))
        full[:, classes] = proba
        full = np.clip(full, PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)
        if self.name == "binomial":
            return full[:, 1]
        return full / full.sum(axis=1, keepdims=True)

    def statsmodels_model(self, response: EncodedResponse, exog: Any) -> Any:
        raise OptionError(
            f"downstream={type(self.estimator).__name__} candidates are not statsmodels "
            "models; coefficient inference does not apply"
        )

    def _statsmodels_results(self, response, exog, params, ridge, scale_penalty):
        return EstimatorResults(params.estimator, list(exog.columns))
