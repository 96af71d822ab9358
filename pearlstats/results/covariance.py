"""Covariance types of the candidates' refits, and the joint covariance of the averaged terms.

:func:`summed_refits` gives the candidates' all-rows refits from sums over row
chunks (:mod:`pearlstats.inference.sums_refit`) with the fit's covariance type
(:mod:`pearlstats.inference.robust`: a second pass of the stacked scores gives
the sandwich's meat; HC2/HC3 need the first pass's breads for the leverages).
:func:`averaged_cov` stacks the candidates with positive weight, whose joint
covariance has cross-candidate blocks ``A_j^-1 (sum_i s_ij s_ik') A_k^-1`` that
are not zero (the candidates are fitted on the same rows), and gives its image
under the fixed weights for the terms in every candidate (without forming it:
each row's scores are projected onto those terms in the pass): the covariance
behind ``cov_params()``,
``tvalues``, ``pvalues``, ``t_test``, ``wald_test`` and ``f_test`` of
:class:`~pearlstats.PearlResults`.

With ``cov_type="nonrobust"`` the cross blocks are the model's: gaussian
``sigma_jk X_j' W X_k`` with ``sigma_jk = sum w e_j e_k / sqrt(df_j df_k)`` (the
candidates' residual covariance; ``sigma_jj`` is candidate j's scale), binomial
and Poisson ``sum w sqrt(V_ij V_ik) x_ij x_ik'`` (each candidate's own variance
function on its diagonal block). The diagonal blocks are the candidates' own
covariances in every case.

With a dispersion (``scale=``, binomial and Poisson, nonrobust) each candidate's
covariance is statsmodels' ``GLM(...).fit(scale=)``: the classical one times
``phi_jj``, Pearson's ``X^2_j / df_j`` for ``"X2"`` (or the fixed number). Block (j, k)
is multiplied by ``phi_jk = sum w r_j r_k / sqrt(df_j df_k)``, with the candidates'
Pearson residuals ``r_j = (y - mu_j) / sqrt(V(mu_j))``: the gaussian ``sigma_jk`` with
Pearson residuals for residuals (``phi_jj`` is candidate j's X2 scale). Under the
quasi-likelihood model ``Var(y_i) = phi V(mu_i)`` (without observation weights; a
variance weight divides both sides) one row's scores ``s_ij = (y_i - mu_ij) x_ij`` have
``Cov(s_ij, s_ik) = Var(y_i) x_ij x_ik'``, so the classical block's row term
``sqrt(V_ij V_ik) x_ij x_ik'`` is missing the factor ``Var(y_i) / sqrt(V_ij V_ik)``,
whose moment estimate from both candidates' residuals is ``phi_jk`` (``phi`` when both
candidates' means are right; it also takes up their residuals' covariation where they are
not, as ``sigma_jk`` does). The matrix ``(phi_jk)`` is a Gram matrix
(scaled), so the joint covariance stays positive semi-definite (Schur's product
theorem); a single common ``phi`` for every block would not reduce to each candidate's
own X2 covariance on its diagonal. A fixed number multiplies every block.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..exceptions import OptionError
from ..inference.refit_sums import FAMILIES, chunk_refit_sums, stack_columns
from ..inference.robust import (
    CovSpec,
    chunk_meat,
    corrections,
    refuse_hac_frequency,
    refuse_scale_family,
    sandwich,
)
from ..inference.sums_refit import bread_of, refits_from_sums
from .averaging import _columns as columns_of
from .averaging import active_labels, candidate_ridge, common_terms, sums_apply, unidentified

if TYPE_CHECKING:
    from .core import PearlResults

__all__ = ["averaged_cov", "check_robust_supported", "cov_spec_of", "scaled",
           "statsmodels_view", "summed_refits", "uses_t"]


def cov_spec_of(res: PearlResults) -> CovSpec:
    """The covariance type of the results (``"nonrobust"`` unless set)."""
    return res.__dict__.get("_cov_spec") or CovSpec()


def check_robust_supported(res: PearlResults, spec: CovSpec) -> None:
    """Refuse, naming why, a robust covariance or a dispersion the sums do not cover."""
    if spec.scale is not None:
        _check_scale_supported(res, spec)
    if spec.robust and not sums_apply(res):
        raise OptionError(
            f"cov_type={spec.cov_type!r} is computed from sums over the rows for gaussian, "
            f"binomial and poisson fits on a dense design in memory; this {res.family} fit "
            "does not have them (multinomial, sparse or wide blocks, a downstream network): "
            "use cov_type='nonrobust', and refit a candidate in statsmodels with the "
            "covariance you want, e.g. res.candidates[label].model.fit(cov_type='HC0')")
    if spec.cov_type == "HAC":
        refuse_hac_frequency(spec.cov_type, _weight_type(res))


def _check_scale_supported(res: PearlResults, spec: CovSpec) -> None:
    refuse_scale_family(spec.scale, res.family)
    if not (sums_apply(res) or res.stages.partitions is not None):
        raise OptionError(
            f"scale={spec.scale!r} is computed from sums over the rows for binomial and "
            "poisson fits on a dense design; this fit does not have them (sparse or wide "
            "blocks): drop scale=, and refit a candidate in statsmodels with it, e.g. "
            "res.candidates[label].model.fit(scale='X2') for a Poisson GLM")


def scaled(res: PearlResults, refit: Any) -> Any:
    """*refit* (a sums refit) at the results' dispersion (itself without one)."""
    scale = cov_spec_of(res).scale
    return refit if scale is None else refit.with_scale(scale)


