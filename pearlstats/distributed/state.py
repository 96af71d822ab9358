"""A fit on dask data as the stage values a :class:`~pearlstats.PearlResults` reads.

:func:`dask_fit_state` runs the passes of :func:`~pearlstats.distributed.fit.fit_partitions`
and returns the :class:`~pearlstats.stages.FitState` an in-memory fit would give, except
that its row-sized values are lazy dask arrays with one chunk per partition: the design
``X`` (n, p), the response ``y``, the fold labels and the out-of-fold predictions (n, J).
The results compute their tables from these by reductions (a pass over the partitions
each, where the data lives); nothing row-sized is gathered on the client. What needs the
rows in one process, and the statsmodels refits, the results ask of
:class:`PartitionedRows` (``state.partitions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.partitions import hash_folds
from ..design.spec import Design
from ..engines._common import EngineOutput
from ..exceptions import OptionError
from ..families import EncodedResponse
from ..in_memory_only import LOSSES
from ..inference import aps_prediction_sets, cv_plus_interval
from ..nested import row_uniforms
from ..stages import FitState, WeightOptions, build_pool, duplicate_entries, warn_cv_failures
from .data import (
    DaskRows,
    dask_rows,
    head_design_and_pilot,
    partition_design,
    partition_folds,
    partition_response,
)
from .fit import (
    PartitionFit,
    fit_partitions,
    fold_complement_weights,
    fold_spec_for,
    reweight_partitions,
)
from .honest import OuterFits, held_out_rows, honest_table, new_row_predictions, outer_fits
from .inference import meat_partitions, refit_partitions, sums_partitions
from .multinomial import class_codes, class_labels, oof_probabilities
from .oof import oof_predictions
from .shrinkage import shrink_fit, shrink_partition_weights
from .weights import check_candidate_count

__all__ = ["PartitionedRows", "dask_fit_state"]


def _design_part(frame, blocks, offset, spec):
    return partition_design(spec, frame, blocks)


def _response_part(frame, blocks, offset, spec, family, classes=None):
    y = partition_response(spec, family, frame)
    return y if classes is None else class_codes(y, classes)  # multinomial: codes 0..C-1


def _folds_part(frame, blocks, offset, fold_spec):
    return partition_folds(frame, offset, len(frame), fold_spec)


def _oof_part(frame, blocks, offset, spec, family, fold_spec, labels, coefs, failed):
    X = partition_design(spec, frame, blocks)
    folds = partition_folds(frame, offset, len(X), fold_spec)
    if family == "multinomial":  # class probabilities (rows, J, C)
        P = oof_probabilities(X, folds, labels, coefs)
    else:
        P = oof_predictions(X, folds, labels, coefs, family)
    P[:, failed] = np.nan  # as in memory: a failed candidate has no out-of-fold predictions
    return P


@dataclass(frozen=True)
class PartitionedRows:
    """Where a dask fit's rows live, and what was computed from them by passes.

    Attributes
    ----------
    rows : DaskRows
    fold_spec : tuple
        How each row's fold is found (hashed position or a fold column).
    fitted : PartitionFit
        The cross-validation, weights and all-rows coefficients.
    centre : ndarray (p + 1,)
        The pilot centre of the design's columns and the response (column medians of the
        first partition's first rows) that the fold moments are taken around.
    everything : tuple of Candidate
        The pool's candidates then the baseline-only ones (the coefficients' columns).
    n_pool : int
        How many of them are weighted.
    rows_spec : DesignSpec
        Rebuilds each partition's design.
    family_name : str
    shrinkage : tuple or None
        The fit's ``(weight_shrinkage, shrinkage_target)``, which every re-solve repeats.
    refits : dict of str -> PartitionRefit
        The candidates' all-rows refits, computed on first use (:meth:`refit`).
    outer : dict
        The outer folds' re-runs (:class:`~pearlstats.distributed.honest.OuterFits`) by
        ``(outer, seed)``, and the fold complements' weight solves, computed on first use.
    scores : tuple or None
        The rows' responses, outer folds and held-out PEARL predictions (CV+), on first use.
    """

    rows: DaskRows
    fold_spec: tuple
    fitted: PartitionFit
    centre: np.ndarray
    everything: tuple
    n_pool: int
    rows_spec: Any
    family_name: str
    shrinkage: tuple | None = None
    refits: dict = field(default_factory=dict)
    outer: dict = field(default_factory=dict)
    scores: tuple | None = None

    def lazy(self, function: Any, *args: Any, columns: int | tuple | None = None,
             dtype: Any = float) -> Any:
        """A dask array of ``function(frame, blocks, offset, *args)`` over every partition.

        One chunk per partition (empty ones included), of ``(rows,)``, ``(rows, columns)``
        or ``(rows, *columns)`` for a tuple.
        """
        import dask.array as da

        tasks = self.rows.tasks(function, *args, keep_empty=True)
        tail = () if columns is None else tuple(np.atleast_1d(columns).tolist())

        def shape(m):
            return (m, *tail)

        return da.concatenate([da.from_delayed(task, shape=shape(m), dtype=dtype)
                               for task, m in zip(tasks, self.rows.lengths)])

    def position(self, candidate: Any) -> int:
        """The candidate's column in the coefficient arrays (pool then baseline-only)."""
        return self.labels.index(candidate.label)

    @property
    def labels(self) -> list:
        return [c.label for c in self.everything]

    def params(self, candidate: Any) -> tuple[np.ndarray, list]:
        """The candidate's all-rows coefficients (its own columns), from the passes, and the
        ledger rows of that fit (as :meth:`~pearlstats.families.Family.fit_params` returns a
        refit's, for the results to record on first use)."""
        notes = [entry for entry in self.fitted.refit_entries
                 if entry.candidate == candidate.label]
        position = self.position(candidate)
        if self.fitted.failed[position]:  # no coefficients (the passes hold zeros): NaN says so
            return np.full(len(candidate.columns), np.nan), notes
        return self.fitted.coefs[-1][candidate.columns, position], notes

    def refit(self, candidate: Any, column_names: list) -> Any:
        """The candidate's all-rows fit as a statsmodels-like results object.

        The first call computes every candidate that did not fail in one pass
        (:func:`~pearlstats.distributed.inference.refit_partitions`); later calls read them.
        """
        if not self.refits:
            labels = [c.label for c, failed in zip(self.everything, self.fitted.failed)
                      if not failed]
            self.refits.update(refit_partitions(
                self.rows, self.rows_spec, self.family_name, list(self.everything),
                self.fitted.coefs, self.fitted.ridges, labels=labels))
        if candidate.label not in self.refits:
            raise OptionError(f"candidate {candidate.label!r} failed in cross-validation and "
                              "has no refit on all rows (see results.failures)")
        return self.refits[candidate.label]

    def design_spread(self, columns: np.ndarray) -> Any:
        """The means and centred Gram of the design's *columns* on all rows (a
        :class:`~pearlstats.inference.refit_sums.Spread`, from the moment pass)."""
        return self.fitted.design.subset(np.asarray(columns))

    def _stack(self, candidates: list) -> tuple:
        columns = [np.asarray(c.columns) for c in candidates]
        return columns, self.fitted.coefs[-1][:, [self.position(c) for c in candidates]]

    def refit_sums(self, candidates: list) -> Any:
        """The candidates' refit sums over all rows (their columns among the design's)."""
        return sums_partitions(self.rows, self.rows_spec, self.family_name,
                               *self._stack(candidates))

    def meat(self, candidates: list, cov: Any, breads: list, **options: Any) -> Any:
        """The candidates' stacked-score sums over all rows, for their joint covariance
        (:mod:`pearlstats.results.covariance`; *options*: ``project``, ``blocks_only``)."""
        return meat_partitions(self.rows, self.rows_spec, self.family_name,
                               *self._stack(candidates), cov, breads, **options)

    def _outer_fits(self, outer: int | str, seed: int, family: Any, loss: Any,
                    ridge: float) -> OuterFits:
        """The procedure re-run without each outer fold, shared by honest risks and CV+."""
        key = (outer, seed)
        if key not in self.outer:
            self.outer[key] = outer_fits(self.rows, self.rows_spec, family, loss, self.fold_spec,
                                         list(self.everything), self.n_pool, ridge, self.centre,
                                         outer, seed, self.shrinkage)
        return self.outer[key]

    def honest(self, outer: int, seed: int, family: Any, loss: Any, ridge: float) -> Any:
        """The honest risk table (as ``res.honest``), the nested re-runs done by passes."""
        fits = self._outer_fits(outer, seed, family, loss, ridge)
        return honest_table(fits, self.rows, self.rows_spec, family, loss, self.fold_spec)

    def conformal(self, X_new: np.ndarray, alpha: float, outer: int, seed: int, family: Any,
                  loss: Any, ridge: float) -> Any:
        """CV+ intervals (lower, upper) or prediction sets of new design rows, as in memory.

        The conformity scores are the held-out residuals of the procedure re-run without each
        row's outer fold (the re-runs of :meth:`honest`); the n rows' responses, outer folds
        and held-out predictions are gathered for their exact order statistics.
        """
        fits = self._outer_fits(outer, seed, family, loss, ridge)
        if self.scores is None:
            object.__setattr__(self, "scores", held_out_rows(
                fits, self.rows, self.rows_spec, family, loss, self.fold_spec))
        y, outer_folds, held_out = self.scores
        new = new_row_predictions(fits, X_new, family.name, loss)
        if family.name in ("gaussian", "poisson"):
            return cv_plus_interval(y, held_out, outer_folds, new, alpha, family=family.name)
        if held_out.ndim == 1:  # binomial: P(y = 1) -> two columns
            held_out = np.column_stack([1.0 - held_out, held_out])
            new = np.stack([1.0 - new, new], axis=-1)
        return aps_prediction_sets(y.astype(np.intp), held_out, outer_folds, new, alpha,
                                   seed=seed, new_uniforms=row_uniforms(X_new, seed))

    def fold_complement(self, family: Any, loss: Any) -> list:
        """The pool's weights re-solved on each fold's complement (WeightSolutions, shrunk as
        the fit's), by passes; computed on first use."""
        if "fold complements" not in self.outer:
            solutions = fold_complement_weights(
                self.rows, self.rows_spec, family, loss, self.fold_spec, self.fitted,
                self.n_pool, self.fitted.fold_rows)
            if self.shrinkage is not None:  # each shrunk as the fit's, on its own rows
                K = len(solutions)
                solutions = [self._shrunk(family, loss, solution, np.arange(K) != k)[0]
                             for k, solution in enumerate(solutions)]
            self.outer["fold complements"] = solutions
        return self.outer["fold complements"]

    def _shrunk(self, family: Any, loss: Any, solution: Any, kept: Any = None) -> tuple:
        """*solution* shrunk as the fit's weights were (with its ledger row)."""
        solution, note, _ = shrink_partition_weights(
            self.rows, self.rows_spec, family, loss, self.fold_spec, self.fitted,
            list(self.everything[:self.n_pool]), solution, self.shrinkage, kept)
        return solution, note

    def reweight(self, family: Any, loss: Any) -> tuple:
        """The pool's weights re-solved under *loss* (a WeightSolution, shrunk as the fit's), by
        passes, and the fit's ledger rows with the re-solve's."""
        if loss.name not in LOSSES:
            raise OptionError(f"loss={loss.name!r} is not available for dask data; the weights "
                              f"there minimise {LOSSES}")
        solution = reweight_partitions(self.rows, self.rows_spec, family, loss, self.fold_spec,
                                       self.fitted, self.n_pool)
        entries = self.fitted.cv_entries + duplicate_entries(solution.merged, self.labels)
        if self.shrinkage is not None:
            solution, note = self._shrunk(family, loss, solution)
            entries.append(note)
        return solution, entries

    def null_predictions(self, folds: Any) -> Any:
        """The intercept-only model's out-of-fold predictions (lazy): each fold's mean response.

        Without offsets or weights (which a fit on dask data does not take) the mean of the
        other folds' responses is the maximum-likelihood fit of every family it supports.
        """
        means = self.fitted.null_means  # (K,), or (K, C) class frequencies for multinomial
        if means.ndim == 1:
            return folds.map_blocks(lambda labels: means[labels], dtype=float)
        return folds.map_blocks(lambda labels: means[labels], dtype=float, new_axis=1,
                                chunks=(folds.chunks[0], (means.shape[1],)))

    def __reduce__(self):
        raise OptionError(
            "a results object fitted on dask data holds the dask graph of its rows and does not "
            "pickle; save what you need from it (res.weights, res.summary().as_text(), "
            "res.cv_risk, ...) or fit an in-memory sample"
        )


