"""Nested cross-validation of the whole PEARL procedure, built from the fit's stages.

Each outer fold is held out while the procedure is re-run on the remaining
rows: inner folds, every candidate's inner out-of-fold predictions, the PEARL
weights, and each baseline's choice (MS re-selects, Best re-chooses, SA-cand,
SA-FRL and Fusion re-check which candidates fitted). Every candidate refitted
on the outer training rows predicts the held-out fold, so no held-out row
informs its own prediction. The same machinery gives

* the honest risk of PEARL and of every baseline (``res.honest``), as R's
  ``CV.SuperLearner`` reports it, and
* CV+ prediction intervals (Barber et al. 2021): the K fold procedures'
  predictions for new rows, with the held-out residuals.

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> rng = np.random.default_rng(0)
>>> a, b = rng.normal(size=(80, 2)), rng.normal(size=(80, 2))
>>> data = {"y": a[:, 0] + rng.normal(size=80), "a": a, "b": b}
>>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
>>> nested = nested_cross_validation(res.stages, outer=4, seed=1)
>>> nested.held_out_predictions("PEARL").shape
(80,)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .design.folds import check_class_coverage, make_folds
from .engines._common import EngineOutput
from .families import EncodedResponse
from .ledger import LEDGER_COLUMNS
from .results.strategies import STRATEGIES, combine, strategy_weights
from .stages import FitState, cross_validate
from .weight_stage import cross_validate_draws, solve_draw_weights

if TYPE_CHECKING:
    from .weights.losses import Loss

__all__ = [
    "NestedCV", "nested_cross_validation", "strategy_row_losses", "paired_ratio_table",
    "fold_procedure_predictions", "conformal_prediction",
]


@dataclass(frozen=True)
class NestedCV:
    """What the outer cross-validation of a fit found.

    Attributes
    ----------
    outer_folds : ndarray of int (n,)
    outside : EngineOutput
        Predictions of every candidate (pool, then baseline extras) for each
        row, from the candidate fitted without that row's outer fold.
    fold_strategy_weights : tuple of dict
        Per outer fold: strategy name -> weights over pool + extras, chosen
        from that fold's training rows only.
    inner_folds : tuple of ndarray
        Inner fold labels of each outer training set's rows.
    failures : DataFrame
        Ledger rows of the outer and inner fits, with ``where`` they happened.
    """

    outer_folds: np.ndarray
    outside: EngineOutput
    fold_strategy_weights: tuple
    inner_folds: tuple
    failures: pd.DataFrame

    @property
    def n_outer(self) -> int:
        return int(self.outer_folds.max()) + 1

    def fold_weights(self, strategy: str = "PEARL") -> np.ndarray:
        """Weights of a strategy in each outer fold, shape (outer folds, pool + extras)."""
        return np.array([weights[strategy] for weights in self.fold_strategy_weights])

    def held_out_predictions(self, strategy: str, loss: Loss | None = None) -> np.ndarray:
        """Each row's prediction by the strategy fitted without that row's outer fold."""
        P = self.outside.predictions
        out = np.full(P.shape[:1] + P.shape[2:], np.nan)
        for k, weights in enumerate(self.fold_strategy_weights):
            test = self.outer_folds == k
            out[test] = combine(P[test], weights[strategy], loss)
        return out


def _ledger_frame(entries, where: str) -> pd.DataFrame:
    frame = pd.DataFrame([entry.__dict__ for entry in entries], columns=LEDGER_COLUMNS)
    return frame.assign(where=where)


def _inner_folds(state: FitState, response: EncodedResponse, seed) -> np.ndarray:
    """Inner folds of an outer training set: the fit's K (or LOO), stratified for classes."""
    n = len(response.y)
    if isinstance(state.cv_spec, str):
        return np.arange(n)
    n_folds = int(state.folds.max()) + 1
    strata = response.y.astype(np.intp) if response.classes is not None else None
    folds = make_folds(min(n_folds, n), n, seed=seed, strata=strata)
    if strata is not None:
        check_class_coverage(strata, folds, response.classes)
    return folds


def _outer_fold(
    state: FitState, outside: EngineOutput, train: np.ndarray, seeds: list
) -> tuple[dict, np.ndarray, list]:
    """Strategy weights chosen on one outer training set, its inner folds and ledger entries.

    The fit's weight stage is repeated as it ran: one inner fold draw per seed in *seeds*
    (``cv_repeats``) and the fit's shrinkage, so the honest risk is that of the procedure used.
    """
    everything = state.candidates.everything
    pool = state.candidates.pool
    sub = EncodedResponse(state.response.y[train], state.response.classes)
    draws = [_inner_folds(state, sub, seed) for seed in seeds]
    outputs, _ = cross_validate_draws(state.family, state.design.X[train], sub, everything, draws,
                                      loo=isinstance(state.cv_spec, str), ridge=state.ridge)
    outputs = [EngineOutput(out.predictions, out.failed | outside.failed, out.entries, out.ridges)
               for out in outputs]
    inner, solution, _ = solve_draw_weights(outputs, sub.y, pool, draws, state.loss,
                                            state.weight_options.shrinkage, warn=False)
    risks = np.array([
        np.nan if inner.failed[j] else state.loss.pointwise(sub.y, inner.predictions[:, j]).mean()
        for j in range(len(everything))
    ])
    weights = strategy_weights(solution.weights, everything, len(pool), risks, inner.failed)
    return weights, draws[0], inner.entries


