"""A candidate's statsmodels inference from the pooled refit sums of :mod:`.refit_sums`.

From the sums over all rows at a candidate's all-rows coefficients (in memory a
pass over row chunks, on dask one over the partitions), :func:`refits_from_sums`
gives per candidate a :class:`SumsRefit` with the numbers statsmodels' refit gives:

- gaussian: ``X'X`` and the residual sum of squares; ``scale = RSS / df_resid`` and
  ``cov = scale (X'X)^-1`` (statsmodels' ``OLS``);
- binomial, Poisson: the Fisher information ``X' W X`` at the optimum (``W`` the
  GLM working weights ``mu (1 - mu)`` or ``mu``), ``cov = (X' W X)^-1``, ``scale = 1``
  (statsmodels' ``Logit`` and ``GLM(Poisson())``), and the log-likelihood;
- with observation weights and offsets (in memory), statsmodels'
  ``GLM(..., freq_weights= or var_weights=, offset=)``: the weights multiply the
  Gram / information and the residual sum of squares, frequency weights count rows
  in ``df_resid``, variance weights do not; the gaussian log-likelihood is the GLM's
  concentrated one.

A candidate whose columns do not have full rank gets statsmodels' pseudo-inverse
(``pinv`` of the Gram or information) and ``df_resid = n - rank``.

The inverse is taken in coordinates where the intercept is orthogonal to the
centred columns, scaled to unit variance. With ``ridge > 0`` statsmodels' refit
is ``fit_regularized(L1_wt=0)``, whose results carry coefficients only; the
inference then uses the sandwich ``H^-1 I H^-1`` (``H = I + n ridge diag(penalty
weights)``) of :func:`pearlstats.results.averaging.candidate_cov`, with, for
gaussian candidates, ``df_resid = n - trace(H^-1 I)`` and ``scale = RSS /
df_resid``: a :class:`SumsRefit` of a ridge candidate gives those numbers (and
the ``penalty`` attributes of the refit).

Examples
--------
>>> import numpy as np, statsmodels.api as sm
>>> from pearlstats.inference.refit_sums import chunk_refit_sums
>>> rng = np.random.default_rng(0)
>>> X = np.column_stack([np.ones(30), rng.normal(size=(30, 2)) + 1e4])
>>> y = X @ [1.0, 2.0, -1.0] + rng.normal(size=30)
>>> b = np.linalg.lstsq(X, y, rcond=None)[0]
>>> sums, local = chunk_refit_sums("gaussian", X, y, [np.arange(3)], [b])
>>> refit = refits_from_sums("gaussian", sums, local, [b], ["a"], [["1", "x", "z"]])["a"]
>>> direct = sm.OLS(y, X).fit()
>>> bool(np.allclose(refit.bse, direct.bse, rtol=1e-8)), refit.df_resid
(True, 27.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from .._lazy import lazy_module
from ..engines._common import RANK_TOLERANCE
from ..exceptions import InMemoryOnlyError, OptionError
from ..families import _state_penalty
from ..observation_weights import effective_nobs
from .refit_sums import RefitSums, Spread

__all__ = ["RowsNeededError", "SumsRefit", "bread_of", "candidate_ridge_of", "constant_columns",
           "dependent_columns",
           "refits_from_sums", "sum_ranks"]

# pearlstats.results.identification's threshold (not imported: the inference sits below the
# results in the layers): a column is involved in a dependency when its part of the null
# space is not rounding noise
_INVOLVED = 1e-6

# statsmodels results attributes that need the rows (per-row values, or the model on its data)
ROW_ATTRIBUTES = (
    "model", "resid", "fittedvalues", "predict", "get_prediction", "get_influence",
    "resid_pearson", "resid_deviance", "resid_response", "resid_working", "resid_anscombe",
    "wresid", "mu", "summary", "summary2", "outlier_test", "get_robustcov_results",
)
# statsmodels results attributes that are sums over rows, but not the ones this pass takes
NOT_SUMMED = (
    "cov_HC0", "cov_HC1", "cov_HC2", "cov_HC3", "HC0_se", "HC1_se", "HC2_se", "HC3_se",
    "rsquared", "rsquared_adj", "centered_tss", "ess", "fvalue", "f_pvalue", "deviance",
    "null_deviance", "llnull", "llr", "llr_pvalue", "prsquared",
)

stats = lazy_module("scipy.stats")  # quantiles, on the first interval


class RowsNeededError(InMemoryOnlyError, AttributeError):
    """A statsmodels results attribute a refit on dask data does not have: it needs the rows
    (an :class:`~pearlstats.exceptions.InMemoryOnlyError`).

    Also an ``AttributeError``, so ``hasattr(refit, name)`` answers False.
    """


# ---- the covariance from the sums ----------------------------------------------------------------
# Eigenvalue ratio of the centred, unit-scale Gram below which a direction of the columns is
# aliased (no variance to give it): a singular-value ratio of 3e-7, about R's lm (whose QR
# declares a column aliased below 1e-7 of its norm), and 50 times the rounding of the sums
# on an exact dependency. The engines' RANK_TOLERANCE (1e-10, on Cholesky pivots) only
# chooses how they solve: their minimum-norm least squares in standardised columns is the
# least-squares solution itself above this, where the inverse at unit scale is accurate; a
# pseudo-inverse at RANK_TOLERANCE of the raw moments dropped the very direction with the
# large variance (SEs of 0.05 for 1e4 at a condition number of 2e5, with no warning).
_ALIASED = 1e-13


def _unit_scale(spread: Spread, intercept: int | None) -> tuple:
    """``(rest, s, R, rank)``: the columns other than the intercept, their scales, their
    (centred, with an intercept) Gram matrix at unit scale, and the columns' rank."""
    p = len(spread.mean)
    rest = np.arange(p) if intercept is None else np.delete(np.arange(p), intercept)
    M = spread.gram[np.ix_(rest, rest)] if intercept is not None else spread.moment()
    diagonal = np.diagonal(M)
    s = np.sqrt(np.where(diagonal > 0, diagonal, 1.0))
    R = M / np.outer(s, s)
    eigen = np.linalg.eigvalsh(R) if rest.size else np.zeros(0)
    top = eigen.max(initial=0.0)
    rank = int(np.sum(eigen > _ALIASED * top)) + (intercept is not None)
    return rest, s, R, rank


