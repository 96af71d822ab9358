"""Prediction and evaluation of dask rows, partition by partition.

:func:`predict_dask` returns a lazy dask Series (for a dask DataFrame; same
partitions and index) or a lazy 1-D dask array (for a dict of dask arrays):
each partition's design is rebuilt with the fit's DesignSpec and multiplied by
the refitted candidates' coefficients. :func:`evaluate_dask` scores PEARL and
the baselines on dask test rows in one pass and returns the (small) pandas
score table of :meth:`PearlResults.evaluate`.

:data:`DASK_ROWS` bundles the two as the
:class:`~pearlstats.results.prediction.LazyRows` that :func:`pearlstats.fit`
hands to the in-memory results, so that ``res.predict(dask_rows)`` works
without the results importing this package (nor this package the results:
both read the results' public attributes only).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..backends.partitions import tree_sum
from ..engines.likelihood import mean_of
from ..exceptions import DataError, OptionError
from ..weights.baselines import NULL, STRATEGIES
from ..weights.metrics import ORACLE, metric_names, metric_sums, primary_metric
from .data import dask_rows, partition_design, partition_response, uses_dask
from .multinomial import class_codes, oof_probabilities

__all__ = ["DASK_ROWS", "DaskRows", "coefficient_matrix", "evaluate_dask", "predict_dask"]


def coefficient_matrix(res: Any, labels: list) -> np.ndarray:
    """(p, len(labels)) coefficients of the all-rows refits (0 outside their columns);
    (p, len(labels), C - 1) for multinomial (``MNLogit``'s layout, class 0 the reference)."""
    p = len(res.design_spec.column_names)
    classes = res.classes if res.family == "multinomial" else None
    B = np.zeros((p, len(labels)) + (() if classes is None else (len(classes) - 1,)))
    columns = {candidate.label: candidate.columns for candidate in _everything(res)[0]}
    for j, label in enumerate(labels):
        try:
            params = res.candidate_params(label)
        except OptionError as err:
            raise OptionError(
                f"candidate {label!r} is not a linear model; dask rows need a statsmodels "
                "downstream"
            ) from err
        B[columns[label], j] = params.to_numpy()
    return B


def _everything(res) -> tuple[list, np.ndarray]:
    """Every candidate (pool, then baseline-only) and whether each failed."""
    return res.stages.candidates.everything, res.stages.output.failed


def _representations(res):
    return res.stages.representations


def _rows_for(res, newdata, blocks):
    if not uses_dask(newdata, blocks):
        # a fit on dask data has no in-memory predict path of its own
        raise DataError(
            f"the rows are in memory ({type(newdata).__name__}) but this fit was on dask data and "
            "predicts and evaluates dask rows; wrap them, e.g. dd.from_pandas(frame, "
            "npartitions=1) or a dict of da.from_array(...)"
        )
    if not uses_dask(newdata):  # dask blocks beside rows in memory: one of each
        raise DataError(
            f"the rows are in memory ({type(newdata).__name__}) but their blocks are dask "
            "arrays; give both as dask (the rows as dd.from_pandas(frame, npartitions=...), "
            "the blocks chunked as its partitions) or both in memory (the blocks as numpy "
            "arrays, e.g. {name: block.compute()})"
        )
    source = blocks if blocks is not None else _representations(res)
    return dask_rows(newdata, source, res.design_spec.formula)


def _candidate_means(X: np.ndarray, B: np.ndarray, kind: str) -> np.ndarray:
    """Each candidate's mean (rows, J), or class probabilities (rows, J, C), of design rows."""
    if kind == "multinomial":
        return oof_probabilities(X, np.zeros(len(X), dtype=np.intp), [0], B[None])
    P = X @ B
    return P if kind == "gaussian" else mean_of(kind, P)


def _predict_part(frame, blocks, offset, spec, kind, B, w, as_series, classes):
    P = _candidate_means(partition_design(spec, frame, blocks), B, kind)
    values = np.tensordot(P, w, axes=([1], [0]))  # (rows,) or (rows, C)
    if not as_series:
        return values
    if classes is not None:
        return pd.DataFrame(values, index=frame.index, columns=classes)
    return pd.Series(values, index=frame.index, name="prediction")


def predict_dask(res: Any, newdata: Any, blocks: Any=None) -> Any:
    """PEARL predictions of dask rows: a lazy dask Series (DataFrame input) or 1-D dask array."""
    import dask.array as da
    import dask.dataframe as dd

    weights = res.weights[res.weights > 0]
    B = coefficient_matrix(res, list(weights.index))
    rows = _rows_for(res, newdata, blocks)
    as_series = isinstance(newdata, dd.DataFrame)
    classes = res.classes if res.family == "multinomial" else None
    tasks = rows.tasks(
        _predict_part, res.design_spec, res.family, B, weights.to_numpy(), as_series, classes,
        keep_empty=True,
    )
    if as_series:
        meta = (pd.Series(dtype=float, name="prediction") if classes is None
                else pd.DataFrame(columns=classes, dtype=float))
        return dd.from_delayed(tasks, meta=meta, divisions=rows.divisions, verify_meta=False)
    width = () if classes is None else (len(classes),)
    return da.concatenate(
        [da.from_delayed(t, shape=(m,) + width, dtype=float) for t, m in zip(tasks, rows.lengths)]
    )


def _score_part(frame, blocks, offset, spec, kind, B, W, env, classes, null):
    """Metric sums of a partition's rows: the methods' (``P @ W``), then the *null* model's
    (a constant mean, or class probabilities (C,))."""
    X = partition_design(spec, frame, blocks)
    y = partition_response(spec, kind, frame, env)
    P = _candidate_means(X, B, kind)
    if classes is not None:  # class probabilities (rows, methods, C) of the class codes
        y = class_codes(y, classes, new_rows=True)
        combined = np.einsum("rjc,jm->rmc", P, W)
        constant = np.broadcast_to(null, (len(y), 1, len(null)))
    else:
        combined = P @ W  # (rows, methods)
        constant = np.full((len(y), 1), null)
    return {"n": len(y)} | metric_sums(kind, y, np.concatenate([combined, constant], axis=1))


def evaluate_dask(res: Any, test_data: Any, blocks: Any=None) -> pd.DataFrame:
    """Scores of PEARL and the baselines on dask test rows (see :meth:`PearlResults.evaluate`)."""
    strategies = res.strategy_weights
    everything, flags = _everything(res)
    failed = dict(zip(strategies.columns, np.asarray(flags)))
    singles = [
        c.label
        for c in everything
        if len(c.blocks) == 1 and c.label == c.blocks[0] and not failed[c.label]
    ]
    methods = [m for m in STRATEGIES if not strategies.loc[m].isna().any()]
    used = list(strategies.columns[(strategies.fillna(0) > 0).any(axis=0).to_numpy()])
    labels = list(dict.fromkeys([*used, *singles]))
    B = coefficient_matrix(res, labels)
    columns = [strategies.loc[m].reindex(labels).fillna(0.0).to_numpy() for m in methods]
    columns += [np.eye(len(labels))[labels.index(s)] for s in singles]
    W = np.column_stack(columns)
    rows = _rows_for(res, test_data, blocks)
    classes = np.asarray(res.classes) if res.family == "multinomial" else None
    # the summary's Null: the intercept-only model of the fit's rows (no offset on dask rows)
    null = res.stages.null_predictions(1)[0]
    total = tree_sum(rows.tasks(_score_part, res.design_spec, res.family, B, W, None, classes,
                                null))
    names = list(metric_names(res.family))
    scores = {name: total[name] / total["n"] for name in names}
    table = {method: {name: scores[name][i] for name in names} for i, method in enumerate(methods)}
    single = {
        s: {name: scores[name][len(methods) + i] for name in names} for i, s in enumerate(singles)
    }
    table[NULL] = {name: scores[name][-1] for name in names}
    primary = primary_metric(res.family)
    best = min(singles, key=lambda s: single[s][primary]) if singles else None
    table[ORACLE] = single[best] if best is not None else {}
    frame = pd.DataFrame.from_dict(table, orient="index").reindex(
        index=[*STRATEGIES, NULL, ORACLE], columns=names
    )
    frame = frame.rename_axis(index="method", columns="metric")
    frame.attrs["best_candidate"] = best
    frame.attrs["n_test"] = int(total["n"])
    return frame


class DaskRows:
    """Prediction and scoring of dask rows for a results object (a ``LazyRows``)."""

    def holds(self, data: Any, blocks: Any) -> bool:
        return uses_dask(data, blocks)

    def predict(self, res: Any, newdata: Any, blocks: Any) -> Any:
        return predict_dask(res, newdata, blocks)

    def evaluate(self, res: Any, test_data: Any, blocks: Any) -> pd.DataFrame:
        return evaluate_dask(res, test_data, blocks)


DASK_ROWS = DaskRows()
