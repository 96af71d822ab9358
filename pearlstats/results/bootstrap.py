"""The refitting bootstrap of the PEARL weights: the whole procedure re-run on resampled rows.

Each bootstrap resample of the rows goes through the fit's own stages again:
:func:`~pearlstats.stages.assign_folds` draws folds on the resample,
:func:`~pearlstats.stages.cross_validate` refits every candidate and
recomputes its out-of-fold predictions, and
:func:`~pearlstats.stages.solve_stage_weights` re-solves the weights. The
result is the bootstrap distribution of the procedure's weights, not an
estimate of their sampling distribution: weights on the boundary of the
simplex make the bootstrap inconsistent (Andrews 2000), and its spread was
not within 30 % of the weights' Monte Carlo SD on every design checked
(:mod:`pearlstats.experiments.inference_checks.weights`). :func:`subsampling_weights`
re-runs the procedure on m-out-of-n subsamples instead.

What is *not* redone: the design columns (blocks, covariates and their
transforms) are those of the full-sample fit, and representation learners are
not refitted; the candidate pool, family, loss and ridge are the fit's. The separation
ridges of candidates whose classes separate are chosen on each resample's rows, as
``pearlstats.fit`` on them would choose them, not taken from the fit.

Examples
--------
>>> import numpy as np
>>> rows, folds = bootstrap_resample(8, 2, seed=0, b=0)
>>> len(rows) == len(folds) == 8
True
>>> all(len(set(folds[rows == r])) == 1 for r in rows)  # copies of a row share a fold
True
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._lazy import lazy_module
from .._warnings import warn
from ..design.splitters import Splits
from ..exceptions import (
    AllCandidatesFailedError,
    ConvergenceWarning,
    DataError,
    FoldError,
    OptionError,
    ResponseError,
)
from ..families import EncodedResponse
from ..nested import rows_loss
from ..observation_weights import effective_nobs
from ..progress import progress_bar, timed
from ..stages import FitState, assign_folds, worker_count
from ..weight_stage import cross_validate_draws, fit_name, solve_draw_weights
from ..weights.certificate import gap_table
from ..weights.row_weighted import RowWeightedLoss

logger = logging.getLogger(__name__)
joblib = lazy_module("joblib")  # parallel workers only when asked for (n_jobs)

__all__ = [
    "RESAMPLE_FAILURES",
    "bootstrap_resample",
    "frequency_resampling",
    "resample_counts",
    "refit_weights",
    "refitting_bootstrap",
    "subsample",
    "subsampling_weights",
    "uncertainty_table",
    "weighted_resample",
]

# What a resample's rows can make impossible (a class drawn in one row, every candidate failing
# on them): the resample is recorded as failed and the others are kept. Any other error (an
# option, a bug) would fail every resample and is raised.
RESAMPLE_FAILURES = (ResponseError, FoldError, AllCandidatesFailedError, DataError)


def _fold_spec(cv_spec, state_folds: np.ndarray, distinct: np.ndarray):
    """The ``cv`` the fold stage gets for the distinct rows of a resample."""
    if isinstance(cv_spec, str):  # "loo": leave one original row (all its copies) out
        return "loo"
    if isinstance(cv_spec, numbers.Integral) and not isinstance(cv_spec, (bool, np.bool_)):
        return min(int(cv_spec), distinct.size)  # a resample can have fewer distinct rows than K
    return state_folds[distinct]  # given labels (e.g. groups): every row keeps its label


def _refuse_partial_splits(cv_spec) -> None:
    """Resampling rows has no rule for a splitter that is not a partition (time order, a
    purge)."""
    if isinstance(cv_spec, Splits):
        raise OptionError(
            f"resampling rows is not available for a fit cross-validated by "
            f"{type(cv_spec.splitter).__name__}, which {cv_spec.shortfall} (a resample "
            "duplicates rows across its splits and has no rule for what it leaves out); use "
            f"{_stored_resolves(cv_spec)}, or fit with a partition splitter"
        )


def _stored_resolves(splits: Splits) -> str:
    """The re-solves of stored predictions a fit of *splits* has: the fold complements, or
    for a single test split (whose complement is never tested) bootstrap resamples."""
    if int(splits.folds.max()) == 0:
        return "the re-solves of its stored predictions (method='bootstrap' without refit)"
    return "the fold-complement re-solves (method='folds')"


def bootstrap_resample(
    n: int,
    cv_spec: int | str | np.ndarray,
    *,
    seed: int,
    b: int,
    state_folds: np.ndarray | None = None,
    y: np.ndarray | None = None,
    classes: Sequence | None = None,
    groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows and fold labels of bootstrap resample *b*.

    Resample b draws from the SeedSequence child b of *seed*,
    ``rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(b + 1)[b])``
    (independent of how many resamples are drawn): rows ``rng.integers(0, n, n)`` (with
    *classes*, stratified: each class's ``n_c`` rows drawn from its own rows, in class
    order, so that every resample has the fit's classes in the fit's proportions),
    then the fold stage (:func:`~pearlstats.stages.assign_folds`, with the same ``rng``) on the
    distinct drawn rows in increasing order, whose labels the copies share. With fold labels
    given to the fit (which may be groups) it is a cluster bootstrap: G of the G labels are
    drawn with ``rng.integers(0, G, G)`` (again while fewer than two are distinct) and each
    brings all its rows, in increasing order, in the order drawn; every row keeps its label.

    Copies of an original row share its fold, so no row is ever validated
    by a model trained on a copy of itself: a copy in the training set would
    make the held-out prediction an in-sample one and favour the candidates
    that overfit. ``cv=K`` draws K folds (stratified by class, at most the
    number of distinct rows), ``"loo"`` leaves one original row out at a
    time, and given fold labels are kept (each row keeps its own label).

    Parameters
    ----------
    n : int
        Rows of the fit.
    cv_spec : int, "loo" or array-like
        The fit's ``cv``.
    seed : int
    b : int
        Resample number.
    state_folds : ndarray of int, optional
        The fit's fold codes (needed for given labels).
    y, classes : optional
        The encoded response and its classes (stratify the rows and the folds, and check the
        folds, for classes).
    groups : ndarray of int (n,), optional
        The fit's group codes (``groups=``, dealt into its folds): the cluster bootstrap
        draws G of these G groups, each row keeping its fold.

    Returns
    -------
    rows : ndarray of int (n,; with given labels, the drawn groups' sizes summed)
        Positions of the resample's rows in the fit's rows.
    folds : ndarray of int (as *rows*)
        Fold code of each resample row, 0..K-1.
    """
    _refuse_partial_splits(cv_spec)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(b,)))
    if _given_labels(cv_spec):
        rows = _whole_groups(state_folds if groups is None else groups, rng, state_folds)
    elif classes is not None and y is not None:
        rows = np.concatenate([rng.choice(members, size=members.size)
                               for members in _class_members(y)])
    else:
        rows = rng.integers(0, n, size=n)
    return rows, _resample_folds(rows, cv_spec, rng, state_folds, y, classes,
                                 f"bootstrap resample {b} (seed {seed})")


