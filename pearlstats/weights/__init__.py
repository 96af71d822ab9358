"""The weight stage: surrogate losses and the simplex solvers that minimise them."""

from __future__ import annotations

from .losses import Loss, get_loss
from .solvers import WeightSolution, solve_weights

__all__ = ["Loss", "get_loss", "WeightSolution", "solve_weights"]
