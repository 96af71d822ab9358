"""Figures of a PEARL fit and of simulation results (matplotlib).

Each function draws on *ax* when given, else on a new :class:`PearlFigure`, and returns the
figure: ``fig.savefig("weights.png")``, or leave it as the last value of a Jupyter cell, which
shows it inline (a sharp 2x PNG) exactly once, with no ``%matplotlib`` magic and no pyplot
import. In a script that has imported pyplot the figure is also known to pyplot, so
``plt.show()`` shows it. ``res.plot.weights()`` and the other methods of :class:`PlotAccessor`
call the same functions.

Every figure has a title, its colours in a legend and its losses in words ("squared error",
"log-loss"). Fits with many candidates (J = 255 for eight blocks) stay readable: rows are
horizontal, the leading candidates are drawn and the rest aggregated into one ``+ k others``
row, long labels are abbreviated (blocks as letters, with a key beside the plot), and the
constrained layout keeps every label inside the canvas. On an axes given with ``ax=`` the key
lies right of the axes, beside the plot's own legend: a figure with a layout engine
(``plt.subplots(..., layout="constrained")``) makes room for it.

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> from pearlstats.plotting import plot_weights
>>> rng = np.random.default_rng(0)
>>> data = {"y": rng.normal(size=60), "a": rng.normal(size=(60, 2)), "b": rng.normal(size=(60, 2))}
>>> fig = plot_weights(pearl.fit("y ~ block(a) + block(b)", data, seed=0))
>>> fig.axes[0].get_xlabel()
'PEARL weight'
"""

from __future__ import annotations

from ._canvas import PearlFigure
from .fit import (
    PlotAccessor,
    plot_block_importance,
    plot_cv_risk,
    plot_weight_stability,
    plot_weights,
)
from .simulation import n_axis, plot_risk_ratio, plot_simulation

__all__ = [
    "PearlFigure",
    "PlotAccessor",
    "n_axis",
    "plot_block_importance",
    "plot_cv_risk",
    "plot_risk_ratio",
    "plot_simulation",
    "plot_weight_stability",
    "plot_weights",
]
