"""Dask data as PEARL reads it: partitions aligned with the blocks, their designs and folds.

:func:`dask_rows` aligns a dask DataFrame (or dict of dask arrays) with its blocks into a
:class:`~pearlstats.backends.partitions.DaskRows` (the backend that maps functions over
partitions and adds up the results). The functions mapped build each partition's design
matrix, response and folds with the fit's :class:`~pearlstats.design.spec.DesignSpec`
(:func:`partition_inputs`) and return small sums; nothing of size n leaves the workers.

Folds are ``hash(seed, global row position) mod K``
(:func:`~pearlstats.backends.partitions.hash_folds`), so they are reproducible without a
shuffle and are the same labels an in-memory fit gets from
``cv=hash_folds(np.arange(n), K, seed)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from patsy import EvalEnvironment

from ..backends.lazy import is_dask_collection
from ..backends.partitions import DaskRows, hash_folds
from ..design.formula import covariate_row_variables, response_values
from ..design.spec import Design, build_design
from ..engines.moments import pilot_centre
from ..exceptions import (
    BlockError,
    DataError,
    OptionError,
    ResponseError,
    format_labels,
)

__all__ = ["DaskRows", "dask_rows", "fold_count", "hash_folds", "head_design",
           "head_design_and_pilot", "is_dask_collection", "uses_dask"]


def uses_dask(data: Any, blocks: Any=None) -> bool:
    """Whether *data* or any of *blocks* is a dask collection (the distributed path applies)."""
    values = [data] + (list(data.values()) if isinstance(data, Mapping) else [])
    if isinstance(blocks, Mapping):
        values += list(blocks.values())
    return any(is_dask_collection(value) for value in values)


def _frame_of_arrays(*columns, names):
    return pd.DataFrame(dict(zip(names, columns)))


def _check_row_chunks(name: str, value) -> None:
    if value.ndim == 2 and len(value.chunks[1]) != 1:
        raise BlockError(
            f"block {name!r} is chunked along its columns {value.chunks[1]}; chunk dask blocks "
            "along rows "
            "only, e.g. block.rechunk({1: -1})"
        )
    if value.ndim not in (1, 2):
        raise BlockError(
            f"{name!r} is a {value.ndim}-D dask array; give 1-D columns and 2-D blocks"
        )


def dask_rows(data: Any, blocks: Any, formula: Any) -> DaskRows:
    """Partitions of a dask DataFrame or dict of dask arrays, with the blocks aligned to them.

    Raises
    ------
    DataError, BlockError, OptionError
        Unsupported inputs (pandas mixed with dask, column-chunked blocks, missing blocks).
    """
    import dask.array as da
    import dask.dataframe as dd

    frame_parts, arrays_in, groups, representations = None, {}, {}, None
    divisions = None
    if isinstance(data, dd.DataFrame):
        frame_parts = data
        divisions = tuple(data.divisions)
    elif isinstance(data, Mapping):
        columns = {k: v for k, v in data.items() if getattr(v, "ndim", 1) == 1}
        arrays_in.update({k: v for k, v in data.items() if getattr(v, "ndim", 1) != 1})
        loose = [k for k, v in data.items() if not isinstance(v, da.Array)]
        if loose:
            raise DataError(
                f"data mixes dask arrays with other values under {loose[:10]}; make every column "
                "a dask array "
                "(da.from_array) or pass a dask DataFrame"
            )
        frame_parts = columns
    else:
        raise DataError(
            f"data must be a dask DataFrame or a dict of dask arrays for the distributed fit, got "
            f"{type(data).__name__}"
        )
    if hasattr(blocks, "transform") and not isinstance(blocks, Mapping):
        representations = blocks
    elif isinstance(blocks, Mapping):
        # as in memory (pearlstats.design.data): one block may not come from two places
        both = sorted(set(blocks) & set(arrays_in))
        if both:
            raise BlockError(
                f"block(s) {both} are given both in data and in blocks=; give each block once"
            )
        for name, value in blocks.items():
            if isinstance(value, da.Array):
                # a 1-D block is one feature, as in memory (pearlstats.design.data)
                arrays_in[name] = value[:, None] if value.ndim == 1 else value
            elif isinstance(value, (list, tuple)) and isinstance(data, dd.DataFrame):
                missing = [c for c in value if c not in data.columns]
                if missing:
                    raise BlockError(
                        f"block {name!r} names columns {missing[:10]} that the data lacks"
                    )
                groups[name] = tuple(value)
            else:
                raise BlockError(
                    f"block {name!r} is a {type(value).__name__}; with dask data give blocks as "
                    "dask arrays "
                    "chunked along rows, or as lists of the dask DataFrame's columns"
                )
    elif blocks is not None:
        raise BlockError(
            f"blocks must be a dict or a fitted Representations, got {type(blocks).__name__}"
        )
    for name, value in arrays_in.items():
        _check_row_chunks(name, value)
    arrays_in = {name: _known_chunks(value) for name, value in arrays_in.items()}
    if isinstance(frame_parts, Mapping):
        frame_parts = {name: _known_chunks(value) for name, value in frame_parts.items()}
    wanted = set(formula.block_names) - set(arrays_in) - set(groups)
    if wanted and representations is None:
        raise BlockError(f"block(s) {sorted(wanted)} of the formula are in neither data nor blocks")
    return _align(frame_parts, arrays_in, groups, representations, divisions)


def _known_chunks(value):
    """*value* with its row chunk sizes known.

    ``DataFrame.to_dask_array()`` without ``lengths=True`` gives chunks of
    unknown size (NaN), which cannot be aligned with the data's partitions;
    their sizes cost one pass over that array.
    """
    if np.isnan(value.chunks[0]).any():
        return value.compute_chunk_sizes()
    return value


def _align(frame_parts, arrays_in, groups, representations, divisions) -> DaskRows:
    from dask import compute, delayed

    if isinstance(
        frame_parts, Mapping
    ):  # a dict of 1-D dask arrays: partitions follow their chunks
        reference = next(iter(frame_parts.values()), None)
        reference = reference if reference is not None else next(iter(arrays_in.values()))
        lengths = tuple(int(c) for c in reference.chunks[0])
        names = list(frame_parts)
        uneven = {name: frame_parts[name].shape[0] for name in names
                  if frame_parts[name].shape[0] != sum(lengths)}
        if uneven:
            raise DataError(
                f"the data's columns have different lengths: {uneven} where "
                f"{names[0]!r} has {sum(lengths)} rows; give every column one value per row"
            )
        columns = [frame_parts[name].rechunk((lengths,)).to_delayed().ravel() for name in names]
        frames = (
            [delayed(_frame_of_arrays)(*parts, names=names) for parts in zip(*columns)]
            if names
            else [delayed(pd.DataFrame)(index=range(m)) for m in lengths]
        )
    else:
        frames = list(frame_parts.to_delayed(optimize_graph=False))
        first = next(iter(arrays_in.values()), None)
        if first is not None and len(first.chunks[0]) == len(frames):
            lengths = tuple(
                int(c) for c in first.chunks[0]
            )  # checked against the frames in each task
        else:
            lengths = tuple(int(m) for m in compute(*[delayed(len)(f) for f in frames]))
        frames = [delayed(_checked_length)(f, m) for f, m in zip(frames, lengths)]
    arrays = {}
    for name, value in arrays_in.items():
        if value.shape[0] != sum(lengths):
            raise BlockError(
                f"block {name!r} has {value.shape[0]} rows but the data has {sum(lengths)}"
            )
        arrays[name] = list(value.rechunk((lengths, value.shape[1])).to_delayed().ravel())
    return DaskRows(frames, arrays, groups, representations, lengths, divisions)


def _checked_length(frame, length):
    if len(frame) != length:
        raise BlockError(
            f"a data partition has {len(frame)} rows where the dask blocks' chunk has {length}; "
            "chunk the "
            "blocks like the DataFrame's partitions"
        )
    return frame


# ---- design, response and folds of one partition -------------------------------------------------
def check_distributable(design: Design) -> None:
    """Refuse covariate terms whose value for a row depends on other rows.

    Raises
    ------
    OptionError
        A stateful transform (``center``, ``standardize``, ...) or a categorical term.
    """
    info = design.spec.covariates.design_info
    for factor, factor_info in info.factor_infos.items():
        state = factor_info.state if isinstance(factor_info.state, dict) else {}
        if state.get("transforms"):
            raise OptionError(
                f"the covariate term {factor.name()!r} is a stateful transform whose state needs "
                "all rows; the "
                "distributed fit supports numeric columns, the intercept and row-wise functions "
                "(np.log(x)); "
                "compute the transformed column with dask first"
            )
        if factor_info.type == "categorical":
            raise OptionError(
                f"the covariate term {factor.name()!r} is categorical: its levels need all rows; "
                "the distributed "
                "fit supports numeric covariates and the intercept; one-hot encode it with dask "
                "first "
                "(dd.get_dummies on a categorized column)"
            )


def head_design(rows: DaskRows, formula: Any, eval_env: Any) -> Design:
    """The fit's DesignSpec, built on the first partition with rows (a design of partition size)."""
    return _first_rows(rows, formula, eval_env)[1]


