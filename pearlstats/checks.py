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
pearlstats.exceptions.OptionError: seed=-1; use a non-negative int (or None to draw one)
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np
from patsy import EvalEnvironment

from .exceptions import OptionError

__all__ = ["check_seed", "check_n_jobs", "check_int", "check_choice", "check_eval_env"]

_MAX_SEED = 2**63 - 1


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed numpy accepts: an int in [0, 2**63); None draws one from the OS."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if not _is_int(seed) or not 0 <= int(seed) <= _MAX_SEED:
        raise OptionError(f"{name}={seed!r}; use a non-negative int (or None to draw one)")
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