def _covariance(spread: Spread, intercept: int | None, value: float,
                penalty: np.ndarray, bread: bool = False) -> tuple:
    """``(cov, rank, trace)``: the inverse information (sandwich with a penalty) of the columns.

    *value* is the intercept column's value; *penalty* is ``n ridge`` times the penalty
    weights (0 for ``ridge == 0``); *trace* is ``trace(H^-1 I)``. ``bread=True`` gives
    ``H^-1`` instead of the ridge sandwich (the same without a penalty). With an intercept the
    information is blockwise diagonal in the coordinates ``(v b_0 + mean' b_r, b_r)`` (the
    other columns' weighted means), so only the centred Gram of the others is inverted, at
    unit scale.
    """
    p = len(spread.mean)
    W = spread.weight
    rest, s, R, rank = _unit_scale(spread, intercept)
    penalised = bool(np.any(penalty))
    if rank < p and not penalised:
        # statsmodels' pseudo-inverse (OLS: pinv(X) pinv(X)' = pinv(X'X); GLM: of X'WX)
        full = spread.moment()
        return np.linalg.pinv(full, rcond=RANK_TOLERANCE, hermitian=True), rank, float(rank)
    Q = R + np.diag(penalty[rest] / s**2)  # H on the unit-scale columns
    Qinv = np.linalg.solve(Q, np.eye(rest.size))
    inner = Qinv @ R @ Qinv if penalised and not bread else Qinv
    trace = float(np.trace(Qinv @ R)) + (intercept is not None)
    cov_rest = inner / np.outer(s, s)
    if intercept is None:
        return cov_rest, rank, trace
    # b_0 = (gamma_0 - mean_r' b_r) / v, var(gamma_0) = 1 / W
    shift = spread.mean[rest]
    cov = np.empty((p, p))
    cov[np.ix_(rest, rest)] = cov_rest
    cross = -(cov_rest @ shift) / value
    cov[intercept, rest] = cov[rest, intercept] = cross
    cov[intercept, intercept] = (1.0 / W + shift @ cov_rest @ shift) / value**2
    return cov, rank, trace


