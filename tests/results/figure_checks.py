"""Checks that a figure reads at a glance, shared by the plotting tests.

* :func:`assert_inside_canvas`: every text the renderer draws lies inside the figure, measured
  from the Agg renderer's text extents after ``canvas.draw()``.
* :func:`assert_titled`: every axes (or the figure, for a grid of panels) has a title.
* :func:`assert_colours_in_legend`: every colour the data is drawn in has a legend entry.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import Collection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text


def drawn_texts(figure: Figure) -> list:
    """Text artists the renderer draws: visible, non-empty, tick labels only for ticks in view."""
    texts, tick_texts = [], set()
    for ax in figure.axes:
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            low, high = min(low, high), max(low, high)
            if axis.get_scale() == "log":  # tick locations against limits, in the same units
                low, high = low * (1 - 1e-9), high * (1 + 1e-9)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_texts.update((tick.label1, tick.label2))
                if low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    texts += [tick.label1, tick.label2]
    texts += [t for t in figure.findobj(Text) if t not in tick_texts]
    return [t for t in texts if t.get_visible() and t.get_text()]


def assert_inside_canvas(figure: Figure, name: str = "") -> None:
    figure.canvas.draw()
    box = figure.bbox
    texts = drawn_texts(figure)
    assert texts, name
    for text in texts:
        extent = text.get_window_extent()
        assert (
            extent.x0 >= box.x0 - 1
            and extent.y0 >= box.y0 - 1
            and extent.x1 <= box.x1 + 1
            and extent.y1 <= box.y1 + 1
        ), (name, text.get_text(), extent, box)


def assert_titled(figure: Figure, name: str = "") -> None:
    """A figure title (suptitle) or a title on every axes."""
    suptitle = figure._suptitle.get_text() if figure._suptitle is not None else ""
    if suptitle.strip():
        return
    for ax in figure.axes:
        assert ax.get_title().strip(), (name, "axes without a title")


def _colour(artist) -> tuple | None:
    """The colour an artist shows its data in (a filled face, else its edge or line)."""
    if isinstance(artist, Patch):
        face = to_rgba(artist.get_facecolor())
        return face if artist.get_fill() and face[3] > 0 else to_rgba(artist.get_edgecolor())
    if isinstance(artist, Line2D):
        if artist.get_linestyle() not in ("None", "none", "", " "):
            return to_rgba(artist.get_color())
        face = artist.get_markerfacecolor()
        return to_rgba(artist.get_markeredgecolor() if face in ("none", "None") else face)
    if isinstance(artist, Collection):
        faces = np.asarray(artist.get_facecolor())
        if len(faces) and faces[0][3] > 0:
            return tuple(faces[0])
        edges = np.asarray(artist.get_edgecolor())
        return tuple(edges[0]) if len(edges) else None
    return None


def _hue(colour) -> tuple:
    """RGB without alpha: a translucent band of a line's colour is that line's colour."""
    return tuple(round(float(c), 3) for c in colour[:3])


def data_colours(ax) -> set:
    """Colours of the data drawn on *ax* (bars, lines, markers, collections)."""
    artists = list(ax.patches) + list(ax.lines) + list(ax.collections)
    colours = {_colour(a) for a in artists if a.get_visible()}
    colours.discard(None)
    return {_hue(colour) for colour in colours}


def legend_colours(figure: Figure) -> set:
    # an axes' second legend is one of its artists (an axes has one ax.legend)
    legends = list(figure.legends) + [ax.get_legend() for ax in figure.axes if ax.get_legend()]
    legends += [artist for ax in figure.axes for artist in ax.artists
                if isinstance(artist, Legend)]
    colours = set()
    for legend in legends:
        for handle in legend.legend_handles:
            colour = _colour(handle)
            if colour is not None:
                colours.add(_hue(colour))
    return colours


def assert_colours_in_legend(figure: Figure, name: str = "") -> None:
    """When the data use more than one colour, the legend shows each of them."""
    for ax in figure.axes:
        used = data_colours(ax)
        if len(used) > 1:
            assert used <= legend_colours(figure), (name, used - legend_colours(figure))
