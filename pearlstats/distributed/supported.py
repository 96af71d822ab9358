"""Moved to :mod:`pearlstats.in_memory_only` in 0.4.0; this alias warns until 0.6.0.

``from pearlstats.distributed.supported import refuse_in_memory_only`` (0.3 code) still
works, with a ``FutureWarning`` (:mod:`pearlstats.deprecation`).
"""

from __future__ import annotations

from ..deprecation import module_getattr

__all__: list[str] = []

__getattr__ = module_getattr(__name__)
