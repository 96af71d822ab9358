"""pearlstats: PEARL model averaging over learned representations.

Fit several representations of the same inputs (PCA, kernel PCA, TF-IDF,
Word2Vec, ...), write a formula over named blocks, and let cross-validated
convex weights combine the downstream models built on subsets of the blocks.

The subpackages read top-down (the layers contract in ``pyproject.toml``, checked by
``tests/test_architecture.py``): ``experiments`` (replication runner) over
``datasets`` (the simulation, the loaders, the examples' fit) over
``fitting`` (:func:`fit`) over ``results`` (:class:`PearlResults`) and, beside it,
``distributed`` (dask data) over ``plotting`` over ``honest_se`` over the
stages (``nested``, ``weight_stage``, ``stages``; ``inference`` beside them)
over ``downstream`` over ``families`` over ``engines`` and ``weights`` (losses,
solvers, the paper's baselines) over ``design`` and ``representations`` over
``backends`` (where rows live and how they are read) over the ground floor
(``checks``, ``ledger``, ``exceptions``).

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> rng = np.random.default_rng(0)
>>> a, b = rng.normal(size=(80, 2)), rng.normal(size=(80, 2))
>>> data = {"y": a[:, 0] + rng.normal(scale=0.5, size=80), "a": a, "b": b}
>>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
>>> res.weights.round(2).idxmax()
'a'
"""

from __future__ import annotations

from . import exceptions, representations
from ._version import __version__ as __version__
from .citation import cite
from .design.candidates import Candidate
from .downstream.mlp import MLP
from .exceptions import *  # noqa: F403  (the public exception and warning classes)
from .fitting import fit
from .honest_se import NestedSE, NestedSEEstimate
from .progress import get_option, set_option
from .representations import *  # noqa: F403  (the learners, exported below)
from .representations.deep import VAE, Autoencoder, SentenceEncoder, SimCLR
from .results.core import PearlResults
from .results.evaluation import ComparisonTable, HonestRisk, compare_table
from .weights.losses import Loss, get_loss
from .weights.solvers import WeightSolution, solve_weights

_REPRESENTATION_HELPERS = ("load_word_vectors", "default_tokenizer", "cased_tokenizer")


def __getattr__(name: str):
    # pearl.plotting, pearl.datasets and pearl.sklearn on first use: matplotlib, the loaders
    # of the paper's data and scikit-learn are imported only by those who use them
    if name in ("plotting", "datasets", "sklearn"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'pearlstats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

__all__ = [
    "fit",
    "cite",
    "PearlResults",
    "Candidate",
    "compare_table",
    "ComparisonTable",
    "HonestRisk",
    "NestedSE",
    "NestedSEEstimate",
    "get_option",
    "set_option",
    "get_loss",
    "Loss",
    "solve_weights",
    "WeightSolution",
    "MLP",
    "datasets",
    "exceptions",
    "plotting",
    "sklearn",
    # the learners and their container; the tokenizers and the vector loader stay in the subpackage
    *(n for n in representations.__all__ if n not in _REPRESENTATION_HELPERS),
    "Autoencoder",
    "VAE",
    "SimCLR",
    "SentenceEncoder",
    *(n for n in exceptions.__all__ if n != "format_positions"),
]
