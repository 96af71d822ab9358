"""What a fit found and how it is shown: results, strategies, diagnostics, evaluation, summary."""

from __future__ import annotations

from .core import PearlResults

__all__ = ["PearlResults"]
