"""Figures of a PEARL fit and of simulation results (matplotlib).

Each function draws on *ax* when given, else on a new ``matplotlib.figure.Figure``
(not a pyplot figure, so nothing accumulates in pyplot's registry), and
returns the Figure: ``fig.savefig("weights.png")``, or display it in Jupyter.

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> from pearlstats.plotting import plot_weights
>>> rng = np.random.default_rng(0)
>>> data = {"y": rng.normal(size=60), "a": rng.normal(size=(60, 2)), "b": rng.normal(size=(60, 2))}
>>> fig = plot_weights(pearl.fit("y ~ block(a) + block(b)", data, seed=0))
>>> fig.axes[0].get_ylabel()
'weight'
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .exceptions import DataError, OptionError

__all__ = ["plot_weights", "plot_cv_risk", "plot_block_importance", "plot_weight_stability", "plot_risk_ratio"]

_MAX_SHOWN = 30


def _axes(ax, width: float = 6.4, height: float = 4.0):
    if ax is not None:
        return ax.figure, ax
    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.subplots()


def _shown_labels(res, max_candidates: int) -> list:
    """Candidates with non-zero weight, then the lowest CV risks, at most *max_candidates*."""
    weighted = list(res.weights[res.weights > 0].sort_values(ascending=False).index)
    rest = [label for label in res.cv_risk.dropna().sort_values().index if label not in weighted]
    return (weighted + rest)[: max(max_candidates, len(weighted))]


def plot_weights(res, *, ax=None, include_zero: bool = False):
    """Bar chart of the PEARL weights, largest first.

    Parameters
    ----------
    res : PearlResults
    ax : matplotlib Axes, optional
    include_zero : bool, default False
        Also show zero-weight candidates (at most 30 bars in all).

    Returns
    -------
    matplotlib.figure.Figure
    """
    weights = res.weights.sort_values(ascending=False, kind="stable")
    weights = weights.head(_MAX_SHOWN) if include_zero else weights[weights > 0]
    figure, ax = _axes(ax)
    ax.bar(range(len(weights)), weights.to_numpy(), color="C0")
    ax.set_xticks(range(len(weights)), weights.index, rotation=45, ha="right")
    ax.set_ylabel("weight")
    ax.set_title(f"PEARL weights ({int((res.weights > 0).sum())} of {len(res.weights)} non-zero)")
    return figure


def plot_cv_risk(res, *, ax=None, max_candidates: int = _MAX_SHOWN):
    """Cross-validated risk of each candidate with +-1 SE, and PEARL's CV risk as a line.

    Candidates with non-zero weight are drawn in colour; the others (the
    lowest risks, up to *max_candidates* bars in all) in grey.

    Returns
    -------
    matplotlib.figure.Figure
    """
    labels = _shown_labels(res, max_candidates)
    risk, se = res.cv_risk[labels], res.cv_risk_se[labels]
    colours = ["C0" if res.weights[label] > 0 else "0.6" for label in labels]
    figure, ax = _axes(ax)
    ax.bar(range(len(labels)), risk.to_numpy(), yerr=se.to_numpy(), color=colours, capsize=3)
    ax.axhline(res.baselines.loc["PEARL", "cv_risk"], color="C3", linestyle="--", label="PEARL")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_ylabel(f"CV risk ({res.loss})")
    ax.legend()
    return figure


def plot_block_importance(res, *, ax=None):
    """Horizontal bars: each block's importance (total weight of the candidates that contain it).

    Returns
    -------
    matplotlib.figure.Figure
    """
    importance = res.block_importance
    figure, ax = _axes(ax)
    ax.barh(range(len(importance)), importance.to_numpy(), color="C0")
    ax.set_yticks(range(len(importance)), importance.index)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("total weight of the candidates with the block")
    return figure


def plot_weight_stability(res, *, ax=None, resamples: pd.DataFrame | None = None):
    """Box plots of the weights re-solved on resamples, with the full-sample weight marked.

    Parameters
    ----------
    res : PearlResults
    ax : matplotlib Axes, optional
    resamples : DataFrame, optional
        Candidates x resamples, e.g. ``res.resample_weights("bootstrap")``;
        defaults to ``res.weight_stability``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    resamples = res.weight_stability if resamples is None else resamples
    used = resamples[(resamples > 0).any(axis=1) | (res.weights.reindex(resamples.index) > 0)]
    used = used.loc[res.weights.reindex(used.index).sort_values(ascending=False, kind="stable").index]
    used = used.head(_MAX_SHOWN)
    figure, ax = _axes(ax)
    positions = np.arange(len(used))
    ax.boxplot(list(used.to_numpy()), positions=positions, widths=0.5)
    ax.scatter(positions, res.weights[used.index].to_numpy(), color="C3", marker="D", zorder=3, label="all rows")
    ax.set_xticks(positions, used.index, rotation=45, ha="right")
    ax.set_ylabel("weight")
    ax.set_title(f"Weights over {resamples.shape[1]} resamples")
    ax.legend()
    return figure


def plot_risk_ratio(evaluations, *, metric: str = "MSE", reference: str = "PEARL", ax=None):
    """Risk ratio of *reference* to each other method against the sample size, for simulation results.

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
        raise DataError("plot_risk_ratio needs a mapping from the sample size n to lists of evaluate() results")
    sizes = sorted(evaluations)
    first = next(iter(evaluations[sizes[0]]))
    if metric not in first.columns or reference not in first.index:
        raise OptionError(
            f"metric={metric!r}, reference={reference!r}; the evaluations have metrics {list(first.columns)} "
            f"and methods {list(first.index)}"
        )
    methods = [method for method in first.index if method != reference]
    figure, ax = _axes(ax)
    for method in methods:
        ratios = [np.array([frame.loc[reference, metric] / frame.loc[method, metric] for frame in evaluations[n]])
                  for n in sizes]
        means = [r.mean() for r in ratios]
        errors = [r.std(ddof=1) / np.sqrt(len(r)) if len(r) > 1 else 0.0 for r in ratios]
        ax.errorbar(sizes, means, yerr=errors, marker="o", capsize=3, label=method)
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_xlabel("n (labeled rows)")
    ax.set_ylabel(f"{metric}({reference}) / {metric}(method)")
    ax.legend()
    return figure
