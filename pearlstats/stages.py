"""The stages of a PEARL fit, each a function returning a small frozen value.

``design -> candidates -> folds -> cross_validate -> weights``:

* :func:`prepare_rows` checks the data, resolves and aligns the blocks, drops
  incomplete rows when asked, and builds the :class:`~pearlstats.design.spec.Design`;
* :func:`build_pool` lists the candidate models (and the single-block and
  fusion candidates the paper's baselines need);
* :func:`assign_folds` draws the cross-validation folds;
* :func:`cross_validate` computes every candidate's out-of-fold predictions;
* :func:`solve_stage_weights` solves the simplex weights (:mod:`pearlstats.weight_stage`
  runs it over the fit's repeated fold draws and applies its shrinkage).

:func:`pearlstats.fit`, the nested (honest) risk, the refitting bootstrap and
the experiment runner call these same functions; nothing else fits candidates.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from patsy import EvalEnvironment

from ._lazy import lazy_module
from ._warnings import warn
from .design.candidates import Candidate, build_candidates
from .design.data import (
    Block,
    as_block,
    check_block_information,
    check_block_values,
    check_no_dates,
    count_rows,
    data_index,
    resolve_blocks,
    split_data,
    warn_durations,
)
from .design.folds import check_class_coverage, make_folds
from .design.formula import covariate_row_variables, expression_missing_rows, response_values
from .design.sparse import finite_rows
from .design.spec import Design, build_design
from .design.splitters import Splits
from .engines._common import (
    SEPARATION_RIDGES,
    EngineOutput,
    infeasible_entry,
    separation_reason,
)
from .engines.intercept import intercept_fit, intercept_from_mean, intercept_predict
from .exceptions import (
    AllCandidatesFailedError,
    CandidateFailureWarning,
    DataError,
    FoldError,
    SeparationWarning,
)
from .families import EncodedResponse
from .ledger import FailureLedger, LedgerEntry
from .weights.baselines import COVARIATES_ONLY
from .weights.solvers import WeightSolution, solve_weights

if TYPE_CHECKING:
    from .design.formula import FormulaSpec
    from .families import Family
    from .weights.losses import Loss

joblib = lazy_module("joblib")  # parallel workers only when asked for (n_jobs)

__all__ = [
    "FitState",
    "WeightOptions",
    "Prepared",
    "CandidatePool",
    "prepare_rows",
    "incomplete_rows",
    "build_pool",
    "assign_folds",
    "cross_validate",
    "cross_validate_splits",
    "solve_stage_weights",
    "check_some_candidate_fitted",
    "duplicate_entries",
    "worker_count",
    "complement_rows",
]


@dataclass(frozen=True)
class Prepared:
    """The design stage's output.

    Attributes
    ----------
    design : Design
    response : EncodedResponse
    dropped_rows : ndarray of int
        Positions of the rows ``missing="drop"`` removed.
    row_labels : pandas.Index
        Labels of the rows kept: the data's index labels for a DataFrame, positions otherwise.
    dropped_labels : pandas.Index or None
        Labels (as *row_labels*) of the rows ``missing="drop"`` removed.
    """

    design: Design
    response: EncodedResponse
    dropped_rows: np.ndarray
    row_labels: pd.Index
    dropped_labels: pd.Index | None = None


@dataclass(frozen=True)
class CandidatePool:
    """The candidate models, and the baseline-only ones appended after them.

    Attributes
    ----------
    pool : tuple of Candidate
        The candidates PEARL weights.
    extras : tuple of Candidate
        Single-block and fusion candidates the baselines need but the pool lacks.
    """

    pool: tuple[Candidate, ...]
    extras: tuple[Candidate, ...]

    @property
    def everything(self) -> list[Candidate]:
        return list(self.pool) + list(self.extras)


@dataclass(frozen=True)
class WeightOptions:
    """How a fit turns out-of-fold predictions into weights.

    Attributes
    ----------
    cv_repeats : int
        Fold draws whose out-of-fold losses the weights minimise together.
    shrinkage : tuple or None
        ``(amount, target)`` of ``weight_shrinkage`` and ``shrinkage_target``; None: no shrinkage.
    """

    cv_repeats: int = 1
    shrinkage: tuple | None = None


@dataclass(frozen=True)
class FitState:
    """Everything the stages of one fit produced: what a results object is built from.

    Attributes
    ----------
    family, loss
        The family (with its engine and statsmodels refit) and the weights' loss.
    design : Design
    response : EncodedResponse
    candidates : CandidatePool
    folds : ndarray of int
    cv_spec
        The ``cv`` argument as given (an int, "loo" or fold labels).
    seed : int
    ridge : float
    output : EngineOutput
        Out-of-fold predictions of the pool then the extras.
    solution : WeightSolution
    ledger : tuple of LedgerEntry
    representations : Representations or None
        A private copy of the fitted learners (refitting the caller's object
        does not change this fit).
    dropped_rows : ndarray of int
    honest : int or False
        Outer folds of the nested cross-validation behind ``res.honest``.
    row_labels : pandas.Index or None
        Labels of the fit's rows (:attr:`Prepared.row_labels`); None means positions.
    dropped_labels : pandas.Index or None
        Labels of the rows ``missing="drop"`` removed (:attr:`Prepared.dropped_labels`).
    weight_options : WeightOptions
        Fold draws and shrinkage of the weight stage, which re-runs of the procedure repeat.
    honest_se : "naive" or NestedSE
        How ``res.honest``'s SEs are estimated (:mod:`pearlstats.honest_se`).
    partitions : PartitionedRows or None
        For a fit on dask data, where its rows live and what the passes over them
        computed (:mod:`pearlstats.distributed.state`); then ``design.X``,
        ``response.y``, ``folds`` and ``output.predictions`` are lazy dask arrays.
        None for rows in memory.
    groups : ndarray of int or None
        Group code of each row (``groups=``): whole groups are what the cluster bootstrap
        draws when the folds were dealt from them.
    progress : bool or None
        The fit's ``progress=`` (None: the package option), for the honest re-runs.
    """

    family: object
    loss: object
    design: Design
    response: EncodedResponse
    candidates: CandidatePool
    folds: np.ndarray
    cv_spec: object
    seed: int
    ridge: float
    output: EngineOutput
    solution: WeightSolution
    ledger: tuple
    representations: object
    dropped_rows: np.ndarray
    honest: int | bool = 5
    row_labels: pd.Index | None = None
    dropped_labels: pd.Index | None = None
    weight_options: WeightOptions = WeightOptions()
    honest_se: object = "naive"
    partitions: object = None
    groups: np.ndarray | None = None
    progress: bool | None = None

    def null_predictions(self, n: int, offset: np.ndarray | None = None) -> np.ndarray:
        """The summary's Null reference for *n* new rows: the family's intercept-only model
        fitted on this fit's rows (with their observation weights and offsets), then given
        the new rows' *offset*: means (n,) or class probabilities (n, C)."""
        name = self.family.name
        if self.partitions is not None:  # dask rows: unweighted, no offset; their mean
            parameter = intercept_from_mean(name, self.partitions.fitted.mean_response)
        else:
            response = self.response
            parameter = intercept_fit(name, response.y, response.row_weights, response.offset,
                                      response.n_classes or None)
        return intercept_predict(name, parameter, n, offset)


