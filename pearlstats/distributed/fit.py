"""The distributed PEARL fit: the stages of :mod:`pearlstats.stages` with partition-wise sums.

``design`` (a DesignSpec from the first partition) -> candidates
(:func:`pearlstats.stages.build_pool`, the in-memory stage itself) -> folds
(hashed row positions, or a fold column) -> multinomial only: the classes and
their counts per fold (one pass, :mod:`pearlstats.distributed.multinomial`) ->
moments and Gram matrices (one pass) -> coefficients (client solves for
gaussian, distributed Newton for binomial / Poisson / multinomial) ->
out-of-fold statistics (one pass) -> weights (client QP from ``E'E``, or
distributed Newton: one pass per step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import check_magnitude
from ..design.folds import FoldRule, fold_levels
from ..engines.glm import fold_without_counts
from ..exceptions import FoldError
from ..inference.refit_sums import Spread
from ..stages import check_some_candidate_fitted, duplicate_entries
from .data import relabel_folds
from .multinomial import MultinomialOof, class_pass
from .newton import newton_coefficients, newton_with_separation
from .ols import moment_pass, solve_least_squares
from .oof import OofPasses
from .weights import DistributedBarrierForm, GramLeastSquaresForm, solve_from_form, weight_solution

__all__ = ["PartitionFit", "fit_partitions", "fold_complement_weights", "fold_spec_for",
           "reweight_partitions", "solve_partition_weights", "stored_oof"]

def fold_spec_for(rule: FoldRule, seed: int, data: Any) -> tuple:
    """Hashed row positions for K-fold, or a fold column (the other forms were refused).

    A fold column costs one pass over it for its distinct labels: fold k is the k-th in
    sorted order, as in memory, so any labels the in-memory fit takes work here too.
    """
    if rule.kind != "column":
        return ("hash", rule.value, seed)
    column = data[rule.value]
    if hasattr(column, "unique"):  # a dask Series
        distinct = column.unique().compute().to_numpy()
    else:
        import dask.array as da

        distinct = da.unique(column).compute()
    return ("column", rule.value, fold_levels(distinct, rule.value))


def _check_folds(moments, family: str) -> None:
    empty = np.flatnonzero(moments.folds.count == 0)
    if len(moments.labels) < 2 or empty.size:
        raise FoldError(
            f"fold labels must be 0..K-1 with K >= 2, every fold non-empty; found "
            f"{len(moments.labels)} fold(s), of which {empty[:20].tolist()} have no rows"
        )
    if family == "binomial":
        single = np.flatnonzero(moments.single_response())
        if single.size:
            fold = int(single[0])
            present = float(moments.training.low[fold, -1])
            raise FoldError(
                f"the training rows of fold {fold} contain no row of class(es) "
                f"[{1.0 - present}] (only {present}); choose folds so that every class is "
                "outside each fold (a fold column that spreads each class over the folds: "
                "the folds of dask rows are not stratified), or fewer folds"
            )
    if family == "poisson":
        # counts are >= 0: a largest training count of 0 is a fold that counts nothing, which
        # the fit refuses in memory (a ridge ladder cannot give the intercept an optimum)
        nothing = np.flatnonzero(moments.training.high[:, -1] <= 0)
        if nothing.size:
            raise fold_without_counts(int(nothing[0]))


def _risks(stats, n: int):
    risk = stats["risk"] / n
    second = stats["risk2"] / n
    se = np.sqrt(np.maximum(second - risk**2, 0.0) * n / max(n - 1, 1)) / np.sqrt(n)
    return risk, se


def _null_means(moments) -> np.ndarray:
    """The intercept-only model of each fold: the mean response of the other folds' rows.

    Without offsets or weights (which the distributed fit does not take) this is the
    maximum-likelihood fit of every family it supports (mean, class frequency, mean rate).
    """
    return moments.response_means()[:-1]


def _oof(rows, spec, family, fold_spec, moments, coefs, env, classes) -> Any:
    """The out-of-fold passes: of means, or (multinomial, with its *classes*) of class
    probabilities."""
    labels = moments.labels
    K = len(labels)
    if classes is not None:
        return MultinomialOof(rows, spec, fold_spec, labels, coefs[:K], classes.levels,
                              classes.frequencies(), env)
    return OofPasses(rows, spec, family.name, fold_spec, labels, coefs[:K], env,
                     _null_means(moments))


def stored_oof(rows: Any, spec: Any, family: Any, fold_spec: Any, fitted: PartitionFit) -> Any:
    """The out-of-fold passes of the fit's stored fold coefficients (means or class
    probabilities)."""
    K = len(fitted.labels)
    if fitted.classes is None:
        return OofPasses(rows, spec, family.name, fold_spec, fitted.labels, fitted.coefs[:K],
                         None, fitted.null_means)
    return MultinomialOof(rows, spec, fold_spec, fitted.labels, fitted.coefs[:K],
                          fitted.classes, fitted.null_means, None)


def solve_partition_weights(oof: Any, loss: Any, n: int, failed: np.ndarray,
                            n_pool: int) -> tuple[np.ndarray, int]:
    """The pool's simplex weights (n_pool,) from out-of-fold passes over *n* rows, and the
    passes the solve took."""
    solution, _, _, passes, _ = _weights(oof, loss, n, failed, n_pool)
    return solution.weights, passes


def reweight_partitions(rows: Any, spec: Any, family: Any, loss: Any, fold_spec: Any,
                        fitted: PartitionFit, n_pool: int) -> Any:
    """The pool's weights re-solved under another *loss* from the stored fold fits."""
    return _weights(stored_oof(rows, spec, family, fold_spec, fitted), loss, fitted.n,
                    fitted.failed, n_pool)[0]


