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


def n_axis(ax: Axes, sizes: Sequence) -> None:
    """Make *ax*'s x axis a log-scaled n axis whose ticks are the sample sizes, as plain numbers.

    Matplotlib's log axis labels 100..800 as 2^7, 2^8, 2^9 (base 2) or 10^2 with unlabeled minor
    ticks (base 10); a reader of a simulation figure wants to read n itself.

    Examples
    --------
    >>> from pearlstats.plotting import PearlFigure
    >>> ax = PearlFigure().subplots()
    >>> n_axis(ax, [100, 200, 400, 800])
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['100', '200', '400', '800']
    """
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
        ``metric(reference) / metric(method)`` with +-1 SE bars; for a loss (MSE,
        log-loss, ...) below 1 the reference does better, for ``"accuracy"`` above 1
        (the axis label says which). Methods with the same ratio in every run (to a
        relative 1e-9) share one line, labelled ``"Covariates = Null"``.
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
    # Methods whose ratios agree in every run (to rounding: two intercept-only fits) are one
    # line named "A = B": drawn apart, the later one hid the earlier exactly (Covariates
    # under Null without covariates), and the legend listed a line no one could see.
    lines: list = []
    for method in (m for m in first.index if m != reference):
        ratios = [np.array([run.loc[reference, metric] / run.loc[method, metric]
                            for run in evaluations[n]], dtype=float) for n in sizes]
        same = next((line for line in lines if all(
            np.allclose(mine, theirs, rtol=1e-9, atol=0.0, equal_nan=True)
            for mine, theirs in zip(ratios, line[0]))), None)
        if same is None:
            lines.append((ratios, [str(method)]))
        else:
            same[1].append(str(method))
    for ratios, methods in lines:
        means, errors = zip(*(_mean_and_se(values) for values in ratios))
        ax.errorbar(sizes, means, yerr=errors, marker="o", capsize=3, label=" = ".join(methods))
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    n_axis(ax, sizes)
    name = _METRIC_NAMES.get(metric, str(metric).replace("_", " "))
    better = "above 1" if metric == "accuracy" else "below 1"
    ax.set_ylabel(f"{name}({reference}) / {name}(method)\n({better}: {reference} better)")
    repetitions = len(evaluations[sizes[0]])
    ax.set_title(f"{reference}'s {name} relative to each method (±1 SE, {repetitions} runs)")
    ax.legend(fontsize="small")
    return figure


# Metrics as a reader names them (the tables' columns are identifiers).
_METRIC_NAMES = {"cross_entropy": "log-loss", "MSE": "MSE", "MAE": "MAE", "accuracy": "accuracy",
                 "poisson_deviance": "Poisson deviance"}


def _mean_se_lines(ax: Axes, stats: pd.DataFrame, methods: list, sizes: list,
                   highlight: str) -> None:
    """One line per method (mean) with a band of ±1 SE, from *stats* indexed by (method, n)."""
    for colour, method in enumerate(methods):
        part = stats.loc[method].reindex(sizes)
        mean, se = part["mean"], part["sem"].fillna(0.0)
        ax.plot(sizes, mean, marker="o", markersize=4, color=f"C{colour}", label=method,
                linewidth=2.5 if method == highlight else 1.2)
        ax.fill_between(sizes, mean - se, mean + se, color=f"C{colour}", alpha=0.15, linewidth=0)


def _check_table(table: pd.DataFrame, metrics: list, panels: str, methods) -> list:
    """The methods to draw; a DataError/OptionError naming what the table lacks."""
    needed = {"n", "method", panels, *metrics}
    if not isinstance(table, pd.DataFrame) or not needed <= set(table.columns):
        have = list(table.columns) if isinstance(table, pd.DataFrame) else type(table).__name__
        raise DataError(f"plot_simulation needs a table with columns {sorted(needed)}; got {have}")
    present = list(dict.fromkeys(table["method"]))
    methods = present if methods is None else list(methods)
    missing = sorted(set(methods) - set(present))
    if missing:
        raise OptionError(f"methods {missing} are not in the table's methods {present}")
    return methods


def plot_simulation(
    table: pd.DataFrame,
    *,
    metric: str | Sequence[str] = "MSE",
    methods: Sequence[str] | None = None,
    panels: str = "sigma",
    panel_title: str = "{name} = {value}",
    title: str | None = None,
    highlight: str = "PEARL",
) -> Figure:
    """Mean test metric against n, one panel per value of *panels*, with ±1 SE bands.

    Parameters
    ----------
    table : DataFrame
        Long results of a simulation grid, one row per (setting, repetition, method), with
        columns ``n``, ``method``, *metric* and *panels*, e.g. the output of
        :func:`pearlstats.experiments.run_grid` or ``vignettes/results/simulation.csv``.
    metric : str or sequence of str, default "MSE"
        One row of panels per metric.
    methods : sequence of str, optional
        Methods drawn, in this order; default: all, in the table's order.
    panels : str, default "sigma"
        The setting with one column of panels per value.
    panel_title : str, default "{name} = {value}"
        Title of each top panel; ``{name}`` is *panels* (``sigma`` written σ), ``{value}`` its
        value.
    title : str, optional
        First line of the figure's title; default "Test <metrics> against the labeled sample
        size n".
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
    metrics = [metric] if isinstance(metric, str) else list(metric)
    methods = _check_table(table, metrics, panels, methods)
    values = list(dict.fromkeys(table[panels]))  # numbers ascending, names in the table's order
    values = sorted(values) if all(isinstance(v, Real) for v in values) else values
    figure = new_figure(3.6 * len(values) + 1.6, 0.6 + 3.2 * len(metrics))
    axes = figure.subplots(len(metrics), len(values), squeeze=False)
    name = _SETTING_SYMBOLS.get(panels, panels)
    for row, metric_column in enumerate(metrics):
        stats = table.groupby([panels, "method", "n"])[metric_column].agg(["mean", "sem", "size"])
        for ax, value in zip(axes[row], values):
            sizes = sorted(table.loc[table[panels] == value, "n"].unique())
            _mean_se_lines(ax, stats.loc[value], methods, sizes, highlight)
            n_axis(ax, sizes)
            shown = f"{value:g}" if isinstance(value, Real) else value
            ax.set_title(panel_title.format(name=name, value=shown) if row == 0 else "")
        axes[row][0].set_ylabel(f"test {_METRIC_NAMES.get(metric_column, metric_column)}")
    words = " and ".join(_METRIC_NAMES.get(m, m) for m in metrics)
    repetitions = int(stats["size"].max())
    figure.suptitle(f"{title or f'Test {words} against the labeled sample size n'}\n"
                    f"mean of {repetitions} repetitions, band ±1 SE")
    handles, labels = axes[0][0].get_legend_handles_labels()
    # right of the top right panel, level with its top: a figure legend "outside right upper"
    # sat at the figure's top, where a title wider than one column of panels ran on under it.
    # The constrained layout counts an axes' legend in that axes' margins, so it makes room.
    axes[0][-1].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                       borderaxespad=0.0, fontsize="small")
    return figure
