"""PEARL on dask arrays and DataFrames, computed where the data lives.

``pearl.fit`` on dask data returns the same :class:`~pearlstats.PearlResults`
as on rows in memory (:func:`~pearlstats.distributed.state.dask_fit_state` builds
its stage values). Per-fold moments, Newton gradients and Hessians, and the
out-of-fold J x J statistics are sums over rows, so over partitions: each pass
runs one task per partition and reduces small arrays; the p x p and J x J
problems are solved on the client with the in-memory engines' solvers. The
least-squares moments are the in-memory engine's own
(:class:`~pearlstats.engines.moments.FoldMoments`, computed per partition and
added by the same exact update that adds chunks in memory), and the row terms of
the likelihoods are :mod:`pearlstats.engines.likelihood`'s. The
results' row-sized values (design, response, folds, out-of-fold predictions) are
lazy dask arrays, one chunk per partition, so the results' tables are reductions
computed on the partitions. What stays in-memory-only is refused in one place,
:mod:`pearlstats.in_memory_only`.

Modules: :mod:`.data` (dask data aligned with its blocks; each partition's design,
response and folds), :mod:`.fit` (the passes of a fit), :mod:`.ols`, :mod:`.newton`,
:mod:`.driver`, :mod:`.fold_sums` and :mod:`.multinomial` (coefficients), :mod:`.oof`
and :mod:`.weights` (out-of-fold statistics and the weights), :mod:`.shrinkage`
(``weight_shrinkage``), :mod:`.state` (the results' stage values), :mod:`.inference`
(the candidates' refits: covariances from one pass of
:mod:`pearlstats.inference.refit_sums`), :mod:`.honest` (the nested re-runs behind
``res.honest`` and CV+), :mod:`.predict` (new dask rows). The plumbing of partitions
(one task each, sums added on the workers, hashed folds) is the
backend :mod:`pearlstats.backends.partitions`.
"""

from .data import hash_folds, uses_dask

__all__ = ["hash_folds", "uses_dask"]

