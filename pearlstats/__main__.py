"""``python -m pearlstats``: the version, and how to start.

Examples
--------
>>> from pearlstats.__main__ import usage
>>> usage().splitlines()[0].startswith("pearlstats ")
True
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ._version import __version__

__all__ = ["main", "usage"]


def usage() -> str:
    """What ``python -m pearlstats`` prints."""
    return "\n".join([
        f"pearlstats {__version__}: PEARL model averaging over learned representations",
        "",
        "  python -m pearlstats.demo          the paper's simulation, its summary (--help)",
        "  python -m pearlstats.experiments   the paper's simulation grid, to CSV (--help)",
        "  import pearlstats as pearl         then help(pearl.fit)",
        "  print(pearl.cite())                BibTeX for the paper and this version",
    ])


def main(argv: Sequence[str] | None = None) -> None:
    """Print :func:`usage` (``--version``: the version only)."""
    parser = argparse.ArgumentParser(prog="python -m pearlstats", description=usage(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pearlstats {__version__}")
    parser.parse_args(argv)
    print(usage())


if __name__ == "__main__":
    main()
