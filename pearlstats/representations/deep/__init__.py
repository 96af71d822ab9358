"""Deep representation learners, an optional extra: ``pip install "pearlstats[deep]"``.

Importing this package never imports torch; each learner imports it when it is
fitted or used, and a missing torch (or sentence model) raises
:class:`MissingDependencyError` naming what to install.

- :class:`Autoencoder`: bottleneck code of an autoencoder.
- :class:`VAE`: posterior mean of a variational autoencoder.
- :class:`SimCLR`: contrastive (NT-Xent) encoder trained on augmented views.
- :class:`SentenceEncoder`: mean-pooled transformer sentence embeddings, offline.

The first three take ``encoder="mlp"``, ``"cnn"`` or ``"resnet"`` and flattened
rows or 3-D/4-D image arrays; all follow the learner protocol: ``fit(X)`` returns
the learner, ``transform(X)`` a 2-D float64 array, and fitted learners pickle.

Examples
--------
>>> import numpy as np
>>> from pearlstats.representations.deep import Autoencoder
>>> X = np.random.default_rng(1).normal(size=(80, 5))
>>> Autoencoder(latent_dim=3, epochs=2, progress=False).fit_transform(X).shape
(80, 3)
"""

from __future__ import annotations

from ._torch import MissingDependencyError
from .autoencoder import Autoencoder
from .sentence import SentenceEncoder
from .simclr import SimCLR
from .vae import VAE

__all__ = ["VAE", "Autoencoder", "MissingDependencyError", "SentenceEncoder", "SimCLR"]
