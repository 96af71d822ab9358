"""Cached tables that their readers cannot edit.

A result's tables (weights, CV risks, baselines, ...) are computed once and
reused by prediction, evaluation and the summary. ``functools.cached_property``
would hand every reader the cached object itself, so a user who thresholds
"their" weights (``w = res.weights; w[w < 0.05] = 0``) would change what
``predict`` averages, without a word. :class:`cached_table` caches the same way
but gives each reader a copy (shallow under pandas 3's copy on write).

Examples
--------
>>> import pandas as pd
>>> class Fit:
...     @cached_table
...     def weights(self) -> pd.Series:
...         return pd.Series([0.25, 0.75], index=["a", "b"])
>>> fit = Fit()
>>> w = fit.weights
>>> w[w < 0.5] = 0.0
>>> fit.weights.tolist()
[0.25, 0.75]
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import pandas as pd

__all__ = ["cached_table"]

# pandas 3 always copies on write: a reader's shallow copy then shares the cached table's
# memory until either is written, and writing it copies. Before pandas 3 a shallow copy
# would write through to the cache, so each reader gets a deep copy there (for the
# multinomial out-of-fold table that is n x J x C numbers, the largest array of a fit).
_COPY_ON_WRITE = int(pd.__version__.split(".", 1)[0]) >= 3


class cached_table(cached_property):  # noqa: N801  (a decorator, like cached_property)
    """``cached_property`` for pandas tables: computed once, each reader gets a copy.

    Values other than Series and DataFrames (None, say) are returned as they are. A subclass
    of ``cached_property`` so that documentation tools (``inspect``, Sphinx's autodoc) show
    the table as the read-only property it is.
    """

    def __init__(self, function: Callable[[Any], Any]):
        super().__init__(function)
        self.function = function
        self.attribute = f"_cached_{function.__name__}"

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = f"_cached_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        try:
            value = instance.__dict__[self.attribute]
        except KeyError:
            value = instance.__dict__[self.attribute] = self.function(instance)
        if isinstance(value, (pd.Series, pd.DataFrame)):
            return value.copy(deep=not _COPY_ON_WRITE)
        return value
