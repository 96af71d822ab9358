"""SimCLR contrastive representation learner (needs the ``deep`` extra: torch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pearlstats.exceptions import OptionError

from ._base import DeepLearner
from ._torch import import_torch

__all__ = ["SimCLR"]


class SimCLR(DeepLearner):
    """Contrastive learner (SimCLR, Chen et al. 2020): two random views of a row should embed alike.

    Each step draws two augmented views of every row in the batch, passes them
    through the encoder and a projection head, and minimises the NT-Xent loss,
    which pulls the two views of a row together and pushes the other ``2n - 2``
    views of the batch away. The block is the encoder output (before the
    projection head), as in the paper.

    Parameters
    ----------
    latent_dim : int, default 8
        Width of the representation block.
    augmentations : "auto", sequence or dict, default "auto"
        How views are made, applied in order to the scaled inputs. ``"auto"`` is
        ``("crop", "noise")`` for images (a random shift of up to h/8 pixels, then
        Gaussian noise with sd 0.1) and ``("mask", "noise")`` for flat features.
        Names: ``"crop"`` (pad + random crop; option ``padding``),
        ``"resized_crop"`` (options ``scale``, ``ratio``), ``"flip"`` (left-right,
        option ``p``; wrong for digits and text, hence not a default), ``"noise"``
        (option ``std``), ``"mask"`` (zero each value with probability ``p``).
        A dict sets options, e.g. ``{"crop": {"padding": 2}, "noise": {"std": 0.05}}``;
        a sequence may also hold callables ``f(batch, generator) -> batch`` on torch
        tensors (they must be picklable for the learner to pickle).
    temperature : float, default 0.5
        Softmax temperature of NT-Xent.
    projection_dim : int, default 32
        Output width of the projection head.
    batch_size : int, default 128
        Rows per step; each row's negatives are the other rows of its batch. At least 2.
    **options
        ``encoder``, ``hidden_dim``, ``epochs``, ``lr``, ``scaling``, ``image_shape``,
        ``device``, ``seed``, ``progress``, ``columns``: as in
        :class:`~pearlstats.Autoencoder`.

    Attributes
    ----------
    min_rows : int
        The fewest training rows :meth:`fit` accepts (2: a batch needs a pair).

    Examples
    --------
    >>> import numpy as np
    >>> from pearlstats.representations.deep import SimCLR
    >>> images = np.random.default_rng(0).uniform(size=(64, 8, 8))
    >>> model = SimCLR(latent_dim=4, encoder="cnn", epochs=2, progress=False).fit(images)
    >>> model.transform(images.reshape(64, -1)).shape
    (64, 4)
    >>> model.augment(images[:3]).shape
    (3, 8, 8)
    """

    min_rows = 2

    def __init__(
        self,
        latent_dim: int = 8,
        *,
        augmentations: str | Sequence[str | tuple[str, Mapping[str, Any]]] = "auto",
        temperature: float = 0.5,
        projection_dim: int = 32,
        batch_size: int = 128,
        **options: Any,
    ):
        self.augmentations = augmentations
        self.temperature = temperature
        self.projection_dim = projection_dim
        super().__init__(latent_dim, batch_size=batch_size, **options)  # checks every option

    def augment(self, X: Any, seed: int | None = None) -> np.ndarray:
        """Draw one augmented view of each row, in the input's shape and units.

        Parameters
        ----------
        X : array-like
            Rows shaped like the training inputs (flattened, 3-D or 4-D).
        seed : int, optional
            Seed of the random view; defaults to the learner's ``seed``.

        Returns
        -------
        numpy.ndarray
            Same shape as ``X``.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> images = np.random.default_rng(0).uniform(size=(16, 8, 8))
        >>> model = pearl.SimCLR(latent_dim=2, encoder="cnn", epochs=1, progress=False).fit(images)
        >>> model.augment(images[:3], seed=0).shape
        (3, 8, 8)
        """
        self._check_fitted()
        torch = import_torch(type(self).__name__)
        from .augment import apply_pipeline, build_pipeline

        array = self._as_array(X)
        data = self._tensor(torch, array)
        pipeline = build_pipeline(self.augmentations, images=len(self.input_shape_) == 3)
        generator = torch.Generator().manual_seed(self.seed_ if seed is None else int(seed))
        with torch.no_grad():
            views = apply_pipeline(pipeline, data, generator).double().numpy()
        flat = views.reshape(len(array), -1) * self.input_scale_ + self.input_offset_
        return flat.reshape(array.shape)

    def _check_options(self):
        super()._check_options()
        if (
            isinstance(self.temperature, bool)
            or not isinstance(self.temperature, (int, float))
            or not self.temperature > 0
        ):
            raise OptionError(
                f"temperature={self.temperature!r} must be a positive number, e.g. 0.5"
            )
        dim = self.projection_dim
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise OptionError(f"projection_dim={self.projection_dim!r} must be an integer >= 1")

    def _build_network(self, input_shape):
        from .encoders import ContrastiveNet

        return ContrastiveNet(
            self.encoder, input_shape, self.latent_dim, self.hidden_dim, self.projection_dim
        )

    def _loss_function(self, network):
        from .augment import apply_pipeline, build_pipeline

        pipeline = build_pipeline(self.augmentations, images=len(self.input_shape_) == 3)
        temperature = float(self.temperature)

        def loss(batch, generator):
            first = apply_pipeline(pipeline, batch, generator)
            second = apply_pipeline(pipeline, batch, generator)
            return network.loss(first, second, temperature)

        return loss
