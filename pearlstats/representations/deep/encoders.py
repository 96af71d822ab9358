"""Encoder backbones and the three trainable networks (autoencoder, VAE, SimCLR).

This module imports torch at the top, so only the learners import it, and only
inside ``fit``/``transform`` after checking that torch is installed.

Every network takes inputs of shape ``(batch, *input_shape)``: ``input_shape`` is
``(c, h, w)`` for images and ``(d,)`` for flat features. The MLP backbone flattens
whatever it gets; the CNN and ResNet backbones need images. Decoders are MLPs
that emit the flattened input, which works for every backbone and image size.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def build_encoder(
    kind: str, input_shape: tuple[int, ...], out_dim: int, hidden_dim: int
) -> nn.Module:
    """Backbone mapping ``(batch, *input_shape)`` to ``(batch, out_dim)``.

    ``hidden_dim`` is the width: hidden units of the MLP, channels of the last
    convolutional stage of the CNN and ResNet (earlier stages have half).
    """
    if kind == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(math.prod(input_shape), hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, out_dim),
        )
    channels = input_shape[0]
    narrow = max(hidden_dim // 2, 4)
    if kind == "cnn":
        # Pooling to a fixed 4x4 grid keeps where strokes are (global pooling would not) for any
        # image size.
        return nn.Sequential(
            nn.Conv2d(channels, narrow, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(narrow, hidden_dim, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(4),
            nn.Flatten(),
            nn.Linear(hidden_dim * 16, out_dim),
        )
    if kind == "resnet":
        return nn.Sequential(
            nn.Conv2d(channels, narrow, 3, padding=1, bias=False),
            _norm(narrow),
            nn.ReLU(),
            ResidualBlock(narrow, narrow, stride=1),
            ResidualBlock(narrow, hidden_dim, stride=2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(hidden_dim, out_dim),
        )
    raise ValueError(
        f"unknown encoder {kind!r}"
    )  # the learners validate first; this guards internal misuse


def _norm(channels: int) -> nn.Module:
    # GroupNorm rather than BatchNorm: outputs do not depend on which rows share a batch,
    # and a last batch of one row trains fine.
    return nn.GroupNorm(min(8, channels), channels)


class ResidualBlock(nn.Module):
    """Basic ResNet block: two 3x3 convolutions plus a (projected when needed) shortcut."""

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False),
            _norm(out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False),
            _norm(out_channels),
        )
        if stride == 1 and in_channels == out_channels:
            self.shortcut = nn.Identity()
        else:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                _norm(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.shortcut(x))


def build_decoder(latent_dim: int, n_features: int, hidden_dim: int) -> nn.Module:
    """MLP from the latent code back to the flattened input."""
    return nn.Sequential(
        nn.Linear(latent_dim, hidden_dim),
        nn.ReLU(),
        nn.Linear(hidden_dim, hidden_dim),
        nn.ReLU(),
        nn.Linear(hidden_dim, n_features),
    )


class AutoencoderNet(nn.Module):
    """Deterministic autoencoder trained on mean squared reconstruction error."""

    def __init__(self, kind: str, input_shape: tuple[int, ...], latent_dim: int, hidden_dim: int):
        super().__init__()
        self.encoder = build_encoder(kind, input_shape, latent_dim, hidden_dim)
        self.decoder = build_decoder(latent_dim, math.prod(input_shape), hidden_dim)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def loss(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return F.mse_loss(self.decode(self.encode(x)), x.flatten(1))


class VAENet(nn.Module):
    """Gaussian VAE: the encoder emits the posterior mean and log-variance of each latent."""

    def __init__(
        self, kind: str, input_shape: tuple[int, ...], latent_dim: int, hidden_dim: int, beta: float
    ):
        super().__init__()
        self.latent_dim = latent_dim
        self.beta = beta
        self.encoder = build_encoder(kind, input_shape, 2 * latent_dim, hidden_dim)
        self.decoder = build_decoder(latent_dim, math.prod(input_shape), hidden_dim)

    def posterior(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_var = self.encoder(x).split(self.latent_dim, dim=1)
        return mean, log_var

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.posterior(x)[0]

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def loss(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Negative ELBO per row for a unit-variance Gaussian decoder, KL weighted by ``beta``."""
        mean, log_var = self.posterior(x)
        # Noise is drawn on the CPU generator and moved, so a seed gives the same draws on any
        # device.
        noise = torch.randn(mean.shape, generator=generator).to(mean.device)
        z = mean + noise * torch.exp(0.5 * log_var)
        reconstruction = 0.5 * (self.decode(z) - x.flatten(1)).pow(2).sum(dim=1)
        kl = -0.5 * (1 + log_var - mean.pow(2) - log_var.exp()).sum(dim=1)
        return (reconstruction + self.beta * kl).mean()


class ContrastiveNet(nn.Module):
    """SimCLR: backbone (the representation) plus an MLP projection head used only by the loss."""

    def __init__(
        self,
        kind: str,
        input_shape: tuple[int, ...],
        latent_dim: int,
        hidden_dim: int,
        projection_dim: int,
    ):
        super().__init__()
        self.encoder = build_encoder(kind, input_shape, latent_dim, hidden_dim)
        self.projection = nn.Sequential(
            nn.Linear(latent_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, projection_dim)
        )

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def loss(self, view1: torch.Tensor, view2: torch.Tensor, temperature: float) -> torch.Tensor:
        return nt_xent(
            self.projection(self.encode(view1)), self.projection(self.encode(view2)), temperature
        )


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """Normalised temperature-scaled cross-entropy (Chen et al., 2020) for paired views.

    Row ``i`` of ``z1`` and row ``i`` of ``z2`` are the positive pair; the other
    ``2n - 2`` rows of the batch are negatives.
    """
    n = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    similarity = z @ z.T / temperature
    self_pairs = torch.eye(2 * n, dtype=torch.bool, device=z.device)
    similarity = similarity.masked_fill(self_pairs, float("-inf"))
    positives = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(z.device)
    return F.cross_entropy(similarity, positives)
