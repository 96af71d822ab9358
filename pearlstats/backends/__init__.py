"""Where rows live: splitting them into chunks, mapping a function over the chunks, adding up.

Rows held in memory: :mod:`pearlstats.backends.chunks` (row chunks, maps and sums over
them) and :mod:`pearlstats.backends.columns` (the design held as its blocks side by side,
read in place). Both import nothing above the ground floor, so the engines and stages
can be written against them and a dask backend can later supply the same interface.
"""
