"""Raw rows (a DataFrame or a dict of columns) and the input each kind of learner reads from them.

A learner reads one of three kinds of input, from its own columns:

- ``"numeric"``: a float64 2-D array, the columns side by side (a dict may hold
  2-D arrays, such as flattened images, which contribute all their columns);
- ``"text"``: a list of ``str`` from exactly one column;
- ``"frame"``: a DataFrame of the columns (what a :class:`FunctionLearner` gets).

Learners declare the kind with an ``input_kind`` attribute; for other objects
(scikit-learn transformers, say) it is inferred: one column of strings is text,
anything else numeric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..checks import align_series_columns
from ..exceptions import BlockError, DataError, MissingValueError, format_positions
from ._checks import is_missing

INPUT_KINDS = ("numeric", "text", "frame")


def column_list(columns: str | Sequence[str] | None, owner: str) -> list | None:
    """``None``, one column name or a list of names -> ``None`` or a non-empty unique list."""
    if columns is None:
        return None
    if isinstance(columns, str) or not isinstance(columns, (list, tuple, pd.Index)):
        columns = [columns]
    columns = list(columns)
    if not columns:
        raise BlockError(
            f"{owner}: columns is empty; give at least one column name, or None for all columns"
        )
    repeated = sorted({str(c) for c in columns if columns.count(c) > 1})
    if repeated:
        raise BlockError(f"{owner}: columns lists {repeated} more than once; give each column once")
    return columns


class Rows:
    """Column access to a DataFrame or a dict of 1-D / 2-D columns with one length."""

    def __init__(self, rows: Any):
        if isinstance(rows, pd.DataFrame):
            repeated = sorted({str(c) for c in rows.columns[rows.columns.duplicated()]})
            if repeated:
                raise DataError(
                    f"the rows have duplicated column names {repeated}; make column names unique"
                )
            self.columns = list(rows.columns)
            self._values = {name: rows[name] for name in self.columns}
            self.n = len(rows)
            # a message names a bad row by its label, as the user finds it (df.loc[...])
            self.labels = rows.index
        elif isinstance(rows, Mapping):
            self.columns = list(rows)
            rows = align_series_columns(rows)  # Series meet by label, in the first one's order
            series = [value for value in rows.values() if isinstance(value, pd.Series)]
            self._values = {name: _as_column(name, value) for name, value in rows.items()}
            lengths = {name: len(value) for name, value in self._values.items()}
            if len(set(lengths.values())) > 1:
                raise DataError(
                    f"the columns have different lengths {lengths}; "
                    "every column needs one value per row"
                )
            self.n = next(iter(lengths.values()), 0)
            # a dict's rows: by position, or by the labels of its Series
            self.labels = series[0].index if series else None
        else:
            raise DataError(
                f"rows must be a pandas DataFrame or a dict of columns, got {type(rows).__name__}; "
                "wrap an array as pd.DataFrame(X, columns=[...])"
            )
        if self.n == 0:
            raise DataError("the rows are empty; representations need at least one row")

    def missing(self, columns: Sequence[str]) -> list:
        return [c for c in columns if c not in self._values]

    def infer_kind(self, columns: Sequence[str]) -> str:
        if len(columns) == 1 and _is_text(self._values[columns[0]]):
            return "text"
        return "numeric"

    def input_for(self, learner_name: str, columns: list, kind: str) -> Any:
        """The input of one learner; errors name the learner and the column."""
        who = f"representation {learner_name!r}"
        if kind == "text":
            return self._text(who, columns)
        if kind == "frame":
            return self._frame(who, columns)
        return self._numeric(who, columns)

    def _numeric(self, who, columns) -> np.ndarray:
        parts = []
        for name in columns:
            value = self._values[name]
            dtype = value.dtype
            # complex counts as numeric to pandas, but casting it to float drops the imaginary part
            if pd.api.types.is_complex_dtype(dtype) or not (
                pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
            ):
                hint = (
                    " — use a text learner (TfIdf, Word2Vec, ...) for it" if _is_text(value) else ""
                )
                raise DataError(
                    f"{who} needs numeric columns, but column {name!r} has dtype {dtype}{hint}"
                )
            if isinstance(value, pd.Series):
                array = value.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                array = np.asarray(value, dtype=np.float64)
            array = array[:, None] if array.ndim == 1 else array.reshape(len(array), -1)
            bad = ~np.isfinite(array).all(axis=1)
            if bad.any():
                raise MissingValueError(
                    f"{who}: column {name!r} has NaN or infinite values "
                    f"in {format_positions(np.flatnonzero(bad), labels=self.labels)}; "
                    "drop or impute those rows first (in the data of pearl.fit, "
                    "missing='drop' drops them; Representations.fit needs them complete)"
                )
            parts.append(array)
        return parts[0] if len(parts) == 1 else np.hstack(parts)

    def _text(self, who, columns) -> list[str]:
        if len(columns) != 1:
            raise BlockError(
                f"{who} is a text learner and reads exactly one column of strings, but would read "
                f"{columns}; give it one column, e.g. columns='text'"
            )
        name = columns[0]
        values = self._values[name]
        if getattr(values, "ndim", 1) != 1:
            raise DataError(f"{who} reads strings, but column {name!r} is 2-D")
        values = list(values)
        absent = [i for i, v in enumerate(values) if is_missing(v)]
        if absent:
            raise MissingValueError(
                f"{who}: text column {name!r} is missing in "
                f"{format_positions(absent, labels=self.labels)} (None, NaN or pd.NA); drop "
                "those rows (in the data of pearl.fit, missing='drop' drops them; "
                "Representations.fit needs them complete) or replace them with '' (an empty "
                "document)"
            )
        wrong = [i for i, v in enumerate(values) if not isinstance(v, str)]
        if wrong:
            raise DataError(
                f"{who} reads strings, but column {name!r} holds {type(values[wrong[0]]).__name__} "
                f"values in {format_positions(wrong, labels=self.labels)}"
            )
        return values

    def _frame(self, who, columns) -> pd.DataFrame:
        flat = {}
        for name in columns:
            value = self._values[name]
            if getattr(value, "ndim", 1) != 1:
                raise DataError(f"{who} receives a DataFrame, but column {name!r} is 2-D")
            flat[name] = np.asarray(value) if not isinstance(value, pd.Series) else value.to_numpy()
        return pd.DataFrame(flat)


def _as_column(name, value):
    if isinstance(value, pd.Series):
        return value.reset_index(drop=True)
    if isinstance(value, pd.DataFrame):
        value = value.to_numpy()
    array = np.asarray(value)
    if array.ndim == 0:
        raise DataError(f"column {name!r} is a single value; a column needs one value per row")
    return array


def _is_text(value) -> bool:
    dtype = value.dtype
    if (
        getattr(value, "ndim", 1) != 1
        or pd.api.types.is_numeric_dtype(dtype)
        or pd.api.types.is_bool_dtype(dtype)
    ):
        return False
    if isinstance(dtype, np.dtype) and dtype.kind in "US":
        return True
    return any(isinstance(v, str) for v in value)
