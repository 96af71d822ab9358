"""Whether a weight solve is certified, the record of every solve's gap, and the warning if not.

A solve is *certified* when its ``kkt_gap`` (a proven bound on ``objective - optimum``,
see :mod:`pearlstats.weights.solvers`) is at most ``GAP_RTOL (1 + |objective|)``. The fit, each
honest outer fold, each refitting-bootstrap re-run and each fold complement record the gap of
their solve (:func:`gap_table`); a solve that is not certified warns once, naming where it
ran, at the user's call (:func:`pearlstats._warnings.warn`: the first frame outside pearlstats).

Examples
--------
>>> float(gap_target(0.6)) == 1e-10 * 1.6
True
>>> from types import SimpleNamespace
>>> solve = SimpleNamespace(kkt_gap=1e-12, objective=0.6, solver="newton")
>>> table = gap_table([solve], ["fold 0"])
>>> list(table.columns), bool(table.loc["fold 0", "certified"])
(['kkt_gap', 'objective', 'certified', 'solver'], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._warnings import warn
from ..exceptions import ConvergenceWarning

__all__ = ["GAP_RTOL", "gap_target", "is_certified", "gap_table", "warn_uncertified"]

GAP_RTOL = 1e-10


def gap_target(objective: float, tol: float = GAP_RTOL) -> float:
    """The largest certified gap: ``tol (1 + |objective|)``."""
    return tol * (1.0 + abs(objective))


def is_certified(solution: Any, tol: float = GAP_RTOL) -> bool:
    """Whether a :class:`~pearlstats.WeightSolution`'s gap is at most :func:`gap_target`."""
    return bool(solution.kkt_gap <= gap_target(solution.objective, tol))


def gap_table(solutions: Sequence, names: Sequence, tol: float = GAP_RTOL) -> pd.DataFrame:
    """One row per solve: ``kkt_gap``, ``objective``, ``certified`` and ``solver``."""
    return pd.DataFrame({
        "kkt_gap": [float(s.kkt_gap) for s in solutions],
        "objective": [float(s.objective) for s in solutions],
        "certified": [is_certified(s, tol) for s in solutions],
        "solver": [str(s.solver) for s in solutions],
    }, index=pd.Index(list(names)))


def warn_uncertified(solver: str, gap: float, objective: float, tol: float,
                     context: str | None) -> None:
    """The ConvergenceWarning of a solve whose gap is above its target, naming where it ran."""
    where = f" {context}" if context else ""
    target = f"target {gap_target(objective, tol):.3g} = {tol:g} (1 + objective)"
    if not np.isfinite(gap):
        warn(f"the {solver} weight solver stopped{where} without a certified gap (its "
             f"{target} could not be checked); the weights may not be optimal",
             ConvergenceWarning)
        return
    warn(
        f"the {solver} weight solver stopped{where} with certified gap {gap:.3g} above its "
        f"{target}; the weights are within {gap:.3g} of optimal",
        ConvergenceWarning,
    )
