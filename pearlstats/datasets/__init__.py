"""Data for examples and for reproducing the paper.

The small data set of the documentation's examples (:func:`example_data`) and their fit of it
(:func:`example_fit`), the paper's
simulation (:func:`simulate_paper`, Section 4.1) and loaders of
real data bundled with installed packages (scikit-learn, gensim, Debian's
``dataset-fashion-mnist``); nothing is downloaded.

Examples
--------
>>> from pearlstats import datasets
>>> datasets.simulate_paper(50, N=200, seed=0).labeled.columns.tolist()
['x1', 'x2', 'y']
"""

from __future__ import annotations

from .example import example_data, example_fit
from .real import (
    DIGITS_IMAGE_SHAPE,
    FASHION_MNIST_CLASSES,
    FashionMNIST,
    MissingDependencyError,
    fashion_mnist,
    load_diabetes,
    load_digits,
    load_lee_background,
    load_polarity,
    read_idx,
)
from .simulation import COEFFICIENT_NAMES, SimulatedData, paper_features, simulate_paper

__all__ = [
    "COEFFICIENT_NAMES",
    "DIGITS_IMAGE_SHAPE",
    "FASHION_MNIST_CLASSES",
    "FashionMNIST",
    "MissingDependencyError",
    "SimulatedData",
    "example_data",
    "example_fit",
    "fashion_mnist",
    "load_diabetes",
    "load_digits",
    "load_lee_background",
    "load_polarity",
    "paper_features",
    "read_idx",
    "simulate_paper",
]