def _class_members(y: np.ndarray) -> list[np.ndarray]:
    """The rows of each class present, in class order."""
    return [np.flatnonzero(y == code) for code in np.unique(y)]


def weighted_resample(
    frequency_weights: np.ndarray,
    cv_spec: int | str,
    *,
    seed: int,
    b: int,
    y: np.ndarray | None = None,
    classes: Sequence | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, their counts and fold labels of bootstrap resample *b* of frequency-weighted rows.

    A row of frequency weight w stands for w rows, so the resample is one of the expanded
    data, drawn without expanding it: the number of times each row is drawn,
    :func:`resample_counts` (``Multinomial(round(sum w), w / sum w)``, by class with
    *classes*), is what the expanded data's bootstrap gives, and a fit with those counts
    as frequency weights is the fit on the drawn copies. The cost is that of the distinct
    rows, whatever the weights' sum. The folds are drawn on the drawn rows (in increasing
    order) as for :func:`bootstrap_resample`: a row's copies share its fold. The SeedSequence
    child b of *seed* draws the counts, then the folds.

    Returns
    -------
    rows : ndarray of int
        The rows drawn at least once, in increasing order.
    counts : ndarray of float
        How often each was drawn (its frequency weight in the resample).
    folds : ndarray of int
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(b,)))
    counts = resample_counts(frequency_weights, rng,
                             strata=y if classes is not None else None)
    rows = np.flatnonzero(counts)
    folds = _resample_folds(rows, cv_spec, rng, None, y, classes,
                            f"bootstrap resample {b} (seed {seed})")
    return rows, counts[rows].astype(float), folds