def nested_cross_validation(
    state: FitState,
    outer: int | str | np.ndarray = 5,
    seed: int | None = None,
    n_jobs: int | None = None,
) -> NestedCV:
    """Re-run the whole PEARL procedure inside each outer fold.

    Parameters
    ----------
    state : FitState
        A fit's stage values (``res.stages``).
    outer : int, "loo" or array-like, default 5
        Outer folds (stratified for classes).
    seed : int, optional
        Outer folds are seeded by ``SeedSequence([seed, 0])``, the inner folds
        of outer fold k by ``SeedSequence([seed, 1, k])`` (draw r > 0 of the fit's
        ``cv_repeats`` by ``SeedSequence([seed, 1, k, r])``); default the fit's seed.
        The inner weight stage repeats the fit's ``cv_repeats`` and shrinkage.
    n_jobs : int, optional
        Workers for the outer cross-validation of the candidates.

    Returns
    -------
    NestedCV
    """
    seed = state.seed if seed is None else seed
    response = state.response
    n = len(response.y)
    strata = response.y.astype(np.intp) if response.classes is not None else None
    outer_folds = make_folds(outer, n, seed=np.random.SeedSequence([seed, 0]), strata=strata)
    if strata is not None:
        check_class_coverage(strata, outer_folds, response.classes)
    outside = cross_validate(state.family, state.design.X, response, state.candidates.everything,
                             outer_folds, ridge=state.ridge, n_jobs=n_jobs)
    chosen, inner_folds = [], []
    ledgers = [_ledger_frame(outside.entries, "outer folds")]
    for k in range(int(outer_folds.max()) + 1):
        train = np.flatnonzero(outer_folds != k)
        # Draw r > 0 of cv_repeats: SeedSequence([seed, 1, k, r]); draw 0 as without repeats.
        seeds = [np.random.SeedSequence([seed, 1, k])] + [
            np.random.SeedSequence([seed, 1, k, r])
            for r in range(1, state.weight_options.cv_repeats)
        ]
        weights, folds, entries = _outer_fold(state, outside, train, seeds)
        chosen.append(weights)
        inner_folds.append(folds)
        ledgers.append(_ledger_frame(entries, f"inside outer fold {k}"))
    return NestedCV(outer_folds, outside, tuple(chosen), tuple(inner_folds),
                    pd.concat(ledgers, ignore_index=True))


def strategy_row_losses(nested: NestedCV, state: FitState) -> pd.DataFrame:
    """Each row's held-out surrogate loss under every strategy (columns in STRATEGIES order)."""
    y = state.response.y
    return pd.DataFrame(
        {
            name: state.loss.pointwise(y, nested.held_out_predictions(name, state.loss))
            for name in STRATEGIES
        }
    )


def paired_ratio_table(losses: pd.DataFrame, reference: str = "PEARL") -> pd.DataFrame:
    """Risk, SE, and the paired ratio ``reference / strategy`` with its delta-method SE.

    ``ratio_se`` comes from the per-row influence ``(a_i - r b_i) / mean(b)``
    of ``r = mean(a) / mean(b)`` on the same rows.
    """
    n = len(losses)
    a = losses[reference].to_numpy()
    rows = {}
    for name in losses.columns:
        b = losses[name].to_numpy()
        ratio = a.mean() / b.mean()
        influence = (a - ratio * b) / b.mean()
        rows[name] = {
            "risk": b.mean(), "se": b.std(ddof=1) / np.sqrt(n),
            "ratio": ratio, "ratio_se": influence.std(ddof=1) / np.sqrt(n),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def fold_procedure_predictions(state: FitState, nested: NestedCV, X_new: np.ndarray) -> np.ndarray:
    """Predictions for new rows of the PEARL procedure fitted without each outer fold.

    Candidates with non-zero weight in outer fold k are refitted on that
    fold's training rows and averaged with its weights.

    Returns
    -------
    ndarray (outer folds, m) or (outer folds, m, C)
    """
    family, everything = state.family, state.candidates.everything
    out = []
    for k, weights in enumerate(nested.fold_strategy_weights):
        train = np.flatnonzero(nested.outer_folds != k)
        sub = EncodedResponse(state.response.y[train], state.response.classes)
        active = np.flatnonzero(weights["PEARL"] > 0)
        parts = []
        for j in active:
            candidate = everything[j]
            params, _ = family.fit_params(
                state.design.X[train], sub, candidate.columns, state.ridge, candidate.label
            )
            parts.append(family.predict(params, X_new[:, candidate.columns]))
        out.append(state.loss.combine(np.stack(parts, axis=1), weights["PEARL"][active]))
    return np.stack(out)


def conformal_prediction(state: FitState, nested: NestedCV, X_new: np.ndarray, alpha: float,
                         seed: int | None = None) -> tuple[np.ndarray, np.ndarray] | np.ndarray:
    """CV+ intervals (gaussian, poisson) or adaptive prediction sets (classes) for new rows.

    The conformity scores are the held-out residuals (or APS scores) of the
    PEARL procedure re-run without each row's outer fold, so the guarantee
    covers the whole procedure, weights included.

    Returns
    -------
    (lower, upper) arrays, or a boolean (m, C) array of prediction sets.
    """
    from .inference import aps_prediction_sets, cv_plus_interval

    held_out = nested.held_out_predictions("PEARL", state.loss)
    new = fold_procedure_predictions(state, nested, X_new)
    y = state.response.y
    if state.response.classes is None:
        family = "poisson" if state.family.name == "poisson" else "gaussian"
        return cv_plus_interval(y, held_out, nested.outer_folds, new, alpha, family=family)
    if held_out.ndim == 1:  # binomial: P(y = 1) -> two columns
        held_out = np.column_stack([1.0 - held_out, held_out])
        new = np.stack([1.0 - new, new], axis=-1)
    return aps_prediction_sets(
        np.asarray(y, dtype=np.intp),
        held_out,
        nested.outer_folds,
        new,
        alpha,
        seed=state.seed if seed is None else seed,
    )