def _lazy_folds(partitions: PartitionedRows, fold_spec: tuple) -> Any:
    """Each row's fold as a dask array; hashed folds from row positions alone (no data read)."""
    kind, value, seed = fold_spec
    if kind != "hash":  # a fold column: read from the partitions
        return partitions.lazy(_folds_part, fold_spec, dtype=np.intp)
    import dask.array as da
    from dask import delayed

    rows = partitions.rows
    return da.concatenate([
        da.from_delayed(delayed(hash_folds)(np.arange(start, start + m), value, seed),
                        shape=(m,), dtype=np.intp)
        for start, m in zip(rows.offsets.tolist(), rows.lengths)])


def dask_fit_state(formula: Any, family: Any, loss: Any, data: Any, blocks: Any, candidates: Any,
                   rule: Any, seed: int, ridge: float, max_candidates: int, env: Any,
                   representations: Any, honest: int | bool,
                   shrinkage: tuple | None = None) -> FitState:
    """The stage values of a fit on dask data (see the module notes).

    :func:`~pearlstats.in_memory_only.refuse_in_memory_only` has refused what this
    path cannot do; *rule* is the checked ``cv``; *shrinkage* the checked
    ``(weight_shrinkage, shrinkage_target)``.
    """
    fold_spec = fold_spec_for(rule, seed, data)
    rows = dask_rows(data, blocks, formula)
    head, centre = head_design_and_pilot(rows, formula, env, family.name)
    pool = build_pool(head, candidates, max_candidates)
    check_candidate_count(len(pool.pool))  # before any pass, not after the fold fits
    spec = head.spec
    fitted = fit_partitions(rows, spec, family, loss, fold_spec, pool.everything,
                            len(pool.pool), ridge, centre, check_response=True)
    fitted = shrink_fit(rows, head.spec, family, loss, fold_spec, fitted, pool.pool, shrinkage)
    partitions = PartitionedRows(rows, fold_spec, fitted, centre, tuple(pool.everything),
                                 len(pool.pool), spec, family.name, shrinkage)
    # the refits' ridges: a separated candidate's is the ladder rung it was moved up to
    family = family.configured(candidate_ridges={
        label: value for label, value in fitted.ridges.items() if value != ridge})
    p = len(spec.column_names)
    design = Design(partitions.lazy(_design_part, spec, columns=p), spec)
    classes = fitted.classes  # multinomial: the sorted response values, coded 0..C-1
    if classes is None:
        response = EncodedResponse(partitions.lazy(_response_part, spec, family.name),
                                   [0.0, 1.0] if family.name == "binomial" else None)
        columns = len(pool.everything)
    else:
        response = EncodedResponse(
            partitions.lazy(_response_part, spec, family.name, classes, dtype=np.intp),
            class_labels(classes))
        columns = (len(pool.everything), len(classes))
    folds = _lazy_folds(partitions, fold_spec)
    K = len(fitted.labels)
    predictions = partitions.lazy(_oof_part, spec, family.name, fold_spec, fitted.labels,
                                  fitted.coefs[:K], fitted.failed, columns=columns)
    ridges = np.array([fitted.ridges.get(c.label, ridge) for c in pool.everything])
    output = EngineOutput(predictions, fitted.failed, list(fitted.entries), ridges)
    # the warnings of an in-memory fit (caller: pearlstats.fit's caller)
    warn_cv_failures(output, [c.label for c in pool.pool], family.name)
    return FitState(
        family=family, loss=loss, design=design, response=response, candidates=pool,
        folds=folds, cv_spec=fold_spec, seed=seed, ridge=ridge,
        output=output,
        solution=fitted.solution, ledger=tuple(fitted.entries),
        representations=representations, dropped_rows=np.empty(0, dtype=np.intp),
        honest=honest, row_labels=None, weight_options=WeightOptions(1, shrinkage),
        honest_se="naive", partitions=partitions,
    )
