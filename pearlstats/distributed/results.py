"""``DaskPearlResults``: what a distributed PEARL fit found, and prediction of dask rows.

A distributed fit keeps only small things on the client: the fold and
all-rows coefficients of every candidate, the J x J statistics the weights
came from, the weights and the CV risks. It offers the cross-validation
description of :class:`~pearlstats.results.PearlResults` (``weights``,
``cv_risk``, ``cv_risk_se``, ``null_risk``, ``strategy_weights``, ``params``,
``weight_objective``, ``kkt_gap``, ``failures``), lazy ``folds`` and
``predict`` of dask rows, and ``evaluate`` of dask test rows. What needs the
rows in memory (statsmodels refits, ``cv_predictions``, the honest nested
risk, the summary's diagnostics) is not available: fit in memory for those.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import OptionError, UnknownCandidateError
from ..ledger import FailureLedger
from ..weights.baselines import NULL, STRATEGIES, strategy_weights
from .data import hash_folds

__all__ = ["DaskPearlResults", "InMemoryOnlyError"]


class InMemoryOnlyError(OptionError, AttributeError):
    """A :class:`~pearlstats.results.PearlResults` attribute that needs the rows in memory.

    Also an ``AttributeError``, so ``hasattr`` and ``getattr(res, name, default)`` keep
    answering that a dask result does not have it.
    """


class DaskPearlResults:
    """Results of :func:`pearlstats.fit` on dask data (the module notes say what is available).

    *in_memory_only* names the attributes of the in-memory results this class
    lacks (given by :func:`pearlstats.fit`, which knows both classes); reading
    one raises :class:`InMemoryOnlyError` saying why.
    """

    def __init__(
        self,
        *,
        spec: Any,
        family: Any,
        loss: Any,
        candidates: Any,
        n_pool: int,
        coefs: np.ndarray,
        failed: np.ndarray,
        ledger: Any,
        solution: Any,
        risks: np.ndarray,
        risks_se: np.ndarray,
        null_risk: tuple,
        n: int,
        labels: list,
        fold_spec: Any,
        seed: int,
        ridge: float,
        rows: Any,
        representations: Any,
        passes: int,
        in_memory_only: frozenset = frozenset(),
    ):
        self.design_spec = spec
        self._family = family
        self._loss = loss
        self._all_candidates = list(candidates)
        self._pool = self._all_candidates[:n_pool]
        self._coefs = coefs
        self._failed = failed
        self._ledger = FailureLedger(list(ledger))
        self._solution = solution
        self._risks = risks
        self._risks_se = risks_se
        self._null_risk = null_risk
        self.nobs = int(n)
        self._labels = labels
        self._fold_spec = fold_spec
        self.seed = seed
        self.ridge = ridge
        self._rows = rows
        self._representations = representations
        self.passes = passes
        self._in_memory_only = in_memory_only

    formula = property(lambda self: self.design_spec.formula.formula)
    family = property(lambda self: self._family.name)
    loss = property(lambda self: self._loss.name)
    n_folds = property(lambda self: len(self._labels))
    weight_objective = property(lambda self: self._solution.objective)
    kkt_gap = property(lambda self: self._solution.kkt_gap)
    weight_solver = property(lambda self: self._solution.solver)
    classes = property(lambda self: [0.0, 1.0] if self.family == "binomial" else None)

    @property
    def candidate_labels(self) -> list:
        return [c.label for c in self._pool]

    @property
    def weights(self) -> pd.Series:
        return pd.Series(self._solution.weights, index=self.candidate_labels, name="weight")

    @property
    def cv_risk(self) -> pd.Series:
        return pd.Series(
            self._risks[: len(self._pool)], index=self.candidate_labels, name="cv_risk"
        )

    @property
    def cv_risk_se(self) -> pd.Series:
        return pd.Series(
            self._risks_se[: len(self._pool)], index=self.candidate_labels, name="cv_risk_se"
        )

    @property
    def null_risk(self) -> pd.Series:
        """CV risk and SE of the intercept-only model on the fit's folds (the Null row).

        The mean response (gaussian), frequency of 1 (binomial) or mean rate
        (Poisson) of the other folds' rows predicts each fold: the risk of
        ignoring every input, the row ``Null`` of an in-memory fit's
        ``baselines`` at the same fold labels. A reference, not a candidate.
        """
        risk, se = self._null_risk
        return pd.Series({"cv_risk": float(risk), "se": float(se)}, name=NULL)

    @property
    def failures(self) -> pd.DataFrame:
        return self._ledger.to_frame()

    @property
    def folds(self) -> Any:
        """Fold label of each row, as a lazy dask array (hashed positions) or the fold column."""
        import dask.array as da

        kind, value, seed = self._fold_spec
        if kind != "hash":
            return value
        chunks = (tuple(self._rows.lengths),)
        return da.arange(self._rows.n, chunks=chunks).map_blocks(
            hash_folds, value, seed, dtype=np.intp
        )

    @cached_property
    def strategy_weights(self) -> pd.DataFrame:
        labels = [c.label for c in self._all_candidates]
        table = strategy_weights(
            self._solution.weights, self._all_candidates, len(self._pool), self._risks, self._failed
        )
        return pd.DataFrame(table, index=labels).T.loc[list(STRATEGIES)]

    def _find(self, label: str):
        for position, candidate in enumerate(self._all_candidates):
            if candidate.label == label:
                return position, candidate
        raise UnknownCandidateError(
            f"no candidate {label!r}; candidates are {self.candidate_labels[:20]}"
        )

    def refit_coefficients(self, labels: list[str]) -> np.ndarray:
        """(p, len(labels)) coefficients of the all-rows refits (0 outside their columns)."""
        return np.column_stack([self._coefs[-1][:, self._find(label)[0]] for label in labels])

    @property
    def all_candidates(self) -> list:
        """The pool's candidates, then the baseline-only ones."""
        return list(self._all_candidates)

    @property
    def all_failed(self) -> np.ndarray:
        """Whether each of :attr:`all_candidates` failed in cross-validation."""
        return np.asarray(self._failed)

    @property
    def representations(self) -> Any:
        """The fit's private copy of its Representations (None without one)."""
        return self._representations

    def candidate_params(self, label: str) -> pd.Series:
        """Coefficients of one candidate refitted on all rows, labelled by design column."""
        position, candidate = self._find(label)
        names = [self.design_spec.column_names[i] for i in candidate.columns]
        return pd.Series(self._coefs[-1][candidate.columns, position], index=names, name=label)

    def predict(self, newdata: Any, blocks: Any=None) -> Any:
        """PEARL predictions of dask rows: a lazy dask Series (DataFrame input) or dask array."""
        from .predict import predict_dask

        return predict_dask(self, newdata, blocks)

    def evaluate(self, test_data: Any, blocks: Any=None) -> pd.DataFrame:
        """Scores of PEARL and the baselines on dask test rows (one pass; a small pandas table)."""
        from .predict import evaluate_dask

        return evaluate_dask(self, test_data, blocks)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the class lacks: say so for those of the in-memory results
        # (summary(), honest_risk, cv_predictions, ...) instead of a bare AttributeError.
        if not name.startswith("_") and name in self._in_memory_only:
            raise InMemoryOnlyError(
                f"{name!r} needs the rows in memory and is not available for a fit on dask data; "
                "fit an in-memory sample for it, e.g. pearl.fit(formula, ddf.sample(frac=0.1)"
                ".compute(), ...)"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        top = ", ".join(f"{label}: {w:.3f}" for label, w in self.weights.nlargest(3).items())
        return (
            f"<DaskPearlResults {self.family}, n={self.nobs}, K={self.n_folds}, "
            f"J={len(self._pool)} candidates, {self.passes} passes over the data; "
            f"top weights {top}>"
        )