def fold_complement_weights(rows: Any, spec: Any, family: Any, loss: Any, fold_spec: Any,
                            fitted: PartitionFit, n_pool: int,
                            fold_rows: np.ndarray) -> list:
    """The pool's weights re-solved on each fold's complement, from the stored fold fits.

    The out-of-fold predictions are those of the fit (its fold coefficients); fold k's
    rows are left out of the passes (a relabelled fold spec), as the in-memory
    ``res.resample_weights()`` leaves them out of the stored predictions. *fold_rows*
    are the rows of each fold. Returns each fold's WeightSolution.
    """
    K = len(fitted.labels)
    solutions = []
    for k in range(K):
        mapping = np.arange(K)
        mapping[k] = -1
        oof = stored_oof(rows, spec, family, relabel_folds(fold_spec, mapping), fitted)
        n = int(fold_rows.sum() - fold_rows[k])
        solutions.append(_weights(oof, loss, n, fitted.failed, n_pool)[0])
    return solutions


def _weights(oof, loss, n, failed, n_pool):
    """CV risks of every candidate (and of the intercept-only model), and the pool's weights."""
    if loss.solver == "qp" and loss.name == "squared":
        stats = oof.residuals()
        EtE = stats["EtE"]
        risk = np.diagonal(EtE) / n
        se = np.sqrt(np.maximum(stats["E4"] / n - risk**2, 0.0) * n / max(n - 1, 1)) / np.sqrt(n)
        form = GramLeastSquaresForm(EtE[:n_pool, :n_pool], n)
        w, gap, solver, merged = solve_from_form(form, "qp", ~failed[:n_pool])
        objective = form.value(w)
        extra = 1
    else:
        stats = oof.risks(loss)
        risk, se = _risks(stats, n)
        active = np.flatnonzero(~failed[:n_pool])
        sub = oof.only(active)

        def evaluate(w):
            return sub.barrier(loss, w, n)

        form = DistributedBarrierForm(evaluate, stats["vertex"][active] / n, n)
        w_active, gap, solver, merged = solve_from_form(
            form, "sqp", np.ones(active.size, dtype=bool)
        )
        objective = (
            form.at(w_active)[3]
            if np.count_nonzero(w_active) > 1
            else risk[active][np.argmax(w_active)]
        )
        w = np.zeros(n_pool)
        w[active] = w_active
        merged = tuple(tuple(int(active[j]) for j in group) for group in merged)
        extra = 1 + form.passes
    risk = np.where(failed, np.nan, risk)
    null = _risks({"risk": stats["null"], "risk2": stats["null2"]}, n)
    return (
        weight_solution(w, objective, gap, solver, merged),
        risk,
        np.where(failed, np.nan, se),
        extra,
        null,
    )


