"""The replication-grid runner."""

from __future__ import annotations

import numpy as np
import pytest
from joblib import parallel_config

from pearlstats.exceptions import OptionError
from pearlstats.experiments import grid, run_grid


def draw_task(setting, seed):
    """Module-level so process workers can import it."""
    rng = np.random.default_rng(seed)
    return [{"draw": float(rng.normal(setting["mu"])), "k": k} for k in range(2)]


def test_grid_is_the_cartesian_product():
    assert grid(a=[1, 2], b=["x", "y"]) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]


def test_results_reproduce_whatever_the_job_count_or_backend():
    settings = grid(mu=[0.0, 10.0])
    serial = run_grid(draw_task, settings, 4, seed=3, progress=False)
    parallel = run_grid(draw_task, settings, 4, seed=3, n_jobs=2, progress=False)
    with parallel_config(backend="threading"):
        threaded = run_grid(draw_task, settings, 4, seed=3, n_jobs=2, progress=False)
    for other in (parallel, threaded):
        np.testing.assert_array_equal(serial["draw"], other["draw"])
    assert list(serial.columns) == ["mu", "repetition", "draw", "k", "seconds"]
    assert serial[["mu", "repetition"]].drop_duplicates().shape[0] == 8


def test_each_run_gets_the_seedsequence_child_of_its_position():
    table = run_grid(draw_task, grid(mu=[0.0, 1.0]), 3, seed=9, progress=False)
    children = np.random.SeedSequence(9).spawn(6)
    expected = [np.random.default_rng(children[i * 3 + r]).normal(mu) for i, mu in enumerate([0.0, 1.0]) for r in range(3)]
    np.testing.assert_allclose(table.loc[table.k == 0, "draw"].to_numpy(), expected)
    assert table[table.k == 0].groupby("mu")["draw"].nunique().min() == 3  # repetitions differ


def test_bad_arguments():
    with pytest.raises(OptionError, match="repetitions=0"):
        run_grid(draw_task, grid(mu=[0.0]), 0)
    with pytest.raises(OptionError, match="settings is empty"):
        run_grid(draw_task, [], 2)
    with pytest.raises(OptionError, match="must return a dict"):
        run_grid(lambda s, seed: 3.0, grid(mu=[0.0]), 1, progress=False)