def bread_of(kind: str, sums: RefitSums, S: np.ndarray, j: int, ridge: float) -> np.ndarray:
    """The bread of candidate *j*'s sandwich (columns *S* of the sums): the inverse
    information ``(X' W X)^-1`` (statsmodels' ``normalized_cov_params``), ``H^-1`` with a
    ridge."""
    intercept = sums.intercept(S)
    spread = sums.design.subset(S) if kind == "gaussian" else sums.info[j]
    value = 1.0 if intercept is None else float(sums.low[S[intercept]])
    penalty = sums.design.weight * ridge * sums.penalty_weights(S)
    return _covariance(spread, intercept, value, penalty, bread=True)[0]


def constant_columns(spread: Spread) -> np.ndarray:
    """Whether each column is constant over the rows: its centred spread is within rounding of
    its mean (a relative SD below 1e-12), so that a mean of n copies of 0.1 counts.

    Examples
    --------
    >>> from pearlstats.inference.refit_sums import Spread
    >>> X = np.column_stack([np.full(7, 0.1), np.arange(7.0), np.zeros(7)])
    >>> constant_columns(Spread.of(X)).tolist()
    [True, False, True]
    """
    variance = np.maximum(np.diagonal(spread.gram), 0.0) / max(spread.weight, 1e-300)
    return variance <= (1e-12 * spread.mean) ** 2


def dependent_columns(spread: Spread, intercept: int | None) -> np.ndarray:
    """Positions of the columns whose coefficients the columns do not identify.

    The covariance's own rule (:data:`_ALIASED`): the aliased directions of the columns'
    centred (with an intercept) Gram at unit scale, where a year's cubic trend (condition
    number 8e5) is identified, as in R's ``lm``. A column is involved when a direction holds
    it beyond rounding (:data:`_INVOLVED`, each coefficient measured in units of its column's
    norm about 0); the intercept when shifting the others along the direction moves it. The
    rows need not be at hand: *spread* holds their means and centred Gram.

    Examples
    --------
    >>> from pearlstats.inference.refit_sums import Spread
    >>> X = np.column_stack([np.ones(4), [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0]])
    >>> dependent_columns(Spread.of(X), intercept=0).tolist()
    [1, 2]
    >>> years = np.arange(1990.0, 2021.0)
    >>> cubic = np.column_stack([np.ones(31), years, years**2, years**3])
    >>> dependent_columns(Spread.of(cubic), intercept=0).tolist()
    []
    """
    rest, s, R, _ = _unit_scale(spread, intercept)
    p = len(spread.mean)
    if rest.size == 0:
        return np.zeros(0, dtype=int)
    # a column constant over the rows (or 0) beside the intercept: its centred values are
    # rounding (a mean of n copies of 0.1 is not 0.1), so it is set to 0, not read as noise
    zero = constant_columns(spread)[rest] if intercept is not None else np.diagonal(R) == 0
    R = np.where(zero[:, None] | zero[None, :], 0.0, R)
    eigen, vectors = np.linalg.eigh(R)
    aliased = vectors[:, ~(eigen > _ALIASED * eigen.max(initial=0.0))]  # unit-scale directions
    if aliased.shape[1] == 0 and not zero.any():
        return np.zeros(0, dtype=int)
    directions = np.zeros((p, aliased.shape[1]))
    directions[rest] = aliased / s[:, None]  # the coefficients' move along each direction
    if intercept is not None:
        # b_0 = (gamma_0 - mean' b) / v at a fixed gamma_0: it moves by -mean' b / v
        directions[intercept] = -(spread.mean[rest] @ directions[rest]) / spread.mean[intercept]
    norms = np.sqrt(np.maximum(np.diagonal(spread.moment()), 0.0))
    measured = directions * norms[:, None]
    measured /= np.maximum(np.linalg.norm(measured, axis=0), np.finfo(float).tiny)
    involved = np.max(np.abs(measured), axis=1, initial=0.0) > _INVOLVED
    involved[rest[zero]] = True
    if intercept is not None and np.any(zero & (spread.mean[rest] != 0)):
        involved[intercept] = True  # a second constant column: the two share one effect
    return np.flatnonzero(involved | (norms == 0))


