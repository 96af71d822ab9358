"""Modules imported on first use, so that ``import pearlstats`` stays light.

``import pearlstats`` used to cost seconds of CPU, most of it in modules a fit never touches:
``statsmodels.api`` (the candidates' statsmodels models, asked for by ``res.candidate_models``
and the tests), ``scipy.stats`` (quantiles of intervals), the datasets, matplotlib and torch.
A module-level ``stats = lazy_module("scipy.stats")`` reads like the import it replaces and
imports the module at the first attribute read.

Examples
--------
>>> special = lazy_module("scipy.special")
>>> float(special.expit(0.0))
0.5
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "lazy_module"]


class LazyModule:
    """A stand-in for the module *name*, imported at the first attribute read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        # only called for attributes the stand-in lacks: the module's own
        if self.module is None:
            self.module = importlib.import_module(self.name)
        return getattr(self.module, attribute)

    def __repr__(self) -> str:
        return f"<module {self.name!r}, imported on first use>"


def lazy_module(name: str) -> Any:
    """A stand-in for ``import name`` that imports it at the first attribute read."""
    return LazyModule(name)
