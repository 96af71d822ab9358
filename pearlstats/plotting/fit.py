"""The figures of one fit: weights, cross-validated risks, block importance, weight stability."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..checks import check_int
from ..exceptions import OptionError
from ._layout import (
    MAX_SHOWN,
    OTHERS_COLOUR,
    ZERO_COLOUR,
    add_key,
    bar_axes,
    display_labels,
    horizontal_ticks,
    label_bars,
    loss_name,
    others_label,
    shown_labels,
    widen_to_fit,
)

if TYPE_CHECKING:
    from ..results.core import PearlResults


class PlotAccessor:
    """The figures of one fit, as ``res.plot.weights()`` and so on.

    Parameters
    ----------
    res : PearlResults

    Examples
    --------
    >>> import numpy as np, pearlstats as pearl
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
    >>> data = {"y": rng.normal(size=60), "a": a, "b": b}
    >>> fig = PlotAccessor(pearl.fit("y ~ block(a) + block(b)", data, seed=0)).cv_risk()
    >>> fig.axes[0].get_xlabel()
    'out-of-fold risk: squared error'
    """

    def __init__(self, res: PearlResults) -> None:
        self._res = res

    def __repr__(self) -> str:
        return "PlotAccessor: weights(), cv_risk(), block_importance(), weight_stability()"

    def weights(self, **kwargs: Any) -> Figure:
        """:func:`plot_weights` of this fit."""
        return plot_weights(self._res, **kwargs)

    def cv_risk(self, **kwargs: Any) -> Figure:
        """:func:`plot_cv_risk` of this fit."""
        return plot_cv_risk(self._res, **kwargs)

    def block_importance(self, **kwargs: Any) -> Figure:
        """:func:`plot_block_importance` of this fit."""
        return plot_block_importance(self._res, **kwargs)

    def weight_stability(self, **kwargs: Any) -> Figure:
        """:func:`plot_weight_stability` of this fit."""
        return plot_weight_stability(self._res, **kwargs)


def _check_max_candidates(max_candidates: Any) -> int:
    """A positive int: pandas' ``head(-1)`` read -1 as "all but the last", and 2.5 failed
    inside pandas."""
    return check_int("max_candidates", max_candidates, minimum=1)


def plot_weights(res: PearlResults, *, ax: Axes | None = None, include_zero: bool = False,
                 max_candidates: int = MAX_SHOWN) -> Figure:
    """Horizontal bars of the PEARL weights, largest on top, each labelled with its value.

    Parameters
    ----------
    res : PearlResults
    ax : matplotlib Axes, optional
    include_zero : bool, default False
        Also show zero-weight candidates.
    max_candidates : int >= 1, default 25
        Bars drawn for single candidates; the remaining ones are one grey bar
        ``+ k others`` holding their total weight.

    Returns
    -------
    matplotlib.figure.Figure
    """
    max_candidates = _check_max_candidates(max_candidates)
    if not isinstance(include_zero, (bool, np.bool_)):
        raise OptionError(f"include_zero={include_zero!r}; use True or False")
    weights = res.weights.sort_values(ascending=False, kind="stable")
    weights = weights if include_zero else weights[weights > 0]
    shown, others = weights.head(max_candidates), weights.iloc[max_candidates:]
    labels, codes = display_labels(res, list(shown.index))
    values, colours = list(shown.to_numpy()), ["C0"] * len(shown)
    if len(others):
        labels.append(others_label(len(others)))
        values.append(float(others.sum()))
        colours.append(OTHERS_COLOUR)
    figure, ax = bar_axes(ax, len(labels), codes is not None)
    bars = ax.barh(range(len(labels)), values, color=colours)
    label_bars(ax, bars, values, right=1.2 * max(max(values), 1e-12))
    horizontal_ticks(ax, labels)
    ax.set_xlabel("PEARL weight")
    ax.set_title(f"PEARL weights ({int((res.weights > 0).sum())} of {len(res.weights)} non-zero)")
    if len(others):
        ax.legend([Patch(color="C0"), Patch(color=OTHERS_COLOUR)],
                  ["one candidate", f"total of the other {len(others)}"],
                  loc="lower right", fontsize="small")
    add_key(figure, ax, codes)
    return figure


def plot_cv_risk(
    res: PearlResults, *, ax: Axes | None = None, max_candidates: int = MAX_SHOWN
) -> Figure:
    """Dot plot: each candidate's cross-validated risk with +-1 SE, and PEARL's as a line.

    Dots with intervals, not bars: the axis spans the risks, not 0 to the largest, so that
    1.97 against 2.07 is visibly different. Candidates with non-zero weight are blue, then the
    lowest risks among the others grey, *max_candidates* rows in all; the range of the
    remaining candidates' risks is one light grey line ``+ k others``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    chosen = shown_labels(res, _check_max_candidates(max_candidates))
    others = res.cv_risk.drop(chosen).dropna()
    risk, se = res.cv_risk[chosen].to_numpy(), res.cv_risk_se[chosen].to_numpy()
    labels, codes = display_labels(res, chosen)
    figure, ax = bar_axes(ax, len(labels) + bool(len(others)), codes is not None)
    weighted = (res.weights[chosen] > 0).to_numpy()
    rows = np.arange(len(chosen))
    groups = ((weighted, "C0", "weight > 0"), (~weighted, ZERO_COLOUR, "weight 0"))
    for mask, colour, name in groups:
        if mask.any():
            ax.errorbar(risk[mask], rows[mask], xerr=se[mask], fmt="o", color=colour, capsize=2,
                        markersize=5, label=name)
    if len(others):
        labels.append(others_label(len(others)))
        ax.hlines(len(chosen), others.min(), others.max(), color=OTHERS_COLOUR, linewidth=4,
                  label=f"range of the other {len(others)}")
    ax.axvline(res.baselines.loc["PEARL", "cv_risk"], color="C3", linestyle="--", label="PEARL")
    horizontal_ticks(ax, labels)
    ax.grid(axis="x", color="0.9")
    ax.set_axisbelow(True)
    ax.set_xlabel(f"out-of-fold risk: {loss_name(res.loss)}")
    ax.set_title(f"Cross-validated risk ±1 SE\n{len(chosen)} of {len(res.cv_risk)} candidates")
    ax.legend(loc="best", fontsize="small")
    add_key(figure, ax, codes)
    return figure


