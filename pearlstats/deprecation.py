"""Deprecated names: the old name keeps working, with a ``FutureWarning``, for one minor version.

The policy (docs: "Deprecation policy"): a public name is removed or moved only after one
minor version in which using it warns with ``FutureWarning`` (statsmodels' and pandas'
practice) and says what replaces it. :data:`_DEPRECATED` lists every such alias, by its
old dotted path; the module that held the name resolves it with :func:`module_getattr`.

The replacement is imported by its dotted path when the old name is used, not when the
module that keeps the alias is imported: an alias is not a dependency of that module, and
its layer stays where it is (``pearlstats.engines.mlp.MLPFamily`` leads to the
downstream layer, which the engines may not import).

The 0.3 names that 0.4.0 and 0.4.1 had removed warned until 0.6.0 and were removed in 0.8.0.

Examples
--------
>>> import warnings
>>> import pearlstats.engines.mlp as old
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     family = old.MLPFamily
>>> caught[0].category.__name__, family.__module__
('FutureWarning', 'pearlstats.downstream.mlp')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._warnings import warn

__all__ = ["Deprecated", "module_getattr", "resolve"]


@dataclass(frozen=True)
class Deprecated:
    """An old name: where its object lives now, since when it warns, and when it goes."""

    target: str  # "package.module:attribute" (a module when there is no ":attribute")
    since: str  # the version that removed or moved the name
    removed_in: str  # the first version without the alias
    note: str = ""  # what else a user of the old name needs to know


# Old dotted name -> its replacement. The downstream families moved out of the engines in 0.7.0
# (the engines, families and weights now read top-down).
_DEPRECATED: dict[str, Deprecated] = {
    f"pearlstats.engines.{module}.{name}": Deprecated(
        f"pearlstats.downstream.{module}:{name}", "0.7.0", "0.9.0")
    for module, names in (
        ("mlp", ("MLP", "FittedMLP", "MLPFamily", "MLPResults", "train_network")),
        ("estimator", ("EstimatorFamily", "EstimatorResults", "FittedEstimator",
                       "bind_estimator", "is_estimator")))
    for name in names
}


def resolve(target: str) -> Any:
    """The object at ``"package.module:attribute"`` (or the module itself)."""
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def _message(old: str, entry: Deprecated) -> str:
    new = entry.target.replace(":", ".")
    note = f" ({entry.note})" if entry.note else ""
    return (f"{old} was removed in pearlstats {entry.since} and is an alias of {new} until "
            f"{entry.removed_in}; use {new}{note}")


def module_getattr(module_name: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves the module's deprecated names from the table.

    Each use of an old name warns (``FutureWarning``, at the user's line) and returns
    the replacement; other missing names raise ``AttributeError`` as usual.
    """

    def __getattr__(name: str) -> Any:
        old = f"{module_name}.{name}"
        entry = _DEPRECATED.get(old)
        if entry is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        warn(_message(old, entry), FutureWarning)
        return resolve(entry.target)

    return __getattr__
