"""Replication grids: settings x repetitions, reproducible in any order, in parallel, resumable.

:func:`run_grid` runs ``task(setting, seed)`` for every setting and repetition.
Each run gets its own child of one ``numpy.random.SeedSequence``, chosen by
its (setting, repetition) position, so a run's numbers do not depend on which
worker ran it, in which order, or how many jobs there were. Results come back
as one tidy DataFrame (one row per run and returned record); :func:`iter_runs`
yields each run's records as it finishes. Work is spread with joblib, so
``joblib.parallel_config(backend="dask")`` sends it to a dask.distributed
cluster. A task that raises is reported as a :class:`~pearlstats.TaskError`
naming its setting and repetition.

The paper's full simulation grid (16 settings x 100 repetitions) runs from
the command line; it is long, so it needs ``--full`` (or explicit ``--n``,
``--sigma`` or ``--repetitions``). Rows are written as runs finish; Ctrl-C
keeps them, and ``--resume`` runs only the rest (see :mod:`.cli`)::

    python -m pearlstats.experiments simulation --full --n-jobs 2 \\
        --out vignettes/results/simulation.csv

Modules: :mod:`.runner` (grid, run_grid, iter_runs), :mod:`.simulation` (the
paper's simulation task), :mod:`.partial` (the incremental results file),
:mod:`.cli` (the command line), :mod:`.arguments` (the argument checks the commands
share) and :mod:`.vignettes` (the vignettes' quick mode and results folder).

Examples
--------
>>> def task(setting, seed):
...     return {"twice": 2 * setting["n"]}
>>> table = run_grid(task, grid(n=[1, 2]), repetitions=2, progress=False)
>>> table[["n", "repetition", "twice"]].to_numpy().tolist()
[[1, 0, 2], [1, 1, 2], [2, 0, 4], [2, 1, 4]]
"""

from __future__ import annotations

from .cli import main
from .runner import RUNNER_FIELDS, grid, iter_runs, run_grid
from .simulation import PAPER_GRID, SimulationSweep, cell_seed, paper_representations
from .vignettes import (
    RunSettings,
    block_formula,
    paper_rows,
    quick_mode,
    results_folder,
    run_settings,
    write_result_note,
)

__all__ = [
    "PAPER_GRID",
    "RUNNER_FIELDS",
    "RunSettings",
    "SimulationSweep",
    "block_formula",
    "cell_seed",
    "grid",
    "iter_runs",
    "main",
    "paper_representations",
    "paper_rows",
    "quick_mode",
    "results_folder",
    "run_grid",
    "run_settings",
    "write_result_note",
]
