"""The averaged model as a statsmodels-like fit: coefficients, SEs, intervals, fitted values.

Functions of a :class:`~pearlstats.results.core.PearlResults`' public API,
wired to its ``params``, ``bse``, ``conf_int()``, ``fittedvalues``, ``resid``,
``residuals()``, ``candidate_table`` and ``predict(new, interval="confidence")``.
The arithmetic is in :mod:`pearlstats.inference`; this module picks the
candidates (those with positive weight: a weight of 0 contributes nothing),
their coefficients, standard errors and degrees of freedom.

``params``, ``bse`` and ``conf_int()`` report the terms in every candidate (the
intercept and the formula's covariates), for which MuMIn's full and conditional
averages coincide; the standard errors are Burnham & Anderson's (2002)
unconditional ones, by default the revised eq. 6.12 (MuMIn's ``revised.var =
TRUE``), eq. 4.9 with ``revised=False``, the weights and the candidate set taken
as fixed. Block columns are reported per candidate (:func:`candidate_coefficients`)
or, on request, averaged (:func:`coef_table`), without intervals: a block column
means different things in different candidates. For OLS candidates the
intervals use each candidate's t quantile (Burnham & Anderson 2002, section
4.3.3), so a single candidate with weight 1 reproduces
``sm.OLS(y, X).fit().conf_int()``.

With ``ridge > 0`` the candidates' coefficients are shrunken. Their standard
errors are then the sandwich ``H^-1 I H^-1`` (``I`` the Fisher information,
``H = I + n ridge diag(penalty weights)``): the spread of the penalised
estimator around its own (biased) mean, so intervals built from them need not
cover the true coefficient. :func:`bse` and :func:`conf_int` say so in a
:class:`~pearlstats.exceptions.PearlWarning`.

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> from pearlstats.results import averaging
>>> rng = np.random.default_rng(0)
>>> data = {"y": rng.normal(size=80), "a": rng.normal(size=(80, 2)), "b": rng.normal(size=(80, 1))}
>>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
>>> res.weights.to_dict()  # pure noise: block b alone wins
{'a': 0.0, 'b': 1.0, 'a+b': 0.0}
>>> list(averaging.params(res).index)  # the terms in every candidate
['Intercept']
>>> list(averaging.coef_table(res, terms="all").index)  # a's columns: weight-0 candidates only
['Intercept', 'b[0]']
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from statsmodels.tools.sm_exceptions import SingularMatrixWarning

from .. import inference
from .._warnings import warn
from ..backends.lazy import row_frame, row_series
from ..engines._common import RANK_TOLERANCE, ridge_penalty_weights, separation_reason
from ..engines.weighted_ridge import weighted_penalty_weights
from ..engines.wide import (
    column_rank,
    dense_candidate_columns,
    design_intercept,
    is_wide_design,
)
from ..exceptions import OptionError, PearlWarning
from ..inference.refit_sums import FAMILIES, chunk_refit_sums
from ..inference.sums_refit import sum_ranks
from ..observation_weights import effective_nobs
from .identification import unidentified_terms

if TYPE_CHECKING:  # core imports this module
    from .core import PearlResults

__all__ = [
    "active_labels", "candidate_bse", "candidate_cov", "params", "bse", "conf_int",
    "coef_table", "candidate_coefficients", "common_terms",
    "fittedvalues", "residuals", "candidate_table", "confidence_interval",
    "refuse_confidence_interval", "prediction_name",
    "ridge_note", "unidentified", "inference_refit", "sums_apply",
]

ParamsLike = pd.Series | pd.DataFrame

RIDGE_NOTE = ("coefficients are ridge-penalised (ridge={ridge:g}): they are shrunken towards 0, "
              "and their standard errors (sandwich H^-1 I H^-1) describe the spread of the "
              "penalised estimator, not its bias, so intervals need not cover the true "
              "coefficients; {remedy}")
_REFIT_UNPENALISED = "refit with ridge=0 for valid inference"


def active_labels(res: PearlResults) -> list[Hashable]:
    """Labels of the candidates with positive weight: the ones the averaged model uses."""
    return list(res.weights.index[res.weights.to_numpy() > 0])


def prediction_name(res: PearlResults) -> str:
    """Name of a one-column prediction: ``"P(y=<classes[1]>)"`` for binomial fits."""
    return f"P(y={res.classes[1]})" if res.family == "binomial" else "prediction"


def candidate_ridge(res: PearlResults, label: Hashable) -> float:
    """The ridge a candidate was fitted with: the fit's, or the larger one its separation needed."""
    chooser = getattr(res.stages.family, "candidate_ridge", None)
    return float(chooser(label, res.ridge)) if chooser is not None else float(res.ridge)


