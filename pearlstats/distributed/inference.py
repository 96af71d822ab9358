"""All-rows refits of candidates on dask data: statsmodels' inference from one pass of sums.

In memory, :class:`~pearlstats.results.PearlResults` refits each candidate with
statsmodels (``OLS``, ``Logit``, ``GLM(Poisson())``) and the inference code reads
``cov_params()``, ``df_resid`` and ``bse`` from those fits. On dask data the rows
stay on the workers, so :func:`refit_partitions` makes one pass over the partitions
at the candidates' all-rows coefficients (``PartitionFit.coefs[-1]``) and returns,
per candidate, a :class:`PartitionRefit` with the same numbers:

- gaussian: ``X'X`` and the residual sum of squares; ``scale = RSS / df_resid`` and
  ``cov = scale (X'X)^-1`` (statsmodels' ``OLS``);
- binomial, Poisson: the Fisher information ``X' W X`` at the optimum (``W`` the
  GLM working weights ``mu (1 - mu)`` or ``mu``), ``cov = (X' W X)^-1``, ``scale = 1``
  (statsmodels' ``Logit`` and ``GLM(Poisson())``), and the log-likelihood.

Numerics: each partition returns its weighted column means and the Gram matrix of
its columns centred at them (a :class:`Spread`); partitions are pooled exactly by
the pairwise update of Chan, Golub & LeVeque (1979), so a shifted covariate
(``x + 5``, ``x + 1e4``) or partitions with different column means lose no digits
to ``sum x**2 - n mean**2``. The inverse is taken in coordinates where the
intercept is orthogonal to the centred columns, scaled to unit variance.

With ``ridge > 0`` statsmodels' refit is ``fit_regularized(L1_wt=0)``, whose results
carry coefficients only; the inference then uses the sandwich ``H^-1 I H^-1``
(``H = I + n ridge diag(penalty weights)``) of
:func:`pearlstats.results.averaging.candidate_cov`, with, for gaussian candidates,
``df_resid = n - trace(H^-1 I)`` and ``scale = RSS / df_resid``: a
:class:`PartitionRefit` of a ridge candidate gives those numbers (and the
``penalty`` attributes of the in-memory refit).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.column_stack([np.ones(6), rng.normal(size=6) + 1e4])
>>> left, right = Spread.of(X[:2]), Spread.of(X[2:])
>>> pooled = left + right
>>> bool(np.allclose(pooled.gram, np.cov(X.T, bias=True) * 6, rtol=1e-9, atol=1e-12))
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import gammaln

from ..backends.partitions import tree_sum
from ..engines._common import RANK_TOLERANCE
from ..engines.likelihood import mean_of
from ..exceptions import DataError, InMemoryOnlyError, OptionError, UnknownCandidateError
from ..families import _state_penalty
from .data import partition_design, partition_response

__all__ = ["PartitionRefit", "RowsNeededError", "Spread", "refit_partitions"]

FAMILIES = ("gaussian", "binomial", "poisson")
# pearlstats.results.identification's threshold (not imported: the distributed code sits below
# the results in the layers): a column is involved in a dependency when its part of the null
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
    "pearson_chi2", "null_deviance", "llnull", "llr", "llr_pvalue", "prsquared",
)


class RowsNeededError(InMemoryOnlyError, AttributeError):
    """A statsmodels results attribute a refit on dask data does not have: it needs the rows
    (an :class:`~pearlstats.exceptions.InMemoryOnlyError`).

    Also an ``AttributeError``, so ``hasattr(refit, name)`` answers False.
    """


# ---- sums over rows that pool exactly ------------------------------------------------------------
@dataclass(frozen=True)
class Spread:
    """Weighted row count, column means and centred Gram matrix of some rows.

    ``a + b`` pools the rows of both (Chan, Golub & LeVeque 1979): the means move by
    the weighted difference and the Gram gains ``delta delta' w_a w_b / (w_a + w_b)``,
    so no sum of squares about 0 is ever formed.

    Attributes
    ----------
    weight : float
        ``sum w``.
    mean : ndarray (p,)
        ``sum w x / sum w`` (0 without weight).
    gram : ndarray (p, p)
        ``sum w (x - mean)(x - mean)'``.
    """

    weight: float
    mean: np.ndarray
    gram: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray, w: np.ndarray | None = None) -> Spread:
        """The spread of the rows *X* with weights *w* (1 for None)."""
        total = float(len(X)) if w is None else float(w.sum())
        p = X.shape[1]
        if total <= 0:
            return cls(0.0, np.zeros(p), np.zeros((p, p)))
        mean = (X.sum(axis=0) if w is None else w @ X) / total
        B = X - mean
        if w is not None:
            B *= np.sqrt(w)[:, None]
        return cls(total, mean, B.T @ B)

    def __add__(self, other: Spread) -> Spread:
        total = self.weight + other.weight
        if other.weight <= 0:
            return Spread(self.weight, self.mean, self.gram + other.gram)
        if self.weight <= 0:
            return Spread(other.weight, other.mean, self.gram + other.gram)
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.weight / total)
        gram = self.gram + other.gram + np.outer(delta, delta) * (
            self.weight * other.weight / total)
        return Spread(total, mean, gram)

    def subset(self, columns: np.ndarray) -> Spread:
        return Spread(self.weight, self.mean[columns], self.gram[np.ix_(columns, columns)])

    def moment(self) -> np.ndarray:
        """``sum w x x'`` (about 0)."""
        return self.gram + self.weight * np.outer(self.mean, self.mean)