def plot_block_importance(res: PearlResults, *, ax: Axes | None = None) -> Figure:
    """Horizontal bars: each block's importance (total weight of the candidates that contain it).

    Returns
    -------
    matplotlib.figure.Figure
    """
    importance = res.block_importance
    made = ax is None
    figure, ax = bar_axes(ax, len(importance), keyed=False)
    values = list(importance.to_numpy())
    bars = ax.barh(range(len(importance)), values, color="C0")
    label_bars(ax, bars, values, right=1.15)
    horizontal_ticks(ax, list(importance.index))
    ax.set_xlabel("total weight of the candidates that use the block")
    ax.set_title("Block importance")
    if made:
        widen_to_fit(figure, ax)
    return figure


def _resample_kind(resamples: pd.DataFrame) -> str:
    """What the columns of *resamples* are, in the summary's words."""
    first = str(resamples.columns[0]) if resamples.shape[1] else ""
    if first.startswith("fold"):
        return "fold complements"
    if first.startswith("boot"):
        return "bootstrap resamples"
    return "resamples"


# The columns of res.weight_uncertainty(), a summary of resampled weights (not resamples).
_SUMMARY_COLUMNS = {"weight", "mean", "spread", "q_lower", "q_upper"}


def _check_resamples(res: PearlResults, resamples: Any) -> pd.DataFrame:
    """*resamples* as candidates x resamples of weights; an OptionError saying what it is not.

    ``res.weight_uncertainty()`` summarises resampled weights in five columns, which were
    drawn as if they were five resamples, under "Weights re-solved on 5 resamples".
    """
    how = ("pass candidates x resamples of weights, e.g. res.resample_weights('bootstrap', "
           "200, refit=True) (the resamples weight_uncertainty() summarises), or omit "
           "resamples= for the fold complements")
    if not isinstance(resamples, pd.DataFrame):
        raise OptionError(f"resamples= is a {type(resamples).__name__}; {how}")
    if _SUMMARY_COLUMNS <= set(resamples.columns):
        raise OptionError(f"resamples= is a weight_uncertainty() summary (columns "
                          f"{list(resamples.columns)}), not resampled weights; {how}")
    unknown = [label for label in resamples.index if label not in res.weights.index]
    if unknown or resamples.shape[1] == 0:
        what = (f"rows {unknown[:5]} that are not candidates of this fit" if unknown
                else "no columns")
        raise OptionError(f"resamples= has {what}; {how}")
    values = resamples.to_numpy(dtype=float, na_value=np.nan)
    if not (np.isfinite(values).all() and (values >= 0).all() and (values <= 1).all()):
        raise OptionError(f"resamples= holds values that are not weights in [0, 1]; {how}")
    return resamples


