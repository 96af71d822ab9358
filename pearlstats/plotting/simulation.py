"""Figures of simulation results: risk ratios of repeated fits, and a grid's risk against n."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..exceptions import DataError, OptionError
from ._canvas import axes_for, new_figure

# Setting names as drawn in panel titles (the grids' columns are ASCII identifiers).
_SETTING_SYMBOLS = {"sigma": "σ", "rho": "ρ", "tau": "τ", "alpha": "α", "beta": "β"}


def _n_axis(ax: Axes, sizes: Sequence) -> None:
    """A log-scaled n axis whose ticks are the sample sizes, written as plain numbers."""
    ax.set_xscale("log")
    ax.set_xticks(list(sizes), [str(int(n)) if float(n).is_integer() else str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("labeled n")


def _mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for a single value)."""
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
    return float(values.mean()), float(se)


def plot_risk_ratio(
    evaluations: Mapping[int, Sequence[pd.DataFrame]],
    *,
    metric: str = "MSE",
    reference: str = "PEARL",
    ax: Axes | None = None,
) -> Figure:
    """Risk ratio of *reference* to each other method against n, for simulation results.

    Parameters
    ----------
    evaluations : mapping n -> sequence of DataFrame
        :meth:`PearlResults.evaluate` results of repeated fits, per labeled
        sample size n (the input of :func:`~pearlstats.results.evaluation.compare_table`).
    metric : str, default "MSE"
    reference : str, default "PEARL"

    Returns
    -------
    matplotlib.figure.Figure
        One line per method: the mean over repetitions of
        ``metric(reference) / metric(method)`` with +-1 SE bars; below 1, the
        reference does better.
    """
    if not isinstance(evaluations, Mapping) or not evaluations:
        raise DataError(
            "plot_risk_ratio needs a mapping from the sample size n to lists of evaluate() results"
        )
    sizes = sorted(evaluations)
    first = next(iter(evaluations[sizes[0]]))
    if metric not in first.columns or reference not in first.index:
        raise OptionError(
            f"metric={metric!r}, reference={reference!r}; the evaluations have metrics "
            f"{list(first.columns)} and methods {list(first.index)}"
        )
    figure, ax = axes_for(ax)
    for method in (m for m in first.index if m != reference):
        summary = [
            _mean_and_se([run.loc[reference, metric] / run.loc[method, metric]
                          for run in evaluations[n]])
            for n in sizes
        ]
        means, errors = zip(*summary)
        ax.errorbar(sizes, means, yerr=errors, marker="o", capsize=3, label=method)
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    _n_axis(ax, sizes)
    ax.set_ylabel(f"{metric}({reference}) / {metric}(method)")
    repetitions = len(evaluations[sizes[0]])
    ax.set_title(f"{reference}'s {metric} relative to each method (±1 SE, {repetitions} runs)")
    ax.legend(fontsize="small")
    return figure


def plot_simulation(
    table: pd.DataFrame,
    *,
    metric: str = "MSE",
    methods: Sequence[str] | None = None,
    panels: str = "sigma",
    highlight: str = "PEARL",
) -> Figure:
    """Mean *metric* against n, one panel per value of *panels*, with ±1 SE bands.

    Parameters
    ----------
    table : DataFrame
        Long results of a simulation grid, one row per (setting, repetition, method), with
        columns ``n``, ``method``, *metric* and *panels*, e.g. the output of
        :func:`pearlstats.experiments.run_grid` or ``vignettes/results/simulation.csv``.
    metric : str, default "MSE"
    methods : sequence of str, optional
        Methods drawn, in this order; default: all, in the table's order.
    panels : str, default "sigma"
        The setting with one panel per value (σ, ρ, ... in the titles).
    highlight : str, default "PEARL"
        The method drawn with a thicker line.

    Returns
    -------
    matplotlib.figure.Figure
        Per method, the mean over repetitions with a band of ±1 standard error of that mean.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"sigma": 0.5, "n": [100, 100, 200, 200] * 2,
    ...                       "method": ["PEARL"] * 4 + ["MS"] * 4,
    ...                       "MSE": [1.0, 1.2, 0.8, 0.9, 1.1, 1.3, 0.9, 1.0]})
    >>> plot_simulation(table).axes[0].get_title()
    'σ = 0.5'
    """
    needed = {"n", "method", metric, panels}
    if not isinstance(table, pd.DataFrame) or not needed <= set(table.columns):
        have = list(table.columns) if isinstance(table, pd.DataFrame) else type(table).__name__
        raise DataError(f"plot_simulation needs a table with columns {sorted(needed)}; got {have}")
    methods = list(dict.fromkeys(table["method"])) if methods is None else list(methods)
    missing = sorted(set(methods) - set(table["method"]))
    if missing:
        raise OptionError(f"methods {missing} are not in the table's methods "
                          f"{list(dict.fromkeys(table['method']))}")
    stats = table.groupby([panels, "method", "n"])[metric].agg(["mean", "sem", "size"])
    values, sizes = sorted(table[panels].unique()), sorted(table["n"].unique())
    figure = new_figure(3.6 * len(values) + 1.6, 3.6)
    axes = figure.subplots(1, len(values), squeeze=False)[0]
    symbol = _SETTING_SYMBOLS.get(panels, panels)
    for ax, value in zip(axes, values):
        for colour, method in enumerate(methods):
            part = stats.loc[(value, method)].reindex(sizes)
            se = part["sem"].fillna(0.0)
            ax.plot(sizes, part["mean"], marker="o", markersize=4, color=f"C{colour}",
                    label=method, linewidth=2.5 if method == highlight else 1.2)
            ax.fill_between(sizes, part["mean"] - se, part["mean"] + se, color=f"C{colour}",
                            alpha=0.15, linewidth=0)
        ax.set_title(f"{symbol} = {value:g}" if isinstance(value, Real) else f"{symbol} = {value}")
        _n_axis(ax, sizes)
    repetitions = int(stats["size"].max())
    axes[0].set_ylabel(f"test {metric}")
    figure.suptitle(f"Test {metric} against the labeled sample size n\n"
                    f"mean of {repetitions} repetitions, band ±1 SE")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", fontsize="small")
    return figure
