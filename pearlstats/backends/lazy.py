"""Row-sized values that may be lazy dask arrays: recognising them and labelling them.

A fit on dask data keeps its row-sized values (design, response, folds, out-of-fold
predictions) as dask arrays with one chunk per partition; numpy functions applied to
them build lazy results (NEP 18), and a reduction is computed where the rows live.
The results label row-sized outputs with :func:`row_frame` and :func:`row_series`,
which give pandas objects for numpy arrays and dask ones for dask arrays, so nothing
row-sized is gathered on the client.

Examples
--------
>>> import numpy as np, pandas as pd
>>> row_series(np.array([1.0, 2.0]), pd.RangeIndex(2), "y").tolist()
[1.0, 2.0]
>>> is_dask_collection(np.zeros(2))
False
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["computed", "is_dask_collection", "row_frame", "row_series"]


def is_dask_collection(value: Any) -> bool:
    """True for a dask array, DataFrame or Series (without importing dask when it is absent).

    Nor when it is installed but not imported: no value can be a dask collection then, and
    importing it (with its dependencies) cost an in-memory fit 4-8 MiB for nothing.
    """
    if "dask" not in sys.modules:
        return False
    try:
        from dask import is_dask_collection as check
    except ImportError:
        return False
    return bool(check(value))


def computed(*values: Any) -> tuple:
    """The values as numpy arrays, lazy ones computed together (one pass over their rows).

    Numpy values are returned as they are; several lazy reductions of the same rows
    (means and SEs of the same losses) share one pass.
    """
    if not any(is_dask_collection(value) for value in values):
        return values
    import dask

    # Low-level fusion of these graphs drops the partitions of a dd.from_delayed frame
    # (dask 2026.8: "Missing dependency ('fromdelayed-...', i)"); each chunk is one task
    # chain here, so there is little to fuse anyway.
    with dask.config.set({"optimization.fuse.active": False}):
        return tuple(np.asarray(value) for value in dask.compute(*values))


def _labelled_part(values: np.ndarray, start: int, name: Any, columns: Any,
                   index: pd.Index | None = None) -> Any:
    index = pd.RangeIndex(start, start + len(values)) if index is None else index
    if columns is None:
        return pd.Series(values, index=index, name=name)
    return pd.DataFrame(values, index=index, columns=columns)


def _lazy_rows(values: Any, name: Any = None, columns: Any = None,
               labels: tuple | None = None) -> Any:
    """A dask Series or DataFrame of a dask array, one partition per row chunk.

    Indexed 0..n-1, or with *labels* ``(indexes, divisions, lengths)`` (one delayed pandas
    Index per partition of the dask DataFrame the rows came from, and the partitions' rows)
    by that DataFrame's own index, so that ``ddf.assign(fitted=res.fittedvalues)`` aligns
    row by row.

    Built from the chunks' delayed values (``dd.from_dask_array`` would tokenize the graph,
    which holds the design spec, not deterministically hashable).
    """
    import dask.dataframe as dd
    from dask import delayed

    if values.ndim == 2:  # one chunk across the columns: a partition is a block of whole rows
        values = values.rechunk({1: -1})
    if labels is not None:  # one chunk per partition of the data, empty ones included
        values = values.rechunk({0: tuple(labels[2])})
    starts = np.concatenate([[0], np.cumsum(values.chunks[0])]).astype(int)
    # optimize_graph=False: the array optimisation (fusion) loses dd.from_delayed partitions
    chunks = values.to_delayed(optimize_graph=False).ravel()
    indexes, divisions = labels[:2] if labels is not None else ([None] * len(chunks), None)
    parts = [delayed(_labelled_part)(chunk, int(start), name, columns, index)
             for chunk, start, index in zip(chunks, starts, indexes)]
    meta = _labelled_part(np.empty((0,) + values.shape[1:], dtype=values.dtype), 0, name,
                          columns)
    return dd.from_delayed(parts, meta=meta, divisions=divisions, verify_meta=False)


def row_series(values: Any, index: pd.Index, name: Any, labels: tuple | None = None) -> Any:
    """A Series of one value per row: pandas for numpy *values*, dask for a dask array.

    A dask Series is indexed by row position (as *index* is for a fit on dask data), or with
    *labels* by the dask DataFrame's index (see :func:`_lazy_rows`).
    """
    if is_dask_collection(values):
        return _lazy_rows(values, name=name, labels=labels)
    return pd.Series(np.asarray(values), index=index, name=name)


def row_frame(values: Any, index: pd.Index, columns: Any, copy: bool = True,
              labels: tuple | None = None) -> Any:
    """A DataFrame of rows: pandas for numpy *values*, dask for a dask array (see row_series)."""
    if is_dask_collection(values):
        return _lazy_rows(values, columns=list(columns), labels=labels)
    return pd.DataFrame(values, index=index, columns=columns, copy=copy)