@dataclass
class PartitionFit:
    """What the passes over the partitions computed: the cross-validation and the weights.

    Attributes
    ----------
    labels : list of int
        Fold labels 0..K-1.
    n : int
        Rows fitted.
    coefs : ndarray (K + 1, p, J_all)
        Each fold's coefficients of every candidate (pool then baseline-only), then the
        all-rows refits'.
    failed : ndarray of bool (J_all,)
    entries : list of LedgerEntry
    solution : WeightSolution
    risk, se : ndarray (J_all,)
        Each candidate's CV risk and its SE (NaN where it failed).
    null : tuple of float
        The intercept-only model's CV risk and SE.
    null_means : ndarray (K,)
        The intercept-only model of each fold (the other folds' mean response; multinomial:
        (K, C), the other folds' class frequencies).
    passes : int
        Passes over the data.
    mean_response : float or ndarray (C,)
        The mean response of the rows fitted, the intercept-only model fitted on them
        (multinomial: the class frequencies).
    classes : ndarray (C,) or None
        Multinomial: the sorted response values class 0..C-1 stand for; ``coefs`` is then
        (K + 1, p, J_all, C - 1), each candidate's ``MNLogit``-shaped params (class 0 the
        reference), so ``coefs[-1][:, j]`` are candidate j's all-rows params.
    ridges : dict of str -> float
        The ridge each candidate was fitted with: the fit's, or the separation ladder's rung
        it was moved up to.
    fold_rows : ndarray (K,)
        Rows in each fold.
    cv_entries : list of LedgerEntry
        The cross-validation's ledger rows alone (``entries`` adds the weight solve's).
    refit_entries : list of LedgerEntry
        The all-rows fits' notes (stage ``"refit"``), kept out of ``entries``: a results
        object records a candidate's when it first uses its coefficients
        (:meth:`~pearlstats.distributed.state.PartitionedRows.params`), as an in-memory fit
        records a refit's notes when it refits.
    design : Spread or None
        The row count, column means and centred Gram matrix of the design on all rows (from
        the moment pass): which coefficients a candidate identifies is decided on it.
    """

    labels: list
    n: int
    coefs: np.ndarray
    failed: np.ndarray
    entries: list
    solution: Any
    risk: np.ndarray
    se: np.ndarray
    null: tuple
    null_means: np.ndarray
    passes: int
    mean_response: float | np.ndarray = np.nan
    classes: np.ndarray | None = None
    ridges: dict = field(default_factory=dict)
    fold_rows: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cv_entries: list = field(default_factory=list)
    design: Spread | None = None
    refit_entries: list = field(default_factory=list)


def _check_magnitudes(moments: Any, spec: Any, family: str) -> None:
    """The in-memory fit's scale guard (:func:`~pearlstats.checks.check_magnitude`) on the
    covariate columns and the gaussian response, from the pass's column extremes."""
    low, high = moments.total.low[0], moments.total.high[0]
    names = list(spec.column_names)
    for j in range(spec.n_covariates):
        check_magnitude(f"covariate column {names[j]!r}", np.array([low[j], high[j]]))
    if family == "gaussian":
        check_magnitude("the gaussian response", np.array([low[-1], high[-1]]), power=4)