def head_design_and_pilot(rows: DaskRows, formula: Any, eval_env: Any,
                          family: str) -> tuple[Design, np.ndarray]:
    """:func:`head_design`, and the pilot centre the fit's moments are taken around.

    The pilot is :func:`~pearlstats.engines.moments.pilot_centre` of the first partition's
    design and response (column medians of its first rows), as the in-memory fit takes it
    from the first rows of its data.
    """
    frame, design = _first_rows(rows, formula, eval_env)
    y = partition_response(design.spec, family, frame, eval_env)
    return design, pilot_centre(design.X, y.astype(float), None)


def _first_rows(rows: DaskRows, formula: Any, eval_env: Any) -> tuple:
    from dask import compute

    tasks = rows.tasks(_head, formula)
    if not tasks:
        raise DataError("the data has no rows (every partition is empty)")
    frame, blocks = compute(tasks[0])[0]
    # A block given as columns of the data is named by them (a[a0], as in memory), not by
    # position: the spec keeps the names, and each partition's values come in the same order.
    blocks = {name: pd.DataFrame(values, columns=list(rows.groups[name]))
              if name in rows.groups else values for name, values in blocks.items()}
    frame, _ = covariate_row_variables(formula, frame, eval_env)
    design = build_design(formula, frame, blocks, eval_env)
    check_distributable(design)
    return frame, design


