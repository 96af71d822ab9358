"""Fixtures of the dask tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def synchronous_dask():
    """Dask's synchronous scheduler: the partitions' tasks run in order in this process (no
    thread pool on a machine the tests share; an error's traceback is the task's)."""
    dask = pytest.importorskip("dask", reason="dask is not installed")
    with dask.config.set(scheduler="synchronous"):
        yield
