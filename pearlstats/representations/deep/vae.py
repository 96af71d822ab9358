"""Variational autoencoder representation learner (needs the ``deep`` extra: torch)."""

from __future__ import annotations

from typing import Any

from pearlstats.exceptions import OptionError

from ._base import ReconstructingLearner

__all__ = ["VAE"]


class VAE(ReconstructingLearner):
    """Variational autoencoder; the block is the posterior mean of each row's latent code.

    The encoder outputs the mean and log-variance of a diagonal Gaussian posterior
    q(z | x); training maximises the evidence lower bound with a unit-variance
    Gaussian decoder and a standard normal prior, the KL term weighted by ``beta``
    (``beta = 1`` is the plain VAE, larger values the beta-VAE). ``transform`` returns
    the posterior mean, so it involves no sampling and gives the same block every time.

    Parameters
    ----------
    latent_dim : int, default 8
        Width of the representation block.
    beta : float, default 1.0
        Weight of the KL divergence in the loss; must be >= 0.
    **options
        ``encoder``, ``hidden_dim``, ``epochs``, ``batch_size``, ``lr``, ``scaling``,
        ``image_shape``, ``device``, ``seed``, ``progress``, ``columns``: as in
        :class:`~pearlstats.Autoencoder`.

    Attributes
    ----------
    input_shape_, n_features_in_, scaling_, input_offset_, input_scale_, loss_history_, device_
        As in :class:`~pearlstats.Autoencoder`; ``loss_history_``
        holds the negative ELBO per row.
    min_rows : int
        The fewest training rows :meth:`fit` accepts.

    Examples
    --------
    >>> import numpy as np
    >>> from pearlstats.representations.deep import VAE
    >>> X = np.random.default_rng(0).normal(size=(120, 6))
    >>> vae = VAE(latent_dim=2, epochs=3, progress=False).fit(X)
    >>> Z = vae.transform(X)
    >>> Z.shape, bool((Z == vae.transform(X)).all())
    ((120, 2), True)
    """

    def __init__(self, latent_dim: int = 8, *, beta: float = 1.0, **options: Any):
        self.beta = beta
        super().__init__(latent_dim, **options)  # checks every option

    def _check_options(self):
        super()._check_options()
        if (
            isinstance(self.beta, bool)
            or not isinstance(self.beta, (int, float))
            or not self.beta >= 0
        ):
            raise OptionError(f"beta={self.beta!r} must be a number >= 0")

    def _build_network(self, input_shape):
        from .encoders import VAENet

        return VAENet(self.encoder, input_shape, self.latent_dim, self.hidden_dim, float(self.beta))

    def _loss_function(self, network):
        return network.loss
