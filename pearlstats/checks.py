"""Argument checks shared by every public entry point.

Each returns the cleaned value or raises :class:`~pearlstats.exceptions.OptionError`
naming the argument, the value given and what would be right, so no numpy,
pandas, patsy, scipy or quadprog exception reaches the user for a bad option.

Examples
--------
>>> check_seed(3), check_int("n_resamples", 50, minimum=2)
(3, 50)
>>> check_seed(-1)
Traceback (most recent call last):
...
pearlstats.exceptions.OptionError: seed=-1; use an int in [0, 2**63) (or None to draw one)
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from patsy import EvalEnvironment

from .exceptions import DataError, OptionError

__all__ = ["MAGNITUDE_RANGE", "magnitude_range", "check_seed", "check_n_jobs", "check_int",
           "check_choice", "check_eval_env", "check_magnitude", "align_by_label",
           "align_series_columns"]

# A fit forms powers of its numbers and divides by them: squares of covariates (Gram entries,
# coefficient variances), fourth powers of a gaussian response (the SE of a squared-error
# risk is an SD of squared residuals). A power x^p is usable when n x^p stays finite for n
# up to 1e8 rows (x^p <= 1.8e300) and x^p keeps half float64's digits: above 3.3e-316, where
# the subnormal spacing 4.9e-324 is sqrt(eps) of it. Outside, SEs underflow to 0 (a response
# at 1e-155: every risk SE 0; a covariate at 1e-160: SEs 4 % off), overflow to inf (a
# response at 1e140) or the refit's Gram is inf (a covariate at 1e160: a bare LinAlgError).
# The weights and the engines are scale-free, but results in the user's units need these
# powers: refused, naming the range, rather than silently wrong.
_SMALLEST_POWER, _LARGEST_POWER = 3.3e-316, 1.8e300


def magnitude_range(power: int) -> tuple[float, float]:
    """The decades ``(low, high)`` of magnitudes whose *power*-th powers float64 holds (above).

    Examples
    --------
    >>> magnitude_range(2), magnitude_range(4)
    ((1e-157, 1e+150), (1e-78, 1e+75))
    """
    low = 10.0 ** int(np.ceil(np.log10(_SMALLEST_POWER) / power))
    high = 10.0 ** int(np.floor(np.log10(_LARGEST_POWER) / power))
    return low, high


MAGNITUDE_RANGE = magnitude_range(2)  # covariates; a gaussian response: magnitude_range(4)

_MAX_SEED = 2**63 - 1


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed numpy accepts: an int in [0, 2**63); None draws one from the OS."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if not _is_int(seed) or not 0 <= int(seed) <= _MAX_SEED:
        raise OptionError(f"{name}={seed!r}; use an int in [0, 2**63) (or None to draw one)")
    return int(seed)


def check_n_jobs(n_jobs: Any) -> int | None:
    """None or 1 (serial), a positive int, or a negative int counting back from all cores (-1)."""
    if n_jobs is None:
        return None
    if not _is_int(n_jobs) or int(n_jobs) == 0:
        raise OptionError(
            f"n_jobs={n_jobs!r}; use None or 1 (serial), a positive int, or -1 for all cores"
        )
    return int(n_jobs)


def check_int(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An int (any integral type, not bool) within [minimum, maximum]."""
    ok = (
        _is_int(value)
        and (minimum is None or value >= minimum)
        and (maximum is None or value <= maximum)
    )
    if not ok:
        bounds = " and ".join(
            part
            for part in (
                f">= {minimum}" if minimum is not None else "",
                f"<= {maximum}" if maximum is not None else "",
            )
            if part
        )
        raise OptionError(f"{name}={value!r}; use an int{' ' + bounds if bounds else ''}")
    return int(value)


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """One of *choices*: strings, or a mapping choice -> what it does (said in the error)."""
    if not isinstance(value, str) or value not in choices:
        if isinstance(choices, dict):
            options = [f"{choice!r} ({meaning})" for choice, meaning in choices.items()]
        else:
            options = [repr(choice) for choice in choices]
        listed = options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]
        raise OptionError(f"{name}={value!r}; use {listed}")
    return value


def check_eval_env(eval_env: int | EvalEnvironment, depth: int = 1) -> EvalEnvironment:
    """A patsy EvalEnvironment, or how many frames above the caller's caller to capture."""
    if isinstance(eval_env, EvalEnvironment):
        return eval_env
    if _is_int(eval_env) and eval_env >= 0:
        try:
            return EvalEnvironment.capture(int(eval_env), reference=depth + 1)
        except ValueError as err:  # patsy: "call-stack is not that deep!"
            raise OptionError(
                f"eval_env={eval_env!r} looks further up than the call stack goes ({err}); use "
                "0 for the caller's own names, or a patsy EvalEnvironment"
            ) from err
    raise OptionError(
        f"eval_env={eval_env!r}; use a non-negative int "
        "(frames above the caller) or a patsy EvalEnvironment"
    )


def _few(labels: pd.Index) -> list:
    return list(labels[:5])


