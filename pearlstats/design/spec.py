"""The design stage's value: a spec that rebuilds the design matrix for any rows.

:class:`DesignSpec` is to a PEARL fit what formulaic's ``ModelSpec`` is to a
model matrix: it holds everything needed to turn rows into the design's
columns — patsy's ``DesignInfo`` for the covariate terms (through
:class:`~pearlstats.design.formula.CovariateSpec`) and, per block, its width
and (for DataFrame blocks) its column labels. The fit's rows and any new rows
go through the same :meth:`DesignSpec.design_matrix`, so prediction cannot
drift from fitting.

Examples
--------
>>> import numpy as np, pandas as pd
>>> from patsy import EvalEnvironment
>>> from pearlstats.design.formula import parse_formula
>>> frame = pd.DataFrame({"y": [1.0, 2.0, 3.0], "x": [0.5, 1.5, 2.5]})
>>> blocks = {"a": np.eye(3)[:, :2]}
>>> design = build_design(parse_formula("y ~ x + block(a)"), frame, blocks, EvalEnvironment([{}]))
>>> design.spec.column_names
['Intercept', 'x', 'a[0]', 'a[1]']
>>> design.spec.design_matrix(pd.DataFrame({"x": [9.0]}), {"a": np.array([[1.0, 2.0]])}).tolist()
[[1.0, 9.0, 1.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from patsy import EvalEnvironment

from ..backends.columns import ColumnStack
from ..exceptions import BlockError
from .data import Block, as_block, check_block_values
from .formula import CovariateSpec, FormulaSpec, build_covariates
from .sparse import stack_design

__all__ = ["BlockSpec", "DesignSpec", "Design", "build_design"]


@dataclass(frozen=True)
class BlockSpec:
    """One block as the fit saw it.

    Attributes
    ----------
    name : str
    column_names : tuple of str
        Design column names (``a[0]``, ``a[1]`` or ``a[label]``).
    labels : tuple or None
        Column labels of a DataFrame block (matched by name for new rows);
        None for arrays (matched by position).
    """

    name: str
    column_names: tuple[str, ...]
    labels: tuple | None

    @property
    def width(self) -> int:
        return len(self.column_names)

    def values_for(self, block: Block) -> np.ndarray:
        """The block's values for new rows, columns in the fit's order.

        Raises
        ------
        BlockError
            Wrong width, or (DataFrame blocks) missing or unexpected columns.
        """
        if self.labels is not None and block.labels is not None:
            position = {label: j for j, label in enumerate(block.labels)}
            missing = [label for label in self.labels if label not in position]
            extra = [label for label in block.labels if label not in set(self.labels)]
            if missing or extra:
                raise BlockError(
                    f"block {self.name!r} in the new rows has columns {list(block.labels)[:10]}, "
                    f"but the fit used {list(self.labels)[:10]} (missing: {missing[:10]}, "
                    f"unexpected: {extra[:10]}); give the same columns (their order may differ)"
                )
            return block.values[:, [position[label] for label in self.labels]]
        if block.width != self.width:
            raise BlockError(
                f"block {self.name!r} has {block.width} columns "
                f"in the new rows but {self.width} at fit time"
            )
        return block.values


@dataclass(frozen=True)
class DesignSpec:
    """Everything that rebuilds the fit's design matrix for any rows.

    Columns are the covariate terms' (intercept first, as patsy orders them)
    followed by each block's, in formula order.

    Attributes
    ----------
    formula : FormulaSpec
    covariates : CovariateSpec
    blocks : tuple of BlockSpec
    """

    formula: FormulaSpec
    covariates: CovariateSpec
    blocks: tuple[BlockSpec, ...]

    @property
    def block_names(self) -> list[str]:
        return [block.name for block in self.blocks]

    @property
    def n_covariates(self) -> int:
        return len(self.covariates.names)

    @property
    def column_names(self) -> list[str]:
        return self.covariates.names + [
            name for block in self.blocks for name in block.column_names
        ]

    @property
    def block_slices(self) -> dict[str, slice]:
        """Where each block's columns sit in the design matrix."""
        slices, start = {}, self.n_covariates
        for block in self.blocks:
            slices[block.name] = slice(start, start + block.width)
            start += block.width
        return slices

    @property
    def block_dims(self) -> dict[str, int]:
        return {block.name: block.width for block in self.blocks}

    def design_matrix(self, frame: pd.DataFrame, blocks: Mapping) -> np.ndarray:
        """The design matrix of *frame*'s rows with their blocks.

        Parameters
        ----------
        frame : DataFrame
            The rows' ordinary columns (every covariate row variable).
        blocks : mapping of str -> Block or 2-D array
            Each block of the formula for the same rows.

        Raises
        ------
        DataError, BlockError, MissingValueError
            A covariate column or block is missing or malformed (named).
        """
        values = []
        for spec in self.blocks:
            if spec.name not in blocks:
                raise BlockError(f"block {spec.name!r} is missing for the new rows")
            block = blocks[spec.name]
            block = block if isinstance(block, Block) else as_block(spec.name, block)
            values.append(spec.values_for(block))
        # Rows of ordinary columns, when there are any, say how many rows there are.
        n_rows = len(frame) if len(frame.columns) else values[0].shape[0]
        labels = frame.index if len(frame.columns) else None  # the rows' labels, if any
        for spec, block_values in zip(self.blocks, values):
            check_block_values(spec.name, block_values, n_rows, labels)
        rows = frame if len(frame.columns) else pd.DataFrame(index=range(n_rows))
        return stack_design(self.covariates.matrix(rows), values)


@dataclass(frozen=True)
class Design:
    """The design stage's output: the fit's design matrix and its spec.

    Attributes
    ----------
    X : ColumnStack, ndarray or sparse matrix (n, p)
        Dense blocks are read in place (:class:`~pearlstats.backends.columns.ColumnStack`:
        indexing gives arrays); a wide sparse block makes it CSR.
    spec : DesignSpec
    """

    X: ColumnStack | np.ndarray
    spec: DesignSpec

    @property
    def column_names(self) -> list[str]:
        return self.spec.column_names

    @property
    def n_covariates(self) -> int:
        return self.spec.n_covariates

    @property
    def block_slices(self) -> dict[str, slice]:
        return self.spec.block_slices

    @property
    def block_dims(self) -> dict[str, int]:
        return self.spec.block_dims


def build_design(formula: FormulaSpec, frame: pd.DataFrame, blocks: Mapping,
                 eval_env: EvalEnvironment) -> Design:
    """Build the fit's design matrix and the spec that rebuilds it.

    Parameters
    ----------
    formula : FormulaSpec
    frame : DataFrame
        The fit's ordinary columns (already cleaned of missing rows).
    blocks : mapping of str -> Block or 2-D array
        Every block of the formula, one row per row of *frame*.
    eval_env : patsy.EvalEnvironment
    """
    resolved = [
        blocks[name] if isinstance(blocks[name], Block) else as_block(name, blocks[name])
        for name in formula.block_names
    ]
    covariates, covariate_matrix = build_covariates(formula, frame, eval_env)
    specs = tuple(BlockSpec(b.name, tuple(b.column_names), b.labels) for b in resolved)
    values = [b.values for b in resolved]
    if any(sp.issparse(v) for v in values):
        X = stack_design(covariate_matrix, values)
    else:  # the blocks read in place (a stacked copy would double the fit's memory)
        X = ColumnStack([np.asarray(covariate_matrix, dtype=float), *values])
    return Design(X, DesignSpec(formula, covariates, specs))
