"""Lazy access to PyTorch and the session settings every deep learner trains under.

Nothing here imports torch at module level: ``import pearlstats`` must work on a
machine without the ``deep`` extra, and the error for a missing torch should
come from the learner that needed it, naming the extra to install.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING

from pearlstats.exceptions import MissingDependencyError, OptionError

if TYPE_CHECKING:
    import torch

__all__ = [
    "MissingDependencyError",
    "import_optional",
    "import_torch",
    "resolve_device",
    "training_session",
]

DEEP_EXTRA_HINT = 'pip install "pearlstats[deep]"'


def import_optional(module: str, *, needed_by: str, install: str = DEEP_EXTRA_HINT) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``install``.

    Parameters
    ----------
    module : str
        Dotted module name, such as ``"torch"`` or ``"transformers"``.
    needed_by : str
        What needs the module, for the message (a learner's name).
    install : str
        The command that installs the missing package.

    Returns
    -------
    module
        The imported module.

    Examples
    --------
    >>> import_optional("math", needed_by="an example").sqrt(4.0)
    2.0
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(
            f"{needed_by} needs the optional package {module!r}, which is not installed "
            f"({err}). Install it with: {install}"
        ) from err


def import_torch(needed_by: str = "this deep representation learner") -> ModuleType:
    """Import torch, or raise :class:`MissingDependencyError` naming the ``deep`` extra."""
    return import_optional("torch", needed_by=needed_by)


def resolve_device(torch: ModuleType, device: str) -> torch.device:
    """Turn ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` into a ``torch.device``.

    ``"auto"`` picks a CUDA GPU when one is present, then Apple's MPS, else the CPU.
    Asking for an accelerator that is not there is an :class:`OptionError`, not a
    silent fall-back, because results and speed would differ from what was asked.
    """
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise OptionError(
            f"device={device!r} is not a device name; use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"
        ) from err
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(
            f"device={device!r} was asked for but no CUDA GPU is available; use 'auto' or 'cpu'"
        )
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise OptionError(
            f"device={device!r} was asked for but MPS is not available; use 'auto' or 'cpu'"
        )
    return resolved


@contextmanager
def training_session(
    torch: ModuleType, seed: int, device: torch.device
) -> Iterator[torch.Generator]:
    """Seeded, single-threaded, deterministic torch settings, restored on exit.

    The caller's global random state is forked rather than reseeded, so fitting a
    learner does not change the random numbers the user's own torch code sees.
    One thread makes CPU results reproducible bit for bit (reductions split across
    threads can round differently) and avoids oversubscribing a small machine.

    Yields
    ------
    torch.Generator
        A CPU generator seeded with ``seed`` for shuffling, augmentation and noise.
    """
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    if device.type == "cuda":
        # cuBLAS is only deterministic with a fixed workspace; it must be set before the first
        # matmul.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        fork = torch.random.fork_rng(devices=[device.index or 0], device_type="cuda")
    else:
        fork = torch.random.fork_rng(devices=[])
    with fork:
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield torch.Generator().manual_seed(seed)
        finally:
            torch.set_num_threads(threads)
            torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
