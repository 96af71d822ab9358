"""What a fit on dask data cannot do yet, refused in one place with the reason.

Two tables: the options of :func:`pearlstats.fit` (:func:`refuse_in_memory_only`,
called before any work on dask data; the message names every option the call
used) and the features of the results (:data:`RESULTS_NEEDING_ROWS`, checked by
:class:`~pearlstats.PearlResults` on every access when its rows are dask
partitions). Each needs the rows in one process, or has no implementation over
partitions yet. What depends on the data rather than the options (stateful
transforms such as ``center(x)``, categorical covariates, blocks chunked along
their columns) is refused where the partitions are read
(:mod:`pearlstats.distributed.data`).
"""

from __future__ import annotations

from typing import Any

from .design.folds import FoldRule, dask_column_name, describe_cv, is_dask_collection
from .exceptions import InMemoryOnlyError, OptionError

__all__ = ["FAMILIES", "LOSSES", "RESULTS_NEEDING_ROWS", "refuse_in_memory_only",
           "refuse_results_feature"]

FAMILIES = ("gaussian", "binomial", "poisson", "multinomial")
LOSSES = ("squared", "cross_entropy", "poisson_deviance")


def _reasons(family: str, loss: str, missing: str, rule: FoldRule, cv: Any, cv_repeats: int,
             downstream: Any, weighted: bool, grouped: bool = False,
             cov_type: str = "nonrobust") -> list[str]:
    return [reason for used, reason in (
        (family not in FAMILIES,
         f"family={family!r} (the distributed fit has {FAMILIES})"),
        (loss not in LOSSES,
         f"loss={loss!r} (the distributed weights minimise {LOSSES}; the hinge and absolute "
         "losses solve a linear programme over every row's out-of-fold prediction)"),
        (missing != "raise",
         f"missing={missing!r} (the rows to drop are known only after reading every "
         "partition; drop incomplete rows with dask first)"),
        (rule.kind == "loo",
         "cv='loo' (leave-one-out needs the row count and one fold per row; use K-fold or a "
         "fold column)"),
        (rule.kind == "labels", _labels_reason(cv)),
        (rule.kind == "splitter",
         f"{describe_cv(cv)} (a splitter object needs every row's position, response and group "
         "in one process; put its fold labels in a column of the data, e.g. cv='fold')"),
        (grouped,
         "groups= (dealing groups into folds needs every group's row count; put fold labels "
         "that keep groups whole in a column, e.g. cv='fold')"),
        (cv_repeats != 1,
         f"cv_repeats={cv_repeats} (repeated fold draws have no pass over partitions yet; "
         "fits with different seeds give other hashed draws)"),
        (downstream is not None,
         "downstream (a learner that needs its training rows in one process)"),
        (weighted, "weights/offset/exposure (observation weights and offsets)"),
        (cov_type != "nonrobust",
         f"cov_type={cov_type!r} (the sandwich's pass of stacked scores runs over row chunks in "
         "memory only)"),
    ) if used]


def _labels_reason(cv: Any) -> str:
    """Why fold labels given as values are refused, and how to give them instead."""
    if not is_dask_collection(cv):
        return (f"{describe_cv(cv)} (in-memory fold labels cannot be matched to dask partitions; "
                "put them in a column of the data and give its name, e.g. cv='fold')")
    column = dask_column_name(cv)
    if column is not None:
        return (f"{describe_cv(cv)} (a dask column of fold labels is given by its name: "
                f"cv={column!r})")
    return (f"{describe_cv(cv)} (dask fold labels are given as a column of the data, by its "
            "name, e.g. cv='fold')")


def refuse_in_memory_only(*, family: str, loss: str, missing: str, rule: FoldRule, cv: Any,
                          cv_repeats: int, downstream: Any,
                          weighted: bool, grouped: bool = False,
                          cov_type: str = "nonrobust") -> None:
    """Raise OptionError naming, with its reason, every option not available for dask data.

    Examples
    --------
    >>> from pearlstats.design.folds import FoldRule
    >>> refuse_in_memory_only(family="gaussian", loss="squared", missing="raise",
    ...                       rule=FoldRule("loo"), cv="loo", cv_repeats=1,
    ...                       downstream=None, weighted=False)
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.OptionError: not available for dask data yet: cv='loo' (leave-one-out \
needs the row count and one fold per row; use K-fold or a fold column). Fit an in-memory sample \
with them, e.g. pearl.fit(formula, ddf.sample(frac=0.1).compute(), ...), or change them
    """
    reasons = _reasons(family, loss, missing, rule, cv, cv_repeats, downstream, weighted,
                       grouped, cov_type)
    if reasons:
        raise OptionError(
            f"not available for dask data yet: {'; '.join(reasons)}. Fit an in-memory sample "
            "with them, e.g. pearl.fit(formula, ddf.sample(frac=0.1).compute(), ...), or "
            "change them"
        )


# Results features a fit on dask data refuses, with the reason (the rest of the results work:
# their tables are reductions over the partitions, see pearlstats.distributed.state).
RESULTS_NEEDING_ROWS = {
    "resample_weights(method='bootstrap' or refit=True)":
        "the bootstrap resamples rows; on dask data the fold complements (the default for up "
        "to 20 folds) are re-solved by passes",
    "weight_uncertainty": "the bootstrap re-runs the procedure on resampled rows",
    "honest_risk": "custom nested re-runs (res.honest, with the fit's outer folds, is computed "
                   "on the partitions)",
    "get_robustcov(a robust cov_type)":
        "the sandwich's pass of stacked scores runs over row chunks in memory (the nonrobust "
        "cov_params(), tvalues, pvalues and tests are computed on the partitions, and "
        "get_robustcov('nonrobust', scale='X2') too)",
}


def refuse_results_feature(name: str) -> None:
    """Raise InMemoryOnlyError: the results feature *name* needs the rows in one process.

    Examples
    --------
    >>> refuse_results_feature("weight_uncertainty")
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.InMemoryOnlyError: res.weight_uncertainty is not available for a \
fit on dask data: the bootstrap re-runs the procedure on resampled rows. Fit an in-memory \
sample for it, e.g. pearl.fit(formula, ddf.sample(frac=0.1).compute(), ...)
    """
    raise InMemoryOnlyError(
        f"res.{name} is not available for a fit on dask data: {RESULTS_NEEDING_ROWS[name]}. "
        "Fit an in-memory sample for it, e.g. pearl.fit(formula, ddf.sample(frac=0.1)"
        ".compute(), ...)"
    )