# ---- the pass ------------------------------------------------------------------------------------
def _log_likelihood(kind: str, y: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Per-candidate log-likelihood sums (columns of eta), as statsmodels' Logit / Poisson."""
    if kind == "binomial":
        # log(1 + e^eta) - y eta without overflow
        return -np.sum(np.maximum(eta, 0.0) - y[:, None] * eta + np.log1p(np.exp(-np.abs(eta))),
                       axis=0)
    mu = mean_of(kind, eta)
    return np.sum(y[:, None] * eta - mu - gammaln(y + 1.0)[:, None], axis=0)


def _refit_part(frame, blocks, offset, spec, kind, columns, B, env):
    """One partition's sums for the candidates whose columns and coefficients (p, J) are given."""
    X = partition_design(spec, frame, blocks)
    y = partition_response(spec, kind, frame, env)
    big = np.abs(X).max(axis=0)
    out = {"design": Spread.of(X), "range": (X.min(axis=0), X.max(axis=0)), "big": (-big, big)}
    eta = X @ B  # zeros outside a candidate's columns add nothing
    if kind == "gaussian":
        residuals = y[:, None] - eta
        out["rss"] = np.einsum("ij,ij->j", residuals, residuals)
        return out
    out["llf"] = _log_likelihood(kind, y, eta)
    mu = mean_of(kind, eta)
    weights = mu * (1.0 - mu) if kind == "binomial" else mu
    out["info"] = {j: Spread.of(X[:, S], weights[:, j]) for j, S in enumerate(columns)}
    return out


@dataclass(frozen=True)
class _Totals:
    """What the pass returned, pooled over the partitions."""

    design: Spread
    low: np.ndarray
    high: np.ndarray
    big: np.ndarray
    sums: dict

    def intercept(self, S: np.ndarray) -> int | None:
        """Position in S of the first column constant and non-zero over all rows (statsmodels'
        and the engines' intercept of the candidate's columns)."""
        constant = np.flatnonzero((self.low[S] == self.high[S]) & (self.low[S] != 0))
        return int(constant[0]) if constant.size else None

    def penalty_weights(self, S: np.ndarray) -> np.ndarray:
        """:func:`~pearlstats.engines._common.ridge_penalty_weights` of the columns S."""
        n = self.design.weight
        constant = self.low[S] == self.high[S]
        sd = np.where(constant, 0.0, np.sqrt(np.maximum(np.diagonal(self.design.gram)[S] / n,
                                                        0.0)))
        scale = np.where(sd > 0, sd, np.where(self.big[S] > 0, self.big[S], 1.0))
        penalized = np.ones(S.size, dtype=bool)
        where = self.intercept(S)
        if where is not None:
            penalized[where] = False
        return penalized * scale**2


# ---- the covariance from the sums ----------------------------------------------------------------
def _covariance(spread: Spread, intercept: int | None, value: float,
                penalty: np.ndarray) -> tuple:
    """``(cov, rank, trace)``: the inverse information (sandwich with a penalty) of the columns.

    *value* is the intercept column's value; *penalty* is ``n ridge`` times the penalty
    weights (0 for ``ridge == 0``); *trace* is ``trace(H^-1 I)``. With an intercept the
    information is blockwise diagonal in the coordinates ``(v b_0 + mean' b_r, b_r)`` (the
    other columns' weighted means), so only the centred Gram of the others is inverted, at
    unit scale.
    """
    p = len(spread.mean)
    W = spread.weight
    rest = np.arange(p) if intercept is None else np.delete(np.arange(p), intercept)
    M = spread.gram[np.ix_(rest, rest)] if intercept is not None else spread.moment()
    diagonal = np.diagonal(M)
    s = np.sqrt(np.where(diagonal > 0, diagonal, 1.0))
    R = M / np.outer(s, s)
    eigen = np.linalg.eigvalsh(R) if rest.size else np.zeros(0)
    top = eigen.max(initial=0.0)
    rank = int(np.sum(eigen > RANK_TOLERANCE * top)) + (intercept is not None)
    penalised = bool(np.any(penalty))
    if rank < p and not penalised:
        # statsmodels' pseudo-inverse (OLS: pinv(X) pinv(X)' = pinv(X'X); GLM: of X'WX)
        full = spread.moment()
        return np.linalg.pinv(full, rcond=RANK_TOLERANCE, hermitian=True), rank, float(rank)
    Q = R + np.diag(penalty[rest] / s**2)  # H on the unit-scale columns
    Qinv = np.linalg.solve(Q, np.eye(rest.size))
    inner = Qinv @ R @ Qinv if penalised else Qinv
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


def _dependent_columns(moment: np.ndarray) -> np.ndarray:
    """:func:`pearlstats.results.identification._dependent_columns` from ``X'X`` (not X).

    The right singular vectors and squared singular values of the unit-norm columns are
    the eigenvectors and eigenvalues of their Gram matrix.
    """
    norms = np.sqrt(np.maximum(np.diagonal(moment), 0.0))
    unit = np.where(norms > 0, norms, 1.0)
    eigen, vectors = np.linalg.eigh(moment / np.outer(unit, unit))
    kept = eigen > RANK_TOLERANCE * eigen.max(initial=0.0)  # the engines' squared tolerance
    outside = np.sqrt(np.clip(1.0 - np.sum(vectors[:, kept] ** 2, axis=1), 0.0, None))
    return np.flatnonzero((norms == 0) | (outside > _INVOLVED))


def _candidate_ridge(ridge: float | Mapping, label: str) -> float:
    return float(ridge.get(label, 0.0)) if isinstance(ridge, Mapping) else float(ridge)


def _assemble(kind: str, label: str, names: list, params: np.ndarray, S: np.ndarray,
              j: int, totals: _Totals, ridge: float) -> PartitionRefit:
    n = totals.design.weight
    intercept = totals.intercept(S)
    weights = totals.penalty_weights(S)
    spread = totals.design.subset(S) if kind == "gaussian" else totals.sums["info"][j]
    value = 1.0 if intercept is None else float(totals.low[S[intercept]])
    cov, rank, trace = _covariance(spread, intercept, value, n * ridge * weights)
    k_constant = int(intercept is not None)
    if kind == "gaussian":
        ssr = float(totals.sums["rss"][j])
        df_resid = n - (trace if ridge > 0 else rank)
        scale = ssr / df_resid if df_resid > 0 else np.nan  # no rows left to estimate it
        llf = -n / 2 * (np.log(2 * np.pi) + np.log(ssr / n) + 1.0)
        df_model = rank - k_constant
    else:
        ssr, scale, df_resid = None, 1.0, n - rank
        llf = float(totals.sums["llf"][j])
        df_model = rank - 1  # statsmodels' Logit and GLM subtract 1 with or without a constant
    penalty = None
    if ridge > 0:
        penalty = _state_penalty(SimpleNamespace(), ridge, ridge * weights)
    dependent = _dependent_columns(totals.design.subset(S).moment())
    return PartitionRefit(
        family=kind, label=label, exog_names=tuple(names), _params=_frozen(params),
        _cov=_frozen(cov * scale), nobs=float(n), df_resid=float(df_resid),
        df_model=float(df_model), rank=rank, k_constant=k_constant, scale=float(scale),
        llf=float(llf), ssr=ssr,
        penalty=None if penalty is None else penalty.penalty,
        penalty_ridge=None if penalty is None else penalty.penalty_ridge,
        penalty_alpha=None if penalty is None else _frozen(penalty.penalty_alpha),
        unidentified=tuple(names[i] for i in dependent),
    )


def _frozen(values: np.ndarray) -> np.ndarray:
    values = np.array(values, dtype=float)
    values.flags.writeable = False
    return values


def _positions(candidates: Sequence, labels: Sequence[str] | None) -> list[int]:
    known = [c.label for c in candidates]
    if labels is None:
        return list(range(len(candidates)))
    wanted = [labels] if isinstance(labels, str) else list(labels)
    missing = [label for label in wanted if label not in known]
    if missing:
        raise UnknownCandidateError(f"no candidate(s) {missing[:10]}; candidates are {known[:20]}")
    return [known.index(label) for label in wanted]


def refit_partitions(rows: Any, spec: Any, family_name: str, candidates: Sequence,
                     coefs: np.ndarray, ridge: float | Mapping[str, float], *,
                     labels: Sequence[str] | None = None) -> dict[str, PartitionRefit]:
    """Each candidate's statsmodels-like refit on all rows, from one pass over the partitions.

    Parameters
    ----------
    rows : DaskRows
        The fit's partitions (:func:`pearlstats.distributed.data.dask_rows`).
    spec : DesignSpec
        The fit's design.
    family_name : {"gaussian", "binomial", "poisson"}
    candidates : sequence of Candidate
        Aligned with the last axis of *coefs* (the pool, then the baseline-only ones).
    coefs : ndarray (K + 1, p, J)
        :attr:`pearlstats.distributed.fit.PartitionFit.coefs`; slot ``-1`` holds the
        all-rows coefficients (0 outside a candidate's columns).
    ridge : float or mapping of label -> float
        The ridge each candidate was fitted with (a mapping for candidates the
        separation ladder moved up; absent labels: 0).
    labels : sequence of str, optional
        Only these candidates (default all). Leave out the ones that failed: their
        coefficients are zeros.

    Returns
    -------
    dict of label -> PartitionRefit

    Raises
    ------
    OptionError
        For a family other than gaussian, binomial or Poisson.
    UnknownCandidateError
        For a label not among *candidates*.

    Examples
    --------
    >>> import dask, dask.array as da, numpy as np, statsmodels.api as sm
    >>> from pearlstats.design.formula import parse_formula
    >>> from pearlstats.distributed.data import dask_rows, head_design
    >>> from pearlstats.stages import build_pool
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=(50, 2))
    >>> y = a @ [1.0, -1.0] + rng.normal(size=50)
    >>> formula = parse_formula("y ~ block(a)")
    >>> data = {"y": da.from_array(y, chunks=20), "a": da.from_array(a, chunks=(20, 2))}
    >>> with dask.config.set(scheduler="synchronous"):
    ...     rows = dask_rows(data, None, formula)
    ...     design = head_design(rows, formula, 0)
    ...     pool = build_pool(design, "all", 10)
    ...     X = np.column_stack([np.ones(50), a])
    ...     coefs = np.linalg.lstsq(X, y, rcond=None)[0][None, :, None]  # (K + 1 = 1, p, J)
    ...     refit = refit_partitions(rows, design.spec, "gaussian", pool.everything, coefs,
    ...                              0.0)["a"]
    >>> direct = sm.OLS(y, X).fit()
    >>> bool(np.allclose(refit.bse, direct.bse, rtol=1e-10)), refit.df_resid
    (True, 47.0)
    """
    if family_name not in FAMILIES:
        raise OptionError(f"refits on dask data are for families {list(FAMILIES)}, not "
                          f"{family_name!r} (statsmodels' MNLogit has no distributed pass)")
    chosen = _positions(candidates, labels)
    columns = [np.asarray(candidates[j].columns) for j in chosen]
    B = np.asarray(coefs)[-1][:, chosen]
    if rows.n == 0:
        raise DataError("the data has no rows (every partition is empty): nothing to refit")
    total = tree_sum(rows.tasks(_refit_part, spec, family_name, columns, B, None))
    totals = _Totals(total["design"], total["range"][0], total["range"][1], total["big"][1],
                     total)
    names = list(spec.column_names)
    out = {}
    for position, (j, S) in enumerate(zip(chosen, columns)):
        label = candidates[j].label
        out[label] = _assemble(family_name, label, [names[i] for i in S], B[S, position], S,
                               position, totals, _candidate_ridge(ridge, label))
    return out


# ---- the results object --------------------------------------------------------------------------
@dataclass(frozen=True)
class PartitionRefit:
    """One candidate refitted on all rows of dask data: the statsmodels results it can give.

    The attributes of statsmodels' ``OLS`` / ``Logit`` / ``GLM(Poisson())`` results
    computed from sums over the partitions: ``params``, ``bse``, ``cov_params()``,
    ``normalized_cov_params``, ``tvalues``, ``pvalues``, ``conf_int(alpha)``,
    ``nobs``, ``df_resid``, ``df_model``, ``rank``, ``k_constant``, ``scale``,
    ``use_t``, ``llf``, ``aic``, ``bic``, ``ssr`` (gaussian) and ``exog_names``; with a
    ridge, ``penalty``, ``penalty_ridge`` and ``penalty_alpha`` as the in-memory
    refit. ``unidentified`` names the columns whose coefficients the design (all rows,
    unweighted) does not identify, as
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
    def tvalues(self) -> pd.Series:
        return self.params / self.bse

    @property
    def pvalues(self) -> pd.Series:
        t = np.abs(self.tvalues)
        tail = stats.t.sf(t, self.df_resid) if self.use_t else stats.norm.sf(t)
        return pd.Series(2 * tail, index=list(self.exog_names))

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Intervals ``params -/+ q bse`` (columns 0 and 1, as statsmodels)."""
        if not 0 < alpha < 1:
            raise OptionError(f"alpha={alpha!r} must lie in (0, 1)")
        q = (stats.t.ppf(1 - alpha / 2, self.df_resid) if self.use_t
             else stats.norm.ppf(1 - alpha / 2))
        params, half = self.params, q * self.bse
        return pd.DataFrame({0: params - half, 1: params + half})

    @property
    def aic(self) -> float:
        return -2 * self.llf + 2 * self.rank

    @property
    def bic(self) -> float:
        return -2 * self.llf + np.log(self.nobs) * self.rank

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
        return (f"<PartitionRefit {self.label!r} ({self.family}, n={int(self.nobs)}, "
                f"{len(self.exog_names)} coefficients, from sums over the partitions)>")