def _separation_remedy(separated: list, family: str) -> str:
    return (f"the ridge was chosen for {separated} because {separation_reason(family)} (see "
            "results.failures): their unpenalised estimates do not exist, so no ridge=0 refit "
            "can replace them; read the intervals as those of the penalised fit")


def ridge_note(res: PearlResults) -> str | None:
    """Why coefficients and SEs need care when a weighted candidate has a ridge (else None).

    A ridge the separation ladder chose (the fit's own ridge may be 0) is said to be
    that: advice to "refit with ridge=0" would repeat the fit that separated.
    """
    ridges = {label: candidate_ridge(res, label) for label in active_labels(res)}
    ridge = max(ridges.values(), default=0.0)
    if ridge <= 0:
        return None
    separated = [label for label, value in ridges.items() if value > res.ridge]
    remedy = _separation_remedy(separated, res.family) if separated else _REFIT_UNPENALISED
    return RIDGE_NOTE.format(ridge=ridge, remedy=remedy)


def _warn_ridge(res: PearlResults) -> None:
    note = ridge_note(res)
    if note:
        warn(note, PearlWarning)


def _columns(res: PearlResults, label: Hashable) -> np.ndarray:
    """Positions in the fit's design of one candidate's coefficients."""
    names = list(res.stages.design.column_names)
    return np.array([names.index(term) for term in res.candidate_params(label).index], dtype=int)


def _penalised_cov(res: PearlResults, label: Hashable) -> tuple[np.ndarray, float | None]:
    """Sandwich covariance of a ridge candidate and (gaussian) its residual df."""
    X = dense_candidate_columns(res.stages.design.X, _columns(res, label), label,
                                "the ridge covariance")
    b = res.candidate_params(label).to_numpy()
    response = res.stages.response
    n = len(X)
    mu = res.candidate_predictions_for(res.stages.design.X, [label], response.offset)[label]
    # GLM working weights: the variance function of the canonical link, times the row weights.
    rows = response.weights_or_ones()
    w = rows * {"gaussian": np.ones(n), "binomial": mu * (1 - mu), "poisson": mu}[res.family]
    info = (X * w[:, None]).T @ X
    penalty = (ridge_penalty_weights(X) if response.row_weights is None
               else weighted_penalty_weights(X, rows))
    # the objective times sum(w): sum_i w_i l_i + sum(w) ridge / 2 sum_j (sd_j b_j)^2
    hessian = info + rows.sum() * candidate_ridge(res, label) * np.diag(penalty)
    inv = np.linalg.pinv(hessian, hermitian=True)
    cov = inv @ info @ inv
    if res.family != "gaussian":
        return cov, None
    # Residual df of a linear smoother: the observations (statsmodels' wnobs) - trace of the
    # hat matrix X H^-1 X'W.
    counted = effective_nobs(n, response.row_weights, response.weight_type)
    df_resid = counted - float(np.trace(inv @ info))
    residuals = response.y - response.offset_or_zeros() - X @ b
    sigma2 = float(rows @ residuals**2) / df_resid
    return cov * sigma2, df_resid


def sums_apply(res: PearlResults) -> bool:
    """Whether an in-memory fit's refits' inference comes from sums over row chunks: the
    families with statsmodels ``OLS``/``Logit``/``GLM`` refits, on a dense design (a sparse or
    wide one keeps statsmodels)."""
    return (res.stages.partitions is None and res.family in FAMILIES
            and not is_wide_design(res.stages.design.X))