def _counted(sums, weight_type: str | None) -> float:
    return sums.design.weight if weight_type == "frequency" else sums.rows


def _factors(spec: CovSpec, meat, refits: list, counted: float) -> np.ndarray:
    """Block (j, k)'s factor: the small-sample corrections, or the gaussian sigma_jk."""
    if spec.robust:
        c = corrections(spec, counted, [r.df_resid for r in refits],
                        [len(r.exog_names) for r in refits])
        return np.sqrt(np.outer(c, c))
    if meat.cross is None:  # binomial, Poisson: scale 1, or the fixed dispersion
        return np.full((len(refits), len(refits)), spec.scale or 1.0)
    # No residual degrees of freedom (df <= 0: frequency weights counting no more
    # observations than the candidate's coefficients): its scale is NaN (sums_refit), so are
    # its cross blocks, not a finite sigma_jk from the product of two negative dfs.
    df = np.array([r.df_resid for r in refits], dtype=float)
    df = np.where(df > 0, df, np.nan)
    return meat.cross / np.sqrt(np.outer(df, df))


def _first_pass(res: PearlResults, labels: list, params: list) -> tuple:
    """``(sums, local, refits, columns, ridges)``: the refit sums of the candidates *labels*
    (over row chunks, or the partitions of a fit on dask data), and their nonrobust refits."""
    response, design = res.stages.response, res.stages.design
    partitions = res.stages.partitions
    columns = [columns_of(res, label) for label in labels]
    if partitions is not None:  # the sums span every design column
        sums, local = partitions.refit_sums(_candidates(res, labels)), columns
    else:
        sums, local = chunk_refit_sums(res.family, design.X, response.y, columns, params,
                                       response.offset, response.row_weights)
    names = [[design.column_names[i] for i in S] for S in columns]
    ridges = {label: candidate_ridge(res, label) for label in labels}
    refits = refits_from_sums(res.family, sums, local, params, labels, names, ridges,
                              _weight_type(res))
    return sums, local, refits, columns, ridges


def _candidates(res: PearlResults, labels: list) -> list:
    every = {c.label: c for c in (*res.stages.candidates.pool, *res.stages.candidates.extras)}
    return [every[label] for label in labels]


def _weight_type(res: PearlResults) -> str | None:
    response = res.stages.response
    return None if response.row_weights is None else response.weight_type


def _meat(res: PearlResults, labels: list, params: list, spec: CovSpec, breads: list,
          **options: object) -> object:
    """The second pass: the candidates' stacked scores over row chunks (or partitions)."""
    if res.stages.partitions is not None:
        return res.stages.partitions.meat(_candidates(res, labels), spec, breads, **options)
    response, design = res.stages.response, res.stages.design
    used, local, B = stack_columns([columns_of(res, label) for label in labels], params)
    return chunk_meat(res.family, design.X, response.y, local, B, spec, response.offset,
                      response.row_weights, _weight_type(res), breads, used, **options)


def _passes(res: PearlResults, labels: list, params: list, spec: CovSpec, project: bool):
    """``(refits, breads, meat, factors)`` of the candidates under *spec*; with *project*
    the scores are taken through ``w_j bread_j`` onto the common terms (T columns each)."""
    sums, local, refits, _, ridges = _first_pass(res, labels, params)
    breads = [bread_of(res.family, sums, np.asarray(S), j, ridges[label])
              for j, (S, label) in enumerate(zip(local, labels))]
    projections = None
    if project:
        names = [list(refits[label].exog_names) for label in labels]
        terms = _common(res)
        projections = [float(res.weights[label]) * breads[j][:, [names[j].index(t)
                                                                 for t in terms]]
                       for j, label in enumerate(labels)]
    meat = _meat(res, labels, params, spec, breads, project=projections,
                 blocks_only=not project)
    ordered = [refits[label] for label in labels]
    return refits, breads, meat, _factors(spec, meat, ordered, _counted(sums, _weight_type(res)))