def _head(frame, blocks, offset, formula):
    return frame, {name: blocks[name] for name in formula.block_names}


def partition_design(spec: Any, frame: Any, blocks: Any) -> np.ndarray:
    """The partition's design matrix (covariates then blocks), as the in-memory fit builds it."""
    missing = [name for name in spec.block_names if name not in blocks]
    if missing:
        raise BlockError(f"block(s) {missing} are missing for a partition")
    return spec.design_matrix(
        frame.reset_index(drop=True), {name: blocks[name] for name in spec.block_names}
    )


def partition_response(spec: Any, family: str, frame: Any, eval_env: Any=None) -> np.ndarray:
    """The partition's response in the family's coding (binomial: 0/1 values, checked row by row).

    Names the response expression takes from the caller come from the fit's
    namespace (patsy's EvalEnvironment does not travel to workers).
    """
    eval_env = eval_env or EvalEnvironment([spec.covariates.namespace or {}])
    values = response_values(spec.formula, frame, eval_env)
    if values.dtype.kind == "b":
        values = values.astype(float)
    if values.dtype.kind not in "iuf":
        raise ResponseError(
            "the distributed fit needs a numeric response (0/1 for binomial), got dtype "
            f"{values.dtype}; "
            "recode it with dask first"
        )
    y = values.to_numpy(dtype=float)
    # A partition's positions mean nothing to the user; its index labels are the data's own.
    if family == "binomial" and not np.isin(y, (0.0, 1.0)).all():
        bad = np.flatnonzero(~np.isin(y, (0.0, 1.0)))
        raise ResponseError(
            "the distributed binomial fit needs the response coded 0/1 (or bool); it is "
            f"{y[bad[0]]:g} at {format_labels(frame.index[bad])}"
        )
    if family == "poisson" and (y < 0).any():
        bad = np.flatnonzero(y < 0)
        raise ResponseError(
            f"poisson y must be non-negative counts; it is {y[bad[0]]:g} at "
            f"{format_labels(frame.index[bad])}"
        )
    return y


def partition_folds(frame: Any, offset: int, n_rows: int, fold_spec: Any) -> np.ndarray:
    """Fold of a partition's rows: hashed positions, or the position of each row's label
    among the fold column's sorted labels (``fold_spec[2]``, from
    :func:`pearlstats.design.folds.fold_levels`), or a relabelling of either
    (``("relabel", base_spec, mapping)``: fold ``mapping[base fold]``, -1 for rows left out)."""
    kind, value, extra = fold_spec
    if kind == "relabel":  # a row the base spec leaves out (-1) stays out
        base = partition_folds(frame, offset, n_rows, value)
        return np.where(base >= 0, np.asarray(extra, dtype=np.intp)[base], -1)
    if kind == "hash":
        return hash_folds(np.arange(offset, offset + n_rows), value, extra)
    return np.searchsorted(extra, frame[value].to_numpy()).astype(np.intp)


def fold_count(fold_spec: Any) -> int:
    """K: the folds *fold_spec* deals rows to (labels 0..K-1; -1 leaves a row out)."""
    kind, value, extra = fold_spec
    if kind == "relabel":
        return max(extra, default=-1) + 1
    return int(value) if kind == "hash" else len(extra)


def relabel_folds(fold_spec: Any, mapping: np.ndarray) -> tuple:
    """The fold spec whose fold of a row is ``mapping[its fold under fold_spec]``; -1 leaves
    the row out of every pass (an outer fold held out of the procedure re-run on the others)."""
    return ("relabel", fold_spec, tuple(int(label) for label in mapping))


def partition_inputs(frame: Any, blocks: Any, offset: int, spec: Any, kind: str, fold_spec: Any,
                     env: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A partition's design matrix, response and folds, without the rows its folds leave out.

    The one entry point of the passes over rows: the design and response are built (and
    checked) on every row of the partition, so an error names the row where the data has it,
    and the rows of fold -1 are then dropped (possibly all of them: the passes' sums are
    zero-row safe).
    """
    X = partition_design(spec, frame, blocks)
    y = partition_response(spec, kind, frame, env)
    folds = partition_folds(frame, offset, len(y), fold_spec)
    kept = folds >= 0
    if kept.all():
        return X, y, folds
    return X[kept], y[kept], folds[kept]
