"""PEARL and the paper's baseline strategies as weight vectors over candidates.

Every strategy the paper compares is a convex combination of candidates, so
each is a weight vector over the pool (plus the single-block and fusion
candidates fitted only for baselines):

=========  ================================================================
PEARL      the cross-validated simplex weights
MS         weight 1 on the pool candidate with the lowest CV risk
SA-FRL     equal weights on the single-block candidates
SA-cand    equal weights on all pool candidates
Fusion     weight 1 on the candidate with every block
Best       weight 1 on the single-block candidate with the lowest CV risk
AICc       Akaike weights exp(-Delta AICc / 2) over the candidates (MuMIn)
BIC        the same with BIC (Schwarz weights)
Covariates weight 1 on the formula's intercept and covariates without any block
=========  ================================================================

AICc and BIC weigh each candidate by its fit on the rows the strategy is chosen on
(:mod:`pearlstats.weights.information`), the classical model averaging readers of
Burnham & Anderson know; they are NaN where no likelihood is defined (a ``downstream``
network).

Failed candidates never get weight; a strategy whose candidates all failed
has NaN weights (and so NaN risk), which the summary shows.

The tables of risks (``res.baselines``, ``res.honest``) end with one more
row, :data:`NULL`: the family's intercept-only model, a reference for the
risk of ignoring every input. It is not a candidate, so no strategy weights
it (:mod:`pearlstats.engines.intercept` fits it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .information import CRITERIA, akaike_weights
from .losses import weighted_columns

if TYPE_CHECKING:
    from ..design.candidates import Candidate
    from ..weights.losses import Loss

__all__ = ["STRATEGIES", "DEFINITIONS", "NULL", "NULL_DEFINITION", "TABLE_ROWS",
           "COVARIATES_ONLY", "strategy_weights", "combine"]

DEFINITIONS = {
    "PEARL": "the cross-validated simplex weights",
    "MS": "the candidate of lowest CV risk",
    "SA-FRL": "equal weights on single-block candidates",
    "SA-cand": "equal weights on all candidates",
    "Fusion": "the candidate with every block",
    "Best": "the single-block candidate of lowest CV risk",
    "AICc": "MuMIn's exp(-dAICc/2) weights",
    "BIC": "the same with BIC",
    "Covariates": "the formula's covariates alone",
}
STRATEGIES = tuple(DEFINITIONS)  # the one order of the strategies in every table
COVARIATES_ONLY = "covariates only"  # the label of the candidate with no block
NULL = "Null"  # the reference row below the strategies: not a weight vector over candidates
NULL_DEFINITION = "intercept-only model: the risk of ignoring every input"
TABLE_ROWS = (*STRATEGIES, NULL)  # the rows of every table of strategy risks


def _one_hot(size: int, index) -> np.ndarray:
    w = np.zeros(size)
    if index is None:
        return np.full(size, np.nan)
    w[index] = 1.0
    return w


def _equal(size: int, members: np.ndarray) -> np.ndarray:
    if not members.any():
        return np.full(size, np.nan)
    return members / members.sum()


def strategy_weights(
    pearl_weights: np.ndarray,
    candidates: Sequence[Candidate],
    n_pool: int,
    risks: np.ndarray,
    failed: np.ndarray,
    criteria: Mapping[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Weight vectors of every strategy over ``candidates`` (pool first).

    Parameters
    ----------
    pearl_weights : ndarray (n_pool,)
    candidates : sequence of Candidate
        Pool candidates, then baseline-only candidates.
    n_pool : int
    risks : ndarray
        CV risk of every candidate (NaN where failed).
    failed : ndarray of bool
    criteria : mapping of str -> ndarray, optional
        ``"AICc"`` and ``"BIC"`` of every candidate
        (:func:`pearlstats.weights.information.criteria`; NaN where not computed); their
        strategies are NaN without it.

    Returns
    -------
    dict of str -> ndarray
    """
    size = len(candidates)
    ok = ~np.asarray(failed, dtype=bool)
    in_pool = np.arange(size) < n_pool
    single = np.array([len(c.blocks) == 1 and c.label == c.blocks[0] for c in candidates])
    n_blocks = max(len(c.blocks) for c in candidates)
    fusion = np.array(
        [len(c.blocks) == n_blocks and c.label == "+".join(c.blocks) for c in candidates]
    )

    def best_of(mask):
        mask = mask & ok
        return None if not mask.any() else int(np.flatnonzero(mask)[np.argmin(risks[mask])])

    fusion_index = np.flatnonzero(fusion & ok)
    covariates_only = np.flatnonzero([not c.blocks for c in candidates] & ok)
    return {
        "PEARL": np.concatenate([pearl_weights, np.zeros(size - n_pool)]),
        "MS": _one_hot(size, best_of(in_pool)),
        "SA-FRL": _equal(size, (single & ok).astype(float)),
        "SA-cand": _equal(size, (in_pool & ok).astype(float)),
        "Fusion": _one_hot(size, int(fusion_index[0]) if fusion_index.size else None),
        "Best": _one_hot(size, best_of(single)),
        **{name: _information_weights(criteria, name, in_pool & ok) for name in CRITERIA},
        "Covariates": _one_hot(size, int(covariates_only[0]) if covariates_only.size else None),
    }


def _information_weights(criteria: Mapping[str, np.ndarray] | None, name: str,
                         members: np.ndarray) -> np.ndarray:
    """Akaike weights of criterion *name* over the *members* (NaN without the criteria)."""
    if criteria is None:
        return np.full(members.shape, np.nan)
    return akaike_weights(np.where(members, criteria[name], np.nan))


def combine(predictions: np.ndarray, weights: np.ndarray, loss: Loss | None = None) -> np.ndarray:
    """Weighted average of candidate predictions, skipping zero-weight (possibly NaN) columns.

    Parameters
    ----------
    predictions : ndarray (n, J) or (n, J, C)
    weights : ndarray (J,)
    loss : Loss, optional
        Its ``combine`` rule (the margin hinge averages decision functions);
        by default the predictions themselves are averaged.

    Returns
    -------
    ndarray (n,) or (n, C); all NaN when the weights are NaN.
    """
    if np.isnan(weights).any():
        return np.full(predictions.shape[:1] + predictions.shape[2:], np.nan)
    if loss is not None:
        return loss.combine(predictions, weights)
    return weighted_columns(predictions, weights)
