"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import time

import numpy as np


def median_time(func, repeats: int) -> tuple[float, object]:
    """Median wall time of ``repeats`` calls of ``func`` and the last call's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result
