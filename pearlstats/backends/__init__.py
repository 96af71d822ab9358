"""Where rows live: splitting them into chunks, mapping a function over the chunks, adding up.

Only :mod:`pearlstats.backends.chunks` (rows held in memory) exists so far; it
imports nothing above the ground floor, so the engines and stages can be
written against it and a dask backend can later supply the same interface.
"""