def candidate_ridge_of(ridge: float | Mapping, label: str) -> float:
    """The ridge of one candidate: *ridge*, or its entry in a mapping (absent: 0)."""
    return float(ridge.get(label, 0.0)) if isinstance(ridge, Mapping) else float(ridge)


def _gaussian_fit(sums: RefitSums, j: int, counted: float, df_resid: float,
                  weight_type: str | None) -> tuple:
    """``(ssr, scale, llf)`` of a gaussian candidate (statsmodels' OLS; GLM with weights)."""
    ssr = float(sums.rss[j])
    scale = ssr / df_resid if df_resid > 0 else np.nan  # no rows left to estimate it
    if weight_type == "variance":
        # GLM's concentrated log-likelihood: scale sum(v r^2) / n, each row's variance / v
        n = sums.rows
        llf = -n / 2 * (np.log(2 * np.pi) + np.log(ssr / n) + 1.0) + sums.log_weights / 2
    else:  # OLS; frequency weights count rows
        llf = -counted / 2 * (np.log(2 * np.pi) + np.log(ssr / counted) + 1.0)
    return ssr, scale, llf


def _assemble(kind: str, label: str, names: Sequence, params: np.ndarray, S: np.ndarray,
              j: int, sums: RefitSums, ridge: float, weight_type: str | None) -> SumsRefit:
    n = sums.design.weight
    counted = effective_nobs(sums.rows, n, weight_type)  # statsmodels' wnobs
    intercept = sums.intercept(S)
    weights = sums.penalty_weights(S)
    spread = sums.design.subset(S) if kind == "gaussian" else sums.info[j]
    value = 1.0 if intercept is None else float(sums.low[S[intercept]])
    cov, rank, trace = _covariance(spread, intercept, value, n * ridge * weights)
    k_constant = int(intercept is not None)
    pearson = None
    if kind == "gaussian":
        df_resid = counted - (trace if ridge > 0 else rank)
        ssr, scale, llf = _gaussian_fit(sums, j, counted, df_resid, weight_type)
        df_model = rank - k_constant
    else:
        ssr, scale, df_resid = None, 1.0, counted - rank
        llf = float(sums.llf[j])
        pearson = None if sums.pearson is None else float(sums.pearson[j])
        df_model = rank - 1  # statsmodels' Logit and GLM subtract 1 with or without a constant
    penalty = None
    if ridge > 0:
        penalty = _state_penalty(SimpleNamespace(), ridge, ridge * weights)
    dependent = dependent_columns(sums.design.subset(S), intercept)
    return SumsRefit(
        family=kind, label=label, exog_names=tuple(names), _params=_frozen(params),
        _cov=_frozen(cov * scale), nobs=float(sums.rows), df_resid=float(df_resid),
        df_model=float(df_model), rank=rank, k_constant=k_constant, scale=float(scale),
        llf=float(llf), ssr=ssr,
        penalty=None if penalty is None else penalty.penalty,
        penalty_ridge=None if penalty is None else penalty.penalty_ridge,
        penalty_alpha=None if penalty is None else _frozen(penalty.penalty_alpha),
        unidentified=tuple(names[i] for i in dependent), _pearson=pearson,
    )


def _frozen(values: np.ndarray) -> np.ndarray:
    values = np.array(values, dtype=float)
    values.flags.writeable = False
    return values


