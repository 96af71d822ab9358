"""Validation of the user's rows and representation blocks.

``fit`` accepts ``data`` as a DataFrame or a dict (which may hold 2-D arrays
under block names) and ``blocks=`` as a mapping name -> 2-D array / DataFrame
or a fitted :class:`~pearlstats.representations.Representations`. This module
turns those into one DataFrame of ordinary columns plus a dict of float blocks,
checking everything a user can get wrong and naming it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._warnings import warn
from ..checks import align_by_label, align_series_columns
from ..exceptions import BlockError, DataError, MissingValueError, PearlWarning, format_positions
from .sparse import as_csr, block_key, column_energy, constant_columns, finite_rows, keeps_sparse

__all__ = [
    "Block", "split_data", "data_index", "as_block", "align_rows", "resolve_blocks",
    "check_block_values", "first_block_index", "count_rows", "check_no_dates",
    "warn_durations",
]

# A dense copy of a sparse block is made only below this size; past it the
# user is told to reduce the block (e.g. LSI) rather than exhausting memory.
MAX_DENSE_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class Block:
    """One foundation representation block, ready for the design matrix.

    Attributes
    ----------
    name : str
    values : ndarray of shape (n, p)
        Or a float CSR matrix, for a sparse block wider than
        :data:`~pearlstats.design.sparse.SPARSE_MIN_COLUMNS` (kept sparse).
    column_names : list of str
        ``name[0]``, ``name[1]``, ... or ``name[col]`` for DataFrame columns.
    labels : tuple or None
        The column labels of a DataFrame block (None for arrays).
    """

    name: str
    values: np.ndarray
    column_names: list[str]
    labels: tuple | None = None

    @property
    def width(self) -> int:
        return self.values.shape[1]


def _is_representations(obj) -> bool:
    return hasattr(obj, "transform") and hasattr(obj, "names") and not isinstance(obj, Mapping)


def _is_na_scalar(value: Any) -> bool:
    return value is pd.NA


def _numpy_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """pandas' nullable columns (``Int64``, ``Float64``, ``boolean``, ``string``) as NumPy columns.

    patsy tests missing values with ``np.isnan`` and ``is None``, and
    ``pd.NA`` raised a bare ``TypeError`` ("boolean value of NA is
    ambiguous"). Numbers become floats with NaN where they are missing
    (integers without NA stay integers); booleans and strings with NA become
    objects with NaN / None, which patsy reads as the same levels with
    missing values; so does ``pd.NA`` inside an object column. Missing values are then
    reported or dropped like any other.
    """
    nullable = [position for position, dtype in enumerate(frame.dtypes)
                if isinstance(dtype, pd.api.extensions.ExtensionDtype)
                and (dtype.kind in "biuf" or getattr(dtype, "na_value", None) is pd.NA)]
    # pd.NA inside a plain object column (e.g. numbers cast to object): None, patsy's missing
    # (isna first: vectorised, and true for pd.NA too, so clean columns cost no Python loop)
    holding_na = [position for position, dtype in enumerate(frame.dtypes)
                  if dtype.kind == "O" and frame.iloc[:, position].isna().any()
                  and frame.iloc[:, position].map(_is_na_scalar).any()]
    if not nullable and not holding_na:
        return frame
    frame = frame.copy()
    for position in holding_na:
        values = frame.iloc[:, position].to_numpy(dtype=object, copy=True)
        values[[_is_na_scalar(value) for value in values]] = None
        frame.isetitem(position, values)
    for position in nullable:
        column = frame.iloc[:, position]
        kind = column.dtype.kind
        if not column.isna().any():
            if kind not in "biuf":
                continue
            values = column.to_numpy(dtype=column.dtype.numpy_dtype)
        elif kind in "iuf":
            values = column.to_numpy(dtype=float, na_value=np.nan)
        else:
            values = column.to_numpy(dtype=object, na_value=np.nan if kind == "b" else None)
        frame.isetitem(position, values)
    return frame


def check_no_dates(frame: pd.DataFrame, used: Sequence[str]) -> None:
    """Refuse a date-time, period or interval column the formula reads (durations are seconds,
    see split_data).

    A ``datetime64`` column has no natural zero: an origin chosen here would silently set
    the intercept's meaning, and patsy would read the column as one level per date.

    Raises
    ------
    DataError
        Naming the column and a conversion.
    """
    for column in used:
        if column not in frame.columns:
            continue
        dtype = frame[column].dtype
        if dtype.kind == "M":  # naive or time-zone aware
            raise DataError(
                f"column {column!r} holds dates/times (dtype {dtype}), which have no "
                "natural zero; give a number instead, e.g. "
                f"(data[{column!r}] - data[{column!r}].min()).dt.days, or the year"
            )
        if isinstance(dtype, pd.PeriodDtype):
            raise DataError(
                f"column {column!r} holds periods (dtype {dtype}), which have no natural zero; "
                f"give a number instead, e.g. data[{column!r}].dt.year, or the periods since "
                f"the first, (data[{column!r}] - data[{column!r}].min()).apply(lambda d: d.n)"
            )
        if isinstance(dtype, pd.IntervalDtype):
            raise DataError(
                f"column {column!r} holds intervals (dtype {dtype}), which are not numbers; "
                f"give a number for each, e.g. their midpoints data[{column!r}].array.mid, or "
                f"their labels data[{column!r}].astype(str) to read them as categories"
            )


def _durations_as_seconds(frame: pd.DataFrame) -> pd.DataFrame:
    """``timedelta64`` columns as float seconds (the fit warns once: :func:`warn_durations`).

    A duration has a natural zero, so seconds are a faithful number (a coefficient is then
    per second); numpy cannot multiply it by a float, which patsy's design needs.
    """
    durations = [position for position, dtype in enumerate(frame.dtypes) if dtype.kind == "m"]
    if not durations:
        return frame
    frame = frame.copy()
    for position in durations:
        frame.isetitem(position, frame.iloc[:, position].dt.total_seconds().to_numpy())
    return frame


def warn_durations(data: Any, used: Sequence[str]) -> None:
    """Warn, naming them, that the duration columns of *data* the formula reads (*used*) are
    read as seconds (see :func:`split_data`); called once per fit.

    Examples
    --------
    >>> import warnings
    >>> data = pd.DataFrame({"d": pd.to_timedelta([1, 2], unit="s"), "x": [1.0, 2.0]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_durations(data, ["x"])
    ...     warn_durations(data, ["d", "x"])
    >>> [str(w.message)[:28] for w in caught]
    ["column(s) ['d'] are duration"]
    """
    if isinstance(data, pd.DataFrame):
        kinds = {str(name): dtype.kind for name, dtype in data.dtypes.items()}
    elif isinstance(data, Mapping):
        kinds = {str(name): getattr(value, "dtype", np.asarray(value).dtype).kind
                 for name, value in data.items() if np.ndim(value) == 1}
    else:
        return
    names = [name for name in dict.fromkeys(used) if kinds.get(name) == "m"]
    if names:
        warn(f"column(s) {names} are durations (timedelta64), read as seconds (float): "
             "their coefficients are per second", PearlWarning)


def split_data(data: pd.DataFrame | Mapping[str, Any]) -> tuple[pd.DataFrame, dict]:
    """Separate ordinary columns from 2-D arrays stored in a dict ``data``.

    Parameters
    ----------
    data : DataFrame or dict
        A dict may mix 1-D columns and 2-D arrays (blocks).

    Returns
    -------
    frame : DataFrame
        The one-dimensional columns.
    embedded : dict
        Name -> 2-D value found in *data*.
    """
    if isinstance(data, pd.DataFrame):
        repeated = sorted({str(c) for c in data.columns[data.columns.duplicated()]})
        if repeated:
            raise DataError(
                f"data has more than one column named {repeated}; give each column a unique name"
            )
        return _durations_as_seconds(_numpy_columns(data.reset_index(drop=True))), {}
    if not isinstance(data, Mapping):
        raise DataError(
            "data must be a pandas DataFrame or a dict of "
            f"columns (and 2-D blocks), got {type(data).__name__}"
        )
    columns: dict = {}
    embedded: dict = {}
    for name, value in data.items():
        if isinstance(value, pd.DataFrame) or sp.issparse(value) or np.ndim(value) >= 2:
            embedded[name] = value
        else:
            columns[name] = value
    scalars = [name for name, value in columns.items() if np.ndim(value) == 0]
    if scalars:
        raise DataError(
            f"data holds single values under {scalars[:10]}; give one value per row "
            "(a list, array or Series), e.g. {'y': [1.0, 2.0], ...}"
        )
    lengths = {name: len(value) for name, value in columns.items()}
    if len(set(lengths.values())) > 1:
        raise DataError(f"the columns of data have different lengths: {lengths}")
    columns = align_series_columns(columns)  # not pandas' sorted union of their labels
    return _durations_as_seconds(_numpy_columns(pd.DataFrame(columns))), embedded


def labelled_rows(data: pd.DataFrame | Mapping[str, Any]) -> pd.DataFrame:
    """The one-dimensional columns of *data* (:func:`split_data`) indexed by its row labels
    (:func:`data_index`), for a check that names a bad row as the user's data does."""
    frame = split_data(data)[0]
    index = data_index(data)
    return frame if index is None else frame.set_axis(index)


def data_index(data: Any) -> pd.Index | None:
    """The row labels of ``data`` that pandas blocks align to, else None.

    A DataFrame's index; for a dict holding pandas Series, the labels pandas
    aligned them by when it made the dict's columns into one frame (the
    Series' labels say which row is which, as a DataFrame's would).
    """
    if isinstance(data, pd.DataFrame):
        return data.index
    if isinstance(data, Mapping) and any(isinstance(value, pd.Series) for value in data.values()):
        return split_data(data)[0].index
    return None


def align_rows(name: str, value: pd.DataFrame | pd.Series,
               index: pd.Index | None) -> pd.DataFrame | pd.Series:
    """Put a DataFrame (or Series) block's rows in the order of the data's index labels.

    pandas objects align by label, arrays by position (as in statsmodels), by the one rule
    of every row-aligned argument (:func:`pearlstats.checks.align_by_label`).

    Raises
    ------
    BlockError
        The block's index labels are not the data's (or repeat a label).
    """
    return align_by_label(f"block {name!r}", value, index, BlockError)


def _as_dense(name: str, value) -> tuple[np.ndarray, list[str], tuple | None]:
    if isinstance(value, pd.DataFrame):
        labels = [str(column) for column in value.columns]
        # New rows' DataFrame blocks are matched to the fit's columns by label, so two columns
        # with one label (or labels that print alike, 0 and "0") could not be told apart: the
        # prediction would silently use one of them twice.
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise BlockError(
                f"block {name!r} is a DataFrame with more than one column named {repeated}; "
                "give its columns unique names (or pass the block as a NumPy array, whose "
                "columns are matched by position)"
            )
        non_numeric = [c for c, dtype in zip(labels, value.dtypes) if dtype.kind not in "biuf"]
        if non_numeric:
            raise BlockError(
                f"block {name!r} has non-numeric columns {non_numeric}; a block must be numeric"
            )
        return (
            value.to_numpy(dtype=float),
            [f"{name}[{label}]" for label in labels],
            tuple(value.columns),
        )
    if keeps_sparse(value):  # wide: kept sparse, never densified (see design/sparse.py)
        return as_csr(value), [f"{name}[{j}]" for j in range(value.shape[1])], None
    if sp.issparse(value):
        n_rows, n_cols = value.shape
        if n_rows * n_cols * 8 > MAX_DENSE_BYTES:
            raise BlockError(
                f"block {name!r} is sparse with {n_cols} columns; a dense copy for the downstream "
                f"models would need {n_rows * n_cols * 8 / 1024**3:.1f} GiB. Reduce it first (e.g. "
                "pearl.LSI)."
            )
        array = value.toarray().astype(float)
    else:
        if np.ma.isMaskedArray(value):  # np.asarray would keep the masked entries' raw values
            value = np.ma.filled(value.astype(float), np.nan)
        try:
            array = np.asarray(value)
        except ValueError as err:  # ragged nested lists
            raise BlockError(
                f"block {name!r} cannot be read as a 2-D array (rows x features): {err}"
            ) from err
        if array.dtype == object or array.dtype.kind not in "biuf":
            raise BlockError(f"block {name!r} must be numeric, got dtype {array.dtype}")
        array = array.astype(float, copy=False)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise BlockError(
            f"block {name!r} has {array.ndim} dimensions (shape {array.shape}); a block must be "
            "2-D (rows x features) — flatten images first, e.g. X.reshape(len(X), -1)"
        )
    return array, [f"{name}[{j}]" for j in range(array.shape[1])], None


def as_block(name: str, value: Any) -> Block:
    """A validated float :class:`Block` from a 2-D array, sparse matrix or DataFrame."""
    values, column_names, labels = _as_dense(name, value)
    return Block(name, values, column_names, labels)


def check_block_values(name: str, values: np.ndarray, n_rows: int,
                       labels: pd.Index | None = None) -> None:
    """Check one block's shape and values against the data's row count.

    *labels*, the data's row labels, name the rows in a message (positions without them).

    Raises
    ------
    BlockError
        Wrong row count, no columns, or values whose squares overflow.
    MissingValueError
        NaN or inf, with their row positions.
    """
    if values.shape[0] != n_rows:
        raise BlockError(
            f"block {name!r} has {values.shape[0]} rows but "
            f"the data has {n_rows}; give one row per data row"
        )
    if values.shape[1] == 0:
        raise BlockError(f"block {name!r} has no columns; drop it from the formula")
    # Gram matrices and squared-error risks need the squares; past ~1e154 they overflow to inf.
    # A NaN or inf value makes its column's sum of squares non-finite too, so the rows are
    # searched only then (one pass over the block, not two, when all is well).
    huge = np.flatnonzero(~np.isfinite(column_energy(values)))
    if not huge.size:
        return
    bad_rows = np.flatnonzero(~finite_rows(values))
    if bad_rows.size:
        raise MissingValueError(
            f"block {name!r} has NaN or infinite values at "
            f"{format_positions(bad_rows, labels=labels)}; "
            "impute or remove those rows (or pass missing='drop' to fit or evaluate, "
            "missing='nan' to predict)"
        )
    raise BlockError(
        f"block {name!r} has values too large for float64 arithmetic in column(s) "
        f"{huge[:10].tolist()} (largest |value| {abs(values).max():.3g}); rescale the "
        "block, e.g. divide it by its standard deviation"
    )


def count_rows(frame: pd.DataFrame, blocks: Mapping[str, Block]) -> int:
    """The data's row count, every block checked against it (``fit``, ``predict``, ``evaluate``).

    The data's columns (or, a DataFrame without columns, its index) give the count; with
    neither (a dict of blocks only) the first block does.

    Raises
    ------
    BlockError
        A block whose row count is not the data's, naming both counts.
    """
    if not blocks:
        return len(frame)
    first = next(iter(blocks.values())).values.shape[0]
    n = len(frame) if len(frame.columns) or len(frame.index) else first
    for block in blocks.values():
        if block.values.shape[0] != n:
            check_block_values(block.name, block.values, n)  # raises the row-count error
    return n


def _unknown_block_message(name: str, available: list[str]) -> str:
    if not available:  # nothing given at all: most likely blocks= was forgotten
        return (
            f"block {name!r} in the formula has no values: no blocks were given; pass them with "
            f"blocks={{{name!r}: array with one row per data row, ...}} (or a fitted "
            f"pearl.Representations), or put the 2-D array in a dict data under {name!r}"
        )
    close = difflib.get_close_matches(name, available, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return (
        f"block {name!r} in the formula is not among the blocks given "
        f"(available: {available}).{hint}"
    )


def resolve_blocks(
    names: Sequence[str],
    frame: pd.DataFrame,
    embedded: Mapping,
    blocks: Mapping[str, Any] | Any | None,
    index: pd.Index | None = None,
) -> dict[str, Block]:
    """Collect the formula's blocks from ``blocks=`` and ``data``, validated.

    Parameters
    ----------
    names : sequence of str
        Block names in formula order.
    frame : DataFrame
        Ordinary columns (used to compute blocks from a ``Representations``).
    embedded : mapping
        2-D values found inside a dict ``data``.
    blocks : mapping, Representations or None
    index : pandas Index, optional
        Row labels of a DataFrame ``data``: DataFrame blocks (and one-column
        blocks given as a Series) are aligned to them by label (see
        :func:`align_rows`). Without it (a dict ``data``) they are aligned to
        the first one's labels
        (:func:`first_block_index`): their labels say which row is which, so
        two blocks in different row orders must not be paired by position.

    Returns
    -------
    dict of str -> Block
        In formula order, without checking values (see ``check_block_values``).
    """
    if blocks is None:
        supplied: Mapping = {}
    elif _is_representations(blocks):
        # with the data's row labels (*frame*'s index is reset), so that a bad input is named
        # by its label
        labelled = index is not None and len(index) == len(frame)
        # only the formula's blocks: another learner's columns need not be there, nor its errors
        supplied = blocks.transform(frame.set_axis(index) if labelled else frame,
                                    names=[name for name in names if name in blocks.names])
    elif isinstance(blocks, Mapping):
        supplied = blocks
        not_named = [key for key in supplied if not isinstance(key, str)]
        if not_named:  # block(name) in a formula is a string: 0 would never match block(0)
            raise BlockError(
                f"blocks= keys must be the formula's block names (strings), got "
                f"{not_named[:5]!r}; e.g. blocks={{str(k): v for k, v in blocks.items()}} with "
                "block(name) in the formula"
            )
    else:
        raise BlockError(
            "blocks must be a dict name -> 2-D array/DataFrame or a "
            f"fitted pearl.Representations, got {type(blocks).__name__}"
        )
    if index is None:
        index = first_block_index(names, embedded, supplied)
    both = sorted(set(supplied) & set(embedded))
    if both:
        raise BlockError(
            f"block(s) {both} are given both in data and in blocks=; give each block once"
        )
    given = list(blocks.names) if _is_representations(blocks) else list(supplied)
    available = given + list(embedded)
    resolved: dict[str, Block] = {}
    for name in names:
        if name in supplied:
            value = supplied[name]
        elif name in embedded:
            value = embedded[name]
        elif name in frame.columns:
            raise BlockError(
                f"block({name}) names a 1-D column of the data; a block must be a 2-D array. "
                f"Use {name!r} as an ordinary covariate term instead, or pass the block via blocks="
            )
        else:
            raise BlockError(_unknown_block_message(name, available))
        named = _named_columns(name, value, frame)
        if named is not value and index is not None and len(index) == len(named):
            # the data's own columns, in its row order (*frame*'s index is reset): its labels
            named = named.set_axis(index, axis=0)
        value = named
        if isinstance(value, (pd.DataFrame, pd.Series)):  # a Series is a pandas object too
            value = align_rows(name, value, index)
        resolved[name] = as_block(name, value)
    return resolved


def _named_columns(name: str, value: Any, frame: pd.DataFrame) -> Any:
    """A block given as a list of the data's column names (as a dask fit takes them): those
    columns, as a DataFrame; any other value unchanged."""
    if not (isinstance(value, (list, tuple)) and value
            and all(isinstance(column, str) for column in value)):
        return value
    missing = [column for column in value if column not in frame.columns]
    if missing:
        raise BlockError(f"block {name!r} names columns {missing[:10]} that the data lacks; "
                         f"give the data those columns (it has {list(frame.columns)[:10]})")
    return frame[list(value)]


def first_block_index(
    names: Sequence[str], embedded: Mapping, blocks: Mapping[str, Any] | Any | None
) -> pd.Index | None:
    """Row labels of the first pandas block in formula order (in data or blocks=), else None.

    With a dict ``data`` (no index of its own) these labels are the rows' identity:
    the other DataFrame (or Series) blocks are aligned to them, and predictions are
    labelled by them.
    """
    supplied = blocks if isinstance(blocks, Mapping) else {}
    for name in names:
        value = supplied.get(name, embedded.get(name))
        if isinstance(value, (pd.DataFrame, pd.Series)):
            return value.index
    return None


def check_block_information(blocks: Mapping[str, Block]) -> None:
    """Reject blocks that carry no information or repeat another block.

    A constant block is collinear with the intercept, and a duplicated block
    makes pairs of candidates identical; both are almost always a mistake in
    how the blocks were built.

    Raises
    ------
    DataError
        No rows at all (nothing to check or fit).
    BlockError
        A constant block, or two identical blocks.
    """
    if any(block.values.shape[0] == 0 for block in blocks.values()):
        raise DataError(
            "there are no rows to fit (empty data, or missing='drop' removed every row)"
        )
    for block in blocks.values():
        if _rows_all_equal(block.values):
            raise BlockError(
                f"block {block.name!r} is constant in every column, so it carries no information "
                "about the response; check how it was computed"
            )
    seen: dict[tuple, list[Block]] = {}
    for block in blocks.values():
        # A sample of rows tells most blocks apart; only blocks that agree on it are compared
        # byte for byte (np.tobytes of every block copied all the data, 0.4-0.8 s at 10^6 rows).
        key = _sample_key(block.values)
        for other in seen.get(key, []):
            if _identical(block.values, other.values):
                raise BlockError(
                    f"block {block.name!r} is identical to block {other.name!r}; candidates "
                    "containing either would be duplicates — remove one of them from the formula"
                )
        seen.setdefault(key, []).append(block)


def _sample_key(values) -> tuple:
    """Shape and a sample of rows (a sparse block: its full content key, see block_key)."""
    if sp.issparse(values):
        return block_key(values)
    return (values.shape, values[:: max(1, len(values) // 1024)].tobytes(), values[-1].tobytes())


def _identical(a, b) -> bool:
    if sp.issparse(a) or sp.issparse(b):
        return sp.issparse(a) and sp.issparse(b) and block_key(a) == block_key(b)
    return a.tobytes() == b.tobytes()


def _rows_all_equal(values: np.ndarray) -> bool:
    """Whether every row equals the first (every column constant), looking at most rows once."""
    if sp.issparse(values):
        return bool(np.all(constant_columns(values)))
    first = values[0]
    for start in range(1, len(values), 65_536):
        if np.any(values[start:start + 65_536] != first):
            return False
    return True