def inference_refit(res: PearlResults, label: Hashable) -> Any:
    """The candidate's all-rows refit as the inference reads it, or None.

    On dask data the refit computed by passes over the partitions; in memory (gaussian,
    binomial, Poisson, linear candidates on a dense design) a
    :class:`~pearlstats.inference.sums_refit.SumsRefit` from one pass of sums over row
    chunks, computed together with the other weighted candidates' and kept with the
    results; None where statsmodels' refit (``res.candidates[label]``) is to be used.
    """
    if res.stages.partitions is not None:
        from .covariance import scaled  # it builds on this module's helpers

        return scaled(res, res.candidates[label])
    if not sums_apply(res):
        return None
    cache = res.__dict__.setdefault("_sum_refits", {})  # kept with the results (and pickled)
    if label not in cache:
        wanted = [label] + [other for other in active_labels(res)
                            if other != label and other not in cache]
        params = {}
        for one in wanted:
            try:
                params[one] = res.candidate_params(one).to_numpy()
            except OptionError:  # not a linear model (downstream networks): statsmodels
                continue
        linear = [one for one in wanted if one in params and params[one].ndim == 1]
        if label not in linear:
            return None
        from .covariance import summed_refits  # it builds on this module's helpers

        cache.update(summed_refits(res, linear, [params[one] for one in linear]))
    return cache[label]


def candidate_cov(res: PearlResults, label: Hashable) -> tuple[pd.DataFrame, float | None]:
    """Covariance of one candidate's coefficients and its residual df (gaussian, else None).

    Statsmodels' ``cov_params()`` with ``ridge == 0``; the ridge sandwich otherwise. Both
    come from one pass of sums over the rows (:func:`inference_refit`: row chunks in
    memory, partitions on dask); a sparse or wide design, or a candidate that is not a
    linear model, is refitted with statsmodels (the sandwich then from its dense columns).

    Raises
    ------
    OptionError
        For multinomial candidates (their coefficients are a terms x classes table;
        use :func:`candidate_bse`).
    """
    if res.family == "multinomial":
        raise OptionError("candidate_cov is for gaussian, binomial and poisson candidates; "
                          "for multinomial ones use candidate_bse or results.candidates[label]")
    names = res.candidate_params(label).index
    fitted = inference_refit(res, label)
    if fitted is None:  # no sums for this fit: statsmodels' refit, or the sandwich from X
        if candidate_ridge(res, label) > 0:
            cov, df_resid = _penalised_cov(res, label)
            return pd.DataFrame(cov, index=names, columns=names), df_resid
        fitted = res.candidates[label]
    df_resid = None
    if res.family == "gaussian":  # the t quantiles' df: G - 1 for a cluster covariance
        df_resid = float(getattr(fitted, "df_resid_inference", None) or fitted.df_resid)
    return pd.DataFrame(np.asarray(fitted.cov_params()), index=names, columns=names), df_resid


def _multinomial_ridge_refusal(res: PearlResults, label: Hashable) -> str:
    """Why a ridge-penalised multinomial candidate has no SEs, and what the user can do.

    A ridge the separation ladder chose cannot be removed by refitting with ``ridge=0``
    (that is the fit that separated): the way out is ``separation='drop'``.
    """
    stem = (f"standard errors of ridge-penalised multinomial candidates are not available "
            f"(candidate {label!r}, ridge={candidate_ridge(res, label):g}); ")
    if candidate_ridge(res, label) <= res.ridge:
        return stem + "refit with ridge=0 for statsmodels' MNLogit standard errors"
    return stem + (
        "the separation ladder chose that ridge because its classes separate (see "
        "results.failures), so no unpenalised estimate exists; candidate_params(label) gives "
        "its penalised coefficients without SEs, and pearl.fit(..., separation='drop') gives "
        "the separated candidates weight 0, so that bse, conf_int() and candidate_params() "
        "come from the other candidates")


def candidate_bse(res: PearlResults, label: Hashable) -> ParamsLike:
    """Standard errors of one candidate's coefficients, laid out like ``candidate_params``."""
    template = res.candidate_params(label)
    if res.family != "multinomial":
        cov, _ = candidate_cov(res, label)
        return pd.Series(np.sqrt(np.diag(cov.to_numpy())), index=template.index, name=label)
    if candidate_ridge(res, label) > 0:
        raise OptionError(_multinomial_ridge_refusal(res, label))
    if res.stages.partitions is None and label in unidentified_terms(res.stages):
        # MNLogit's refit inverts its singular Hessian (numpy raises): the pseudo-inverse here
        values = _multinomial_pinv_bse(res, label, template.to_numpy())
    else:
        # MNLogit labels its equations 0..C-2; ours are named by class.
        values = np.asarray(res.candidates[label].bse)
    return pd.DataFrame(values, index=template.index, columns=template.columns)


