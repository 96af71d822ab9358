"""Parallel cross-validation: same numbers whatever the backend or job count.

Bit-identical on these data; in general another n_jobs may move the numbers at rounding level
(a probe measured up to 1e-15 gaussian and 1e-14 multinomial: the workers' BLAS may group
sums differently), which fit's n_jobs docstring states.
"""

from __future__ import annotations

import numpy as np
import pytest
from joblib import parallel_config

import pearlstats as pearl
from conftest import PAPER_FORMULA


def _fit(paper_data, **kwargs):
    return pearl.fit(
        PAPER_FORMULA, paper_data["frame"], blocks=paper_data["blocks"], seed=7, **kwargs
    )


def test_two_process_workers_give_identical_predictions_and_weights(paper_data):
    serial, parallel = _fit(paper_data), _fit(paper_data, n_jobs=2)
    np.testing.assert_array_equal(
        serial.cv_predictions.to_numpy(), parallel.cv_predictions.to_numpy()
    )
    np.testing.assert_array_equal(serial.weights.to_numpy(), parallel.weights.to_numpy())


def test_threading_backend_gives_identical_binomial_fits(paper_data):
    frame = paper_data["frame"].assign(
        up=(paper_data["frame"]["y"] > paper_data["frame"]["y"].median()).astype(int)
    )
    formula = PAPER_FORMULA.replace("y ~", "up ~")
    serial = pearl.fit(formula, frame, blocks=paper_data["blocks"], family="binomial", seed=2)
    with parallel_config(backend="threading"):
        threaded = pearl.fit(
            formula, frame, blocks=paper_data["blocks"], family="binomial", seed=2, n_jobs=2
        )
    np.testing.assert_array_equal(
        serial.cv_predictions.to_numpy(), threaded.cv_predictions.to_numpy()
    )
    np.testing.assert_array_equal(serial.weights.to_numpy(), threaded.weights.to_numpy())


def test_dask_local_cluster_backend(paper_data):
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is in the 'dask' and 'test' extras"
    )
    serial = _fit(paper_data)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster):
            with parallel_config(backend="dask"):
                on_dask = _fit(paper_data, n_jobs=2)
    np.testing.assert_array_equal(
        serial.cv_predictions.to_numpy(), on_dask.cv_predictions.to_numpy()
    )
    np.testing.assert_array_equal(serial.weights.to_numpy(), on_dask.weights.to_numpy())