def _missing_rows(frame: pd.DataFrame, columns) -> np.ndarray:
    """Rows with NaN/None (any dtype) or inf (numeric columns) in the given frame columns."""
    bad = np.zeros(len(frame), dtype=bool)
    for column in columns:
        values = frame[column]
        bad |= pd.isna(values).to_numpy()
        if values.dtype.kind in "fc":
            bad |= np.isinf(values.to_numpy())
    return bad


def _rows_of(name: str, value, keep: np.ndarray):
    """Rows *keep* of a block in a dict ``data`` as given (DataFrame, sparse, array, lists).

    A block whose row count is not the data's is left for the row-count check to name.
    """
    if isinstance(value, (pd.DataFrame, pd.Series)):
        return value.iloc[np.flatnonzero(keep)] if len(value) == len(keep) else value
    values = as_block(name, value).values  # nested lists and coo matrices have no [mask]
    return values[keep] if values.shape[0] == len(keep) else values


def _drop_rows(frame, embedded, blocks: dict, bad: np.ndarray):
    keep = ~bad
    frame = frame.loc[keep].reset_index(drop=True)
    embedded = {name: _rows_of(name, value, keep) for name, value in embedded.items()}
    blocks = {
        name: Block(b.name, b.values[keep], b.column_names, b.labels) for name, b in blocks.items()
    }
    return frame, embedded, blocks