def resample_counts(frequency_weights: np.ndarray, rng: np.random.Generator,
                    size: int | None = None, strata: np.ndarray | None = None) -> np.ndarray:
    """How often each row is drawn by a bootstrap of the data expanded by frequency weights.

    The expanded data's bootstrap draws ``N = round(sum w)`` (at least 2) of its N rows with
    replacement; the number of copies of row i drawn is then
    ``Multinomial(N, w / sum w)``, drawn here directly, in time and memory proportional to
    the rows, not to N. With *strata* (class codes) each class c is drawn on its own,
    ``Multinomial(max(1, round(W_c)), w_c / W_c)`` with ``W_c`` the class's weight.

    Parameters
    ----------
    frequency_weights : ndarray (n,)
    rng : numpy Generator
    size : int, optional
        That many independent draws (rows of the result).
    strata : ndarray (n,), optional

    Returns
    -------
    ndarray of int, (n,) or (size, n)

    Examples
    --------
    >>> counts = resample_counts(np.array([1.0, 2.0, 3.0]), np.random.default_rng(0), 4)
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((4, 3), [6, 6, 6, 6])
    """
    w = np.asarray(frequency_weights, dtype=float)
    if strata is None:
        total = max(2, round(effective_nobs(w.size, w, "frequency")))
        return rng.multinomial(total, w / w.sum(), size=size)
    counts = np.zeros(w.shape if size is None else (size, w.size), dtype=np.int64)
    for members in _class_members(np.asarray(strata)):
        part = w[members]
        counts[..., members] = rng.multinomial(max(1, round(float(part.sum()))),
                                               part / part.sum(), size=size)
    return counts


def _given_labels(cv_spec) -> bool:
    """Whether the fit's ``cv`` was one fold label per row (which may be groups)."""
    return not isinstance(cv_spec, (str, numbers.Integral))


def _whole_groups(labels: np.ndarray, rng: np.random.Generator,
                  folds: np.ndarray | None = None) -> np.ndarray:
    """Rows of a cluster bootstrap: G of the G given folds drawn with replacement, whole.

    Rows that share a given fold label may be one group (a patient, a document, a site),
    whose rows are alike: resampling single rows would treat them as independent and
    understate the weights' spread. With ``groups=`` dealt into the *folds*, *labels* are
    the groups, drawn whole, each row keeping its fold. A draw with fewer than two distinct
    folds is drawn again (the fold stage needs two).
    """
    folds = labels if folds is None else folds
    n_groups = int(labels.max()) + 1
    members = [np.flatnonzero(labels == g) for g in range(n_groups)]
    while True:
        chosen = rng.integers(0, n_groups, size=n_groups)
        rows = np.concatenate([members[g] for g in chosen])
        if np.unique(folds[rows]).size >= 2:
            return rows


def _resample_folds(rows, cv_spec, rng, state_folds, y, classes, where: str) -> np.ndarray:
    """Fold codes of a resample's rows: drawn for its distinct rows, shared by their copies."""
    distinct, position = np.unique(rows, return_inverse=True)
    codes = np.zeros(distinct.size) if y is None else np.asarray(y)[distinct]
    spec = _fold_spec(cv_spec, state_folds, distinct)
    try:
        distinct_folds = assign_folds(spec, EncodedResponse(codes, classes), rng)
    except (FoldError, ResponseError) as err:  # e.g. a class with one distinct row in the resample
        raise type(err)(f"{where}: {err}") from err
    return distinct_folds[position]


def _repeated_draws(state: FitState, rows: np.ndarray, folds: np.ndarray, seed: int,
                    b: int) -> list[np.ndarray]:
    """The resample's fold draws for the fit's ``cv_repeats``: *folds*, then draw r from the
    SeedSequence child ``(b, r)`` of *seed*."""
    draws = [folds]
    for r in range(1, state.weight_options.cv_repeats):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(b, r)))
        draws.append(_resample_folds(rows, state.cv_spec, rng, state.folds, state.response.y,
                                     state.response.classes,
                                     f"bootstrap resample {b}, fold draw {r} (seed {seed})"))
    return draws


