"""Cached tables that their readers cannot edit.

A result's tables (weights, CV risks, baselines, ...) are computed once and
reused by prediction, evaluation and the summary. ``functools.cached_property``
would hand every reader the cached object itself, so a user who thresholds
"their" weights (``w = res.weights; w[w < 0.05] = 0``) would change what
``predict`` averages, without a word. :class:`cached_table` caches the same way
but gives each reader a copy.

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
        return value.copy() if isinstance(value, (pd.Series, pd.DataFrame)) else value