def plot_weight_stability(
    res: PearlResults,
    *,
    ax: Axes | None = None,
    resamples: pd.DataFrame | None = None,
    max_candidates: int = MAX_SHOWN,
) -> Figure:
    """Horizontal box plots of the weights re-solved on resamples; the full-sample weight marked.

    Parameters
    ----------
    res : PearlResults
    ax : matplotlib Axes, optional
    resamples : DataFrame, optional
        Candidates x resamples, weights in [0, 1], e.g. ``res.resample_weights("bootstrap")``
        (``refit=True`` for the resamples :meth:`~pearlstats.PearlResults.weight_uncertainty`
        summarises; its summary table is refused); defaults to ``res.weight_stability`` (the
        fold complements, as in the summary).
    max_candidates : int >= 1, default 25
        Candidates drawn one by one (largest full-sample weight first); the
        others used in some resample are one grey box ``+ k others`` of their
        total weight per resample.

    Returns
    -------
    matplotlib.figure.Figure
        Its title names the resamples as the summary does; their spread is not a standard
        error (fold complements share most of their rows).
    """
    max_candidates = _check_max_candidates(max_candidates)
    resamples = res.weight_stability if resamples is None else _check_resamples(res, resamples)
    full = res.weights.reindex(resamples.index)
    used = resamples[(resamples > 0).any(axis=1) | (full > 0)]
    order = pd.DataFrame({"weight": full[used.index], "mean": used.mean(axis=1)})
    used = used.loc[order.sort_values(["weight", "mean"], ascending=False, kind="stable").index]
    shown, others = used.head(max_candidates), used.iloc[max_candidates:]
    labels, codes = display_labels(res, list(shown.index))
    boxes = list(shown.to_numpy())
    if len(others):
        labels.append(others_label(len(others)))
        boxes.append(others.sum(axis=0).to_numpy())
    figure, ax = bar_axes(ax, len(labels), codes is not None)
    positions = np.arange(len(labels))
    ax.boxplot(boxes, positions=positions, widths=0.5, orientation="horizontal",
               flierprops={"markeredgecolor": "black"})
    ax.scatter(full[shown.index].to_numpy(), positions[: len(shown)], color="C3", marker="D",
               zorder=3, label="weight on all rows")
    horizontal_ticks(ax, labels)
    kind = _resample_kind(resamples)
    ax.set_xlabel("weight (the spread is not a standard error)")
    ax.set_title(f"Weights re-solved on {resamples.shape[1]} {kind}")
    handles = [Patch(facecolor="none", edgecolor="black"), Line2D([], [], color="C1"),
               Line2D([], [], linestyle="none", marker="o", markerfacecolor="none",
                      markeredgecolor="black"), ax.collections[-1]]
    ax.legend(handles, ["middle half", "median", "outlier", "weight on all rows"],
              loc="lower right", fontsize="small")
    add_key(figure, ax, codes)
    return figure
