"""Figures of a PEARL fit and of simulation results (matplotlib).

Each function draws on *ax* when given, else on a new :class:`PearlFigure`
(a ``matplotlib.figure.Figure`` outside pyplot's registry, so nothing
accumulates there), and returns the figure: ``fig.savefig("weights.png")``, or
leave it as the last value of a Jupyter cell, which shows it inline with no
``%matplotlib`` magic and no pyplot import. ``res.plot.weights()`` and the
other methods of :class:`PlotAccessor` call the same functions.

Fits with many candidates (J = 255 for eight blocks) stay readable: bars are
horizontal, the leading candidates are drawn and the rest aggregated into one
``+ k others`` row, and long labels are abbreviated (blocks as letters, with a
key beside the plot).

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> from pearlstats.plotting import plot_weights
>>> rng = np.random.default_rng(0)
>>> data = {"y": rng.normal(size=60), "a": rng.normal(size=(60, 2)), "b": rng.normal(size=(60, 2))}
>>> fig = plot_weights(pearl.fit("y ~ block(a) + block(b)", data, seed=0))
>>> fig.axes[0].get_xlabel()
'weight'
"""

from __future__ import annotations

import io
import string
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .exceptions import DataError, OptionError

if TYPE_CHECKING:
    from .results.core import PearlResults

__all__ = [
    "PearlFigure",
    "PlotAccessor",
    "plot_block_importance",
    "plot_cv_risk",
    "plot_risk_ratio",
    "plot_weight_stability",
    "plot_weights",
]

_MAX_SHOWN = 25
_MAX_LABEL = 28  # characters; longer candidate labels are abbreviated
_ROW_HEIGHT = 0.24  # inches per bar of a horizontal chart
_OTHERS_COLOUR = "0.75"