def drop_missing_inputs(frame: pd.DataFrame, embedded: dict,
                        blocks: Any) -> tuple[pd.DataFrame, dict, np.ndarray]:
    """The rows ``missing="drop"`` removes before a ``Representations`` maps them to blocks.

    A ``Representations`` cannot transform a missing input (a None/NaN text, say), so the rows
    with one in a column it reads are dropped first, at fit and at ``evaluate`` alike.

    Parameters
    ----------
    frame : DataFrame
        The data's one-dimensional columns.
    embedded : dict
        2-D values of a dict ``data``.
    blocks : mapping, Representations or None
        The ``blocks=`` given; anything but a ``Representations`` drops nothing.

    Returns
    -------
    frame, embedded
        Without the dropped rows.
    bad : ndarray of bool
        The dropped rows among those given.
    """
    if not hasattr(blocks, "transform") or isinstance(blocks, Mapping):
        return frame, embedded, np.zeros(len(frame), dtype=bool)
    # not getattr(..., []): an unfitted object's NotFittedError is an AttributeError
    columns = blocks.input_columns if hasattr(type(blocks), "input_columns") else []
    raw = [c for c in columns if c in frame.columns]
    bad = _missing_rows(frame, raw)
    frame, embedded, _ = _drop_rows(frame, embedded, {}, bad)
    return frame, embedded, bad


def incomplete_rows(formula: FormulaSpec, frame: pd.DataFrame, row_variables: Sequence[str],
                    blocks: Mapping[str, Block], eval_env: EvalEnvironment,
                    response: bool = True) -> np.ndarray:
    """The rows ``missing="drop"`` removes (a boolean mask), at fit and at ``evaluate``.

    NaN/None in a column the formula reads (covariates and, with *response*, the response),
    a NaN/inf in a block's row, or an expression without a value there (``np.log(x)`` of
    ``x <= 0``). ``predict`` reads no response: a new row whose response is unknown (NaN) is
    complete there.
    """
    responses = formula.response_variables if response else ()
    used = [c for c in (*row_variables, *responses) if c in frame.columns]
    bad = _missing_rows(frame, used)
    for block in blocks.values():
        bad |= ~finite_rows(block.values)
    if not bad.all():
        # np.log(x) of x <= 0: no missing column, but no value either
        kept_rows = frame.loc[~bad]
        missing = expression_missing_rows(formula, kept_rows, eval_env, response)
        bad[np.flatnonzero(~bad)[missing]] = True
    return bad


def prepare_rows(
    formula: FormulaSpec,
    data: Any,
    blocks: Any,
    family: Family,
    missing: str,
    eval_env: EvalEnvironment,
    unusable: np.ndarray | None = None,
) -> Prepared:
    """The design stage: rows and blocks checked, aligned and turned into a design.

    Parameters
    ----------
    formula : FormulaSpec
    data : DataFrame or dict
    blocks : mapping, Representations or None
    family : Family
        Encodes the response.
    missing : {"raise", "drop"}
    eval_env : patsy.EvalEnvironment
    unusable : ndarray of int, optional
        Positions of rows whose observation weight or offset is NaN (with ``missing="drop"``,
        see :class:`~pearlstats.observation_weights.ObservationWeights`): dropped and recorded
        with the rows missing a covariate, as statsmodels drops them.

    Returns
    -------
    Prepared
    """
    frame, embedded = split_data(data)
    if formula.response in embedded:
        raise DataError(
            f"response {formula.response!r} is a 2-D array "
            "in data; the response must be one value per row"
        )
    n_given = len(frame)
    kept = np.arange(n_given)
    frame, row_variables = covariate_row_variables(formula, frame, eval_env)
    check_no_dates(frame, row_variables)
    warn_durations(data, (formula.response, *row_variables))
    if missing == "drop":
        frame, embedded, bad = drop_missing_inputs(frame, embedded, blocks)
        kept = kept[~bad]
    resolved = resolve_blocks(formula.block_names, frame, embedded, blocks, index=data_index(data))
    n = count_rows(frame, resolved)
    if missing == "drop":
        bad = incomplete_rows(formula, frame, row_variables, resolved, eval_env)
        if unusable is not None:  # positions among the rows given; *kept* are those still here
            bad |= np.isin(kept, unusable)
        if bad.any():
            frame, _, resolved = _drop_rows(frame, {}, resolved, bad)  # embedded: resolved
            kept = kept[~bad]
            n = len(frame)
    given = data_index(data)
    given = pd.RangeIndex(n_given) if given is None else given
    dropped = complement_rows(kept, n_given)
    labels = given[kept]
    # The checks below name a bad row by its label in the data (a position among the rows
    # left would be wrong once missing="drop" has dropped some).
    frame = frame.set_axis(labels)
    for block in resolved.values():
        check_block_values(block.name, block.values, n, labels)
    check_block_information(resolved)
    # family.check_fit_response comes once the offset is attached (fitting.py): a constant
    # y may vary net of its offset
    response = family.encode(_integers_again(response_values(formula, frame, eval_env), data,
                                             formula.response))
    design = build_design(formula, frame, resolved, eval_env)
    return Prepared(design, response, dropped, labels, given[dropped])


