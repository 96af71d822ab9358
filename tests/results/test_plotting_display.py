"""How figures are shown: sharp 2x PNGs in Jupyter (exactly once), ``plt.show()`` in a script."""

from __future__ import annotations

import base64
import io
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from IPython.core.formatters import DisplayFormatter  # noqa: E402

from pearlstats.plotting import PearlFigure  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIT = """\
import numpy as np, pearlstats as pearl
rng = np.random.default_rng(0)
data = {"y": rng.normal(size=80), "a": rng.normal(size=(80, 2)), "b": rng.normal(size=(80, 2))}
res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
"""
KINDS = ["weights", "cv_risk", "block_importance", "weight_stability"]


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk (bytes 16-24), read without matplotlib."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_jupyter_gets_a_2x_png_displayed_at_1x_size():
    figure = PearlFigure(figsize=(6.4, 3.0), dpi=100)
    figure.subplots().set_title("a figure")
    assert _png_size(figure._repr_png_()) == (1280, 600)
    data, metadata = DisplayFormatter().format(figure)
    assert _png_size(data["image/png"]) == (1280, 600)
    assert metadata["image/png"] == {"width": 640, "height": 300}
    # savefig keeps the figure's own dpi
    figure.savefig(buffer := io.BytesIO(), format="png")
    assert _png_size(buffer.getvalue()) == (640, 300)


def _env(tmp_path: Path, backend: str) -> dict:
    paths = [str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH")]
    return {**os.environ, "MPLBACKEND": backend,
            "PYTHONPATH": os.pathsep.join(filter(None, paths))}


# A backend whose window is a line on stdout: plt.show() "shows" a figure by printing its title.
RECORDING_BACKEND = """\
from matplotlib.backend_bases import FigureManagerBase, _Backend
from matplotlib.backends.backend_agg import FigureCanvasAgg


class FigureManager(FigureManagerBase):
    def show(self):
        figure = self.canvas.figure
        print("SHOWN", figure.axes[0].get_title() if figure.axes else "")


class FigureCanvas(FigureCanvasAgg):
    manager_class = FigureManager


@_Backend.export
class _RecordingBackend(_Backend):
    FigureCanvas = FigureCanvas
    FigureManager = FigureManager
    mainloop = None
"""


def test_plt_show_shows_every_figure_in_a_script(tmp_path):
    (tmp_path / "recording_backend.py").write_text(RECORDING_BACKEND, encoding="utf-8")
    script = FIT + textwrap.dedent("""\
        import matplotlib.pyplot as plt
        figures = [getattr(res.plot, kind)() for kind in %r]
        assert plt.get_fignums() == [f.number for f in figures], plt.get_fignums()
        plt.show()
        print("AFTER", plt.get_fignums())
    """ % KINDS)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_env(tmp_path, "module://recording_backend"), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = [line for line in done.stdout.splitlines() if line.startswith("SHOWN")]
    assert len(shown) == len(KINDS) and all(line.strip() != "SHOWN" for line in shown), shown


def test_figures_stay_out_of_pyplot_when_it_is_not_imported(tmp_path):
    script = FIT + textwrap.dedent("""\
        import sys
        figures = [getattr(res.plot, kind)() for kind in %r]
        print("PYPLOT", "matplotlib.pyplot" in sys.modules)
    """ % KINDS)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_env(tmp_path, "Agg"), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PYPLOT False" in done.stdout


def test_jupyter_with_pyplot_imported_shows_each_figure_once(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = [nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\n" + FIT)]
    cells += [nbformat.v4.new_code_cell(f"res.plot.{kind}()") for kind in KINDS]
    cells.append(nbformat.v4.new_code_cell("fig = res.plot.weights()\nfig"))
    notebook = nbformat.v4.new_notebook(cells=cells)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT),
                                                                   os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    for cell in notebook.cells[1:]:
        images = [out for out in cell.outputs if "image/png" in out.get("data", {})]
        assert len(images) == 1, (cell.source, [out.get("output_type") for out in cell.outputs])
    for cell in notebook.cells[1:1 + len(KINDS)]:
        (image,) = [out for out in cell.outputs if "image/png" in out.get("data", {})]
        # a 2x PNG with the 1x size to display it at
        width, height = _png_size(base64.b64decode(image["data"]["image/png"]))
        assert image["metadata"]["image/png"] == {"width": width // 2, "height": height // 2}