def _df_inference(spec: CovSpec, refit: object) -> float | None:
    """G - 1 for a cluster covariance with ``df_correction`` (None: the refit's df_resid)."""
    if spec.cov_type == "cluster" and spec.df_correction:
        return float(spec.n_groups - 1)
    return None


def summed_refits(res: PearlResults, labels: list, params: list) -> dict:
    """The refits of *labels* from sums over row chunks, with the results' covariance type:
    each candidate's own block of the sandwich (a second pass for a robust type)."""
    spec = cov_spec_of(res)
    if not spec.robust:
        refits = _first_pass(res, labels, params)[2]
        return {label: scaled(res, refit) for label, refit in refits.items()}
    refits, breads, meat, factors = _passes(res, labels, params, spec, project=False)
    covs = sandwich(meat, factors, breads)
    return {label: refits[label].with_cov(covs[j], spec.describe(),
                                          _df_inference(spec, refits[label]))
            for j, label in enumerate(labels)}


def _common(res: PearlResults) -> list:
    return [t for t in res.stages.design.column_names if t in set(common_terms(res))]


def averaged_cov(res: PearlResults) -> tuple[pd.DataFrame, float | None]:
    """``(cov, df)``: the covariance of the averaged common terms ``sum_j w_j b_j`` under
    fixed weights and candidates, and the degrees of freedom of its t and F references: the
    smallest residual df of the weighted candidates (G - 1 with a cluster covariance). Every
    family has them, as statsmodels' Logit and GLM do: z and chi2 are the defaults of the
    non-gaussian ones (:func:`uses_t`), t and F what ``use_t=True`` or ``f_test`` ask for.

    ``sum_jk f_jk (w_j u_j)(sum_i s_ij s_ik')(w_k u_k)'`` with ``u_j`` the common terms' rows
    of candidate j's bread: each row's scores are projected onto the T common terms in the
    pass, so the sums are (J T) x (J T), whatever the candidates' widths.

    Raises
    ------
    OptionError
        For a fit without sums over the rows (multinomial, sparse or wide blocks, a
        downstream network).
    """
    on_dask = res.stages.partitions is not None
    if not (sums_apply(res) or on_dask) or res.family not in FAMILIES:
        raise OptionError(
            "the joint covariance of the candidates (cov_params(), tvalues, pvalues, t_test, "
            "wald_test, f_test) is computed from sums over the rows for gaussian, binomial "
            f"and poisson fits on a dense design in memory, not for this {res.family} fit; "
            "use bse and conf_int(), or each candidate's res.candidates[label]")
    cached = res.__dict__.get("_joint")
    if cached is None:
        spec = cov_spec_of(res)
        labels = active_labels(res)
        params = [res.candidate_params(label).to_numpy() for label in labels]
        refits, _, meat, factors = _passes(res, labels, params, spec, project=True)
        terms = _common(res)
        cov = pd.DataFrame(sandwich(meat, factors), index=terms, columns=terms)
        missing = [t for t in terms if t in unidentified(res)]
        cov.loc[missing, :] = np.nan
        cov.loc[:, missing] = np.nan
        df = min(_df_inference(spec, r) or r.df_resid for r in refits.values())
        cached = res.__dict__["_joint"] = (cov, df)
    return cached[0].copy(), cached[1]


def statsmodels_view(res: PearlResults, r_matrix: Any = None) -> tuple[Any, Any]:
    """A statsmodels ``LikelihoodModelResults`` of the averaged common terms (their
    ``params`` and :func:`averaged_cov`), whose ``t_test``, ``wald_test`` and ``f_test``
    parse statsmodels' strings and matrices, and *r_matrix* in the form it takes.

    Terms without an estimate (``params`` NaN: a covariate that a block reproduces) are left
    out of the view, with their columns of the hypotheses, so that hypotheses about the other
    terms are tested (their NaN would otherwise reach every ``R b`` and ``R V R'``); a
    hypothesis that involves one of them is refused by name. A term that is not a common
    term (a block column, a typo) is refused with the terms that can be tested.
    """
    from statsmodels.base.model import LikelihoodModelResults

    cov, df = averaged_cov(res)
    names = list(cov.index)
    params = res.params.reindex(names).to_numpy()
    R, q = _constraints(r_matrix, names)
    known = np.isfinite(params) & np.isfinite(np.diagonal(cov.to_numpy()))
    if R is not None and not known.all():
        involved = [name for name, used in zip(names, np.any(R != 0, axis=0)) if used]
        missing = [name for name in involved if not known[names.index(name)]]
        unestimated = [name for name in missing if not np.isfinite(params[names.index(name)])]
        if unestimated:
            raise OptionError(
                f"the hypotheses involve {unestimated}, which have no averaged estimate (a "
                "block reproduces them: params and cov_params() are NaN there, see the "
                "summary's note); test the other terms, or a candidate's own coefficients "
                "with res.candidates[label].t_test(...)")
        if missing:
            cov_type = cov_spec_of(res).cov_type
            why = (" (HC2 and HC3 divide by 1 - h, and a row of leverage h = 1 pins these "
                   "terms, e.g. the only row of a level); test the other terms, or use "
                   "res.get_robustcov('HC1')" if cov_type in ("HC2", "HC3") else
                   "; test the other terms")
            raise OptionError(f"the hypotheses involve {missing}, whose variance is NaN under "
                              f"cov_type={cov_type!r}{why}")
        # the columns of the terms left out are 0: the same hypotheses over the others
        r_matrix = (R[:, known], np.zeros(len(R)) if q is None else q)
    kept = [name for name, ok in zip(names, known) if ok]
    data = SimpleNamespace(cross_names=kept, param_names=kept, cov_names=kept)
    model = SimpleNamespace(data=data, exog_names=kept)
    out = LikelihoodModelResults(model, params[known],
                                 normalized_cov_params=cov.to_numpy()[np.ix_(known, known)],
                                 scale=1.0)
    out.use_t = uses_t(res)
    out.df_resid = df
    return out, r_matrix