def align_by_label(name: str, value: Any, index: pd.Index | None,
                   error: type[Exception] = DataError) -> Any:
    """The one rule by which every argument with one value per data row meets the rows.

    Blocks, observation weights, offsets, exposure and fold labels, at ``fit``, ``predict``
    and ``evaluate``, all come through here: a pandas object (Series or DataFrame) is matched
    to the data's rows by index label, as statsmodels aligns pandas objects; anything else
    (a NumPy array, a list) by position, and is returned unchanged, as is everything when the
    data has no index of its own (*index* None: a dict of arrays).

    Parameters
    ----------
    name : str
        What the value is, as the user named it (``"weights="``, ``"block 'a'"``).
    value : any
    index : pandas Index or None
        The data's row labels.
    error : exception class, default DataError
        What to raise (``BlockError`` for blocks, ``FoldError`` for fold labels).

    Returns
    -------
    The value with its rows in the order of *index*.

    Raises
    ------
    error
        The value's labels are not the data's: labels missing or extra, or a label
        repeated (in the value or in the data), each named.

    Examples
    --------
    >>> index = pd.Index(["a", "b", "c"])
    >>> align_by_label("weights=", pd.Series([3.0, 1.0, 2.0], index=["c", "a", "b"]),
    ...                index).tolist()
    [1.0, 2.0, 3.0]
    >>> align_by_label("weights=", pd.Series([1.0, 2.0], index=["a", "a"]), index)
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.DataError: weights= is a Series whose row labels differ from the data's \
(pandas objects are matched to the data's rows by index label): data rows ['b', 'c'] have no \
label in it, and it repeats labels ['a']; give it the data's index (or pass a NumPy array to \
match rows by position)
    """
    if index is None or not isinstance(value, (pd.Series, pd.DataFrame)):
        return value
    if value.index.equals(index):  # the same labels in the same order (repeats pair by position)
        return value
    problems = []
    absent = index.difference(value.index, sort=False)
    if len(absent):
        problems.append(f"data rows {_few(absent)} have no label in it")
    foreign = value.index.difference(index, sort=False)
    if len(foreign):
        problems.append(f"its labels {_few(foreign)} are not data rows")
    repeated = value.index[value.index.duplicated()].unique()
    if len(repeated):
        problems.append(f"it repeats labels {_few(repeated)}")
    repeated = index[index.duplicated()].unique()
    if len(repeated):
        problems.append(f"the data's index repeats labels {_few(repeated)}, so rows cannot be "
                        "told apart by label")
    if problems:
        raise error(
            f"{name} is a {type(value).__name__} whose row labels differ from the data's "
            f"(pandas objects are matched to the data's rows by index label): "
            f"{', and '.join(problems)}; give it the data's index (or pass a NumPy array to "
            "match rows by position)"
        )
    return value.loc[index]


def align_series_columns(columns: Mapping[str, Any], error: type[Exception] = DataError) -> dict:
    """A dict's columns with every pandas Series in the row order of the first Series.

    pandas would align a dict of Series on the sorted union of their labels, so rows
    given by position beside them (an array block, a list) would meet other rows; here
    the Series' labels say which row is which, in the first Series' order, and labels
    that do not match are refused by name (:func:`align_by_label`). Other values are
    left as they are (by position).

    Examples
    --------
    >>> y = pd.Series([1.0, 2.0, 3.0], index=["r1", "r2", "r10"])
    >>> x = pd.Series([30.0, 10.0, 20.0], index=["r10", "r1", "r2"])
    >>> align_series_columns({"y": y, "x": x})["x"].tolist()
    [10.0, 20.0, 30.0]
    """
    series = [(name, value) for name, value in columns.items() if isinstance(value, pd.Series)]
    if len(series) < 2:
        return dict(columns)
    first, labels = series[0][0], series[0][1].index
    aligned = dict(columns)
    for name, value in series[1:]:
        aligned[name] = align_by_label(f"column {name!r} (rows labelled as column {first!r})",
                                       value, labels, error)
    return aligned


def check_magnitude(what: str, values: np.ndarray, power: int = 2) -> None:
    """Refuse values whose largest magnitude lies outside :func:`magnitude_range` (*power*).

    All zeros pass (a constant is judged elsewhere); NaN and inf are ignored (judged
    elsewhere, by row).

    Raises
    ------
    DataError
        Naming *what*, its largest magnitude and the range.

    Examples
    --------
    >>> check_magnitude("covariate 'x'", np.array([1.0, 2e100]))
    >>> check_magnitude("covariate 'x'", np.array([1.0, 2e160]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.DataError: covariate 'x' has magnitude 2e+160, outside [1e-157, 1e+150]...
    """
    values = np.asarray(values, dtype=float)
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max(initial=0.0))
    low, high = magnitude_range(power)
    if top == 0.0 or low <= top <= high:
        return
    raise DataError(
        f"{what} has magnitude {top:.3g}, outside [{low:g}, {high:g}], the range in which "
        f"float64 holds the powers (x^{power}) the fit forms from it (outside it standard "
        "errors and risk ratios lose their digits, underflow to 0 or overflow); change its "
        "units (e.g. "
        f"multiply it by {2.0 ** -round(np.log2(top)):.3g}) and the results' units with them"
    )