def refit_weights(state: FitState, rows: np.ndarray,
                  folds: np.ndarray | Sequence[np.ndarray], *, name: str = "a resample",
                  record: list | None = None, counts: np.ndarray | None = None) -> np.ndarray:
    """PEARL's weights fitted on the given rows with the given folds, through the fit's stages.

    The weight stage runs as the fit's did: over every fold draw given (``cv_repeats``) and
    with the fit's shrinkage.

    Parameters
    ----------
    state : FitState
        The fit (family, loss, design, candidates, ridge, weight options).
    rows : ndarray of int
        Positions in the fit's rows (repeats allowed).
    folds : ndarray of int, or a sequence of them
        Fold code of each of *rows*; one array per fold draw for ``cv_repeats > 1``.
    name : str
        The re-run's name (``"boot 3"``), for a convergence warning.
    record : list, optional
        Receives the weight solve's WeightSolution, whose ``kkt_gap`` certifies it.
    counts : ndarray, optional
        The frequency weights of *rows* in a resample of frequency-weighted data
        (:func:`weighted_resample`), in place of the fit's weights; otherwise the rows
        (and their copies) keep the fit's observation weights.

    Returns
    -------
    ndarray (J,)
        Weights of the pool's candidates (0 for candidates that failed).
    """
    draws = [np.asarray(folds)] if np.ndim(folds[0]) == 0 else [np.asarray(f) for f in folds]
    response = state.response.subset(rows)  # with observation weights: the copies keep theirs
    loss = rows_loss(state.loss, rows)
    if counts is not None:  # the offsets stay; a row drawn k times counts k times
        response = response.with_observation_weights(counts, response.offset, "frequency")
        loss = RowWeightedLoss(state.loss.family, state.loss.base, counts, "frequency")
    pool = list(state.candidates.pool)
    # Only the pool: the baseline extras do not enter the weights.
    outputs, _ = cross_validate_draws(state.family, state.design.X[rows], response, pool, draws,
                                      loo=False, ridge=state.ridge)
    _, solution, _ = solve_draw_weights(
        outputs, response.y, pool, draws, loss, state.weight_options.shrinkage,
        warn_failures=False, record=record,
        context=f"in {name} of the refitting bootstrap of {fit_name(state)}",
    )
    return np.asarray(solution.weights, dtype=float)


def _draw(state: FitState, seed: int, b: int) -> tuple:
    """Rows, their counts (frequency weights; else None) and folds of resample *b*."""
    response = state.response
    if frequency_resampling(state):
        return weighted_resample(response.row_weights, state.cv_spec, seed=seed, b=b,
                                 y=response.y, classes=response.classes)
    rows, folds = bootstrap_resample(len(response.y), state.cv_spec, seed=seed, b=b,
                                     state_folds=state.folds, y=response.y,
                                     classes=response.classes, groups=state.groups)
    return rows, None, folds


def _run_resamples(state: FitState, share: list, seed: int) -> list:
    """``(b, weights, solution, error)`` of the resamples numbered in *share* (one worker's
    share): a resample whose rows cannot be fitted has its error instead of weights."""
    out = []
    for b in share:
        try:
            rows, counts, folds = _draw(state, seed, b)
            record: list = []
            weights = refit_weights(state, rows, _repeated_draws(state, rows, folds, seed, b),
                                    name=f"boot {b}", record=record, counts=counts)
        except RESAMPLE_FAILURES as err:
            out.append((b, None, None, err))
            continue
        out.append((b, weights, record[0], None))
    return out


def frequency_resampling(state: FitState) -> bool:
    """Whether the bootstrap resamples the data expanded by frequency weights (drawing rows
    in proportion to them); with given fold labels whole groups are drawn instead."""
    return state.response.weight_type == "frequency" and not _given_labels(state.cv_spec)


