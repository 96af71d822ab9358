"""All-rows refits of candidates on dask data: statsmodels' inference from one pass of sums.

In memory, :class:`~pearlstats.PearlResults` computes each candidate's
``cov_params()``, ``df_resid`` and ``scale`` from one pass of sums over row chunks
(:mod:`pearlstats.inference.refit_sums`). On dask data the rows stay on the workers, so
:func:`refit_partitions` runs the same kernel (:func:`~pearlstats.inference.refit_sums.row_sums`)
over the partitions at the candidates' all-rows coefficients (``PartitionFit.coefs[-1]``),
adds the sums up on the workers (:func:`~pearlstats.backends.partitions.tree_sum`) and
returns, per candidate, a :class:`PartitionRefit` (a
:class:`~pearlstats.inference.sums_refit.SumsRefit`) with the numbers statsmodels gives:
see :mod:`pearlstats.inference.sums_refit` for what they are and how the ridge
sandwich is formed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..backends.partitions import tree_sum
from ..exceptions import DataError, InMemoryOnlyError, UnknownCandidateError
from ..inference.refit_sums import FAMILIES, RefitSums, Spread, row_sums
from ..inference.robust import CovSpec, MeatSums, row_meat
from ..inference.sums_refit import RowsNeededError, SumsRefit, refits_from_sums
from .data import partition_design, partition_response

__all__ = ["PartitionRefit", "RowsNeededError", "Spread", "meat_partitions", "refit_partitions",
           "sums_partitions"]

# A multinomial candidate's refit is statsmodels' MNLogit on the rows: no pass over partitions.
_NO_REFITS = (
    "on dask data the candidates' refits (bse, conf_int(), candidate_params() of every "
    "candidate, candidate_table, coef_table(terms='all'), candidates[label]) are for families "
    "{families}, not {family!r}: statsmodels' MNLogit has no pass over partitions. On dask "
    "data params (the averaged coefficients), candidate_params(label) of one candidate, the "
    "weights, risks, summary() and predict() work; for the rest fit an in-memory sample, e.g. "
    "pearl.fit(formula, ddf.sample(frac=0.1).compute(), ...)"
)

# the refit of a candidate on dask data (the name the fits on dask data have always used)
PartitionRefit = SumsRefit


def _refit_part(frame, blocks, offset, spec, kind, columns, B, env) -> RefitSums:
    """One partition's refit sums for the candidates whose columns and coefficients are given."""
    return row_sums(kind, partition_design(spec, frame, blocks),
                    partition_response(spec, kind, frame, env), columns, B)


def _meat_part(frame, blocks, offset, spec, kind, columns, B, cov, breads, project,
               blocks_only, env) -> MeatSums:
    """One partition's stacked-score sums (:func:`~pearlstats.inference.robust.row_meat`)."""
    return row_meat(kind, partition_design(spec, frame, blocks),
                    partition_response(spec, kind, frame, env), columns, B, cov,
                    breads=breads, project=project, blocks_only=blocks_only)


def sums_partitions(rows: Any, spec: Any, family_name: str, columns: Sequence[np.ndarray],
                    B: np.ndarray) -> RefitSums:
    """The refit sums of all rows (:func:`~pearlstats.inference.refit_sums.row_sums`), added
    up over the partitions on the workers."""
    if rows.n == 0:
        raise DataError("the data has no rows (every partition is empty): nothing to refit")
    return tree_sum(rows.tasks(_refit_part, spec, family_name, columns, B, None))


def meat_partitions(rows: Any, spec: Any, family_name: str, columns: Sequence[np.ndarray],
                    B: np.ndarray, cov: CovSpec,
                    breads: Sequence[np.ndarray] | None = None,
                    project: Sequence[np.ndarray] | None = None,
                    blocks_only: bool = False) -> MeatSums:
    """The candidates' stacked-score sums over the partitions, in row order (so HAC's lags
    cross partition boundaries as they cross chunks in memory); see
    :func:`~pearlstats.inference.robust.row_meat` for *project* and *blocks_only*."""
    return tree_sum(rows.tasks(_meat_part, spec, family_name, list(columns), B, cov, breads,
                               project, blocks_only, None))


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
    InMemoryOnlyError
        For a family other than gaussian, binomial or Poisson (an OptionError).
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
    ...     refit = refit_partitions(rows, design.spec, "gaussian", pool.pool, coefs,
    ...                              0.0)["a"]
    >>> direct = sm.OLS(y, X).fit()
    >>> bool(np.allclose(refit.bse, direct.bse, rtol=1e-10)), refit.df_resid
    (True, 47.0)
    """
    if family_name not in FAMILIES:
        raise InMemoryOnlyError(_NO_REFITS.format(families=list(FAMILIES), family=family_name))
    chosen = _positions(candidates, labels)
    columns = [np.asarray(candidates[j].columns) for j in chosen]
    B = np.asarray(coefs)[-1][:, chosen]
    total = sums_partitions(rows, spec, family_name, columns, B)
    names = list(spec.column_names)
    return refits_from_sums(
        family_name, total, columns, [B[S, position] for position, S in enumerate(columns)],
        [candidates[j].label for j in chosen], [[names[i] for i in S] for S in columns], ridge)
