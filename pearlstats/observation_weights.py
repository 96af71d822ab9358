"""Observation weights, offsets and exposure of :func:`pearlstats.fit`: checks and refusals.

``weights=`` with ``weight_type="frequency"`` counts rows (statsmodels' ``freq_weights``:
a weight of 2 is the row twice); ``weight_type="variance"`` scales each row's variance by
``1 / w`` (statsmodels' ``var_weights``, R's ``glm(weights=)`` for gaussian and poisson).
Both give the same candidate fits and PEARL weights; they differ in the statsmodels refits'
inference (degrees of freedom, scale). R's binomial ``weights`` are numbers of trials (the
response a proportion), a different thing not offered here. Weights must be positive:
drop the rows of weight 0. ``offset=`` is added to every candidate's linear predictor;
``exposure=`` (poisson) adds ``log(exposure)``.

Supported (gaussian, binomial, poisson): the candidates' fits in every fold and on all rows
(gaussian: :mod:`pearlstats.engines.weighted`; binomial and poisson: the Newton engine of
:mod:`pearlstats.engines.glm`, weights and offset inside it), also with ``ridge > 0`` (the
engines' penalty with weighted column SDs, :mod:`pearlstats.engines.weighted_ridge`) and the
separation ridge
ladder for separated logistic candidates (``separation="ridge"``, the default; ``"drop"`` and
``"raise"`` too), the weight stage's weighted mean loss
(:mod:`pearlstats.weights.row_weighted`; also over ``cv_repeats`` draws and with a given,
``"size"`` or ``"cv"`` shrinkage: the cross-validated amount scored by the weighted mean of
the held-out rows' losses), the statsmodels refits (``GLM`` with ``freq_weights``/``var_weights``
and ``offset``; with a ridge their ``fit_regularized(L1_wt=0)``) and the averaged
coefficients' inference built on them (with a ridge, the weighted ridge sandwich), ``predict`` and
``evaluate`` (new rows' offsets; test weights), the honest re-runs and the fold-complement
stability table (each subset with its rows' weights), weighted SEs (:func:`mean_se`),
``reweight``/``loss_sensitivity`` (the new loss's weighted mean; by default the losses weights
support), Pearson residuals (times ``sqrt(w)`` with variance weights, statsmodels'
``resid_pearson``), and:

* CV+ prediction intervals (gaussian, poisson) and prediction sets (binomial) from the
  nested cross-validation (:mod:`pearlstats.inference.conformal`): frequency weights count
  rows in the quantiles (an integer weight gives exactly the bounds of the row repeated in
  its fold); variance weights scale the conformity scores to ``sqrt(w_i) |y_i - mu_i|``, and
  ``predict(weights=)`` gives each new row's own variance weight (default 1); every outer
  fold's procedure predicts the new rows with their ``offset=``/``exposure=`` (poisson bounds
  on the count scale).
* The bootstrap (``resample_weights("bootstrap")``, with or without ``refit``, and
  ``weight_uncertainty``): with variance weights rows are resampled uniformly, each copy
  keeping its weight; with frequency weights the resample is one of the expanded data,
  ``round(sum w)`` rows drawn in proportion to the weights, drawn as multinomial counts of
  the rows that become their frequency weights (the cost of the rows, not of ``sum w``)
  (with given fold labels and ``refit``: whole groups drawn, rows keeping their weights).
* ``interval="confidence"`` (gaussian): the weighted GLM refits' covariances, the new rows'
  offset added to the mean and both bounds (statsmodels' ``get_prediction``).

Not yet supported, and refused by name where it would be reached: multinomial, ``downstream``
(MLP), dask data, sparse blocks wide enough for the wide engine, the hinge and absolute
losses (also in ``reweight``), prediction sets with variance weights (a class score has no
variance to scale) (:func:`refuse_unsupported`, :func:`check_observation_weights` and the
results' own checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .checks import align_by_label
from .exceptions import DataError, OptionError, format_positions

__all__ = ["ObservationWeights", "check_observation_weights", "named_columns",
           "refuse_unsupported", "check_new_offset", "effective_nobs", "few_observations_note",
           "WEIGHT_TYPES"]

WEIGHT_TYPES = {
    "frequency": "each row counts w times (statsmodels' freq_weights)",
    "variance": "each row's variance is scaled by 1/w (statsmodels' var_weights)",
}
_FAMILIES = ("gaussian", "binomial", "poisson")


@dataclass(frozen=True)
class ObservationWeights:
    """Checked per-row weights and offset (None when not given), for the rows given to fit."""

    weights: np.ndarray | None
    weight_type: str | None
    offset: np.ndarray | None
    #: Positions of rows whose weight or offset is NaN/inf, with ``missing="drop"`` (which
    #: drops them with the rows missing a covariate); None when every value is finite.
    unusable: np.ndarray | None = None
    #: Where the offset came from, as the summary names it: ``"given"`` (``offset=``),
    #: ``"log(exposure)"``, ``"given + log(exposure)"`` or ``"in the formula"``.
    offset_source: str | None = None

    @property
    def given(self) -> bool:
        return self.weights is not None or self.offset is not None

    def kept(self, rows: np.ndarray) -> ObservationWeights:
        """The values of the rows the fit keeps (``missing="drop"`` removes the others)."""
        def pick(values):
            return None if values is None else values[rows]

        return ObservationWeights(pick(self.weights), self.weight_type, pick(self.offset),
                                  offset_source=self.offset_source)


def _values(name: str, values, n: int, index: pd.Index | None,
            missing: str | None = None) -> np.ndarray:
    """One finite number per data row (a Series matched to *index* by label).

    *missing* is the fit's option: with ``"drop"`` non-finite values are kept (their rows
    are dropped with the others, see :attr:`ObservationWeights.unusable`); None (new rows
    of ``predict``/``evaluate``) and ``"raise"`` refuse them.
    """
    values = align_by_label(f"{name}=", values, index)
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise DataError(f"{name}= must be numbers, one per row of the data ({err})") from None
    if array.ndim != 1 or array.size != n:
        raise DataError(f"{name}= must be one number per row of the data ({n} rows), "
                        f"got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size and missing != "drop":
        hint = "" if missing is None else "; remove those rows, or pass missing='drop' to drop them"
        raise DataError(f"{name}= has NaN or infinite values at "
                        f"{format_positions(bad, labels=index)}{hint}")
    return array


_WHY_POSITIVE = {"weights": "drop the rows of weight 0",
                 "exposure": "exposure is a time or size at risk"}


def check_positive_rows(name: str, array: np.ndarray, index: pd.Index | None) -> None:
    """Refuse a weight or exposure (*name*) <= 0, naming its row by its label in *index*.

    Examples
    --------
    >>> import pandas as pd
    >>> check_positive_rows("exposure", np.array([1.0, 0.5, -2.0]), pd.Index(["p", "q", "r"]))
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.DataError: exposure= must be > 0; it is -2 at row labelled 'r' \
(a negative value has no meaning here; correct those rows)
    """
    _positive(name, array, _WHY_POSITIVE[name], index)


def _positive(name: str, array: np.ndarray, what: str, index: pd.Index | None) -> None:
    bad = np.flatnonzero(array <= 0)
    if bad.size:
        negative = np.flatnonzero(array < 0)
        if negative.size:  # no row can carry a negative count or inverse variance
            bad, what = negative, "a negative value has no meaning here; correct those rows"
        raise DataError(f"{name}= must be > 0; it is {array[bad[0]]:g} at "
                        f"{format_positions(bad, labels=index)} ({what})")


def check_observation_weights(weights: Any, weight_type: str | None, offset: Any, exposure: Any,
                              family: str, n: int,
                              index: pd.Index | None = None,
                              missing: str | None = None) -> ObservationWeights:
    """Validate ``weights``, ``weight_type``, ``offset`` and ``exposure`` of ``fit``.

    pandas Series are matched to the data's rows (*index*) by label, arrays by position
    (:func:`~pearlstats.checks.align_by_label`). With ``missing="drop"`` the rows whose
    weight or offset is NaN/inf are returned in :attr:`ObservationWeights.unusable`
    instead of refused.

    Raises
    ------
    OptionError
        An unknown *weight_type*, *weight_type* without weights, *exposure* outside the
        poisson family, or a family that does not take weights/offsets yet (multinomial).
    DataError
        Values that are not one finite number per row, weights <= 0, exposure <= 0.
    """
    given = weights is not None or offset is not None or exposure is not None
    if weights is None and weight_type is not None:
        raise OptionError(f"weight_type={weight_type!r} needs weights=; leave it None without")
    if not given:
        return ObservationWeights(None, None, None)
    if family not in _FAMILIES:
        raise OptionError(f"observation weights, offset and exposure are not yet supported with "
                          f"family={family!r}; use one of {list(_FAMILIES)}")
    w = None
    if weights is not None:
        if weight_type not in WEIGHT_TYPES:
            options = [f"{k!r} ({v})" for k, v in WEIGHT_TYPES.items()]
            raise OptionError(f"weight_type={weight_type!r}; with weights= use one of {options}")
        w = _values("weights", weights, n, index, missing)
        check_positive_rows("weights", w, index)
    total = None if offset is None else _values("offset", offset, n, index, missing)
    source = None if offset is None else "given"
    if exposure is not None:
        if family != "poisson":
            raise OptionError(f"exposure= is for family='poisson' (log link), got {family!r}; "
                              "give offset= instead")
        t = _values("exposure", exposure, n, index, missing)
        check_positive_rows("exposure", t, index)
        total = np.log(t) if total is None else total + np.log(t)
        source = "log(exposure)" if source is None else "given + log(exposure)"
    return ObservationWeights(w, weight_type if w is not None else None, total,
                              _unusable_rows(w, total), source)


def _unusable_rows(*columns: np.ndarray | None) -> np.ndarray | None:
    """Positions where any given column is NaN/inf (None when there are none)."""
    given = [~np.isfinite(values) for values in columns if values is not None]
    bad = np.logical_or.reduce(given) if given else np.zeros(0, dtype=bool)
    return np.flatnonzero(bad) if bad.any() else None


def named_columns(given: tuple, frame: pd.DataFrame) -> tuple:
    """``(weights, weight_type, offset, exposure)`` with a column name replaced by its column.

    ``weights="count"`` names a column of the data, as ``cv="fold"`` does. *frame* is the
    data's columns in its row order (its index reset, as :func:`~pearlstats.design.data.split_data`
    gives them), so the column is returned as an array, read by position: as a Series on
    that reset index it was matched by label to the data's own index, which paired each row
    with another row's value wherever the index was not 0..n-1.

    Raises
    ------
    DataError
        A name that is not a column of the data.
    """
    names = ("weights", None, "offset", "exposure")
    return tuple(_named_column(name, value, frame) if name else value
                 for name, value in zip(names, given))


def _named_column(name: str, value: Any, frame: pd.DataFrame) -> Any:
    if not isinstance(value, str):
        return value
    if value not in frame.columns:
        raise DataError(f"{name}={value!r} names no column of the data (columns: "
                        f"{list(frame.columns)[:20]}); give a column name or one number per row")
    return frame[value].to_numpy()


def refuse_unsupported(*, downstream: Any) -> None:
    """Raise OptionError naming the options not yet supported with weights/offsets.

    (Dask data with weights/offsets is refused with the other dask refusals, by
    :func:`pearlstats.in_memory_only.refuse_in_memory_only`; multinomial by
    :func:`check_observation_weights`; the rest where they are reached.)
    """
    if downstream is not None:
        raise OptionError(f"downstream={type(downstream).__name__} (a network or another "
                          "estimator instead of the family's GLM) is not yet supported with "
                          "observation weights/offsets/exposure; leave downstream at its default "
                          "(None)")


def check_new_offset(offset: Any, exposure: Any, n: int, fitted_offset: bool,
                     index: pd.Index | None = None, family: str = "poisson"
                     ) -> np.ndarray | None:
    """The offset of *n* new rows (log exposure added), or None for a fit without one.

    Series are matched to the new rows' *index* by label, as at fit time; *exposure* is
    refused for a *family* other than Poisson, as at fit time."""
    if exposure is not None and family != "poisson":
        raise OptionError(f"exposure= is for family='poisson' (log link), got {family!r}; "
                          "give the new rows' offset= instead")
    if not fitted_offset:
        if offset is not None or exposure is not None:
            raise OptionError("this fit has no offset or exposure; predict without offset=/"
                              "exposure=")
        return None
    if offset is None and exposure is None:
        raise OptionError("this fit has an offset (or exposure): give offset= and/or exposure= "
                          "for the new rows (exposure=1 everywhere is offset 0)")
    total = np.zeros(n) if offset is None else _values("offset", offset, n, index)
    if exposure is not None:
        t = _values("exposure", exposure, n, index)
        check_positive_rows("exposure", t, index)
        total = total + np.log(t)
    return total


def effective_nobs(n_rows: int, row_weights: np.ndarray | float | None = None,
                   weight_type: str | None = None) -> float:
    """How many observations *n_rows* rows count as (statsmodels' ``GLM.wnobs``).

    Frequency weights count rows: a row of weight ``w`` is ``w`` observations, so the rows
    are ``sum w`` of them (a weight of 2 is the row twice). Variance weights scale a row's
    variance, not its count: *n_rows*, as without weights. Every rule that depends on the
    sample size reads it here: the ``weight_shrinkage="size"`` amount ``min(1, c J / n)``,
    the residual degrees of freedom ``n - rank`` of the refits and their intervals, the
    standard errors of (weighted) mean losses (:func:`mean_se`) and the bootstrap's
    resample size. Rules about the *rank* of a design (a candidate with at least as many
    coefficients as training rows is infeasible, or separable for a logistic fit) count
    distinct rows instead: copies of a row add no rank.

    Parameters
    ----------
    n_rows : int
        The rows.
    row_weights : ndarray (n_rows,) or float, optional
        Their observation weights (or the weights' sum); None without weights.
    weight_type : {"frequency", "variance"}, optional

    Returns
    -------
    float

    Examples
    --------
    >>> effective_nobs(3, np.array([1.0, 2.0, 4.0]), "frequency")
    7.0
    >>> effective_nobs(3, np.array([1.0, 2.0, 4.0]), "variance"), effective_nobs(3)
    (3.0, 3.0)
    """
    if weight_type == "frequency" and row_weights is not None:
        return float(np.sum(row_weights))
    return float(n_rows)


def few_observations_note(row_weights: np.ndarray | None, weight_type: str | None,
                          n_coefficients: int) -> str | None:
    """Why frequency weights probably mean something else, in words, or None.

    Frequency weights that sum to fewer observations than the *n_coefficients* of the largest
    candidate leave its residual degrees of freedom ``sum w - p`` at or below 0, as they would
    the rows they stand for: statsmodels' ``GLM(freq_weights=)`` gives NaN standard errors,
    and a CV+ interval of so few observations is infinite. Weights that sum to 1 over many
    rows are usually relative weights (normalised), which are ``weight_type="variance"``.

    Examples
    --------
    >>> print(few_observations_note(np.full(4, 0.25), "frequency", 3))  # doctest: +ELLIPSIS
    frequency weights sum to 1 over 4 rows (normalised?): they count as 1 observation, not ...
    >>> few_observations_note(np.full(4, 2.0), "frequency", 3) is None
    True
    """
    if weight_type != "frequency" or row_weights is None:
        return None
    total = effective_nobs(row_weights.size, row_weights, weight_type)
    normalised = row_weights.size > 1 and abs(total - 1.0) <= 1e-6
    if total > n_coefficients and not normalised:
        return None
    return (f"frequency weights sum to {total:.4g} over {row_weights.size} rows"
            + (" (normalised?)" if normalised else "")
            + f": they count as {total:.4g} observation{'' if total == 1 else 's'}, "
            + (f"not more than the {n_coefficients} coefficient"
               f"{'' if n_coefficients == 1 else 's'} of the largest candidate, so "
               "its residual degrees of freedom, standard errors and confidence intervals are "
               "NaN (as statsmodels' freq_weights gives them) and prediction intervals infinite"
               if total <= n_coefficients else "which frequency weights rarely are")
            + "; relative weights (survey, precision) are weight_type='variance'")


def mean_se(values: np.ndarray, row_weights: np.ndarray | None,
            weight_type: str | None) -> np.ndarray:
    """Standard error of the (weighted) mean of per-row terms, along axis 0.

    *values* are the terms as the weighted losses give them: each row's term times its
    weight normalised to mean 1, so their plain mean is the weighted mean ``m``. Without
    weights: SD / sqrt(n). Frequency weights count rows: the SE of the data with each row
    repeated ``w_i`` times, ``sqrt(sum w_i (u_i - m)^2 / ((N - 1) N))`` with ``N = sum w``
    and ``u_i`` the row's own term. Variance weights: the linearised SE of a weighted mean,
    ``sqrt(sum v_i^2 (u_i - m)^2 / (n (n - 1)))``.
    """
    n = values.shape[0]
    if row_weights is None:
        return without_rounding(values.std(axis=0, ddof=1) / np.sqrt(n), values.mean(axis=0), n)
    return without_rounding(_weighted_mean_se(values, row_weights, weight_type),
                            values.mean(axis=0), n)


# a row's loss (a log, an exp, a square and a few sums of numbers exact to their last place)
# is exact to a few units in the last place of its size; 16 units leave room to spare
_ROUNDING_ULPS = 16


def without_rounding(se: ArrayLike, mean: ArrayLike, n: int) -> np.ndarray:
    """*se* with 0 where it is the rounding of terms equal by construction (or to the data's
    precision): their SD, ``se * sqrt(n)``, at most ``16 * eps * |mean|``.

    Terms that are all equal (the Null model's held-out log loss ``log 2`` on every row of
    balanced classes) computed in floating point differ by units in the last place of
    their size, so their SD is a few ``eps * |mean|`` rather than 0 (7.9e-18 shown as an
    SE where 0 is meant); no spread that small can be told from that rounding.

    Examples
    --------
    >>> terms = np.log(np.array([0.5, 0.5 + 2**-53, 0.5 - 2**-54]))
    >>> float(terms.std(ddof=1)) > 0, float(without_rounding(terms.std(ddof=1), -np.log(2), 3))
    (True, 0.0)
    """
    floor = _ROUNDING_ULPS * np.finfo(float).eps * np.abs(mean)
    return np.where(se * np.sqrt(n) <= floor, 0.0, se)


def _weighted_mean_se(values: np.ndarray, row_weights: np.ndarray,
                      weight_type: str | None) -> np.ndarray:
    """:func:`mean_se` with observation weights, before :func:`without_rounding`."""
    n = values.shape[0]
    shape = (-1,) + (1,) * (values.ndim - 1)
    v = (row_weights / row_weights.mean()).reshape(shape)
    deviations = values / v - values.mean(axis=0)
    if weight_type == "frequency":
        total = effective_nobs(n, row_weights, weight_type)
        if total <= 1:  # one observation or fewer has no spread (few_observations_note)
            return np.full(values.shape[1:], np.nan)
        return np.sqrt((row_weights.reshape(shape) * deviations**2).sum(axis=0)
                       / ((total - 1) * total))
    return np.sqrt(((v * deviations) ** 2).sum(axis=0) / (n * (n - 1)))