def _multinomial_pinv_bse(res: PearlResults, label: Hashable, params: np.ndarray) -> np.ndarray:
    """SEs (p, C - 1) of a multinomial candidate whose columns are linearly dependent.

    The information ``sum_i (diag(p_i) - p_i p_i') (x) x_i x_i'`` (classes 1..C-1, MNLogit's
    parametrisation: class 0 the reference) at the all-rows coefficients, inverted by
    statsmodels' rule for a rank-deficient design, the pseudo-inverse (as the other families'
    refits): the identified coefficients' SEs are those of any full-rank reparametrisation;
    the unidentified ones are set to NaN by the averaged tables.
    """
    X = dense_candidate_columns(res.stages.design.X, _columns(res, label), label,
                                "the multinomial standard errors")
    eta = np.column_stack([np.zeros(len(X)), X @ params])
    probabilities = np.exp(eta - eta.max(axis=1, keepdims=True))
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    classes, p = params.shape[1], X.shape[1]
    information = np.empty((classes * p, classes * p))
    for j in range(classes):
        for k in range(j, classes):
            curvature = probabilities[:, j + 1] * ((j == k) - probabilities[:, k + 1])
            block = (X * curvature[:, None]).T @ X
            information[j * p:(j + 1) * p, k * p:(k + 1) * p] = block
            information[k * p:(k + 1) * p, j * p:(j + 1) * p] = block.T
    cov = np.linalg.pinv(information, rcond=RANK_TOLERANCE, hermitian=True)
    return np.sqrt(np.clip(np.diag(cov), 0.0, None)).reshape(classes, p).T


def _inputs(res: PearlResults):
    labels = active_labels(res)
    coefs = {label: res.candidate_params(label) for label in labels}
    # The design's order (covariates, then blocks in formula order) rather than
    # inference.coefficient_order, which would move a block that every weighted
    # candidate happens to share in front of the others: the table's layout
    # should not depend on which candidates got weight.
    terms = set(inference.term_union(coefs))
    return labels, coefs, [name for name in res.stages.design.column_names if name in terms]


def unidentified(res: PearlResults) -> dict[str, list]:
    """Term -> the candidates with positive weight whose design does not identify it.

    See :mod:`pearlstats.results.identification`: their averaged coefficients are NaN.
    """
    active = set(active_labels(res))
    terms: dict[str, list] = {}
    for label, names in unidentified_terms(res.stages).items():
        if label in active:
            for name in names:
                terms.setdefault(name, []).append(label)
    return terms


def _not_identified(res: PearlResults, table: ParamsLike) -> ParamsLike:
    """*table* with the rows of unidentified terms set to NaN (term level for (class, term))."""
    terms = unidentified(res)
    if not terms:
        return table
    index = table.index
    rows = index.isin(list(terms), level=-1) if index.nlevels > 1 else index.isin(list(terms))
    table = table.copy()
    table[rows] = np.nan
    return table


def _candidate_ses(res: PearlResults, labels: list) -> dict:
    """Each candidate's SEs; statsmodels' SingularMatrixWarning is silenced where the fit's
    UnidentifiedCoefficientWarning already named the candidate's unidentified terms."""
    known = set(unidentified_terms(res.stages))
    ses = {}
    for label in labels:
        with warnings.catch_warnings():
            if label in known:
                warnings.simplefilter("ignore", SingularMatrixWarning)
            ses[label] = candidate_bse(res, label)
    return ses


def common_terms(res: PearlResults) -> list:
    """The terms in every candidate: the formula's intercept and covariates, in design order."""
    return list(res.design_spec.covariates.names)


def _check_choice(name: str, value: object, choices: tuple) -> None:
    if value not in choices:
        raise OptionError(f"{name}={value!r} is not known; use one of {list(choices)}")


