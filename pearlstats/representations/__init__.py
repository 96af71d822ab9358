"""Representation learners (the FRL stage of PEARL) and the container that fits them together.

- :class:`Representations`: named learners fitted on unlabeled rows; maps any rows to blocks.
- Numeric: :class:`PCA`, :class:`KernelPCA` (rbf, poly, sigmoid, cosine, linear;
  exact, randomized or Nyström), :class:`Raw` (the inputs themselves).
- Text (gensim): :class:`BagOfWords` and :class:`TfIdf` (sparse CSR blocks),
  :class:`LSI`, :class:`Word2Vec`, :class:`Doc2Vec`, :class:`PretrainedVectors`.
- :class:`FunctionLearner`: any fixed function of the rows.

Any object with ``fit(X)`` and ``transform(X)`` (a scikit-learn transformer,
for instance) can be used as a learner too. Torch learners (autoencoders,
SimCLR, sentence encoders) are in :mod:`pearlstats.representations.deep`.

Examples
--------
>>> import numpy as np, pandas as pd
>>> from pearlstats.representations import KernelPCA, PCA, Representations
>>> x = pd.DataFrame(np.random.default_rng(0).normal(size=(300, 2)), columns=["x1", "x2"])
>>> reps = Representations({"pca": PCA(2), "kpca_cosine": KernelPCA(2, kernel="cosine")}).fit(x)
>>> {name: block.shape for name, block in reps.transform(x.head(3)).items()}
{'pca': (3, 2), 'kpca_cosine': (3, 2)}
"""

from __future__ import annotations

from .base import FunctionLearner, Representations
from .kernel_pca import KernelPCA
from .pca import PCA, Raw
from .pretrained import PretrainedVectors, load_word_vectors
from .text import LSI, BagOfWords, TfIdf, cased_tokenizer, default_tokenizer
from .word_vectors import Doc2Vec, Word2Vec

__all__ = [
    "Representations",
    "FunctionLearner",
    "PCA",
    "KernelPCA",
    "Raw",
    "BagOfWords",
    "TfIdf",
    "LSI",
    "Word2Vec",
    "Doc2Vec",
    "PretrainedVectors",
    "load_word_vectors",
    "default_tokenizer",
    "cased_tokenizer",
]
