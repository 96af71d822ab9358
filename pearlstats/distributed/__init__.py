"""PEARL on dask arrays and DataFrames, computed where the data lives.

``pearl.fit`` sends dask data here. Per-fold Gram matrices, Newton gradients
and Hessians, and the out-of-fold J x J statistics are sums over rows, so over
partitions: each pass runs one task per partition and reduces small arrays;
the p x p and J x J problems are solved on the client with the in-memory
engines' solvers. See :mod:`pearlstats.distributed.fit` for the stages.
"""

from .data import hash_folds, uses_dask
from .results import DaskPearlResults

__all__ = ["DaskPearlResults", "hash_folds", "uses_dask"]