def _integers_again(values: pd.Series, data: Any, name: str) -> pd.Series:
    """A nullable-integer response column (``Int64``) with missing values was read as floats,
    so that those rows could be dropped; once they are, its values are integers again, as
    without missing values (multinomial classes 1, 2, 3, not 1.0, 2.0, 3.0)."""
    original = data.get(name) if hasattr(data, "get") else None
    dtype = getattr(original, "dtype", None)
    if (not isinstance(dtype, pd.api.extensions.ExtensionDtype)
            or not pd.api.types.is_integer_dtype(dtype) or values.dtype.kind != "f"):
        return values
    return values.astype(dtype.numpy_dtype)


def complement_rows(rows: np.ndarray, n: int) -> np.ndarray:
    """Positions in ``range(n)`` not in *rows*, sorted (a mask: np.setdiff1d sorts n values)."""
    mask = np.ones(n, dtype=bool)
    mask[rows] = False
    return np.flatnonzero(mask)


def _baseline_candidates(pool: list[Candidate], design: Design) -> list[Candidate]:
    """Single-block, fusion and covariates-only candidates the baselines need but the pool
    lacks (the last: the intercept and covariates alone; the intercept-only candidate when the
    formula has no covariate, none without an intercept either)."""
    have = {candidate.blocks for candidate in pool if candidate.label == "+".join(candidate.blocks)}
    covariates = np.arange(design.n_covariates)
    names = list(design.block_slices)
    wanted = [(name,) for name in names] + [tuple(names)]
    extra = []
    for blocks in dict.fromkeys(wanted):
        if blocks in have:
            continue
        columns = [covariates] + [
            np.arange(design.block_slices[b].start, design.block_slices[b].stop) for b in blocks
        ]
        extra.append(Candidate("+".join(blocks), blocks, np.concatenate(columns).astype(int)))
    if design.n_covariates and all(candidate.blocks for candidate in pool):
        extra.append(Candidate(COVARIATES_ONLY, (), covariates))
    return extra


def build_pool(
    design: Design, candidates: str | Sequence[str | Sequence[str]], max_candidates: int
) -> CandidatePool:
    """The candidate stage: the pool PEARL weights and the baselines' extra candidates."""
    pool = build_candidates(
        candidates, design.block_slices, design.column_names, design.n_covariates, max_candidates
    )
    return CandidatePool(tuple(pool), tuple(_baseline_candidates(pool, design)))