def params(res: PearlResults) -> ParamsLike:
    """Averaged coefficients of the terms in every candidate (intercept, covariates).

    For those terms the full and the conditional average coincide. A DataFrame
    (terms x classes after the reference) for multinomial fits. A term that some
    candidate with positive weight cannot identify (its columns are linearly
    dependent on all rows, e.g. a covariate beside a block that reproduces it;
    the fit warns with :class:`~pearlstats.exceptions.UnidentifiedCoefficientWarning`)
    is NaN, as are its SE and interval: the candidate's minimum-norm split is no
    estimate.
    """
    _, coefs, order = _inputs(res)
    shown = [term for term in order if term in set(common_terms(res))]
    return _not_identified(res, inference.averaged_params(coefs, res.weights).reindex(shown))


def _averaged_se(res: PearlResults, coefs: dict, ses: dict, average: str, revised: bool):
    if average == "conditional":
        return inference.conditional_se(coefs, ses, res.weights, revised=revised)
    return inference.unconditional_se(coefs, ses, res.weights, revised=revised)


def bse(res: PearlResults, revised: bool = True) -> ParamsLike:
    """Unconditional SEs of :func:`params`, Burnham & Anderson (2002) eq. 6.12 (or eq. 4.9).

    ``revised=True`` is MuMIn's default ``revised.var = TRUE``. The weights and the
    candidate set are taken as fixed.
    """
    labels, coefs, order = _inputs(res)
    ses = _candidate_ses(res, labels)
    _warn_ridge(res)  # after candidate_bse, which raises for ridge multinomial fits
    shown = [term for term in order if term in set(common_terms(res))]
    table = inference.unconditional_se(coefs, ses, res.weights, revised=revised)
    return _not_identified(res, table.reindex(shown))


def conf_int(res: PearlResults, alpha: float = 0.05, revised: bool = True) -> pd.DataFrame:
    """Intervals ``b_avg +- z se`` of :func:`params`, each OLS candidate's t quantile folded in.

    Columns ``lower`` and ``upper``; rows terms, or (class, term) for multinomial.
    """
    labels, coefs, order = _inputs(res)
    ses = _candidate_ses(res, labels)
    _warn_ridge(res)  # after candidate_bse, which raises for ridge multinomial fits
    df_resid = None
    if res.family == "gaussian":
        df_resid = {label: candidate_cov(res, label)[1] for label in labels}
    table = inference.averaged_conf_int(coefs, ses, res.weights, alpha, df_resid=df_resid,
                                        revised=revised)
    shown = [term for term in order if term in set(common_terms(res))]
    if res.family == "multinomial":
        rows = pd.MultiIndex.from_product([res.classes[1:], shown])
        return _not_identified(res, table.reindex(rows))
    return _not_identified(res, table.reindex(shown))


BLOCK_CAVEAT = ("block columns: {average} average over the candidates {which}; a block "
                "column's coefficient means different things in candidates with different "
                "other blocks, so no interval is given (issue 28: the full average's 95% "
                "interval covered a block coefficient 0.67-0.82 of the time at n = 100)")


def coef_table(res: PearlResults, terms: str = "common", average: str = "full", *,
               revised: bool = True, alpha: float = 0.05) -> pd.DataFrame:
    """``coef``, ``std err``, ``lower``, ``upper`` and ``weight`` (sum of w with the term).

    See :meth:`PearlResults.coef_table`. Block columns get no interval.
    """
    _check_choice("terms", terms, ("common", "all"))
    _check_choice("average", average, ("full", "conditional"))
    labels, coefs, order = _inputs(res)
    common = [term for term in order if term in set(common_terms(res))]
    shown = order if terms == "all" else common
    ses = _candidate_ses(res, labels)
    _warn_ridge(res)
    mean = (inference.conditional_params(coefs, res.weights) if average == "conditional"
            else inference.averaged_params(coefs, res.weights))
    se = _averaged_se(res, coefs, ses, average, revised)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PearlWarning)  # the ridge caveat was given above
        interval = conf_int(res, alpha, revised)
    if res.family == "multinomial":
        mean, se = mean.T.stack(), se.T.stack()
        rows = pd.MultiIndex.from_product([res.classes[1:], shown])
        weight = inference.term_weights(coefs, res.weights).reindex(rows.get_level_values(1))
    else:
        rows = pd.Index(shown)
        weight = inference.term_weights(coefs, res.weights).reindex(shown)
    table = pd.DataFrame({"coef": mean.reindex(rows), "std err": se.reindex(rows),
                          "lower": interval["lower"].reindex(rows),
                          "upper": interval["upper"].reindex(rows),
                          "weight": weight.to_numpy()}, index=rows)
    table = _not_identified(res, table)
    if len(shown) > len(common):
        which = "that have the term, weights renormalised" if average == "conditional" else (
            "(0 in a candidate without the term)")
        table.attrs["note"] = BLOCK_CAVEAT.format(average=average, which=which)
    return table


