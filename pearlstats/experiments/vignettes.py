"""What the vignettes share, as public functions a reader can call: quick mode and results.

Every vignette (``vignettes/*.py``) starts with the same visible lines, so that its rendered
page runs as shown::

    from pearlstats.experiments import quick_mode, results_folder

    QUICK = quick_mode()  # PEARLSTATS_QUICK=1: the reduced run the tests and the docs execute
    RESULTS = results_folder()  # where its tables and figures go

The simulation vignettes, which run a grid of fits, take all three settings in one line
(:func:`run_settings`)::

    QUICK, RESULTS, N_JOBS = run_settings()

Quick runs never write into a folder of committed results: they go to
``$PEARLSTATS_RESULTS`` when it is set (the tests, the docs build and
``vignettes/render.py`` set it to a temporary or git-ignored folder), else to a
folder under the system's temporary directory.

Examples
--------
>>> import os
>>> os.environ.get("PEARLSTATS_QUICK") == "1" or not quick_mode()
True
>>> block_formula(["pca", "kpca_rbf"], response="label")
'label ~ block(pca) + block(kpca_rbf)'
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["QUICK_VARIABLE", "RESULTS_VARIABLE", "RunSettings", "quick_mode", "results_folder",
           "run_settings", "write_result_note", "block_formula"]

QUICK_VARIABLE = "PEARLSTATS_QUICK"  # "1": the reduced run
RESULTS_VARIABLE = "PEARLSTATS_RESULTS"  # a folder for the run's tables and figures


def quick_mode() -> bool:
    """Whether the reduced ("quick") version is asked for: ``PEARLSTATS_QUICK=1``."""
    return os.environ.get(QUICK_VARIABLE) == "1"


def _script_folder() -> Path:
    """The folder of the running script (``python vignettes/x.py``), else the working one.

    A notebook kernel's ``__main__`` has no ``__file__``: its working folder is the
    notebook's.
    """
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    return Path(main).resolve().parent if main else Path.cwd()


def results_folder(name: str = "results") -> Path:
    """The folder a vignette writes its tables and figures to (created if absent).

    Parameters
    ----------
    name : str, default "results"
        The full run's folder, beside the running script (or in the working
        folder of a notebook): ``vignettes/results/`` holds the committed full runs.

    Returns
    -------
    Path
        ``$PEARLSTATS_RESULTS`` when set; else, in quick mode, a folder under
        the system's temporary directory (never the committed results); else
        *name* beside the script.
    """
    chosen = os.environ.get(RESULTS_VARIABLE)
    if chosen:
        folder = Path(chosen)
    elif quick_mode():
        folder = Path(tempfile.gettempdir()) / "pearlstats-quick-results"
    else:
        folder = _script_folder() / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_result_note(folder: Path, name: str, title: str, command: str,
                      table: pd.DataFrame) -> Path | None:
    """Record a full run's table as ``folder/name.md`` with the command that made it.

    Quick runs write nothing (their numbers are not the ones to cite); returns the
    path written, or None.
    """
    if quick_mode():
        return None
    text = f"# {title}\n\nProduced by `{command}`.\n\n```\n{table.to_string()}\n```\n"
    path = Path(folder) / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


class RunSettings(NamedTuple):
    """How a vignette runs: quick or full, where its results go, and its parallel jobs."""

    quick: bool
    results: Path
    n_jobs: int


def run_settings(name: str = "results") -> RunSettings:
    """:func:`quick_mode`, :func:`results_folder` and the jobs of a vignette's grid of fits.

    ``n_jobs`` is 1 for the quick run (the tests and the docs build run several at once)
    and -1, every core, for the full run.

    Examples
    --------
    >>> settings = run_settings()
    >>> settings.n_jobs == (1 if settings.quick else -1)
    True
    """
    quick = quick_mode()
    return RunSettings(quick, results_folder(name), 1 if quick else -1)


def block_formula(names: Iterable[str], response: str = "y") -> str:
    """The formula with one ``block(name)`` term per block name."""
    return f"{response} ~ " + " + ".join(f"block({name})" for name in names)


PAPER_ROWS = ("PEARL", "MS", "SA-FRL", "SA-cand", "Fusion", "Best", "Oracle block")


def paper_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """The rows of an ``evaluate()`` table the paper's figures and tables compare (its
    strategies and the oracle block), keeping the table's ``attrs``.

    The replication vignettes compare what the paper compares; ``evaluate()`` also scores
    AICc, BIC and Covariates, which a downstream network leaves NaN.
    """
    kept = scores.loc[list(PAPER_ROWS)]
    kept.attrs = dict(scores.attrs)
    return kept
