"""Rows in dask partitions: one task per partition, and sums added up on the workers.

The dask counterpart of :mod:`pearlstats.backends.chunks`. A :class:`DaskRows` is a
list of partitions, each a delayed pandas frame (the ordinary columns) and delayed
numpy chunks (the blocks), aligned row for row, with every partition's first row
position; :meth:`DaskRows.tasks` maps a function over the partitions where they live
and :func:`tree_sum` adds what comes back pairwise on the workers, so only the sums
reach the client. Folds of rows that cannot be counted up front are hashed from row
positions (:func:`hash_folds`). Nothing here knows a design, an engine or a result:
the function mapped does (:mod:`pearlstats.distributed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import MissingValueError
from .threads import one_blas_thread

__all__ = ["DaskRows", "hash_folds", "tree_sum"]


# ---- folds ---------------------------------------------------------------------------------------
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def hash_folds(positions: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Fold labels 0..K-1 from a hash (splitmix64) of the seed and each row's global position.

    Parameters
    ----------
    positions : array_like of int
        Global row positions (0-based).
    n_folds : int
    seed : int

    Returns
    -------
    ndarray of int

    Examples
    --------
    >>> import numpy as np
    >>> hash_folds(np.arange(8), 3, seed=1).tolist() == hash_folds(np.arange(8), 3, seed=1).tolist()
    True
    >>> sorted(set(hash_folds(np.arange(1000), 5, seed=0).tolist()))
    [0, 1, 2, 3, 4]
    """
    with np.errstate(over="ignore"):  # splitmix64 wraps around on purpose
        x = np.asarray(positions, dtype=np.uint64) + _GOLDEN * np.uint64(seed % 2**63 + 1)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x % np.uint64(n_folds)).astype(np.intp)


# ---- the rows ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DaskRows:
    """Partitions of the rows, aligned across the data and the blocks.

    Attributes
    ----------
    frames : list of Delayed
        One pandas DataFrame (ordinary columns) per partition.
    arrays : dict of str -> list of Delayed
        Block name -> one numpy chunk per partition (blocks given as dask arrays).
    groups : dict of str -> list
        Block name -> columns of the data that form it (a DataFrame's column groups).
    representations : Representations or None
        Fitted learners applied to each partition's frame.
    lengths : tuple of int
        Rows of each partition.
    divisions : tuple or None
        The dask DataFrame's divisions (to rebuild a Series with the same partitions).
    """

    frames: list
    arrays: dict
    groups: dict
    representations: object
    lengths: tuple
    divisions: tuple | None = None

    @property
    def n(self) -> int:
        return int(sum(self.lengths))

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    def row_index(self) -> tuple[list, tuple, tuple] | None:
        """Each partition's index (delayed), the divisions and the partitions' lengths, for a
        dask DataFrame's rows.

        None for a dict of dask arrays, whose rows have no labels but their positions.
        """
        if self.divisions is None:
            return None
        from dask import delayed

        indexes = [delayed(_index_of, pure=True)(frame) for frame in self.frames]
        return indexes, self.divisions, self.lengths

    def tasks(self, function: Callable[..., Any], *args: Any, keep_empty: bool = False) -> list:
        """One delayed ``function(frame, blocks, offset, *args)`` per partition.

        Parameters
        ----------
        function : callable
            Called on each partition's frame, blocks and first row position.
        *args
            Passed on to *function*.
        keep_empty : bool, default False
            Also run on partitions without rows. Sums skip them (a filtered
            dask DataFrame often has empty partitions, and reductions such as
            column minima have no value on zero rows); prediction keeps them
            so its output has the input's partitions.
        """
        from dask import delayed

        run = delayed(_run_partition, pure=True)
        return [
            run(
                function,
                self.frames[i],
                {name: parts[i] for name, parts in self.arrays.items()},
                self.groups,
                self.representations,
                int(self.offsets[i]),
                args,
            )
            for i in range(len(self.lengths))
            if keep_empty or self.lengths[i] > 0
        ]


def _index_of(frame: pd.DataFrame) -> pd.Index:
    return frame.index


def _run_partition(function, frame, arrays, groups, representations, offset, args):
    # one BLAS thread per task: the worker's threads are the parallelism (design notes, pitfall 8)
    with one_blas_thread():
        return _partition_call(function, frame, arrays, groups, representations, offset, args)


def _partition_call(function, frame, arrays, groups, representations, offset, args):
    try:
        blocks = dict(arrays)
        for name, columns in groups.items():
            blocks[name] = frame[list(columns)].to_numpy(dtype=float)
        if representations is not None:
            blocks.update(representations.transform(frame))
        return function(frame, blocks, offset, *args)
    except MissingValueError as err:
        # the checks count rows within the partition; the user counts them in the whole data
        raise MissingValueError(
            f"{_shift_positions(str(err), offset)} (with dask data, drop those rows with dask, "
            "e.g. ddf.dropna(); missing='drop' is for in-memory data)"
        ) from err


_POSITIONS = re.compile(r"\b(rows?) (\d+(?:, \d+)*)")


def _shift_positions(message: str, offset: int) -> str:
    """*message* with the row positions of :func:`~pearlstats.exceptions.format_positions` moved
    by *offset*.

    Examples
    --------
    >>> _shift_positions("block 'a' has NaN at rows 0, 4 and 2 more; impute", 400)
    "block 'a' has NaN at rows 400, 404 and 2 more; impute"
    """
    def shift(match):
        positions = ", ".join(str(int(p) + offset) for p in match.group(2).split(", "))
        return f"{match.group(1)} {positions}"

    return _POSITIONS.sub(shift, message)


def _add(a, b):
    if a is None:  # a quantity not asked for in this pass
        return None
    if isinstance(a, dict):
        out = dict(a)
        for key, value in b.items():
            out[key] = _add(out[key], value) if key in out else value
        return out
    if isinstance(a, tuple):  # (min, max) pairs combine by min / max
        return (np.minimum(a[0], b[0]), np.maximum(a[1], b[1]))
    return a + b


def tree_sum(tasks: Any) -> dict:
    """Add delayed partition results pairwise on the workers; only the sum reaches the client."""
    from dask import compute, delayed

    add = delayed(_add, pure=True)
    while len(tasks) > 1:
        tasks = [
            add(tasks[i], tasks[i + 1]) if i + 1 < len(tasks) else tasks[i]
            for i in range(0, len(tasks), 2)
        ]
    return compute(tasks[0])[0]
