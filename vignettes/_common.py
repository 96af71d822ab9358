"""Settings shared by the vignettes: quick mode, where results go, the paper's learners."""

from __future__ import annotations

import os
from pathlib import Path

QUICK = os.environ.get("PEARLSTATS_QUICK") == "1"
HERE = Path(__file__).resolve().parent
# The committed results/ hold the full-size runs the README links to; quick runs
# write to the (git-ignored) _build/ folder so they never replace them.
_DEFAULT_RESULTS = HERE / "_build" / "quick-results" if QUICK else HERE / "results"
RESULTS = Path(os.environ.get("PEARLSTATS_RESULTS", _DEFAULT_RESULTS))
RESULTS.mkdir(parents=True, exist_ok=True)
N_JOBS = 1 if QUICK else -1


def paper_representations(seed=None):
    """PCA and kernel PCA with the four kernels of the paper's simulation (2 components each)."""
    from pearlstats.experiments import paper_representations as learners

    return learners(seed)


def write_summary(name: str, title: str, command: str, table) -> None:
    """Record a full-scale result table as markdown, with the command that made it."""
    if QUICK:
        return
    text = f"# {title}\n\nProduced by `{command}`.\n\n```\n{table.to_string()}\n```\n"
    (RESULTS / f"{name}.md").write_text(text, encoding="utf-8")


def formula_for(names, response="y") -> str:
    return f"{response} ~ " + " + ".join(f"block({name})" for name in names)
