"""The cross-validation driver shared by the Newton engines (binomial, Poisson, multinomial).

Each fold's training rows get weight 1 and its held-out rows weight 0, so the
K fold problems of one candidate share the same standardised design and are
solved together by :func:`~pearlstats.engines.newton.batched_newton`, started
from the all-rows optimum. The engines differ only in their likelihood, how
they start, predict and report; :class:`NewtonEngine` carries those.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import SeparationError
from ..ledger import LedgerEntry
from ._common import (
    SEPARATION_RIDGES,
    EngineOutput,
    ScaledDesign,
    check_ridge,
    fold_penalty_weights,
    fold_rows,
    unfit_entry,
)
from .newton import NewtonResult, fold_start, separated_in_every_fold
from .standardised import standardised_columns
from .weighted_ridge import weighted_standardised_penalty

if TYPE_CHECKING:
    from ..design.candidates import Candidate

# A logistic fit whose training rows' linear predictors pass SEPARATION_ETA while its Newton
# steps stay above SEPARATION_STEP after SEPARATION_MIN_ITER iterations is separated.
SEPARATION_ETA = 30.0
SEPARATION_MIN_ITER = 15
SEPARATION_STEP = 0.5  # a converging Newton fit takes steps far below this by then
SEPARATED_CLASSES = "the classes are (quasi-)separated"  # why a logistic fit has no optimum

__all__ = ["NewtonEngine", "Observed", "newton_cv_predict", "newton_fit", "newton_notes",
           "ridge_ladder", "trouble_from_entries", "trouble_words", "separation_check"]


def separation_check(extreme_rows: Callable, ridge: float, applies: bool = True) -> Callable:
    """The ``stop`` callback of a logistic Newton fit: which problems are separated.

    Parameters
    ----------
    extreme_rows : callable
        ``extreme_rows(theta) -> bool (K,)``: whether a training row of each problem
        is beyond :data:`SEPARATION_ETA` (its linear predictor, or its log-odds against
        its own class).
    ridge : float
        A penalised fit always has a finite optimum: nothing is flagged.
    applies : bool
        False for models whose optimum always exists.

    Returns
    -------
    callable
        ``stop(theta, step, iteration)`` for :func:`~pearlstats.engines.newton.batched_newton`:
        flags problems with an extreme row still taking steps above :data:`SEPARATION_STEP`
        after :data:`SEPARATION_MIN_ITER` iterations.
    """
    def separated(theta, step, iteration):
        if not applies or ridge > 0 or iteration < SEPARATION_MIN_ITER:
            return np.zeros(theta.shape[0], dtype=bool)
        return extreme_rows(theta) & (np.abs(step).max(axis=1) > SEPARATION_STEP)

    return separated


@dataclass(frozen=True)
class NewtonEngine:
    """What distinguishes one Newton engine.

    Attributes
    ----------
    per_column : int
        Coefficients per design column (1, or C - 1 for multinomial).
    solve : callable
        ``solve(Z, rows, weights, column_penalty, ridge, intercept, theta0) -> NewtonResult``
        for 0/1 row *weights* (K, n), penalty weights per column (K, s) and the
        intercept's position in Z (or None); *theta0* None means the engine's own start.
    predict : callable
        ``predict(Z_rows, theta) -> predictions`` of one fold (rows,) or (rows, C).
    notes : callable
        ``notes(label, result, fold_ids, stage) -> list of LedgerEntry``.
    separates : bool
        Whether the maximum-likelihood estimate can fail to exist by separation
        (logistic models; Poisson ones whose counts are 0 on one side of a direction):
        only then does the ``separation`` option apply.
    cause : str
        Why such a fit has no optimum, for the ledger and the messages.
    warm_hessian : bool
        Whether the fold fits also start from the all-rows fit's last Hessian
        (``solve(..., hessian0=...)``): worth it where forming Hessians dominates.
    nested_start : bool
        Whether an all-rows fit starts from the all-rows optimum of the largest earlier
        candidate whose columns are among its own (:func:`_nested_start`). An engine that
        says so keeps its unpenalised fits' decisions (separation) independent of that start.
    reads_rows : bool
        Whether *solve* and *predict* read the standardised columns only by rows
        (``Z[rows]``, ``Z[0]``, ``Z.shape``): they then get a
        :class:`~pearlstats.engines.standardised.StandardisedColumns`, which forms those
        rows from the design when asked, instead of an (n, |S|) array.
    mean : callable, optional
        ``mean(eta)``: *predict* of a single linear predictor *eta*; given, the out-of-fold
        predictions are formed from products with the raw columns where the standardised
        columns allow it (:func:`_out_of_fold`).
    """

    per_column: int
    solve: Callable
    predict: Callable
    notes: Callable
    separates: bool = False
    cause: str = SEPARATED_CLASSES
    warm_hessian: bool = False
    nested_start: bool = False
    reads_rows: bool = False
    fold_hessians: bool = False
    mean: Callable | None = None


def newton_notes(label: str, result: NewtonResult, fold_ids: Sequence, stage: str,
                 separation_sign: str, cause: str = SEPARATED_CLASSES) -> list[LedgerEntry]:
    """Ledger rows of a batched Newton fit: separation, non-convergence, singular Hessians.

    *separation_sign* says what was seen (e.g. "a training row's linear predictor beyond 30
    in absolute value") and *cause* why no optimum exists (separated classes; for Poisson,
    counts of 0 on one side of a direction); in the cross-validation stage a separated or
    unconverged fit excludes the candidate, in a refit it is only reported.
    """
    excluded = stage == "cv"
    outcome = "given weight 0" if excluded else "reported"
    entries = [
        LedgerEntry(
            label, fold_ids[k], stage, "separation",
            f"still diverging after {SEPARATION_MIN_ITER} Newton steps with {separation_sign}: "
            f"{cause} and the maximum-likelihood estimate does not exist",
            f"{outcome}; separation='ridge' (or ridge > 0) keeps this candidate", excluded,
        )
        for k in np.flatnonzero(result.stopped)
    ]
    entries += [
        LedgerEntry(label, fold_ids[k], stage, "not converged",
                    f"Newton iterations did not converge in {result.iterations} steps", outcome,
                    excluded)
        for k in np.flatnonzero(~result.converged & ~result.stopped)
    ]
    entries += [
        LedgerEntry(label, fold_ids[k], stage, "rank deficient",
                    "singular Hessian (collinear columns)",
                    "Newton steps solved by minimum-norm least squares", False)
        for k in np.flatnonzero(result.singular & result.converged)
    ]
    return entries


def _fold_weights(rows: list[np.ndarray], n: int) -> np.ndarray:
    weights = np.ones((len(rows), n))
    for k, r in enumerate(rows):
        weights[k, r] = 0.0
    return weights


def ridge_ladder(start: float) -> list[float]:
    """Ridges tried in order for a separated candidate: *start*, then the larger ladder values."""
    return [float(start)] + [value for value in SEPARATION_RIDGES if value > start]


def _finite(*results: NewtonResult) -> bool:
    """Every problem reached its optimum: none separated, none stopped short, all finite."""
    return all(
        r.converged.all() and not r.stopped.any() and np.isfinite(r.theta).all() for r in results
    )


def _trouble(everything: NewtonResult, result: NewtonResult, ridge: float,
             cause: str = SEPARATED_CLASSES) -> str:
    """Where the fit of one candidate at *ridge* has no finite optimum, in words."""
    return trouble_words(bool(everything.stopped[0]), bool(not everything.converged[0]),
                         np.flatnonzero(result.stopped).tolist(),
                         np.flatnonzero(~result.converged).tolist(), ridge, cause)


def trouble_from_entries(entries: Sequence[LedgerEntry], ridge: float,
                         cause: str = SEPARATED_CLASSES) -> str:
    """:func:`_trouble`'s words from a candidate's Newton ledger rows (:func:`newton_notes`;
    fold None: the fit on all rows), so the dask fit, whose passes return ledger rows, names
    a separated candidate as the in-memory fit does."""
    def folds(kind: str) -> list:
        return sorted({e.fold for e in entries if e.kind == kind and e.fold is not None})

    def everywhere(kind: str) -> bool:
        return any(e.kind == kind and e.fold is None for e in entries)

    return trouble_words(everywhere("separation"), everywhere("not converged"),
                         folds("separation"), folds("not converged"), ridge, cause)


def trouble_words(separated: bool, unconverged: bool, separated_folds: list,
                  unconverged_folds: list, ridge: float, cause: str = SEPARATED_CLASSES) -> str:
    """Where a candidate has no finite optimum: on all rows (*separated*, *unconverged*) or in
    the folds listed, first what is worst, at *ridge* (*cause*: what separation means)."""
    if separated:
        where = f"{cause} on all rows"
    elif unconverged:
        where = "the fit on all rows did not converge"
    elif separated_folds:
        where = f"{cause} in fold(s) {separated_folds}"
    else:
        where = f"the fit did not converge in fold(s) {unconverged_folds}"
    if ridge > 0:
        return f"with ridge={ridge:g} {where}: the penalised fit did not reach its optimum"
    return f"without a ridge {where}: the maximum-likelihood estimate does not exist"


def _wide_reason(n_params: int, n_train: int, cause: str = SEPARATED_CLASSES) -> str:
    return (f"{n_params} coefficients but only {n_train} training rows in the smallest fold: the "
            f"fit interpolates them, so {cause} and the maximum-likelihood estimate does not "
            "exist")


def _raise_separation(label: str, everything: NewtonResult, result: NewtonResult,
                      ridge: float, cause: str = SEPARATED_CLASSES) -> None:
    if everything.stopped.any() or result.stopped.any():
        raise SeparationError(
            f"candidate {label!r}: {_trouble(everything, result, ridge, cause)}. Use "
            "separation='ridge' "
            f"(refit it with the smallest ridge of {list(SEPARATION_RIDGES)} that has a finite "
            "optimum) or separation='drop' (give it weight 0)"
        )


def _ladder_entry(label: str, stage: str, reason: str, ladder: list,
                  chosen: float | None) -> LedgerEntry:
    """The ledger row of a candidate moved up the ridge ladder (*chosen* None: no rung worked)."""
    where = "in every fold and on all rows" if stage == "cv" else "on all rows"
    if chosen is None:
        action = f"given weight 0: no ridge of {ladder[1:]} gave a finite optimum {where}"
    else:
        action = (f"refitted with ridge={chosen:g} {where} (the smallest of {ladder[1:]} with a "
                  "finite optimum)")
    excluded = chosen is None and stage == "cv"
    return LedgerEntry(label, None, stage, "separation", reason, action, excluded)


def _seen_by_training_rows(theta: np.ndarray, Z: np.ndarray, train: np.ndarray,
                           intercept: int | None) -> np.ndarray:
    """A rank-deficient fold fit's coefficients without the directions its training rows miss.

    The fold fits start from the all-rows optimum, and a Newton step never moves the
    coefficients along a direction the training rows do not see (the null space of their
    Hessian). Along such a direction, e.g. a word or a level that occurs only in the held-out
    rows, the fold fit kept the all-rows value, fitted *with* the held-out rows: their
    out-of-fold predictions reproduced their own labels. This keeps the fit on the training
    rows and takes the minimum-norm coefficients, on columns centred on the training rows (a
    column constant over them gets coefficient 0, as statsmodels' pinv gives a zero column).

    Parameters
    ----------
    theta : ndarray (d,)
        Coefficients on the standardised columns *Z*, ``p`` per linear predictor.
    Z : ndarray or StandardisedColumns (n, p)
        The candidate's standardised columns (centred on all rows when it has an intercept).
    train : ndarray of bool (n,)
    intercept : int or None
        Position of the intercept column.
    """
    p = Z.shape[1]
    gamma = theta.reshape(-1, p).T.copy()  # (p, m): one column per linear predictor
    Z_train = Z[train]
    shift = np.zeros(p)
    if intercept is not None:
        # Centred on the training rows: Z_train - shift; the intercept absorbs the constant.
        shift = Z_train.mean(axis=0)
        shift[intercept] = 0.0
        gamma[intercept] += shift @ gamma / Z[0][intercept]
        Z_train = Z_train - shift
    _, singular_values, vt = np.linalg.svd(Z_train, full_matrices=False)
    tolerance = singular_values.max() * max(Z_train.shape) * np.finfo(float).eps
    basis = vt[singular_values > tolerance]
    gamma = basis.T @ (basis @ gamma)
    if intercept is not None:
        gamma[intercept] -= shift @ gamma / Z[0][intercept]
    return gamma.T.reshape(theta.shape)


def _nested_start(optima: dict, columns: np.ndarray, per_column: int) -> np.ndarray | None:
    """A start for a candidate's all-rows fit from an earlier candidate's all-rows optimum.

    *optima* maps an earlier candidate's columns (a tuple) to its optimum on the standardised
    columns (``per_column`` blocks, class-major). The largest one whose columns are all among
    *columns* is laid out on them, with 0 for the others: the same linear predictors (each
    column is standardised alike in every candidate with an intercept), a point closer to the
    optimum than 0. Candidate sets are usually nested, so this saves the first, damped Newton
    steps. The optimum does not depend on the start.
    """
    position = {int(c): i for i, c in enumerate(columns)}
    inside = [cols for cols in optima if all(c in position for c in cols)]
    if not inside:
        return None
    cols = max(inside, key=len)
    start = np.zeros((per_column, len(columns)))
    start[:, [position[c] for c in cols]] = optima[cols].reshape(per_column, len(cols))
    return start.reshape(1, -1)


def _standardised_columns(X, S: np.ndarray, in_place: bool = False, known: dict | None = None):
    """``Z = (X[:, S] - center) / scale`` (C-ordered) and its standardisation.

    The standardisation is read from ``X[:, S]`` as indexing lays it out (column-major
    for an array *X*), so its rounding is that of the column reductions numpy makes on
    that layout; that copy is freed before the C-ordered one (``np.take``) is made and
    standardised in place: the values of ``design.transform`` with never more than one
    n x p copy of the candidate's columns.

    With *in_place*, Z is a :class:`~pearlstats.engines.standardised.StandardisedColumns`
    (the same values, formed a block of rows at a time when read) and no n x p copy is made;
    *known* then holds the column moments read for earlier candidates (each column is read
    once for all candidates).
    """
    S = np.flatnonzero(S) if S.dtype == bool else S  # np.take reads a mask as 0s and 1s
    if in_place:
        return standardised_columns(X, S, known)
    columns = X[:, S]
    design = ScaledDesign.from_design(columns)
    del columns
    Z = np.take(X, S, axis=1)  # C-ordered for an array and a ColumnStack alike
    Z -= design.center
    Z /= design.scale
    return Z, design


@dataclass(frozen=True)
class Observed:
    """Observation weights and an offset carried by the rows (``fit(weights=, offset=)``).

    A fit then maximises ``sum_i w_i l_i(y_i, x_i'b + o_i)`` (what statsmodels'
    ``GLM(..., freq_weights=w | var_weights=w, offset=o)`` maximises), divided by the
    weights' sum over its rows, and a ridge weighs each column by its *weighted* SD over
    the training rows (:mod:`pearlstats.engines.weighted_ridge`).

    Attributes
    ----------
    weights : ndarray (n,)
        Positive observation weights.
    offset : ndarray (n,) or None
        Added to every linear predictor.
    """

    weights: np.ndarray
    offset: np.ndarray | None = None

    def penalty(self, design: ScaledDesign, columns: np.ndarray,
                rows: list[np.ndarray] | None) -> np.ndarray:
        """Ridge weights on the standardised coefficients: (1, p) on all rows, else (K, p)."""
        return weighted_standardised_penalty(design, columns, self.weights, rows)

    def extra(self) -> dict:
        """The keyword the engine's *solve* takes for the offset (none without one)."""
        return {} if self.offset is None else {"offset": self.offset}


def _fit_folds(engine: NewtonEngine, Z, columns, y, design: ScaledDesign, rows, weights, ridge,
               nested: tuple | None = None, observed: Observed | None = None):
    """The all-rows fit and the fold fits of one candidate at one ridge.

    *columns* gives the candidate's original columns ``X[:, S]`` (read again only for a
    ridge's fold penalty weights).

    *nested* is ``(optima, columns)`` for :func:`_nested_start` (engines that use it, designs
    with an intercept); otherwise the all-rows fit starts at the engine's start.
    *observed*: the rows' observation weights and offset (*weights* are then the fold
    weights times them).
    """
    n = len(y)
    start0 = None
    if nested is not None and engine.nested_start and design.intercept is not None:
        start0 = _nested_start(*nested, engine.per_column)
    split = {"folds": rows} if engine.fold_hessians else {}
    extra = {} if observed is None else observed.extra()
    all_rows = np.ones((1, n)) if observed is None else observed.weights[None]
    if observed is not None and ridge > 0:
        penalty0 = observed.penalty(design, columns(), None)
    else:
        penalty0 = design.penalized[None].astype(float)
    everything = engine.solve(Z, y, all_rows, penalty0, ridge, design.intercept, start0,
                              **split, **extra)
    if everything.stopped[0]:
        return everything, separated_in_every_fold(everything, len(rows))
    if ridge > 0:
        penalty = (fold_penalty_weights(design, columns(), rows) if observed is None
                   else observed.penalty(design, columns(), rows))
    else:
        penalty = np.zeros((len(rows), Z.shape[1]))
    theta0 = fold_start(everything, len(rows))
    start = {}
    if theta0 is not None and everything.fold_values is not None:
        # Start at the all-rows fit's last evaluated point, where each fold's loss and
        # gradient were summed in the same pass: the fold fits' first pass is saved.
        point, f, g = everything.fold_values
        theta0 = np.repeat(point[None], len(rows), axis=0)
        start["known"] = (theta0, f, g)
    if engine.warm_hessian and theta0 is not None and everything.hessian is not None:
        hessian = everything.hessian
        start["hessian0"] = hessian if len(hessian) == len(rows) else np.repeat(
            hessian, len(rows), axis=0)
    return everything, engine.solve(Z, y, weights, penalty, ridge, design.intercept, theta0,
                                    **start, **extra)


def newton_cv_predict(
    engine: NewtonEngine,
    X: np.ndarray,
    y: np.ndarray,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
    ridge: float,
    tail: tuple = (),
    separation: str = "drop",
    ridges: Mapping | None = None,
    keep: dict | None = None,
    observed: Observed | None = None,
    moments: dict | None = None,
) -> EngineOutput:
    """Out-of-fold predictions of every candidate by *engine*; (n, J) + *tail*, NaN where excluded.

    Parameters
    ----------
    separation : {"drop", "ridge", "raise"}
        What to do with a candidate whose fit (on all rows or in some fold)
        separates or does not converge, for engines that can separate:
        give it weight 0 (``"drop"``), refit it in every fold and on all rows
        with the smallest ridge of :func:`ridge_ladder` for which all those
        fits reach a finite optimum (``"ridge"``), or raise
        :class:`~pearlstats.exceptions.SeparationError` naming it (``"raise"``).
    ridges : mapping, optional
        Label -> ridge a candidate starts from (the larger of it and *ridge*),
        e.g. the ridges an earlier fold draw on the same rows chose (re-runs
        on other rows do not pass the fit's: they choose their own).
    keep : dict, optional
        Filled with ``(columns, ridge) -> (result, design, same)``: each candidate's finite
        all-rows fit, for :func:`newton_fit`'s *start* (``same``: the fit started where
        :func:`newton_fit` starts, so it solved the refit's problem by the same steps).
    observed : Observed, optional
        The rows' observation weights and offset (engines whose *solve* takes ``offset=``).
    moments : dict, optional
        Filled with the moments of the columns of *X* read (column -> moments, see
        :meth:`~pearlstats.engines._common.ScaledDesign.from_columns`), for
        :func:`newton_fit`'s *moments* on the same *X*.

    Returns
    -------
    EngineOutput
        With ``ridges``, the ridge each candidate was fitted with.
    """
    ridge = check_ridge(ridge)
    rows = fold_rows(folds)
    n = len(y)
    weights = _fold_weights(rows, n)
    # distinct training rows, whatever their weights: copies add no rank
    n_train_min = int(weights.sum(axis=1).min())
    if observed is not None:
        weights *= observed.weights
    predictions = np.full((n, len(candidates)) + tail, np.nan)
    failed = np.zeros(len(candidates), dtype=bool)
    used = np.full(len(candidates), ridge)
    entries: list[LedgerEntry] = []
    optima: dict = {}  # columns -> all-rows optimum, for nested starts
    # column -> its moments, read once for all candidates
    moments = {} if moments is None else moments
    for j, candidate in enumerate(candidates):
        requested = max(ridge, float((ridges or {}).get(candidate.label, 0.0)))
        start = used[j] = requested
        S = candidate.columns
        size = S.size * engine.per_column
        # Recorded before anything of the candidate is formed: a p > n block costs nothing.
        wide = separation == "ridge" and engine.separates and start <= 0 and size >= n_train_min
        if wide:
            # With at least as many coefficients as training rows a logistic fit separates, so
            # the separation default starts this candidate on the ladder instead of dropping it.
            start = SEPARATION_RIDGES[0]
        entry = unfit_entry(candidate.label, size, n_train_min, start, len(rows) + 1)
        if entry is not None:
            failed[j] = True
            entries.append(entry)
            continue
        Z = None  # the previous candidate's columns go before this one's are read
        Z, design = _standardised_columns(X, S, engine.reads_rows, moments)
        ladder = ridge_ladder(start) if separation == "ridge" and engine.separates else [start]
        for value in ladder:
            everything, result = _fit_folds(engine, Z, lambda S=S: X[:, S], y, design, rows,
                                            weights, value, (optima, S), observed)
            if separation == "raise" and engine.separates:
                _raise_separation(candidate.label, everything, result, value, engine.cause)
            if value == start:
                first = (everything, result)
            if _finite(everything, result):
                break
        if _finite(everything) and design.intercept is not None:
            optima[tuple(int(c) for c in S)] = everything.theta[0]
        if keep is not None and _finite(everything):
            nested = engine.nested_start and design.intercept is not None
            keep[tuple(int(c) for c in S), float(value)] = (
                replace(everything, hessian=None), design, not nested)
        if wide or value != start:
            reason = (_wide_reason(size, n_train_min, engine.cause) if wide
                      else _trouble(*first, start, engine.cause))
            tried = [requested] + ladder if wide else ladder
            entries.append(_ladder_entry(candidate.label, "cv", reason, tried,
                                         value if _finite(everything, result) else None))
            used[j] = value
        notes = engine.notes(candidate.label, result, list(range(len(rows))), "cv")
        entries.extend(notes)
        if any(note.excluded for note in notes):
            failed[j] = True
            continue
        thetas = [
            _seen_by_training_rows(theta, Z, weights[k] > 0, design.intercept)
            if result.singular[k] else theta for k, theta in enumerate(result.theta)
        ]
        _out_of_fold(engine, Z, thetas, rows, predictions[:, j],
                     None if observed is None else observed.offset)
    return EngineOutput(predictions, failed, entries, used)


# Rows read at a time for the out-of-fold predictions (:func:`_out_of_fold`).
_PREDICT_ROWS = 8192


def _out_of_fold(engine: NewtonEngine, Z, thetas: list, rows: list, out: np.ndarray,
                 offset: np.ndarray | None = None) -> None:
    """``out[rows[k]] = engine.predict(Z[rows[k]], thetas[k])`` for every fold k.

    With *offset* (engines with ``mean``), each row's linear predictor gets its offset.

    Z is read by consecutive blocks of rows (a row slice of the design is read in place,
    where gathering a fold's scattered rows from every block of a column stack cost a
    copy per row and block); each block's rows of fold k are then taken from it.
    """
    fold_of = np.full(len(out), -1)
    for k, r in enumerate(rows):
        fold_of[r] = k
    if engine.mean is not None and getattr(Z, "folds", False):
        # Every fold's linear predictors of a block from the raw columns read in place (K
        # times the products needed, still less than standardising the block's rows).
        theta = np.stack(thetas)
        for start in range(0, len(out), _PREDICT_ROWS):
            block = slice(start, min(len(out), start + _PREDICT_ROWS))
            held = np.flatnonzero(fold_of[block] >= 0)
            eta = Z.times(theta, block)
            eta = eta[fold_of[block][held], held]
            if offset is not None:
                eta += offset[start + held]
            out[start + held] = engine.mean(eta)
        return
    if offset is not None:
        for r, theta in zip(rows, thetas):
            out[r] = engine.mean(Z[r] @ theta + offset[r])
        return
    for start in range(0, len(out), _PREDICT_ROWS):
        block = slice(start, min(len(out), start + _PREDICT_ROWS))
        Z_rows, labels = Z[block], fold_of[block]
        for k in np.unique(labels[labels >= 0]):
            mine = labels == k
            out[start + np.flatnonzero(mine)] = engine.predict(Z_rows[mine], thetas[k])


def _known_start(start: tuple | None, design: ScaledDesign) -> tuple | None:
    """``(result, same)`` of *start* where its standardisation is *design*'s, else None."""
    if start is None:
        return None
    result, known, same = start
    if (known.intercept != design.intercept or not np.array_equal(known.center, design.center)
            or not np.array_equal(known.scale, design.scale)):
        return None
    return result, same


def newton_fit(
    engine: NewtonEngine,
    X: np.ndarray,
    y: np.ndarray,
    columns: np.ndarray,
    ridge: float,
    separation: str = "drop",
    label: str = "",
    start: tuple | None = None,
    observed: Observed | None = None,
    moments: dict | None = None,
) -> tuple[ScaledDesign, NewtonResult, list]:
    """Fit one candidate on all rows (coefficients on the standardised columns of the design).

    *start* is the cross-validation's all-rows fit of this candidate at *ridge* (an entry of
    :func:`newton_cv_predict`'s *keep*): where it solved this very problem (same
    standardisation, same start and steps) it is the answer; otherwise the fit starts at its
    optimum (a Newton step or none), with the same convergence rule.

    With ``separation="ridge"`` a fit without a finite optimum is redone with the next
    ridges of :func:`ridge_ladder` (the third value returned holds the ledger row saying
    so); ``"raise"`` raises :class:`~pearlstats.exceptions.SeparationError` instead.
    *observed*: the rows' observation weights and offset (see :class:`Observed`).
    *moments*: the column moments the cross-validation on this very *X* read
    (:func:`newton_cv_predict`'s), not read again: the same standardisation, without a pass
    over the candidate's columns (on small data, where a nested SE refits thousands of
    candidates, that pass cost as much as the rest of the refit).
    """
    ridge = check_ridge(ridge)
    columns = np.asarray(columns)
    Z, design = _standardised_columns(X, columns, engine.reads_rows, moments)
    row_weights = np.ones((1, len(y))) if observed is None else observed.weights[None]
    extra = {} if observed is None else observed.extra()

    def penalty(value: float) -> np.ndarray:
        if observed is None or value == 0:
            return design.penalized[None].astype(float)
        return observed.penalty(design, X[:, columns], None)

    ladder = ridge_ladder(ridge) if separation == "ridge" and engine.separates else [ridge]
    known = _known_start(start, design)
    for value in ladder:
        if value == ridge and known is not None and known[1]:
            result = known[0]  # the cross-validation solved this problem: nothing to redo
        else:
            theta0 = known[0].theta if value == ridge and known is not None else None
            result = engine.solve(Z, y, row_weights, penalty(value), value, design.intercept,
                                  theta0, **extra)
        if separation == "raise" and engine.separates:
            _raise_separation(label, result, result, value, engine.cause)
        if value == ridge:
            first = result
        if _finite(result):
            break
    entries = []
    if value != ridge:
        entries.append(_ladder_entry(label, "refit", _trouble(first, first, ridge, engine.cause),
                                     ladder, value if _finite(result) else None))
    return design, result, entries
