"""Nested cross-validation of the whole PEARL procedure, built from the fit's stages.

Each outer fold is held out while the procedure is re-run on the remaining
rows: inner folds, every candidate's inner out-of-fold predictions, the PEARL
weights, and each baseline's choice (MS re-selects, Best re-chooses, SA-cand,
SA-FRL and Fusion re-check which candidates fitted). Every candidate refitted
on the outer training rows predicts the held-out fold, so no held-out row
informs its own prediction; a candidate whose classes separate gets the ridge
that outer fold's procedure chose on its training rows, not one the fit or
another fold needed. The same machinery gives

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

import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .design.folds import check_class_coverage, make_folds
from .design.splitters import (
    OutsideRowsError,
    Splits,
    group_codes,
    resolve_splits,
    splitter_name,
)
from .engines._common import EngineOutput
from .engines.intercept import response_intercept_predictions
from .exceptions import (
    AllCandidatesFailedError,
    DataError,
    FoldError,
    OptionError,
    ResponseError,
    format_positions,
)
from .families import EncodedResponse
from .ledger import LEDGER_COLUMNS
from .observation_weights import mean_se, without_rounding
from .progress import progress_bar, timed
from .stages import FitState, cross_validate, cross_validate_splits
from .weight_stage import cross_validate_draws, fit_name, solve_draw_weights
from .weights.baselines import NULL, STRATEGIES, combine, strategy_weights
from .weights.certificate import gap_table
from .weights.information import candidate_criteria
from .weights.precision import exact_fit_notes, null_floor, risk_ratios

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .weights.losses import Loss

__all__ = [
    "row_uniforms",
    "NestedCV", "nested_cross_validation", "strategy_row_losses", "paired_ratio_table",
    "fold_procedure_predictions", "conformal_prediction", "deal_groups", "paired_ratio_moments",
    "with_gap_columns", "forward_splits",
]


@dataclass(frozen=True)
class NestedCV:
    """What the outer cross-validation of a fit found.

    Attributes
    ----------
    outer_folds : ndarray of int (n,)
    outside : EngineOutput
        Predictions of every candidate (pool, then baseline extras) for each
        row, from the candidate fitted on the training rows of that row's
        outer fold only, with the ridge that fold's procedure chose for it
        (``failed``: no finite prediction in some outer fold; ``ridges``: None,
        see *fold_ridges*).
    fold_strategy_weights : tuple of dict
        Per outer fold: strategy name -> weights over pool + extras, chosen
        from that fold's training rows only.
    inner_folds : tuple of ndarray
        Inner fold labels of each outer training set's rows.
    failures : DataFrame
        Ledger rows of the outer and inner fits, with ``where`` they happened.
    fold_ridges : tuple of dict
        Per outer fold: label -> separation ridge its inner cross-validation
        chose (the family's ``candidate_ridges`` of ``pearlstats.fit`` on
        that fold's training rows).
    fold_gaps : DataFrame
        Per outer fold (``"outer fold k"``): the ``kkt_gap``, ``objective``,
        ``certified`` and ``solver`` of its PEARL weight solve (before any
        shrinkage; :func:`~pearlstats.weights.certificate.gap_table`).
    outer_train : tuple of ndarray or None
        Training rows of each outer fold where they are not all the other rows: the
        time-ordered outer splits of a fit cross-validated by a time-ordered splitter
        (each outer fold trained on the rows before it, less the splitter's gap, and cut
        between the fit's groups; ``outer_folds`` -1 for the first rows, never held out;
        :func:`forward_splits`). None: each outer fold trains on all other rows.
    """

    outer_folds: np.ndarray
    outside: EngineOutput
    fold_strategy_weights: tuple
    inner_folds: tuple
    failures: pd.DataFrame
    fold_ridges: tuple
    fold_gaps: pd.DataFrame | None = None
    outer_train: tuple | None = None

    def training_rows(self, k: int) -> np.ndarray:
        """Rows outer fold *k*'s procedure was fitted on."""
        if self.outer_train is not None:
            return self.outer_train[k]
        return np.flatnonzero(self.outer_folds != k)

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


def _given_fold_labels(state: FitState) -> bool:
    """Whether the fit's folds were given as labels, which may encode groups of rows."""
    return not isinstance(state.cv_spec, (str, int, np.integer, Splits))


def forward_splits(n: int, outer: int, option: str = "outer", gap: int = 0,
                   groups: np.ndarray | None = None) -> Splits:
    """*outer* time-ordered outer splits of *n* rows in their order (``TimeSeriesSplit``'s rule).

    The rows are taken in units: each row, or with *groups* each group's rows, which must be
    consecutive (a date's rows), so that no group is both trained on and held out. Of m units
    the last ``outer * (m // (outer + 1))`` are held out in *outer* consecutive blocks of
    ``m // (outer + 1)`` units; each block's procedure is fitted on every row before it except
    the *gap* rows just before it (the fit's splitter's gap: rows that close to a held-out row
    are not trained on, as in its own splits). So no outer test row precedes a row it was
    trained on, and the first rows are never held out.

    A splitter's ``max_train_size`` is not applied here: each outer training set is the data
    ``pearlstats.fit`` would have had up to that block, and the fit refits its candidates on
    all its rows, so the honest risk is that of the procedure fitted on all earlier rows (the
    splitter, ``max_train_size`` and all, is re-run inside it for the weights).

    Parameters
    ----------
    n : int
        Rows, in time order.
    outer : int
        Outer splits, >= 2.
    option : str, default "outer"
        The user's name for *outer* in messages (``"honest"`` for ``pearlstats.fit``'s).
    gap : int, default 0
        Rows left out of each outer training set just before its held-out block.
    groups : ndarray (n,), optional
        Group labels; the outer cuts fall between groups.

    Returns
    -------
    Splits

    Raises
    ------
    FoldError
        *outer* not an int >= 2, fewer than ``outer + 1`` units, a group whose rows are not
        consecutive, or a gap that leaves the first block nothing to train on.

    Examples
    --------
    >>> splits = forward_splits(12, 3)
    >>> splits.folds.tolist(), splits.train[1].tolist()
    ([-1, -1, -1, 0, 0, 0, 1, 1, 1, 2, 2, 2], [0, 1, 2, 3, 4, 5])
    >>> forward_splits(12, 3, gap=2).train[1].tolist()  # rows 4, 5 are within 2 of row 6
    [0, 1, 2, 3]
    >>> days = np.repeat([1, 2, 3, 4], [2, 4, 3, 3])  # 4 days: the cuts fall between them
    >>> forward_splits(12, 3, groups=days).folds.tolist()
    [-1, -1, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    """
    if not isinstance(outer, (int, np.integer)) or isinstance(outer, bool) or outer < 2:
        raise FoldError(f"{option}={outer!r}: time-ordered outer folds need an int >= 2")
    starts = np.arange(n) if groups is None else _group_starts(groups, option)
    size = len(starts) // (outer + 1)
    if size < 1:
        if groups is None:
            raise FoldError(f"{option}={outer} time-ordered outer folds need more than {outer} "
                            "rows")
        raise FoldError(
            f"{option}={outer} time-ordered outer folds are cut between groups (groups=), so "
            f"they need more than {outer} groups, and the rows have {len(starts)}; use "
            f"{option} <= {len(starts) - 1}" + (" or honest=False" if option == "honest" else "")
        )
    bounds = np.append(starts, n)  # unit u is the rows bounds[u]:bounds[u + 1]
    first = len(starts) - outer * size
    folds = np.full(n, -1, dtype=np.intp)
    trains = []
    for k in range(outer):
        low, high = bounds[first + k * size], bounds[first + (k + 1) * size]
        folds[low:high] = k
        if low - gap < 1:
            raise FoldError(
                f"{option}={outer} time-ordered outer folds: the first holds out rows "
                f"{low}..{high - 1}, and the splitter's gap of {gap} rows leaves no row before "
                f"them to train on; use fewer outer folds or a smaller gap"
                + (", or honest=False" if option == "honest" else "")
            )
        trains.append(np.arange(low - gap))
    return Splits(folds, tuple(trains))


def _group_starts(groups: np.ndarray, option: str) -> np.ndarray:
    """First row of each run of equal group labels; refused where a group has several runs."""
    codes = group_codes(groups)
    starts = np.concatenate([[0], np.flatnonzero(codes[1:] != codes[:-1]) + 1])
    runs = np.bincount(codes[starts])
    if runs.max() > 1:
        group = int(np.flatnonzero(runs > 1)[0])
        rows = np.flatnonzero(codes == group)
        label = np.asarray(groups)[rows[0]]
        label = label.item() if isinstance(label, np.generic) else label  # 3, not np.int64(3)
        raise FoldError(
            f"groups= keeps rows together, so the time-ordered outer folds of {option}= are cut "
            "between groups, which needs each group's rows consecutive (the rows in time order, "
            f"a date's rows together); group {label!r} has "
            f"{format_positions(rows)} with other groups' rows between them: sort the rows by "
            "time" + (", or give honest=False" if option == "honest" else "")
        )
    return starts


def _outer_splits(state: FitState, outer, option: str) -> Splits | None:
    """Outer splits of a fit cross-validated by a splitter that is not a partition: time-ordered
    (:func:`forward_splits`, with the fit's splits' gap and cut between its groups) where the
    splitter is; refused otherwise. None for other fits."""
    spec = state.cv_spec
    if not isinstance(spec, Splits):
        return None
    if not spec.time_ordered:
        raise FoldError(
            f"cv={type(spec.splitter).__name__}(...) {spec.shortfall} and is not "
            "time-ordered, so the outer folds of the honest risk have no rule that respects it; "
            "use a partition splitter (each split trained on all the rows it does not test: "
            "KFold, GroupKFold) or honest=False"
        )
    return forward_splits(len(state.response.y), outer, option, spec.gap, spec.groups)


def _outer_folds(state: FitState, outer, seed: int, option: str = "outer") -> np.ndarray:
    """The outer folds: *outer* as given, or whole given folds dealt to *outer* outer folds.

    Fold labels given to the fit may be groups (patients, documents, sites) whose rows
    must not be split between training and validation; random outer folds would split
    them and score a row on models fitted with its own group. So with given labels an
    int *outer* deals the shuffled labels to ``min(outer, labels)`` outer folds, and
    ``"loo"`` leaves one given fold out at a time.
    """
    response = state.response
    n = len(response.y)
    if isinstance(outer, (int, np.integer)) and not isinstance(outer, bool) and outer > n:
        # make_folds would name its own argument, cv, which the user did not set here
        raise FoldError(f"{option}={outer} outer folds but only {n} rows; use {option} <= {n}"
                        + (" or 'loo'" if option == "outer" else ""))
    sequence = np.random.SeedSequence([seed, 0])
    if _given_fold_labels(state) and not isinstance(outer, (np.ndarray, list, tuple, pd.Series)):
        groups = state.folds
        n_groups = int(groups.max()) + 1
        if isinstance(outer, str):  # "loo": one given fold at a time
            return groups.copy()
        return deal_groups(n_groups, int(outer), sequence)[groups]
    strata = response.y.astype(np.intp) if response.classes is not None else None
    return make_folds(outer, n, seed=sequence, strata=strata)


def deal_groups(n_groups: int, outer: int, sequence: np.random.SeedSequence) -> np.ndarray:
    """Outer fold of each of *n_groups* given folds: shuffled by *sequence*, dealt round-robin
    to ``min(outer, n_groups)`` outer folds (the rule of given fold labels, in memory or on dask).

    Examples
    --------
    >>> deal_groups(5, 3, np.random.SeedSequence([0, 0])).tolist()
    [0, 1, 0, 2, 1]
    """
    order = np.random.default_rng(sequence).permutation(n_groups)
    dealt = np.empty(n_groups, dtype=np.intp)
    dealt[order] = np.arange(n_groups) % min(outer, n_groups)
    return dealt


# Rows of each class an outer training set needs: its inner cross-validation keeps the class in
# every inner training set only if the class has 2 rows there (check_class_coverage).
_INNER_CLASS_ROWS = 2


def _check_outer_training_classes(response: EncodedResponse, outer_folds: np.ndarray) -> None:
    """Refuse outer folds some of whose training sets hold fewer than 2 rows of a class.

    The stratified outer folds deal a class of m rows round-robin, so no outer fold holds more
    than ceil(m / K) of them: the fewest any split can leave out. Where even that leaves a
    training set short, the nested cross-validation cannot re-run the procedure there, and the
    error says so (``res.honest`` is then unavailable with this reason), instead of the inner
    folds' "occur in only one row", which describes the training set, not the data.

    Raises
    ------
    FoldError
        Naming the classes, their rows in the data and the outer folds that are short.
    """
    codes = response.y.astype(np.intp)
    n_outer = int(outer_folds.max()) + 1
    total = np.bincount(codes, minlength=len(response.classes))
    kept = total[None, :] - np.array(
        [np.bincount(codes[outer_folds == k], minlength=len(response.classes))
         for k in range(n_outer)]
    )
    short = np.flatnonzero((kept < _INNER_CLASS_ROWS).any(axis=0))
    if short.size == 0:
        return
    # The fewest rows m with m - ceil(m / K) >= 2: what K stratified outer folds need.
    needed = next(m for m in range(_INNER_CLASS_ROWS, 4 * n_outer + 4)
                  if m - -(-m // n_outer) >= _INNER_CLASS_ROWS)
    described = ", ".join(
        f"{response.classes[c]!r} ({total[c]} rows; outer fold(s) "
        f"{np.flatnonzero(kept[:, c] < _INNER_CLASS_ROWS).tolist()} keep "
        f"{kept[kept[:, c] < _INNER_CLASS_ROWS, c].min()} for training)"
        for c in short
    )
    raise FoldError(
        f"class(es) too rare for {n_outer} outer folds: {described}; the procedure re-run on an "
        f"outer training set needs {_INNER_CLASS_ROWS} rows of each class for its inner folds, so "
        f"with {n_outer} stratified outer folds a class needs at least {needed} rows (collect "
        "more rows of the class, merge it with another, or choose other outer folds)"
    )


def _inner_folds(state: FitState, response: EncodedResponse, train: np.ndarray,
                 seed) -> np.ndarray:
    """Inner folds of an outer training set: the fit's K (or LOO), stratified for classes.

    With fold labels given to the fit, the training rows keep theirs (renumbered), as
    ``pearlstats.fit`` on those rows with ``cv=`` their labels would use.
    """
    n = len(response.y)
    if isinstance(state.cv_spec, Splits):  # the fit's splitter on the outer training rows
        groups = state.cv_spec.groups
        return resolve_splits(state.cv_spec.splitter, None if groups is None else groups[train],
                              response.y, seed)
    if isinstance(state.cv_spec, str):
        return np.arange(n)
    strata = response.y.astype(np.intp) if response.classes is not None else None
    if _given_fold_labels(state):
        folds = make_folds(state.folds[train], n)
    else:
        folds = make_folds(min(int(state.folds.max()) + 1, n), n, seed=seed, strata=strata)
    if strata is not None:
        groups = None if state.groups is None else state.groups[train]
        check_class_coverage(strata, folds, response.classes, groups=groups)
    return folds


@dataclass(frozen=True)
class _OuterFold:
    """What the procedure re-run on one outer training set gave (see :class:`NestedCV`)."""

    weights: dict
    inner_folds: np.ndarray
    inner_entries: list
    held_out: np.ndarray
    unfit: np.ndarray
    refitted: list
    refit_entries: list
    ridges: dict
    solve: object  # the weight solve's WeightSolution (before shrinkage)


def _refit_predict(family, X_train: np.ndarray, response: EncodedResponse, candidate, ridge: float,
                   X_new: np.ndarray, offset: np.ndarray | None = None) -> tuple[np.ndarray, list]:
    """A candidate refitted on training rows as ``pearlstats.fit`` refits it; predicts *X_new*
    (whose linear predictors get *offset*, the new rows' own, in a fit with an offset)."""
    params, notes = family.fit_params(X_train, response, candidate.columns, ridge, candidate.label)
    if response.offset is not None:
        return family.predict_with_offset(params, X_new[:, candidate.columns], offset), notes
    return family.predict(params, X_new[:, candidate.columns]), notes


def _held_out_fold(
    state: FitState, family, outside: EngineOutput, train: np.ndarray, test: np.ndarray,
    failed: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, list, list]:
    """Every candidate's predictions for an outer fold's rows from fits on its training rows.

    The outer cross-validation fits each candidate with one ridge in all outer folds, so a
    candidate that separates in one outer training set (or on all rows) gets that ridge in the
    others too. Its prediction is kept where that is the ridge *family* (this fold's
    procedure) chose, as for every candidate that separates nowhere; otherwise the candidate is
    refitted on the training rows with this fold's ridge, unless this fold's procedure *failed*
    it (e.g. ``separation="drop"``): it gets weight 0 there, and a separated fit has no
    prediction worth scoring.

    Returns
    -------
    predictions : ndarray (test rows, J) or (test rows, J, C)
    unfit : ndarray of bool (J,)
        No finite prediction for these rows.
    refitted : list of str
        Labels of the candidates refitted.
    entries : list of LedgerEntry
        The refits' notes.
    """
    predictions = outside.predictions[test].copy()
    if outside.ridges is None:  # no ridge ladder: the fold fits are independent already
        return predictions, outside.failed.copy(), [], []
    sub = state.response.subset(train)
    X_train, X_test = state.design.X[train], state.design.X[test]
    refitted, entries = [], []
    for j, candidate in enumerate(state.candidates.everything):
        ridge = family.candidate_ridge(candidate.label, state.ridge)
        if not outside.failed[j] and outside.ridges[j] == ridge:
            continue
        if failed[j]:
            predictions[:, j] = np.nan
            continue
        predictions[:, j], notes = _refit_predict(family, X_train, sub, candidate, state.ridge,
                                                  X_test, _rows_offset(state.response, test))
        refitted.append(candidate.label)
        entries.extend(notes)
    finite = np.isfinite(predictions).reshape(len(test), len(state.candidates.everything), -1)
    return predictions, ~finite.all(axis=(0, 2)), refitted, entries


def _held_out_refits(
    state: FitState, family, X_train: np.ndarray, sub: EncodedResponse, test: np.ndarray,
    failed: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, list, list]:
    """Every candidate refitted on the training rows with this fold's ridges, predicting *test*.

    What :func:`_held_out_fold` reads from an outer cross-validation, for a re-run that needs one
    held-out fold only (the nested SE's pairs of folds): a cross-validation over all outer folds
    would fit every candidate K - 1 times to use one of them. A likelihood candidate's fit on
    *X_train* is the all-rows fit its inner cross-validation has just made (the same problem on
    the same array, which a GLM refit takes: ``engines.glm._cv_fit``). Candidates this fold's
    procedure *failed* get NaN, as there. Returns what :func:`_held_out_fold` returns (no
    candidate is listed as refitted: every one is).
    """
    X_test, offset = state.design.X[test], _rows_offset(state.response, test)
    columns, entries = [], []
    for j, candidate in enumerate(state.candidates.everything):
        if failed[j]:
            columns.append(None)
            continue
        predicted, notes = _refit_predict(family, X_train, sub, candidate, state.ridge, X_test,
                                          offset)
        columns.append(predicted)
        entries.extend(notes)
    shape = next((c.shape for c in columns if c is not None), (len(test),))
    predictions = np.stack([np.full(shape, np.nan) if c is None else c for c in columns], axis=1)
    finite = np.isfinite(predictions).reshape(len(test), len(columns), -1)
    return predictions, ~finite.all(axis=(0, 2)), [], entries


def _training_criteria(state: FitState, family, train: np.ndarray, X_train: np.ndarray,
                       response: EncodedResponse, failed: np.ndarray) -> dict | None:
    """AICc and BIC of the pool's candidates refitted on an outer fold's *train* rows, as the
    fit's own are of its all-rows refits (None for a downstream network).

    *X_train* is the very array the inner cross-validation read, so a GLM refit takes that
    cross-validation's all-rows optimum of the same candidate (``engines.glm._cv_fit``) instead of
    solving the same problem again.
    """
    if not family.likelihood:
        return None
    offset = _rows_offset(state.response, train)
    fitted = {}
    for j, candidate in enumerate(state.candidates.pool):
        if not failed[j]:
            fitted[j], _ = _refit_predict(family, X_train, response, candidate, state.ridge,
                                          X_train, offset)
    return candidate_criteria(family.name, response, fitted,
                              [c.n_params for c in state.candidates.everything])


def _inner_outputs(state: FitState, sub: EncodedResponse, train: np.ndarray, X_train: np.ndarray,
                   seeds: list) -> tuple[list, list, object]:
    """The inner fold draws of an outer training set (rows *train*, design rows *X_train*) and
    every candidate's predictions in each (splits that test some rows only: one draw, -1 for
    the rows no split tests)."""
    draws = [_inner_folds(state, sub, train, seed) for seed in seeds]
    everything = state.candidates.everything
    if isinstance(draws[0], Splits):
        family = state.family.configured(candidate_ridges={})
        output = cross_validate_splits(family, X_train, sub, everything, draws[0],
                                       ridge=state.ridge)
        return [draws[0].folds], [output], family
    outputs, family = cross_validate_draws(state.family, X_train, sub, everything,
                                           draws, loo=isinstance(state.cv_spec, str),
                                           ridge=state.ridge)
    return draws, outputs, family


def _outer_fold(state: FitState, outside: EngineOutput | None, outer_folds: np.ndarray, k: int,
                seeds: list, train: np.ndarray | None = None) -> _OuterFold:
    """The procedure re-run on outer fold *k*'s training rows, and its held-out predictions.

    The fit's weight stage is repeated as it ran: one inner fold draw per seed in *seeds*
    (``cv_repeats``) and the fit's shrinkage, so the honest risk is that of the procedure used.
    The separation ridges are chosen on the training rows (:func:`cross_validate_draws`), and
    the held-out predictions use them: read from *outside*, the cross-validation over the outer
    folds (:func:`_held_out_fold`), or, where *outside* is None, from refits of every candidate
    on the training rows (:func:`_held_out_refits`).
    """
    train = np.flatnonzero(outer_folds != k) if train is None else train
    test = np.flatnonzero(outer_folds == k)
    everything = state.candidates.everything
    pool = state.candidates.pool
    sub = state.response.subset(train)
    X_train = state.design.X[train]
    draws, outputs, family = _inner_outputs(state, sub, train, X_train, seeds)
    failed = np.logical_or.reduce([out.failed for out in outputs])
    if outside is None:
        held_out, unfit, refitted, entries = _held_out_refits(state, family, X_train, sub, test,
                                                              failed)
    else:
        held_out, unfit, refitted, entries = _held_out_fold(state, family, outside, train, test,
                                                            failed)
    outputs = [EngineOutput(out.predictions, out.failed | unfit, out.entries, out.ridges)
               for out in outputs]
    record: list = []
    loss = rows_loss(state.loss, train)
    inner, solution, _ = solve_draw_weights(
        outputs, sub.y, pool, draws, loss, state.weight_options.shrinkage,
        warn_failures=False, record=record,
        context=f"in outer fold {k} of the honest risk (res.honest) of {fit_name(state)}",
    )
    tested = np.flatnonzero(draws[0] >= 0)  # the inner rows some split tests
    risks = np.array([
        np.nan if inner.failed[j]
        else rows_loss(loss, tested).pointwise(sub.y[tested], inner.predictions[tested, j]).mean()
        for j in range(len(everything))
    ])
    weights = strategy_weights(solution.weights, everything, len(pool), risks, inner.failed,
                               _training_criteria(state, family, train, X_train, sub,
                                                  inner.failed))
    return _OuterFold(weights, draws[0], inner.entries, held_out, unfit, refitted, entries,
                      dict(family.candidate_ridges), record[0])


def nested_cross_validation(
    state: FitState,
    outer: int | str | np.ndarray = 5,
    seed: int | None = None,
    n_jobs: int | None = None,
    option: str = "outer",
    progress: bool | None = None,
) -> NestedCV:
    """Re-run the whole PEARL procedure inside each outer fold.

    Parameters
    ----------
    state : FitState
        A fit's stage values (``res.stages``).
    outer : int, "loo" or array-like, default 5
        Outer folds (stratified for classes). If the fit was given fold labels
        (``cv=`` one label per row, which may be groups), whole given folds are
        dealt to the outer folds (``"loo"``: one given fold at a time) and each
        outer training set keeps its given labels as its inner folds, so no
        group is split between fitting and scoring.
    seed : int, optional
        Outer folds are seeded by ``SeedSequence([seed, 0])``, the inner folds
        of outer fold k by ``SeedSequence([seed, 1, k])`` (draw r > 0 of the fit's
        ``cv_repeats`` by ``SeedSequence([seed, 1, k, r])``); default the fit's seed.
        The inner weight stage repeats the fit's ``cv_repeats`` and shrinkage.
    n_jobs : int, optional
        Workers for the outer cross-validation of the candidates.
    option : str, default "outer"
        The user's name for *outer* in error messages (``"honest"`` for ``pearlstats.fit``'s).
    progress : bool, optional
        A bar over the outer folds (:mod:`pearlstats.progress`); default the fit's ``progress``.

    Returns
    -------
    NestedCV
        Outer fold k's weights and held-out predictions are those of
        ``pearlstats.fit`` on its training rows with its inner folds (including
        the separation ridges it chooses there).
    """
    seed = state.seed if seed is None else seed
    outer_folds, outside, splits = _outside(state, outer, seed, option, n_jobs)
    folds, n_outer = [], int(outer_folds.max()) + 1
    progress = state.progress if progress is None else progress
    with progress_bar(n_outer, "honest: outer folds", progress) as bar, \
            timed(logger, "honest re-runs", outer_folds=n_outer):
        for k in range(n_outer):
            # Draw r > 0 of cv_repeats: SeedSequence([seed, 1, k, r]); draw 0 as without repeats.
            seeds = [np.random.SeedSequence([seed, 1, k])] + [
                np.random.SeedSequence([seed, 1, k, r])
                for r in range(1, state.weight_options.cv_repeats)
            ]
            try:
                folds.append(_outer_fold(state, outside, outer_folds, k, seeds,
                                         None if splits is None else splits.train[k]))
            except (AllCandidatesFailedError, FoldError, ResponseError) as err:
                raise _in_outer_fold(err, state, outer_folds, k, splits, option) from err
            bar.update()
    predictions = outside.predictions.copy()
    for k, fold in enumerate(folds):
        predictions[outer_folds == k] = fold.held_out
    refitted = {label for fold in folds for label in fold.refitted}
    # The fast path's ledger rows of refitted candidates describe fits whose predictions were
    # replaced; each refit's own notes are kept with its fold.
    kept = [entry for entry in outside.entries if entry.candidate not in refitted]
    ledgers = [_ledger_frame(kept, "outer folds")]
    for k, fold in enumerate(folds):
        ledgers.append(_ledger_frame(fold.refit_entries, f"outer fold {k}"))
        ledgers.append(_ledger_frame(fold.inner_entries, f"inside outer fold {k}"))
    failed = np.logical_or.reduce([fold.unfit for fold in folds])
    return NestedCV(outer_folds, EngineOutput(predictions, failed, kept),
                    tuple(fold.weights for fold in folds),
                    tuple(fold.inner_folds for fold in folds),
                    pd.concat(ledgers, ignore_index=True),
                    tuple(fold.ridges for fold in folds),
                    gap_table([fold.solve for fold in folds],
                              [f"outer fold {k}" for k in range(len(folds))]),
                    None if splits is None else splits.train)


def _in_outer_fold(err: Exception, state: FitState, outer_folds: np.ndarray, k: int,
                   splits: Splits | None, option: str) -> Exception:
    """*err* of the procedure re-run on outer fold *k*'s training rows, said to have happened
    there (not in the fit, whose own cross-validation ran), with advice that fits the outer
    folds: a time-ordered first outer fold trains on the rows before its block only, so fewer
    outer folds (or a smaller gap) give it more; K-fold training sets grow with K."""
    n_outer = int(outer_folds.max()) + 1
    train = np.flatnonzero(outer_folds != k) if splits is None else splits.train[k]
    test = np.flatnonzero(outer_folds == k)
    switch_off = ", or honest=False" if option == "honest" else ""
    if splits is None:
        where = f"its {len(train)} training rows (all but its {len(test)} held-out rows)"
        advice = (f"more outer folds give larger outer training sets ({option}={n_outer + 1} "
                  f"or more){switch_off}")
        n_given = int(state.folds.max()) + 1
        if _given_fold_labels(state) and n_outer >= n_given:
            # outer folds are whole folds of the fit's, so at most its K: more cannot help
            advice = (f"the outer folds are whole folds of the fit's {n_given} (at most "
                      f"{n_given}, whatever {option}=), and each outer training set keeps the "
                      f"other {n_given - 1} as its inner folds: fit with more folds (cv of "
                      f"{n_given + 1} or more){switch_off}")
    elif isinstance(err, OutsideRowsError):
        where = f"its {len(train)} training rows"
        advice = (f"{splitter_name(state.cv_spec.splitter)} indexes the fit's rows, so it cannot "
                  "be re-run on an outer training set's rows: use a splitter that splits any "
                  f"rows it is given (e.g. TimeSeriesSplit){switch_off}")
    else:
        gap = state.cv_spec.gap
        where = (f"its {len(train)} training rows 0..{train[-1]} (the rows before its held-out "
                 f"rows {test[0]}..{test[-1]}" + (f", less the splitter's gap of {gap}" if gap
                                                   else "") + ")")
        fewer = [f"fewer outer folds ({option}={n_outer - 1})"] if n_outer > 2 else []
        smaller = ["a smaller gap"] if gap else []
        advice = ("time-ordered outer folds train the first on the rows before it only: use "
                  + ", ".join(fewer + smaller + ["a splitter with fewer splits"]) + switch_off)
    message = (f"in outer fold {k} of {n_outer}, re-running the procedure on {where}: {err}. "
               f"For these outer folds: {advice}")
    if isinstance(err, AllCandidatesFailedError):
        return AllCandidatesFailedError(message, err.failures)
    return type(err)(message)


def _outside(state: FitState, outer, seed: int, option: str,
             n_jobs: int | None) -> tuple[np.ndarray, EngineOutput, Splits | None]:
    """The outer folds, every candidate's predictions of each from its outer training rows, and
    the outer splits where those rows are not all the others (time-ordered, else None)."""
    response = state.response
    splits = _outer_splits(state, outer, option)
    outer_folds = _outer_folds(state, outer, seed, option) if splits is None else splits.folds
    family = state.family.configured(candidate_ridges={})
    if splits is not None:
        return outer_folds, cross_validate_splits(family, state.design.X, response,
                                                  state.candidates.everything, splits,
                                                  ridge=state.ridge), splits
    if response.classes is not None:
        check_class_coverage(response.y.astype(np.intp), outer_folds, response.classes)
        _check_outer_training_classes(response, outer_folds)
    # The fast path: every candidate over all outer folds at once, with ridges chosen afresh
    # (not the fit's); _held_out_fold refits where an outer fold's own procedure chose otherwise.
    return outer_folds, cross_validate(family, state.design.X, response,
                                       state.candidates.everything, outer_folds,
                                       ridge=state.ridge, n_jobs=n_jobs), None


def strategy_row_losses(nested: NestedCV, state: FitState) -> pd.DataFrame:
    """Each row's held-out surrogate loss under every strategy (columns in STRATEGIES order).

    The last column, ``NULL``, is the intercept-only model fitted on each outer
    fold's training rows: the reference risk of ignoring every input.
    """
    y = state.response.y
    losses = {
        name: state.loss.pointwise(y, nested.held_out_predictions(name, state.loss))
        for name in STRATEGIES
    }
    null = response_intercept_predictions(state.response, state.family.name, nested.outer_folds,
                                          nested.outer_train)
    losses[NULL] = state.loss.pointwise(y, null)
    return pd.DataFrame(losses)


def rows_loss(loss: Loss, rows: np.ndarray) -> Loss:
    """The loss of the rows *rows*: with observation weights, weighted by theirs."""
    return loss.restricted(rows) if hasattr(loss, "restricted") else loss


def paired_ratio_table(losses: pd.DataFrame, reference: str = "PEARL",
                       row_weights: np.ndarray | None = None,
                       weight_type: str | None = None,
                       loss_name: str | None = None) -> pd.DataFrame:
    """Risk, SE, and the paired ratio ``reference / strategy`` with its delta-method SE.

    ``ratio_se`` comes from the per-row influence ``(a_i - r b_i) / mean(b)``
    of ``r = mean(a) / mean(b)`` on the same rows. With observation weights the row
    losses are weighted ones and the SEs those of
    :func:`~pearlstats.observation_weights.mean_se`. A risk 0 to the response's precision
    (:mod:`pearlstats.weights.precision`, from the ``Null`` column's risk and *loss_name*)
    has no ratio, and its ``note`` says so.
    """
    names = list(losses.columns)
    means = losses.mean().to_numpy()
    floor = null_floor(loss_name, names, means)
    ratios = risk_ratios(means, names.index(reference), floor)
    a = losses[reference].to_numpy()
    rows = {}
    for name, mean, ratio, note in zip(names, means, ratios, exact_fit_notes(means, floor)):
        b = losses[name].to_numpy()
        influence = (a - ratio * b) / mean if np.isfinite(ratio) else np.full(len(b), np.nan)
        rows[name] = {
            "risk": mean, "se": float(mean_se(b, row_weights, weight_type)),
            "ratio": ratio, "ratio_se": float(mean_se(influence, row_weights, weight_type)),
            "note": note,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def paired_ratio_moments(names: list, n: int, mean: np.ndarray, M2: np.ndarray,
                         reference: str = "PEARL", loss_name: str | None = None) -> pd.DataFrame:
    """:func:`paired_ratio_table` (without observation weights) from the row losses' sums.

    *mean* (S,) are the columns' means over the *n* rows and *M2* (S, S) their centred cross
    products ``sum (a_i - mean a)(b_i - mean b)``: what a pass over rows that are never
    gathered in one place (dask partitions) can return. The SEs are the same SD / sqrt(n),
    and the ratio's influence ``(a_i - r b_i) / mean(b)`` has the variance
    ``(M2_aa - 2 r M2_ab + r^2 M2_bb) / (mean(b)^2 (n - 1))``.
    """
    a = names.index(reference)
    floor = null_floor(loss_name, names, mean)
    ratios = risk_ratios(mean, a, floor)
    rows = {}
    for b, (name, ratio, note) in enumerate(zip(names, ratios, exact_fit_notes(mean, floor))):
        spread = (M2[a, a] - 2.0 * ratio * M2[a, b] + ratio**2 * M2[b, b]) / mean[b] ** 2
        rows[name] = {
            "risk": mean[b], "se": float(without_rounding(np.sqrt(M2[b, b] / (n - 1) / n),
                                                          mean[b], n)),
            "ratio": ratio, "ratio_se": float(np.sqrt(max(spread, 0.0) / (n - 1) / n))
            if np.isfinite(ratio) else np.nan,
            "note": note,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def with_gap_columns(table: pd.DataFrame, fold_gaps: pd.DataFrame | None) -> pd.DataFrame:
    """The honest table's ``kkt_gap`` and ``certified`` columns: PEARL's worst weight solve
    over the outer folds (:func:`~pearlstats.weights.certificate.gap_table`), NaN / True for
    the baselines, which solve nothing."""
    table["kkt_gap"] = np.nan
    table["certified"] = True
    if fold_gaps is not None and len(fold_gaps):
        table.loc["PEARL", "kkt_gap"] = float(fold_gaps["kkt_gap"].max())
        table.loc["PEARL", "certified"] = bool(fold_gaps["certified"].all())
    return table


def _rows_offset(response: EncodedResponse, rows: np.ndarray) -> np.ndarray | None:
    return None if response.offset is None else response.offset[rows]


def fold_procedure_predictions(state: FitState, nested: NestedCV, X_new: np.ndarray,
                               offset: np.ndarray | None = None) -> np.ndarray:
    """Predictions for new rows of the PEARL procedure fitted without each outer fold.

    Candidates with non-zero weight in outer fold k are refitted on that
    fold's training rows, with the separation ridges its procedure chose
    (:attr:`NestedCV.fold_ridges`), and averaged with its weights. A fit with an
    offset needs the new rows' *offset* (their means then include it).

    Returns
    -------
    ndarray (outer folds, m) or (outer folds, m, C)
    """
    everything = state.candidates.everything
    out = []
    for k, weights in enumerate(nested.fold_strategy_weights):
        family = state.family.configured(candidate_ridges=nested.fold_ridges[k])
        train = nested.training_rows(k)
        sub = state.response.subset(train)
        active = np.flatnonzero(weights["PEARL"] > 0)
        parts = [_refit_predict(family, state.design.X[train], sub, everything[j], state.ridge,
                                X_new, offset)[0] for j in active]
        out.append(state.loss.combine(np.stack(parts, axis=1), weights["PEARL"][active]))
    return np.stack(out)


def check_conformal_available(state: FitState) -> None:
    """Refuse CV+ intervals and sets for a fit whose splitter is not a partition of the rows.

    Checked before the outer re-runs that CV+ reads, so the refusal costs no fit.

    Raises
    ------
    OptionError
        A time-ordered splitter (the rows are not exchangeable) or one that tests some rows
        only (no outer folds hold every row out once).
    """
    spec = state.cv_spec
    if not isinstance(spec, Splits):
        return
    why = ("cross-validates in time order, and CV+ assumes exchangeable rows" if spec.time_ordered
           else f"{spec.shortfall}, and CV+ needs outer folds that hold every row out "
           "once and train on all the others")
    raise OptionError(
        f"prediction intervals and sets (CV+) are not available for a fit with "
        f"cv={type(spec.splitter).__name__}(...): it {why}; predict without interval= (with "
        "get_prediction, conf_int() gives the mean's interval), or fit with a partition "
        "splitter (cv=K, KFold, GroupKFold)"
    )


def conformal_prediction(state: FitState, nested: NestedCV, X_new: np.ndarray, alpha: float,
                         seed: int | None = None, offset: np.ndarray | None = None,
                         new_weights: np.ndarray | None = None,
                         ) -> tuple[np.ndarray, np.ndarray] | np.ndarray:
    """CV+ intervals (gaussian, poisson) or adaptive prediction sets (classes) for new rows.

    The conformity scores are the held-out residuals (or APS scores) of the
    PEARL procedure re-run without each row's outer fold, so the guarantee
    covers the whole procedure, weights included. With observation weights the
    training rows count (frequency) or scale their residuals (variance) as
    :func:`~pearlstats.inference.cv_plus_interval` says; *new_weights* are the new
    rows' variance weights, *offset* their offset in a fit with one.

    Returns
    -------
    (lower, upper) arrays, or a boolean (m, C) array of prediction sets.
    """
    from .inference import aps_prediction_sets, cv_plus_interval

    check_conformal_available(state)
    held_out = nested.held_out_predictions("PEARL", state.loss)
    new = fold_procedure_predictions(state, nested, X_new, offset)
    _check_finite_fold_predictions(state, nested, X_new, new, offset)
    y, response = state.response.y, state.response
    if response.classes is None:
        family = "poisson" if state.family.name == "poisson" else "gaussian"
        return cv_plus_interval(y, held_out, nested.outer_folds, new, alpha, family=family,
                                row_weights=response.row_weights,
                                weight_type=response.weight_type, new_weights=new_weights)
    if response.weight_type == "variance":
        raise OptionError("prediction sets with variance weights have no meaning (a class score "
                          "has no variance to scale); fit with frequency weights or none")
    if held_out.ndim == 1:  # binomial: P(y = 1) -> two columns
        held_out = np.column_stack([1.0 - held_out, held_out])
        new = np.stack([1.0 - new, new], axis=-1)
    seed = state.seed if seed is None else seed
    return aps_prediction_sets(
        np.asarray(y, dtype=np.intp),
        held_out,
        nested.outer_folds,
        new,
        alpha,
        seed=seed,
        new_uniforms=row_uniforms(X_new, seed),
        row_weights=response.row_weights,
    )


def row_uniforms(X_new: np.ndarray, seed: int) -> np.ndarray:
    """One U in [0, 1) per new row, drawn from the row's own design values and *seed*.

    Drawn by position, a row's U (and so its randomised prediction set) would change with
    the rows predicted alongside it and their order; keyed by the row, the same row gets
    the same set in any batch.
    """
    rows = np.ascontiguousarray(X_new, dtype=np.float64) + 0.0  # + 0.0: -0.0 and 0.0 alike
    keys = [int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8).digest(), "little")
            for row in rows]
    return np.array([np.random.default_rng([seed, key]).uniform() for key in keys])


def _check_finite_fold_predictions(state: FitState, nested: NestedCV, X_new: np.ndarray,
                                   new: np.ndarray, offset: np.ndarray | None = None) -> None:
    """Refuse new rows some outer fold's procedure predicts as inf or NaN, naming the culprits.

    Only reached on failure, so the candidates of the first failing fold are refitted again
    to find which of them made the rows non-finite (a Poisson mean ``exp(eta)`` overflows
    past eta = 709, e.g. for a row far outside the training rows' values).

    Raises
    ------
    DataError
        Naming the new rows (positions), the outer fold and the candidate(s).
    """
    bad = ~np.isfinite(new.reshape(new.shape[0], new.shape[1], -1)).all(axis=2)
    if not bad.any():
        return
    k = int(np.flatnonzero(bad.any(axis=1))[0])
    rows = np.flatnonzero(bad.any(axis=0))
    family = state.family.configured(candidate_ridges=nested.fold_ridges[k])
    train = nested.training_rows(k)
    sub = state.response.subset(train)
    everything = state.candidates.everything
    culprits = [
        everything[j].label for j in np.flatnonzero(nested.fold_strategy_weights[k]["PEARL"] > 0)
        if not np.isfinite(_refit_predict(family, state.design.X[train], sub, everything[j],
                                          state.ridge, X_new[rows],
                                          None if offset is None else offset[rows])[0]).all()
    ]
    why = (" (a Poisson mean exp(linear predictor) overflows past a linear predictor of 709)"
           if state.family.name == "poisson" else "")
    raise DataError(
        f"candidate(s) {culprits} fitted without outer fold {k} predict a non-finite value for "
        f"new {format_positions(rows)} (by position){why}, so no interval can be calibrated "
        "there; those rows' covariates or blocks lie far outside the training rows' values: "
        "check them for entry or unit errors, or leave them out of this prediction"
    )