def refits_from_sums(kind: str, sums: RefitSums, local: Sequence[np.ndarray],
                     params: Sequence[np.ndarray], labels: Sequence[str],
                     names: Sequence[Sequence[str]], ridge: float | Mapping[str, float] = 0.0,
                     weight_type: str | None = None) -> dict[str, SumsRefit]:
    """Each candidate's statsmodels-like refit from the sums of all rows.

    Parameters
    ----------
    kind : {"gaussian", "binomial", "poisson"}
    sums : RefitSums
        Of all rows, for these candidates (in their order).
    local : sequence of int arrays
        Each candidate's positions among the columns the sums were taken over.
    params : sequence of ndarray
        Each candidate's all-rows coefficients.
    labels : sequence of str
    names : sequence of sequences of str
        Each candidate's column names.
    ridge : float or mapping of label -> float
        The ridge each candidate was fitted with (a mapping: absent labels 0).
    weight_type : {None, "frequency", "variance"}
        How the sums' observation weights count (None: no weights).

    Returns
    -------
    dict of label -> SumsRefit

    Raises
    ------
    OptionError
        For a family other than gaussian, binomial or Poisson.
    """
    if kind not in ("gaussian", "binomial", "poisson"):
        raise OptionError(f"refits from sums are for families gaussian, binomial and poisson, "
                          f"not {kind!r} (statsmodels' MNLogit is fitted as it is)")
    return {label: _assemble(kind, label, list(names[j]), np.asarray(params[j]),
                             np.asarray(local[j]), j, sums, candidate_ridge_of(ridge, label),
                             weight_type)
            for j, label in enumerate(labels)}


def sum_ranks(sums: RefitSums, local: Sequence[np.ndarray]) -> list[int]:
    """Each candidate's ``df_model`` as statsmodels' ``OLS`` gives it: the rank of its
    columns (all rows, with the sums' weights) less one for an intercept."""
    out = []
    for S in local:
        S = np.asarray(S)
        intercept = sums.intercept(S)
        rank = _unit_scale(sums.design.subset(S), intercept)[3]
        out.append(rank - int(intercept is not None))
    return out


