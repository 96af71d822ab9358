"""Data for examples and for reproducing the paper.

The paper's simulation (:func:`simulate_paper`, Section 4.1) and loaders of
real data bundled with installed packages (scikit-learn, gensim); nothing is
downloaded.

Examples
--------
>>> from pearlstats import datasets
>>> datasets.simulate_paper(50, N=200, seed=0).labeled.columns.tolist()
['x1', 'x2', 'y']
"""

from __future__ import annotations

from .real import (
    DIGITS_IMAGE_SHAPE,
    MissingDependencyError,
    load_diabetes,
    load_digits,
    load_lee_background,
    load_polarity,
)
from .simulation import COEFFICIENT_NAMES, SimulatedData, paper_features, simulate_paper

__all__ = [
    "simulate_paper",
    "SimulatedData",
    "paper_features",
    "COEFFICIENT_NAMES",
    "load_digits",
    "DIGITS_IMAGE_SHAPE",
    "load_polarity",
    "load_lee_background",
    "load_diabetes",
    "MissingDependencyError",
]
