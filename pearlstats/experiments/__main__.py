"""``python -m pearlstats.experiments``: see :mod:`pearlstats.experiments.cli`."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main()
