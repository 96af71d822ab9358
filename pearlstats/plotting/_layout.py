"""Shared pieces of the fit figures: labels, abbreviations, value labels, human loss names."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._canvas import axes_for

if TYPE_CHECKING:
    from ..results.core import PearlResults

MAX_SHOWN = 25
_MAX_LABEL = 28  # characters; longer candidate labels are abbreviated
_ROW_HEIGHT = 0.24  # inches per row of a horizontal chart
OTHERS_COLOUR = "0.75"
ZERO_COLOUR = "0.55"  # candidates with weight 0

# The losses' names as a reader of a paper knows them (res.loss holds the identifiers).
LOSS_NAMES = {
    "squared": "squared error",
    "cross_entropy": "log-loss",
    "poisson_deviance": "Poisson deviance",
    "hinge": "hinge loss",
    "hinge_probability": "hinge loss",
    "absolute": "absolute error",
}


def loss_name(loss: str) -> str:
    """*loss* in words (``"squared"`` -> ``"squared error"``); unknown names as they are."""
    return LOSS_NAMES.get(loss, str(loss).replace("_", " "))


def bar_axes(ax: Axes | None, rows: int, keyed: bool) -> tuple[Figure, Axes]:
    """Axes for a horizontal chart of *rows* rows: taller with more rows, wider with a key."""
    return axes_for(ax, width=8.0 if keyed else 6.4, height=max(3.0, 1.6 + _ROW_HEIGHT * rows))


def widen_to_fit(figure: Figure, ax: Axes) -> None:
    """Widen a figure this package made until its axes are as wide as their x label and title.

    Constrained layout makes room beside the axes for the tick labels, but not for an x label
    or title wider than the axes they are centred on: with block names of 40 characters the
    axes narrowed and ``plot.block_importance``'s x label ran past the canvas's right edge.
    The tick labels keep their width, so the axes gain what the figure gains.
    """
    renderer = figure.canvas.get_renderer()
    figure.draw_without_rendering()  # runs the layout engine: the axes' final width
    texts = [text for text in (ax.xaxis.label, ax.title) if text.get_text()]
    need = max((text.get_window_extent(renderer).width for text in texts), default=0.0)
    have = ax.get_window_extent(renderer).width
    if need > have:
        margin = 0.1  # inches: the text's own extent to spare from the axes' edges
        figure.set_figwidth(figure.get_figwidth() + (need - have) / figure.dpi + 2 * margin)


def _block_codes(res: PearlResults) -> dict:
    """Block name -> letter (A, B, ...; A1, B1, ... past 26 blocks), in formula order (the
    LaTeX table's letters, :func:`pearlstats.results.formatting.block_letters`, are the same)."""
    letters = string.ascii_uppercase
    return {name: letters[i % 26] + (str(i // 26) if i >= 26 else "")
            for i, name in enumerate(res.block_dims)}


def display_labels(res: PearlResults, labels: list) -> tuple[list, dict | None]:
    """Labels as drawn, and the block key when they had to be abbreviated (else None)."""
    if max((len(label) for label in res.weights.index), default=0) <= _MAX_LABEL:
        return list(labels), None
    codes = _block_codes(res)
    short = ["+".join(codes.get(part, part) for part in label.split("+")) for label in labels]
    return short, codes


def add_key(figure: Figure, ax: Axes, codes: dict | None) -> None:
    """The letter -> block key, outside the axes on the right, top-aligned with them.

    In a figure of this package's own the key is a figure legend beside its one axes. On
    an axes given with ``ax=`` the key is the axes' legend, anchored right of the axes,
    where it covers no data; a layout engine counts an axes' legend in its margins, so
    ``layout="constrained"`` (or ``fig.tight_layout()``, or ``savefig(...,
    bbox_inches="tight")``) makes room for it. An axes has one legend, and a second
    ``ax.legend`` call replaces the first, so the plot's own legend (what its colours and
    marks mean) is kept as an artist of the axes first.
    """
    if codes is None:
        return
    handles = [Line2D([], [], linestyle="none") for _ in codes]
    labels = [f"{code}: {name}" for name, code in codes.items()]
    options = {"handlelength": 0, "handletextpad": 0, "title": "blocks", "fontsize": "small"}
    if figure.get_layout_engine() is not None and ax.figure is figure and len(figure.axes) == 1:
        figure.legend(handles, labels, loc="outside right upper", **options)
        return
    own = ax.get_legend()
    if own is not None:
        ax.add_artist(own)
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              **options)


def literal(text: str) -> str:
    r"""*text* drawn as written: matplotlib reads the part between two ``$`` as mathematics.

    Candidate labels may hold DataFrame column names such as ``price $`` (``candidates="columns"``),
    and ``a[price $]+a[cost $]`` was drawn with ``]+a[cost`` in math italics, its spaces lost.
    """
    return str(text).replace("$", r"\$")


def horizontal_ticks(ax: Axes, labels: list) -> None:
    """Rows top to bottom in the given order, each label drawn literally."""
    ax.set_yticks(range(len(labels)), [literal(label) for label in labels])
    ax.set_ylim(len(labels) - 0.5, -0.5)


def others_label(count: int) -> str:
    return f"+ {count} other" + ("s" if count != 1 else "")


def shown_labels(res: PearlResults, max_candidates: int) -> list:
    """Candidates with non-zero weight, then the lowest CV risks, at most *max_candidates*."""
    weighted = list(res.weights[res.weights > 0].sort_values(ascending=False).index)
    rest = [label for label in res.cv_risk.dropna().sort_values().index if label not in weighted]
    return (weighted + rest)[:max_candidates]


def weight_text(value: float) -> str:
    """A weight as its value label: three decimals, ``<0.001`` for smaller positive weights."""
    if value == 0:
        return "0"
    if 0 < value < 0.0005:
        return "<0.001"
    return f"{value:.3f}"


def label_bars(ax: Axes, container: BarContainer, values: list, right: float) -> None:
    """Write each bar's value at its end, so a weight of 0.003 is read, not guessed.

    The x axis runs from 0 to *right*, which leaves room for the labels inside the axes.
    """
    ax.bar_label(container, labels=[weight_text(v) for v in values], padding=3,
                 fontsize="small")
    ax.set_xlim(0, right)