def candidate_coefficients(res: PearlResults, labels: list | None = None,
                           alpha: float = 0.05) -> pd.DataFrame:
    """Each candidate's own coefficients, SEs and statsmodels intervals, one row per term.

    See :meth:`PearlResults.candidate_params`.
    """
    from scipy import stats

    labels = active_labels(res) if labels is None else labels
    ses = _candidate_ses(res, labels)
    _warn_ridge(res)
    missing = unidentified_terms(res.stages)
    frames = []
    for label in labels:
        coef, se = res.candidate_params(label), ses[label]
        if isinstance(coef, pd.DataFrame):  # multinomial: (class, term) rows
            coef, se = coef.T.stack(), se.T.stack()
        df_resid = candidate_cov(res, label)[1] if res.family == "gaussian" else None
        quantile = (stats.t.isf(alpha / 2, df_resid) if df_resid is not None
                    else stats.norm.isf(alpha / 2))
        frame = pd.DataFrame({"weight": float(res.weights[label]), "coef": coef,
                              "std err": se, "lower": coef - quantile * se,
                              "upper": coef + quantile * se})
        terms = frame.index.get_level_values(-1)
        frame.loc[terms.isin(list(missing.get(label, ()))), "coef":] = np.nan
        frames.append(frame)
    return pd.concat(frames, keys=labels, names=["candidate", "term"] if res.family
                     != "multinomial" else ["candidate", "class", "term"])


def lazy_row_labels(res: PearlResults) -> tuple | None:
    """For a fit on a dask DataFrame, its partitions' indexes, divisions and lengths, which
    label the lazy row outputs (``fittedvalues``, ``resid``, ``cv_predictions``); else None."""
    partitions = res.stages.partitions
    return None if partitions is None else partitions.rows.row_index()


def _format(res: PearlResults, values: np.ndarray) -> ParamsLike:
    index, labels = res.row_labels, lazy_row_labels(res)
    if values.ndim == 2:
        return row_frame(values, index, res.classes, labels=labels)
    return row_series(values, index, prediction_name(res), labels=labels)


def _fitted_values(res: PearlResults) -> np.ndarray:
    """The averaged prediction on the fit's rows (lazy for a fit on dask data)."""
    labels = active_labels(res)
    parts = res.candidate_predictions_for(res.stages.design.X, labels,
                                          res.stages.response.offset)
    stacked = np.stack([parts[label] for label in labels], axis=1)
    return res.stages.loss.combine(stacked, res.weights[labels].to_numpy()).astype(float)


def fittedvalues(res: PearlResults) -> ParamsLike:
    """The averaged prediction on the fit's rows, combined as :meth:`predict` combines."""
    return _format(res, _fitted_values(res))


def residuals(res: PearlResults, kind: str = "response") -> ParamsLike:
    """Residuals of the averaged model: ``"response"`` (y - mu) or ``"pearson"`` (GLMs).

    Multinomial response residuals are a one-hot matrix minus the probabilities. With
    variance weights the Pearson residuals are multiplied by ``sqrt(w)`` (the row's variance
    is ``V(mu) / w``); frequency weights count rows and leave them as they are (statsmodels'
    GLM ``resid_pearson`` with ``var_weights`` / ``freq_weights``).
    """
    response = res.stages.response
    fitted = _fitted_values(res)
    y = response.y
    if res.family == "multinomial":
        if kind != "response":
            raise OptionError(f"kind={kind!r}: multinomial fits have response residuals only "
                              "(one-hot response minus class probabilities); use kind='response'")
        y = (y[:, None] == np.arange(len(res.classes))).astype(float)  # one-hot (lazy on dask)
    values = inference.averaged_resid(y, fitted, kind=kind, family=res.family)
    if kind == "pearson" and response.weight_type == "variance":
        values = values * np.sqrt(response.row_weights)
    out = _format(res, values)
    if isinstance(out, pd.Series):
        out.name = "resid" if kind == "response" else "resid_pearson"
    return out


