"""Random views for contrastive learning, computed in torch on whole batches.

Every augmentation is ``f(batch, generator, **options) -> batch``. Random numbers
are drawn from the CPU ``generator`` and then moved to the batch's device, so one
seed gives the same views on any device. Image augmentations take batches of
shape ``(n, c, h, w)``; ``noise`` and ``mask`` take any shape.

Horizontal flips are available but not a default: they change the meaning of
digits and letters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.nn import functional as F

from pearlstats.exceptions import OptionError

Augmentation = Callable[..., torch.Tensor]


def _uniform(generator, n, low, high, device):
    return (low + (high - low) * torch.rand(n, generator=generator)).to(device)


def crop(
    batch: torch.Tensor, generator: torch.Generator, padding: int | None = None
) -> torch.Tensor:
    """Pad with zeros by ``padding`` pixels, then cut a random ``h x w`` window (a random shift).

    ``padding`` defaults to an eighth of the shorter side, at least 1 pixel.
    """
    n, _, h, w = batch.shape
    padding = max(1, round(min(h, w) / 8)) if padding is None else int(padding)
    padded = F.pad(batch, (padding, padding, padding, padding))
    top = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(batch.device)
    left = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(batch.device)
    rows = top[:, None] + torch.arange(h, device=batch.device)
    cols = left[:, None] + torch.arange(w, device=batch.device)
    windows = padded[
        torch.arange(n, device=batch.device)[:, None, None], :, rows[:, :, None], cols[:, None, :]
    ]
    return windows.permute(0, 3, 1, 2)  # advanced indexing put the channel axis last


def resized_crop(
    batch: torch.Tensor,
    generator: torch.Generator,
    scale: tuple[float, float] = (0.6, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
) -> torch.Tensor:
    """Random crop covering a ``scale`` fraction of the area, resized back to ``h x w``.

    Resizing is bilinear.
    """
    n = batch.shape[0]
    area = _uniform(generator, n, scale[0], scale[1], "cpu")
    log_ratio = _uniform(
        generator, n, torch.log(torch.tensor(ratio[0])), torch.log(torch.tensor(ratio[1])), "cpu"
    )
    aspect = log_ratio.exp()
    width = (area * aspect).sqrt().clamp(max=1.0)
    height = (area / aspect).sqrt().clamp(max=1.0)
    # In affine_grid's [-1, 1] coordinates a window of half-size s can be centred anywhere in
    # [-(1-s), 1-s].
    x_centre = (2 * torch.rand(n, generator=generator) - 1) * (1 - width)
    y_centre = (2 * torch.rand(n, generator=generator) - 1) * (1 - height)
    zero = torch.zeros(n)
    theta = torch.stack(
        [torch.stack([width, zero, x_centre], 1), torch.stack([zero, height, y_centre], 1)], 1
    ).to(batch.device, batch.dtype)
    grid = F.affine_grid(theta, list(batch.shape), align_corners=False)
    return F.grid_sample(batch, grid, mode="bilinear", padding_mode="border", align_corners=False)


def flip(batch: torch.Tensor, generator: torch.Generator, p: float = 0.5) -> torch.Tensor:
    """Mirror each image left-right with probability ``p``."""
    chosen = (torch.rand(batch.shape[0], generator=generator) < p).to(batch.device)
    return torch.where(chosen[:, None, None, None], batch.flip(-1), batch)


def noise(batch: torch.Tensor, generator: torch.Generator, std: float = 0.1) -> torch.Tensor:
    """Add Gaussian noise with standard deviation ``std`` (in scaled input units)."""
    return batch + std * torch.randn(batch.shape, generator=generator).to(batch.device, batch.dtype)


def mask(batch: torch.Tensor, generator: torch.Generator, p: float = 0.2) -> torch.Tensor:
    """Set each input value to 0 (the training mean after standardising) with probability ``p``."""
    keep = (torch.rand(batch.shape, generator=generator) >= p).to(batch.device)
    return batch * keep


AUGMENTATIONS: dict[str, tuple[Augmentation, bool]] = {
    # name: (function, needs images)
    "crop": (crop, True),
    "resized_crop": (resized_crop, True),
    "flip": (flip, True),
    "noise": (noise, False),
    "mask": (mask, False),
}
DEFAULT_IMAGE = ("crop", "noise")
DEFAULT_FLAT = ("mask", "noise")


def build_pipeline(
    spec: str | Sequence[str | tuple[str, Mapping[str, Any]]], images: bool
) -> list[Callable[[torch.Tensor, torch.Generator], torch.Tensor]]:
    """Turn a user's ``augmentations=`` value into a list of ``f(batch, generator)``.

    Parameters
    ----------
    spec : "auto", sequence or mapping
        ``"auto"``: ``("crop", "noise")`` for images, ``("mask", "noise")`` for flat
        features. A sequence holds names from :data:`AUGMENTATIONS` or callables
        ``f(batch, generator)``. A mapping gives options per name, e.g.
        ``{"crop": {"padding": 2}, "noise": {"std": 0.05}}``.
    images : bool
        Whether the learner sees images; image augmentations need them.
    """
    if isinstance(spec, str) and spec == "auto":
        spec = DEFAULT_IMAGE if images else DEFAULT_FLAT
    items = (
        list(spec.items())
        if isinstance(spec, Mapping)
        else [(item, {}) for item in _as_sequence(spec)]
    )
    if not items:
        raise OptionError(
            "augmentations= is empty; SimCLR needs at least one augmentation to make two views"
        )
    pipeline = []
    for item, options in items:
        if callable(item):
            pipeline.append(item)
            continue
        if item not in AUGMENTATIONS:
            raise OptionError(
                f"unknown augmentation {item!r}; use a callable "
                f"f(batch, generator) or one of {sorted(AUGMENTATIONS)}"
            )
        function, needs_images = AUGMENTATIONS[item]
        if needs_images and not images:
            raise OptionError(
                f"augmentation {item!r} needs images: pass image_shape=(h, w) or (c, h, w) for "
                "flattened inputs, give 3-D/4-D arrays, or use only 'noise' and 'mask'"
            )
        pipeline.append(_bind(item, function, options))
    return pipeline


def _as_sequence(spec):
    if isinstance(spec, str) or callable(spec):
        return [spec]
    try:
        return list(spec)
    except TypeError as err:
        raise OptionError(
            f"augmentations={spec!r} is not 'auto', a list of names/callables or a dict"
        ) from err


def _bind(name, function, options):
    if not isinstance(options, Mapping):
        raise OptionError(f"options for augmentation {name!r} must be a dict, got {options!r}")
    options = dict(options)
    try:
        inspect.signature(function).bind(None, None, **options)
    except TypeError as err:
        allowed = list(inspect.signature(function).parameters)[2:]
        raise OptionError(
            f"augmentation {name!r} got options {options}; it takes only {allowed}"
        ) from err

    def augment(batch, generator):
        return function(batch, generator, **options)

    return augment


def apply_pipeline(
    pipeline: Sequence[Callable[[torch.Tensor, torch.Generator], torch.Tensor]],
    batch: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """Apply each augmentation in order to the batch."""
    for augment in pipeline:
        batch = augment(batch, generator)
    return batch
