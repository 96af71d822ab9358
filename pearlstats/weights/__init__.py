"""Weight vectors over candidates: surrogate losses, the simplex solvers that minimise them,
shrinkage, the paper's baselines (``baselines``: PEARL, MS, SA-FRL, SA-cand, Fusion, Best)
and the held-out metrics their score tables report (``metrics``)."""

from __future__ import annotations

from .losses import Loss, get_loss
from .solvers import WeightSolution, solve_weights

__all__ = ["Loss", "get_loss", "WeightSolution", "solve_weights"]
