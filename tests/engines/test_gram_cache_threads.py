"""The OLS refit Gram cache under concurrent use: no thread ever gets another design's matrix."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pearlstats.engines.ols import ols_fit


def test_concurrent_refits_on_two_designs_equal_the_serial_ones():
    rng = np.random.default_rng(0)
    designs = []
    for p in (6, 6):  # same shapes, so only the cached matrix tells them apart
        X = np.column_stack(
            [np.ones(200), rng.normal(size=(200, p - 1)) * rng.uniform(0.1, 10, p - 1)]
        )
        designs.append((X, X @ rng.normal(size=p) + rng.normal(size=200)))
    column_sets = [np.array([0, 1, 2]), np.array([0, 3, 4, 5]), np.arange(6)]
    serial = {(d, s, r): ols_fit(*designs[d], column_sets[s], r)
              for d in range(2) for s in range(3) for r in (0.0, 0.5)}

    def work(seed):
        order = np.random.default_rng(seed)
        mismatches = 0
        for _ in range(300):
            d, s, r = (
                int(order.integers(2)),
                int(order.integers(3)),
                (0.0, 0.5)[int(order.integers(2))],
            )
            mismatches += int(np.any(ols_fit(*designs[d], column_sets[s], r) != serial[d, s, r]))
        return mismatches

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert sum(pool.map(work, range(4))) == 0