def refitting_bootstrap(
    state: FitState, n_resamples: int, seed: int, n_jobs: int | None = None,
    progress: bool | None = None,
) -> tuple[np.ndarray, list[str], pd.DataFrame, dict[str, str]]:
    """Weights re-fitted on *n_resamples* bootstrap resamples (see :func:`bootstrap_resample`;
    with frequency weights :func:`weighted_resample`).

    A resample whose rows cannot be fitted (:data:`RESAMPLE_FAILURES`: a class drawn in a
    single row, every candidate failing) is recorded with its reason and left out; the
    others are returned.

    Parameters
    ----------
    state : FitState
    n_resamples : int
    seed : int
    n_jobs : int, optional
        Workers over resamples (joblib). Each resample has its own seed, so
        the weights do not depend on *n_jobs*.
    progress : bool, optional
        A bar over the resamples (:mod:`pearlstats.progress`); default the fit's ``progress``.

    Returns
    -------
    weights : ndarray (resamples fitted, J)
    names : list of str
        ``"boot b"`` of the resamples fitted.
    gaps : DataFrame
        Per resample: the certified ``kkt_gap`` of its weight solve, ``objective``,
        ``certified`` and ``solver`` (:func:`~pearlstats.weights.certificate.gap_table`).
    failed : dict of str -> str
        ``"boot b"`` -> why resample b could not be fitted.

    Raises
    ------
    PearlError
        The first resample's error (its type) when no resample could be fitted.

    Warns
    -----
    ConvergenceWarning
        A resample's solve was not certified. In-process solves warn themselves; those of
        parallel workers (whose warnings do not reach this process) are reported here.
    """
    workers = worker_count(n_jobs, n_resamples)
    # A few shares per worker balance the load; every resample keeps its own seed.
    parts = np.array_split(np.arange(n_resamples), min(n_resamples, 4 * workers))
    shares = [part.tolist() for part in parts]
    results, progress = [], state.progress if progress is None else progress
    with progress_bar(n_resamples, "bootstrap: resamples", progress) as bar, \
            timed(logger, "refitting bootstrap", resamples=n_resamples, workers=workers):
        done = (map(lambda share: _run_resamples(state, share, seed), shares) if workers == 1
                else joblib.Parallel(n_jobs=workers, return_as="generator")(
                    joblib.delayed(_run_resamples)(state, share, seed) for share in shares))
        for share in done:  # in order: the generator yields the shares as submitted
            results.append(share)
            bar.update(len(share))
    done = [item for share in results for item in share]
    failed = {f"boot {b}": str(err) for b, _, _, err in done if err is not None}
    fitted = [item for item in done if item[3] is None]
    if not fitted:
        first = next(err for _, _, _, err in done)
        message = (f"none of the {n_resamples} bootstrap resamples of {fit_name(state)} could "
                   f"be fitted; the first: {first}")
        if isinstance(first, AllCandidatesFailedError):  # its ledger says why: keep it
            raise AllCandidatesFailedError(message, first.failures) from first
        raise type(first)(message) from first
    weights = np.vstack([w for _, w, _, _ in fitted])
    names = [f"boot {b}" for b, _, _, _ in fitted]
    gaps = gap_table([solve for _, _, solve, _ in fitted], names)
    uncertified = gaps.index[~gaps["certified"]].tolist()
    if workers > 1 and uncertified:
        warn(
            f"the weight solves of {uncertified} in the refitting bootstrap of "
            f"{fit_name(state)} were not certified (largest gap "
            f"{gaps['kkt_gap'].max():.3g}); see the result's attrs['kkt_gap']",
            ConvergenceWarning,
        )
    return weights, names, gaps, failed