# ---- the results object --------------------------------------------------------------------------
@dataclass(frozen=True)
class SumsRefit:
    """One candidate refitted on all rows from sums over them: the statsmodels results it can give.

    The attributes of statsmodels' ``OLS`` / ``Logit`` / ``GLM(Poisson())`` results
    computed from sums over the rows (row chunks in memory, partitions on dask):
    ``params``, ``bse``, ``cov_params()``,
    ``normalized_cov_params``, ``tvalues``, ``pvalues``, ``conf_int(alpha)``,
    ``nobs``, ``df_resid``, ``df_model``, ``rank``, ``k_constant``, ``scale``,
    ``use_t``, ``llf``, ``aic``, ``bic``, ``ssr`` (gaussian), ``pearson_chi2`` (binomial,
    Poisson) and ``exog_names``; with a
    ridge, ``penalty``, ``penalty_ridge`` and ``penalty_alpha`` as the in-memory
    refit. ``unidentified`` names the columns whose coefficients the design (all rows,
    with the observation weights if any) does not identify, as
    :func:`~pearlstats.results.identification.unidentified_terms` (empty when the columns
    have full rank). What needs the rows (``resid``, ``fittedvalues``, ``get_prediction``,
    ``model``, ...) raises :class:`RowsNeededError` naming it.
    """

    family: str
    label: str
    exog_names: tuple
    _params: np.ndarray
    _cov: np.ndarray
    nobs: float
    df_resid: float
    df_model: float
    rank: int
    k_constant: int
    scale: float
    llf: float
    ssr: float | None = None
    penalty: str | None = None
    penalty_ridge: float | None = None
    penalty_alpha: np.ndarray | None = None
    unidentified: tuple = ()
    cov_type: str = "nonrobust"
    df_resid_inference: float | None = None
    _pearson: float | None = None

    def with_cov(self, cov: np.ndarray, cov_type: str,
                 df_resid_inference: float | None = None) -> SumsRefit:
        """This refit with another covariance (statsmodels' ``get_robustcov_results``)."""
        return replace(self, _cov=_frozen(cov), cov_type=cov_type,
                       df_resid_inference=df_resid_inference)

    def with_scale(self, scale: str | float) -> SumsRefit:
        """This refit's classical covariance at another dispersion: ``"X2"``, Pearson's
        ``X^2 / df_resid`` (NaN without residual df), or a fixed number; statsmodels'
        ``GLM(...).fit(scale=)``, whose ``cov_params()`` is ``scale`` times
        ``normalized_cov_params`` (binomial and Poisson refits)."""
        if scale == "X2":
            scale = self.pearson_chi2 / self.df_resid if self.df_resid > 0 else np.nan
        return replace(self, _cov=_frozen(self._cov / self.scale * scale), scale=float(scale))

    @property
    def params(self) -> pd.Series:
        return pd.Series(self._params.copy(), index=list(self.exog_names))

    def cov_params(self) -> pd.DataFrame:
        """Covariance of the coefficients (the ridge sandwich with a penalty)."""
        names = list(self.exog_names)
        return pd.DataFrame(self._cov.copy(), index=names, columns=names)

    @property
    def normalized_cov_params(self) -> np.ndarray:
        return self._cov / self.scale

    @property
    def bse(self) -> pd.Series:
        return pd.Series(np.sqrt(np.diagonal(self._cov)), index=list(self.exog_names))

    @property
    def use_t(self) -> bool:
        """t quantiles for OLS, normal ones for Logit and GLM (as statsmodels)."""
        return self.family == "gaussian"

    @property
    def _df_inference(self) -> float:
        """The t quantiles' degrees of freedom: G - 1 for a cluster covariance, else df_resid."""
        return self.df_resid if self.df_resid_inference is None else self.df_resid_inference

    @property
    def tvalues(self) -> pd.Series:
        return self.params / self.bse

    @property
    def pvalues(self) -> pd.Series:
        t = np.abs(self.tvalues)
        tail = stats.t.sf(t, self._df_inference) if self.use_t else stats.norm.sf(t)
        return pd.Series(2 * tail, index=list(self.exog_names))

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Intervals ``params -/+ q bse`` (columns 0 and 1, as statsmodels)."""
        if not 0 < alpha < 1:
            raise OptionError(f"alpha={alpha!r} must lie in (0, 1)")
        q = (stats.t.isf(alpha / 2, self._df_inference) if self.use_t
             else stats.norm.isf(alpha / 2))
        params, half = self.params, q * self.bse
        return pd.DataFrame({0: params - half, 1: params + half})

    @property
    def aic(self) -> float:
        return -2 * self.llf + 2 * self.rank

    @property
    def bic(self) -> float:
        return -2 * self.llf + np.log(self.nobs) * self.rank

    @property
    def pearson_chi2(self) -> float:
        """Pearson's statistic, ``sum w (y - mu)^2 / V(mu)`` (statsmodels' GLM
        ``pearson_chi2``): binomial and Poisson refits (a gaussian one has ``ssr``)."""
        if self._pearson is None:
            raise AttributeError(f"a {self.family} refit has no pearson_chi2 here; its "
                                 "residual sum of squares is ssr")
        return self._pearson

    def __getattr__(self, name: str) -> Any:
        # only reached for names the class lacks
        if name in ROW_ATTRIBUTES:
            raise RowsNeededError(
                f"{name!r} of candidate {self.label!r} needs the rows in memory: on dask data "
                "the refit is computed from sums over the partitions (params, bse, "
                "cov_params(), conf_int(), tvalues, pvalues, llf, ...); fit an in-memory "
                "sample for it, e.g. pearl.fit(formula, ddf.sample(frac=0.1).compute(), ...)"
            )
        if name in NOT_SUMMED:
            raise RowsNeededError(
                f"{name!r} of candidate {self.label!r} is not available on dask data: the "
                "refit's one pass over the partitions sums what the coefficients' covariance "
                "and the log-likelihood need (params, bse, cov_params(), conf_int(), tvalues, "
                "pvalues, llf, aic, bic), not the null model or per-row residual terms; fit "
                "an in-memory sample for it"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.label!r} ({self.family}, n={int(self.nobs)}, "
                f"{len(self.exog_names)} coefficients, from sums over the rows)>")
