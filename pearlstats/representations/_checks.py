"""Input checks and small helpers shared by the learners.

Learners can be used on their own (``PCA(2).fit(X)``), so each one checks its
input here instead of relying on the :class:`Representations` container.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ..exceptions import DataError, MissingValueError, NotFittedError, OptionError, format_positions

T = TypeVar("T")

# A text learner's tokenizer: one document -> its tokens.
Tokenizer = Callable[[str], list[str]]


def float_2d(value: Any, error: type[Exception], not_numbers: str, not_2d: str) -> np.ndarray:
    """``value`` (array-like or DataFrame) as a float64 2-D array; 1-D is one column.

    Raises ``error`` with ``not_numbers`` (plus the conversion error) or
    ``not_2d`` (plus the number of dimensions) as the message.
    """
    if isinstance(value, pd.DataFrame):
        value = _frame_values(value)
    try:
        # numpy's own errors (a ragged list) are said in the learner's words
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise error(f"{not_numbers} ({err})") from None
    if np.iscomplexobj(array):
        # numpy would cast with only a ComplexWarning, silently dropping the imaginary parts
        raise error(f"{not_numbers} (complex values; pass the real and imaginary parts "
                    "as separate columns)")
    try:
        array = np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise error(f"{not_numbers} ({err})") from None
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise error(f"{not_2d}; got {array.ndim} dimensions")
    return array


def _frame_values(frame: pd.DataFrame) -> np.ndarray:
    """A DataFrame's values; pd.NA of the nullable numeric dtypes (Float64, Int64) as NaN.

    ``to_numpy()`` gives such columns as objects holding pd.NA, which float() refuses:
    the missing value would be reported as a non-number instead of as missing.
    """
    real = all(pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
               for dtype in frame.dtypes)
    return frame.to_numpy(dtype=np.float64, na_value=np.nan) if real else frame.to_numpy()


def as_float_matrix(X: Any, who: str) -> np.ndarray:
    """``X`` as a finite 2-D float64 array; 1-D input is one column."""
    values = float_2d(
        X,
        DataError,
        f"{who} needs numeric input, but could not convert it to numbers",
        f"{who} needs a 2-D array (rows x features)",
    )
    if values.shape[0] == 0:
        raise DataError(f"{who} got no rows")
    if values.shape[1] == 0:
        raise DataError(f"{who} got no columns (shape {values.shape}); it needs at least one "
                        "input column")
    bad = ~np.isfinite(values).all(axis=1)
    if bad.any():
        raise MissingValueError(
            f"{who} got NaN or infinite values in {format_positions(np.flatnonzero(bad))}; "
            "drop or impute them first"
        )
    return values


def column_names(X: Any) -> list | None:
    """The column names of a DataFrame input (recorded at fit), or None for other inputs."""
    return list(X.columns) if isinstance(X, pd.DataFrame) else None


def align_columns(X: Any, learner: object, who: str) -> Any:
    """A DataFrame given to ``learner.transform`` with its columns in the order seen at fit.

    Without this a DataFrame whose columns were reordered would be read by
    position, and every score would be computed from the wrong inputs. Arrays
    (and any input when the fit was on an array) are read by position as before.

    Raises
    ------
    DataError
        The DataFrame lacks a fitted column or has one not seen at fit.
    """
    # None also for a learner pickled before the names were recorded: read by position
    fitted = getattr(learner, "feature_names_in_", None)
    if fitted is None or not isinstance(X, pd.DataFrame) or list(X.columns) == fitted:
        return X
    missing = [c for c in fitted if c not in X.columns]
    unseen = [c for c in X.columns if c not in fitted]
    if missing or unseen:
        raise DataError(
            f"{who} was fitted on a DataFrame with columns {fitted}, but got columns "
            f"{list(X.columns)} (missing {missing}, not seen at fit {unseen}); give the same "
            "columns, in any order"
        )
    return X[fitted]


def check_width(X: np.ndarray, expected: int, who: str) -> None:
    if X.shape[1] != expected:
        raise DataError(f"{who} was fitted on {expected} input columns but got {X.shape[1]}")


def check_fitted(learner: object, attribute: str) -> None:
    if getattr(learner, attribute, None) is None:
        raise NotFittedError(
            f"{type(learner).__name__} is not fitted yet; call fit() before transform()"
        )


def check_int(value: Any, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise OptionError(f"{name}={value!r} must be an integer >= {minimum}")
    return int(value)


def check_positive(value: Any, name: str, allow_none: bool = False) -> None:
    """A finite number > 0 (infinity would make kernels and learning rates non-finite)."""
    if value is None and allow_none:
        return
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0
            or not np.isfinite(value)):
        alternative = " or None" if allow_none else ""
        raise OptionError(f"{name}={value!r} must be a finite positive number{alternative}")


def check_bool(value: Any, name: str) -> bool:
    """``True`` or ``False`` only: ``bool("no")`` is True, so strings and numbers are refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise OptionError(f"{name}={value!r} must be True or False")
    return bool(value)


def check_real(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise OptionError(f"{name}={value!r} must be a finite number")


def check_choice(value: Any, name: str, choices: Iterable[str]) -> None:
    if value not in choices:
        raise OptionError(f"{name}={value!r} is not one of {', '.join(map(repr, choices))}")


def check_seed(seed: Any) -> None:
    """None or an integer in [0, 2**32), the range numpy, gensim and torch all accept."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32:
        raise OptionError(f"seed={seed!r} must be None or an integer in [0, 2**32)")


def is_missing(value: Any) -> bool:
    """None, NaN or ``pd.NA`` / ``pd.NaT``: a missing entry of a text column."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and np.isnan(value)


def transactional(fit: Callable[..., T]) -> Callable[..., T]:
    """Make a learner's ``fit`` all-or-nothing: if it raises, the learner's state is restored.

    The attributes are snapshotted (a shallow copy of ``vars(self)``) before
    ``fit`` runs. Fits only rebind attributes to newly computed values and never
    modify the previous values in place, so restoring the snapshot gives back the
    previous fit exactly: a learner that was fitted keeps transforming as before,
    one that was not stays unfitted. Interrupts (``KeyboardInterrupt``) restore too.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        saved = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(saved)
            raise

    return wrapper


class Standardizer:
    """Column means and standard deviations learned on the training rows.

    Constant columns get scale 1, so they become 0 instead of NaN.
    """

    def __init__(self, X: np.ndarray):
        self.mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale == 0] = 1.0
        self.scale = scale

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean) / self.scale


def largest_entry_signs(vectors: np.ndarray) -> np.ndarray:
    """Sign (+1 or -1) of the largest-magnitude entry of every column."""
    rows = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[rows, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return signs


def flip_signs(vectors: np.ndarray) -> np.ndarray:
    """Make the largest-magnitude entry of every column positive (a deterministic sign).

    This is the convention of scikit-learn's ``svd_flip`` on eigenvectors, so
    components agree with scikit-learn's in sign when eigenvalues are distinct.
    """
    return vectors * largest_entry_signs(vectors)