def subsample(n: int, m: int, cv_spec: int | str | np.ndarray, *, seed: int, b: int,
              state_folds: np.ndarray | None = None, y: np.ndarray | None = None,
              classes: Sequence | None = None,
              groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows and fold labels of subsample *b*: *m* of the *n* rows drawn without replacement.

    Subsample b draws from the SeedSequence child ``(b,)`` of ``(seed, m)``: rows
    ``np.sort(rng.choice(n, m, replace=False))``, then the fold stage on them (with the same
    ``rng``) as for a bootstrap resample. With fold labels given to the fit (groups), whole
    groups are drawn instead: ``max(2, round(G m / n))`` of the G labels, without replacement.
    m-out-of-n subsampling stays consistent where the bootstrap is not, e.g. for weights on
    the boundary of the simplex (Politis, Romano and Wolf 1999; Andrews 2000). With
    ``groups=`` dealt into the fit's folds (*groups*), the groups are drawn, each row keeping
    its fold (again while the rows drawn hold fewer than two folds).
    """
    _refuse_partial_splits(cv_spec)
    rng = np.random.default_rng(np.random.SeedSequence([seed, m], spawn_key=(b,)))
    if _given_labels(cv_spec):
        clusters = state_folds if groups is None else groups
        n_groups = int(clusters.max()) + 1
        while True:
            chosen = np.sort(rng.choice(n_groups, max(2, round(n_groups * m / n)),
                                        replace=False))
            rows = np.flatnonzero(np.isin(clusters, chosen))
            if np.unique(state_folds[rows]).size >= 2:
                break
    else:
        rows = np.sort(rng.choice(n, size=m, replace=False))
    return rows, _resample_folds(rows, cv_spec, rng, state_folds, y, classes,
                                 f"subsample {b} of {m} rows (seed {seed})")


def subsampling_weights(state: FitState, n_resamples: int, m: int, seed: int,
                        progress: bool | None = None) -> np.ndarray:
    """Weights re-fitted on *n_resamples* m-out-of-n subsamples (:func:`subsample`).

    Each subsample runs the fit's stages as the refitting bootstrap does (folds drawn on it,
    every candidate refitted, weights re-solved with the fit's ``cv_repeats`` and
    shrinkage). Their spread is that of the procedure at *m* rows: multiplied by
    ``sqrt(m / (n - m))`` it estimates the spread at n rows (``sqrt(m / n)`` to first order
    when m / n -> 0; the exact factor for a mean drawn without replacement).

    Returns
    -------
    ndarray (n_resamples, J)
    """
    n = len(state.response.y)
    out = []
    progress = state.progress if progress is None else progress
    with progress_bar(n_resamples, f"subsampling: {m} of {n} rows", progress) as bar:
        for b in range(n_resamples):
            rows, folds = subsample(n, m, state.cv_spec, seed=seed, b=b, state_folds=state.folds,
                                    y=state.response.y, classes=state.response.classes,
                                    groups=state.groups)
            # further fold draws (cv_repeats) as the bootstrap draws them for its resample b
            draws = _repeated_draws(state, rows, folds, seed, b)
            out.append(refit_weights(state, rows, draws, name=f"subsample {b}"))
            bar.update()
    return np.vstack(out)


def check_alpha(alpha: Any) -> float:
    """A level in (0, 1) for a ``1 - alpha`` interval."""
    is_number = isinstance(alpha, numbers.Real) and not isinstance(alpha, (bool, np.bool_))
    if not is_number or not 0 < alpha < 1:
        raise OptionError(f"alpha={alpha!r}; use a number in (0, 1), e.g. 0.05 for 95 % intervals")
    return float(alpha)


def uncertainty_table(weights: pd.Series, resampled: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The bootstrap distribution of the procedure's weights, summarised per candidate.

    Columns: ``weight`` (the full-sample weight), ``mean`` and ``spread`` (mean and SD,
    ddof=1, of the resampled weights) and ``q_lower``, ``q_upper`` (their ``alpha/2`` and
    ``1 - alpha/2`` quantiles, numpy's default linear interpolation). Named for what they
    are: with weights on the boundary of the simplex the bootstrap is not consistent
    (Andrews 2000), and the spread was 0.77-1.45 times the weights' Monte Carlo SD across
    three designs (``vignettes/results/inference_checks_weights.md``), so it is no standard
    error, and the quantiles are no confidence interval (the resampled weights are shifted
    away from the dominant candidate, and the quantiles excluded the full-sample weight in
    up to 11 % of data sets).
    """
    values = resampled.to_numpy()
    lower, upper = np.quantile(values, [alpha / 2, 1 - alpha / 2], axis=1)
    return pd.DataFrame({
        "weight": weights,
        "mean": values.mean(axis=1),
        "spread": values.std(axis=1, ddof=1),
        "q_lower": lower,
        "q_upper": upper,
    }, index=resampled.index)
