"""Candidate representation sets built from the foundation blocks.

A candidate is a set of design-matrix columns: the covariate columns (always)
plus the columns of some blocks (or, for ``"columns"``, of single block
columns). Generators follow the paper's Example 1:

* ``"all"``     every non-empty subset of the M blocks (2^M - 1),
* ``"single"``  one candidate per block,
* ``"nested"``  cumulative sets in formula order (a, a+b, a+b+c, ...),
* ``"columns"`` every non-empty subset of the fusion matrix's columns (2^p - 1),
* a list of tuples (or ``"a+b"`` strings) of block names chosen by the analyst.

Examples
--------
>>> from pearlstats.design.candidates import candidate_block_sets
>>> candidate_block_sets("all", ["a", "b"])
[('a',), ('b',), ('a', 'b')]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..exceptions import CandidateError, OptionError

__all__ = ["Candidate", "candidate_block_sets", "build_candidates", "DEFAULT_MAX_CANDIDATES"]

DEFAULT_MAX_CANDIDATES = 2**15 - 1
_GENERATORS = ("all", "single", "nested", "columns")


@dataclass(frozen=True)
class Candidate:
    """One candidate model's representation set.

    Attributes
    ----------
    label : str
        Block names (or, for column subsets, column names) joined by ``+``.
    blocks : tuple of str
        Blocks the candidate uses, in formula order.
    columns : ndarray of int
        Positions in the full design matrix (covariates first).
    """

    label: str
    blocks: tuple[str, ...]
    columns: np.ndarray

    @property
    def n_params(self) -> int:
        """Number of design columns (coefficients per equation) the candidate uses.

        Examples
        --------
        >>> import numpy as np
        >>> from pearlstats import Candidate
        >>> Candidate("a+b", ("a", "b"), np.array([0, 1, 2, 3])).n_params
        4
        """
        return len(self.columns)


def _subset_count(m: int) -> int:
    return 2**m - 1


def _check_max_candidates(max_candidates) -> None:
    if (
        isinstance(max_candidates, bool)
        or not isinstance(max_candidates, (int, np.integer))
        or max_candidates < 1
    ):
        raise OptionError(f"max_candidates={max_candidates!r}; use a positive int")


def _guard(count: int, max_candidates: int, what: str) -> None:
    if count > max_candidates:
        raise CandidateError(
            f"{what} gives {count} candidates, more than max_candidates={max_candidates}. "
            "Use candidates='single' or 'nested', an explicit list, or raise max_candidates."
        )


def candidate_block_sets(
    spec: str | Sequence[str | Sequence[str]],
    block_names: Sequence[str],
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
) -> list[tuple[str, ...]]:
    """List the block sets a candidate specification produces.

    Parameters
    ----------
    spec : {"all", "single", "nested"} or sequence
        A generator name or explicit sets (tuples of names, or ``"a+b"`` strings).
    block_names : sequence of str
        Blocks in formula order.
    max_candidates : int
        Refuse to produce more sets than this.

    Returns
    -------
    list of tuple of str
        Sets ordered by size, then formula order; each set in formula order.
    """
    _check_max_candidates(max_candidates)
    order = {name: position for position, name in enumerate(block_names)}
    m = len(block_names)
    if isinstance(spec, str):
        if spec == "all":
            _guard(_subset_count(m), max_candidates, f"candidates='all' with {m} blocks")
            return [
                combo
                for size in range(1, m + 1)
                for combo in itertools.combinations(block_names, size)
            ]
        if spec in ("single", "nested"):
            _guard(m, max_candidates, f"candidates={spec!r} with {m} blocks")
            if spec == "single":
                return [(name,) for name in block_names]
            return [tuple(block_names[: k + 1]) for k in range(m)]
        if spec == "columns":
            raise CandidateError(
                "candidates='columns' works on design columns; use build_candidates"
            )
        raise CandidateError(
            f"unknown candidates={spec!r}; use one of "
            f"{list(_GENERATORS)} or a list of tuples of block names"
        )
    if not isinstance(spec, Sequence) or len(spec) == 0:
        raise CandidateError(
            f"candidates must be one of {list(_GENERATORS)} or a "
            f"non-empty list of tuples of block names, got {spec!r}"
        )
    sets: list[tuple[str, ...]] = []
    for item in spec:
        if not isinstance(item, (str, Sequence)):
            raise CandidateError(
                f"candidate {item!r} is not a set of block names; "
                "give a tuple such as ('a', 'b') or a string 'a+b'"
            )
        names = (
            tuple(part.strip() for part in item.split("+"))
            if isinstance(item, str)
            else tuple(item)
        )
        if not names:
            raise CandidateError(
                "an explicit candidate is empty; every candidate needs at least one block"
            )
        unknown = [name for name in names if not isinstance(name, str) or name not in order]
        if unknown:
            raise CandidateError(
                f"candidate {item!r} names block(s) {unknown} that "
                f"are not in the formula (blocks: {list(block_names)})"
            )
        if len(set(names)) != len(names):
            raise CandidateError(f"candidate {item!r} names a block twice")
        ordered = tuple(sorted(names, key=order.__getitem__))
        if ordered in sets:
            raise CandidateError(
                f"candidate {'+'.join(ordered)!r} is listed twice; list each set once"
            )
        sets.append(ordered)
    _guard(len(sets), max_candidates, "the explicit candidate list")
    return sets


def build_candidates(
    spec: str | Sequence[str | Sequence[str]],
    block_slices: Mapping[str, slice],
    column_names: Sequence[str],
    n_covariates: int,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
) -> list[Candidate]:
    """Turn a candidate specification into design-column sets.

    Parameters
    ----------
    spec : str or sequence
        See :func:`candidate_block_sets`; ``"columns"`` is also accepted.
    block_slices : mapping
        Block name -> slice of its columns in the design, in formula order.
    column_names : sequence of str
        Names of all design columns.
    n_covariates : int
        The first ``n_covariates`` columns are in every candidate.

    Returns
    -------
    list of Candidate
    """
    _check_max_candidates(max_candidates)
    covariates = np.arange(n_covariates)
    if isinstance(spec, str) and spec == "columns":
        block_columns = np.arange(n_covariates, len(column_names))
        owner = {
            column: name
            for name, slc in block_slices.items()
            for column in range(slc.start, slc.stop)
        }
        p = len(block_columns)
        _guard(_subset_count(p), max_candidates, f"candidates='columns' with {p} block columns")
        candidates = []
        for size in range(1, p + 1):
            for combo in itertools.combinations(block_columns, size):
                blocks = tuple(dict.fromkeys(owner[c] for c in combo))
                label = "+".join(column_names[c] for c in combo)
                candidates.append(
                    Candidate(label, blocks, np.concatenate([covariates, combo]).astype(int))
                )
        return candidates
    sets = candidate_block_sets(spec, list(block_slices), max_candidates)
    candidates = []
    for names in sets:
        parts = [covariates] + [
            np.arange(block_slices[n].start, block_slices[n].stop) for n in names
        ]
        candidates.append(Candidate("+".join(names), names, np.concatenate(parts).astype(int)))
    return candidates
