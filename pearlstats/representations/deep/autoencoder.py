"""Autoencoder representation learner (needs the ``deep`` extra: torch)."""

from __future__ import annotations

from ._base import ReconstructingLearner

__all__ = ["Autoencoder"]


class Autoencoder(ReconstructingLearner):
    """Autoencoder whose bottleneck code is the representation block.

    An encoder (MLP, small CNN or small ResNet) maps each row to ``latent_dim``
    numbers and an MLP decoder maps them back; both are trained with Adam on the
    mean squared reconstruction error of the scaled inputs.

    Parameters
    ----------
    latent_dim : int, default 8
        Width of the representation block.
    encoder : {"mlp", "cnn", "resnet"}, default "mlp"
        Encoder backbone. ``"cnn"`` (two convolutions) and ``"resnet"`` (two residual
        blocks with GroupNorm) need images: 3-D ``(n, h, w)`` or 4-D ``(n, c, h, w)``
        (channels first) inputs, or flattened rows with ``image_shape``.
    hidden_dim : int, default 64
        Width of the networks: hidden units of the MLPs, channels of the last
        convolutional stage (earlier stages have half).
    epochs : int, default 20
        Passes over the rows. ``0`` leaves the randomly initialised encoder.
    batch_size : int, default 64
        Rows per gradient step; a last batch of one row is merged into the one before.
    lr : float, default 1e-3
        Adam learning rate.
    scaling : {"auto", "standardize", "unit", "none"}, default "auto"
        How inputs are scaled before training, with constants learned by ``fit``:
        ``"standardize"`` gives every column mean 0 and standard deviation 1;
        ``"unit"`` maps all values with one affine map onto [0, 1] (keeps images
        intact); ``"auto"`` is ``"unit"`` for images and ``"standardize"`` otherwise.
    image_shape : tuple of int, optional
        ``(h, w)`` or ``(c, h, w)`` of flattened image rows (row-major, as
        ``images.reshape(n, -1)`` produces). Needed by the CNN and ResNet encoders
        when the inputs are 2-D, for example when a ``Representations`` container
        passes selected pixel columns.
    device : str, default "auto"
        ``"auto"`` uses a CUDA GPU when present, else the CPU; or ``"cpu"``, ``"cuda"``,
        ``"cuda:N"``, ``"mps"``.
    seed : int, optional
        Seeds initialisation, shuffling and noise; an integer in [0, 2**32). None
        means "from the container": a ``Representations(..., seed=s)`` sets it from
        ``s`` and the block name, and a learner used on its own trains with seed 0
        (``seed_``). An explicit seed is never overridden. On the CPU two fits with the
        same seed give identical blocks: training runs on one thread with torch's
        deterministic algorithms, and the caller's torch random state is left alone.
    progress : bool, default True
        Show a tqdm progress bar over epochs.
    columns : list of str, optional
        Input columns this learner reads when used in a ``Representations`` container.

    Attributes
    ----------
    input_shape_ : tuple of int
        Shape of one row as the network sees it: ``(c, h, w)`` or ``(n_features,)``.
    n_features_in_ : int
        Number of input values per row.
    feature_names_in_ : list or None
        Columns of the DataFrame fitted on (None for an array); a DataFrame given to
        ``transform`` is read by these names.
    scaling_ : str
        The scaling used (``"auto"`` resolved).
    input_offset_, input_scale_ : numpy.ndarray
        Inputs are scaled as ``(x - input_offset_) / input_scale_``.
    loss_history_ : list of float
        Mean training loss of each epoch.
    device_ : str
        Device the network runs on.
    min_rows : int
        The fewest training rows :meth:`fit` accepts.

    Notes
    -----
    Pickling stores the weights as numpy arrays and the options; the network is
    rebuilt on first use after unpickling, on the device ``device`` resolves to there.

    Examples
    --------
    >>> import numpy as np
    >>> from pearlstats.representations.deep import Autoencoder
    >>> X = np.random.default_rng(0).normal(size=(120, 6))
    >>> ae = Autoencoder(latent_dim=2, epochs=3, progress=False).fit(X)
    >>> ae.transform(X[:5]).shape
    (5, 2)
    >>> ae.inverse_transform(ae.transform(X[:5])).shape
    (5, 6)
    """

    def _build_network(self, input_shape):
        from .encoders import AutoencoderNet

        return AutoencoderNet(self.encoder, input_shape, self.latent_dim, self.hidden_dim)

    def _loss_function(self, network):
        return network.loss
