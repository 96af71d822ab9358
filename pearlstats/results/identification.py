"""Coefficients a candidate's data cannot identify, named at fit and NaN in the averaged model.

A candidate whose design columns are linearly dependent on all rows (a covariate ``x1`` beside
a block that is a PCA of ``x1`` and ``x2``: ``x1`` is the intercept plus a combination of the
block's columns) is fitted by minimum-norm least squares, as statsmodels' pinv does: its
predictions are well defined, but how the effect is split between the dependent columns is an
artefact of the solver. Coefficient j is identified exactly when no vector of the design's null
space involves column j; the others are reported here, and their averaged coefficients (over the
candidates with positive weight) are NaN rather than a number that looks like an estimate. The
null space is that of the columns centred (with an intercept) at unit scale, below a
singular-value ratio of about 3e-7, as R's ``lm``
(:func:`~pearlstats.inference.sums_refit.dependent_columns`, the covariance's own rule): a
cubic trend in calendar years (condition number 8e5) is identified, with its least-squares SEs.

Only candidates the cross-validation recorded as rank deficient in some fold are checked (a
design rank deficient on all rows is so on every training subset), and only unpenalised ones: a
ridge identifies every coefficient.

Examples
--------
>>> import numpy as np, pearlstats as pearl, warnings
>>> rng = np.random.default_rng(0)
>>> x1, x2 = rng.normal(size=60), rng.normal(size=60)
>>> pcs = np.column_stack([x1 + x2, x1 - x2])  # spans x1
>>> data = {"y": x1 + rng.normal(size=60), "x1": x1, "p": pcs, "b": rng.normal(size=(60, 2))}
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     res = pearl.fit("y ~ x1 + block(p) + block(b)", data, seed=0)
>>> [w.category.__name__ for w in caught]
['UnidentifiedCoefficientWarning']
>>> unidentified_terms(res.stages)["p"]
('x1', 'p[0]', 'p[1]')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._warnings import warn
from ..exceptions import UnidentifiedCoefficientWarning
from ..inference.refit_sums import Spread
from ..inference.sums_refit import constant_columns, dependent_columns

if TYPE_CHECKING:
    from ..stages import FitState

__all__ = ["unidentified_terms", "warn_unidentified", "unidentified_note"]


def _candidate_dependent(state: FitState, columns: np.ndarray) -> np.ndarray:
    """:func:`~pearlstats.inference.sums_refit.dependent_columns` of the design's *columns* on
    all rows: from their centred spread (on dask data, the moment pass's)."""
    if state.partitions is not None:
        spread = state.partitions.design_spread(columns)
    else:
        spread = Spread.of(np.asarray(state.design.X[:, columns], dtype=float))
    constant = np.flatnonzero(constant_columns(spread) & (spread.mean != 0))
    return dependent_columns(spread, int(constant[0]) if constant.size else None)


def unidentified_terms(state: FitState) -> dict[str, tuple[str, ...]]:
    """Candidate label -> terms whose coefficients its design does not identify on all rows.

    Covariate terms come first, then block columns, in design order. Candidates with no such
    term are left out.
    """
    deficient = {entry.candidate for entry in state.ledger if entry.kind == "rank deficient"}
    ridge_of = getattr(state.family, "candidate_ridge", lambda label, ridge: ridge)
    names = state.design.column_names
    found = {}
    for candidate in state.candidates.pool:
        if candidate.label not in deficient or ridge_of(candidate.label, state.ridge) > 0:
            continue
        dependent = _candidate_dependent(state, candidate.columns)
        if dependent.size:
            found[candidate.label] = tuple(names[candidate.columns[j]] for j in dependent)
    return found


def unidentified_note(terms: dict[str, tuple[str, ...]], covariate_names: list) -> str:
    """One clause per candidate: which covariate terms (and block columns) are not identified."""
    parts = []
    for label, columns in terms.items():
        covariates = [term for term in columns if term in covariate_names]
        blocks = [term for term in columns if term not in covariate_names]
        said = f"covariate(s) {covariates}" if covariates else "no covariate"
        parts.append(f"candidate {label!r}: {said}" + (f" with {blocks}" if blocks else ""))
    return "; ".join(parts)


def warn_unidentified(state: FitState) -> None:
    """One :class:`UnidentifiedCoefficientWarning` naming every candidate's unidentified terms."""
    terms = unidentified_terms(state)
    if not terms:
        return
    note = unidentified_note(terms, state.design.column_names[: state.design.n_covariates])
    warn(
        "coefficients not identified (the design's columns are linearly dependent on all rows, "
        f"e.g. a covariate that a block's columns reproduce): {note}"
        ". Predictions are unaffected, but the split between these terms is arbitrary: where "
        "such a candidate has weight, their averaged coefficients, SEs and intervals are NaN in "
        "params, bse and conf_int(); remove the redundant covariate or block from the formula "
        "to estimate the others",
        UnidentifiedCoefficientWarning,
    )
