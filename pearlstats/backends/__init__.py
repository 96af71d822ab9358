"""Where rows live: splitting them into chunks, mapping a function over the chunks, adding up.

Rows held in memory: :mod:`pearlstats.backends.chunks` (row chunks, maps and sums over
them) and :mod:`pearlstats.backends.columns` (the design held as its blocks side by side,
read in place). Rows in dask partitions: :mod:`pearlstats.backends.partitions` (one task
per partition, sums added up on the workers, folds hashed from row positions) and
:mod:`pearlstats.backends.lazy` (row-sized values as lazy dask arrays and collections,
reductions computed together). :mod:`pearlstats.backends.threads` keeps BLAS at one
thread inside a pass. Nothing here imports the design, engines, stages or results: the
functions mapped over the rows come from above (:mod:`pearlstats.engines`,
:mod:`pearlstats.distributed`).
"""