def _design_spread(moments: Any) -> Spread:
    """The design's columns on all rows as a :class:`Spread`, in the columns' own units
    (the moments are of ``(X - pilot) / unit``)."""
    total, p = moments.total, moments.p
    unit = total.unit[:p]
    mean = total.pilot[:p] + total.mean[0, :p] * unit
    return Spread(float(total.count[0]), mean, total.cross[0, :p, :p] * np.outer(unit, unit))


def _mean_response(moments: Any, classes: Any) -> float | np.ndarray:
    """The intercept-only model of the rows fitted: the mean response (multinomial: the
    class frequencies)."""
    if classes is None:
        return float(moments.response_means()[-1])
    counts = classes.counts.sum(axis=0)
    return counts / counts.sum()


def fit_partitions(rows: Any, spec: Any, family: Any, loss: Any, fold_spec: Any,
                   everything: list, n_pool: int, ridge: float, centre: np.ndarray,
                   check_response: bool = False) -> PartitionFit:
    """Cross-validate every candidate and solve the weights, one pass over the partitions each.

    *everything* is the pool's candidates then the baseline-only ones (the first *n_pool*
    are weighted); *centre* is the pilot centre of the design's columns and the response
    (:func:`~pearlstats.distributed.ols.moment_pass`). ``check_response=True`` (the fit,
    not its honest re-runs, as in memory) refuses a response with nothing to fit
    (:meth:`~pearlstats.families.Family.check_response_range`) from the moment pass's
    extremes of the response, before the folds are checked.
    """
    env = None  # patsy's EvalEnvironment does not pickle: workers use the spec's namespace
    classes, passes = None, 1
    if family.name == "multinomial":  # one more pass: the classes, counted per fold
        classes, passes = class_pass(rows, spec, fold_spec, env), 2
    levels = None if classes is None else classes.levels
    moments = moment_pass(rows, spec, family.name, fold_spec, centre, env, levels)
    if check_response:
        total = moments.total
        family.check_response_range(float(total.low[0, -1]), float(total.high[0, -1]), moments.n)
    _check_folds(moments, family.name)
    _check_magnitudes(moments, spec, family.name)
    moved: dict = {}
    if family.name == "gaussian":
        coefs, failed, entries = solve_least_squares(moments, everything, ridge)
    else:
        def fit_rung(candidates, rung_ridge):
            return newton_coefficients(rows, spec, family.name, fold_spec, moments, candidates,
                                       rung_ridge, env, levels)

        coefs, failed, entries, newton_passes, moved = newton_with_separation(
            fit_rung, everything, ridge, family.name, family.separation
        )
        passes += newton_passes
    # The passes fit every candidate on all rows (the folds start there), dropped ones too. In
    # memory a candidate is refitted, and its refit's notes recorded, when its coefficients are
    # first used (at fit time for those with weight): recorded here, the dask ledger had a
    # "refit" row more per candidate separated on all rows under separation="drop".
    refit_entries = [entry for entry in entries if entry.stage == "refit"]
    entries = [entry for entry in entries if entry.stage != "refit"]
    check_some_candidate_fitted(entries, failed[:n_pool])
    oof = _oof(rows, spec, family, fold_spec, moments, coefs, env, classes)
    solution, risk, se, extra, null = _weights(oof, loss, moments.n, failed, n_pool)
    cv_entries = list(entries)
    entries.extend(duplicate_entries(solution.merged, [c.label for c in everything]))
    return PartitionFit(labels=moments.labels, n=moments.n, coefs=coefs, failed=failed,
                        fold_rows=moments.folds.count.astype(int), cv_entries=cv_entries,
                        entries=entries, refit_entries=refit_entries, solution=solution,
                        risk=risk, se=se, null=null,
                        null_means=oof.null, passes=passes + extra, classes=levels,
                        mean_response=_mean_response(moments, classes),
                        ridges={c.label: moved.get(c.label, ridge) for c in everything},
                        design=_design_spread(moments))