def assign_folds(
    cv: int | str | np.ndarray | Sequence,
    response: EncodedResponse,
    seed: int | np.random.SeedSequence | None,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """The fold stage: K-fold labels (stratified by class for classification). *groups*
    (codes) are those the folds keep whole, for the advice when a fold lacks a class.

    Raises
    ------
    FoldError
        A fold specification that cannot be used, or a fold without some class.
    """
    strata = response.y.astype(np.intp) if response.classes is not None else None
    folds = make_folds(cv, len(response.y), seed=seed, strata=strata)
    if strata is not None:
        check_class_coverage(strata, folds, response.classes, groups=groups)
    return folds


def worker_count(n_jobs: int | None, n_tasks: int) -> int:
    """Workers to start: *n_jobs* capped at the number of tasks (and at the cores for -1)."""
    if n_jobs in (None, 1) or n_tasks < 2:
        return 1
    requested = joblib.effective_n_jobs(n_jobs)  # honours joblib.parallel_config
    if n_jobs < 0:
        requested = min(requested, os.cpu_count() or 1)
    return max(1, min(requested, n_tasks))


def cross_validate(
    family: Family,
    X: np.ndarray,
    response: EncodedResponse,
    candidates: Sequence[Candidate],
    folds: np.ndarray,
    *,
    loo: bool = False,
    ridge: float = 0.0,
    n_jobs: int | None = None,
) -> EngineOutput:
    """The cross-validation stage: every candidate's out-of-fold predictions.

    Parameters
    ----------
    family : Family
        Its engine computes the predictions (batched over candidates and folds).
    X : ndarray (n, p)
    response : EncodedResponse
    candidates : sequence of Candidate
    folds : ndarray of int (n,)
    loo : bool
        Leave-one-out (closed form where the family has one).
    ridge : float
    n_jobs : int, optional
        Parallel workers over chunks of candidates (joblib), capped at the
        number of chunks.

    Returns
    -------
    EngineOutput
        Predictions (NaN for failed candidates), failure flags, ledger entries
        and (logistic and Poisson families) the ridge each candidate was
        fitted with. A separated logistic candidate is handled by the
        family's ``separation`` policy, starting from its
        ``candidate_ridges`` (see :class:`~pearlstats.families.Family`);
        the re-runs of the procedure clear those first
        (:func:`~pearlstats.weight_stage.cross_validate_draws`), so each
        chooses its ridges on its own rows.
    """
    candidates = list(candidates)

    def run(chunk):
        if loo:
            return family.loo_predict(X, response, chunk, ridge)
        return family.cv_predict(X, response, chunk, folds, ridge)

    workers = worker_count(n_jobs, len(candidates))
    if workers == 1:
        return run(candidates)
    splits = np.array_split(np.arange(len(candidates)), min(len(candidates), 4 * workers))
    chunks = [[candidates[i] for i in part] for part in splits if len(part)]
    outputs = joblib.Parallel(n_jobs=workers)(joblib.delayed(run)(chunk) for chunk in chunks)
    ridges = None
    if all(out.ridges is not None for out in outputs):
        ridges = np.concatenate([out.ridges for out in outputs])
    return EngineOutput(
        np.concatenate([out.predictions for out in outputs], axis=1),
        np.concatenate([out.failed for out in outputs]),
        [entry for out in outputs for entry in out.entries],
        ridges,
    )


def cross_validate_splits(
    family: Family,
    X: np.ndarray,
    response: EncodedResponse,
    candidates: Sequence[Candidate],
    splits: Splits,
    *,
    ridge: float = 0.0,
) -> EngineOutput:
    """Out-of-fold predictions of splits that are not a partition (``TimeSeriesSplit``).

    Each split's test rows are predicted by every candidate fitted on that split's
    training rows alone, as the candidates are refitted on all rows
    (``family.fit_params``: the same estimates, ridges and separation policy); the
    batched engines assume that a fold trains on every row it does not test, which
    these splits do not. Rows no split tests get NaN. A candidate infeasible on some
    split's training rows (more parameters than rows, no ridge), or predicting a
    non-finite value, fails (NaN, weight 0, a ledger row).

    Returns
    -------
    EngineOutput
        As :func:`cross_validate`, ``ridges`` None.
    """
    candidates = list(candidates)
    if response.classes is not None:
        for k, train in enumerate(splits.train):
            absent = np.setdiff1d(np.arange(len(response.classes)), response.y[train])
            if absent.size:
                raise FoldError(
                    f"the training rows of split {k} contain no row of class(es) "
                    f"{[response.classes[c] for c in absent]}; a candidate trained without a "
                    "class cannot predict it (choose splits whose training rows hold every class)"
                )
    predictions = None
    failed = np.zeros(len(candidates), dtype=bool)
    entries: list[LedgerEntry] = []
    for k, train in enumerate(splits.train):
        test = np.flatnonzero(splits.folds == k)
        sub = response.subset(train)
        for j, candidate in enumerate(candidates):
            entry = None if failed[j] else infeasible_entry(candidate.label, len(candidate.columns),
                                                           len(train), ridge)
            if failed[j] or entry is not None:
                failed[j] = True
                entries += [] if entry is None else [entry]
                continue
            params, notes = family.fit_params(X[train], sub, candidate.columns, ridge,
                                              candidate.label)
            entries.extend(notes)
            new = X[test][:, candidate.columns]
            values = (family.predict(params, new) if response.offset is None
                      else family.predict_with_offset(params, new, response.offset[test]))
            if predictions is None:
                predictions = np.full((len(response.y), len(candidates)) + np.shape(values)[1:],
                                      np.nan)
            predictions[test, j] = values
            if not np.isfinite(values).all():
                failed[j] = True
                entries.append(LedgerEntry(candidate.label, k, "cv", "non-finite",
                                           f"non-finite predictions for split {k}'s test rows",
                                           "given weight 0", True))
    if predictions is None:  # every candidate infeasible on the first split
        predictions = np.full((len(response.y), len(candidates)), np.nan)
    predictions[:, failed] = np.nan
    return EngineOutput(predictions, failed, entries, None)


def _warn_ridge_refits(output: EngineOutput, labels, family: str) -> None:
    """One warning listing the pool's candidates refitted with a ridge as they have no
    maximum-likelihood estimate (their classes separate, or Poisson counts of 0 do)."""
    if output.ridges is None:
        return
    moved = {entry.candidate for entry in output.entries
             if entry.kind == "separation" and entry.stage == "cv" and not entry.excluded}
    refits = [(label, output.ridges[j]) for j, label in enumerate(labels) if label in moved]
    if refits:
        listed = ", ".join(f"{label!r} (ridge={value:g})" for label, value in refits)
        warn(
            f"{len(refits)} candidate(s) have no maximum-likelihood estimate "
            f"({separation_reason(family)}) and were refitted in every fold and on all rows "
            f"with the smallest ridge of {list(SEPARATION_RIDGES)} giving a finite optimum: "
            f"{listed}; see results.failures. "
            "separation='drop' gives them weight 0 instead",
            SeparationWarning,
        )


def warn_cv_failures(output: EngineOutput, labels: Sequence[str], family: str) -> None:
    """The fit's warnings about its cross-validation: one for the candidates refitted with a
    ridge as they have no finite optimum, one per pool candidate that failed (*labels*: the
    pool's; *family*: its name, for the words).
    """
    _warn_ridge_refits(output, labels, family)
    for label in [label for label, bad in zip(labels, output.failed[:len(labels)]) if bad]:
        warn(
            f"candidate {label!r} failed in cross-validation and gets weight 0; see "
            "results.failures",
            CandidateFailureWarning,
        )


def solve_stage_weights(
    output: EngineOutput,
    n_pool: int,
    y: np.ndarray,
    loss: Loss,
    labels: Sequence[str],
    *,
    warn_failures: bool = True,
    context: str | None = None,
) -> tuple[WeightSolution, list[LedgerEntry]]:
    """The weight stage: simplex weights over the pool's out-of-fold predictions.

    Parameters
    ----------
    output : EngineOutput
        Of the pool followed by the baseline extras; the first *n_pool* columns are weighted.
    n_pool : int
    y : ndarray
    loss : Loss
    labels : sequence of str
        Pool labels, for warnings and the ledger.
    warn_failures : bool
        Warn once per candidate that failed, and once for all candidates
        refitted with a ridge because their classes separate (nested fits stay quiet:
        their failures are in their ledgers). A weight solve that is not certified
        warns whatever this says, naming *context*, and its gap is in the solution.
    context : str, optional
        Where this weight stage runs, for :func:`~pearlstats.weights.solvers.solve_weights`.

    Returns
    -------
    solution : WeightSolution
    entries : list of LedgerEntry
        The cross-validation entries plus one per merged duplicate group.

    Raises
    ------
    AllCandidatesFailedError
        When no candidate could be fitted.
    """
    failed = output.failed[:n_pool]
    if warn_failures:
        warn_cv_failures(output, labels, loss.family)
    check_some_candidate_fitted(output.entries, failed)
    solution = solve_weights(output.predictions[:, :n_pool], y, loss, active=~failed,
                             context=context)
    return solution, list(output.entries) + duplicate_entries(solution.merged, labels)


def check_some_candidate_fitted(entries: Sequence[LedgerEntry], failed: np.ndarray) -> None:
    """Raise AllCandidatesFailedError, with the ledger, when every weighted candidate failed.

    *failed* is the weighted candidates' mask; *entries* the cross-validation's ledger rows.
    """
    if not failed.all():
        return
    ledger = FailureLedger()
    ledger.extend(entries)
    first = next(entry for entry in entries if entry.excluded)
    raise AllCandidatesFailedError(
        f"all {len(failed)} candidates failed in cross-validation "
        f"(first: {first.candidate!r}, {first.kind}: {first.reason}; {first.action})",
        ledger.to_frame(),
    )


def duplicate_entries(merged: Sequence[Sequence[int]], labels: Sequence) -> list[LedgerEntry]:
    """One ledger row per group of candidates (positions in *labels*) merged for the weight
    solver."""
    entries = []
    for group in merged:
        members = [labels[i] for i in group]
        entries.append(LedgerEntry(
            members[0], None, "weights", "duplicate",
            f"candidates {members} have identical out-of-fold predictions",
            "merged for the weight solver; their weight is split equally", False,
        ))
    return entries