class PearlFigure(Figure):
    """A matplotlib ``Figure`` that displays itself inline in Jupyter.

    IPython only knows how to show a bare ``Figure`` once pyplot has been
    imported with an inline backend; :meth:`_repr_png_` makes the figure show
    in any fresh kernel. It carries an Agg canvas, so ``fig.canvas.draw()``
    and ``fig.savefig(...)`` work as for any figure.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        FigureCanvasAgg(self)

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


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
    'CV risk (squared)'
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


# ---- layout helpers ------------------------------------------------------------------------------
def _axes(ax: Axes | None, width: float = 6.4, height: float = 4.0) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    figure = PearlFigure(figsize=(width, height), layout="constrained")
    return figure, figure.subplots()


def _bar_axes(ax: Axes | None, rows: int, keyed: bool) -> tuple[Figure, Axes]:
    """Axes for a horizontal chart of *rows* bars: taller with more rows, wider with a key."""
    return _axes(ax, width=8.0 if keyed else 6.4, height=max(3.0, 1.4 + _ROW_HEIGHT * rows))


def _block_codes(res) -> dict:
    """Block name -> letter (A, B, ...; A1, B1, ... past 26 blocks), in formula order."""
    letters = string.ascii_uppercase
    return {name: letters[i % 26] + (str(i // 26) if i >= 26 else "")
            for i, name in enumerate(res.block_dims)}


def _display_labels(res, labels: list) -> tuple[list, dict | None]:
    """Labels as drawn, and the block key when they had to be abbreviated (else None)."""
    if max((len(label) for label in res.weights.index), default=0) <= _MAX_LABEL:
        return list(labels), None
    codes = _block_codes(res)
    short = ["+".join(codes.get(part, part) for part in label.split("+")) for label in labels]
    return short, codes


def _add_key(figure: Figure, ax: Axes, codes: dict | None) -> None:
    """The letter -> block key beside the axes (outside them when the layout is constrained)."""
    if codes is None:
        return
    handles = [Line2D([], [], linestyle="none") for _ in codes]
    labels = [f"{code}: {name}" for name, code in codes.items()]
    options = {"handlelength": 0, "handletextpad": 0, "title": "blocks", "fontsize": "small"}
    if figure.get_layout_engine() is not None and ax.figure is figure and len(figure.axes) == 1:
        figure.legend(handles, labels, loc="outside right upper", **options)
    else:
        ax.add_artist(ax.legend(handles, labels, loc="lower right", **options))


def _literal(text: str) -> str:
    r"""*text* drawn as written: matplotlib reads the part between two ``$`` as mathematics.

    Candidate labels may hold DataFrame column names such as ``price $`` (``candidates="columns"``),
    and ``a[price $]+a[cost $]`` was drawn with ``]+a[cost`` in math italics, its spaces lost.
    """
    return str(text).replace("$", r"\$")


def _horizontal_ticks(ax: Axes, labels: list) -> None:
    """Rows top to bottom in the given order, each label drawn literally."""
    ax.set_yticks(range(len(labels)), [_literal(label) for label in labels])
    ax.set_ylim(len(labels) - 0.5, -0.5)


def _others_label(count: int) -> str:
    return f"+ {count} other" + ("s" if count != 1 else "")


def _shown_labels(res, max_candidates: int) -> list:
    """Candidates with non-zero weight, then the lowest CV risks, at most *max_candidates*."""
    weighted = list(res.weights[res.weights > 0].sort_values(ascending=False).index)
    rest = [label for label in res.cv_risk.dropna().sort_values().index if label not in weighted]
    return (weighted + rest)[:max_candidates]


# ---- fit figures ---------------------------------------------------------------------------------
def plot_weights(res: PearlResults, *, ax: Axes | None = None, include_zero: bool = False,
                 max_candidates: int = _MAX_SHOWN) -> Figure:
    """Horizontal bars of the PEARL weights, largest on top.

    Parameters
    ----------
    res : PearlResults
    ax : matplotlib Axes, optional
    include_zero : bool, default False
        Also show zero-weight candidates.
    max_candidates : int, default 25
        Bars drawn for single candidates; the remaining ones are one grey bar
        ``+ k others`` holding their total weight.

    Returns
    -------
    matplotlib.figure.Figure
    """
    weights = res.weights.sort_values(ascending=False, kind="stable")
    weights = weights if include_zero else weights[weights > 0]
    shown, others = weights.head(max_candidates), weights.iloc[max_candidates:]
    labels, codes = _display_labels(res, list(shown.index))
    values, colours = list(shown.to_numpy()), ["C0"] * len(shown)
    if len(others):
        labels.append(_others_label(len(others)))
        values.append(float(others.sum()))
        colours.append(_OTHERS_COLOUR)
    figure, ax = _bar_axes(ax, len(labels), codes is not None)
    ax.barh(range(len(labels)), values, color=colours)
    _horizontal_ticks(ax, labels)
    ax.set_xlabel("weight")
    ax.set_title(f"PEARL weights ({int((res.weights > 0).sum())} of {len(res.weights)} non-zero)")
    _add_key(figure, ax, codes)
    return figure


def plot_cv_risk(
    res: PearlResults, *, ax: Axes | None = None, max_candidates: int = _MAX_SHOWN
) -> Figure:
    """Cross-validated risk of each candidate with +-1 SE, and PEARL's CV risk as a line.

    Candidates with non-zero weight are drawn in colour, then the lowest
    risks in grey, *max_candidates* bars in all; the range of the remaining
    candidates' risks is one grey line ``+ k others``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    chosen = _shown_labels(res, max_candidates)
    others = res.cv_risk.drop(chosen).dropna()
    risk, se = res.cv_risk[chosen], res.cv_risk_se[chosen]
    labels, codes = _display_labels(res, chosen)
    colours = ["C0" if res.weights[label] > 0 else "0.6" for label in chosen]
    figure, ax = _bar_axes(ax, len(labels) + bool(len(others)), codes is not None)
    ax.barh(range(len(chosen)), risk.to_numpy(), xerr=se.to_numpy(), color=colours, capsize=2)
    if len(others):
        row = len(labels)
        labels.append(_others_label(len(others)))
        ax.hlines(row, others.min(), others.max(), color=_OTHERS_COLOUR, linewidth=4,
                  label="range of the others")
    ax.axvline(res.baselines.loc["PEARL", "cv_risk"], color="C3", linestyle="--", label="PEARL")
    _horizontal_ticks(ax, labels)
    ax.set_xlabel(f"CV risk ({res.loss})")
    ax.set_title(f"Cross-validated risk (±1 SE), {len(chosen)} of {len(res.cv_risk)} candidates")
    ax.legend(loc="best", fontsize="small")
    _add_key(figure, ax, codes)
    return figure


def plot_block_importance(res: PearlResults, *, ax: Axes | None = None) -> Figure:
    """Horizontal bars: each block's importance (total weight of the candidates that contain it).

    Returns
    -------
    matplotlib.figure.Figure
    """
    importance = res.block_importance
    figure, ax = _bar_axes(ax, len(importance), keyed=False)
    ax.barh(range(len(importance)), importance.to_numpy(), color="C0")
    _horizontal_ticks(ax, list(importance.index))
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("total weight of the candidates with the block")
    return figure


def plot_weight_stability(
    res: PearlResults,
    *,
    ax: Axes | None = None,
    resamples: pd.DataFrame | None = None,
    max_candidates: int = _MAX_SHOWN,
) -> Figure:
    """Horizontal box plots of the weights re-solved on resamples; the full-sample weight marked.

    Parameters
    ----------
    res : PearlResults
    ax : matplotlib Axes, optional
    resamples : DataFrame, optional
        Candidates x resamples, e.g. ``res.resample_weights("bootstrap")``;
        defaults to ``res.weight_stability``.
    max_candidates : int, default 25
        Candidates drawn one by one (largest full-sample weight first); the
        others used in some resample are one grey box ``+ k others`` of their
        total weight per resample.

    Returns
    -------
    matplotlib.figure.Figure
    """
    resamples = res.weight_stability if resamples is None else resamples
    full = res.weights.reindex(resamples.index)
    used = resamples[(resamples > 0).any(axis=1) | (full > 0)]
    order = pd.DataFrame({"weight": full[used.index], "mean": used.mean(axis=1)})
    used = used.loc[order.sort_values(["weight", "mean"], ascending=False, kind="stable").index]
    shown, others = used.head(max_candidates), used.iloc[max_candidates:]
    labels, codes = _display_labels(res, list(shown.index))
    boxes = list(shown.to_numpy())
    if len(others):
        labels.append(_others_label(len(others)))
        boxes.append(others.sum(axis=0).to_numpy())
    figure, ax = _bar_axes(ax, len(labels), codes is not None)
    positions = np.arange(len(labels))
    ax.boxplot(boxes, positions=positions, widths=0.5, orientation="horizontal")
    ax.scatter(full[shown.index].to_numpy(), positions[: len(shown)], color="C3", marker="D",
               zorder=3, label="all rows")
    _horizontal_ticks(ax, labels)
    ax.set_xlabel("weight")
    ax.set_title(f"Weights over {resamples.shape[1]} resamples")
    ax.legend(loc="lower right", fontsize="small")
    _add_key(figure, ax, codes)
    return figure


# ---- simulation figures --------------------------------------------------------------------------
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
    methods = [method for method in first.index if method != reference]
    figure, ax = _axes(ax)
    for method in methods:
        ratios = [
            np.array(
                [
                    frame.loc[reference, metric] / frame.loc[method, metric]
                    for frame in evaluations[n]
                ]
            )
            for n in sizes
        ]
        means = [r.mean() for r in ratios]
        errors = [r.std(ddof=1) / np.sqrt(len(r)) if len(r) > 1 else 0.0 for r in ratios]
        ax.errorbar(sizes, means, yerr=errors, marker="o", capsize=3, label=method)
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_xlabel("n (labeled rows)")
    ax.set_ylabel(f"{metric}({reference}) / {metric}(method)")
    ax.legend()
    return figure
