"""PEARL on dask arrays and DataFrames, computed where the data lives.

``pearl.fit`` sends dask data here. Per-fold Gram matrices, Newton gradients
and Hessians, and the out-of-fold J x J statistics are sums over rows, so over
partitions: each pass runs one task per partition and reduces small arrays;
the p x p and J x J problems are solved on the client with the in-memory
engines' solvers. See :mod:`pearlstats.distributed.fit` for the stages and
:mod:`pearlstats.distributed.supported` for what is refused (with the reason).

A second composition of the pipeline, to be dissolved into ``backends/`` and
the shared stages (issue 27): it sits beside :mod:`pearlstats.results` in the
layers, and neither imports the other. :func:`pearlstats.fit` passes the
in-memory results :data:`~pearlstats.distributed.predict.DASK_ROWS` to predict
and score dask rows.
"""

from .data import hash_folds, uses_dask
from .results import DaskPearlResults

__all__ = ["DaskPearlResults", "hash_folds", "uses_dask"]
