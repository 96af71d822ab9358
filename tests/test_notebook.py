"""A fresh Jupyter kernel shows every plot as an inline PNG, with no magic and no pyplot import."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is needed to build the notebook")
nbclient = pytest.importorskip("nbclient", reason="nbclient is needed to run the notebook")
pytest.importorskip("ipykernel", reason="ipykernel is needed for a Python kernel")

ROOT = Path(__file__).resolve().parents[1]
PLOTS = ["weights()", "cv_risk()", "block_importance()", "weight_stability()"]
SETUP = """\
import numpy as np, pearlstats as pearl
rng = np.random.default_rng(0)
data = {"y": rng.normal(size=80), "a": rng.normal(size=(80, 2)), "b": rng.normal(size=(80, 2))}
res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
"""


def test_plots_display_inline_in_a_fresh_kernel(tmp_path, monkeypatch):
    cells = [nbformat.v4.new_code_cell(SETUP)]
    cells += [nbformat.v4.new_code_cell(f"res.plot.{call}") for call in PLOTS]
    cells.append(nbformat.v4.new_code_cell("import sys; 'matplotlib.pyplot' in sys.modules"))
    notebook = nbformat.v4.new_notebook(cells=cells)
    # the kernel imports pearlstats from this checkout, not from an installed copy
    paths = [str(ROOT), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    for call, cell in zip(PLOTS, notebook.cells[1:]):
        images = [out for out in cell.outputs if "image/png" in out.get("data", {})]
        assert len(images) == 1, (call, cell.outputs)
    # nothing imported pyplot: the figures displayed through their own _repr_png_
    assert notebook.cells[-1].outputs[0]["data"]["text/plain"] == "False"
