"""Moved to :mod:`pearlstats.downstream.mlp` in 0.7.0 (the engines no longer import the
families); the old names here warn with ``FutureWarning`` until 0.9.0 (and keep fits pickled
by earlier versions loadable)."""

from __future__ import annotations

from ..deprecation import module_getattr

__getattr__ = module_getattr(__name__)
