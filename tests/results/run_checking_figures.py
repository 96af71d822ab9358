"""Run a script with every figure it saves checked first: a title, and no text outside the canvas.

``python tests/results/run_checking_figures.py vignettes/02_simulation.py`` runs the vignette as
``python vignettes/02_simulation.py`` would (its folder first on ``sys.path``, run as
``__main__``), except that ``Figure.savefig`` first runs :func:`figure_checks.assert_titled`
and :func:`figure_checks.assert_inside_canvas`; a failing check stops the script with the
offending text named. tests/test_vignettes.py runs every vignette's quick version this way.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figure_checks import assert_inside_canvas, assert_titled  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

_savefig = Figure.savefig


def _checked_savefig(self: Figure, fname, *args, **kwargs):
    name = str(fname)
    assert_titled(self, name)
    assert_inside_canvas(self, name)
    print("FIGURE CHECKED", Path(name).name)
    return _savefig(self, fname, *args, **kwargs)


if __name__ == "__main__":
    script = Path(sys.argv[1]).resolve()
    sys.argv = [str(script), *sys.argv[2:]]
    sys.path.insert(0, str(script.parent))
    Figure.savefig = _checked_savefig
    runpy.run_path(str(script), run_name="__main__")