def _constraints(r_matrix: Any, names: list) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(R, q)`` of statsmodels' hypothesis forms over the terms *names*; ``(None, None)``
    for None.

    The forms are statsmodels' (which hands the first three to patsy's
    ``linear_constraint``): a string (``"x = 0, z = 1"``), a list of such strings, a dict
    ``{term: value}``, an ``(R, q)`` tuple, or a matrix R (q None: zeros).
    """
    if r_matrix is None:
        return None, None
    if _is_patsy_form(r_matrix):
        return _patsy_constraint(r_matrix, names)
    if isinstance(r_matrix, tuple):
        if len(r_matrix) != 2:
            raise OptionError(f"a tuple hypothesis is (R, q); got {len(r_matrix)} items")
        R, q = _constraint_matrix(r_matrix[0], names), np.asarray(r_matrix[1], dtype=float)
        if q.size != R.shape[0]:
            raise OptionError(f"q has {q.size} values; it needs one per row of R ({R.shape[0]})")
        return R, q
    return _constraint_matrix(r_matrix, names), None


def _is_patsy_form(r_matrix: Any) -> bool:
    """A string, a non-empty list of strings, or a dict: the forms patsy reads."""
    if isinstance(r_matrix, (str, Mapping)):
        return True
    return (isinstance(r_matrix, list) and bool(r_matrix)
            and all(isinstance(item, str) for item in r_matrix))


def _patsy_constraint(r_matrix: Any, names: list) -> tuple[np.ndarray, np.ndarray]:
    """patsy's ``linear_constraint`` of *r_matrix* over *names*, its errors named as ours."""
    from patsy import DesignInfo, PatsyError

    if isinstance(r_matrix, str) and not r_matrix.strip():
        raise OptionError(f"an empty hypothesis; write one as 'x = 0' over the terms {names}")
    try:
        constraint = DesignInfo(names).linear_constraint(r_matrix)
    except (PatsyError, ValueError, KeyError, TypeError) as error:
        reason = getattr(error, "message", None) or str(error)
        raise OptionError(
            f"cannot test {r_matrix!r}: {reason}. The testable terms are the "
            f"averaged terms in every candidate, {names} (block columns have no averaged "
            "coefficient: test a candidate's own with res.candidates[label].t_test(...))"
        ) from None
    return constraint.coefs, constraint.constants


def _constraint_matrix(R: Any, names: list) -> np.ndarray:
    """*R* as a 2-D float matrix with one column per averaged term, or an OptionError."""
    try:
        R = np.atleast_2d(np.asarray(R, dtype=float))
    except (TypeError, ValueError):
        raise OptionError(f"r_matrix={R!r} is not a matrix of numbers; give a string such as "
                          f"'{names[-1]} = 0', a list of them, a dict, (R, q) or R") from None
    if R.ndim != 2 or R.shape[1] != len(names):
        raise OptionError(f"r_matrix has shape {R.shape}; it needs one column per averaged "
                          f"term, {len(names)}: {names}")
    return R


def uses_t(res: PearlResults) -> bool:
    """Whether the averaged terms' default reference is t (gaussian fits) rather than z."""
    return res.family == "gaussian"


def describe(res: PearlResults) -> str:
    """The covariance type's name for the summary and LaTeX."""
    return cov_spec_of(res).describe()


def with_cov_type(res: PearlResults, spec: CovSpec) -> PearlResults:
    """A copy of *res* whose refits use *spec* (nothing is refitted: the candidates'
    coefficients and the cross-validation are shared)."""
    import copy

    check_robust_supported(res, spec)
    out = copy.copy(res)
    for key in ("_sum_refits", "_joint"):
        out.__dict__.pop(key, None)
    out.__dict__["_cov_spec"] = spec
    return out
