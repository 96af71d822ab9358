"""Where a figure lives: a :class:`PearlFigure` shown by Jupyter, or a pyplot figure in a script.

Two ways of showing a figure must each show it exactly once:

* In a Jupyter kernel the figure is the value of a cell and IPython shows it through
  :meth:`PearlFigure._repr_mimebundle_`. It is *not* registered with pyplot there: the inline
  backend shows every pyplot figure at the end of the cell, so the figure would appear twice.
* Anywhere else, when the caller has imported pyplot (a script that ends with ``plt.show()``, a
  terminal IPython with a GUI backend), the figure is created through ``pyplot.figure`` so that
  pyplot knows it and ``plt.show()`` shows it. Without pyplot imported nothing is registered, so
  figures drawn only to be saved do not accumulate in pyplot's registry.
"""

from __future__ import annotations

import io
import sys
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# Pixels per inch of the PNG shown in Jupyter is twice the figure's dpi (sharp on high-density
# screens); the width/height metadata keep its displayed size that of a 1x image.
_RETINA = 2


class PearlFigure(Figure):
    """A matplotlib ``Figure`` that displays itself inline in Jupyter, sharp on retina screens.

    IPython only knows how to show a bare ``Figure`` once pyplot has been imported with an
    inline backend; :meth:`_repr_mimebundle_` makes the figure show in any fresh kernel, as a
    PNG of twice the figure's dpi displayed at the figure's own size. It carries an Agg canvas,
    so ``fig.canvas.draw()`` and ``fig.savefig(...)`` work as for any figure.

    Examples
    --------
    >>> figure = PearlFigure(figsize=(4, 2), dpi=100)
    >>> data, metadata = figure._repr_mimebundle_()
    >>> metadata["image/png"]
    {'width': 400, 'height': 200}
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        FigureCanvasAgg(self)

    def _repr_png_(self) -> bytes:
        """The figure as a PNG at twice its dpi."""
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=_RETINA * self.dpi)
        return buffer.getvalue()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        """The 2x PNG, with width and height that display it at the figure's 1x size."""
        width, height = self.get_size_inches() * self.dpi
        size = {"width": int(round(width)), "height": int(round(height))}
        return {"image/png": self._repr_png_(), "text/plain": repr(self)}, {"image/png": size}


def _in_jupyter_kernel() -> bool:
    """True inside an IPython kernel (Jupyter), where cells display their values as images."""
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def new_figure(width: float, height: float) -> Figure:
    """A constrained-layout :class:`PearlFigure`, known to pyplot when pyplot is in use.

    Registered with pyplot only outside a Jupyter kernel and only when ``matplotlib.pyplot``
    is already imported (see the module docstring for why).
    """
    options = {"figsize": (width, height), "layout": "constrained"}
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None and not _in_jupyter_kernel():
        return pyplot.figure(FigureClass=PearlFigure, **options)
    return PearlFigure(**options)


def axes_for(ax: Axes | None, width: float = 6.4, height: float = 4.0) -> tuple[Figure, Axes]:
    """*ax* and its figure, or a new figure (see :func:`new_figure`) with one axes."""
    if ax is not None:
        return ax.figure, ax
    figure = new_figure(width, height)
    return figure, figure.subplots()
