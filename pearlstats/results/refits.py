"""Candidates refitted on all labeled rows, each on first use.

:class:`CandidateRefits` is the part of :class:`~pearlstats.PearlResults`
that refits candidates: those with non-zero weight at fit time (prediction
needs them), any other on first access, so a pool of thousands of candidates
does not pay thousands of statsmodels fits. It reads the fit's stage values
that :class:`~pearlstats.PearlResults` stores (``_design``,
``_response``, ``_family``, ``_ridge``, ``_pool``, ``_extras``, ``_ledger``).

The inference (``bse``, ``conf_int``, ``coef_table``, the summary's coefficient
panels) does not use these statsmodels results where it can do without
(:func:`pearlstats.results.averaging.inference_refit`): their copies of the
candidate's columns (exog, wexog, pinv) took several times the data.
``candidates[label]`` still builds them on request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

import numpy as np
import pandas as pd

from .._warnings import warn
from ..engines._common import ridge_penalty_weights
from ..engines.wide import candidate_exog
from ..exceptions import (
    CandidateError,
    CandidateFailureWarning,
    OptionError,
    PearlWarning,
    UnknownCandidateError,
)
from ..inference._checks import _check_alpha
from . import averaging
from .identification import unidentified_terms

__all__ = ["CandidateRefits"]


# Linear predictors of two converged fits of one problem agree far below this (relative to
# their size); statsmodels' pseudo-inverse that drops a column's direction moves them by O(1).
_REFIT_AGREEMENT = 1e-4


def _warn_if_refit_differs(label: str, exog: np.ndarray, theirs: np.ndarray,
                           ours: np.ndarray) -> None:
    """Warn where statsmodels' refit is not the estimate the results report.

    statsmodels solves on the raw columns, and its pseudo-inverse drops a direction whose
    singular value is below 1e-15 of the largest: columns of very different scales (1e12
    beside 1e-6, a timestamp in nanoseconds beside proportions) lose the small one there,
    while the engines solve on standardised columns.
    """
    eta = exog @ ours
    gap = float(np.max(np.abs(exog @ theirs - eta), initial=0.0))
    size = 1.0 + float(np.max(np.abs(eta), initial=0.0))
    if not gap > _REFIT_AGREEMENT * size:
        return
    spread = np.abs(exog).max(axis=0)
    spread = spread[spread > 0]
    warn(f"statsmodels' refit of candidate {label!r} (results.candidates[{label!r}]) is not "
         f"the estimate the results report: its linear predictors differ by up to {gap:.3g}. "
         f"Its columns span magnitudes {spread.min():.3g} to {spread.max():.3g}, and "
         "statsmodels' pseudo-inverse drops the small directions; candidate_params, bse, "
         "predict and the summary use pearlstats' estimate (solved on standardised columns). "
         "Rescale those columns for statsmodels to agree", PearlWarning)


class _LazyCandidates(Mapping):
    """Mapping label -> statsmodels results, each built on first access."""

    def __init__(self, results: CandidateRefits):
        self._results = results
        self._cache: dict = {}

    def __getitem__(self, label):
        if label not in self._cache:
            self._cache[label] = self._results._statsmodels_results(label)
        return self._cache[label]

    def __iter__(self):
        return iter(self._results.candidate_labels)

    def __len__(self):
        return len(self._results.candidate_labels)

    def __repr__(self):
        return (
            f"<{len(self)} candidates, refitted with statsmodels on first access: "
            f"{list(self)[:5]}...>"
        )



class CandidateRefits:
    """All-rows refits of the candidates: coefficients and statsmodels results, on first use."""

    @cached_property
    def _all_candidates(self) -> list:
        return self._pool + self._extras


    def _find(self, label: str):
        for candidate in self._all_candidates:
            if candidate.label == label:
                return candidate
        raise UnknownCandidateError(
            f"no candidate {label!r}; candidates are {self.candidate_labels[:20]}"
        )

    def _candidate_params(self, label: str) -> np.ndarray:
        # Refits happen on first use, possibly from several threads at once.
        with self._params_lock:
            if label not in self._params:
                candidate = self._find(label)
                if self._state.partitions is not None:  # rows on dask workers: from the passes
                    params, notes = self._state.partitions.params(candidate)
                else:
                    params, notes = self._family.fit_params(
                        self._design.X, self._response, candidate.columns, self._ridge, label
                    )
                self._ledger.extend(notes)
                self._params[label] = params
            return self._params[label]

    @property
    def candidates(self) -> Mapping:
        """Mapping label -> statsmodels results of the candidate refitted on all rows.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> refit = res.candidates["a"]  # statsmodels' OLS results
        >>> refit.params.round(3)
        Intercept   -0.004
        x            0.484
        a[0]         0.855
        a[1]        -0.076
        dtype: float64
        """
        return self._candidates

    def candidate_params(self, label: str | Sequence[str] | None = None, *,
                         alpha: float = 0.05) -> pd.Series | pd.DataFrame:
        """Coefficients of candidates refitted on all rows.

        Parameters
        ----------
        label : str, sequence of str, or None
            One label: that candidate's coefficients, a Series labelled by design
            column (a terms x classes DataFrame for multinomial). A sequence, or
            None for the candidates with positive weight: a tidy DataFrame
            indexed by (candidate, term) -- (candidate, class, term) for
            multinomial -- with columns ``weight``, ``coef``, ``std err``,
            ``lower`` and ``upper`` (each candidate's own statsmodels interval).
        alpha : float, default 0.05
            Level of the intervals of the tidy table.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.normal(size=60), "a": rng.normal(size=(60, 1)),
        ...         "b": rng.normal(size=(60, 1))}
        >>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
        >>> table = res.candidate_params()
        >>> list(table.columns), list(table.index.names)
        (['weight', 'coef', 'std err', 'lower', 'upper'], ['candidate', 'term'])
        """
        _check_alpha(alpha)
        if label is None or (not isinstance(label, str) and isinstance(label, Sequence)):
            labels = None if label is None else [self._find(one).label for one in label]
            return averaging.candidate_coefficients(self, labels, alpha)
        candidate = self._find(label)
        names = [self._design.column_names[i] for i in candidate.columns]
        values = self._candidate_params(label)
        if candidate.label in self.failed.index and self.failed[candidate.label]:
            # e.g. dropped for separated classes, where no finite estimate exists: the
            # numbers are a stopped iterate (NaN where the rows are on dask workers)
            warn(f"candidate {label!r} failed in cross-validation and has weight 0 (see "
                 "results.failures for why); its coefficients are not estimates to report",
                 CandidateFailureWarning)
        if not isinstance(values, np.ndarray):
            raise OptionError(
                f"candidate {label!r} is not a linear model ({type(values).__name__}); "
                f"inspect it with results.candidates[{label!r}]"
            )
        if values.ndim == 2:
            return pd.DataFrame(values, index=names, columns=self.classes[1:])
        return pd.Series(values, index=names, name=label)

    def _candidate_ridge(self, label: str) -> float:
        """The fit's ridge, or the larger one a separated candidate was fitted with."""
        return getattr(self._family, "candidate_ridge", lambda _, value: value)(label, self._ridge)

    def _statsmodels_results(self, label: str):
        candidate = self._find(label)
        if self._state.partitions is not None:
            return self._state.partitions.refit(candidate, self._design.column_names)
        names = [self._design.column_names[i] for i in candidate.columns]
        exog = pd.DataFrame(candidate_exog(self._design.X, candidate.columns, label), columns=names)
        # A separated candidate may have been fitted with a larger ridge than the fit's.
        ridge = self._candidate_ridge(label)
        # the penalty of the engines, on statsmodels' unscaled coefficients
        try:
            fitted = self._family.statsmodels_results(
                self._response, exog, self._candidate_params(label), ridge,
                ridge_penalty_weights(exog.to_numpy()),
            )
        except np.linalg.LinAlgError as err:
            # Logit and MNLogit invert their Hessian, singular where columns are dependent
            terms = unidentified_terms(self._state).get(label)
            if not terms:
                raise
            raise CandidateError(
                f"statsmodels cannot refit candidate {label!r}: its columns are linearly "
                f"dependent ({list(terms)} are not identified) and its Hessian is singular "
                f"({err}). candidate_params({label!r}) has its coefficients, and bse and "
                "conf_int() its identified terms' SEs; remove the redundant column or block "
                "for a statsmodels refit"
            ) from None
        ours = self._candidate_params(label)
        theirs = getattr(fitted, "params", None)  # a downstream network's results have none
        # a separated candidate's coefficients are wherever each iteration stopped: no optimum
        separated = any(entry.candidate == label and entry.kind == "separation"
                        for entry in self._ledger.entries)
        if ridge == 0 and not separated and theirs is not None and np.shape(theirs) == np.shape(
                ours):
            _warn_if_refit_differs(label, exog.to_numpy(), np.asarray(theirs), ours)
        return fitted

