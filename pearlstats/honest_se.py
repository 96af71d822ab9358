"""Standard errors of the honest risk by nested cross-validation (Bates, Hastie & Tibshirani).

The default SEs of ``res.honest`` (``honest_se="naive"``) are SD / sqrt(n) of the
held-out row losses: they treat the rows of a cross-validation as independent,
which they are not (every row trains the models that score the others), and at
n = 100 they under-cover the test risk. ``honest_se="nested"`` replaces them by
the nested cross-validation (NCV) estimator of

    Bates, S., Hastie, T. and Tibshirani, R. (2023). Cross-validation: what does
    it estimate and how well does it do it? *Journal of the American Statistical
    Association* 119(546), 1434-1445. arXiv:2104.00673 (their Algorithm 1 and
    Section 4).

applied to the whole PEARL procedure (inner folds, candidates, weights, each
baseline's choice), the "fitting algorithm" of the paper. For each of R random
splits into the fit's K outer folds I_1..I_K, and each fold k:

* ``e_out``: the losses on I_k of the procedure run on the other K - 1 folds;
* ``e_in``: the losses on each I_k' (k' != k) of the procedure run on the rows
  outside I_k and I_k' (one run per pair {k, k'} scores both folds);
* ``a_k = (mean(e_in) - mean(e_out))^2`` and ``b_k = var(e_out) / |I_k|``.

Then ``MSE = mean(a) - mean(b)`` estimates the mean squared error of the CV
estimate, ``Err_NCV = mean(e_in)``, and with ``Err_CV`` the mean of the outer
losses (a K-fold CV estimate, averaged over the R splits) the bias of
``Err_NCV`` for the error at n rows is ``(1 + (K - 2) / K) (Err_NCV - Err_CV)``
(the paper's extrapolation from training sizes n(K-2)/K and n(K-1)/K when the
excess error scales as 1/size). The reported risk is ``Err_NCV - bias`` and its
SE ``sqrt((K - 1) / K * MSE)`` (the MSE is that of a CV on n(K-1)/K rows),
bounded below by the naive SE of the inner losses and above by sqrt(K) times
it, as the paper does (no CV estimate is more precise than n independent
losses, nor less than one fold's). The paired ratio PEARL / strategy gets the
same treatment through its linearisation ``(a_i - r b_i) / B`` on each row.
This is the arithmetic of mlr3inferr's ``ci.ncv``; the authors' R package
``nestedcv`` raises (K - 2)/K to the power 1.5 in the bias factor, a later
change not in the paper, which is not followed here.

Split 0 is the fit's own outer folds (its ``e_out`` are ``res.honest``'s row
losses), so the cost is about ``3 R`` times that of ``res.honest`` for K = 5
(K + K(K - 1)/2 procedure runs per split instead of K). Measured at n = 100
(one thread, loaded machine): with R = 5, ``res.honest`` took 0.35 CPU-s
instead of 0.029 (12x) on the 7-candidate ``"blocks"`` design and 0.50 instead
of 0.035 (15x) on the 31-candidate ``"paper"`` design of
:mod:`pearlstats.experiments.inference_checks.designs`; the default R = 50
costs ten times that.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .checks import check_int
from .design.folds import make_folds
from .engines._common import EngineOutput
from .engines.intercept import response_intercept_predictions
from .exceptions import FoldError, OptionError
from .nested import NestedCV, _outer_fold, nested_cross_validation, strategy_row_losses
from .progress import progress_bar, timed
from .stages import FitState, cross_validate
from .weights.baselines import STRATEGIES, TABLE_ROWS, combine
from .weights.precision import exact_fit_notes, null_floor, risk_ratios

logger = logging.getLogger(__name__)

__all__ = ["HONEST_SE_CHOICES", "NESTED_MIN_OUTER", "RATIO_SE_NOTE", "NestedSE",
           "NestedSEEstimate", "check_honest_se", "honest_se_note", "nested_se", "ncv_moments",
           "split_moments"]

# Each pair of outer folds is held out at once (e_in), so 2 outer folds leave no training rows.
NESTED_MIN_OUTER = 3

HONEST_SE_CHOICES = {
    "naive": "SD / sqrt(n) of the held-out row losses, rows treated as independent",
    "nested": "nested cross-validation of Bates, Hastie & Tibshirani (2023), "
              "NestedSE() repetitions",
}


@dataclass(frozen=True)
class NestedSE:
    """``honest_se=NestedSE(repeats=R)``: the nested-CV standard errors with R random splits.

    ``honest_se="nested"`` is ``NestedSE()``. Each split costs K + K(K - 1)/2
    re-runs of the procedure (15 for the default 5 outer folds), against K for
    ``res.honest`` itself; more splits make the MSE estimate (a difference of two
    means) less noisy. The authors' R package defaults to 50, and so does this one, for a
    measured reason: on the calibration designs (vignette 10) the coverage of the test
    risk and the SE's ratio to the spread were about the same at R = 5, 10, 20 and 50 (the
    noise of few splits averages out over data sets; at R = 50, 400 data sets of the
    ``"blocks"`` design: coverage 0.94-0.96, SE / SD 1.13-1.24), but the SE of *one* fit
    moves between runs of R splits by a median 35 % at R = 5, 23 % at R = 20 and 15 % at
    R = 50 (its Monte Carlo error, ``se_mc_error``, falls as 1/sqrt(R)).

    What the interval covers: ``risk +- 1.96 se`` targets the risk of the
    procedure fitted on all n rows of *this* data set, scored on new rows (Bates
    et al.'s Err_XY: the predictor you have), and it covers the expected risk over
    data sets of n rows (their Err) at least as well. The CV estimate is nearly
    uncorrelated with Err_XY (correlation -0.07 to 0.03 in a referee's simulations,
    issue 36), so its error around Err_XY includes Err_XY's own variation over data
    sets and the SE is larger than the estimate's spread over data sets. The
    paired ratio's SE applies the same estimator to the delta-method
    linearisation of the ratio: a heuristic, not derived by the authors.
    Where the per-row losses have a long right tail (a few rows with huge squared
    errors: the paper's kernel-PCA design, t-distributed noise) the interval
    under-covers, its misses all above: a mean of n rows is then usually below the
    risk, and even an oracle that knows the predictor and draws n fresh independent rows
    covers its risk by mean +- 1.96 SD / sqrt(n) only 0.69 (paper) and 0.72 (t3) of
    the time at n = 100
    (:mod:`pearlstats.experiments.inference_checks.loss_tails`).
    ``res.nested_se`` keeps the splits: its ``running()`` table shows whether the
    estimate has settled, its ``se_mc_error`` column the SE's Monte Carlo error.
    The calibration (coverage, SE against the spread, how often the naive lower
    bound sets the SE) is measured by
    :mod:`pearlstats.experiments.inference_checks.nested_calibration`.

    Attributes
    ----------
    repeats : int, default 50
        Random splits of the nested cross-validation.

    Examples
    --------
    >>> NestedSE(repeats=10).repeats
    10
    """

    repeats: int = 50

    def __post_init__(self) -> None:
        check_int("NestedSE(repeats=...)", self.repeats, minimum=1)


def check_honest_se(honest_se: Any, honest: int | bool, grouped: bool, weighted: bool,
                    dask: bool) -> NestedSE | str:
    """``"naive"``, or the :class:`NestedSE` options; refuse what the estimator cannot do.

    Raises
    ------
    OptionError
        Naming the option (dask data, ``honest=False`` or fewer than 3 outer folds, fold
        labels, observation weights).
    """
    if isinstance(honest_se, NestedSE):
        options = honest_se
    elif honest_se in HONEST_SE_CHOICES:
        options = NestedSE() if honest_se == "nested" else "naive"
    else:
        listed = ", ".join(f"{choice!r} ({meaning})"
                           for choice, meaning in HONEST_SE_CHOICES.items())
        raise OptionError(f"honest_se={honest_se!r}; use {listed}, or NestedSE(repeats=R)")
    if options == "naive":
        return options
    reasons = [
        (dask, "dask data (the honest re-runs run on in-memory rows only)"),
        (honest is False, "honest=False (it estimates the SE of res.honest; set honest=K)"),
        (grouped,
         "cv= fold labels, a fold column, a splitter object or groups= (the folds are "
         "given or grouped): the estimator draws its own random splits, and its "
         "var(e_out) / |fold| treats rows as independent, which grouped rows are not"),
        (weighted, "observation weights (the estimator is written for unweighted means)"),
        (honest is not False and honest < NESTED_MIN_OUTER,
         f"honest={honest} outer folds (each pair of outer folds is held out together, so it "
         f"needs honest >= {NESTED_MIN_OUTER} to leave rows to train on)"),
    ]
    refused = [why for bad, why in reasons if bad]
    if refused:
        raise OptionError(f"honest_se='nested' is not available with {'; '.join(refused)}; "
                          "use honest_se='naive'")
    return options


# The paired ratio's nested SE is not derived in Bates et al.: say so wherever it is shown.
RATIO_SE_NOTE = ("the ratio SE applies the same estimator to the delta-method linearisation "
                 "of the ratio on each row, a heuristic (not derived by Bates et al.)")

# A relative Monte Carlo error of the SE (from R splits) above this is worth a note. It falls as
# 1/sqrt(R): on the calibration designs (vignette 10) its median was about 0.35 at R = 5, 0.23 at
# R = 20 and 0.15 at the default R = 50, so the note marks fits whose splits disagree more than
# those of a typical fit at the default.
_MC_ERROR_NOTE_ABOVE = 0.20


def honest_se_note(options: NestedSE | str, table: pd.DataFrame | None = None) -> str:
    """The summary's words on what the honest SEs are.

    Parameters
    ----------
    options : NestedSE or "naive"
    table : DataFrame, optional
        The nested table (``res.honest``): its ``se_bound`` and ``se_mc_error`` are
        counted into the note.

    Examples
    --------
    >>> honest_se_note("naive")
    'SE (naive) treats the held-out rows as independent: it under-covers at small n.'
    """
    if options == "naive":
        # In words, no Python: the notes go into papers' tables too.
        return "SE (naive) treats the held-out rows as independent: it under-covers at small n."
    note = (f"Honest risk and SE (nested CV): Bates, Hastie & Tibshirani (2023)'s nested "
            f"cross-validation over {options.repeats} split{'s' if options.repeats > 1 else ''} "
            "of the rows into the outer folds, risk bias-corrected to n rows; "
            f"{RATIO_SE_NOTE}.")
    if table is None or "se_bound" not in table:
        return note
    lower = int((table["se_bound"] == "lower").sum())
    if lower:
        note += (f" The SE is its lower bound (the naive SE) for {lower} of {len(table)} rows: "
                 "their MSE estimate fell below it.")
    upper = int((table["se_bound"] == "upper").sum())
    if upper:
        note += (f" The SE is its upper bound (sqrt(K) times the naive SE, K outer folds) for "
                 f"{upper} of {len(table)} rows: their MSE estimate exceeded it.")
    noisy = table["se_mc_error"].max(skipna=True)
    if np.isfinite(noisy) and noisy > _MC_ERROR_NOTE_ABOVE:
        note += (f" With {options.repeats} splits an SE varies by up to {noisy:.0%} "
                 "(Monte Carlo error); more splits would steady it.")
    return note


@dataclass(frozen=True)
class NestedSEEstimate:
    """The nested-CV losses and what Bates et al.'s estimator makes of them.

    Read it as ``res.nested_se`` (None with ``honest_se="naive"``).

    Attributes
    ----------
    folds : tuple of ndarray (n,)
        The outer folds of each split (split 0: the fit's honest folds).
    outer_losses : tuple of ndarray (n, S)
        Per split: each row's loss, per strategy and then the Null row (columns in
        TABLE_ROWS order),
        under the procedure run without the row's fold.
    inner_losses : tuple of ndarray (K, n, S)
        Per split: ``[k, i]`` the loss of row i under the procedure run without
        fold k and row i's own fold (NaN for the rows of fold k).
    table : DataFrame
        Per strategy: ``risk`` (Err_NCV - bias; NaN where that is negative),
        ``se``, ``ratio`` (PEARL / row), ``ratio_se`` (a heuristic: see
        :data:`RATIO_SE_NOTE`), ``bias``, ``mse`` (the paper's MSE estimate,
        before scaling), ``se_bound`` (``"lower"`` where the SE is the naive
        SE because the MSE estimate is below it, ``"upper"`` where it is
        sqrt(K) times the naive SE, else ``""``), ``se_mc_error`` (the
        relative Monte Carlo error of ``se`` from using R splits, NaN where a
        bound sets the SE or R = 1; :func:`split_moments`) and ``note`` (why a
        number is missing, else "").
    loss_name : str or None
        The fit's loss, for the precision of its risks when a table is recomputed
        from fewer splits (:meth:`using`).

    Examples
    --------
    >>> import pearlstats as pearl
    >>> res = pearl.datasets.example_fit(honest_se=pearl.NestedSE(repeats=3))
    >>> estimate = res.nested_se
    >>> len(estimate.folds), list(estimate.running().columns)
    (3, ['risk', 'se', 'se_bound'])
    >>> estimate.running().loc[3].equals(estimate.table[["risk", "se", "se_bound"]])
    True
    """

    folds: tuple
    outer_losses: tuple
    inner_losses: tuple
    table: pd.DataFrame
    loss_name: str | None = None

    @property
    def repeats(self) -> int:
        """The number of random splits R.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit(honest_se=pearl.NestedSE(repeats=3))
        >>> res.nested_se.repeats
        3
        """
        return len(self.folds)

    def using(self, splits: int) -> pd.DataFrame:
        """The table from the first *splits* splits only (what ``NestedSE(repeats=splits)``
        would report with the same seed).

        Parameters
        ----------
        splits : int
            1 to :attr:`repeats`.

        Returns
        -------
        DataFrame
            Columns as :attr:`table`.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit(honest_se=pearl.NestedSE(repeats=3))
        >>> one = res.nested_se.using(1)  # what NestedSE(repeats=1) reports
        >>> list(one.index[:2]), bool(one.loc["PEARL", "se"] > 0)
        (['PEARL', 'MS'], True)
        """
        check_int("splits", splits, minimum=1)
        if splits > self.repeats:
            raise OptionError(f"splits={splits}, but the estimate has {self.repeats} splits; "
                              f"use 1 to {self.repeats}")
        return _table(self.folds[:splits], self.outer_losses[:splits],
                      self.inner_losses[:splits], self.loss_name)

    def excess_over(self, strategy: str = "MS") -> tuple[float, float]:
        """PEARL's nested-CV risk minus a strategy's, and the nested-CV SE of that difference.

        The difference of the two bias-corrected risks of :attr:`table`, and Bates et al.'s
        SE of the per-row loss differences (their estimator is linear in the losses, so
        this is the SE of the difference itself, not a delta-method heuristic as the ratio's).

        Parameters
        ----------
        strategy : str, default "MS"
            A row of :attr:`table`.

        Returns
        -------
        (float, float)
            NaN where either risk is undefined (its ``note`` says why).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit(honest_se=pearl.NestedSE(repeats=3))
        >>> excess, se = res.nested_se.excess_over("MS")
        >>> table = res.nested_se.table
        >>> bool(np.isclose(excess, table.loc["PEARL", "risk"] - table.loc["MS", "risk"]))
        True
        """
        names = list(TABLE_ROWS)
        if strategy not in names:
            raise OptionError(f"strategy={strategy!r} is not a row of the nested table; use one "
                              f"of {names}")
        s = names.index(strategy)

        def difference(losses: np.ndarray) -> np.ndarray:
            return losses[..., :1] - losses[..., s:s + 1]

        se = ncv_moments(self.folds, [difference(o) for o in self.outer_losses],
                         [difference(i) for i in self.inner_losses])["se"][0]
        excess = self.table.loc["PEARL", "risk"] - self.table.loc[strategy, "risk"]
        return float(excess), float(se)

    def running(self) -> pd.DataFrame:
        """The running estimate over the splits: risk, SE and its bound after r = 1..R splits.

        The stability diagnostic the authors' R package ``nestedcv`` plots: once
        the estimate has settled, more splits change little. A drift over the
        last splits says R is too small for this data (see ``se_mc_error``).

        Returns
        -------
        DataFrame
            Index (``splits``, strategy), columns ``risk``, ``se``, ``se_bound``.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit(honest_se=pearl.NestedSE(repeats=3))
        >>> running = res.nested_se.running()
        >>> running.xs("PEARL", level="strategy").index.tolist()
        [1, 2, 3]
        """
        frames = {r: self.using(r)[["risk", "se", "se_bound"]]
                  for r in range(1, self.repeats + 1)}
        return pd.concat(frames, names=["splits", "strategy"])


def ncv_moments(folds: Sequence[np.ndarray], outer_losses: Sequence[np.ndarray],
                inner_losses: Sequence[np.ndarray]) -> dict:
    """Bates et al.'s Algorithm 1 on given losses: Err_NCV, Err_CV, MSE, SEs, per column.

    Parameters
    ----------
    folds : sequence of ndarray (n,)
        Outer folds 0..K-1 of each split.
    outer_losses : sequence of ndarray (n, S)
    inner_losses : sequence of ndarray (K, n, S)

    Returns
    -------
    dict of ndarray (S,)
        ``err_ncv`` (mean of every inner loss), ``err_cv`` (mean of the outer
        losses), ``mse`` (mean of a minus mean of b), ``naive_se`` (SD of the
        inner losses / sqrt(n)) and ``se`` (sqrt((K - 1)/K max(MSE, 0)) bounded to
        [naive_se, sqrt(K) naive_se]).

    Examples
    --------
    >>> folds = [np.array([0, 0, 1, 1, 2, 2])]
    >>> outer = [np.arange(6.0)[:, None]]
    >>> inner = [np.where(folds[0][None, :, None] == np.arange(3)[:, None, None], np.nan,
    ...                   outer[0][None] + 1.0)]
    >>> moments = ncv_moments(folds, outer, inner)
    >>> float(moments["err_ncv"][0] - moments["err_cv"][0])
    1.0
    """
    per_split = split_moments(folds, outer_losses, inner_losses)
    n, K = len(folds[0]), inner_losses[0].shape[0]
    mse = per_split["mse"].mean(axis=0)
    every = np.concatenate([inner[k][split != k] for split, inner in zip(folds, inner_losses)
                            for k in range(inner.shape[0])])
    naive = every.std(axis=0, ddof=1) / np.sqrt(n)
    raw = np.sqrt((K - 1) / K * np.maximum(mse, 0.0))
    se = np.clip(raw, naive, np.sqrt(K) * naive)
    bound = np.where(raw < naive, "lower", np.where(raw > np.sqrt(K) * naive, "upper", ""))
    R = len(folds)
    with np.errstate(invalid="ignore", divide="ignore"):
        # se ~ sqrt(MSE): its relative error is half the MSE's (delta method)
        mc_error = 0.5 * per_split["mse"].std(axis=0, ddof=1) / np.sqrt(R) / mse if R > 1 \
            else np.full_like(mse, np.nan)
    mc_error = np.where(bound == "", mc_error, np.nan)
    return {"err_ncv": every.mean(axis=0),
            "err_cv": per_split["err_cv"].mean(axis=0),
            "mse": mse, "naive_se": naive, "se": se, "se_bound": bound,
            "se_mc_error": mc_error}


def split_moments(folds: Sequence[np.ndarray], outer_losses: Sequence[np.ndarray],
                  inner_losses: Sequence[np.ndarray]) -> dict:
    """Each split's own terms of Bates et al.'s estimator: its MSE estimate and CV risk.

    ``mse[r]`` is mean(a) - mean(b) over the K folds of split r, so the
    estimator's MSE is their mean over splits, and their spread over splits
    gives its Monte Carlo error (the splits are independent draws given the
    data): ``SD(mse[r]) / sqrt(R)``.

    Parameters
    ----------
    folds, outer_losses, inner_losses : sequence
        As :func:`ncv_moments`.

    Returns
    -------
    dict of ndarray (R, S)
        ``mse`` and ``err_cv`` (mean outer loss) per split.

    Examples
    --------
    >>> folds = [np.array([0, 0, 1, 1, 2, 2])] * 2
    >>> outer = [np.arange(6.0)[:, None], np.arange(6.0)[:, None] + 1]
    >>> inner = [np.where(folds[0][None, :, None] == np.arange(3)[:, None, None], np.nan,
    ...                   o[None] + 1.0) for o in outer]
    >>> split_moments(folds, outer, inner)["err_cv"].ravel().tolist()
    [2.5, 3.5]
    """
    mse, err_cv = [], []
    for split, outer, inner in zip(folds, outer_losses, inner_losses):
        a_terms, b_terms = [], []
        for k in range(inner.shape[0]):
            held = split == k
            e_out, e_in = outer[held], inner[k][~held]
            a_terms.append((e_in.mean(axis=0) - e_out.mean(axis=0)) ** 2)
            b_terms.append(e_out.var(axis=0, ddof=1) / held.sum())
        mse.append(np.mean(a_terms, axis=0) - np.mean(b_terms, axis=0))
        err_cv.append(outer.mean(axis=0))
    return {"mse": np.array(mse), "err_cv": np.array(err_cv)}


# The bias extrapolation's way of failing: a note on the row instead of a negative risk.
NEGATIVE_RISK_NOTE = ("risk undefined: the bias correction to n rows, (1 + (K - 2)/K)(Err_NCV - "
                      "Err_CV), exceeds Err_NCV, so the excess risk does not shrink as 1/size "
                      "here (too few rows for this strategy's parameters); Err_CV is {err_cv}")


def _table(folds, outer_losses, inner_losses, loss_name: str | None = None) -> pd.DataFrame:
    """Risk, SE, ratio and ratio SE of every strategy from the nested-CV losses.

    A loss is never negative, nor is a risk: where the bias-corrected risk falls below 0
    (the extrapolation from training sizes n(K-2)/K and n(K-1)/K overshoots, which happens
    when a strategy's risk falls steeply with the rows, e.g. 12 parameters on 18 training
    rows) the risk, ratio and ratio SE are NaN and ``note`` says why, quoting Err_CV (the
    uncorrected K-fold estimate on n(K-1)/K rows, an upper estimate). A risk 0 to the
    response's precision has no ratio either (:mod:`pearlstats.weights.precision`).
    """
    K = inner_losses[0].shape[0]
    names = list(TABLE_ROWS)
    moments = ncv_moments(folds, outer_losses, inner_losses)
    bias = (1.0 + (K - 2) / K) * (moments["err_ncv"] - moments["err_cv"])
    corrected = moments["err_ncv"] - bias
    negative = corrected < 0
    risk = np.where(negative, np.nan, corrected)
    floor = null_floor(loss_name, names, risk)
    ratio = risk_ratios(risk, 0, floor)  # column 0 is PEARL
    divisor = np.where(np.isfinite(ratio), risk, np.nan)

    def linearised(losses: np.ndarray) -> np.ndarray:
        # (a - r b) / B per strategy: the delta-method influence of r = A / B on each row
        return (losses[..., :1] - np.nan_to_num(ratio) * losses) / divisor

    with np.errstate(invalid="ignore"):  # NaN columns (undefined ratios) stay NaN
        ratio_se = ncv_moments(folds, [linearised(o) for o in outer_losses],
                               [linearised(i) for i in inner_losses])["se"]
    notes = [NEGATIVE_RISK_NOTE.format(err_cv=f"{err_cv:.4g}") if bad else note
             for bad, err_cv, note in zip(negative, moments["err_cv"],
                                          exact_fit_notes(risk, floor))]
    return pd.DataFrame({"risk": risk, "se": moments["se"], "ratio": ratio, "ratio_se": ratio_se,
                         "bias": bias, "mse": moments["mse"], "se_bound": moments["se_bound"],
                         "se_mc_error": moments["se_mc_error"], "note": notes}, index=names)


def _split_seed(seed: int, *key: int) -> int:
    return int(np.random.SeedSequence([seed, 2, *key]).generate_state(1)[0])


def _strategy_losses(state: FitState, fold, split: np.ndarray, label: int) -> np.ndarray:
    """Losses of the rows of fold *label* of *split* under every strategy of one re-run.

    The last column is the intercept-only model (the Null row) fitted on the other folds.
    """
    rows = np.flatnonzero(split == label)
    y = state.response.y[rows]
    null = response_intercept_predictions(state.response, state.family.name, split)[rows]
    return np.column_stack([
        state.loss.pointwise(y, combine(fold.held_out, fold.weights[name], state.loss))
        for name in STRATEGIES
    ] + [state.loss.pointwise(y, null)])


def _pair_outside(state: FitState, merged: np.ndarray) -> EngineOutput | None:
    """The cross-validation over the merged folds a pair's re-run reads its held-out
    predictions from, or None: then likelihood candidates are refitted on the training rows
    (the inner cross-validation's all-rows fits), since one held-out fold is scored and K - 2
    of the K - 1 merged folds' fits would go unread."""
    if state.family.likelihood:
        return None
    return cross_validate(state.family.configured(candidate_ridges={}), state.design.X,
                          state.response, state.candidates.everything, merged, ridge=state.ridge)


def _pair_losses(state: FitState, split: np.ndarray, k: int, other: int, seed: int) -> np.ndarray:
    """Losses of folds k and *other* under the procedure run on the remaining folds.

    The two folds are merged into one outer fold of a (K - 1)-fold split, and the
    procedure re-run without it as :func:`~pearlstats.nested._outer_fold` re-runs it
    for ``res.honest`` (inner folds, ``cv_repeats``, shrinkage, separation ridges).
    """
    merged = np.unique(np.where(split == other, k, split), return_inverse=True)[1]
    label = int(merged[np.flatnonzero(split == k)[0]])
    outside = _pair_outside(state, merged)
    seeds = [np.random.SeedSequence([seed, 3, k, other])] + [
        np.random.SeedSequence([seed, 3, k, other, r])
        for r in range(1, state.weight_options.cv_repeats)
    ]
    fold = _outer_fold(state, outside, merged, label, seeds)
    return _strategy_losses(state, fold, merged, label)


def _inner_losses(state: FitState, split: np.ndarray, seed: int) -> np.ndarray:
    """``[k, i]``: row i's loss under the procedure run without fold k and its own fold."""
    K, n = int(split.max()) + 1, len(split)
    inner = np.full((K, n, len(TABLE_ROWS)), np.nan)
    for k in range(K):
        for other in range(k + 1, K):
            losses = _pair_losses(state, split, k, other, seed)
            rows = np.flatnonzero((split == k) | (split == other))
            # the pair's run scores fold `other` for outer fold k, and fold k for `other`
            inner[k, rows[split[rows] == other]] = losses[split[rows] == other]
            inner[other, rows[split[rows] == k]] = losses[split[rows] == k]
    return inner


def nested_se(state: FitState, honest_nested: NestedCV, options: NestedSE) -> NestedSEEstimate:
    """Bates, Hastie & Tibshirani's nested-CV risk and SE of every strategy of a fit.

    Parameters
    ----------
    state : FitState
    honest_nested : NestedCV
        The fit's outer cross-validation (that of ``res.honest``): split 0.
    options : NestedSE
        The number of random splits R.

    Returns
    -------
    NestedSEEstimate
    """
    K = honest_nested.n_outer
    n = len(state.response.y)
    if n < 2 * K:  # a fold of one row has no variance of its losses: every SE would be NaN
        raise FoldError(
            f"honest_se='nested' needs at least 2 rows in every outer fold (its SE uses the "
            f"variance of each fold's held-out losses); {n} rows in honest={K} outer folds "
            f"leave a fold of 1 row: use honest <= {n // 2}, or honest_se='naive'")
    strata = (state.response.y.astype(np.intp) if state.response.classes is not None else None)
    folds, outer, inner = [], [], []
    with progress_bar(options.repeats, "nested SE: splits", state.progress) as bar, \
            timed(logger, "nested SE", splits=options.repeats, outer_folds=K):
        for r in range(options.repeats):
            if r == 0:
                split, run = honest_nested.outer_folds, honest_nested
            else:
                split = make_folds(K, len(state.response.y), strata=strata,
                                   seed=np.random.SeedSequence([state.seed, 2, r]))
                run = nested_cross_validation(state, outer=split, progress=False,
                                              seed=_split_seed(state.seed, r, 0))
            folds.append(split)
            outer.append(strategy_row_losses(run, state).to_numpy())
            inner.append(_inner_losses(state, split, _split_seed(state.seed, r, 1)))
            bar.update()
    return NestedSEEstimate(tuple(folds), tuple(outer), tuple(inner),
                            _table(folds, outer, inner, state.loss.name), state.loss.name)