def _df_model(X: np.ndarray) -> int:
    """Statsmodels' ``df_model``: rank of the design less one for a constant column."""
    has_constant = design_intercept(X) is not None
    return column_rank(X) - int(has_constant)


def candidate_table(res: PearlResults) -> pd.DataFrame:
    """Per candidate: weight, cv_risk, n_params, df_model (per class equation), and the
    log-likelihood, AIC, AICc and BIC of its all-rows fit (R's parameter count)."""
    X = res.stages.design.X
    everything = {c.label: c.columns for c in res.stages.candidates.pool}
    if res.stages.partitions is not None:  # the refits' pass computed the ranks
        df_model = [int(res.candidates[label].df_model) for label in res.candidate_labels]
    elif sums_apply(res):  # ranks from one pass of Gram matrices over row chunks
        columns = [np.asarray(everything[label]) for label in res.candidate_labels]
        sums, local = chunk_refit_sums("gaussian", X, res.stages.response.y, columns,
                                       [np.zeros(S.size) for S in columns])
        df_model = sum_ranks(sums, local)
    else:
        df_model = [_df_model(X[:, everything[label]]) for label in res.candidate_labels]
    table = pd.DataFrame({
        "weight": res.weights, "cv_risk": res.cv_risk, "n_params": res.n_params,
        "df_model": pd.Series(df_model, index=res.candidate_labels),
    })
    information = res.information_criteria
    if information is not None:  # the fit's likelihoods (not for a downstream network)
        pool = len(res.candidate_labels)
        for name in ("llf", "AIC", "AICc", "BIC"):
            table[name.lower()] = information[name][:pool]
    return table


def refuse_confidence_interval(family: str) -> None:
    """Refuse ``predict(interval="confidence")``, which is for gaussian fits.

    Parameters
    ----------
    family : str
        The fit's family, not ``"gaussian"``.

    Raises
    ------
    OptionError
        Naming what gives the mean's interval instead: ``get_prediction`` for binomial and
        Poisson fits, ``predict()`` for the averaged mean otherwise.
    """
    if family in ("binomial", "poisson"):
        raise OptionError(f"interval='confidence' is for gaussian fits, this one is {family}; "
                          "its mean's confidence interval is get_prediction(rows).summary_frame()"
                          " (mean_ci_lower, mean_ci_upper: the delta method on the link scale, "
                          "statsmodels' GLM interval), predict() its averaged mean")
    raise OptionError(f"interval='confidence' is for gaussian fits, this one is {family}; "
                      "use predict() for the averaged mean or probabilities")


def confidence_interval(
    res: PearlResults, X: np.ndarray, index: pd.Index, alpha: float, revised: bool = True
) -> pd.DataFrame:
    """``mean, mean_se, lower, upper`` of the averaged mean at design rows ``X`` (gaussian).

    Delta method per candidate, combined as the coefficients (unconditional
    variance by eq. 6.12, or eq. 4.9 with ``revised=False``; t quantiles);
    conditional on the cross-validated weights.
    """
    if res.family != "gaussian":
        refuse_confidence_interval(res.family)
    labels = active_labels(res)
    _warn_ridge(res)
    covs = {label: candidate_cov(res, label) for label in labels}
    out = inference.averaged_mean_se(
        {label: dense_candidate_columns(X, _columns(res, label), label, "the confidence interval")
         for label in labels},
        {label: covs[label][0].to_numpy() for label in labels},
        {label: res.candidate_params(label).to_numpy() for label in labels},
        res.weights, alpha=alpha, df_resid={label: covs[label][1] for label in labels},
        revised=revised,
    )
    out = out.rename(columns={"mean_ci_lower": "lower", "mean_ci_upper": "upper"})
    out.index = pd.RangeIndex(len(out)) if index is None else index
    return out
